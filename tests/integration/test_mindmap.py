"""Integration: Mind Mappings through the API (issue 13) against a real ktuned and its PostgreSQL.

- POST /v1/tune with strategy mindmap and no trained surrogate of the key: 409 no_model, the hint the
  POST /v1/models request that trains one;
- POST /v1/models kind surrogate: refused (400) on a device that is not accel, with a bad or unknown
  hyper-parameter, with another algorithm than mlp; with a small hyper it is queued, trained by the
  trainer thread to 'ready' with its metrics and training summary, and listed in GET /v1/models;
- a mindmap job on cnn_layer (ResNet Conv_3) with a budget of 100 succeeds: 100 trials, every one a
  valid mapping (the oracle keeps invalid ones from being proposed), the best EDP over its minimum
  >= 1 and no worse than the best of the first 10 trials; the job records the surrogate it used;
- `ktune train --kind surrogate --wait` trains a newer one and prints it;
- the job resumed by replay (set running again with a larger budget) after a newer surrogate of the
  key is ready still replays through the recorded one and goes on; pointed at the newer one, the same
  resume diverges (the control);
- a mindmap job on another accel device class (accel:mindmap-small) is refused: no model of that
  class.
"""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

try:
    import jsonschema
except ImportError:  # test_openapi requires it; here the schema check is a bonus
    jsonschema = None

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
KTUNE = os.path.join(os.path.dirname(os.path.abspath(ARGS.ktuned)), "ktune")
DEVICES_FILE = os.path.join(SOURCE, "accel", "devices.json")
DEVICE, SMALL = "accel:mindmap", "accel:mindmap-small"
KERNEL = "cnn_layer"
PRESET = "resnet_conv3"
SMALL_HYPER = {"samples": 3000, "problems": 30, "epochs": 8, "hidden": [64, 64], "seed": 3,
               "max_seconds": 120}
TINY_HYPER = {"samples": 600, "problems": 6, "epochs": 2, "hidden": [16], "seed": 4,
              "max_seconds": 60}
BUDGET = 100
with open(os.path.join(SOURCE, "service", "api", "openapi.json")) as f:
    DOC = json.load(f)


def schema_errors(name, instance):
    """Errors of instance against components.schemas[name] of the OpenAPI document (refs resolved in
    the document, as test_openapi.py does)."""
    if jsonschema is None:
        return []
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", "components": DOC["components"],
            "allOf": [{"$ref": "#/components/schemas/" + name}]}
    return [e.message for e in jsonschema.Draft202012Validator(root).iter_errors(instance)]


class MindmapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(DEVICES_FILE):
            raise unittest.SkipTest("accel/devices.json does not exist")
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--workers", "1", "--accel-devices", DEVICES_FILE])
        try:
            cls.k.start()
            status, _, devices = cls.k.get("/v1/devices")
            assert status == 200, devices
            names = {d["name"]: d for d in devices["devices"]}
            assert DEVICE in names and SMALL in names, sorted(names)
            cls.device_class = names[DEVICE]["class"]
        except Exception:
            print(cls.k.log_tail(), file=sys.stderr)
            cls.k.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop() if cls.k.proc else 0
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def tune(self, device=DEVICE, budget=BUDGET, seed=5):
        return self.k.post("/v1/tune", {"kernel": KERNEL, "device": device,
                                        "problem": {"preset": PRESET}, "strategy": "mindmap",
                                        "budget": {"evaluations": budget}, "seed": seed,
                                        "history": "none"})

    def train(self, hyper, device=DEVICE):
        status, _, model = self.k.post("/v1/models", {"kind": "surrogate", "kernel": KERNEL,
                                                      "device": device, "hyper": hyper})
        self.assertEqual(status, 202, model)
        self.assertEqual((model["kind"], model["algorithm"], model["status"]),
                         ("surrogate", "mlp", "training"), model)
        return model["id"]

    def wait_model(self, model_id, timeout=120):
        deadline = time.time() + timeout
        m = None
        while time.time() < deadline:
            status, _, m = self.k.get("/v1/models/%d" % model_id)
            self.assertEqual(status, 200, m)
            if m["status"] in ("ready", "failed"):
                return m
            time.sleep(0.2)
        raise AssertionError("model %d not trained in %s s: %s\n%s" % (model_id, timeout, m,
                                                                       self.k.log_tail()))

    def assert_no_model(self, status, body, device):
        self.assertEqual(status, 409, body)
        e = body["error"]
        self.assertEqual(e["code"], "no_model", e)
        self.assertIn("mindmap", e["message"])
        self.assertIn(KERNEL, e["message"])
        self.assertIn(device, e["message"])
        self.assertIn('POST /v1/models {"kind": "surrogate", "kernel": "%s", "device": "%s"}'
                      % (KERNEL, device), e["hint"])

    def test_1_mindmap_without_a_surrogate_is_409_no_model(self):
        status, _, body = self.tune()
        self.assert_no_model(status, body, DEVICE)
        self.assertEqual(schema_errors("Error", body), [])
        status, _, jobs = self.k.get("/v1/jobs")
        self.assertEqual(jobs["jobs"], [], "a refused job is not queued")

    def test_2_bad_surrogate_requests_are_400(self):
        cases = [
            ({"device": "cpu"}, "bad_request", "cost model"),
            ({"hyper": {"samples": 10}}, "out_of_range", "samples"),
            ({"hyper": {"hidden": [64, 0]}}, "out_of_range", "hidden[1]"),
            ({"hyper": {"epochs": "many"}}, "wrong_type", "epochs"),
            ({"hyper": {"top": 8}}, "bad_option", "top"),
            ({"algorithm": "xgb"}, "out_of_range", "xgb"),
            ({"kind": "oracle"}, "out_of_range", "oracle"),
        ]
        for extra, code, word in cases:
            body = {"kind": "surrogate", "kernel": KERNEL, "device": DEVICE}
            body.update(extra)
            status, _, reply = self.k.post("/v1/models", body)
            self.assertEqual(status, 400, (extra, reply))
            self.assertEqual(reply["error"]["code"], code, (extra, reply))
            self.assertIn(word, reply["error"]["message"], (extra, reply))
            self.assertTrue(reply["error"].get("hint"), (extra, reply))
        status, _, reply = self.k.post("/v1/models", {"kind": "surrogate", "kernel": KERNEL,
                                                      "device": "cpu"})
        self.assertIn("only accel devices have one", reply["error"]["hint"])
        status, _, models = self.k.get("/v1/models")
        self.assertEqual([m for m in models["models"] if m["kind"] == "surrogate"], [])

    def test_3_surrogate_trains_then_a_mindmap_job_succeeds(self):
        t0 = time.time()
        mid = self.train(SMALL_HYPER)
        m = self.wait_model(mid)
        trained_s = time.time() - t0
        self.assertEqual(m["status"], "ready", m)
        self.assertLess(trained_s, 90, m)
        self.assertEqual((m["kind"], m["algorithm"], m["device_class"]),
                         ("surrogate", "mlp", self.device_class))
        self.assertGreater(m["size_bytes"], 0)
        t = m["training"]
        self.assertGreaterEqual(t["problems"], 2, t)
        self.assertLessEqual(t["problems"], SMALL_HYPER["problems"], t)
        self.assertGreaterEqual(t["samples"], 100, t)
        self.assertLessEqual(t["samples"], SMALL_HYPER["samples"], t)
        self.assertGreater(t["valid_fraction"], 0, t)
        self.assertLessEqual(t["valid_fraction"], 1, t)
        self.assertLessEqual(t["seconds"], SMALL_HYPER["max_seconds"] + 5, t)
        metrics = m["metrics"]
        for key in ("test_objective_spearman", "test_objective_rmse", "train_huber", "test_huber"):
            self.assertIn(key, metrics)
        self.assertEqual(schema_errors("Model", m), [])
        self.assertEqual(m["hyper"]["samples"], SMALL_HYPER["samples"])
        self.assertEqual(m["hyper"]["hidden"], SMALL_HYPER["hidden"])
        status, _, models = self.k.get("/v1/models")
        listed = [x for x in models["models"] if x["id"] == mid]
        self.assertEqual(len(listed), 1, models)
        self.assertEqual((listed[0]["kind"], listed[0]["status"]), ("surrogate", "ready"))
        self.assertEqual(listed[0]["metrics"], metrics)
        print("\nsurrogate: %d problems, %d samples (valid fraction %.3f), trained in %.1f s;"
              " held-out spearman %.3f, rmse %.3f" % (
                  t["problems"], t["samples"], t["valid_fraction"], trained_s,
                  metrics["test_objective_spearman"], metrics["test_objective_rmse"]), file=sys.stderr)

        status, _, job = self.tune()
        self.assertEqual(status, 202, job)
        job = self.k.wait_job(job["id"], timeout=180)
        self.assertEqual((job["status"], job["stop_reason"]), ("succeeded", "budget_evaluations"),
                         job)
        trials = sorted(self.k.all_trials(job["id"]), key=lambda x: x["seq"])
        self.assertEqual([x["seq"] for x in trials], list(range(1, BUDGET + 1)))
        self.assertEqual(len({x["config_id"] for x in trials}), BUDGET, "no mapping twice")
        bad = [x for x in trials if x["status"] != "ok"]
        self.assertEqual(bad, [], "the oracle keeps invalid mappings out")
        best = job["best"]["time_ms"]
        self.assertGreaterEqual(best, 1.0)
        self.assertLessEqual(best, min(x["time_ms"] for x in trials[:10]))
        self.assertEqual(best, min(x["time_ms"] for x in trials))
        recorded = self.k.psql("SELECT surrogate_model_id FROM jobs WHERE id = %d" % job["id"])
        self.assertEqual(int(recorded), mid)
        print("mindmap on %s: best EDP/min %.3f after %d trials (first 10: %.3f)" % (
            PRESET, best, BUDGET, min(x["time_ms"] for x in trials[:10])), file=sys.stderr)
        self.__class__.job_id, self.__class__.model_id = job["id"], mid

    def test_4_resume_replays_through_the_recorded_surrogate(self):
        job_id, mid = getattr(self, "job_id", None), getattr(self, "model_id", None)
        if job_id is None:
            self.skipTest("needs the job and model of test_3_surrogate_trains_then_a_mindmap_job_succeeds,"
                          " which did not pass")
        before = sorted(self.k.all_trials(job_id), key=lambda x: x["seq"])
        # A newer surrogate of the key supersedes the job's one (trained through the CLI).
        env = dict(os.environ, KTUNE_SERVER="http://" + self.k.address)
        env.pop("KTUNE_TOKEN", None)
        p = subprocess.run([KTUNE, "train", "--kernel", KERNEL, "--device", DEVICE, "--kind",
                            "surrogate", "--hyper", json.dumps(TINY_HYPER), "--wait"],
                           env=env, capture_output=True, text=True, timeout=180)
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertIn("algorithm          surrogate mlp", p.stdout)
        self.assertIn("sampled problems", p.stdout)
        self.assertIn("held-out spearman", p.stdout)
        newer = self.wait_model(int(p.stdout.split()[1]))
        self.assertEqual(newer["status"], "ready", newer)
        status, _, old = self.k.get("/v1/models/%d" % mid)
        self.assertEqual(old["status"], "superseded", old)
        # The job as a crash leaves it (running, no runner), with room for 20 more evaluations: the
        # runner claims it and replays its 100 trials through a fresh searcher, which must propose
        # them again (else resume_diverged), then searches on.
        self.k.psql("UPDATE jobs SET status = 'running', runner = NULL, runner_heartbeat = NULL,"
                    " stop_reason = NULL, finished_at = NULL, budget_evaluations = %d"
                    " WHERE id = %d" % (BUDGET + 20, job_id))
        job = self.k.wait_job(job_id, until=("succeeded", "failed"), timeout=180)
        self.assertEqual((job["status"], job["stop_reason"]), ("succeeded", "budget_evaluations"),
                         (job, self.k.log_tail()))
        after = sorted(self.k.all_trials(job_id), key=lambda x: x["seq"])
        self.assertEqual([x["seq"] for x in after], list(range(1, BUDGET + 21)))
        self.assertEqual([x["id"] for x in after[:BUDGET]], [x["id"] for x in before])
        self.assertEqual(len({x["config_id"] for x in after}), BUDGET + 20)
        self.assertEqual(self.k.psql("SELECT surrogate_model_id FROM jobs WHERE id = %d" % job_id),
                         str(mid))
        # The control: the same resume through the newer surrogate proposes other mappings, so the
        # replay above passed because the recorded model was used, not by chance.
        self.k.psql("UPDATE jobs SET status = 'running', runner = NULL, runner_heartbeat = NULL,"
                    " stop_reason = NULL, finished_at = NULL, budget_evaluations = %d,"
                    " surrogate_model_id = %d WHERE id = %d" % (BUDGET + 30, newer["id"], job_id))
        job = self.k.wait_job(job_id, until=("succeeded", "failed"), timeout=180)
        self.assertEqual((job["status"], job["stop_reason"]), ("failed", "resume_diverged"), job)

    def test_5_another_device_class_has_no_surrogate(self):
        status, _, body = self.tune(device=SMALL)
        self.assert_no_model(status, body, SMALL)


if __name__ == "__main__":
    run_tests()
