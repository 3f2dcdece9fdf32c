"""Integration (issue #11, breaks 5, 7 and 8; issue 26, breaks 3, 7 and 9): a real ktuned against
hostile input.

HTTP edges in the JSON error shape (two Content-Length headers closed, never a smuggled second
request; 414, 431, 505, 500 query parameters), strict numbers (/v1/jobs/+1, limit=+5, M=0x40), a
repeated query parameter refused on every endpoint, budget.seconds 1e-300 refused, injection
strings through every parameter (JSON 4xx, the service still healthy), the global cap on queued
jobs and evaluations (429 + Retry-After), and heavy trial pages that leave /healthz fast.

Issue 26: a request body below the minimum rate is answered 408 (break 3), and a thousand slow
bodies from two addresses at --max-connections leave /healthz from a third address answered
(SlowBodyFloodTest, its own ktuned); a Host that is not a loopback name is 421 without a token
(break 7: DNS rebinding); a query of 1,008 bare '&' and a chunk size of ffffffffffffffff are
answered at once and the connection closed (break 9). Each prints its figures."""
import http.client
import json
import os
import re
import socket
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
CONV = {"kernel": "convolution", "device": "replay:convolution_milo-A4000"}
GEMM = {"kernel": "clblast_gemm", "device": "replay:gemm_clblast-RTX_2080_Ti"}
# Timing bounds are looser for the sanitizer build (make test-asan: build-asan/ktuned).
SLOW = 3.0 if "asan" in os.path.abspath(ARGS.ktuned) else 1.0

# (path, parameter) pairs that filter by name: an unknown name is an empty list, not an error.
FILTERS = {("/v1/best/entries", "kernel"), ("/v1/best/entries", "device"), ("/v1/models", "kernel")}

INJECTIONS = [
    "' OR '1'='1", "1; DROP TABLE jobs; --", "\"); SELECT pg_sleep(10); --", "../../../../etc/passwd",
    "..%2f..%2fetc%2fpasswd", "%00", "a%00b", "9" * 400, "-9223372036854775809", "1e309", "NaN",
    "0x40", "+5", " 5", "<script>alert(1)</script>", "${jndi:ldap://x}", "%ff%fe", "\u00e9\u4e2d",
]


def raw_exchange(address, data, timeout=10):
    """Sends raw bytes; returns (list of (status, headers, body) replies, closed by the server)."""
    host, port = address.rsplit(":", 1)
    buf = b""
    closed = False
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass
        s.settimeout(2)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    closed = True
                    break
                buf += chunk
        except socket.timeout:
            pass
        except ConnectionResetError:
            closed = True
    replies = []
    while b"\r\n\r\n" in buf:
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode(errors="replace").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        n = int(headers.get("content-length", "0"))
        replies.append((status, headers, rest[:n]))
        buf = rest[n:]
    return replies, closed


def exchange(address, parts, wait=12.0, pause=0.3, source=None, replies_wanted=None):
    """Sends parts (bytes, pauses between them) on a fresh socket, then reads until the server
    closes, wait seconds pass or (replies_wanted) that many whole replies came. Returns (replies as
    in raw_exchange, closed, seconds from the last part sent to the first reply, or None)."""
    host, port = address.rsplit(":", 1)
    buf, closed, first = b"", False, None
    src = (source, 0) if source else None
    with socket.create_connection((host, int(port)), timeout=wait, source_address=src) as s:
        for i, part in enumerate(parts):
            if i:
                time.sleep(pause)
            try:
                s.sendall(part)
            except OSError:  # the server answered and closed before all of it was sent
                break
        t0 = time.time()
        while time.time() - t0 < wait:
            s.settimeout(max(0.05, wait - (time.time() - t0)))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            if first is None:
                first = time.time() - t0
            buf += chunk
            if replies_wanted and whole_replies(buf) >= replies_wanted:
                break
        took = time.time() - t0
    replies, _ = parse_replies(buf)
    return replies, closed, first, took


def parse_replies(buf):
    replies = []
    while b"\r\n\r\n" in buf:
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode(errors="replace").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        n = int(headers.get("content-length", "0"))
        replies.append((status, headers, rest[:n]))
        buf = rest[n:]
    return replies, buf


def whole_replies(buf):
    """How many replies buf holds whole (head and Content-Length bytes of body)."""
    n = 0
    while b"\r\n\r\n" in buf:
        head, rest = buf.split(b"\r\n\r\n", 1)
        m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        length = int(m.group(1)) if m else 0
        if len(rest) < length:
            break
        n, buf = n + 1, rest[length:]
    return n


def figure(replies, closed, first, took):
    """How a connection ended, for the printed before/after figures."""
    statuses = [r[0] for r in replies]
    if not statuses:
        return "no reply, %s after %.1f s" % ("closed" if closed else "still open", took)
    return "%s in %.0f ms, %s %.1f s" % ("+".join(map(str, statuses)), first * 1000,
                                       "closed after" if closed else "still open after", took)


class HostileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--workers", "1", "--max-jobs", "1", "--max-queued-jobs", "3",
                              "--max-queued-evaluations", "50000", "--http-threads", "4"])
        cls.k.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        tail = cls.k.log_tail(80)
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM; log:\n%s" % (rc, tail)

    def json_error(self, status, body, expect_status=None, code=None):
        if expect_status is not None:
            self.assertEqual(status, expect_status, body)
        self.assertIsInstance(body, dict, body)
        self.assertIn("error", body, body)
        if code:
            self.assertEqual(body["error"]["code"], code, body)
        return body["error"]

    def raw_error(self, data, status, code, closed=None):
        replies, was_closed = raw_exchange(self.k.address, data)
        self.assertTrue(replies, "no reply to %r" % data[:80])
        st, headers, body = replies[0]
        self.assertEqual(st, status, body)
        self.assertTrue(headers.get("content-type", "").startswith("application/json"), headers)
        self.assertEqual(json.loads(body)["error"]["code"], code, body)
        if closed is not None:
            self.assertEqual(was_closed, closed)
        return replies

    def assert_healthy(self):
        status, _, body = self.k.get("/healthz")
        self.assertEqual(status, 200, body)

    # --- break 7: HTTP edges --------------------------------------------------------------------
    def test_edges_smuggling(self):
        smuggle = (b"POST /v1/tune HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n"
                   b"{}GET /v1/jobs/1 HTTP/1.1\r\nHost: t\r\n\r\n")
        replies = self.raw_error(smuggle, 400, "bad_request", closed=True)
        self.assertEqual(len(replies), 1, replies)  # no second (smuggled) request answered
        te = (b"POST /v1/tune HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
        replies = self.raw_error(te, 400, "bad_request", closed=True)
        self.assertEqual(len(replies), 1, replies)
        # The same on a keep-alive connection's second request (checked after the gate).
        second = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n" + smuggle
        replies, closed = raw_exchange(self.k.address, second)
        self.assertEqual([r[0] for r in replies], [200, 400], replies)
        self.assertTrue(closed)
        self.assert_healthy()

    def test_edges_json_errors(self):
        self.raw_error(b"GET /v1/jobs?x=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414, "uri_too_long")
        self.raw_error(b"GET /v1/jobs?x=" + b"a" * 70000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414, "uri_too_long")
        self.raw_error(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: " + b"b" * 20000 + b"\r\n\r\n", 431,
                       "headers_too_large")
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(100))
        self.raw_error(b"GET /healthz HTTP/1.1\r\nHost: t\r\n" + many + b"\r\n", 431, "headers_too_large")
        for version in (b"HTTP/2.0", b"HTTP/1.2", b"HTTP/0.9", b"HTTP/3.0"):
            self.raw_error(b"GET /healthz " + version + b"\r\nHost: t\r\n\r\n", 505, "http_version_not_supported")
        self.raw_error(b"NOT-HTTP\r\n\r\n", 400, "bad_request")
        query = "&".join("p%d=1" % i for i in range(500))
        for path in ("/v1/jobs", "/v1/best", "/healthz"):
            status, _, body = self.k.get(path + "?" + query)
            self.json_error(status, body, 400, "bad_request")
        self.assert_healthy()

    # --- issue 26, break 9: framing leftovers answered at once ---------------------------------
    def refused_promptly(self, what, parts, status, code, replies_before=()):
        """'' when the request got status with the JSON error code at once and the connection was
        closed; else what happened. Prints the figure either way."""
        replies, closed, first, took = exchange(self.k.address, parts)
        seen = figure(replies, closed, first, took)
        print("%s: %s" % (what, seen))
        if [r[0] for r in replies] != list(replies_before) + [status] or not closed or took > 2.0 * SLOW:
            return "%s: %s" % (what, seen)
        if not replies[-1][1].get("content-type", "").startswith("application/json"):
            return "%s: not JSON: %s" % (what, replies[-1][1])
        got = json.loads(replies[-1][2])["error"]["code"]
        return "" if got == code else "%s: code %s" % (what, got)

    def test_framing_leftovers_are_answered_at_once(self):
        # Before: no reply, the connection held until the 10 s timeout.
        amps = b"GET /v1/jobs?" + b"&" * 1008 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        many = b"GET /v1/jobs?" + b"&" * 64 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        probe = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        head = (b"POST /v1/tune HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        huge = b"ffffffffffffffff\r\n"
        failed = [
            self.refused_promptly("1,008 bare '&'", [amps], 400, "bad_request"),
            self.refused_promptly("65 empty query parameters", [many], 400, "bad_request"),
            self.refused_promptly("1,008 bare '&' on a kept-alive connection", [probe + amps], 400,
                                  "bad_request", replies_before=[200]),
            self.refused_promptly("chunk size ffffffffffffffff", [head + huge], 413, "body_too_large"),
            self.refused_promptly("chunk size ffffffffffffffff after the head", [head, huge], 413,
                                  "body_too_large"),
            self.refused_promptly("chunk size 100001 (1 MiB + 1)", [head + b"100001\r\n{}"], 413,
                                  "body_too_large"),
            # On a kept-alive connection's second request (MHD reads it, not the gate): refused
            # once 1 MiB of the chunk arrived, not read on for 2^64 bytes.
            self.refused_promptly("chunk size ffffffffffffffff on a kept-alive connection",
                                  [probe + head + huge + b" " * (1024 * 1024 + 4096)], 413,
                                  "body_too_large", replies_before=[200]),
        ]
        self.assertEqual([f for f in failed if f], [])
        # A small chunked body still works, sent whole or its size line later; the connection
        # stays framed after it: a /healthz sent behind it is the one other reply (nothing of
        # the body answered as a request). Read until both replies came (3 s at most), not for 3 s.
        body = b'{"kernel": "no-such-kernel", "device": "cpu"}'
        chunk = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        for parts in ([head + chunk + probe], [head, chunk + probe]):
            replies, closed, first, took = exchange(self.k.address, parts, wait=3, replies_wanted=2)
            self.assertEqual([r[0] for r in replies], [400, 200], figure(replies, closed, first, took))
            self.assertIn(json.loads(replies[0][2])["error"]["code"], ("unknown_kernel", "unknown_device"))
            self.assertEqual(json.loads(replies[1][2])["status"], "ok", replies[1])
        self.assert_healthy()

    # --- issue 26, break 3: a slow body is answered 408 ---------------------------------------
    def test_slow_body_is_answered_408(self):
        # Below --http-body-min-rate (1,024 bytes/s, judged once the body is 2 s old): 408 and
        # closed. Before: one byte every 0.25 s kept the connection open as long as it went on.
        head = (b"POST /v1/tune HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n")
        host, port = self.k.address.rsplit(":", 1)
        buf, closed = b"", False
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(head)
            t0 = time.time()
            while time.time() - t0 < 8 and not closed:
                try:
                    s.send(b" ")
                except OSError:
                    pass
                s.settimeout(0.25)
                try:
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            closed = True
                            break
                        buf += chunk
                except socket.timeout:
                    pass
                except ConnectionResetError:
                    closed = True
            took = time.time() - t0
        replies, _ = parse_replies(buf)
        print("slow body, one byte every 0.25 s: %s" % figure(replies, closed, took, took))
        self.assertEqual([r[0] for r in replies], [408], "after %.1f s: %r" % (took, buf[:300]))
        err = json.loads(replies[0][2])["error"]
        self.assertEqual(err["code"], "request_timeout", err)
        self.assertIn("bytes a second", err["message"])
        self.assertTrue(closed)
        self.assertGreater(took, 1.9)
        self.assertLess(took, 2.0 + 1.5 * SLOW)
        self.assert_healthy()

    # --- issue 26, break 7: DNS rebinding (no token, loopback) ----------------------------------
    def test_host_must_be_a_loopback_name(self):
        port = self.k.address.rsplit(":", 1)[1]
        evil = "evil.example:" + port
        tune = dict(CONV, strategy="random", budget={"evaluations": 1}, seed=26)
        # A rebound page: its own name in Host and Origin. Before: 202 for the tune.
        status, _, body = self.k.post("/v1/tune", tune, headers={"Host": evil, "Origin": "http://" + evil})
        print("Host: %s + the same Origin, POST /v1/tune: %d" % (evil, status))
        if status == 202:
            self.cancel_all([body["id"]])
        err = self.json_error(status, body, 421, "misdirected_request")
        self.assertIn("evil.example", err["message"])
        self.assertIn("--api-token", err["hint"])
        for method, path in (("GET", "/v1/jobs"), ("GET", "/v1/kernels"), ("DELETE", "/v1/jobs/1"),
                             ("GET", best_query(CONV["kernel"], CONV["device"], problem_size="4096,4096")),
                             ("GET", "/metrics")):
            for host in (evil, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example",
                         "127.1:" + port, "[::2]:" + port, "localhost:" + port + "x"):
                status, _, body = self.k.request(method, path, headers={"Host": host})
                self.json_error(status, body, 421, "misdirected_request")
        # Open routes carry no data: probes and the API description answer any Host.
        self.assertEqual(self.k.get("/healthz", headers={"Host": evil})[0], 200)
        self.assertEqual(self.k.get("/v1/openapi.json", headers={"Host": evil})[0], 200)
        # Loopback names, any port or none, any case: served.
        for host in ("127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "LocalHost:" + port,
                     "127.0.0.1", "localhost", "127.0.0.2:" + port):
            status, _, body = self.k.get("/v1/jobs?limit=1", headers={"Host": host})
            self.assertEqual(status, 200, (host, body))
        status, _, body = self.k.post("/v1/tune", tune, headers={"Host": "localhost:" + port,
                                                                 "Origin": "http://localhost:" + port})
        self.assertIn(status, (202, 429), body)  # 429: the queue cap of this class's ktuned
        if status == 202:
            self.cancel_all([body["id"]])
        # A loopback Host with a foreign Origin is still a cross-site write.
        status, _, body = self.k.post("/v1/tune", tune, headers={"Origin": "http://" + evil})
        self.json_error(status, body, 403, "forbidden")

    # --- break 8: strict numbers, repeated parameters, budget.seconds -----------------------------
    def test_strict_numbers(self):
        status, _, body = self.k.get("/v1/jobs/+1")
        self.json_error(status, body, 404, "not_found")
        for q in ("limit=+5", "limit=%205", "limit=0x10", "limit=5.0", "limit=1e1", "before=+3"):
            status, _, body = self.k.get("/v1/jobs?" + q)
            self.json_error(status, body, 400, "out_of_range")
        status, _, body = self.k.get("/v1/jobs?limit=5")
        self.assertEqual(status, 200, body)
        # The CPU gemm kernel's M: hexadecimal was read as 64 before.
        status, _, body = self.k.get(best_query("gemm", "cpu", M="0x40", N="64", K="64"))
        err = self.json_error(status, body, 400, "bad_problem")
        self.assertIn("M", err["message"])
        for m in ("+64", "64.0e0x", "inf", "nan"):
            status, _, body = self.k.get(best_query("gemm", "cpu", M=m, N="64", K="64"))
            self.json_error(status, body, 400, "bad_problem")
        status, _, body = self.k.get(best_query("gemm", "cpu", M="64", N="64", K="64"))
        self.assertNotEqual(status, 400, body)  # decimal is fine: a miss (404) or a prediction
        status, _, body = self.k.get(best_query(CONV["kernel"], CONV["device"], problem_size="+4096,4096"))
        self.json_error(status, body, 400, "bad_problem")

    def test_repeated_parameter_everywhere(self):
        for path in ("/v1/jobs?limit=5&limit=6", "/v1/jobs/1/trials?limit=1&limit=2",
                     "/v1/best?kernel=convolution&kernel=gemm&device=replay:convolution_milo-A4000",
                     "/v1/best/entries?limit=1&limit=1", "/v1/models?limit=1&limit=2", "/healthz?a=1&a=1",
                     "/v1/kernels?x=1&x=2"):
            status, _, body = self.k.get(path)
            err = self.json_error(status, body, 400, "bad_request")
            self.assertIn("more than once", err["message"])

    def test_budget_seconds_lower_bound(self):
        for seconds in (1e-300, 0.0001, 0):
            status, _, body = self.k.post("/v1/tune", dict(CONV, budget={"seconds": seconds}))
            err = self.json_error(status, body, 400, "out_of_range")
            self.assertIn("budget.seconds", err["message"])

    # --- security: injection strings through every parameter ---------------------------------
    def test_injection_strings(self):
        gets = [
            ("/v1/jobs", ["status", "limit", "before"]),
            ("/v1/jobs/{v}", []),
            ("/v1/jobs/{v}/trials", []),
            ("/v1/jobs/1/trials", ["after", "limit", "format"]),
            ("/v1/best", ["kernel", "device", "source", "fallback", "k", "tune_on_miss", "problem_size"]),
            ("/v1/best/entries", ["kernel", "device", "limit"]),
            ("/v1/models", ["limit", "kernel"]),
            ("/v1/models/{v}", []),
        ]
        count = 0
        for path, params in gets:
            for value in INJECTIONS:
                quoted = urllib.parse.quote(value, safe="%")
                if "{v}" in path:
                    urls = [path.replace("{v}", quoted)]
                else:
                    base = {"kernel": "convolution", "device": "replay:convolution_milo-A4000"} \
                        if path == "/v1/best" else {}
                    urls = []
                    for p in params:
                        if (path, p) in FILTERS:
                            continue
                        q = dict(base)
                        q[p] = value
                        urls.append(path + "?" + "&".join("%s=%s" % (k, urllib.parse.quote(v, safe="%"))
                                                          for k, v in q.items()))
                for url in urls:
                    status, headers, body = self.k.get(url)
                    count += 1
                    self.assertTrue(400 <= status < 500, "%s -> %d %s" % (url, status, body))
                    self.json_error(status, body)
        # Filters match names as text: nothing matches, nothing else happens.
        for path, p in sorted(FILTERS):
            for value in INJECTIONS:
                status, _, body = self.k.get("%s?%s=%s" % (path, p, urllib.parse.quote(value, safe="%")))
                count += 1
                self.assertIn(status, (200, 400), body)
                self.assertIsInstance(body, dict, body)
                if status == 200:
                    self.assertFalse(any(body.values()), body)  # an empty list
        # Bodies: every field of a tune request.
        fields = ["kernel", "device", "strategy", "history"]
        for value in INJECTIONS:
            for f in fields:
                status, _, body = self.k.post("/v1/tune", dict(CONV, **{f: value}))
                count += 1
                self.assertTrue(400 <= status < 500, "%s=%r -> %d %s" % (f, value, status, body))
                self.json_error(status, body)
            status, _, body = self.k.post("/v1/tune", dict(CONV, problem={"problem_size": value}))
            self.json_error(status, body, 400)
            status, _, body = self.k.post("/v1/tune", dict(CONV, strategy_options={value: value}))
            self.assertTrue(400 <= status < 500, body)
        for value in ("1e400", "-1", "99999999999999999999999"):
            raw = ('{"kernel":"convolution","device":"replay:convolution_milo-A4000","budget":'
                   '{"evaluations":%s}}' % value).encode()
            status, _, body = self.k.request("POST", "/v1/tune", raw=raw,
                                             headers={"Content-Type": "application/json"})
            self.json_error(status, body, 400)
        self.assertGreater(count, 200)
        self.assert_healthy()
        status, _, body = self.k.get("/v1/jobs?limit=5")
        self.assertEqual(status, 200, body)

    # --- break 5: admission -------------------------------------------------------------------
    def submit_burst(self, n, evaluations):
        accepted, refused = [], []
        for i in range(n):
            status, headers, body = self.k.post("/v1/tune", dict(GEMM, strategy="random",
                                                                 budget={"evaluations": evaluations}, seed=i))
            if status == 202:
                accepted.append(body["id"])
            else:
                err = self.json_error(status, body, 429, "too_many_requests")
                self.assertIn("retry-after", headers)
                refused.append(err["message"])
        return accepted, refused

    def cancel_all(self, jobs):
        for job in jobs:
            status, _, body = self.k.request("DELETE", "/v1/jobs/%d" % job)
            self.assertIn(status, (200, 202, 204, 409), body)
        for job in jobs:
            self.k.wait_job(job, timeout=60)

    def test_queued_jobs_are_capped(self):
        # 1 driven (--max-jobs 1) and 3 queued at most.
        accepted, refused = self.submit_burst(8, 2000)
        self.assertLessEqual(len(accepted), 4, accepted)
        self.assertTrue(refused and all("jobs are queued" in m for m in refused), refused)
        self.cancel_all(accepted)
        # 50,000 evaluations in all: two jobs of 20,000 (17,956 each: the space) fit, a third not.
        accepted, refused = self.submit_burst(3, 20000)
        self.assertEqual(len(accepted), 2, (accepted, refused))
        self.assertIn("evaluations", refused[0])
        self.cancel_all(accepted)

    def test_heavy_pages_leave_healthz_fast(self):
        status, _, job = self.k.post("/v1/tune", dict(CONV, strategy="random", budget={"evaluations": 400},
                                                      seed=7))
        if status == 429:  # the cap test's jobs are still draining
            time.sleep(2)
            status, _, job = self.k.post("/v1/tune", dict(CONV, strategy="random",
                                                          budget={"evaluations": 400}, seed=7))
        self.assertEqual(status, 202, job)
        self.k.wait_job(job["id"], timeout=120)
        stop = threading.Event()
        statuses = []

        def reader():
            while not stop.is_set():
                conn = http.client.HTTPConnection(self.k.address, timeout=60)
                conn.request("GET", "/v1/jobs/%d/trials?limit=10000" % job["id"])
                r = conn.getresponse()
                r.read()
                statuses.append(r.status)
                conn.close()

        threads = [threading.Thread(target=reader) for _ in range(16)]
        for t in threads:
            t.start()
        took = []
        try:
            time.sleep(0.5)
            for _ in range(20):
                t0 = time.time()
                status, _, _ = self.k.get("/healthz")
                took.append(time.time() - t0)
                self.assertEqual(status, 200)
                time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join()
        took.sort()
        print("heavy pages: %d reads (%d refused 429), /healthz median %.3f s, worst %.3f s" %
              (len(statuses), statuses.count(429), took[len(took) // 2], took[-1]))
        self.assertTrue(set(statuses) <= {200, 429}, set(statuses))
        self.assertIn(200, statuses)
        # Timing on a shared machine (ktuned, PostgreSQL and these 16 readers on one core under
        # make test): the median says whether /healthz waits for the pages; the worst is loose.
        self.assertLess(took[len(took) // 2], 0.25 * SLOW)
        self.assertLess(took[-1], 3.0 * SLOW)


class SlowBodyFloodTest(unittest.TestCase):
    """Issue 26, break 3: --max-connections slow request bodies from two addresses (each under
    --max-connections-per-ip) sending a byte a second. Before: every /healthz from a third address
    was closed unanswered while they lasted. Now a newcomer from an address with fewer
    connections displaces one of them, and each gets 408 at --http-body-timeout-s."""

    FLOOD = 1000
    TIMEOUT = 6.0
    PROBES = 20

    @classmethod
    def setUpClass(cls):
        # The body options through the environment: a ktuned from before them ignores it and runs
        # the same scenario (the before figures), where an unknown flag would stop it.
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--workers", "1", "--max-connections", str(cls.FLOOD),
                              "--max-connections-per-ip", str(cls.FLOOD // 2)],
                       env={"KTUNE_HTTP_BODY_TIMEOUT_S": str(cls.TIMEOUT), "KTUNE_HTTP_BODY_MIN_RATE": "0"})
        cls.k.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        tail = cls.k.log_tail(40)
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM; log:\n%s" % (rc, tail)

    def test_slow_bodies_do_not_lock_probes_out(self):
        host, port = self.k.address.rsplit(":", 1)
        head = (b"POST /v1/tune HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n{")
        flood = []  # [socket, opened at, bytes read, closed at]
        stop = threading.Event()
        try:
            for i in range(self.FLOOD):
                s = socket.create_connection((host, int(port)), timeout=5,
                                             source_address=("127.0.0.%d" % (2 + i % 2), 0))
                s.sendall(head)
                flood.append([s, time.time(), b"", None])
            opened = time.time()

            def trickle():  # one body byte a second on each
                while not stop.wait(1.0):
                    for f in flood:
                        try:
                            f[0].send(b" ")
                        except OSError:
                            pass
            sender = threading.Thread(target=trickle)
            sender.start()
            time.sleep(0.5)
            took, answered = [], 0
            for _ in range(self.PROBES):
                t0 = time.time()
                try:
                    conn = http.client.HTTPConnection(self.k.address, timeout=3)
                    conn.request("GET", "/healthz")
                    r = conn.getresponse()
                    r.read()
                    conn.close()
                    answered += r.status == 200
                except (OSError, http.client.HTTPException):
                    pass
                took.append(time.time() - t0)
                time.sleep(0.05)
            probed = time.time() - opened
            took.sort()
            # Each slow connection: what it got, and when, until TIMEOUT + 4 s after the last opened.
            for f in flood:
                f[0].setblocking(False)
            deadline = opened + self.TIMEOUT + 4.0 * SLOW
            while time.time() < deadline and any(f[3] is None for f in flood):
                for f in flood:
                    if f[3] is not None:
                        continue
                    try:
                        chunk = f[0].recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if chunk:
                        f[2] += chunk
                    else:
                        f[3] = time.time()
                time.sleep(0.05)
        finally:
            stop.set()
            if "sender" in locals():
                sender.join()
            for f in flood:
                f[0].close()
        got408 = [f[3] - f[1] for f in flood if f[2].startswith(b"HTTP/1.1 408") and f[3] is not None]
        silent = sum(1 for f in flood if not f[2] and f[3] is not None)
        still = sum(1 for f in flood if f[3] is None)
        got408.sort()
        print("slow bodies: %d/%d health probes answered while %d slow-body connections were open "
              "(median %.0f ms, worst %.0f ms, %.1f s after the flood opened); slow connections: %d "
              "got 408 (median %.1f s after opening), %d closed without a reply, %d still open %.1f s "
              "after the flood opened" %
              (answered, self.PROBES, len(flood), took[len(took) // 2] * 1000, took[-1] * 1000, probed,
               len(got408), got408[len(got408) // 2] if got408 else 0, silent, still, deadline - opened))
        self.assertEqual(answered, self.PROBES)
        self.assertEqual(still, 0)
        # Those displaced for the probes close without a reply; every other one gets 408 in JSON
        # at its deadline.
        self.assertGreaterEqual(len(got408), self.FLOOD - self.PROBES - 5)
        self.assertLessEqual(silent, self.PROBES + 5)
        self.assertGreater(got408[0], self.TIMEOUT - 0.5)
        self.assertLess(got408[len(got408) // 2], self.TIMEOUT + 2.0 * SLOW)
        body = next(f[2] for f in flood if f[2]).split(b"\r\n\r\n", 1)[1]
        self.assertEqual(json.loads(body)["error"]["code"], "request_timeout", body)
        status, _, health = self.k.get("/healthz")
        self.assertEqual(status, 200, health)


if __name__ == "__main__":
    run_tests()
