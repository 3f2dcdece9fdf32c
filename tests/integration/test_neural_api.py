"""Integration: neural transformations through the API (issue 14). ktuned serves the preset networks
(GET /v1/networks) and the kernel conv2d_neural on the cpu device. A plain job on a layer's problem only
ever measures semantics-preserving configurations; a job with "neural" (allow group / bottleneck / the
paper's sequences, a preset network, one of its layers, the small Fashion-MNIST copy) judges every
configuration that changes the network by its Fisher ratio first: illegal ones end `illegal` with the
ratio in extras and are never measured (no compile time), legal ones are measured; it finds a legal
configuration faster than the plain job's best. GET /v1/best without "neural" answers the plain problem
with changes_network false; with neural= it answers the neural problem's best, marked changes_network
true. Bad "neural" members are 400s naming the field."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
NETWORK = "vgg_fm"
ALLOW = ["group", "bottleneck", "spatial_group", "unroll_group", "split_group"]
# The paper's rule (a candidate's Fisher Potential at least the original's): on vgg_fm's conv2 and
# the small data set the ratios of its transformations straddle 1 (0.90 to 1.18), so some are
# judged illegal and some legal.
THRESHOLD = float(os.environ.get("KT_NEURAL_TEST_THRESHOLD", "1.0"))
EVALUATIONS = 32


class NeuralApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--kernels", os.path.join(SOURCE, "kernels"), "--workers", "2",
                              "--min-seconds", "0.02", "--min-repeats", "3"])
        cls.k.start()
        status, _, body = cls.k.get("/v1/networks")
        assert status == 200, body
        cls.networks = {n["name"]: n for n in body["networks"]}
        # The layer: the first conv that takes every transformation (channels multiple of 16,
        # output not joining a residual sum).
        cls.layer = next(c for c in cls.networks[NETWORK]["convs"]
                         if c["C"] % 16 == 0 and c["K"] % 16 == 0 and c["bottleneck_ok"])
        cls.neural = {"allow": ALLOW, "network": NETWORK, "layer": cls.layer["name"],
                      "data": "fashion-mnist-small", "threshold": THRESHOLD}
        cls.problem = {"N": 1, **{a: cls.layer[a] for a in ("C", "K", "H", "W", "R", "S")}}
        cls.jobs = {}

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def run_job(self, neural):
        key = json.dumps(neural, sort_keys=True)
        if key not in self.jobs:
            body = {"kernel": "conv2d_neural", "device": "cpu", "problem": self.problem,
                    "strategy": "random", "seed": 5, "budget": {"evaluations": EVALUATIONS},
                    "final_remeasure": 0}
            if neural:
                body["neural"] = neural
            status, _, job = self.k.post("/v1/tune", body)
            self.assertEqual(status, 202, job)
            job = self.k.wait_job(job["id"], timeout=600)
            self.jobs[key] = (job, self.k.all_trials(job["id"]))
        return self.jobs[key]

    @staticmethod
    def changes(config):
        return (config.get("GROUPS", 1), config.get("BOTTLENECK", 1), config.get("SEQ", 0)) != (1, 1, 0)

    def test_a_networks(self):
        for name in ("vgg_fm", "resnet_fm"):
            n = self.networks[name]
            self.assertEqual((n["input"], n["classes"]), ([1, 28, 28], 10), n)
            self.assertGreaterEqual(len(n["convs"]), 4, n)
            self.assertEqual(len(n["hash"]), 16, n)
            self.assertGreater(n["params"], 0, n)
        self.assertTrue(any(not c["bottleneck_ok"] for c in self.networks["resnet_fm"]["convs"]))

    def test_b_plain_job_preserves_semantics(self):
        job, trials = self.run_job(None)
        self.assertEqual(job["status"], "succeeded", job)
        self.assertEqual(len(trials), EVALUATIONS)
        for t in trials:
            self.assertFalse(self.changes(t["config"]), t)
            self.assertNotEqual(t["status"], "illegal", t)
        self.assertNotIn("neural", job["problem"])

    def test_c_neural_job_judges_and_finds_faster(self):
        plain, _ = self.run_job(None)
        job, trials = self.run_job(self.neural)
        self.assertEqual(job["status"], "succeeded", job)
        self.assertEqual(job["problem"]["neural"]["layer"], self.layer["name"])
        self.assertEqual(len(job["problem"]["neural"]["network_hash"]), 16)
        by = {}
        for t in trials:
            by[t["status"]] = by.get(t["status"], 0) + 1
            if not self.changes(t["config"]):
                self.assertEqual(t["status"], "ok", t)  # the identity is never judged
                self.assertNotIn("fisher_ratio", t["extras"] or {})
                continue
            ratio = t["extras"]["fisher_ratio"]
            self.assertGreater(ratio, 0, t)
            self.assertEqual(t["extras"]["legality_threshold"], THRESHOLD)
            if t["status"] == "illegal":
                self.assertLess(ratio, THRESHOLD, t)
                self.assertIsNone(t["time_ms"], t)
                self.assertEqual(t["compile_ms"] or 0, 0, t)  # never compiled, never run
            else:
                self.assertEqual(t["status"], "ok", t)
                self.assertGreaterEqual(ratio, THRESHOLD, t)
        self.assertGreater(by.get("illegal", 0), 0, by)
        legal = [t for t in trials if t["status"] == "ok" and self.changes(t["config"])]
        self.assertGreater(len(legal), 0, by)
        best = job["best"]
        self.assertTrue(self.changes(best["config"]), best)
        self.assertLess(best["time_ms"], plain["best"]["time_ms"], (best, plain["best"]))
        print("neural job: %s; best %s %.4f ms (fisher ratio %.3f) vs plain best %.4f ms: %.2fx" % (
            by, best["config"], best["time_ms"],
            next(t["extras"]["fisher_ratio"] for t in legal if t["config"] == best["config"]),
            plain["best"]["time_ms"], plain["best"]["time_ms"] / best["time_ms"]))

    def test_d_best_marks_the_network_change(self):
        plain, _ = self.run_job(None)
        job, _ = self.run_job(self.neural)
        status, _, body = self.k.get(best_query("conv2d_neural", "cpu", source="measured", **self.problem))
        self.assertEqual(status, 200, body)
        self.assertEqual((body["changes_network"], body["transformation"]), (False, "none"), body)
        self.assertEqual(body["config"], plain["best"]["config"])
        q = dict(self.problem, neural=json.dumps(self.neural))
        status, _, body = self.k.get(best_query("conv2d_neural", "cpu", source="measured", **q))
        self.assertEqual(status, 200, body)
        self.assertTrue(body["changes_network"], body)
        self.assertNotEqual(body["transformation"], "none", body)
        self.assertEqual(body["config"], job["best"]["config"])
        self.assertEqual(body["problem"]["neural"]["network"], NETWORK)

    def test_e_bad_neural_requests(self):
        def refused(neural, problem=None, kernel="conv2d_neural", expect="neural"):
            body = {"kernel": kernel, "device": "cpu", "problem": self.problem if problem is None else problem,
                    "neural": neural, "budget": {"evaluations": 1}}
            status, _, err = self.k.post("/v1/tune", body)
            self.assertEqual(status, 400, err)
            self.assertIn(expect, err["error"]["message"], err)
            return err
        base = dict(self.neural)
        refused(dict(base, allow=["prune"]), expect="neural.allow[0]")
        refused(dict(base, allow=[]), expect="neural.allow")
        refused(dict(base, network="alexnet"), expect="neural.network")
        refused(dict(base, layer="nope"), expect="neural.layer")
        refused(dict(base, data="cifar"), expect="neural.data")
        refused(dict(base, threshold=0), expect="neural.threshold")
        refused(dict(base, extra=1), expect="neural.extra")
        refused(base, problem=dict(self.problem, C=self.problem["C"] + 1), expect="problem argument C")
        refused(base, kernel="gemm", problem={"M": 64}, expect="no neural transformations")
        resnet = self.networks["resnet_fm"]["convs"]
        last = next(c for c in resnet if not c["bottleneck_ok"])
        refused({"allow": ["bottleneck"], "network": "resnet_fm", "layer": last["name"]},
                problem={"N": 1}, expect="cannot take a bottleneck")
        status, _, err = self.k.post("/v1/tune", {"kernel": "conv2d_neural", "device": "cpu",
                                                  "neural": "group"})
        self.assertEqual((status, err["error"]["code"]), (400, "wrong_type"), err)


if __name__ == "__main__":
    run_tests()
