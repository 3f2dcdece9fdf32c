"""Integration: kill -9 of ktuned in the middle of a job, then a restart: the job resumes by replaying its
stored trials and ends with exactly its budget of distinct configurations, the same ones an
uninterrupted job with the same seed measures.

Poison jobs (issue 26): a job whose process dies while driving it, before it completes a trial, is
resumed at most 3 times (--job-max-start-attempts, sql/015's jobs.start_attempts; a completed trial
starts the count again); the start after the third such death fails it with stop_reason "attempts" and
the reason instead of resuming it. The worker's death is simulated by kill -9 of ktuned while a trial
of the job is measured (what the kernel's OOM killer did to the issue's job), once after the job
completed a trial (that start counts again from 1) and three times without. A clean stop gives its
attempt back (test_store_fleet)."""
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


class PoisonJobTest(unittest.TestCase):
    def test_job_failed_after_three_deaths(self):
        # Replay sleeps 2x the recorded time (at least 1.7 s a trial here): a kill right after a trial
        # is claimed comes before it completes.
        k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--workers", "2", "--replay-speed", "2"])
        job = dict(JOB, budget={"evaluations": 1000}, history="none")
        lives = []
        try:
            k.start()
            status, _, j = k.post("/v1/tune", job)
            self.assertEqual(status, 202, j)
            jid = j["id"]

            def claimed(timeout=20):
                """Waits until this ktuned drives the job and measures a trial of it; its progress."""
                pid, deadline = k.proc.pid, time.time() + timeout
                while time.time() < deadline:
                    row = k.psql("SELECT j.status, j.runner LIKE '%%:%d:%%', j.trials_done, (SELECT"
                                 " count(*) FROM trials t WHERE t.job_id = j.id AND t.status = 'running'"
                                 " AND t.worker LIKE '%%:%d:%%') FROM jobs j WHERE j.id = %d" % (pid, pid, jid))
                    st, mine, done, running = row.split("|")
                    if st not in ("queued", "running") or (mine == "t" and int(running) > 0):
                        return st, int(done)
                    time.sleep(0.05)
                raise AssertionError("ktuned %d never took job %d: %s" % (pid, jid, row))

            def stored_trials():
                """The job's completed trials, from the database (the embedded PostgreSQL outlives
                a kill -9 of ktuned)."""
                return int(k.psql("SELECT trials_done FROM jobs WHERE id = %d" % jid))

            # 1: dies before completing a trial (start attempt 1).
            st, done = claimed()
            self.assertEqual(st, "running")
            k.kill9()
            lives.append("killed at %d trials" % done)
            # 2: completes a trial (the count starts again at this start), then dies.
            k.start()
            st, done = claimed()
            self.assertEqual(st, "running", "not resumed after the first death")
            k.wait_job(jid, predicate=lambda x: x["progress"]["trials"] > done, timeout=30)
            k.kill9()
            # Read after the kill: the other measuring thread may complete a trial in between.
            done = stored_trials()
            lives.append("resumed, killed at %d trials" % done)
            # 3, 4: resumed twice more, dying before completing a trial each time.
            for life in (3, 4):
                k.start()
                st, now = claimed()
                if st != "running":
                    lives.append("then %s" % st)
                    break
                k.kill9()
                lives.append("resumed, killed at %d trials" % stored_trials())
            # 5: three deaths since its last completed trial: failed, not resumed.
            if k.proc is None:
                k.start()
            t0 = time.time()
            st, now = claimed(timeout=10)
            status, _, final = k.get("/v1/jobs/%d" % jid)
            lives.append("%s (%s) %.2f s after the start" % (final["status"], final["stop_reason"] or
                                                             "resumed again", time.time() - t0))
            print("poison job: %s; %s" % ("; ".join(lives), (final["error"] or {}).get("message")))
            self.assertEqual((final["status"], final["stop_reason"]), ("failed", "attempts"), final)
            self.assertEqual(final["error"]["code"], "internal", final)
            self.assertIn("started 3 times since it last completed a trial", final["error"]["message"])
            self.assertTrue(final["error"]["hint"], final)
            self.assertEqual(final["progress"]["trials"], done, "it measured again")
            self.assertEqual(k.psql("SELECT count(*) FROM trials WHERE job_id = %d AND status IN"
                                    " ('pending', 'running')" % jid), "0")
            # The service itself is healthy: the next job runs.
            status, _, other = k.post("/v1/tune", dict(JOB, budget={"evaluations": 2}, seed=5))
            self.assertEqual(k.wait_job(other["id"], timeout=60)["status"], "succeeded")
            self.assertEqual(k.stop(), 0)
        except Exception:
            print(k.log_tail(), file=sys.stderr)
            raise
        finally:
            k.cleanup()

if __name__ == "__main__":
    run_tests()
