"""Integration: the "start" option of the strategies that walk neighbours through POST /v1/tune (issue
#15). "default" is the kernel variant's default configuration, resolved by the request's validation and
again by the job driver each time it makes the searcher: on gemm_tiled (cpu, its default problem 512^3)
a gbfs job with "start": "default" is accepted, keeps its options as sent, and measures the spec's
default configuration first. A replay device has no default configuration: 400 bad_option saying so;
neither has a problem whose space lacks it (gemm_tiled at 1024^3). A configuration object outside the
space is 400 bad_option naming the parameter; "paper" and a valid object are accepted on a replay
device, whose job measures the object first."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
with open(os.path.join(SOURCE, "kernels", "gemm_tiled", "spec.json")) as f:
    GEMM_TILED_DEFAULT = json.load(f)["variants"]["cpu"]["default"]
REPLAY = {"kernel": "pnpoly", "device": "replay:pnpoly_kt-RTX_3090"}


class StartOptionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--kernels", os.path.join(SOURCE, "kernels"), "--workers", "1",
                                                         "--min-seconds", "0.02"])
        cls.k.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def refused(self, body, needle):
        status, _, reply = self.k.post("/v1/tune", body)
        self.assertEqual(status, 400, reply)
        self.assertEqual(reply["error"]["code"], "bad_option", reply)
        text = reply["error"]["message"] + " " + reply["error"].get("hint", "")
        self.assertIn(needle, text, reply)
        return reply

    def first_trial(self, body):
        status, _, job = self.k.post("/v1/tune", body)
        self.assertEqual(status, 202, job)
        job = self.k.wait_job(job["id"], timeout=240)
        self.assertEqual(job["status"], "succeeded", job)
        trials = sorted(self.k.all_trials(job["id"]), key=lambda t: t["seq"])
        self.assertGreaterEqual(len(trials), 1, job)
        return job, trials[0]

    def test_default_start_on_cpu_measures_the_kernel_default(self):
        body = {"kernel": "gemm_tiled", "device": "cpu", "strategy": "gbfs",
                "strategy_options": {"start": "default"}, "budget": {"evaluations": 1},
                "final_remeasure": 0, "seed": 1}
        job, first = self.first_trial(body)
        self.assertEqual(job["strategy_options"], {"start": "default"}, job)  # kept as sent
        self.assertEqual(first["config"], GEMM_TILED_DEFAULT, first)

    def test_default_start_without_a_default_is_refused(self):
        for strategy in ("gbfs", "na2c", "anneal", "greedy_ils"):
            reply = self.refused(dict(REPLAY, strategy=strategy, strategy_options={"start": "default"}),
                                 "default")
            self.assertIn("paper", reply["error"].get("hint", ""), reply)
        # gemm_tiled's default tiles 512^3: no configuration of the 1024^3 space
        self.refused({"kernel": "gemm_tiled", "device": "cpu", "problem": {"M": 1024, "N": 1024, "K": 1024},
                      "strategy": "na2c", "strategy_options": {"start": "default"}}, "m0*m1*m2*m3")

    def test_start_objects(self):
        # The first of the replayed space's configurations, from a random job's trials.
        _, any_trial = self.first_trial(dict(REPLAY, strategy="random", budget={"evaluations": 1}, seed=5))
        start = any_trial["config"]
        bad = dict(start)
        name = sorted(bad)[0]
        bad[name] = 987654321
        self.refused(dict(REPLAY, strategy="greedy_ils", strategy_options={"start": bad}), "'%s'" % name)
        self.refused(dict(REPLAY, strategy="gbfs", strategy_options={"start": "middle"}),
                     "random|default|paper")
        self.refused(dict(REPLAY, strategy="random", strategy_options={"start": "paper"}), "start")
        for strategy in ("gbfs", "na2c", "anneal"):
            _, first = self.first_trial(dict(REPLAY, strategy=strategy, strategy_options={"start": start},
                                             budget={"evaluations": 3}, seed=7))
            self.assertEqual(first["config"], start, strategy)
        status, _, job = self.k.post("/v1/tune", dict(REPLAY, strategy="na2c",
                                                      strategy_options={"start": "paper", "epsilon": 1},
                                                      budget={"evaluations": 5}))
        self.assertEqual(status, 202, job)


if __name__ == "__main__":
    run_tests()
