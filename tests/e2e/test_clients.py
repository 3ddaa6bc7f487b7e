"""S3 clients nobody on the project wrote, against a running `reo serve`, each checking bytes end
to end: the AWS CLI (`aws s3` cp with multipart, sync, S3-to-S3 copy, presign), rclone (copy,
sync, check, multipart upload, server-side copy through UploadPartCopy) and s3cmd (put, get,
multipart, sync). `scripts/test.sh` installs them (pip: awscli; apt: rclone, s3cmd)."""

import filecmp
import hashlib
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.request

from server import ACCESS, SECRET, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")
srv = None


def setUpModule():
    global srv
    srv = Server(BIN, device_mib=128)
    srv.start()


def tearDownModule():
    assert srv.stop() == 0
    srv.cleanup()


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(args, env=None, timeout=300):
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


class ClientsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="reo-clients-")
        self.s3 = srv.client()
        self.bucket = "clients-" + self._testMethodName.replace("_", "-")[5:40].strip("-")
        self.s3.create_bucket(Bucket=self.bucket)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def tree(self, name, files):
        """A directory of `files` {relative path: size} of random bytes."""
        root = os.path.join(self.dir, name)
        for rel, size in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(os.urandom(size))
        return root

    def assert_same_tree(self, a, b):
        cmp = filecmp.dircmp(a, b)
        self.assertEqual((cmp.left_only, cmp.right_only), ([], []))
        for rel in (os.path.relpath(os.path.join(d, f), a) for d, _, fs in os.walk(a) for f in fs):
            self.assertEqual(sha(os.path.join(a, rel)), sha(os.path.join(b, rel)), rel)

    def test_aws_cli(self):
        # AWS CLI v1 presigns with SigV2 unless told otherwise; the gateway accepts SigV4 only.
        config = os.path.join(self.dir, "aws-config")
        with open(config, "w") as f:
            f.write("[default]\ns3 =\n    signature_version = s3v4\n")
        env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="us-east-1",
                   AWS_CONFIG_FILE=config, AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        aws = ["aws", "--endpoint-url", srv.endpoint, "s3"]
        b = self.bucket
        src = self.tree("up", {"big.bin": 20 << 20, "a/1.txt": 100, "a/b/2.txt": 70_000, "empty": 0})
        run(aws + ["cp", os.path.join(src, "big.bin"), f"s3://{b}/big.bin"], env)
        self.assertTrue(self.s3.head_object(Bucket=b, Key="big.bin")["ETag"].endswith('-3"'))  # 8 MiB parts
        run(aws + ["cp", f"s3://{b}/big.bin", os.path.join(self.dir, "big.back")], env)
        self.assertEqual(sha(os.path.join(self.dir, "big.back")), sha(os.path.join(src, "big.bin")))
        run(aws + ["sync", src, f"s3://{b}/tree"], env)
        self.assertEqual(run(aws + ["sync", src, f"s3://{b}/tree"], env).strip(), "")  # nothing left to do
        down = os.path.join(self.dir, "down")
        run(aws + ["sync", f"s3://{b}/tree", down], env)
        self.assert_same_tree(src, down)
        run(aws + ["cp", f"s3://{b}/big.bin", f"s3://{b}/copied.bin"], env)  # UploadPartCopy
        url = run(aws + ["presign", f"s3://{b}/copied.bin", "--expires-in", "600"], env).strip()
        with urllib.request.urlopen(url, timeout=60) as r:
            self.assertEqual(hashlib.sha256(r.read()).hexdigest(), sha(os.path.join(src, "big.bin")))
        run(aws + ["rm", "--recursive", f"s3://{b}/tree"], env)
        listed = run(aws + ["ls", "--recursive", f"s3://{b}/"], env)
        self.assertNotIn("tree/", listed)
        self.assertIn("copied.bin", listed)

    def test_rclone(self):
        env = dict(os.environ, RCLONE_CONFIG="/dev/null", RCLONE_CONFIG_REO_TYPE="s3", RCLONE_CONFIG_REO_PROVIDER="Other",
                   RCLONE_CONFIG_REO_ENDPOINT=srv.endpoint, RCLONE_CONFIG_REO_ACCESS_KEY_ID=ACCESS,
                   RCLONE_CONFIG_REO_SECRET_ACCESS_KEY=SECRET, RCLONE_CONFIG_REO_REGION="us-east-1")
        # The AWS SDK in rclone cannot apply a CA bundle to its own transport (and plain HTTP needs none).
        env.pop("AWS_CA_BUNDLE", None)
        # Multipart above 5 MiB, server-side copies above 5 MiB as UploadPartCopy.
        rc = ["rclone", "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M", "--s3-copy-cutoff", "5M"]
        b = self.bucket
        src = self.tree("up", {"big.bin": 12 << 20, "x/1": 5000, "x/y/2": 300_000})
        run(rc + ["copy", src, f"reo:{b}/t"], env)
        run(rc + ["check", src, f"reo:{b}/t"], env)
        self.assertTrue(self.s3.head_object(Bucket=b, Key="t/big.bin")["ETag"].endswith('-3"'))
        os.remove(os.path.join(src, "x/1"))
        run(rc + ["sync", src, f"reo:{b}/t"], env)
        run(rc + ["check", src, f"reo:{b}/t"], env)
        run(rc + ["copyto", f"reo:{b}/t/big.bin", f"reo:{b}/server-side.bin"], env)
        got = self.s3.get_object(Bucket=b, Key="server-side.bin")
        self.assertTrue(got["ETag"].endswith('-3"'), got["ETag"])  # copied part by part on the server
        self.assertEqual(hashlib.sha256(got["Body"].read()).hexdigest(), sha(os.path.join(src, "big.bin")))
        down = os.path.join(self.dir, "down")
        run(rc + ["copy", f"reo:{b}/t", down], env)
        self.assert_same_tree(src, down)

    def test_s3cmd(self):
        host = srv.endpoint.removeprefix("http://")
        s3cmd = ["s3cmd", "--config=/dev/null", f"--access_key={ACCESS}", f"--secret_key={SECRET}",
                 f"--host={host}", f"--host-bucket={host}", "--no-ssl", "--region=us-east-1",
                 "--multipart-chunk-size-mb=5"]
        b = self.bucket
        src = self.tree("up", {"big.bin": 12 << 20, "d/small": 1234, "d/e/f": 99_999})
        run(s3cmd + ["put", os.path.join(src, "big.bin"), f"s3://{b}/big.bin"])
        self.assertTrue(self.s3.head_object(Bucket=b, Key="big.bin")["ETag"].endswith('-3"'))
        run(s3cmd + ["get", f"s3://{b}/big.bin", os.path.join(self.dir, "big.back")])
        self.assertEqual(sha(os.path.join(self.dir, "big.back")), sha(os.path.join(src, "big.bin")))
        run(s3cmd + ["sync", src + "/", f"s3://{b}/tree/"])
        down = os.path.join(self.dir, "down")
        os.makedirs(down)
        run(s3cmd + ["sync", f"s3://{b}/tree/", down + "/"])
        self.assert_same_tree(src, down)
        self.assertIn(f"s3://{b}/tree/d/e/f", run(s3cmd + ["ls", "--recursive", f"s3://{b}/tree/"]))


if __name__ == "__main__":
    unittest.main()
