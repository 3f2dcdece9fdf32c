"""Integration: the Python client (clients/python, imported from the source tree) and the deploy table
against a real ktuned (started with an API token and the kernel folders):

- a small replay job finished, then Client.best answers it as measured (its configuration is the
  job's best); a kernel with nothing tuned is a miss (None); an unknown kernel raises KtuneError 400;
- ktune.device_class() is the class ktuned gives its own cpu device (GET /v1/devices);
- gemm on the cpu "measured" through trusted imports of three problems: an untuned problem is a
  miss with accept=("measured",), the nearest tuned problem with accept=("nearest",) (the server's
  own fallback), then, with a model trained, None for measured only and the model's answer with
  accept=("predicted",);
- GET /v1/best/entries pages (limit, offset) add up to the whole list, in the same order;
- export_table (paging by 2 here) → Table.load: every entry looks up exactly as /v1/best answers,
  and an untuned problem answers the nearest problem the server names;
- `ktune best --all --format table` writes a table the Python Table and the C reader
  (clients/c/ktune_table.h, through build/test_ktune_table) load with the same answers;
- with ask/tell on the server (the `external` device), a harness timing a pure-Python function:
  `for trial in client.tune_external(...): trial.tell(ms)` until done (one ask request, then the
  batch's last tell asks for the next batch), the job's best is what
  /v1/best answers for the class, and @ktune.autotune tunes on a miss, then answers from memory,
  and a second decorated copy (another process, in effect) takes the stored best without tuning;
  another kernel_version tunes afresh and both versions' results answer.
- a harness that leaves a leased trial untold and goes away: client.attach(job) from another client goes
  on, the abandoned trial comes back after its lease, the job succeeds, the late tell is a duplicate.
  Where the server has no `external` device yet, those cases are skipped saying so.
- ktune.tune_kernel (Kernel Tuner's interface, array.array buffers: no numpy needed; the arrays and
  the answer uploaded with the kernel): a source that
  does not compile raises KtuneError kernel_invalid with the compiler's words, one that reads the
  output it writes (verified) raises with the hint that outputs start as NaN; a kernel whose B=4
  configuration computes a wrong answer, with `answer` naming the output: every configuration
  measured (brute force), the wrong one counted failed and not listed, the metric computed, and
  /v1/best answers the job's best under the registered version."""
import array
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
sys.path.insert(0, os.path.join(SOURCE, "clients", "python"))
import ktune  # noqa: E402
import ktune.client  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(ARGS.ktuned))
KTUNE = os.path.join(BUILD, "ktune")
C_READER = os.path.join(BUILD, "test_ktune_table")
TOKEN = "client-python-token"
AUTH = {"Authorization": "Bearer " + TOKEN}
CONV = ("convolution", "replay:convolution_milo-A4000")
PROBLEMS = [{"M": 64, "N": 64, "K": 64}, {"M": 128, "N": 128, "K": 128}, {"M": 256, "N": 256, "K": 256}]
UNTUNED = {"M": 100, "N": 100, "K": 100}


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--workers", "1", "--api-token", TOKEN,
                              "--kernels", os.path.join(SOURCE, "kernels")])
        cls.k.start()
        cls.tmp = tempfile.mkdtemp(prefix="ktune-client-", dir="/tmp")
        cls.client = ktune.Client("http://" + cls.k.address, token=TOKEN, timeout=30)
        cls.setup_data()

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    @classmethod
    def setup_data(cls):
        # A small replay job, finished.
        status, _, job = cls.k.post("/v1/tune", {"kernel": CONV[0], "device": CONV[1], "strategy": "random",
                                                 "seed": 3, "budget": {"evaluations": 20}}, headers=AUTH)
        assert status == 202, job
        cls.replay_job = cls.k.wait_job(job["id"], timeout=300)
        assert cls.replay_job["status"] == "succeeded", cls.replay_job
        # gemm on the cpu: three problems through trusted imports (admin token: counted as measured).
        status, _, kernels = cls.k.get("/v1/kernels")
        kernels = kernels if isinstance(kernels, list) else kernels["kernels"]
        gemm = next(x for x in kernels if x["name"] == "gemm")
        cls.gemm_default = next(d for d in gemm["devices"] if d["device"] == "cpu")["default"]
        for i, problem in enumerate(PROBLEMS):
            trials = [{"config": dict(cls.gemm_default, UNROLL=u), "status": "ok",
                       "time_ms": 1.0 + (j - i % 3) ** 2 + i} for j, u in enumerate((1, 2, 4))]
            status, _, reply = cls.k.post("/v1/imports", {"kernel": "gemm", "device": "cpu", "problem": problem,
                                                          "source": "kerneltuner", "trials": trials,
                                                          "trusted": True}, headers=AUTH)
            assert status == 201, reply
        status, _, devices = cls.k.get("/v1/devices")
        cls.cpu = next(d for d in devices["devices"] if d["name"] == "cpu")

    def server_best(self, kernel, device, problem=None, **options):
        q = {"kernel": kernel, "device": device}
        q.update({k: ",".join(map(str, v)) if isinstance(v, list) else v for k, v in (problem or {}).items()})
        q.update(options)
        return self.k.get("/v1/best?" + urllib.parse.urlencode(q), headers=AUTH)

    # --- best ---------------------------------------------------------------------------------
    def test_a_best_measured_miss_error(self):
        best = self.client.best(CONV[0], device=CONV[1])
        self.assertIsNotNone(best)
        self.assertEqual(best.source, "measured")
        self.assertEqual(best.config, self.replay_job["best"]["config"])
        self.assertAlmostEqual(best.time_ms, self.replay_job["best"]["time_ms"], places=9)
        self.assertEqual(best.kernel_hash, self.replay_job["kernel_hash"])
        self.assertIsNone(self.client.best("pnpoly", device="replay:pnpoly_kt-RTX_3090"))
        with self.assertRaises(ktune.KtuneError) as cm:
            self.client.best("nope", device=CONV[1])
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("nope", cm.exception.message)
        self.assertTrue(cm.exception.hint)

    def test_b_device_class(self):
        self.assertEqual(ktune.device_class(), self.cpu["class"])

    def test_c_nearest_then_prediction(self):
        tuned = self.client.best("gemm", device="cpu", problem=PROBLEMS[1])
        self.assertEqual((tuned.source, tuned.origin), ("imported", "imported"))  # trusted: counts
        self.assertIsNone(self.client.best("gemm", device="cpu", problem=UNTUNED))
        near = self.client.best("gemm", device="cpu", problem=UNTUNED, accept=("measured", "nearest"))
        self.assertEqual(near.source, "nearest")
        self.assertEqual(near.nearest["problem"], PROBLEMS[1])  # 100 is nearest 128 in log distance
        status, _, model = self.k.post("/v1/models", {"kernel": "gemm", "device": "cpu", "algorithm": "nearest"},
                                       headers=AUTH)
        self.assertEqual(status, 202, model)
        deadline = time.time() + 120
        while model["status"] == "training" and time.time() < deadline:
            time.sleep(0.2)
            _, _, model = self.k.get("/v1/models/%d" % model["id"], headers=AUTH)
        self.assertEqual(model["status"], "ready", model)
        self.assertIsNone(self.client.best("gemm", device="cpu", problem=UNTUNED))
        self.assertIsNone(self.client.best("gemm", device="cpu", problem=UNTUNED, accept=("measured", "nearest")))
        pred = self.client.best("gemm", device="cpu", problem=UNTUNED, accept=("measured", "predicted"))
        self.assertEqual(pred.source, "predicted")
        self.assertEqual(set(pred.config), set(self.gemm_default))
        # Its confidence (issue 31; the fixture's ktuned has no minimum: not weak).
        self.assertFalse(pred.measured)
        self.assertIs(pred.weak, False)
        self.assertEqual(pred.confidence["train_problems"], model["training"]["train_problems"])
        self.assertIn(pred.confidence["nearest_trained"]["problem"], model["training"]["trained_on"])
        weak_too = self.client.best("gemm", device="cpu", problem=UNTUNED, accept=("measured", "predicted", "weak"))
        self.assertEqual(weak_too.config, pred.config)
        for bad in (("weak",), ("measured", "strong")):
            with self.assertRaises(ValueError):
                self.client.best("gemm", device="cpu", problem=UNTUNED, accept=bad)

    # --- the deploy table -----------------------------------------------------------------------
    def test_d_entries_pages(self):
        _, _, whole = self.k.get("/v1/best/entries?limit=1000", headers=AUTH)
        pages = []
        for offset in range(0, len(whole["best"]) + 1):
            status, _, page = self.k.get("/v1/best/entries?limit=1&offset=%d" % offset, headers=AUTH)
            self.assertEqual(status, 200, page)
            pages += page["best"]
        self.assertEqual(pages, whole["best"])
        self.assertEqual(len(whole["best"]), 1 + len(PROBLEMS))
        status, _, err = self.k.get("/v1/best/entries?offset=-1", headers=AUTH)
        self.assertEqual(status, 400, err)
        self.assertIn("offset", err["error"]["message"])

    def check_table(self, table):
        # Every problem exact, as /v1/best answers it.
        for problem in PROBLEMS:
            _, _, want = self.server_best("gemm", "cpu", problem)
            got = table.lookup("gemm", self.cpu["class"], problem)
            self.assertTrue(got.exact, got)
            self.assertEqual((got.config, got.kernel_hash), (want["config"], want["kernel_hash"]))
            self.assertAlmostEqual(got.time_ms, want["time_ms"], places=9)
        conv = table.lookup(CONV[0], CONV[1], self.replay_job["problem"])
        self.assertTrue(conv.exact)
        self.assertEqual(conv.config, self.replay_job["best"]["config"])
        # An untuned problem: the nearest, the same problem the server's fallback names.
        got = table.lookup("gemm", self.cpu["class"], UNTUNED)
        self.assertFalse(got.exact)
        self.assertEqual(got.problem, PROBLEMS[1])
        self.assertGreater(got.distance, 0)
        self.assertIsNone(table.lookup("gemm", "cpu:elsewhere:512", UNTUNED))

    def test_e_export_table(self):
        path = os.path.join(self.tmp, "export.tsv")
        old = ktune.client.ENTRIES_PAGE
        ktune.client.ENTRIES_PAGE = 2  # several pages of GET /v1/best/entries
        try:
            n = self.client.export_table(path)
        finally:
            ktune.client.ENTRIES_PAGE = old
        self.assertEqual(n, 1 + len(PROBLEMS))
        table = ktune.Table.load(path)
        self.assertEqual(len(table), n)
        self.check_table(table)
        self.assertEqual(self.client.export_table(path, kernel="gemm"), len(PROBLEMS))
        self.assertEqual(len(ktune.Table.load(path)), len(PROBLEMS))

    def test_f_cli_table_both_readers(self):
        env = dict(os.environ, KTUNE_SERVER="http://" + self.k.address, KTUNE_TOKEN=TOKEN)
        p = subprocess.run([KTUNE, "best", "--all", "--format", "table"], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("%d entries in the table" % (1 + len(PROBLEMS)), p.stderr)
        path = os.path.join(self.tmp, "cli.tsv")
        with open(path, "w") as f:
            f.write(p.stdout)
        table = ktune.Table.load(path)
        self.check_table(table)
        # The C reader gives the same answers as the Python one.
        asks = [("gemm", self.cpu["class"], pr) for pr in PROBLEMS + [UNTUNED, {"M": 300, "N": 200, "K": 64}]]
        asks.append((CONV[0], CONV[1], self.replay_job["problem"]))
        asks.append(("gemm", "cpu:elsewhere:512", UNTUNED))
        for kernel, klass, problem in asks:
            c = subprocess.run([C_READER, path, kernel, klass, json.dumps(problem)], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(c.returncode, 0, c.stderr)
            py = table.lookup(kernel, klass, problem)
            if py is None:
                self.assertEqual(c.stdout.strip(), "none")
                continue
            how, distance, khash, rest = c.stdout.strip().split(" ", 3)
            c_problem, c_config = rest.split(" ", 1)
            self.assertEqual(how, "exact" if py.exact else "nearest")
            self.assertAlmostEqual(float(distance), py.distance, places=12)
            self.assertEqual((khash, json.loads(c_problem), json.loads(c_config)),
                             (py.kernel_hash, py.problem, py.config))
        # Filters, and the options --all refuses.
        p = subprocess.run([KTUNE, "best", "--all", "--kernel", "convolution"], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(ktune.Table.parse(p.stdout)), 1)
        p = subprocess.run([KTUNE, "best", "--all", "--device-class", self.cpu["class"]], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(len(ktune.Table.parse(p.stdout)), len(PROBLEMS))
        for bad in (["--format", "json"], ["--device", "cpu"]):
            p = subprocess.run([KTUNE, "best", "--all"] + bad, env=env, capture_output=True, text=True,
                               timeout=60)
            self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)

    # --- ask/tell -------------------------------------------------------------------------------
    def tune_external_or_skip(self, *args, **kw):
        """client.tune_external, or the case skipped when this ktuned has no ask/tell yet (it refuses
        the external device or the inline space as unknown)."""
        try:
            return self.client.tune_external(*args, **kw)
        except ktune.KtuneError as e:
            if e.status == 400 and e.code in ("unknown_device", "unknown_field"):
                self.skipTest("this ktuned has no external device (ask/tell, issue 27 section 3) yet: %s"
                              % e.message)
            raise

    @staticmethod
    def work(n, block=1, unroll=1):
        """A pure-Python function whose time depends on its configuration: fastest at block 64."""
        total = 0
        steps = n * (1 + abs(block - 64) // 16) // unroll
        for i in range(steps):
            total += i & block
        return total

    def test_g_tune_external_loop(self):
        klass = "external:client-test"
        space = {"block": [16, 32, 64, 128], "unroll": [1, 2]}
        run = self.tune_external_or_skip("py_work", space, problem={"n": 2000}, device_class=klass,
                                        strategy="random", budget=6, n=2, seed=5)
        told, calls = [], []
        call = run.client._conn.call

        def counted(method, path, body=None, **kw):
            calls.append((path.rsplit("/", 1)[-1], "ask" in (body or {})))
            return call(method, path, body, **kw)

        run.client._conn.call = counted
        for trial in run:
            start = time.perf_counter()
            self.work(2000, **trial.config)
            ms = (time.perf_counter() - start) * 1000
            self.assertEqual(trial.tell(ms), "recorded")
            self.assertEqual(trial.tell(ms), "duplicate")  # a tell is idempotent per trial
            told.append((trial.config, ms))
        self.assertEqual(len(told), 6)
        # One ask request; then the last tell of each batch of 2 asked for the next (the third's
        # answered done), and the repeated tells did not ask.
        self.assertEqual(calls, [("ask", False)] + [("tell", False), ("tell", False), ("tell", True),
                                                     ("tell", False)] * 3, calls)
        run.client._conn.call = call
        job = run.job()
        self.assertEqual(job["status"], "succeeded", job)
        best = run.best
        self.assertEqual(best["config"], min(told, key=lambda t: t[1])[0])
        found = self.client.best("py_work", device_class=klass, problem={"n": 2000})
        self.assertIsNotNone(found)
        self.assertEqual(found.config, best["config"])
        # The external result goes into the deploy table like any other.
        path = os.path.join(self.tmp, "external.tsv")
        self.assertEqual(self.client.export_table(path, kernel="py_work"), 1)
        row = ktune.Table.load(path).lookup("py_work", klass, {"n": 2000})
        self.assertTrue(row.exact)
        self.assertEqual((row.config, row.kernel_hash), (best["config"], found.kernel_hash))
        self.assertFalse(ktune.Table.load(path).lookup("py_work", klass, {"n": 4000}).exact)

    def test_g2_harness_comes_back(self):
        klass = "external:client-resume"
        run = self.tune_external_or_skip("py_resume", {"block": [16, 32, 64, 128]}, problem={"n": 500},
                                         device_class=klass, strategy="random", budget=3, seed=9,
                                         lease_s=1, wait_s=2)
        first = next(iter(run))  # leased, never told: the harness "crashes" here
        again = ktune.Client("http://" + self.k.address, token=TOKEN).attach(run.job_id, lease_s=5, wait_s=2)
        self.assertEqual(again.job_id, run.job_id)
        configs = []
        for trial in again:
            configs.append(trial.config)
            self.assertEqual(trial.tell(1.0 + trial.config["block"] / 100.0), "recorded")
        self.assertEqual(len(configs), 3)
        self.assertIn(first.config, configs)  # the abandoned configuration came back after its lease
        self.assertEqual(again.job()["status"], "succeeded")
        # The same trial (one id) was offered again and told by the second harness: a late tell of
        # the first is a duplicate, and a tell once the job has ended records nothing.
        self.assertEqual(first.tell(0.5), "duplicate")
        with self.assertRaises(ValueError):
            self.client.attach(self.replay_job["id"])

    def test_i_tune_kernel(self):
        n = 4096
        y, x = array.array("f", [0.0] * n), array.array("f", [float(i % 7) for i in range(n)])
        with self.assertRaises(ktune.KtuneError) as cm:
            ktune.tune_kernel("tk_broken", "void tk_broken(float *y, const float *x, int n)\n"
                              "{ y[0] = undefined_name_q; }\n", n, [y, x, n], {"B": [1]},
                              client=self.client, timeout=120)
        self.assertEqual(cm.exception.code, "kernel_invalid", cm.exception)
        self.assertIn("undefined_name_q", str(cm.exception))
        # A kernel that reads the buffer it writes, verified: its output starts as NaN; the hint says so.
        with self.assertRaises(ktune.KtuneError) as cm, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ktune.tune_kernel("tk_inout", "void tk_inout(float *y, const float *x, int n)\n"
                              "{ for (int i = 0; i < n; i++) y[i] += B * x[i]; }\n", n, [y, x, n],
                              {"B": [1]}, answer=[x, None, None], client=self.client, timeout=120)
        self.assertIn("wrong_result", cm.exception.message)
        self.assertIn("NaN", cm.exception.hint)
        src = """void tk_twice(float *y, const float *x, int n)
{
    for (int i = 0; i < n; i += B)
        for (int j = i; j < i + B && j < n; j++)
            y[j] = (B == 4 ? 3.0f : 2.0f) * x[j];   /* B = 4 is wrong on purpose */
}
"""
        twice = array.array("f", [2 * v for v in x])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results, env = ktune.tune_kernel("tk_twice", src, n, [y, x, n], {"B": [1, 2, 4]},
                                             answer=[twice, None, None],
                                             metrics={"GB/s": "8*n / (time*1e6)"},
                                             client=self.client, timeout=120)
        self.assertEqual([str(w.message) for w in caught], [])  # the data travelled: nothing to warn
        self.assertEqual((env["verify"], env["uploaded"], env["strategy"], env["failed"]),
                         ("answer", True, "exhaustive", 1), env)
        self.assertEqual(sorted(r["B"] for r in results), [1, 2], results)
        for r in results:
            self.assertGreater(r["time"], 0)
            self.assertAlmostEqual(r["GB/s"], 8 * n / (r["time"] * 1e6), delta=1e-6 * r["GB/s"])
        self.assertIn(env["best"]["config"], [{"B": 1}, {"B": 2}])
        b = self.client.best("tk_twice", device="cpu", problem=env["problem"])
        self.assertEqual((b.kernel_version, b.config), (env["kernel_version"], env["best"]["config"]))
        # The answer is compared, so it is the caller's data the kernel computed on: x's own
        # values as the answer (2*x expected) fail at the default configuration.
        with self.assertRaises(ktune.KtuneError) as cm:
            ktune.tune_kernel("tk_twice", src, n, [y, x, n], {"B": [1, 2, 4]},
                              answer=[x, None, None], client=self.client, timeout=120)
        self.assertIn("wrong_result", cm.exception.message)
        self.assertIn("differs from answer", cm.exception.hint)
        # Past the data cap the arrays do not travel: inputs drawn like them, a warning says so.
        big = array.array("f", [1.0]) * (ktune.kernel_tuner.DATA_CAP // 4 + 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            spec, _, notes = ktune.kernel_tuner.build_spec("tk_big", src, len(big),
                                                           [array.array("f", big), big, len(big)],
                                                           {"B": [1]}, answer=[big, None, None])
        self.assertEqual((notes["uploaded"], notes["verify"], notes["data"]), (False, "default", {}))
        self.assertEqual(spec["buffers"][1]["init"], {"kind": "constant", "value": 1.0})
        self.assertIn("DATA_CAP", str(caught[0].message))

    def test_h_autotune(self):
        probe = self.tune_external_or_skip("py_probe", {"a": [1]}, device_class="external:probe", budget=1)
        self.k.request("DELETE", "/v1/jobs/%d" % probe.job_id, headers=AUTH)
        klass = "external:client-autotune"
        calls = []

        def make(version="v1"):
            @ktune.autotune(space={"block": [16, 64, 128], "unroll": [1, 2]}, key=["n"], budget=4,
                            warmup=0, repeats=1, kernel="py_autotuned", device_class=klass,
                            client=self.client, strategy="random", kernel_version=version)
            def work(n, block=1, unroll=1):
                calls.append((block, unroll))
                return self.work(n, block, unroll)
            return work

        f = make()
        f(1500)
        self.assertEqual(len(f.jobs), 1)  # a miss: tuned through ask/tell
        tuned_calls = len(calls)
        self.assertGreaterEqual(tuned_calls, 5)  # 4 timed trials, then the call itself
        config = f.cache['{"n": 1500}']
        self.assertEqual(calls[-1], (config["block"], config["unroll"]))
        f(1500)
        self.assertEqual(len(calls), tuned_calls + 1)  # from memory: no tuning, one call
        g = make()  # another process, in effect: the stored best, no job
        g(1500)
        self.assertEqual(g.jobs, {})
        self.assertEqual(g.cache['{"n": 1500}'], config)
        # Another version of the code: its own results, tuned afresh; the first version's stay.
        h = make("v2")
        h(1500)
        self.assertEqual(len(h.jobs), 1)
        v1 = self.client.best("py_autotuned", device_class=klass, problem={"n": 1500}, kernel_version="v1")
        self.assertEqual((v1.config, v1.kernel_version), (config, "v1"))
        v2 = self.client.best("py_autotuned", device_class=klass, problem={"n": 1500}, kernel_version="v2")
        self.assertEqual((v2.config, v2.kernel_version), (h.cache['{"n": 1500}'], "v2"))


if __name__ == "__main__":
    run_tests()
