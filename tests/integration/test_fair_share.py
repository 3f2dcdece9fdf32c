"""Integration: fair shares of the job slots between callers (issue 26, break 4).

Before, the runner claimed queued jobs oldest first and kept each until it ended: a caller that
queued more huge jobs than --max-jobs (eight `tune_on_miss=1000000` lookups, or eight POSTs) took
every slot for hours, and another caller's 2-evaluation job stayed `queued` the whole time. Now a
claim takes the caller with the fewest running jobs first (oldest first within a caller), and a
runner whose slots are all taken hands one job back when a caller holds at least two more of them
than a waiting one (store/job_store.h: job_store_claim, job_store_yield), across every process of
the database.

- one ktuned, --max-jobs 4: caller A (a token) queues 6 jobs of ~4,200 replay trials each
  (--replay-speed: ~0.1 s per trial, minutes per job), all 4 slots run A's; caller B (another
  token) queues a 2-evaluation job: it must finish within WAIT_S; then A holds the 4 slots again
  (the job handed back resumes, nothing is left idle).
- two ktuned (the second --role worker on the first's database), --max-jobs 2 each: the same across
  processes.
"""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
ADMIN = "ktk_fairshare_admin_token_0123456789abcdef"
DEVICE = "replay:convolution_milo-A4000"
# Replay sleeps 3% of the recorded ~3.5 s per trial; seconds in the budget make the batch "parallel"
# (2, one per measurement thread), so B's trials wait behind at most one small batch of each A job.
SLOW = ["--workers", "2", "--replay-speed", "0.03"]
HUGE = {"kernel": "convolution", "device": DEVICE, "strategy": "random",
        "budget": {"evaluations": 1000000, "seconds": 500000}}
SMALL = {"kernel": "convolution", "device": DEVICE, "strategy": "random", "budget": {"evaluations": 2}}
A_JOBS = 6
WAIT_S = 20.0  # B's job takes ~1-3 s with fair shares; before them it waited for an A job to end


def bearer(token):
    return {"Authorization": "Bearer " + token}


class FairShareBase(unittest.TestCase):
    def make_tokens(self, k):
        ids = {}
        for name in ("a", "b"):
            status, _, t = k.post("/v1/tokens", {"name": "caller " + name, "scope": "tune"}, headers=bearer(ADMIN))
            self.assertEqual(status, 201, t)
            ids[name] = (t["token"], "token:%d" % t["id"])
        return ids

    def driven(self, k, submitter=None):
        """Jobs a runner drives now (running with a runner), of submitter or of everybody."""
        cond = "" if submitter is None else " AND submitter = '%s'" % submitter
        return int(k.psql("SELECT count(*) FROM jobs WHERE status = 'running' AND runner IS NOT NULL" + cond))

    def wait_for(self, what, predicate, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        self.fail("%s: not within %.0f s" % (what, timeout))

    def check_fair(self, k, slots, label, procs):
        tokens = self.make_tokens(k)
        a_token, a_who = tokens["a"]
        b_token, b_who = tokens["b"]
        a_ids = []
        for seed in range(A_JOBS):
            status, _, job = k.post("/v1/tune", dict(HUGE, seed=100 + seed), headers=bearer(a_token))
            self.assertEqual(status, 202, job)
            a_ids.append(job["id"])
        self.wait_for("caller A's jobs take all %d slots" % slots, lambda: self.driven(k, a_who) == slots, 30)
        t0 = time.time()
        status, _, small = k.post("/v1/tune", dict(SMALL, seed=7), headers=bearer(b_token))
        self.assertEqual(status, 202, small)
        job = None
        while time.time() - t0 < WAIT_S:
            status, _, job = k.get("/v1/jobs/%d" % small["id"], headers=bearer(b_token))
            self.assertEqual(status, 200, job)
            if job["status"] in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(0.1)
        took = time.time() - t0
        a_now = self.driven(k, a_who)
        if job["status"] != "succeeded":
            print("fairness (%s): caller B's 2-evaluation job still %s after %.1f s with caller A's %d huge"
                  " jobs running" % (label, job["status"], took, a_now), file=sys.stderr)
        self.assertEqual(job["status"], "succeeded",
                         "caller B's 2-evaluation job is still %s after %.1f s: caller A's %d jobs hold the"
                         " slots (%s)" % (job["status"], took, a_now, label))
        self.assertEqual(job["progress"]["trials"], 2, job)
        print("fairness (%s): caller B's 2-evaluation job done in %.1f s beside caller A's %d huge jobs"
              % (label, took, A_JOBS), file=sys.stderr)
        # Work-conserving: with B done, A's jobs take every slot again (the one handed back or an
        # older one of A's), and A's oldest jobs are the ones driven.
        self.wait_for("caller A holds all %d slots again" % slots, lambda: self.driven(k, a_who) == slots, 10)
        oldest = ",".join(str(i) for i in a_ids[:slots])
        self.assertEqual(int(k.psql("SELECT count(*) FROM jobs WHERE id IN (%s) AND runner IS NOT NULL"
                                    " AND status = 'running'" % oldest)), slots,
                         "caller A's oldest jobs are not the ones driven")
        logs = b""
        for proc in procs:
            with open(proc.log_path, "rb") as f:
                logs += f.read()
        self.assertIn(b"handed back (fair share", logs)


class OneProcessTest(FairShareBase):
    def test_small_job_of_another_caller_is_not_starved(self):
        k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=SLOW + ["--api-token", ADMIN, "--max-jobs", "4"])
        try:
            k.start()
            self.check_fair(k, 4, "one ktuned, --max-jobs 4", [k])
        except Exception:
            print(k.log_tail(), file=sys.stderr)
            raise
        finally:
            k.cleanup()


class TwoProcessTest(FairShareBase):
    def test_fair_across_processes_sharing_the_database(self):
        k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=SLOW + ["--api-token", ADMIN, "--max-jobs", "2"])
        w = None
        try:
            k.start()
            w = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=SLOW + ["--role", "worker", "--max-jobs", "2", "--database-url", k.pg_conninfo()])
            w.start()
            # A process drives at most 2: A's 4 running jobs are driven by both.
            self.check_fair(k, 4, "two ktuned, --max-jobs 2 each", [k, w])
        except Exception:
            print(k.log_tail(), file=sys.stderr)
            if w:
                print(w.log_tail(), file=sys.stderr)
            raise
        finally:
            if w:
                w.cleanup()
            k.cleanup()


if __name__ == "__main__":
    run_tests()
