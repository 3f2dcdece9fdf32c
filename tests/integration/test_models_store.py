"""Integration: models as data (issue 10) against a real ktuned and its PostgreSQL. Results for the cpu
kernel gemm are imported (POST /v1/imports: valid configurations with made-up times, so nothing is
measured), models are queued with SQL (the statement POST /v1/models runs: a 'training' row with no
runner), and the trainer thread of ktuned claims and trains them:

- a queued model is claimed, trained to 'ready' with held-out metrics and its bytes;
- a kill -9 of ktuned during a training leaves the model 'training' with no bytes, and the restarted
  ktuned trains it (attempt 2) to 'ready';
- a model whose kernel hash is not the catalog's fails as kernel_changed, one of a device class this
  ktuned does not serve as target_unavailable, one with no trials as no_data;
- --model-retrain-after N queues a retrain once N ok trials of the key arrived, and the new version
  supersedes the old one;
- a clean stop during a training does not wait for it: the model is let go (the attempt not counted) and
  the next start trains it;
- with two ktuned on one database, a kill -9 of the one training a model makes the other claim it at
  once (its runner's pid is gone) and finish it;
- where GET /v1/best predicts (the models API), a restarted ktuned answers an untuned problem with the
  stored model (loaded from its bytes in the database).
"""
import itertools
import json
import math
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
KERNELS = os.path.join(ARGS.source_dir, "kernels")
RETRAIN_AFTER = 40
# Every training is held this long before it is stored (--model-train-delay-s, a testing option): a kill
# or a stop 1.5 s after the claim always lands during a training, whatever the predictor's speed.
TRAIN_DELAY_S = 4
EXTRA = ["--kernels", KERNELS, "--workers", "1", "--model-retrain-after", str(RETRAIN_AFTER),
         "--model-train-delay-s", str(TRAIN_DELAY_S)]
SEQ2SEQ = {"epochs": 60, "hidden": 16}
# Problems of gemm tuned "elsewhere": square, skinny, small and large shapes.
PROBLEMS = [{"M": m, "N": n, "K": k} for m, n, k in [
    (64, 64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024),
    (96, 1024, 512), (1024, 96, 512), (2048, 64, 256), (64, 2048, 256), (384, 384, 1536),
    (768, 256, 768), (192, 1536, 192)]]
PER_PROBLEM = 16


class ModelsStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=EXTRA)
        try:
            cls.k.start()
            status, _, devices = cls.k.get("/v1/devices")
            cpu = [d for d in devices["devices"] if d["name"] == "cpu"][0]
            cls.device_class = cpu["class"]
            cls.toolchain = cpu.get("toolchain") or ""  # the key's toolchain (sql/004), '' before it
            status, _, kernels = cls.k.get("/v1/kernels")
            gemm = [k for k in kernels["kernels"] if k["name"] == "gemm"][0]
            cls.gemm = [d for d in gemm["devices"] if d["device"] == "cpu"][0]
            conv = [k for k in kernels["kernels"] if k["name"] == "conv2d"][0]
            cls.conv_hash = [d for d in conv["devices"] if d["device"] == "cpu"][0]["hash"]
            cls.configs = valid_configs(cls.gemm, cpu["description"])
            assert len(cls.configs) > 100, len(cls.configs)
            for p in PROBLEMS:
                cls.import_problem(p, PER_PROBLEM)
        except Exception:
            print(cls.k.log_tail(), file=sys.stderr)
            cls.k.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.k.cleanup()

    @classmethod
    def import_problem(cls, problem, n):
        """Imports n configurations of problem with times that depend on both (deterministic), trusted:
        only a trusted import is training data (issue 26)."""
        trials = []
        start = (problem["M"] * 7 + problem["N"] * 3 + problem["K"]) % len(cls.configs)
        for i in range(n):
            config = cls.configs[(start + i * 97) % len(cls.configs)]
            trials.append({"config": config, "status": "ok", "time_ms": made_up_time(problem, config)})
        status, _, body = cls.k.post("/v1/imports", {"kernel": "gemm", "device": "cpu", "problem": problem,
                                                     "trials": trials, "trusted": True})
        assert status == 201, body

    def psql(self, sql):
        conninfo = self.k.pg_conninfo()
        out = subprocess.run(["psql", conninfo, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.strip()

    def queue(self, algorithm, hyper=None, kernel="gemm", device_class=None, kernel_hash=None, toolchain=None):
        """What POST /v1/models stores: a 'training' model, version 1 + the key's highest."""
        key = (kernel, device_class or self.device_class, kernel_hash or self.gemm["hash"],
               self.toolchain if toolchain is None else toolchain)
        return int(self.psql(
            "INSERT INTO models (kind, algorithm, kernel, device_class, kernel_hash, toolchain, version,"
            " status, hyper, reason) SELECT 'predictor', '%s', '%s', '%s', '%s', '%s',"
            " COALESCE(max(version), 0) + 1, 'training', '%s', 'requested' FROM models WHERE kind = 'predictor'"
            " AND kernel = '%s' AND device_class = '%s' AND kernel_hash = '%s' AND toolchain = '%s'"
            " RETURNING id" % ((algorithm,) + key + (json.dumps(hyper or {}),) + key)).splitlines()[0])

    def model(self, model_id):
        row = self.psql("SELECT row_to_json(m) FROM (SELECT id, status, version, attempts, runner, training,"
                        " metrics, error, reason, octet_length(model) AS size_bytes, format_version, hyper"
                        " FROM models WHERE id = %d) m" % model_id)
        return json.loads(row)

    def wait_model(self, model_id, until=("ready", "failed"), timeout=180, predicate=None):
        deadline = time.time() + timeout
        m = None
        while time.time() < deadline:
            m = self.model(model_id)
            if m["status"] in until or (predicate and predicate(m)):
                return m
            time.sleep(0.2)
        raise AssertionError("model %d did not reach %s in %ss: %s\n%s" % (
            model_id, until, timeout, m, self.k.log_tail()))

    def test_1_queued_model_is_trained_to_ready_with_metrics(self):
        mid = self.queue("nearest")
        m = self.wait_model(mid)
        self.assertEqual(m["status"], "ready", m)
        self.assertEqual((m["attempts"], m["runner"], m["error"]), (1, None, None))
        self.assertGreater(m["size_bytes"], 0)
        self.assertEqual(m["format_version"], 2)  # PREDICTOR_FORMAT_VERSION (model/predictor.h)
        t = m["training"]
        self.assertEqual(t["problems"], len(PROBLEMS))
        self.assertEqual(t["train_problems"] + t["test_problems"], len(PROBLEMS))
        self.assertEqual(t["test_problems"], 3)  # a quarter held out
        self.assertEqual(t["trials"], len(PROBLEMS) * 8)  # hyper top [8] of 16 each
        self.assertEqual(int(self.psql("SELECT max(id) FROM trials")), t["max_trial_id"])
        metrics = m["metrics"]
        self.assertEqual(metrics["problems"], 3)
        self.assertEqual(len(metrics["heldout"]), 3)
        for h in metrics["heldout"]:
            self.assertEqual(set(h["config"]), {p["name"] for p in self.gemm["parameters"]})
        self.assertIn("param_accuracy", metrics)
        self.assertGreaterEqual(metrics["train_seconds"], 0)
        self.assertLess(metrics["train_seconds"], TRAIN_DELAY_S)  # the predictor's own time, not the hold
        self.assertEqual(m["hyper"]["top"], 8)  # the defaults actually used are stored
        print("\nnearest: %d bytes, trained in %.3f s, held-out param_accuracy %s, top1_ratio_median %s" % (
            m["size_bytes"], metrics["train_seconds"], metrics["param_accuracy"], metrics.get("top1_ratio_median")),
            file=sys.stderr)

    def test_2_kill9_during_training_then_restart_finishes_it(self):
        probe = self.wait_model(self.queue("seq2seq", SEQ2SEQ))
        self.assertEqual(probe["status"], "ready", probe)
        mid = self.queue("seq2seq", SEQ2SEQ)
        claimed = self.wait_model(mid, predicate=lambda m: m["runner"] is not None, timeout=60)
        claimed_at = time.time()
        self.assertEqual((claimed["status"], claimed["attempts"]), ("training", 1), claimed)
        time.sleep(1.5)
        killed_after = time.time() - claimed_at
        self.k.kill9()
        m = self.model(mid)
        self.assertEqual((m["status"], m["size_bytes"], m["metrics"]), ("training", None, None), m)
        self.k.start()  # same data dir: the database left running is reused
        m = self.wait_model(mid, timeout=240)
        self.assertEqual(m["status"], "ready", m)
        self.assertEqual(m["attempts"], 2)
        print("\nseq2seq: killed %.1f s into its training; after the restart it trained in %.2f s (+ %d s held)" % (
            killed_after, m["metrics"]["train_seconds"], TRAIN_DELAY_S), file=sys.stderr)
        self.assertEqual(m["hyper"]["epochs"], SEQ2SEQ["epochs"])
        self.assertGreater(m["size_bytes"], 0)
        # The earlier seq2seq model of the key was superseded by this one (one ready per key).
        self.assertEqual(self.model(probe["id"])["status"], "superseded")
        self.assertEqual(self.psql("SELECT count(*) FROM models WHERE status = 'ready'"), "1")

    def test_3_models_that_cannot_be_trained_fail_with_a_reason(self):
        cases = [
            (dict(kernel_hash="deadbeefdeadbeef"), "kernel_changed", "conflict"),
            (dict(device_class="cuda:NoSuchGPU:sm_90"), "target_unavailable", "unknown_device"),
            (dict(kernel="conv2d", kernel_hash=self.conv_hash), "no_data", "bad_request"),
            (dict(toolchain="gcc 1.0"), "toolchain_changed", "toolchain_changed"),
        ]
        for key, reason, code in cases:
            m = self.wait_model(self.queue("common", **key))
            self.assertEqual(m["status"], "failed", m)
            self.assertEqual((m["error"]["reason"], m["error"]["code"]), (reason, code), m)
            self.assertTrue(m["error"]["message"] and m["error"]["hint"], m)
            self.assertIsNone(m["size_bytes"])
        for hyper in ({"no_such_hyper": 1}, [1]):
            m = self.wait_model(self.queue("nearest", hyper))
            self.assertEqual((m["status"], m["error"]["code"], m["error"]["reason"]),
                             ("failed", "bad_option", "train_failed"), m)

    def test_4_enough_new_trials_queue_a_retrain(self):
        before = self.psql("SELECT id || ' ' || version FROM models WHERE status = 'ready' AND kernel = 'gemm'"
                           " AND kernel_hash = '%s'" % self.gemm["hash"])
        old_id, old_version = map(int, before.split())
        self.import_problem({"M": 320, "N": 320, "K": 320}, RETRAIN_AFTER - 1)
        time.sleep(7)  # more than a retrain check period: not enough yet
        self.assertEqual(self.psql("SELECT count(*) FROM models WHERE reason = 'retrain'"), "0")
        self.import_problem({"M": 640, "N": 160, "K": 320}, 1)
        deadline = time.time() + 60
        while time.time() < deadline:
            got = self.psql("SELECT id FROM models WHERE reason = 'retrain'")
            if got:
                break
            time.sleep(0.5)
        self.assertTrue(got, "no retrain was queued:\n" + self.k.log_tail())
        m = self.wait_model(int(got))
        self.assertEqual(m["status"], "ready", m)
        self.assertGreater(m["version"], old_version)
        self.assertEqual(m["training"]["problems"], len(PROBLEMS) + 2)
        self.assertEqual(self.model(old_id)["status"], "superseded")
        self.assertEqual(self.k.stop(), 0)
        self.k.start()  # no new trials since: nothing more is queued
        time.sleep(7)
        self.assertEqual(self.psql("SELECT count(*) FROM models WHERE reason = 'retrain'"), "1")

    def test_5_clean_stop_during_training_lets_the_model_go(self):
        mid = self.queue("seq2seq", SEQ2SEQ)
        self.wait_model(mid, predicate=lambda m: m["runner"] is not None, timeout=60)
        time.sleep(1)
        t0 = time.time()
        self.assertEqual(self.k.stop(timeout=30), 0)  # does not wait for the training to end
        stop_seconds = time.time() - t0
        self.assertIn("model %d: training abandoned" % mid, self.k.log_tail(200))
        self.k.start()
        # Let go with the attempt not counted: the restarted ktuned's claim is attempt 1 again.
        m = self.wait_model(mid, timeout=240)
        self.assertEqual((m["status"], m["attempts"]), ("ready", 1), m)
        print("\nclean stop during training took %.1f s" % stop_seconds, file=sys.stderr)

    def test_6_another_ktuned_takes_over_a_training_whose_process_died(self):
        conninfo = self.k.pg_conninfo()
        other = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=EXTRA + ["--database-url", conninfo])
        try:
            other.start()  # a second ktuned on the same database: two trainers compete
            mid = self.queue("seq2seq", SEQ2SEQ)
            m = self.wait_model(mid, predicate=lambda m: m["runner"] is not None, timeout=60)
            procs = {"first": self.k, "second": other}
            holder = [n for n, k in procs.items() if (":%d:" % k.proc.pid) in m["runner"]]
            self.assertEqual(len(holder), 1, (m["runner"], [k.proc.pid for k in procs.values()]))
            time.sleep(1)
            procs[holder[0]].kill9()
            # The survivor notices at once (a runner of this host whose pid is gone) and trains it.
            t0 = time.time()
            m = self.wait_model(mid, predicate=lambda m: m["attempts"] == 2, timeout=60)
            took_over = time.time() - t0
            m = self.wait_model(mid, timeout=240)
            self.assertEqual((m["status"], m["attempts"]), ("ready", 2), m)
            print("\nthe %s ktuned was killed while training; the other claimed model %d %.1f s later and "
                  "finished it" % (holder[0], mid, took_over), file=sys.stderr)
            if holder[0] == "first":
                self.assertEqual(other.stop(), 0)
                self.k.start()  # the class's ktuned again, for the tests after this one
        finally:
            other.cleanup()
    def test_7_a_restarted_ktuned_predicts_with_the_stored_model(self):
        status, _, _ = self.k.get("/v1/models")
        if status != 200:
            self.skipTest("no /v1/models here: GET /v1/best's predictions come with the models API")
        ready = int(self.psql("SELECT id FROM models WHERE status = 'ready' AND kernel = 'gemm'"
                              " AND kernel_hash = '%s' AND toolchain = '%s'" % (self.gemm["hash"], self.toolchain)))
        untuned = best_query("gemm", "cpu", M=200, N=200, K=200)
        names = {p["name"] for p in self.gemm["parameters"]}
        for when in ("before", "after"):
            status, _, body = self.k.get(untuned)
            self.assertEqual((status, body.get("source")), (200, "predicted"), body)
            self.assertEqual(body["model"]["id"], ready, body)
            self.assertEqual(set(body["config"]), names)
            if when == "before":
                self.assertEqual(self.k.stop(), 0)
                self.k.start()  # a new process: model_cache loads the model's bytes from the database


def valid_configs(dev, description):
    """Every configuration of the kernel's space on this device (restrictions are Python expressions
    over the parameters, the problem's arguments and the device's limits)."""
    names = [p["name"] for p in dev["parameters"]]
    limits = {k: v for k, v in description.items() if isinstance(v, int)}
    out = []
    # compiled once: the space has about a million combinations of values to filter
    checks = [compile(r, "<restriction>", "eval") for r in dev["restrictions"]]
    for values in itertools.product(*[p["values"] for p in dev["parameters"]]):
        env = dict(limits, **dict(zip(names, values)))
        if all(eval(c, {}, env) for c in checks):  # noqa: S307 - the catalog's own text
            out.append(dict(zip(names, values)))
    return out


def made_up_time(problem, config):
    """A smooth, problem-dependent time: small tiles suit small problems, large ones large problems."""
    size = math.log2(problem["M"] * problem["N"] * problem["K"]) / 3
    tile = math.log2(config["MR"] * config["NR"] * config["KC"]) / 3
    work = problem["M"] * problem["N"] * problem["K"] * 2e-9
    return round(work * (1 + 0.3 * abs(size - tile) + 0.05 * config["UNROLL"] + 0.02 * config["LOOP"]), 6)


if __name__ == "__main__":
    run_tests()
