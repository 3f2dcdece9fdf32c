"""Integration: GET /v1/best from memory (issue #11), across processes.

Two ktuned processes share one PostgreSQL started here (its own cluster, so that it can be stopped
and started at will), each with its lookup cache and its listener:
- a lookup answered by one process is cached there (the same bytes and ETag again); a better result
  recorded by the OTHER process, or an UPDATE of the best table through psql (the trigger of
  sql/007 notifies, no ktuned code runs), reaches it within a second; parameter order does not
  matter;
- ETag / If-None-Match: 304 without a body while the answer is the same (also for a weak or listed
  tag, and "*"), 200 with a new ETag once it changed;
- a miss (404 no_best) is cached too and dropped when the key gets a result; `tune_on_miss` on a
  cached miss still queues its job;
- with the database stopped, cached answers are still served (and fast), an uncached one is 503
  `database`; once the database is back the listener reconnects, flushes, and changes reach the
  cache again.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
CONV = ("convolution", "replay:convolution_milo-A4000")
PNPOLY = ("pnpoly", "replay:pnpoly_kt-RTX_3090")
GEMM = ("clblast_gemm", "replay:gemm_clblast-RTX_2080_Ti")
EXTRA = ["--workers", "1", "--kernels", ""]
SEEN_WITHIN_S = 5.0


class Postgres:
    """A throw-away cluster on a private unix socket, trust auth, a superuser 'ktune'."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ktune-it-pg-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        os.mkdir(self.sock)
        self.bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.dir, "postgres")
            shutil.chown(self.sock, "postgres")
        self.conninfo = "host=%s port=5432 dbname=ktune user=ktune" % self.sock

    def run(self, *cmd, check=True):
        cmd = [os.path.join(self.bindir, cmd[0])] + list(cmd[1:])
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=check)

    def init(self):
        self.run("initdb", "-D", self.data, "-A", "trust", "-U", "ktune", "--no-sync")
        self.start()
        self.psql("CREATE DATABASE ktune", db="postgres")

    def start(self):
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "pg.log"), "-w", "-o",
                 "-k %s -c listen_addresses='' -p 5432" % self.sock, "start")

    def stop(self):
        self.run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop", check=False)

    def psql(self, sql, db="ktune"):
        out = subprocess.run(["psql", "host=%s port=5432 dbname=%s user=ktune" % (self.sock, db),
                              "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def tune(k, kernel, device, evaluations, seed):
    status, _, job = k.post("/v1/tune", {"kernel": kernel, "device": device, "strategy": "random",
                                         "budget": {"evaluations": evaluations}, "seed": seed})
    assert status == 202, job
    job = k.wait_job(job["id"], timeout=120)
    assert job["status"] == "succeeded", job
    return job


def wait_for(fn, what, timeout=SEEN_WITHIN_S):
    """Polls fn() until it returns a true value; fails after timeout seconds."""
    deadline = time.time() + timeout
    while True:
        got = fn()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError("not within %.0f s: %s" % (timeout, what))
        time.sleep(0.02)


class BestCacheTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pg = Postgres()
        cls.a = cls.b = None
        try:
            cls.pg.init()
            cls.a = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=EXTRA + ["--database-url", cls.pg.conninfo])
            cls.a.start()
            cls.b = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=EXTRA + ["--database-url", cls.pg.conninfo])
            cls.b.start()
        except Exception:
            if cls.a:
                print(cls.a.log_tail(), file=sys.stderr)
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        rcs = []
        for k in (cls.a, cls.b):
            if k and k.proc:
                rcs.append(k.stop())  # a clean stop (and, under ASan, no leak report)
            if k:
                k.cleanup()
        cls.pg.cleanup()
        assert all(rc == 0 for rc in rcs), "ktuned exited with %s on SIGTERM" % rcs

    def test_1_another_process_and_psql_invalidate(self):
        q = best_query(*CONV)
        status, _, miss = self.b.get(q)
        self.assertEqual((status, miss["error"]["code"]), (404, "no_best"))
        tune(self.a, *CONV, 10, 1)  # measured by A (one worker each: A's or B's, either way)
        # B's cached miss is dropped by the NOTIFY of the best row's insert
        first = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(self.b.get(q)), "B sees the result")
        _, h1, best1 = first
        status, h2, best2 = self.b.get(q)
        self.assertEqual((status, best2, h2["etag"]), (200, best1, h1["etag"]))  # from memory
        self.assertEqual(best1["source"], "measured")
        # the same request with its parameters in another order is the same cached answer
        status, h3, best3 = self.b.get("/v1/best?device=%s&kernel=%s&problem_size=4096,4096" % (CONV[1], CONV[0]))
        status4, h4, best4 = self.b.get(q + "&problem_size=4096,4096")
        self.assertEqual((status, status4, best3, h3["etag"]), (200, 200, best4, h4["etag"]))
        # a change made outside ktuned: only the trigger can tell B
        self.pg.psql("UPDATE best SET time_ms = time_ms / 4 WHERE kernel = 'convolution'")
        _, h5, best5 = wait_for(lambda: (lambda r: r if r[2]["time_ms"] != best1["time_ms"] else None)(self.b.get(q)),
                                "B sees the psql UPDATE")
        self.assertAlmostEqual(best5["time_ms"], best1["time_ms"] / 4)
        self.assertNotEqual(h5["etag"], h1["etag"])
        # and A, which recorded the result, too
        self.assertAlmostEqual(self.a.get(q)[2]["time_ms"], best1["time_ms"] / 4)
        # a DELETE makes it a miss again everywhere
        self.pg.psql("DELETE FROM best WHERE kernel = 'convolution'")
        for k in (self.a, self.b):
            wait_for(lambda: k.get(q)[0] == 404, "the deleted entry is a miss")

    def test_2_etag_and_304(self):
        q = best_query(*PNPOLY)
        tune(self.a, *PNPOLY, 5, 2)
        status, h, best = self.b.get(q)
        self.assertEqual(status, 200, best)
        etag = h["etag"]
        self.assertRegex(etag, r'^"[0-9a-f]{16}-[0-9a-f]+"$')
        self.assertEqual(h["cache-control"], "no-cache")
        for inm in (etag, "W/" + etag, '"other", ' + etag, "*"):
            status, h304, body = self.b.get(q, headers={"If-None-Match": inm})
            self.assertEqual((status, body, h304["etag"]), (304, "", etag), inm)
        status, _, body = self.b.get(q, headers={"If-None-Match": '"other"'})
        self.assertEqual((status, body), (200, best))
        # both processes make the same bytes, so the same ETag
        self.assertEqual(self.a.get(q)[1]["etag"], etag)
        # the answer changes: the old ETag gets a 200 with the new one
        self.pg.psql("UPDATE best SET time_ms = time_ms / 2 WHERE kernel = 'pnpoly'")
        status, h2, best2 = wait_for(
            lambda: (lambda r: r if r[0] == 200 else None)(self.b.get(q, headers={"If-None-Match": etag})),
            "a 200 for the old ETag")
        self.assertNotEqual(h2["etag"], etag)
        self.assertAlmostEqual(best2["time_ms"], best["time_ms"] / 2)
        # errors carry no ETag
        status, h3, _ = self.b.get(best_query(*GEMM, source="predicted"))
        self.assertEqual(status, 404)
        self.assertNotIn("etag", h3)

    def test_3_tune_on_miss_is_never_answered_by_a_cached_miss(self):
        q = best_query(*GEMM)
        for _ in range(2):  # the second one is the cached miss
            status, _, miss = self.b.get(q)
            self.assertEqual((status, miss["error"]["code"]), (404, "no_best"))
        status, _, reply = self.b.get(q + "&tune_on_miss=5")
        self.assertEqual(status, 404, reply)
        job = reply["tune_on_miss"]
        self.assertTrue(job["queued"], reply)
        self.a.wait_job(job["job_id"], timeout=120)
        status, _, best = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(self.b.get(q)),
                                   "the job's result replaces the cached miss")
        self.assertEqual(best["job_id"], job["job_id"])
        # a measurement answers a tune_on_miss request from memory, queueing nothing
        status, _, again = self.b.get(q + "&tune_on_miss=5")
        self.assertEqual((status, again), (200, best))

    def test_4_database_down_answers_from_memory(self):
        q = best_query(*PNPOLY)
        status, h, best = self.b.get(q)
        self.assertEqual(status, 200, best)
        self.b.get(q)
        self.pg.stop()
        try:
            t0 = time.time()
            for _ in range(20):
                status, h2, again = self.b.get(q)
                self.assertEqual((status, again, h2["etag"]), (200, best, h["etag"]))
            self.assertLess(time.time() - t0, 2.0)
            status, _, body = self.b.get(q + "&source=measured")  # never asked: not in memory
            self.assertEqual((status, body["error"]["code"]), (503, "database"), body)
        finally:
            self.pg.start()
        # back: the listener reconnects and flushes; changes are heard again
        self.pg.psql("UPDATE best SET time_ms = time_ms / 2 WHERE kernel = 'pnpoly'")
        _, _, best2 = wait_for(lambda: (lambda r: r if r[0] == 200 and r[2] != best else None)(self.b.get(q)),
                               "B answers from the database again after the restart", timeout=30)
        self.assertAlmostEqual(best2["time_ms"], best["time_ms"] / 2)
        self.pg.psql("UPDATE best SET time_ms = time_ms / 2 WHERE kernel = 'pnpoly'")
        wait_for(lambda: abs(self.b.get(q)[2]["time_ms"] - best["time_ms"] / 4) < 1e-9,
                 "a change after the restart reaches the cache")


if __name__ == "__main__":
    run_tests()
