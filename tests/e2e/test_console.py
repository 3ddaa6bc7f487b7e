"""The web console at /_reo/console against a real `reo serve`: the sign-in and its session
cookie (HttpOnly, SameSite=Strict), CSRF and origin checks on every action, only admins, a removed
admin's session ended at once, sign-in failures limited; then in a real browser (Debian's
Chromium, headless, driven by Selenium through chromedriver): sign in, see the device table and a
chart render, fail a device through the UI (confirming the dialog) and see it marked failed, as
the admin API also reports. Screenshots go to $REO_ARTIFACTS (default target/e2e-artifacts)."""

import http.client
import os
import re
import shutil
import unittest
import urllib.parse

from reoapi import call, wait_for
from server import ADMIN_ACCESS, ADMIN_SECRET, ACCESS, SECRET, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")
ARTIFACTS = os.environ.get("REO_ARTIFACTS", os.path.join(os.path.dirname(__file__), "..", "..", "target", "e2e-artifacts"))


class Http:
    """A raw HTTP client (no redirects followed, cookies by hand) against the server."""

    def __init__(self, srv):
        u = urllib.parse.urlparse(srv.endpoint)
        self.host, self.port = u.hostname, u.port

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.headers, data

    def login(self, access, secret, headers=None):
        form = urllib.parse.urlencode({"access_key": access, "secret_key": secret})
        h = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
        return self.request("POST", "/_reo/console/login", form, h)


def session_of(headers):
    m = re.match(r"reo_console=([0-9a-f]{64});", headers.get("Set-Cookie", ""))
    return m and m.group(1)


class ConsoleProtocolTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(BIN, device_mib=32)
        cls.srv.start()
        cls.http = Http(cls.srv)

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0
        cls.srv.cleanup()

    def test_sign_in_session_and_csrf(self):
        status, headers, body = self.http.request("GET", "/_reo/console")
        self.assertEqual(status, 200)
        self.assertIn(b'action="/_reo/console/login"', body)
        self.assertIn("default-src 'none'", headers["Content-Security-Policy"])
        self.assertEqual(headers["X-Frame-Options"], "DENY")

        status, headers, body = self.http.login(ADMIN_ACCESS, "wrong")
        self.assertEqual(status, 401)
        self.assertIn(b"do not match", body)
        self.assertIsNone(headers.get("Set-Cookie"))
        status, _, body = self.http.login(ACCESS, SECRET)
        self.assertEqual(status, 403, "a readwrite user may not see the array")
        self.assertIn(b"not an admin", body)
        status, _, _ = self.http.login(ADMIN_ACCESS, ADMIN_SECRET, {"Origin": "https://evil.example"})
        self.assertEqual(status, 403, "a sign-in posted from another site")

        status, headers, _ = self.http.login(ADMIN_ACCESS, ADMIN_SECRET)
        self.assertEqual(status, 303)
        cookie = headers["Set-Cookie"]
        self.assertIn("HttpOnly", cookie)
        self.assertIn("SameSite=Strict", cookie)
        self.assertIn("Max-Age=3600", cookie)
        self.assertNotIn("Secure", cookie, "plain HTTP: a Secure cookie would never come back")
        token = session_of(headers)
        jar = {"Cookie": f"reo_console={token}"}

        status, _, page = self.http.request("GET", "/_reo/console", headers=jar)
        self.assertEqual(status, 200)
        csrf = re.search(rb'<meta name="csrf" content="([0-9a-f]{64})">', page).group(1).decode()
        status, _, state = self.http.request("GET", "/_reo/console/api/state", headers=jar)
        self.assertEqual(status, 200)
        self.assertIn(b'"devices"', state)
        self.assertEqual(self.http.request("GET", "/_reo/console/api/state")[0], 401, "no cookie")

        path = "/_reo/console/api/action?what=flush"
        self.assertEqual(self.http.request("POST", path, headers=jar)[0], 403, "no CSRF token")
        self.assertEqual(self.http.request("POST", path, headers={**jar, "X-Reo-Csrf": "0" * 64})[0], 403)
        bad_origin = {**jar, "X-Reo-Csrf": csrf, "Origin": "https://evil.example"}
        self.assertEqual(self.http.request("POST", path, headers=bad_origin)[0], 403)
        status, _, body = self.http.request("POST", path, headers={**jar, "X-Reo-Csrf": csrf})
        self.assertEqual(status, 200, body)
        self.assertIn(b"dirty_objects", body)

        status, headers, _ = self.http.request("POST", "/_reo/console/logout", headers={**jar, "X-Reo-Csrf": csrf})
        self.assertEqual(status, 303)
        self.assertIn("Max-Age=0", headers["Set-Cookie"])
        self.assertEqual(self.http.request("GET", "/_reo/console/api/state", headers=jar)[0], 401, "signed out")

    def signed_in_admin(self, name, access, secret):
        """A new admin `name` signed in to the console; returns the cookie header, checked live."""
        self.srv.add_user(name, "admin", access, secret)
        status, headers, _ = self.http.login(access, secret)
        self.assertEqual(status, 303)
        jar = {"Cookie": f"reo_console={session_of(headers)}"}
        self.assertEqual(self.http.request("GET", "/_reo/console/api/state", headers=jar)[0], 200)
        return jar

    def test_a_rotated_admins_session_ends(self):
        jar = self.signed_in_admin("third-admin", "REOTESTTHIRDADMIN001", "third-admin-secret-00000000000000")
        status, body = call(self.srv, "POST", "/_reo/admin/users/third-admin/rotate")
        self.assertEqual(status, 200, body)
        self.assertEqual(self.http.request("GET", "/_reo/console/api/state", headers=jar)[0], 401,
                         "a session outlived the secret it was opened with")

    def test_objects_are_sandboxed_away_from_the_console(self):
        # An HTML object a browser renders on this origin must not be able to drive the console.
        s3 = self.srv.client()
        s3.create_bucket(Bucket="pages")
        s3.put_object(Bucket="pages", Key="x.html", Body=b"<script>fetch('/_reo/console')</script>",
                      ContentType="text/html")
        r = s3.get_object(Bucket="pages", Key="x.html", ResponseContentType="text/html")
        self.assertEqual(r["ResponseMetadata"]["HTTPHeaders"].get("content-security-policy"), "sandbox")
        status, headers, _ = self.http.request("GET", "/_reo/console")
        self.assertNotEqual(headers["Content-Security-Policy"], "sandbox", "the console keeps its own policy")

    def test_a_removed_admins_session_ends(self):
        jar = self.signed_in_admin("second-admin", "REOTESTSECONDADMIN01", "second-admin-secret-0000000000000")
        status, body = call(self.srv, "DELETE", "/_reo/admin/users/second-admin")
        self.assertEqual(status, 200, body)
        self.assertEqual(self.http.request("GET", "/_reo/console/api/state", headers=jar)[0], 401)

    def test_failed_sign_ins_are_limited(self):
        # Another client address than the other tests' (all of 127/8 is this machine).
        srv = self.srv
        statuses = []
        for _ in range(12):
            c = http.client.HTTPConnection("127.0.0.1", urllib.parse.urlparse(srv.endpoint).port, timeout=30,
                                           source_address=("127.0.0.9", 0))
            form = urllib.parse.urlencode({"access_key": ADMIN_ACCESS, "secret_key": "guess"})
            c.request("POST", "/_reo/console/login", form, {"Content-Type": "application/x-www-form-urlencoded"})
            statuses.append(c.getresponse().status)
            c.close()
        self.assertEqual(statuses[:10], [401] * 10)
        self.assertEqual(statuses[10:], [429, 429], "the eleventh guess within a minute was checked")


def browser():
    """Headless Chromium through chromedriver, or None when they are not installed."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(driver), options=opts)


class ConsoleBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(BIN, device_mib=32)
        cls.srv.start()
        cls.driver = browser()
        if cls.driver is None:
            cls.srv.stop()
            cls.srv.cleanup()
            # scripts/test.sh installs them; only a run outside it may lack them.
            raise unittest.SkipTest("chromium and chromedriver are not installed (scripts/test.sh installs them)")
        os.makedirs(ARTIFACTS, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        assert cls.srv.stop() == 0
        cls.srv.cleanup()

    def test_fail_a_device_through_the_console(self):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        s3 = self.srv.client()
        s3.create_bucket(Bucket="console")
        for i in range(5):
            s3.put_object(Bucket="console", Key=f"k{i}", Body=os.urandom(20_000))
            s3.get_object(Bucket="console", Key=f"k{i}")["Body"].read()

        d = self.driver
        wait = WebDriverWait(d, 45)
        d.get(self.srv.endpoint + "/_reo/console")
        d.find_element(By.ID, "access_key").send_keys("not-a-key")
        d.find_element(By.ID, "secret_key").send_keys("nope")
        d.find_element(By.ID, "sign-in").click()
        self.assertIn("do not match", wait.until(ec.presence_of_element_located((By.ID, "error"))).text)
        d.find_element(By.ID, "access_key").send_keys(ADMIN_ACCESS)
        d.find_element(By.ID, "secret_key").send_keys(ADMIN_SECRET)
        d.find_element(By.ID, "sign-in").click()

        # Read in one script: the page re-renders its tables every few seconds.
        texts = lambda css: d.execute_script(  # noqa: E731
            "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)", css)
        wait.until(lambda d: len(texts("#devices tbody tr")) == 5)
        healths = texts("#devices tbody tr td:nth-child(2)")
        self.assertEqual(healths, ["healthy"] * 5)
        # The charts draw the server's history (a sample of S3 traffic every 10 s): a line once
        # two intervals have passed.
        # Reads keep coming while it waits (an interval without reads has no hit ratio).
        def drawn(d):
            s3.get_object(Bucket="console", Key="k1")["Body"].read()
            return int(d.execute_script("return document.getElementById('chart-hit').dataset.points || 0")) >= 2
        wait.until(drawn)
        line = d.execute_script(
            "return document.querySelector('#chart-hit svg polyline').getAttribute('points')")
        self.assertGreaterEqual(len(line.split()), 2, line)
        self.assertEqual(len(texts("#chart-latency svg")), 1)
        classes = texts("#classes tbody tr td:first-child")
        self.assertEqual(classes, ["metadata", "dirty", "hot", "cold"])
        d.save_screenshot(os.path.join(ARTIFACTS, "console.png"))

        d.find_element(By.CSS_SELECTOR, 'button.fail[data-device="2"]').click()
        alert = wait.until(ec.alert_is_present())
        self.assertIn("Fail device 2", alert.text)
        alert.accept()
        wait.until(lambda d: texts("#device-2 td:nth-child(2)") == ["failed"])
        self.assertIn("done", texts("#message")[0])
        d.save_screenshot(os.path.join(ARTIFACTS, "console-device-failed.png"))

        status, body = call(self.srv, "GET", "/_reo/admin/status")
        self.assertEqual(status, 200)
        self.assertEqual([x["health"] for x in body["devices"]], ["healthy", "healthy", "failed", "healthy", "healthy"])
        # What the browser showed came from the server: the data is still served.
        wait_for(lambda: s3.get_object(Bucket="console", Key="k0")["Body"].read(), "a read after the failure")


if __name__ == "__main__":
    unittest.main()
