"""Integration: a hung database (issue 26, break 5).

The embedded PostgreSQL is stopped with SIGSTOP, postmaster and every backend, as a stuck disk or a
frozen host would leave it: connections stay open, nothing answers. Before, queries on pooled
connections had no time limit: /healthz, cached /v1/best and every other route stopped answering.
Now (store/db.h: a limit on every statement's wait, connections dropped, connect_timeout; the API's
requests wait 2 s at most: api_internal.h) every route that needs the database answers 503
`database` with a message and a hint within a few seconds, /healthz says "down", and a cached
/v1/best answers from memory at once. After SIGCONT everything recovers: /healthz 200, a new job
runs to its end. The processes are always continued (finally).
"""
import http.client
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, child_pids, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
DEVICE = "replay:pnpoly_kt-RTX_3090"
CLIENT_TIMEOUT_S = 10.0  # what "no answer" means here
LIMIT_S = 3.5            # a 503 must come within this (about 2 s: API_DB_LIMIT_MS, connect_timeout)
CACHED_LIMIT_S = 0.2     # a cached /v1/best answers from memory


def ask(k, method, path, body=None):
    """(status, parsed body, seconds); status None when no answer came within CLIENT_TIMEOUT_S."""
    t = time.time()
    conn = http.client.HTTPConnection(k.address, timeout=CLIENT_TIMEOUT_S)
    try:
        conn.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                     headers={"Content-Type": "application/json"} if body is not None else {})
        resp = conn.getresponse()
        payload = resp.read()
        try:
            parsed = json.loads(payload)
        except ValueError:
            parsed = payload.decode(errors="replace")
        return resp.status, parsed, time.time() - t
    except (OSError, http.client.HTTPException):
        return None, None, time.time() - t
    finally:
        conn.close()


class DbHangTest(unittest.TestCase):
    def hang_and_ask(self, k, job_id, cached):
        """SIGSTOPs the postmaster (first: it forks nothing after that) and every child of it, asks
        the routes while they are stopped, and always continues them. Returns the answers as
        (name, status or None, reply, seconds, expected status, time limit)."""
        pause = {"pause": True}
        # First a statement on a connection that looks healthy (the token cache was just reloaded,
        # so only the statement waits): the statement's limit. Then the cached answer and /healthz,
        # the other routes, and after a pause (DB_RETRY_MS) the reconnection attempts'
        # connect_timeout.
        routes = [
            ("GET", "/v1/jobs/%d" % job_id, None, 503, LIMIT_S),
            ("GET", cached, None, 200, CACHED_LIMIT_S),
            ("GET", "/healthz", None, 503, LIMIT_S),
            ("GET", "/v1/jobs?limit=5", None, 503, LIMIT_S),
            ("GET", "/v1/jobs/%d/trials" % job_id, None, 503, LIMIT_S),
            ("GET", "/v1/best/entries", None, 503, LIMIT_S),
            ("POST", "/v1/tune", {"kernel": "pnpoly", "device": DEVICE, "budget": {"evaluations": 5}}, 503, LIMIT_S),
            ("GET", best_query("pnpoly", DEVICE, source="predicted"), None, 503, LIMIT_S),
            ("GET", "/v1/models", None, 503, LIMIT_S),
            pause,
            ("GET", "/v1/jobs?limit=5", None, 503, LIMIT_S),
            pause,
            ("GET", "/healthz", None, 503, LIMIT_S),
            ("GET", cached, None, 200, CACHED_LIMIT_S),
        ]
        answers = []
        stopped = []
        status, _, _ = k.get("/v1/jobs?limit=1")  # reloads the token cache (at most once a second)
        self.assertEqual(status, 200)
        try:
            pm = k.postmaster_pid()
            os.kill(pm, signal.SIGSTOP)
            stopped.append(pm)
            for pid in child_pids(pm):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            t_hang = time.time()
            for route in routes:
                if route is pause:
                    time.sleep(0.3)
                    continue
                method, path, body, want, limit = route
                status, reply, took = ask(k, method, path, body)
                name = "%s %s" % (method, path if len(path) < 40 else path[:37] + "...")
                print("SIGSTOP postmaster: %s: %s in %.3f s" % (name, status if status else "no answer", took),
                      file=sys.stderr, flush=True)
                answers.append((name, status, reply, took, want, limit))
                if sum(1 for a in answers if a[1] is None) >= 3:
                    break  # hung: the rest would hang too; keep the test bounded
            print("SIGSTOP postmaster: %d routes asked in %.1f s" % (len(answers), time.time() - t_hang),
                  file=sys.stderr)
        finally:
            for pid in stopped:
                try:
                    os.kill(pid, signal.SIGCONT)
                except OSError:
                    pass
        return answers

    def check_answers(self, answers):
        for name, status, reply, took, want, limit in answers:
            self.assertIsNotNone(status, "%s: no answer within %.0f s while the database hangs"
                                 % (name, CLIENT_TIMEOUT_S))
            self.assertEqual(status, want, (name, reply))
            self.assertLess(took, limit, "%s: %d after %.2f s" % (name, status, took))
            if want == 200:
                continue
            if name == "GET /healthz":
                self.assertEqual(reply["database"], "down", reply)
            else:
                self.assertEqual(reply["error"]["code"], "database", reply)
                self.assertTrue(reply["error"]["message"], reply)
                self.assertTrue(reply["error"]["hint"], reply)

    def test_sigstopped_database_is_503_not_a_hang(self):
        k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--workers", "2"])
        try:
            k.start()
            status, _, job = k.post("/v1/tune", {"kernel": "pnpoly", "device": DEVICE, "strategy": "random",
                                                 "budget": {"evaluations": 5}, "seed": 3})
            self.assertEqual(status, 202, job)
            k.wait_job(job["id"], timeout=60)
            cached = best_query("pnpoly", DEVICE)
            for _ in range(2):  # the first fills the answer cache, the second is served from it
                status, _, best = k.get(cached)
                self.assertEqual(status, 200, best)
            self.check_answers(self.hang_and_ask(k, job["id"], cached))
            # Everything recovers by itself once the server runs again.
            deadline = time.time() + 30
            status, health = None, None
            while time.time() < deadline and status != 200:
                status, health, _ = ask(k, "GET", "/healthz")
                time.sleep(0.2)
            self.assertEqual(status, 200, health)
            status, _, again = k.post("/v1/tune", {"kernel": "pnpoly", "device": DEVICE, "strategy": "random",
                                                   "budget": {"evaluations": 5}, "seed": 4})
            self.assertEqual(status, 202, again)
            final = k.wait_job(again["id"], timeout=60)
            self.assertEqual(final["status"], "succeeded", final)
        except Exception:
            print(k.log_tail(), file=sys.stderr)
            raise
        finally:
            k.cleanup()


if __name__ == "__main__":
    run_tests()
