"""Runs the ceph/s3-tests suite against a real `reo serve` and checks its outcome against
`expected-failures.txt`.

The suite is not part of this repository: give its directory as the first argument (or
`S3TESTS_DIR`). A server is started on a free port with a fresh data directory; the suite's three
users (main, alt, tenant) are added as `readwrite` users through the admin API. The tests of
features `docs/S3.md` says Reo does not offer are deselected by marker (`DESELECTED_MARKERS`) and
by file; of the rest, every failure must be listed in `expected-failures.txt` with its reason, or
this exits 1. A listed test that passes is reported (the list should shrink) but does not fail the
run. Usage: run.py S3TESTS_DIR [pytest -k expression]."""

import configparser
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

from server import Server  # noqa: E402

# Features docs/S3.md states Reo does not support (refused with NotImplemented or similar), by
# the suite's pytest markers.
DESELECTED_MARKERS = [
    "versioning", "delete_marker", "object_lock", "lifecycle", "lifecycle_expiration", "lifecycle_transition",
    "tagging", "bucket_policy", "user_policy", "group_policy", "role_policy", "session_policy", "abac_test",
    "bucket_encryption", "encryption", "sse_s3", "s3select", "s3website", "s3website_routing_rules",
    "s3website_redirect_location", "bucket_logging", "bucket_logging_cleanup", "fails_without_logging_rollover",
    "iam_account", "iam_cross_account", "iam_role", "iam_tenant", "iam_user", "sns", "test_of_sts",
    "webidentity_test", "cloud_transition", "cloud_restore", "target_by_bucket", "appendobject",
    "object_ownership", "storage_class", "group",
    # RGW's own behaviour where it differs from AWS; Reo follows AWS.
    "fails_on_aws",
]
# Only these files: the others are IAM, STS, SNS and S3 Select (not offered).
FILES = ["s3tests/functional/test_s3.py", "s3tests/functional/test_headers.py"]

USERS = {
    "main": ("M. Tester", "testid", "tester@example.com", "S3TESTSMAINACCESS001", "s3tests-main-secret-0000000000000000000"),
    "alt": ("john.doe", "56789abcdef", "john.doe@example.com", "S3TESTSALTACCESS0001", "s3tests-alt-secret-00000000000000000000"),
    "tenant": ("testx$tenanteduser", "testx$9876", "tenanteduser@example.com", "S3TESTSTENANTACCES01",
               "s3tests-tenant-secret-00000000000000000"),
}


def expected_failures():
    """{test id: reason} from expected-failures.txt (`test_name  # reason` per line)."""
    out = {}
    with open(os.path.join(HERE, "expected-failures.txt")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition("#")
            if not reason.strip():
                raise SystemExit(f"expected-failures.txt: {name.strip()} has no reason")
            out[name.strip()] = reason.strip()
    return out


def write_config(path, srv):
    cfg = configparser.RawConfigParser()
    cfg["DEFAULT"] = {"host": "127.0.0.1", "port": str(srv.port), "is_secure": "False", "ssl_verify": "False"}
    cfg["fixtures"] = {"bucket prefix": "s3t-{random}-"}
    for name, (display, uid, email, access, secret) in USERS.items():
        cfg[f"s3 {name}"] = {"display_name": display, "user_id": uid, "email": email,
                             "access_key": access, "secret_key": secret, "api_name": ""}
    cfg["s3 tenant"]["tenant"] = "testx"
    for section in ("iam", "iam root", "iam alt root"):
        cfg[section] = {"access_key": "UNUSED", "secret_key": "UNUSED", "user_id": "x", "email": "x@example.com",
                        "display_name": "x"}
    with open(path, "w") as f:
        cfg.write(f)


def main():
    suite = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("S3TESTS_DIR")
    if not suite or not os.path.isdir(os.path.join(suite, "s3tests")):
        print(f"s3-tests: the suite is not at {suite!r}; skipped (give its directory)")
        return 0
    binary = os.environ.get("REO_BIN", "target/release/reo")
    srv = Server(binary, device_mib=256, extra=["--max-body-mib", "128"])
    srv.start()
    try:
        for name, (_, _, _, access, secret) in USERS.items():
            srv.add_user(f"s3tests-{name}", "readwrite", access, secret)
        work = tempfile.mkdtemp(prefix="reo-s3tests-")
        conf, junit = os.path.join(work, "s3tests.conf"), os.path.join(work, "junit.xml")
        write_config(conf, srv)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", junit,
               "-m", "not (" + " or ".join(DESELECTED_MARKERS) + ")", *FILES]
        if len(sys.argv) > 2:
            cmd += ["-k", sys.argv[2]]
        subprocess.run(cmd, cwd=suite, env=dict(os.environ, S3TEST_CONF=conf), check=False)
    finally:
        srv.stop()
    failed, passed = set(), set()
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(name)
        elif case.find("skipped") is None:
            passed.add(name)
    expected = expected_failures()
    unexpected = sorted(failed - expected.keys())
    fixed = sorted(passed & expected.keys())
    print(f"s3-tests: {len(passed)} passed, {len(failed)} failed ({len(failed) - len(unexpected)} expected)")
    for t in fixed:
        print(f"  passes now, remove from expected-failures.txt: {t}")
    for t in unexpected:
        print(f"  UNEXPECTED FAILURE: {t}")
    if unexpected:
        print(f"s3-tests: {len(unexpected)} unexpected failures; the server's log is {srv.data_dir}/server.log")
        return 1
    srv.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
