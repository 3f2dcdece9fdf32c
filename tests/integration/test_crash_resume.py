"""Integration: kill -9 of ktuned in the middle of a job, then a restart: the job resumes by replaying its
stored trials and ends with exactly its budget of distinct configurations, the same ones an
uninterrupted job with the same seed measures."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
JOB = {"kernel": "convolution", "device": "replay:convolution_milo-A4000", "strategy": "random",
       "budget": {"evaluations": 100}, "seed": 2026}
# Replay sleeps 2% of the recorded ~1.1 s per trial, so 100 trials take about a second per worker.
SLOW = ["--workers", "2", "--replay-speed", "0.02"]


class CrashResumeTest(unittest.TestCase):
    def test_kill9_mid_job_then_restart(self):
        k = Ktuned(ARGS.ktuned, ARGS.source_dir, product_db=True, extra=SLOW)
        try:
            k.start()
            status, _, job = k.post("/v1/tune", JOB)
            self.assertEqual(status, 202, job)
            jid = job["id"]
            mid = k.wait_job(jid, predicate=lambda j: j["progress"]["trials"] >= 30, timeout=120)
            self.assertEqual(mid["status"], "running", "the job ended before the crash: %s" % mid)
            k.kill9()

            k.start()  # same data dir: the embedded PostgreSQL left running is reused
            status, _, seen = k.get("/v1/jobs/%d" % jid)
            self.assertGreaterEqual(seen["progress"]["trials"], 30)
            self.assertLess(seen["progress"]["trials"], 100, "nothing was left to resume")
            final = k.wait_job(jid, timeout=300)
            self.assertEqual((final["status"], final["stop_reason"]), ("succeeded", "budget_evaluations"), final)
            trials = k.all_trials(jid)
            self.assertEqual(len(trials), 100)
            self.assertEqual(len({t["config_id"] for t in trials}), 100, "a configuration was measured twice")
            self.assertEqual(sorted(t["seq"] for t in trials), list(range(1, 101)))
            self.assertTrue(all(t["status"] not in ("pending", "running") for t in trials))

            # The same request on an uninterrupted run proposes the very same configurations.
            status, _, twin = k.post("/v1/tune", JOB)
            twin = k.wait_job(twin["id"], timeout=300)
            self.assertEqual(twin["status"], "succeeded")
            twin_trials = k.all_trials(twin["id"])
            self.assertEqual({(t["seq"], t["config_id"]) for t in trials},
                             {(t["seq"], t["config_id"]) for t in twin_trials})
            self.assertAlmostEqual(final["best"]["time_ms"], twin["best"]["time_ms"])

            status, _, best = k.get(best_query("convolution", "replay:convolution_milo-A4000"))
            self.assertEqual(status, 200, best)
            self.assertAlmostEqual(best["time_ms"], final["best"]["time_ms"])
            self.assertEqual(k.stop(), 0)
        except Exception:
            print(k.log_tail(), file=sys.stderr)
            raise
        finally:
            k.cleanup()


if __name__ == "__main__":
    run_tests()
