"""Integration (issue 11, breaks 6 and 8): how jobs end, on the real cpu device.

- DELETE /v1/jobs/{id} while a trial of it is being measured by a hanging kernel (tests/kernels/hang)
  stops the measurement within about a second: the worker is idle again, the runner's process group
  was killed, the device serves the next job at once, and no trial is recorded for the cancelled job
  (before: the kernel held the device until the run timeout, then a `timeout` trial was recorded).
- The same when another process cancels the job in the shared database.
- A job whose only trial crashed ends `failed` (`no_ok_trial`, error `measure` counting the statuses),
  never `succeeded` with `best: null`.
"""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
KERNELS = os.path.join(SOURCE, "kernels") + "," + os.path.join(SOURCE, "tests", "kernels")
# Long enough that a measurement still held at the deadline is unmistakable.
RUN_TIMEOUT_S = 30
STOP_WITHIN_S = 2.0


class LifecycleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        env = {}
        if "ASAN_OPTIONS" in os.environ:
            env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":handle_segv=0"
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, env=env,
                       extra=["--kernels", KERNELS, "--workers", "1", "--min-seconds", "0.05",
                              "--run-timeout-s", str(RUN_TIMEOUT_S), "--compile-timeout-s", "20"])
        cls.k.start()

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.k.stop()
            assert rc == 0, "ktuned exited with %s on SIGTERM" % rc
        finally:
            cls.k.cleanup()

    def workers(self):
        status, _, body = self.k.get("/v1/workers")
        self.assertEqual(status, 200, body)
        return body["workers"]

    def wait_workers(self, predicate, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            ws = self.workers()
            if predicate(ws):
                return ws
            time.sleep(0.02)
        return None

    def test_cancel_stops_a_hanging_measurement(self):
        k = self.k
        status, _, job = k.post("/v1/tune", {"kernel": "hang", "device": "cpu",
                                             "strategy": "exhaustive", "budget": {"evaluations": 5}})
        self.assertEqual(status, 202, job)
        jid = job["id"]
        measuring = self.wait_workers(
            lambda ws: any(w["status"] == "measuring" and w["current_trial"] for w in ws), 30)
        self.assertIsNotNone(measuring, "no worker started measuring the hang job: %s" % self.workers())
        time.sleep(1.5)  # compiled (a fraction of a second) and spinning in the kernel
        hanging = self.k.children("ktune-runner")
        self.assertTrue(hanging, "no ktune-runner under ktuned while it measures")

        t0 = time.time()
        status, _, cancelled = k.request("DELETE", "/v1/jobs/%d" % jid)
        self.assertEqual((status, cancelled["status"]), (200, "cancelled"), cancelled)
        idle = self.wait_workers(lambda ws: all(w["status"] == "idle" for w in ws),
                                 RUN_TIMEOUT_S + 15)
        held = time.time() - t0
        print("the measurement stopped %.2f s after the cancel" % held)
        self.assertIsNotNone(idle, "the worker never became idle")
        self.assertLess(held, STOP_WITHIN_S, "the hanging measurement held the device %.1f s after "
                        "the cancel" % held)
        left = set(hanging) & set(self.k.children("ktune-runner"))
        self.assertFalse(left, "the runner that spun in the kernel still runs")

        # Nothing is recorded for the cancelled job: no timeout trial, counters unchanged.
        time.sleep(0.3)
        status, _, seen = k.get("/v1/jobs/%d" % jid)
        self.assertEqual((seen["status"], seen["progress"]["trials"], seen["best"]),
                         ("cancelled", 0, None), seen)
        self.assertEqual(k.all_trials(jid), [])

        # The device is free: the next cpu job is measured at once.
        t1 = time.time()
        status, _, nxt = k.post("/v1/tune", {"kernel": "scale", "device": "cpu",
                                             "problem": {"n": 4096}, "strategy": "exhaustive",
                                             "budget": {"evaluations": 3}, "final_remeasure": 0})
        self.assertEqual(status, 202, nxt)
        done = k.wait_job(nxt["id"], timeout=RUN_TIMEOUT_S + 30)
        self.assertEqual(done["status"], "succeeded", done)
        self.assertLess(time.time() - t1, RUN_TIMEOUT_S / 2)
        status, _, seen = k.get("/v1/jobs/%d" % jid)
        self.assertEqual((seen["status"], seen["progress"]["trials"]), ("cancelled", 0), seen)

    def test_cancel_by_another_process_stops_the_measurement(self):
        """The cancel another ktuned sharing the database makes (job_store_cancel's statements, run
        here with psql): this process sees it (its runner thread, or the measurer's query every
        0.5 s) and stops the measurement the same way."""
        k = self.k
        status, _, job = k.post("/v1/tune", {"kernel": "hang", "device": "cpu", "problem": {"n": 2048},
                                             "strategy": "exhaustive", "budget": {"evaluations": 5}})
        self.assertEqual(status, 202, job)
        jid = job["id"]
        measuring = self.wait_workers(
            lambda ws: any(w["status"] == "measuring" and w["current_trial"] for w in ws), 30)
        self.assertIsNotNone(measuring, "no worker started measuring the hang job")
        time.sleep(1.5)
        t0 = time.time()
        k.psql("BEGIN; UPDATE jobs SET status = 'cancelled', stop_reason = 'cancelled',"
               " finished_at = now() WHERE id = %d; DELETE FROM trials WHERE job_id = %d"
               " AND status IN ('pending', 'running'); COMMIT" % (jid, jid))
        idle = self.wait_workers(lambda ws: all(w["status"] == "idle" for w in ws),
                                 RUN_TIMEOUT_S + 15)
        held = time.time() - t0
        print("the measurement stopped %.2f s after another process's cancel" % held)
        self.assertIsNotNone(idle, "the worker never became idle")
        self.assertLess(held, STOP_WITHIN_S + 1.0)  # + psql's start, + the 0.5 s poll
        time.sleep(0.3)
        status, _, seen = k.get("/v1/jobs/%d" % jid)
        self.assertEqual((seen["status"], seen["progress"]["trials"]), ("cancelled", 0), seen)
        self.assertEqual(k.all_trials(jid), [])
        self.assertEqual(k.psql("SELECT count(*) FROM trials WHERE job_id = %d" % jid), "0")

    def test_job_whose_only_trial_crashed_fails(self):
        k = self.k
        status, _, job = k.post("/v1/tune", {"kernel": "crash", "device": "cpu",
                                             "strategy": "random", "budget": {"evaluations": 1}})
        self.assertEqual(status, 202, job)
        job = k.wait_job(job["id"], timeout=60)
        self.assertEqual((job["status"], job["stop_reason"], job["best"]),
                         ("failed", "no_ok_trial", None), job)
        self.assertEqual(job["error"]["code"], "measure", job)
        self.assertIn("no configuration ran correctly: 1 runtime_error (1 trial, stopped by ",
                      job["error"]["message"])
        self.assertIn("/v1/jobs/%d/trials" % job["id"], job["error"]["hint"])
        trials = k.all_trials(job["id"])
        self.assertEqual([t["status"] for t in trials], ["runtime_error"])


if __name__ == "__main__":
    run_tests()
