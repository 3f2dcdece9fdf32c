"""Integration (issue 27, data with a kernel): a kernel registered over HTTP with the caller's own data
files (POST /v1/kernels "data": base64, a dtype each). The kernel copies its input to its output
(U = 4 writes twice the input: wrong on purpose), its input is the uploaded x.bin and its output is
checked against the uploaded answer y.bin: with the true answer it validates to ready and tunes, U 1
and 2 ok, U 4 a wrong_result trial — only the uploaded values pass, so they are what the kernel saw.
With a wrong answer the default configuration does not verify: the version is invalid, its log says
wrong_result (a status, not a crash). Data past the cap is 413 naming the file and the cap; a data
file of another length than its buffer is refused at submit (the default problem) and a tune request
whose problem makes the buffer another length is 400 bad_problem naming the buffer and both counts;
the same bytes are the same version, other data alone another version; the data is stored with its
version (sql/021), from where the catalog loads it (a stored kernel reaches the catalog only so)."""
import base64
import hashlib
import os
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
N = 256
SPEC = {
    "name": "vcopy",
    "summary": "y = x, x the caller's",
    "problem": [{"name": "n", "min": 1, "max": 4096, "default": N}],
    "buffers": [{"name": "y", "elements": "n", "role": "output"},
                {"name": "x", "elements": "n", "role": "input",
                 "init": {"kind": "data", "file": "x.bin"}}],
    "flops": "0",
    "tolerance": {"rtol": 0, "atol": 0},
    "verify": {"kind": "answer", "buffers": {"y": {"file": "y.bin"}}},
    "variants": {"cpu": {"source": "cpu.c", "parameters": [{"name": "U", "values": [1, 2, 4]}],
                         "restrictions": [], "default": {"U": 1}}},
}
CPU = """int ktune_kernel(float *const *b, const long long *p);
int ktune_kernel(float *const *b, const long long *p)
{
    for (long long i = 0; i < p[0]; i++)
        b[0][i] = (U == 4 ? 2.0f : 1.0f) * b[1][i];
    return 0;
}
"""


def floats(values):
    return {"dtype": "f32", "encoding": "base64",
            "data": base64.b64encode(struct.pack("<%df" % len(values), *values)).decode()}


# values no random fill would give: the kernel sees the caller's data or fails verification
X = [7.0 + 0.5 * i for i in range(N)]


class KernelDataTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--workers", "1", "--min-seconds", "0.01"])
        cls.k.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def submit(self, data, spec=SPEC, expect=201):
        status, _, body = self.k.post("/v1/kernels", {"spec": spec, "files": {"cpu.c": CPU},
                                                      "data": data})
        self.assertEqual(status, expect, body)
        return body

    def wait_status(self, name, version, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, _, body = self.k.get("/v1/kernels/" + name)
            for v in body.get("versions", []):
                if v["version"] == version and v["status"] in ("ready", "invalid"):
                    time.sleep(0.6)  # each process's copy is refreshed at most every 500 ms
                    return v
            time.sleep(0.1)
        raise AssertionError("%s %s was not validated" % (name, version))

    def test_a_uploaded_data_is_what_the_kernel_sees(self):
        good = self.submit({"x.bin": floats(X), "y.bin": floats(X)})
        again = self.submit({"x.bin": floats(X), "y.bin": floats(X)}, expect=200)
        self.assertEqual(again["version"], good["version"])  # the same bytes, the same version
        v = self.wait_status("vcopy", good["version"])
        self.assertEqual(v["status"], "ready", v)
        # the version lists its data without the bytes: dtype, size, SHA-256
        x_bytes = struct.pack("<%df" % N, *X)
        self.assertEqual(v["data"]["x.bin"], {"dtype": "f32", "bytes": 4 * N,
                                              "sha256": hashlib.sha256(x_bytes).hexdigest()}, v)
        self.assertEqual(sorted(v["data"]), ["x.bin", "y.bin"])
        status, _, job = self.k.post("/v1/tune", {"kernel": "vcopy", "device": "cpu",
                                                  "strategy": "exhaustive",
                                                  "budget": {"evaluations": 3}})
        self.assertEqual(status, 202, job)
        done = self.k.wait_job(job["id"], timeout=120)
        self.assertEqual(done["status"], "succeeded", done)
        trials = [t for t in self.k.all_trials(job["id"]) if t.get("final_round") is None]
        by_u = {t["config"]["U"]: t for t in trials}
        self.assertEqual(sorted(by_u), [1, 2, 4], trials)
        for u in (1, 2):
            self.assertEqual(by_u[u]["status"], "ok", by_u[u])
            self.assertEqual(by_u[u]["extras"]["verified"], "answer", by_u[u])
            self.assertEqual(by_u[u]["extras"]["max_abs_err"], 0, by_u[u])
        self.assertEqual(by_u[4]["status"], "wrong_result", by_u[4])  # a trial's status
        self.assertEqual(done["best"]["config"]["U"] in (1, 2), True, done)
        # the stored row holds the data (sql/021), canonical
        rows = self.k.psql("SELECT data->'x.bin'->>'dtype', data->'y.bin'->>'encoding',"
                           " length(data->'x.bin'->>'data') FROM kernel_versions"
                           " WHERE version = '%s'" % good["version"])
        self.assertEqual(rows.split("|")[:2], ["f32", "base64"], rows)

        # a wrong answer: the default configuration does not verify, the version is invalid
        wrong = self.submit({"x.bin": floats(X), "y.bin": floats([x + 1 for x in X])})
        self.assertNotEqual(wrong["version"], good["version"])  # the answer alone: another version
        v = self.wait_status("vcopy", wrong["version"])
        self.assertEqual(v["status"], "invalid", v)
        self.assertIn("wrong_result", v["log"])
        # other input data alone: another version too
        other = self.submit({"x.bin": floats([x + 1 for x in X]), "y.bin": floats(X)})
        self.assertNotIn(other["version"], (good["version"], wrong["version"]))

    def test_b_length_mismatch_names_the_buffer(self):
        # submit time: the default problem (n = 256) against 255 elements
        body = self.submit({"x.bin": floats(X[:-1]), "y.bin": floats(X)}, expect=400)
        self.assertEqual(body["error"]["code"], "kernel_invalid", body)
        self.assertIn("buffers.x: for this problem the buffer has 256 f32 elements (elements = n), "
                      "but its data file x.bin holds 255 (1020 bytes)", body["error"]["message"])
        # tune time: a problem the data was not made for
        spec = dict(SPEC, name="vcopy2")
        ok = self.submit({"x.bin": floats(X), "y.bin": floats(X)}, spec=spec)
        self.assertEqual(self.wait_status("vcopy2", ok["version"])["status"], "ready")
        status, _, body = self.k.post("/v1/tune", {"kernel": "vcopy2", "device": "cpu",
                                                   "problem": {"n": 100},
                                                   "budget": {"evaluations": 1}})
        self.assertEqual((status, body["error"]["code"]), (400, "bad_problem"), body)
        self.assertIn("buffers.y: for this problem the buffer has 100 f32 elements", body["error"]["message"])
        self.assertIn("its data file y.bin holds 256", body["error"]["message"])

    def test_c_caps_and_field_paths(self):
        big = {"dtype": "u8", "encoding": "base64",
               "data": base64.b64encode(bytes(600 * 1024)).decode()}
        body = self.submit({"x.bin": floats(X), "y.bin": floats(X), "big.bin": big}, expect=413)
        self.assertEqual(body["error"]["code"], "body_too_large", body)
        self.assertIn("data.big.bin.data", body["error"]["message"])
        self.assertIn("524288 bytes (512 KiB)", body["error"]["message"])
        body = self.submit({"x.bin": dict(floats(X), dtype="f64"), "y.bin": floats(X)}, expect=400)
        self.assertIn("spec: buffers[1].init.file: data file 'x.bin' holds f64 values, the buffer "
                      "is f32", body["error"]["message"])
        body = self.submit({"x.bin": floats(X), "y.bin": dict(floats(X), data="not base64!")},
                           expect=400)
        self.assertIn("data.y.bin.data: not base64 at character", body["error"]["message"])
        body = self.submit({"x.bin": floats(X)}, expect=400)
        self.assertIn("spec: verify.buffers.y.file: 'y.bin' is not among the kernel's \"data\"",
                      body["error"]["message"])
        body = self.submit({"x.bin": floats(X), "y.bin": floats(X), "z.bin": floats(X)},
                           expect=400)
        self.assertIn("data.z.bin: not used", body["error"]["message"])


if __name__ == "__main__":
    run_tests()
