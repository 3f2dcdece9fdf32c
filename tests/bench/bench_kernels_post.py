#!/usr/bin/env python3
"""Bench: POST /v1/kernels with 50 KB of source (issue 27, "Speed": answers in < 100 ms, the
validation being asynchronous). A real ktuned (embedded PostgreSQL, --workers 1) and one client on a
keep-alive connection:

1. --versions distinct versions of one kernel (default 30), posted one after the other: a vector
   kernel whose cpu.c is --kb KB (default 50) of valid C, the kernel and its reference small, the
   rest comment lines; version i differs from the others in the bytes of its first comment line
   (the version hashes every source byte). The answer time of each POST (request sent to reply
   read): p50, p90, max. After each POST, a GET /healthz on the same connection: the HTTP round
   trip alone at the same moment, as a baseline (the ratio moves less with the machine's load).
2. Validation: a second connection polls GET /v1/kernels/{name} from the first POST on; for each
   version, when it was first seen ready (or invalid) after its POST: p50 and max, and when the last
   one was.

Prints the figures and the load average; exits 1 only when a check of correctness fails (an answer
other than 201, the reply's status not validating, two versions alike, a version not reaching ready
within --timeout), never on a time. --quick (ctest bench_kernels_post_small): 4 versions.

  python3 tests/bench/bench_kernels_post.py --ktuned build/ktuned --source-dir .
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from ktuned_fixture import Ktuned  # noqa: E402

NAME = "bench_post50k"
SPEC = {
    "name": NAME,
    "summary": "y = 3*x, with a long comment",
    "problem": [{"name": "n", "min": 1, "max": 1 << 20, "default": 4096}],
    "buffers": [{"name": "x", "elements": "n", "role": "input"},
                {"name": "y", "elements": "n", "role": "output"}],
    "flops": "n",
    "tolerance": {"rtol": 1e-6, "atol": 1e-7},
    "reference": {"kind": "c", "source": "reference.c"},
    "variants": {"cpu": {"source": "cpu.c", "parameters": [{"name": "U", "values": [1, 2, 4]}],
                         "restrictions": [], "default": {"U": 1}}},
    "test_problem": {"n": 1024},
}
KERNEL = """int ktune_kernel(float *const *b, const long long *p);
int ktune_kernel(float *const *b, const long long *p)
{
    long long i = 0, n = p[0];
    for (; i + U <= n; i += U)
        for (int u = 0; u < U; u++)
            b[1][i + u] = 3.0f * b[0][i + u];
    for (; i < n; i++)
        b[1][i] = 3.0f * b[0][i];
    return 0;
}
"""
REFERENCE = """int ktune_reference(float *const *b, const long long *p);
int ktune_reference(float *const *b, const long long *p)
{
    for (long long i = 0; i < p[0]; i++)
        b[1][i] = 3.0f * b[0][i];
    return 0;
}
"""
LINE = " * The loop is unrolled U times; the tail runs one element at a time. Lorem ipsum dolor.\n"


def cpu_source(index, kb):
    """Version index's cpu.c, kb KB long: its own first comment line, then comment lines."""
    head = "/* bench_kernels_post: version %06d\n" % index
    body = KERNEL + " */\n"
    lines = max(0, (kb * 1024 - len(head) - len(body)) // len(LINE))
    return head + LINE * lines + " */\n" + KERNEL


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


class Client:
    def __init__(self, address):
        self.conn = http.client.HTTPConnection(address, timeout=120)

    def request(self, method, path, body=None):
        headers = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=body, headers=headers)
        resp = self.conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")


class Poller(threading.Thread):
    """Polls the versions of NAME; seen[version] = (status, perf_counter time first seen in it)."""

    def __init__(self, address):
        super().__init__(daemon=True)
        self.client = Client(address)
        self.seen = {}
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                status, body = self.client.request("GET", "/v1/kernels/" + NAME)
                now = time.perf_counter()
                if status == 200:
                    for v in body["versions"]:
                        if v["status"] in ("ready", "invalid") and v["version"] not in self.seen:
                            self.seen[v["version"]] = (v["status"], now, v.get("log"))
                elif status != 404:  # 404 before the first version is stored
                    raise RuntimeError("GET /v1/kernels/%s: %d %s" % (NAME, status, body))
                self.stop.wait(0.05)
        except Exception as e:  # reported, and the bench fails
            self.error = str(e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--quick", action="store_true", help="4 versions, for ctest (correctness only)")
    ap.add_argument("--versions", type=int, default=30)
    ap.add_argument("--kb", type=int, default=50, help="size of each cpu.c in KB")
    ap.add_argument("--timeout", type=float, default=600, help="seconds for every version to be ready")
    args = ap.parse_args()
    if args.quick:
        args.versions = 4
    failures = []
    k = Ktuned(args.ktuned, os.path.abspath(args.source_dir),
               extra=["--workers", "1", "--log-level", "warn"])
    try:
        k.start()
        print("load average before: %s (cores: %d)" % (" ".join("%.2f" % x for x in os.getloadavg()),
                                                       os.cpu_count() or 0))
        bodies = [json.dumps({"spec": SPEC, "files": {"cpu.c": cpu_source(i, args.kb),
                                                      "reference.c": REFERENCE}}).encode()
                  for i in range(args.versions)]
        size = len(cpu_source(0, args.kb))
        c = Client(k.address)
        c.request("GET", "/healthz")  # the connection opened before any timing
        poller = Poller(k.address)
        poller.start()
        posts, health, sent, versions = [], [], {}, []
        for i, body in enumerate(bodies):
            t0 = time.perf_counter()
            status, reply = c.request("POST", "/v1/kernels", body)
            posts.append((time.perf_counter() - t0) * 1000)
            if status != 201:
                failures.append("version %d: %d %s" % (i, status, reply))
                continue
            if reply.get("status") != "validating" or reply.get("name") != NAME:
                failures.append("version %d: the reply %s" % (i, reply))
            sent[reply["version"]] = t0
            versions.append(reply["version"])
            t1 = time.perf_counter()
            c.request("GET", "/healthz")
            health.append((time.perf_counter() - t1) * 1000)
        if len(set(versions)) != len(versions):
            failures.append("versions alike: %s" % versions)
        deadline = time.time() + args.timeout
        while time.time() < deadline and not poller.error and \
                any(v not in poller.seen for v in versions):
            time.sleep(0.1)
        poller.stop.set()
        poller.join()
        if poller.error:
            failures.append(poller.error)
        ready = []
        for v in versions:
            if v not in poller.seen:
                failures.append("version %s did not reach ready in %.0f s" % (v, args.timeout))
                continue
            st, when, log = poller.seen[v]
            if st != "ready":
                failures.append("version %s is %s: %s" % (v, st, (log or "")[:400]))
            ready.append((when - sent[v]) * 1000)

        print("POST /v1/kernels, %d distinct versions, cpu.c %d bytes (request %d bytes), one "
              "keep-alive connection:" % (args.versions, size, len(bodies[0])))
        if posts:
            print("  answer: p50 %.1f ms, p90 %.1f ms, max %.1f ms (first %.1f ms; target < 100 ms)"
                  % (percentile(posts, 0.5), percentile(posts, 0.9), max(posts), posts[0]))
        if health:
            base = percentile(health, 0.5)
            print("  baseline GET /healthz after each POST: p50 %.2f ms, max %.2f ms; POST p50 / "
                  "healthz p50: %.1f x" % (base, max(health),
                                           percentile(posts, 0.5) / base if base > 0 else 0))
        if ready:
            last = max(poller.seen[v][1] for v in versions if v in poller.seen)
            print("  validation (1 worker; seen by polling every 50 ms), POST to ready: p50 %.0f ms, "
                  "max %.0f ms; all %d ready %.1f s after the first POST"
                  % (percentile(ready, 0.5), max(ready), len(ready), last - sent[versions[0]]))
    finally:
        k.stop()
        k.cleanup()
    print("load average after: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
