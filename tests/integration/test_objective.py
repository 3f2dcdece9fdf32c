"""Integration: objective by metric (issue 27, section 2). A job may optimise a user metric instead of
the time ("objective": {"metric", "goal"} of POST /v1/tune).

- Ask/tell: the test is the harness and tells each configuration a time whose optimum is one
  configuration and a metric whose optimum is another. An exhaustive job maximising the metric ends
  with the metric's best configuration, not the fastest; an ok trial told without the metric is
  stored ok but is never the best (even as the fastest of all); a job of `auto` (a learning
  strategy, told 1/value) minimising another metric ends with that metric's best. GET /v1/jobs/{id}
  shows the objective and the best's value. Neither job writes the best table: GET /v1/best has no
  answer for the key until a job of the time runs, and then answers the fastest configuration.
- cpu: tests/kernels/saxpy_f64 declares gflops and gbps; a job maximising gflops ends with the ok
  trial of the highest gflops (computed by the backend from the time), re-measures nothing (no final
  pick with a metric objective) and leaves /v1/best empty.
- The Python client's tune_external(objective=...) runs such a job from a harness loop.
- Refusals name the field: a metric the kernel does not declare (the hint lists those it does), a
  metric on a replay device, a malformed objective; a final pick with a metric objective is 501."""
import math
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
SAXPY = os.path.join(SOURCE, "tests", "kernels", "saxpy_f64")
sys.path.insert(0, os.path.join(SOURCE, "clients", "python"))
import ktune  # noqa: E402

SPACE = {"parameters": [{"name": "BS", "values": [32, 64, 128, 256]},
                        {"name": "T", "values": [1, 2, 4, 8]}],
         "restrictions": ["BS * T <= 512"]}
CLASS = "objective-class"
PROBLEM = {"n": 1024}
VALID = [{"BS": b, "T": t} for b in (32, 64, 128, 256) for t in (1, 2, 4, 8) if b * t <= 512]
NO_METRICS = {"BS": 64, "T": 1}  # told ok without metrics, and the fastest of all


def fake_time(c):
    """Fastest at BS=128, T=2 (but NO_METRICS is faster still)."""
    if c == NO_METRICS:
        return 0.01
    return 1.0 + abs(math.log2(c["BS"]) - 7) + abs(math.log2(c["T"]) - 1)


def score(c):
    """Highest at BS=32, T=8: not the fastest."""
    return 100.0 - 10 * abs(math.log2(c["BS"]) - 5) - 10 * abs(math.log2(c["T"]) - 3)


def energy(c):
    """Lowest at BS=256, T=1."""
    return 1.0 + abs(math.log2(c["BS"]) - 8) + abs(math.log2(c["T"]))


def argbest(f, pick):
    return pick((c for c in VALID if c != NO_METRICS), key=f)


class ObjectiveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kernels = tempfile.mkdtemp(prefix="ktune-objective-")
        os.chmod(cls.kernels, 0o755)  # the runner's user reads the sources
        shutil.copytree(SAXPY, os.path.join(cls.kernels, "saxpy_f64"))
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--kernels", cls.kernels, "--workers", "1", "--min-seconds", "0.02"])
        cls.k.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop() if cls.k.proc else 0
        cls.k.cleanup()
        shutil.rmtree(cls.kernels, ignore_errors=True)
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def external(self, kernel, strategy="exhaustive", objective=None, **extra):
        body = {"kernel": kernel, "device": "external", "device_class": CLASS, "space": SPACE,
                "problem": PROBLEM, "strategy": strategy, "budget": {"evaluations": len(VALID)},
                "seed": 7, "history": "none", "parallel": 4}
        if objective:
            body["objective"] = objective
        body.update(extra)
        return self.k.post("/v1/tune", body)

    def harness(self, jid):
        """Measures every configuration the job proposes until it ends; returns the view."""
        for _ in range(100):
            status, _, a = self.k.post("/v1/jobs/%d/ask" % jid, {"n": 4, "wait_s": 5})
            self.assertEqual(status, 200, a)
            if a["done"]:
                return self.k.wait_job(jid)
            told = []
            for t in a["trials"]:
                c = t["config"]
                item = {"id": t["id"], "status": "ok", "time_ms": fake_time(c)}
                if c != NO_METRICS:
                    item["metrics"] = {"score": score(c), "energy": energy(c)}
                told.append(item)
            status, _, r = self.k.post("/v1/jobs/%d/tell" % jid, {"trials": told})
            self.assertEqual(status, 200, r)
        self.fail("job %d did not end" % jid)

    def test_a_external_metric_optimum_is_not_the_fastest(self):
        status, _, job = self.external("obj_ext", objective={"metric": "score", "goal": "max"})
        self.assertEqual(status, 202, job)
        self.assertEqual(job["objective"], {"metric": "score", "goal": "max"})
        self.assertIsNone(job["final_pick"])
        view = self.harness(job["id"])
        self.assertEqual((view["status"], view["progress"]["trials"]), ("succeeded", len(VALID)),
                         view)
        want = argbest(score, max)
        self.assertNotEqual(want, argbest(fake_time, min))
        self.assertEqual(view["best"]["config"], want, view)
        self.assertEqual(view["best"]["value"], score(want), view)
        self.assertEqual(view["best"]["time_ms"], fake_time(want), view)
        # The trial without the metric is stored as told (ok, the fastest), and is not the best.
        trials = self.k.all_trials(job["id"])
        bare = [t for t in trials if t["config"] == NO_METRICS]
        self.assertEqual([(t["status"], t["time_ms"]) for t in bare], [("ok", 0.01)], bare)
        self.assertNotEqual(view["best"]["trial_id"], bare[0]["id"])

        # A learning strategy (auto: a model of the log of the cost) minimising another metric.
        status, _, job = self.external("obj_ext", strategy="auto",
                                       objective={"metric": "energy", "goal": "min"})
        self.assertEqual(status, 202, job)
        view = self.harness(job["id"])
        self.assertEqual(view["status"], "succeeded", view)
        self.assertEqual(view["objective"], {"metric": "energy", "goal": "min"})
        self.assertEqual(view["best"]["config"], argbest(energy, min), view)
        self.assertEqual(view["best"]["value"], energy(argbest(energy, min)), view)

        # Metric jobs leave the best table alone: /v1/best answers the time, and knows nothing yet.
        q = best_query("obj_ext", "external", device_class=CLASS, **PROBLEM)
        status, _, miss = self.k.get(q)
        self.assertEqual((status, miss["error"]["code"]), (404, "no_best"), miss)
        # A job of the time: its view says so, and /v1/best answers the fastest configuration.
        status, _, job = self.external("obj_ext")
        self.assertEqual(status, 202, job)
        self.assertEqual(job["objective"], {"metric": "time_ms", "goal": "min"})
        view = self.harness(job["id"])
        self.assertEqual(view["best"]["config"], NO_METRICS, view)
        self.assertEqual(view["best"]["value"], view["best"]["time_ms"], view)
        status, _, best = self.k.get(q)
        self.assertEqual(status, 200, best)
        self.assertEqual((best["config"], best["time_ms"]), (NO_METRICS, 0.01), best)

    def test_b_external_job_without_the_metric_fails_saying_so(self):
        status, _, job = self.external("obj_typo", objective={"metric": "scroe", "goal": "max"},
                                       budget={"evaluations": 4})
        self.assertEqual(status, 202, job)
        view = self.harness(job["id"])
        self.assertEqual((view["status"], view["stop_reason"]), ("failed", "no_ok_trial"), view)
        self.assertIn("no trial reported metric 'scroe'", view["error"]["message"], view)
        self.assertIsNone(view["best"], view)

    def test_c_cpu_kernel_metric(self):
        body = {"kernel": "saxpy_f64", "device": "cpu", "problem": {"n": 1000, "a": 0.75},
                "strategy": "exhaustive", "budget": {"evaluations": 8},
                "objective": {"metric": "gflops", "goal": "max"}}
        status, _, job = self.k.post("/v1/tune", body)
        self.assertEqual(status, 202, job)
        self.assertIsNone(job["final_pick"])  # no final pick with a metric objective
        view = self.k.wait_job(job["id"], timeout=240)
        self.assertEqual(view["status"], "succeeded", view)
        ok = [t for t in self.k.all_trials(job["id"]) if t["status"] == "ok"]
        self.assertTrue(ok)
        self.assertTrue(all(t["final_round"] is None for t in ok))
        top = max(ok, key=lambda t: t["extras"]["metrics"]["gflops"])
        self.assertEqual(view["best"]["trial_id"], top["id"], view)
        self.assertEqual(view["best"]["value"], top["extras"]["metrics"]["gflops"], view)
        status, _, miss = self.k.get(best_query("saxpy_f64", "cpu", n=1000, a=0.75))
        self.assertEqual((status, miss["error"]["code"]), (404, "no_best"), miss)

    def test_d_refusals_name_the_field(self):
        base = {"kernel": "saxpy_f64", "device": "cpu", "problem": {"n": 1000, "a": 0.75}}
        status, _, r = self.k.post("/v1/tune", dict(base, objective={"metric": "flops", "goal": "max"}))
        self.assertEqual((status, r["error"]["code"]), (400, "out_of_range"), r)
        self.assertEqual(r["error"]["message"],
                         "objective.metric: kernel saxpy_f64 declares no metric 'flops'")
        self.assertIn("gflops, gbps", r["error"]["hint"])
        status, _, r = self.k.post("/v1/tune", dict(base, objective={"metric": "gflops", "goal": "up"}))
        self.assertEqual((status, r["error"]["code"]), (400, "out_of_range"), r)
        self.assertTrue(r["error"]["message"].startswith("objective.goal"), r)
        status, _, r = self.k.post("/v1/tune", dict(base, objective={"metric": "gflops", "goal": "max"},
                                                    final_remeasure=2))
        self.assertEqual((status, r["error"]["code"]), (501, "not_implemented"), r)
        self.assertIn("final_remeasure", r["error"]["message"])
        status, _, r = self.k.post("/v1/tune", {"kernel": "pnpoly", "device": "replay:pnpoly_kt-RTX_3090",
                                                "objective": {"metric": "gflops", "goal": "max"}})
        self.assertEqual((status, r["error"]["code"]), (400, "out_of_range"), r)
        self.assertTrue(r["error"]["message"].startswith("objective.metric: device replay:"), r)
        status, _, r = self.external("obj_ext", objective={"metric": "score"}, final_remeasure=1)
        self.assertEqual((status, r["error"]["code"]), (501, "not_implemented"), r)
        # Nothing was queued by a refusal.
        _, _, jobs = self.k.get("/v1/jobs?status=queued")
        self.assertEqual([j for j in jobs["jobs"] if j["kernel"] == "pnpoly"], [])

    def test_e_python_client_objective(self):
        client = ktune.Client("http://" + self.k.address, timeout=30)
        run = client.tune_external("obj_client", SPACE, problem=PROBLEM, device_class=CLASS,
                                   strategy="exhaustive", budget=len(VALID), n=4, seed=1,
                                   objective={"metric": "score", "goal": "max"})
        for trial in run:
            trial.tell(fake_time(trial.config), metrics={"score": score(trial.config)})
        self.assertEqual(run.job()["objective"], {"metric": "score", "goal": "max"})
        want = max(VALID, key=score)
        self.assertEqual((run.best["config"], run.best["value"]), (want, score(want)), run.best)


if __name__ == "__main__":
    run_tests()
