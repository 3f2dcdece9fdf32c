"""Integration (issue 27, section 6): a genuine Kernel Tuner cache — the shared pnpoly and
convolution caches with their "space" name removed, so that no catalog kernel or replay device
matches — imports with `ktune import` under its own kernel_name on the device external: the job
succeeds with every cache entry as a trial, GET /v1/best (and `ktune best --device external`)
answers the cache's best time, untrusted as "imported" only, trusted also for source=measured and
as a warm-start source of a later ask/tell job of the same kernel. Missing fields are named, with
a hint; POST /v1/imports checks the inline space like POST /v1/tune; a model of an external key
whose problems are numbers learns from trusted imports in the stored space and answers a problem
never tuned, a key of list problems (problem_size) too, element by element."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
KTUNE = os.path.join(os.path.dirname(os.path.abspath(ARGS.ktuned)), "ktune")
TOKEN = "import-external-token"
AUTH = {"Authorization": "Bearer " + TOKEN}
SHARED = os.path.join(ARGS.source_dir, "..", "shared", "data", "gpu-spaces")
OK, FAILURE, USAGE, REJECTED = 0, 1, 2, 4


def shared_cache(name):
    for folder in (SHARED, os.path.join(ARGS.source_dir, "datasets")):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with gzip.open(path) as f:
                return json.load(f)
    raise unittest.SkipTest("no %s in the shared data or datasets/" % name)


def best_time(cache):
    return min(r["time"] for r in cache["cache"].values()
               if isinstance(r["time"], (int, float)) and 0 < r["time"] < 1e20)


class ImportExternalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--api-token", TOKEN])
        cls.k.start()
        cls.tmp = tempfile.mkdtemp(prefix="ktune-import-ext-", dir="/tmp")

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def ktune(self, *args, expect=OK):
        env = dict(os.environ, KTUNE_SERVER="http://" + self.k.address, KTUNE_TOKEN=TOKEN)
        p = subprocess.run([KTUNE] + list(args), env=env, capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, expect, "ktune %s\nstdout: %s\nstderr: %s"
                         % (" ".join(args), p.stdout[-2000:], p.stderr[-2000:]))
        return p

    def write(self, name, doc):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def plain(self, name, keep_restrictions=False):
        """A shared cache as Kernel Tuner itself writes it: no "space" name (nor ktune's added
        restrictions, unless kept)."""
        doc = shared_cache(name)
        doc.pop("space")
        if not keep_restrictions:
            doc.pop("restrictions", None)
        return doc

    def best(self, kernel, klass, **query):
        q = dict(kernel=kernel, device="external", device_class=klass, **query)
        return self.k.get("/v1/best?" + urllib.parse.urlencode(q))

    def test_genuine_cache_imports_as_external_kernel(self):
        doc = self.plain("pnpoly_kt-RTX_3090.json.gz")
        p = self.ktune("import", self.write("pnpoly.json", doc))
        job_id = int(p.stdout)
        self.assertIn("the %d recorded configurations" % len(doc["cache"]), p.stderr)
        status, _, job = self.k.get("/v1/jobs/%d" % job_id)
        self.assertEqual(status, 200, job)
        self.assertEqual((job["status"], job["kernel"], job["device"], job["device_class"]),
                         ("succeeded", "cn_pnpoly", "external", "NVIDIA_GeForce_RTX_3090"))
        self.assertTrue(job["kernel_hash"].startswith("space:"), job["kernel_hash"])
        self.assertEqual(job["problem"], {"problem_size": 20000000})
        self.assertEqual(job["progress"]["trials"], len(doc["cache"]))
        self.assertEqual(len(self.k.all_trials(job_id)), len(doc["cache"]))
        # The best recorded time answers a plain lookup, as an (untrusted) import.
        status, _, best = self.best("cn_pnpoly", "NVIDIA_GeForce_RTX_3090", problem_size=20000000)
        self.assertEqual(status, 200, best)
        self.assertAlmostEqual(best["time_ms"], best_time(doc), places=6)
        self.assertEqual((best["origin"], best["job_id"], best["kernel_version"]),
                         ("imported", job_id, job["kernel_hash"]))
        status, _, miss = self.best("cn_pnpoly", "NVIDIA_GeForce_RTX_3090", problem_size=20000000,
                                    source="measured")
        self.assertEqual((status, miss["error"]["code"]), (404, "no_best"), miss)
        p = self.ktune("best", "--kernel", "cn_pnpoly", "--device", "external", "--device-class",
                       "NVIDIA_GeForce_RTX_3090", "--problem", "problem_size=20000000")
        self.assertEqual(json.loads(p.stdout), best["config"])
        # ktune's own export of that job imports back under the same key (class and version).
        exported = os.path.join(self.tmp, "exported.json")
        self.ktune("export", str(job_id), "--format", "kerneltuner", "-o", exported)
        p = self.ktune("import", exported)
        status, _, again = self.k.get("/v1/jobs/%d" % int(p.stdout))
        self.assertEqual((again["kernel"], again["device_class"], again["kernel_hash"],
                          again["problem"], again["progress"]["trials"]),
                         ("cn_pnpoly", "NVIDIA_GeForce_RTX_3090", job["kernel_hash"],
                          job["problem"], len(doc["cache"])))
        # Importing the same file again with --device-class files it under that class instead.
        p = self.ktune("import", self.write("pnpoly.json", doc), "--device-class", "lab-3090")
        status, _, best2 = self.best("cn_pnpoly", "lab-3090", problem_size=20000000)
        self.assertEqual((status, best2["job_id"]), (200, int(p.stdout)), best2)

    def test_restrictions_make_the_space_and_trust_counts(self):
        doc = self.plain("convolution_milo-A4000.json.gz", keep_restrictions=True)
        p = self.ktune("import", self.write("conv.json", doc), "--trusted")
        job_id = int(p.stdout)
        self.assertIn("the file's %d restrictions" % len(doc["restrictions"]), p.stderr)
        status, _, job = self.k.get("/v1/jobs/%d" % job_id)
        self.assertEqual((job["status"], job["kernel"], job["device_class"],
                          job["progress"]["trials"]),
                         ("succeeded", "convolution_kernel", "NVIDIA_RTX_A4000", len(doc["cache"])))
        # Trusted: it counts as measured.
        status, _, best = self.best("convolution_kernel", "NVIDIA_RTX_A4000",
                                    problem_size="4096,4096", source="measured")
        self.assertEqual(status, 200, best)
        self.assertAlmostEqual(best["time_ms"], best_time(doc), places=6)
        # A later ask/tell job of the same kernel (another class) starts warm from it.
        space = {"parameters": [{"name": k, "values": doc["tune_params"][k]}
                                for k in doc["tune_params_keys"]],
                 "restrictions": doc["restrictions"]}
        status, _, tuned = self.k.post("/v1/tune", {
            "kernel": "convolution_kernel", "device": "external", "device_class": "my-gpu",
            "space": space, "problem": {"problem_size": [4096, 4096]}, "strategy": "random",
            "budget": {"evaluations": 4}}, headers=AUTH)
        self.assertEqual(status, 202, tuned)
        self.assertEqual(tuned["kernel_hash"], job["kernel_hash"])  # the same space, the same hash
        status, _, asked = self.k.post("/v1/jobs/%d/ask" % tuned["id"], {"n": 1}, headers=AUTH)
        self.assertEqual(status, 200, asked)
        later = self.k.wait_job(tuned["id"], predicate=lambda j: j["history"]["recorded"],
                                timeout=60)
        sources = [s["device_class"] for s in later["history"]["sources"]]
        self.assertIn("NVIDIA_RTX_A4000", sources, later["history"])

    def test_model_of_external_key(self):
        """A predictor of an external key whose problems are numbers learns from trusted imports in
        the key's stored space and answers a problem never tuned."""
        space = {"parameters": [{"name": "bs", "values": [32, 64, 128, 256]}],
                 "restrictions": ["bs <= n"]}
        for n, bs in ((128, 64), (1024, 64)):
            trials = [{"config": {"bs": b}, "status": "ok", "time_ms": 1.0 if b == bs else 2.0 + b}
                      for b in (32, 64, 128, 256) if b <= n]
            status, _, made = self.k.post("/v1/imports", {
                "kernel": "scaled", "device": "external", "device_class": "lab-gpu", "space": space,
                "problem": {"n": n}, "trusted": True, "trials": trials}, headers=AUTH)
            self.assertEqual(status, 201, made)
        status, _, model = self.k.post("/v1/models", {
            "kernel": "scaled", "device": "external", "device_class": "lab-gpu",
            "algorithm": "nearest"}, headers=AUTH)
        self.assertEqual(status, 202, model)
        self.assertEqual((model["kernel_hash"], model["toolchain"]),
                         (made["job"]["kernel_hash"], "external"))
        deadline = time.time() + 120
        while model["status"] == "training" and time.time() < deadline:
            time.sleep(0.2)
            model = self.k.get("/v1/models/%d" % model["id"])[2]
        self.assertEqual(model["status"], "ready", model)
        self.assertEqual(model["training"]["problems"], 2, model)
        # n=900 was never tuned: the model answers what both tuned problems found best.
        status, _, pred = self.best("scaled", "lab-gpu", n=900)
        self.assertEqual(status, 200, pred)
        self.assertEqual((pred["source"], pred["model"]["id"], pred["config"],
                          pred["kernel_version"]),
                         ("predicted", model["id"], {"bs": 64}, made["job"]["kernel_hash"]))
        status, _, pred = self.best("scaled", "lab-gpu", n=900, source="predicted")
        self.assertEqual((status, pred["source"]), (200, "predicted"), pred)
        status, _, miss = self.best("scaled", "lab-gpu", n=900, source="measured")
        self.assertEqual((status, miss["error"]["code"]), (404, "no_best"), miss)
        status, _, hit = self.best("scaled", "lab-gpu", n=128)
        self.assertEqual((status, hit["source"], hit["config"]), (200, "imported", {"bs": 64}), hit)
        # ktune train takes the device external with its class.
        p = self.ktune("train", "--kernel", "scaled", "--device", "external", "--device-class",
                       "lab-gpu", "--algorithm", "nearest", "--wait", "--json")
        again = json.loads(p.stdout)
        self.assertEqual((again["status"], again["version"], again["toolchain"]),
                         ("ready", 2, "external"), again)

    def test_model_of_list_problems(self):
        """Kernel Tuner's problem_size is a list: a model learns from it element by element
        ("problem_size[0]", "problem_size[1]") and answers a list problem never tuned."""
        space = {"parameters": [{"name": "bs", "values": [32, 64, 128, 256]}]}
        for size, bs in (([128, 64], 32), ([1024, 64], 32), ([128, 4096], 256),
                         ([1024, 4096], 256)):
            trials = [{"config": {"bs": b}, "status": "ok", "time_ms": 1.0 if b == bs else 2.0 + b}
                      for b in (32, 64, 128, 256)]
            status, _, made = self.k.post("/v1/imports", {
                "kernel": "listed", "device": "external", "device_class": "lab-gpu", "space": space,
                "problem": {"problem_size": size}, "trusted": True, "trials": trials},
                headers=AUTH)
            self.assertEqual(status, 201, made)
        status, _, model = self.k.post("/v1/models", {
            "kernel": "listed", "device": "external", "device_class": "lab-gpu",
            "algorithm": "nearest"}, headers=AUTH)
        self.assertEqual(status, 202, model)
        deadline = time.time() + 120
        while model["status"] == "training" and time.time() < deadline:
            time.sleep(0.2)
            model = self.k.get("/v1/models/%d" % model["id"])[2]
        self.assertEqual(model["status"], "ready", model)
        self.assertEqual(model["training"]["problems"], 4, model)
        # Never tuned: the nearest problems decide (the second element is what matters here).
        for size, want in (("900,100", 32), ("200,3000", 256)):
            status, _, pred = self.best("listed", "lab-gpu", problem_size=size)
            self.assertEqual((status, pred.get("source"), pred.get("config")),
                             (200, "predicted", {"bs": want}), pred)
        # A list of another length is not a problem this model knows: no prediction, a miss.
        status, _, miss = self.best("listed", "lab-gpu", problem_size="900,100,5")
        self.assertNotEqual((status, miss.get("source")), (200, "predicted"), miss)

    def test_missing_fields_are_named(self):
        base = self.plain("pnpoly_kt-RTX_3090.json.gz")
        cases = [("kernel_name", "kernel_name is missing", "--kernel"),
                 ("device_name", "device_name is missing", "--device-class"),
                 ("tune_params_keys", "tune_params_keys is missing", "tune_params_keys")]
        for field, message, hint in cases:
            doc = dict(base)
            doc.pop(field)
            p = self.ktune("import", self.write("bad.json", doc), expect=FAILURE)
            self.assertIn(message, p.stderr)
            self.assertIn("hint: ", p.stderr)
            self.assertIn(hint, p.stderr.split("hint: ", 1)[1])
        doc = json.loads(json.dumps(base))
        doc["tune_params"].pop("tile_size")
        p = self.ktune("import", self.write("bad.json", doc), expect=FAILURE)
        self.assertIn('tune_params["tile_size"] is missing', p.stderr)
        doc = json.loads(json.dumps(base))
        key = next(iter(doc["cache"]))
        del doc["cache"][key]["time"]
        p = self.ktune("import", self.write("bad.json", doc), expect=FAILURE)
        self.assertIn('cache["%s"].time is missing' % key, p.stderr)
        # Without device_name, --device-class says what device_name would have.
        doc = dict(base)
        doc.pop("device_name")
        self.ktune("import", self.write("bad.json", doc), "--device-class", "lab-class")

    def test_api_checks_the_inline_space(self):
        space = {"parameters": [{"name": "bs", "values": [32, 64]}]}
        trial = {"config": {"bs": 32}, "status": "ok", "time_ms": 1.5}
        body = {"kernel": "mine", "device": "external", "space": space, "trials": [trial]}
        status, _, err = self.k.post("/v1/imports", body, headers=AUTH)
        self.assertEqual((status, err["error"]["code"]), (400, "missing_field"), err)
        self.assertIn("device_class", err["error"]["message"])
        body["device_class"] = "lab"
        status, _, err = self.k.post("/v1/imports", dict(body, space={"parameters": [
            {"name": "bs", "values": [32, 64]}], "restrictions": ["bs && 1"]}), headers=AUTH)
        self.assertEqual((status, err["error"]["code"]), (400, "bad_space"), err)
        self.assertIn("space.restrictions[0]", err["error"]["message"])
        status, _, err = self.k.post("/v1/imports", dict(body, space=dict(
            space, configurations=[[64]]), trials=[trial]), headers=AUTH)
        self.assertEqual(status, 400, err)
        self.assertIn("trials[0].config", err["error"]["message"])
        status, _, err = self.k.post("/v1/imports", dict(body, device="replay:pnpoly_kt-RTX_3090",
                                                         kernel="pnpoly"), headers=AUTH)
        self.assertEqual((status, err["error"]["code"]), (400, "bad_request"), err)
        status, _, made = self.k.post("/v1/imports", dict(body, kernel_version="v1"), headers=AUTH)
        self.assertEqual(status, 201, made)
        self.assertEqual((made["job"]["kernel_hash"], made["inserted"]), ("v1", 1))
        # The job keeps its space: more trials can be added to it.
        status, _, more = self.k.post("/v1/imports", {"job": made["job"]["id"], "trials": [
            {"config": {"bs": 64}, "status": "ok", "time_ms": 1.0}]}, headers=AUTH)
        self.assertEqual((status, more["inserted"]), (200, 1), more)
        status, _, best = self.best("mine", "lab", kernel_version="v1")
        self.assertEqual((status, best["config"]), (200, {"bs": 64}), best)
        # Models of external keys: a key with no job to learn from is a 404, a surrogate a 400.
        status, _, err = self.k.post("/v1/models", {"kernel": "nothing", "device": "external",
                                                    "device_class": "lab"}, headers=AUTH)
        self.assertEqual((status, err["error"]["code"]), (404, "no_best"), err)
        status, _, err = self.k.post("/v1/models", {"kernel": "mine", "device": "external",
                                                    "device_class": "lab", "kind": "surrogate"},
                                     headers=AUTH)
        self.assertEqual((status, err["error"]["code"]), (400, "bad_request"), err)


if __name__ == "__main__":
    run_tests()
