"""A device fails while clients are reading: every GET before, during and after the failure
returns the object's exact bytes (redundant data is read degraded, a lost cold object is
refetched from the backend), and the status reports the device failed. Run with the memory tier
off, where every hit reads flash (what the failed device held is read degraded or refetched; the
objects up to 128 KiB, on a server of two workers or more, partly by the worker that received
the GET, `gateway/hot.rs`), and with it on, where copies in memory serve part of the reads."""

import os
import threading
import unittest

from reoapi import admin, call, metric, wait_for
from server import Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")


class DeviceFailureTest(unittest.TestCase):
    def test_reads_go_on_while_a_device_fails(self):
        self.reads_through_a_failure(["--memory", "0"], memory=False)

    def test_reads_go_on_while_a_device_fails_with_the_memory_tier(self):
        self.reads_through_a_failure([], memory=True)

    def reads_through_a_failure(self, extra, memory):
        srv = Server(BIN, device_mib=32, extra=extra)
        srv.start()
        self.addCleanup(srv.cleanup)
        self.addCleanup(lambda: self.assertEqual(srv.stop(), 0))
        s3 = srv.client()
        s3.create_bucket(Bucket="reads")
        objs = {f"o{i}": os.urandom(40_000 + 37_000 * i) for i in range(10)}
        for k, v in objs.items():
            s3.put_object(Bucket="reads", Key=k, Body=v)
        admin(BIN, srv, "flush", "--timeout", "60s")  # clean copies on flash, the backend has them too
        reads, errors, stop = [0], [], threading.Event()

        def reader():
            c = srv.client()
            while not stop.is_set():
                for k, v in objs.items():
                    try:
                        got = c.get_object(Bucket="reads", Key=k)["Body"].read()
                        if got != v:
                            errors.append(f"{k}: wrong bytes")
                    except Exception as e:  # noqa: BLE001 - every failure is a finding
                        errors.append(f"{k}: {e}")
                    reads[0] += 1

        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            wait_for(lambda: reads[0] >= 40, "reads before the failure")
            status, body = call(srv, "POST", "/_reo/admin/device/fail", {"device": "2"})
            self.assertEqual(status, 200, body)
            at_failure = reads[0]
            wait_for(lambda: reads[0] >= at_failure + 60, "reads after the failure")
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        self.assertEqual(errors, [])
        status, s = call(srv, "GET", "/_reo/admin/status")
        self.assertEqual(s["devices"][2]["health"], "failed")
        self.assertEqual(s["data_loss_events"], 0)
        if memory:
            self.assertGreater(s["cache"]["memory_hits"], 0)
        else:
            self.assertEqual(s["cache"]["memory_hits"], 0, "a hit was served from memory with the tier off")
            if (os.cpu_count() or 1) >= 2:  # one worker per core; a single one never reads itself
                self.assertGreater(metric(srv, "reo_gateway_worker_flash_reads_total"), 0)


if __name__ == "__main__":
    unittest.main()
