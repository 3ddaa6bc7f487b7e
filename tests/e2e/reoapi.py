"""Signed calls to Reo's own API (/_reo/...) with botocore's SigV4 signer, and `reo admin` runs."""

import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from server import ADMIN_ACCESS, ADMIN_SECRET, METRICS_TOKEN


def call(srv, method, path, query=None, body=None, access=ADMIN_ACCESS, secret=ADMIN_SECRET, sign=True, timeout=60):
    """Returns (status, parsed JSON or raw bytes)."""
    url = srv.endpoint + path
    if query:
        url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    data = json.dumps(body).encode() if body is not None else b""
    # A signed nonce, as `reo admin` sends: the server refuses a repeated admin mutation.
    headers = {"Content-Type": "application/json", "x-reo-nonce": os.urandom(16).hex()}
    if sign:
        req = AWSRequest(method=method, url=url, data=data, headers=headers)
        S3SigV4Auth(Credentials(access, secret), "s3", "us-east-1").add_auth(req)
        headers = dict(req.prepare().headers)
    r = urllib.request.Request(url, data=data or None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(r, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def query(srv, bucket, key):
    status, body = call(srv, "GET", "/_reo/query", {"bucket": bucket, "key": key})
    assert status == 200, body
    return body["objects"][0]


def wait_for(pred, what, timeout=30):
    """Polls `pred` until it returns a truthy value (returned) or the deadline passes."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def metric(srv, name):
    req = urllib.request.Request(srv.endpoint + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise KeyError(name)


def hint(bucket, key, intent, start, end, **extra):
    h = {"app_id": "e2e", "bucket": bucket, "key": key, "intent": intent, "lease": {"start": int(start), "end": int(end)}}
    h.update(extra)
    return h


def admin(binary, srv, *args, check=True):
    env = dict(os.environ, REO_ENDPOINT=srv.endpoint, REO_ACCESS_KEY=ADMIN_ACCESS, REO_SECRET_KEY=ADMIN_SECRET)
    p = subprocess.run([binary, "admin", *args], env=env, capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"reo admin {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def put_until_refused(s3, bucket, size, most=200):
    """PUTs random objects k0, k1, … of `size` bytes until one is refused; returns the
    acknowledged ones ({key: bytes}) and the refusal (a botocore ClientError)."""
    from botocore.exceptions import ClientError
    acked = {}
    for i in range(most):
        body = os.urandom(size)
        try:
            s3.put_object(Bucket=bucket, Key=f"k{i}", Body=body)
        except ClientError as e:
            return acked, e
        acked[f"k{i}"] = body
    raise AssertionError(f"{most} PUTs of {size} bytes were all accepted")
