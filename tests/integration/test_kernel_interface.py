"""Integration: the kernel interface of issue 27 end to end through ktuned on the cpu device, with
tests/kernels/saxpy_f64 (f64 and i32 buffers with their own inits, a float problem argument, an f64
scalar computed from it, a Kernel Tuner-style C function called through the generated call, OpenMP
threads as a parameter the loader bounds by the cores, user metrics, verification against the default
configuration). GET /v1/kernels shows the interface; an exhaustive job verifies every trial against
the default configuration's output (FLIP=1 computes y[0] wrong: wrong_result, the others ok), each
trial says how it was verified and carries its metrics; GET /v1/best answers for the float problem."""
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
PROBLEM = {"n": 20000, "a": 0.75}


class KernelInterfaceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kernels = tempfile.mkdtemp(prefix="ktune-iface-")
        os.chmod(cls.kernels, 0o755)  # mkdtemp's 0700 would hide the sources from the runner's user
        shutil.copytree(SAXPY, os.path.join(cls.kernels, "saxpy_f64"))
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--kernels", cls.kernels, "--workers", "1", "--min-seconds", "0.02"])
        cls.k.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        shutil.rmtree(cls.kernels, ignore_errors=True)
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def test_interface_is_listed(self):
        status, _, body = self.k.get("/v1/kernels")
        self.assertEqual(status, 200, body)
        kernel = {k["name"]: k for k in body["kernels"]}["saxpy_f64"]
        self.assertEqual(kernel["status"], "ready", kernel)
        cpu = [d for d in kernel["devices"] if d["device"] == "cpu"][0]
        self.assertEqual(cpu["verify"], "default")
        self.assertEqual([(b["name"], b["dtype"], b["role"]) for b in cpu["buffers"]],
                         [("y", "f64", "output"), ("x", "f64", "input"), ("idx", "i32", "input")])
        self.assertEqual(cpu["scalars"], [{"name": "alpha", "type": "f64", "value": "a * 2"}])
        self.assertEqual([m["name"] for m in cpu["metrics"]], ["gflops", "gbps"])
        self.assertEqual(cpu["problem_arguments"][1],
                         {"name": "a", "type": "float", "min": -8.0, "max": 8.0, "default": 1.5})
        self.assertEqual(cpu["problem"], {"n": 4096, "a": 1.5})
        self.assertEqual(cpu["restrictions"], ["NT <= cores"])  # added by "threads"

    def test_tune_verifies_against_the_default(self):
        status, _, job = self.k.post("/v1/tune", {"kernel": "saxpy_f64", "device": "cpu",
                                                   "problem": PROBLEM, "strategy": "exhaustive",
                                                   "budget": {"evaluations": 100}})
        self.assertEqual(status, 202, job)
        job = self.k.wait_job(job["id"], timeout=240)
        trials = self.k.all_trials(job["id"])
        self.assertEqual(job["status"], "succeeded", job)
        status, _, dev = self.k.get("/v1/devices")
        cores = {d["name"]: d for d in dev["devices"]}["cpu"]["description"]["cores"]
        # NT <= cores: 2 x 2 x (1 or 2) configurations, each measured once before the final rounds
        # (which measure the best ok ones again)
        first = [t for t in trials if t["final_round"] is None]
        self.assertEqual(len(first), 4 * min(cores, 2), first)
        self.assertEqual(sum(t["status"] == "wrong_result" for t in first), 2 * min(cores, 2))
        for t in trials:
            cfg = t["config"]
            self.assertEqual(t["extras"]["verified"], "default", t)
            if cfg["FLIP"] == 1:
                self.assertEqual(t["status"], "wrong_result", t)
                self.assertEqual((t["extras"]["first_bad_buffer"], t["extras"]["first_bad_index"]),
                                 ("y", 0), t)
                continue
            self.assertEqual(t["status"], "ok", t)
            self.assertEqual(t["extras"]["threads"], cfg["NT"], t)
            metrics = t["extras"]["metrics"]
            self.assertAlmostEqual(metrics["gflops"], 2 * PROBLEM["n"] / (t["time_ms"] * 1e6),
                                   delta=1e-9 * metrics["gflops"])
            self.assertAlmostEqual(metrics["gbps"], 10 * metrics["gflops"],
                                   delta=1e-9 * metrics["gbps"])
        self.assertEqual(job["best"]["config"]["FLIP"], 0, job)
        status, _, best = self.k.get(best_query("saxpy_f64", "cpu", **PROBLEM))
        self.assertEqual(status, 200, best)
        self.assertEqual(best["config"], job["best"]["config"], best)
        # another float value is another problem: nothing measured for it
        status, _, other = self.k.get(best_query("saxpy_f64", "cpu", n=PROBLEM["n"], a=0.5))
        self.assertFalse(status == 200 and other.get("source") == "measured", (status, other))


if __name__ == "__main__":
    run_tests()
