"""Integration: a job's target is stored with it and reopened, never re-resolved blindly. A replay
dataset whose definition changes while ktuned is down (its kernel hash changes) ends the job it was
tuning as failed, kernel_changed, on restart; lookups keyed by the old hash miss; a new job on the
changed dataset runs."""
import gzip
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
DEVICE = "replay:pnpoly_kt-RTX_3090"
JOB = {"kernel": "pnpoly", "device": DEVICE, "strategy": "random", "budget": {"evaluations": 200},
       "seed": 7}


class TargetChangedTest(unittest.TestCase):
    def test_changed_dataset_fails_the_stored_job(self):
        datasets = tempfile.mkdtemp(prefix="ktune-datasets-")
        os.chmod(datasets, 0o755)
        path = os.path.join(datasets, "pnpoly_kt-RTX_3090.json")
        with gzip.open(os.path.join(ARGS.source_dir, "datasets", "pnpoly_kt-RTX_3090.json.gz")) as f:
            doc = json.load(f)
        with open(path, "w") as f:
            json.dump(doc, f)
        # The fixture's own --datasets comes first; the last flag wins.
        k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                   extra=["--datasets", datasets, "--workers", "1", "--replay-speed", "0.01"])
        try:
            k.start()
            status, _, job = k.post("/v1/tune", JOB)
            self.assertEqual(status, 202, job)
            jid = job["id"]
            old_hash = job["kernel_hash"]
            mid = k.wait_job(jid, predicate=lambda j: j["progress"]["trials"] >= 5, timeout=120)
            self.assertEqual(mid["status"], "running", mid)
            k.kill9()

            # A new value of one parameter: another space, so another kernel hash.
            doc["tune_params"]["tile_size"].append(4096)
            with open(path, "w") as f:
                json.dump(doc, f)
            k.start()
            final = k.wait_job(jid, timeout=120)
            self.assertEqual((final["status"], final["stop_reason"]), ("failed", "kernel_changed"), final)
            self.assertIn("changed", final["error"]["message"])
            self.assertIn(old_hash, final["error"]["message"])
            self.assertLess(final["progress"]["trials"], 200)

            # The best of the old definition is not served for the new one.
            status, _, best = k.get(best_query("pnpoly", DEVICE))
            self.assertEqual(status, 404, best)
            # The changed dataset is tunable afresh, under its new hash.
            status, _, again = k.post("/v1/tune", dict(JOB, budget={"evaluations": 5}))
            self.assertEqual(status, 202, again)
            self.assertNotEqual(again["kernel_hash"], old_hash)
            done = k.wait_job(again["id"], timeout=120)
            self.assertEqual(done["status"], "succeeded", done)
            self.assertEqual(k.stop(), 0)
        except Exception:
            print(k.log_tail(), file=sys.stderr)
            raise
        finally:
            k.cleanup()
            shutil.rmtree(datasets, ignore_errors=True)


if __name__ == "__main__":
    run_tests()
