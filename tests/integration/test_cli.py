"""Integration: the `ktune` command against a real ktuned (started with an API token): tune --wait,
jobs, job, best in its three formats, cancel, export in both formats, import of exported files and of a
shared Kernel Tuner cache (round trips agree), models / train --wait / best of a prediction (its source
on stderr, marked in the flags and header formats), and the exit codes and messages of bad input."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
KTUNE = os.path.join(os.path.dirname(os.path.abspath(ARGS.ktuned)), "ktune")
TOKEN = "cli-test-token"
CONV = ["--kernel", "convolution", "--device", "replay:convolution_milo-A4000"]
SHARED_PNPOLY = os.path.join(ARGS.source_dir, "..", "shared", "data", "gpu-spaces",
                             "pnpoly_kt-RTX_3090.json.gz")
DATASET_PNPOLY = os.path.join(ARGS.source_dir, "datasets", "pnpoly_kt-RTX_3090.json.gz")

# Exit codes (service/cli/cli.h).
OK, FAILURE, USAGE, UNREACHABLE, REJECTED, NOT_FOUND, UNAUTHORIZED = 0, 1, 2, 3, 4, 5, 6
JOB_CANCELLED = 9


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--workers", "2", "--api-token", TOKEN, "--max-evaluations", "50000",
                              "--kernels", os.path.join(ARGS.source_dir, "kernels")])
        cls.k.start()
        cls.tmp = tempfile.mkdtemp(prefix="ktune-cli-", dir="/tmp")
        cls.auth = {"Authorization": "Bearer " + TOKEN}

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def ktune(self, *args, token=TOKEN, server=None, expect=OK):
        env = dict(os.environ, KTUNE_SERVER=server or "http://" + self.k.address)
        env.pop("KTUNE_TOKEN", None)
        if token is not None:
            env["KTUNE_TOKEN"] = token
        p = subprocess.run([KTUNE] + list(args), env=env, capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, expect, "ktune %s\nstdout: %s\nstderr: %s"
                         % (" ".join(args), p.stdout[-2000:], p.stderr[-2000:]))
        return p

    def tune_wait(self, *args):
        p = self.ktune("tune", *args, "--wait")
        job_id = int(p.stdout.split()[0])
        self.assertIn("job %d succeeded" % job_id, p.stderr)
        return job_id

    def trials_of(self, job_id):
        """Trials as comparable tuples, keyed by configuration."""
        out = {}
        for t in self.k.all_trials(job_id):
            key = json.dumps(t["config"], sort_keys=True)
            out[key] = (t["status"], t["time_ms"], t["compile_ms"], t["measure_ms"])
        return out

    # --- tune, jobs, job, best -----------------------------------------------------------------
    def test_tune_wait_jobs_job_best(self):
        job_id = self.tune_wait(*CONV, "--strategy", "random", "--budget-evaluations", "60",
                                "--seed", "11", "--problem", "problem_size=4096,4096")
        status, _, job = self.k.get("/v1/jobs/%d" % job_id)
        self.assertEqual((job["status"], job["progress"]["trials"], job["seed"]), ("succeeded", 60, "11"))
        # stderr is not a terminal here: plain progress lines, then the summary.
        p = self.ktune("jobs", "--limit", "500")
        self.assertTrue(any(line.split()[:2] == [str(job_id), "succeeded"]
                            for line in p.stdout.splitlines()), p.stdout)
        listed = json.loads(self.ktune("jobs", "--json", "--status", "succeeded").stdout)
        self.assertIn(job_id, [j["id"] for j in listed["jobs"]])
        p = self.ktune("job", str(job_id))
        self.assertIn("succeeded (budget_evaluations)", p.stdout)
        self.assertIn("60 trials", p.stdout)
        self.assertEqual(json.loads(self.ktune("job", str(job_id), "--json").stdout)["id"], job_id)

        _, _, best = self.k.get(best_query("convolution", "replay:convolution_milo-A4000"))
        config = json.loads(self.ktune("best", *CONV).stdout)
        self.assertEqual(config, best["config"])
        flags = self.ktune("best", *CONV, "--format", "flags").stdout.split()
        self.assertEqual(flags, ["-D%s=%s" % (k, v) for k, v in best["config"].items()])
        header = self.ktune("best", *CONV, "--problem", "problem_size=4096,4096",
                            "--format", "header").stdout
        self.assertIn("#ifndef KTUNE_CONVOLUTION_H", header)
        # The header compiles, and its macros hold the configuration.
        path = os.path.join(self.tmp, "best.h")
        with open(path, "w") as f:
            f.write(header)
        checks = "".join("_Static_assert(KTUNE_%s == %d, \"%s\");\n" % (k.upper(), v, k)
                         for k, v in best["config"].items())
        src = os.path.join(self.tmp, "use.c")
        with open(src, "w") as f:
            f.write("#include \"best.h\"\n#include \"best.h\"\n" + checks)
        cc = subprocess.run(["cc", "-std=c11", "-fsyntax-only", src], capture_output=True, text=True)
        self.assertEqual(cc.returncode, 0, cc.stderr)

    def test_best_miss_and_bad_input(self):
        p = self.ktune("best", "--kernel", "clblast_gemm", "--device", "replay:gemm_clblast-RTX_2080_Ti",
                       "--problem", "problem_size=1,2", expect=REJECTED)
        self.assertIn("ktune: ", p.stderr)
        p = self.ktune("best", "--kernel", "nope", "--device", "replay:pnpoly_kt-RTX_3090",
                       expect=REJECTED)
        self.assertIn("does not offer kernel 'nope'", p.stderr)
        self.assertIn("hint: device replay:pnpoly_kt-RTX_3090 offers: pnpoly", p.stderr)
        p = self.ktune("tune", "--kernel", "nope", "--device", "replay:convolution_milo-A4000",
                       expect=REJECTED)
        self.assertIn("does not offer kernel 'nope'", p.stderr)
        self.assertEqual(p.stdout, "")
        p = self.ktune("tune", *CONV, "--strategy", "no_such", expect=REJECTED)
        self.assertIn("no strategy named 'no_such'", p.stderr)
        # "Did you mean" (issue 31): kernels, devices, strategies, strategy options, flags, commands.
        p = self.ktune("best", "--kernel", "pnpol", "--device", "replay:pnpoly_kt-RTX_3090", expect=REJECTED)
        self.assertIn("hint: did you mean 'pnpoly'? device replay:pnpoly_kt-RTX_3090 offers: pnpoly", p.stderr)
        p = self.ktune("best", "--kernel", "pnpoly", "--device", "replay:pnpoly_kt-RTX_309", expect=REJECTED)
        self.assertIn("did you mean 'replay:pnpoly_kt-RTX_3090'?", p.stderr)
        p = self.ktune("tune", *CONV, "--strategy", "bayes", expect=REJECTED)
        self.assertIn("did you mean 'bo'?", p.stderr)
        p = self.ktune("tune", *CONV, "--strategy", "randon", expect=REJECTED)
        self.assertIn("did you mean 'random'?", p.stderr)
        p = self.ktune("tune", *CONV, "--strategy", "anneal", "--option", "neighborhood=adjacent", expect=REJECTED)
        self.assertIn("did you mean 'neighbourhood'?", p.stderr)
        p = self.ktune("tune", *CONV, "--budget", "5", expect=USAGE)
        self.assertIn("did you mean '--budget-evaluations' or '--budget-seconds'?", p.stderr)
        p = self.ktune("tun", expect=USAGE)
        self.assertIn("did you mean 'tune'?", p.stderr)
        p = self.ktune("job", "999999", expect=NOT_FOUND)
        self.assertIn("no such job", p.stderr)
        # Usage errors never reach the server.
        self.ktune("tune", "--kernel", "convolution", expect=USAGE)
        self.ktune("job", "abc", expect=USAGE)
        self.ktune("best", *CONV, "--format", "yaml", expect=USAGE)
        self.ktune("export", "1", expect=USAGE)
        self.ktune("bogus", expect=USAGE)
        self.ktune("jobs", "--server", "ftp://x", expect=USAGE)

    def test_best_miss_exit_code(self):
        # unittest runs tests in name order: this one comes before any test tunes or imports pnpoly.
        status, _, body = self.k.get(best_query("pnpoly", "replay:pnpoly_kt-RTX_3090"))
        self.assertEqual(status, 404, body)
        p = self.ktune("best", "--kernel", "pnpoly", "--device", "replay:pnpoly_kt-RTX_3090",
                       expect=NOT_FOUND)
        self.assertIn("no measured or predicted configuration of kernel pnpoly is known", p.stderr)
        # The hint in CLI words (issue 31), not REST.
        self.assertIn("hint: tune it: ktune tune --kernel pnpoly --device replay:pnpoly_kt-RTX_3090 --problem "
                      "problem_size=", p.stderr)
        self.assertIn("--wait (or add --tune-on-miss N); train a model of the key: ktune train --kernel pnpoly "
                      "--device replay:pnpoly_kt-RTX_3090 --wait; or ask with --fallback nearest", p.stderr)
        self.assertNotIn("POST /v1/", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_models_train_and_predicted_best(self):
        # Four gemm problems "measured" on the cpu through imports (no measuring here): the default
        # configuration with UNROLL 1, 2 and 4, one of them best per problem. Trusted (an admin's
        # import, issue 26): only then do they count as measurements for the nearest fallback and
        # the model below.
        # The cpu's default follows the probed ISA (the 512-bit one is invalid on an AVX2 machine).
        status, _, kernels = self.k.get("/v1/kernels")
        self.assertEqual(status, 200, kernels)
        kernels = kernels if isinstance(kernels, list) else kernels["kernels"]
        gemm_kernel = next(x for x in kernels if x["name"] == "gemm")
        default = next(d for d in gemm_kernel["devices"] if d["device"] == "cpu")["default"]
        self.assertIn("UNROLL", default)
        problems = [{"M": 64, "N": 64, "K": 64}, {"M": 128, "N": 128, "K": 128},
                    {"M": 256, "N": 256, "K": 256}, {"M": 512, "N": 512, "K": 512}]
        for i, problem in enumerate(problems):
            trials = [{"config": dict(default, UNROLL=u), "status": "ok",
                       "time_ms": 1.0 + (j - i % 3) ** 2 + i} for j, u in enumerate((1, 2, 4))]
            status, _, reply = self.k.post("/v1/imports", {"kernel": "gemm", "device": "cpu", "problem": problem,
                                                           "source": "kerneltuner", "trials": trials,
                                                           "trusted": True},
                                           headers=self.auth)
            self.assertEqual(status, 201, reply)
        gemm = ["--kernel", "gemm", "--device", "cpu"]
        p = self.ktune("best", *gemm, "--problem", "M=100,N=100,K=100", expect=NOT_FOUND)
        self.assertIn("train a model of the key: ktune train --kernel gemm --device cpu --wait", p.stderr)
        p = self.ktune("best", *gemm, "--problem", "M=100,N=100,K=100", "--fallback", "nearest",
                       "--format", "flags")
        self.assertIn("nearest tuned problem", p.stderr)
        self.assertTrue(p.stdout.rstrip().endswith("-DKTUNE_NEAREST=1"), p.stdout)
        self.ktune("train", *gemm, "--algorithm", "nearest", token="wrong", expect=UNAUTHORIZED)
        self.ktune("train", "--kernel", "gemm", expect=USAGE)
        self.ktune("train", *gemm, "--device-class", "x", expect=USAGE)
        p = self.ktune("train", *gemm, "--algorithm", "magic", expect=REJECTED)
        self.assertIn("unknown algorithm 'magic'", p.stderr)
        p = self.ktune("train", *gemm, "--algorithm", "nearest", "--wait")
        first = p.stdout.split("\n")[0].split()
        self.assertEqual((first[0], first[2]), ("model", "ready"), p.stdout)
        model_id = int(first[1])
        self.assertIn("training set       4 problems", p.stdout)
        self.assertIn("held-out problems", p.stdout)
        p = self.ktune("models", "--kernel", "gemm", "--status", "ready")
        rows = [line.split() for line in p.stdout.splitlines()[1:]]
        self.assertIn([str(model_id), "ready", "nearest", "1", "gemm"], [r[:5] for r in rows])
        self.assertEqual(self.ktune("models", "--status", "failed").stdout.splitlines()[-1], "(no models)")
        p = self.ktune("models", str(model_id), "--json")
        self.assertEqual(json.loads(p.stdout)["id"], model_id)
        self.ktune("models", "999999", expect=NOT_FOUND)
        self.ktune("models", "abc", expect=USAGE)
        self.ktune("models", "--status", "sleepy", expect=REJECTED)
        # A problem never tuned: a prediction, marked as one in every format.
        q = ["best", *gemm, "--problem", "M=100,N=100,K=100"]
        p = self.ktune(*q)
        self.assertIn("ktune best: predicted by model %d (nearest, version 1)" % model_id, p.stderr)
        # Its confidence (issue 31): how many problems it learnt from, how far this one is from them.
        self.assertRegex(p.stderr, r"; model trained on \d+ problems, nearest trained problem at log-distance [0-9.]+")
        self.assertEqual(self.ktune(*q, "--accept", "weak").stdout, p.stdout)
        self.assertIn("--accept must be weak", self.ktune(*q, "--accept", "strong", expect=USAGE).stderr)
        config = json.loads(p.stdout)
        self.assertEqual(set(config), set(default))
        flags = self.ktune(*q, "--format", "flags").stdout.split()
        self.assertEqual(flags, ["-D%s=%s" % (k, v) for k, v in config.items()] + ["-DKTUNE_PREDICTED=1"])
        header = self.ktune(*q, "--format", "header").stdout
        self.assertIn("NOT MEASURED: predicted by model %d" % model_id, header)
        self.assertIn("#define KTUNE_PREDICTED 1\n", header)
        # The server renders it with the same code (issue 31: the dashboard's export buttons
        # download GET /v1/best?...&format=header|flags): byte for byte what ktune writes.
        for fmt, text in (("header", header), ("flags", " ".join(flags) + "\n")):
            status, hdrs, served = self.k.get("/v1/best?kernel=gemm&device=cpu&M=100&N=100&K=100&format=" + fmt)
            self.assertEqual((status, hdrs["content-type"].split(";")[0], served), (200, "text/plain", text))
            self.assertIn("attachment; filename=", hdrs["content-disposition"])
        full = json.loads(self.ktune(*q, "--verbose", "--k", "2").stdout)
        self.assertEqual((full["source"], len(full["candidates"])), ("predicted", 2))
        self.ktune(*q, "--source", "measured", expect=NOT_FOUND)
        self.ktune(*q, "--source", "guess", expect=USAGE)
        self.ktune(*q, "--k", "0", expect=USAGE)
        # A known problem (imported, issue #11 says so): with its provenance, unmarked.
        p = self.ktune("best", *gemm, "--problem", "M=64,N=64,K=64", "--format", "flags")
        self.assertIn("ktune best: imported 1 ms (job ", p.stderr)  # those problems came from imports
        self.assertNotIn("KTUNE_", p.stdout)
        # tune_on_miss: a job queued once, named on stderr.
        p = self.ktune(*q, "--tune-on-miss", "2", "--source", "measured", expect=NOT_FOUND)
        self.assertIn("(tune_on_miss)", p.stderr)

    def test_token_and_unreachable(self):
        p = self.ktune("tune", *CONV, token="wrong", expect=UNAUTHORIZED)
        self.assertIn("the API token is not valid", p.stderr)
        p = self.ktune("cancel", "1", token=None, expect=UNAUTHORIZED)
        self.assertIn("Authorization: Bearer", p.stderr)
        # Reading needs a token too once one exists (issue #11); any scope will do.
        p = self.ktune("jobs", token=None, expect=UNAUTHORIZED)
        self.assertIn("needs an API token of scope read", p.stderr)
        p = self.ktune("jobs", server="http://127.0.0.1:1", expect=UNREACHABLE)
        self.assertIn("cannot reach ktuned at http://127.0.0.1:1", p.stderr)
        self.ktune("jobs", "--server", "http://127.0.0.1:1", "--timeout", "5", expect=UNREACHABLE)

    # --- cancel --------------------------------------------------------------------------------
    def test_cancel(self):
        args = ["--kernel", "clblast_gemm", "--device", "replay:gemm_clblast-RTX_2080_Ti",
                "--strategy", "exhaustive", "--budget-evaluations", "17956"]
        job_id = int(self.ktune("tune", *args).stdout)
        p = self.ktune("cancel", str(job_id))
        self.assertEqual(p.stdout.strip(), "job %d cancelled" % job_id)
        p = self.ktune("cancel", str(job_id), expect=REJECTED)
        self.assertIn("already cancelled", p.stderr)
        # tune --wait on a job cancelled meanwhile ends with its own exit code.
        env = dict(os.environ, KTUNE_SERVER="http://" + self.k.address, KTUNE_TOKEN=TOKEN)
        proc = subprocess.Popen([KTUNE, "tune"] + args + ["--wait"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        job_id = int(proc.stdout.readline())
        status, _, _ = self.k.request("DELETE", "/v1/jobs/%d" % job_id, headers=self.auth)
        self.assertEqual(status, 200)
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, JOB_CANCELLED, err)
        self.assertIn("job %d was cancelled" % job_id, err)

    # --- export and import ---------------------------------------------------------------------
    def test_export_import_round_trip(self):
        job_id = self.tune_wait(*CONV, "--strategy", "random", "--budget-evaluations", "150",
                                "--seed", "5")
        original = self.trials_of(job_id)
        self.assertEqual(len(original), 150)
        for fmt in ("kerneltuner", "t4"):
            path = os.path.join(self.tmp, "export-%d.%s.json" % (job_id, fmt))
            self.ktune("export", str(job_id), "--format", fmt, "-o", path)
            with open(path) as f:
                doc = json.load(f)
            # GET /v1/jobs/{id}/export (the dashboard's button) serves the same file (issue 31).
            status, hdrs, served = self.k.get("/v1/jobs/%d/export?format=%s" % (job_id, fmt))
            self.assertEqual((status, served), (200, doc), fmt)
            self.assertIn("ktune_job%d_" % job_id, hdrs["content-disposition"])
            if fmt == "kerneltuner":
                self.assertEqual(len(doc["cache"]), 150)
                self.assertEqual(doc["tune_params_keys"][0], "block_size_x")
                rec = next(iter(doc["cache"].values()))
                for key in ("time", "compile_time", "verification_time", "benchmark_time",
                            "strategy_time", "framework_time", "timestamp"):
                    self.assertIn(key, rec)
            else:
                self.assertEqual(doc["schema_version"], "1.0.0")
                self.assertEqual(len(doc["results"]), 150)
                for r in doc["results"]:
                    for key in ("configuration", "times", "invalidity", "correctness"):
                        self.assertIn(key, r)
            p = self.ktune("import", path)
            imported = int(p.stdout)
            self.assertIn("imported 150 trials (%s file) as job %d" % (fmt, imported), p.stderr)
            status, _, job = self.k.get("/v1/jobs/%d" % imported)
            self.assertEqual((job["status"], job["strategy"], job["stop_reason"]),
                             ("succeeded", "import", "imported"))
            self.assertEqual(self.trials_of(imported), original, fmt)
            self.assertEqual(job["best"]["time_ms"], min(t[1] for t in original.values() if t[0] == "ok"))
        # Export to stdout works too.
        p = self.ktune("export", str(job_id), "--format", "t4")
        self.assertEqual(len(json.loads(p.stdout)["results"]), 150)

    def test_export_cpu_job_is_a_kernel_tuner_cache(self):
        # A cpu job (imported here: nothing measured) exports as a file Kernel Tuner's cache schema
        # (kernel_tuner/schema/cache/1.0.0) accepts: problem_size (an array of integers) present, and
        # restrictions with the device's limits and the problem written as numbers, so Kernel
        # Tuner (which knows neither) can evaluate them: each holds for every configuration.
        status, _, kernels = self.k.get("/v1/kernels")
        gemm = next(x for x in kernels["kernels"] if x["name"] == "gemm")
        cpu = next(d for d in gemm["devices"] if d["device"] == "cpu")
        problem = {"M": 96, "N": 80, "K": 72}
        trials = [{"config": dict(cpu["default"], UNROLL=u), "status": "ok", "time_ms": 1.0 + u}
                  for u in (1, 2)] + [{"config": dict(cpu["default"], UNROLL=4), "status": "timeout"}]
        status, _, reply = self.k.post("/v1/imports", {"kernel": "gemm", "device": "cpu", "problem": problem,
                                                       "trials": trials}, headers=self.auth)
        self.assertEqual(status, 201, reply)
        doc = json.loads(self.ktune("export", str(reply["job"]["id"]), "--format", "kerneltuner").stdout)
        # the server's export writes the limits and the problem into the restrictions the same way
        self.assertEqual(self.k.get("/v1/jobs/%d/export?format=kerneltuner" % reply["job"]["id"])[2], doc)
        for key, kind in (("schema_version", str), ("device_name", str), ("kernel_name", str),
                          ("problem_size", list), ("tune_params_keys", list), ("tune_params", dict),
                          ("objective", str), ("cache", dict)):
            self.assertIsInstance(doc.get(key), kind, key)
        self.assertEqual(doc["schema_version"], "1.0.0")
        self.assertEqual(doc["problem_size"], [96, 80, 72])  # the kernel's argument order
        self.assertTrue(all(isinstance(k, str) for k in doc["tune_params_keys"]))
        self.assertTrue(all(isinstance(v, list) for v in doc["tune_params"].values()))
        self.assertEqual(len(doc["cache"]), 3)
        for key, rec in doc["cache"].items():
            self.assertRegex(key, r"^\d+(,\d+)*$")
            self.assertIsInstance(rec["time"], (str, float, int))
            for field in ("compile_time", "verification_time", "benchmark_time", "strategy_time",
                          "framework_time"):
                self.assertIsInstance(rec[field], (float, int), field)
            self.assertIsInstance(rec["timestamp"], str)
        self.assertEqual(sorted(r["time"] for r in doc["cache"].values() if isinstance(r["time"], str)),
                         ["RuntimeFailedConfig"])
        self.assertEqual(len(doc["restrictions"]), len(cpu["restrictions"]))
        limits = ("l1d_bytes", "l2_bytes", "l3_bytes", "vector_bits", "cores")
        for text in doc["restrictions"]:
            for name in limits + tuple(problem):
                self.assertNotRegex(text, r"\b%s\b" % name, text)
            for rec in doc["cache"].values():
                config = {k: rec[k] for k in doc["tune_params_keys"]}
                self.assertTrue(eval(text, {"__builtins__": {}}, config), (text, config))

    def test_import_shared_kernel_tuner_cache(self):
        path = SHARED_PNPOLY if os.path.exists(SHARED_PNPOLY) else DATASET_PNPOLY
        with gzip.open(path) as f:
            cache = json.load(f)["cache"]
        p = self.ktune("import", path)  # kernel and device from its "space" name
        job_id = int(p.stdout)
        trials = self.trials_of(job_id)
        self.assertEqual(len(trials), len(cache))
        for rec in cache.values():
            key = json.dumps({k: rec[k] for k in ("between_method", "block_size_x", "tile_size",
                                                    "use_method")}, sort_keys=True)
            status, time_ms, compile_ms, measure_ms = trials[key]
            if isinstance(rec["time"], (int, float)):
                self.assertEqual((status, time_ms), ("ok", rec["time"]))
            else:
                expected = {"RuntimeFailedConfig": "runtime_error",
                            "CompilationFailedConfig": "compile_error"}.get(rec["time"], "invalid")
                self.assertEqual((status, time_ms), (expected, None))
            self.assertAlmostEqual(compile_ms, rec["compile_time"])
            self.assertAlmostEqual(measure_ms, rec["verification_time"] + rec["benchmark_time"])
        # The import updated /v1/best: the dataset's optimum.
        status, _, best = self.k.get(best_query("pnpoly", "replay:pnpoly_kt-RTX_3090"))
        self.assertEqual(status, 200, best)
        self.assertAlmostEqual(best["time_ms"], 8.7142, places=3)
        self.assertEqual(best["job_id"], job_id)
        # A file larger than one request body (1 MiB) goes in several requests into one job.
        conv = os.path.join(ARGS.source_dir, "datasets", "convolution_milo-A4000.json.gz")
        p = self.ktune("import", conv)
        conv_job = int(p.stdout)
        self.assertIn("imported 4362 trials (kerneltuner file) as job %d" % conv_job, p.stderr)
        status, _, job = self.k.get("/v1/jobs/%d" % conv_job)
        self.assertEqual((job["progress"]["trials"], job["kernel"]), (4362, "convolution"))
        self.assertEqual(len(self.trials_of(conv_job)), 4362)

    def test_import_rejects_bad_files(self):
        bad = {"schema_version": "1.0.0", "results": [
            {"configuration": {"between_method": 0, "block_size_x": 33, "tile_size": 1, "use_method": 0},
             "times": {}, "invalidity": "correct", "correctness": 1,
             "measurements": [{"name": "time", "value": 1.0, "unit": "ms"}]}]}
        path = os.path.join(self.tmp, "bad-t4.json")
        with open(path, "w") as f:
            json.dump(bad, f)
        p = self.ktune("import", path, expect=USAGE)  # no kernel or device in the file
        self.assertIn("give --kernel and --device", p.stderr)
        p = self.ktune("import", path, "--kernel", "pnpoly", "--device", "replay:pnpoly_kt-RTX_3090",
                       expect=REJECTED)
        self.assertIn("trials[0].config", p.stderr)
        bad["results"][0]["invalidity"] = "maybe"
        with open(path, "w") as f:
            json.dump(bad, f)
        p = self.ktune("import", path, "--kernel", "pnpoly", "--device", "replay:pnpoly_kt-RTX_3090",
                       expect=FAILURE)
        self.assertIn("results[0].invalidity 'maybe'", p.stderr)
        p = self.ktune("import", os.path.join(self.tmp, "missing.json"), expect=FAILURE)
        self.assertIn("cannot open", p.stderr)
        # The API itself validates every field.
        status, _, body = self.k.post("/v1/imports", {
            "kernel": "pnpoly", "device": "replay:pnpoly_kt-RTX_3090",
            "trials": [{"config": {"between_method": 0, "block_size_x": 32, "tile_size": 1,
                                   "use_method": 0}, "status": "ok"}]}, headers=self.auth)
        self.assertEqual((status, body["error"]["code"]), (400, "out_of_range"), body)
        self.assertIn("time_ms", body["error"]["message"])
        status, _, body = self.k.post("/v1/imports", {"job": 999999, "trials": []}, headers=self.auth)
        self.assertEqual((status, body["error"]["code"]), (404, "not_found"), body)
        status, _, body = self.k.post("/v1/imports", {"kernel": "pnpoly"})
        self.assertEqual(status, 401, body)


if __name__ == "__main__":
    run_tests()
