"""Integration (issue 27, kernels are data): a kernel registered over HTTP with its sources inline.
POST /v1/kernels answers 201 with name, version (the hash of the spec and every compiled byte) and
status validating (200 with the same version when posted again); a worker validates it to ready, or
to invalid with the compiler's log; every spec or file error names its field path; size caps are
413; the kernels scope is enforced. It tunes on cpu under its version; an edited source is a second
version: both listed by GET /v1/kernels/{name}, both jobs' results kept, /v1/best answering the
newest version with results and naming it. A tune request on an invalid version is 400 kernel_invalid
with the log, on a validating one 409 kernel_validating. A kernel folder whose included header is
edited is a new version without a restart, and a folder added under --kernels after start is
tunable without one."""
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
SCALE = os.path.join(SOURCE, "tests", "kernels", "scale")
TOKEN = "kernels-test-admin-token-0123456789"

SPEC = {
    "name": "vscale",
    "summary": "y = 3*x",
    "problem": [{"name": "n", "min": 1, "max": 1 << 20, "default": 4096}],
    "buffers": [{"name": "x", "elements": "n", "role": "input"},
                {"name": "y", "elements": "n", "role": "output"}],
    "flops": "n",
    "tolerance": {"rtol": 1e-6, "atol": 1e-7},
    "reference": {"kind": "c", "source": "reference.c"},
    "variants": {"cpu": {"source": "cpu.c", "parameters": [{"name": "U", "values": [1, 2, 4]}],
                         "restrictions": [], "default": {"U": 1}}},
    "test_problem": {"n": 1024},
}
CPU = """#include "vscale.h"
int ktune_kernel(float *const *b, const long long *p);
int ktune_kernel(float *const *b, const long long *p)
{
    long long i = 0, n = p[0];
    for (; i + U <= n; i += U)
        for (int u = 0; u < U; u++)
            b[1][i + u] = FACTOR * b[0][i + u];
    for (; i < n; i++)
        b[1][i] = FACTOR * b[0][i];
    return 0;
}
"""
HEADER = "#define FACTOR 3.0f\n"
CUDA = """extern "C" __global__ void vscale_kernel(float *x, float *y, long long n)
{
    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (i >= n)
        return;
    y[i] = 3.0f * x[i];
}
"""
REFERENCE = """int ktune_reference(float *const *b, const long long *p);
int ktune_reference(float *const *b, const long long *p)
{
    for (long long i = 0; i < p[0]; i++)
        b[1][i] = 3.0f * b[0][i];
    return 0;
}
"""
FILES = {"cpu.c": CPU, "vscale.h": HEADER, "reference.c": REFERENCE}


HOSTILE = r"""/* A submitted kernel trying, per ATTACK, what it must not do; 0 (ok) when the attempt
 * worked, 1 (invalid) when it was refused. ATTACK -1 (the default) only computes y = 2*x. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int ktune_kernel(float *const *b, const long long *p);
static int attempt(void)
{
    int fd = -1, ok = 0;
    DIR *d = 0;
    switch (ATTACK) {
    case 0: fd = open(OTHER_SOURCE, O_WRONLY); break;                   /* rewrite another version */
    case 1: fd = open(SOURCES "/planted.c", O_WRONLY | O_CREAT, 0644); break; /* plant a source */
    case 2: fd = open(DATA "/pg-ktune.secret", O_RDONLY); break;        /* the database password */
    case 3: d = opendir(DATA "/pg"); ok = d != 0; if (d) closedir(d); return ok; /* its files */
    case 4: fd = open(OTHER_SOURCE, O_RDONLY); break;                   /* read another kernel */
    case 6: { /* connect to ktuned's API (its own network namespace: only a loopback, down) */
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PORT)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0)
            close(fd);
        return ok;
    }
    case 5: { /* a source's transient copy in the compile cache (src.*): only while it compiles;
               * the shared folder, and its version's own (a root ktuned: <cache>-users/<uid>) */
        char own[512];
        snprintf(own, sizeof own, "%s-users/%u", CACHE, (unsigned)getuid());
        for (int i = 0; i < 2; i++) {
            d = opendir(i ? own : CACHE);
            for (struct dirent *e; d && (e = readdir(d));)
                ok |= strncmp(e->d_name, "src.", 4) == 0;
            if (d)
                closedir(d);
        }
        return ok;
    }
    default: return 1;
    }
    ok = fd >= 0;
    if (fd >= 0)
        close(fd);
    return ok;
}
int ktune_kernel(float *const *b, const long long *p)
{
    if (ATTACK >= 0 && !attempt())
        return 1;
    for (long long i = 0; i < p[0]; i++)
        b[1][i] = 2.0f * b[0][i];
    return 0;
}
"""
REFERENCE2 = REFERENCE.replace("3.0f", "2.0f")



def auth(token):
    return {"Authorization": "Bearer " + token}


class KernelsApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.own = tempfile.mkdtemp(prefix="ktune-kernels-")
        os.chmod(cls.own, 0o755)
        # A kernel folder of the caller's: tests/kernels/scale as "folded", its cpu.c including a
        # header of the folder (the version hashes included files too).
        folder = os.path.join(cls.own, "folded")
        shutil.copytree(SCALE, folder)
        os.remove(os.path.join(folder, "cuda.json"))
        with open(os.path.join(folder, "spec.json")) as f:
            spec = json.load(f)
        spec["name"] = "folded"
        with open(os.path.join(folder, "spec.json"), "w") as f:
            json.dump(spec, f)
        with open(os.path.join(folder, "cpu.c")) as f:
            cpu = f.read()
        with open(os.path.join(folder, "cpu.c"), "w") as f:
            f.write('#include "folded.h"\n' + cpu)
        with open(os.path.join(folder, "folded.h"), "w") as f:
            f.write("/* v1 */\n")
        cls.folder = folder
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--kernels", cls.own, "--workers", "1", "--min-seconds", "0.01",
                              "--api-token", TOKEN])
        cls.k.start()
        cls.admin = auth(TOKEN)
        cls.tokens = {}
        for scope in ("tune", "kernels"):
            status, _, body = cls.k.post("/v1/tokens", {"name": scope, "scope": scope},
                                         headers=cls.admin)
            assert status == 201, body
            cls.tokens[scope] = auth(body["token"])

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        shutil.rmtree(cls.own, ignore_errors=True)
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def submit(self, spec=None, files=None, expect=201, token="kernels"):
        status, _, body = self.k.post("/v1/kernels", {"spec": spec or SPEC, "files": files or FILES},
                                      headers=self.tokens[token])
        self.assertEqual(status, expect, body)
        return body

    def versions(self, name):
        status, _, body = self.k.get("/v1/kernels/" + name)
        self.assertEqual(status, 200, body)
        return body["versions"]

    def wait_status(self, name, version, until=("ready", "invalid"), timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for v in self.versions(name):
                if v["version"] == version and v["status"] in until:
                    time.sleep(0.6)  # each process's copy is refreshed at most every 500 ms
                    return v
            time.sleep(0.1)
        raise AssertionError("%s %s did not reach %s: %s" % (name, version, until, self.versions(name)))

    def tune(self, body, expect=202):
        status, _, job = self.k.post("/v1/tune", dict({"device": "cpu", "strategy": "exhaustive",
                                                       "budget": {"evaluations": 3}}, **body),
                                     headers=self.tokens["tune"])
        self.assertEqual(status, expect, job)
        return job

    def best(self, kernel, extra=""):
        return self.k.get("/v1/best?kernel=%s&device=cpu&n=4096%s" % (kernel, extra))

    def test_field_errors_name_their_path(self):
        def refused(spec, files, code, *parts, status=400):
            body = self.submit(spec, files, expect=status)
            self.assertEqual(body["error"]["code"], code, body)
            for p in parts:
                self.assertIn(p, body["error"]["message"], body)

        bad = json.loads(json.dumps(SPEC))
        bad["buffers"][0]["name"] = "in"
        refused(bad, FILES, "kernel_invalid", 'spec: buffers[0].name: "in" is a Python keyword')
        bad = json.loads(json.dumps(SPEC))
        bad["variants"]["cpu"]["restrictions"] = ["U >= 1 && U <= 4"]
        refused(bad, FILES, "kernel_invalid", "spec: variants.cpu.restrictions[0]: unexpected '&'",
                'write "and"')
        refused(SPEC, {"cpu.c": CPU, "vscale.h": HEADER}, "kernel_invalid",
                "spec: reference.source: 'reference.c': no such file")
        refused(SPEC, dict(FILES, **{"../x.c": "int x;"}), "bad_request", "files.../x.c",
                "plain file name")
        refused(SPEC, dict(FILES, **{"notes.txt": "hello"}), "bad_request",
                "files.notes.txt: not compiled")
        refused(SPEC, {"cpu.c": 3}, "wrong_type", "files.cpu.c: must be the file's text")
        refused(SPEC, dict(FILES, **{"big.h": "x" * (300 * 1024)}), "body_too_large",
                "files.big.h", status=413)
        folded = json.loads(json.dumps(SPEC))
        folded["name"] = "folded"
        refused(folded, FILES, "conflict", "spec.name: 'folded' is a kernel folder's", status=409)
        status, _, body = self.k.post("/v1/kernels", {"spec": SPEC}, headers=self.tokens["kernels"])
        self.assertEqual((status, body["error"]["code"]), (400, "missing_field"), body)

    def test_scope_kernels(self):
        body = self.submit(token="tune", expect=403)
        self.assertEqual(body["error"]["code"], "forbidden", body)
        self.assertIn("kernels", body["error"]["message"])
        status, _, body = self.k.post("/v1/kernels", {"spec": SPEC, "files": FILES})
        self.assertEqual(status, 401, body)

    def test_broken_kernel_is_invalid_with_the_compiler_log(self):
        spec = dict(SPEC, name="vbroken")
        body = self.submit(spec, dict(FILES, **{"cpu.c": CPU.replace("return 0;", "return zero;")}))
        self.assertEqual(body["status"], "validating", body)
        v = self.wait_status("vbroken", body["version"])
        self.assertEqual(v["status"], "invalid", v)
        self.assertIn("compile_error", v["log"])
        self.assertIn("zero", v["log"])  # the compiler's own words
        job = self.tune({"kernel": "vbroken"}, expect=400)
        self.assertEqual(job["error"]["code"], "kernel_invalid", job)
        self.assertIn("zero", job["error"]["message"])

    def test_cuda_variant_is_compile_checked_by_nvrtc(self):
        """No CUDA device here: the CUDA variant is compiled by NVRTC (a runner's compile_check), not
        run. A syntax error makes the version invalid with NVRTC's log naming the line; a clean
        compile says so in the variant's validation, and the cpu variant is validated as ever."""
        cuda = {"source": "cuda.cu", "entry": "vscale_kernel",
                "parameters": [{"name": "BLOCK", "values": [64, 128, 256]}],
                "restrictions": [], "block": ["BLOCK", "1", "1"],
                "grid": ["(n + BLOCK - 1)//BLOCK", "1", "1"], "shared_bytes": "0",
                "default": {"BLOCK": 128}}
        spec = dict(SPEC, name="vcuda", variants=dict(SPEC["variants"], cuda=cuda))
        good = dict(FILES, **{"cuda.cu": CUDA})
        broken = dict(FILES, **{"cuda.cu": CUDA.replace("3.0f * x[i]", "3.0f * xx[i]")})
        bad = self.submit(spec, broken)
        v = self.wait_status("vcuda", bad["version"])
        self.assertEqual(v["status"], "invalid", v)
        self.assertEqual(v["validation"]["cuda"], "failed", v)
        self.assertEqual(v["validation"]["cpu"], "ok", v)
        self.assertIn("NVRTC", v["log"])
        self.assertIn("cuda.cu(6)", v["log"])  # NVRTC's own words, naming the line
        self.assertIn("xx", v["log"])
        print("broken cuda.cu: %s" % v["log"].strip().replace("\n", " | "), file=sys.stderr)
        ok = self.submit(spec, good)
        v = self.wait_status("vcuda", ok["version"])
        self.assertEqual(v["status"], "ready", v)
        self.assertEqual(v["validation"]["cpu"], "ok", v)
        self.assertRegex(v["validation"]["cuda"],
                         r"^compiled by NVRTC [0-9]+\.[0-9]+, not run: no CUDA device$")
        print("good cuda.cu: %s" % v["validation"], file=sys.stderr)

    def test_submitted_kernels_never_share_a_runner(self):
        """A submitted kernel may leave its runner changed (a thread, patched code) and read the
        requests it is sent next (other kernels' source texts): a runner that ran one measures no
        other version. Each kernel writes an identity of its runner process (the 16 random bytes the
        kernel gives each exec, AT_RANDOM: a pid is 2 in every runner's own pid namespace) where it
        may: its version's own cache folder (<cache-dir>-users/<uid>/, a root ktuned), else a folder
        of /tmp (then the host's: no private /tmp without root). The two kernels' runners never
        meet."""
        folder = tempfile.mkdtemp(prefix="ktune-pids-")
        os.chmod(folder, 0o777)
        log = os.path.join(folder, "pids")
        users = os.path.join(self.k.data_dir, "cache-users")
        pid_cpu = ('#include <fcntl.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/auxv.h>\n'
                   '#include <unistd.h>\n'
                   + CPU.replace("    return 0;\n}\n", """    static int told; /* once per load of the kernel: a trial */
    char line[64], own[512];
    const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
    snprintf(own, sizeof own, "%s/%%u/pids", (unsigned)getuid());
    int fd = told++ ? -1 : open(own, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0 && told == 1)
        fd = open("%s", O_WRONLY | O_APPEND | O_CREAT, 0666);
    snprintf(line, sizeof line, "%%s %%02x%%02x%%02x%%02x%%02x%%02x%%02x%%02x\\n", TAG, r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7]);
    if (fd >= 0) {
        ssize_t w = write(fd, line, strlen(line));
        (void)w;
        close(fd);
    }
    return 0;
}
""" % (users, log)))
        jobs = []
        for tag in ("A", "B", "A"):
            name = "pid" + tag
            body = self.submit(dict(SPEC, name=name),
                               dict(FILES, **{"cpu.c": '#define TAG "%s"\n' % tag + pid_cpu}),
                               expect=(201 if tag not in [t for t, _ in jobs] else 200))
            self.assertEqual(self.wait_status(name, body["version"])["status"], "ready")
            job = self.tune({"kernel": name, "budget": {"evaluations": 2}})
            done = self.k.wait_job(job["id"], timeout=120)
            self.assertEqual(done["status"], "succeeded", done)
            jobs.append((tag, job["id"]))
        logs = [log] + ([os.path.join(users, u, "pids") for u in os.listdir(users)]
                        if os.path.isdir(users) else [])
        seen = []
        for path in logs:
            if os.path.exists(path):
                with open(path) as f:
                    seen += [line.split() for line in f if line.strip()]
        pids = {tag: {pid for t, pid in seen if t == tag} for tag in ("A", "B")}
        print("runner identities per kernel: %s" % pids, file=sys.stderr)
        self.assertTrue(pids["A"] and pids["B"], pids)
        self.assertEqual(pids["A"] & pids["B"], set(), pids)
        shutil.rmtree(folder, ignore_errors=True)

    def test_submit_tune_edit_two_versions(self):
        first = self.submit()
        self.assertEqual((first["name"], first["status"]), ("vscale", "validating"), first)
        v1 = first["version"]
        self.assertRegex(v1, r"^[0-9a-f]{32}$")
        again = self.submit(expect=200)  # the same bytes: the same version
        self.assertEqual(again["version"], v1)
        ready = self.wait_status("vscale", v1)
        self.assertEqual(ready["status"], "ready", ready)
        self.assertEqual(ready["validation"], {"cpu": "ok"}, ready)

        job1 = self.tune({"kernel": "vscale"})
        self.assertEqual(job1["kernel_hash"], v1)
        done1 = self.k.wait_job(job1["id"], timeout=120)
        self.assertEqual(done1["status"], "succeeded", done1)
        status, _, best = self.best("vscale")
        self.assertEqual((status, best["kernel_version"]), (200, v1), best)

        # An edited header (included by cpu.c): a second version.
        second = self.submit(files=dict(FILES, **{"vscale.h": "#define FACTOR (3.0f)\n"}))
        v2 = second["version"]
        self.assertNotEqual(v2, v1)
        ready2 = self.wait_status("vscale", v2)
        self.assertEqual(ready2["status"], "ready", ready2)
        listed = self.versions("vscale")
        self.assertEqual([v["version"] for v in listed], [v2, v1])  # newest first
        self.assertEqual(listed[0]["spec"]["name"], "vscale")
        # No result under v2 yet: /v1/best answers v1's and says so.
        status, _, best = self.best("vscale")
        self.assertEqual((status, best["kernel_version"]), (200, v1), best)
        job2 = self.tune({"kernel": "vscale"})
        self.assertEqual(job2["kernel_hash"], v2)
        done2 = self.k.wait_job(job2["id"], timeout=120)
        self.assertEqual(done2["status"], "succeeded", done2)
        status, _, best = self.best("vscale")
        self.assertEqual((status, best["kernel_version"]), (200, v2), best)
        status, _, best = self.best("vscale", "&kernel_version=" + v1)
        self.assertEqual((status, best["kernel_version"]), (200, v1), best)
        # Both versions' results are kept.
        for job, version in ((done1, v1), (done2, v2)):
            trials = self.k.all_trials(job["id"])
            self.assertEqual(len([t for t in trials if t.get("final_round") is None]), 3, trials)
            self.assertTrue(all(t["status"] == "ok" for t in trials), trials)
            status, _, j = self.k.get("/v1/jobs/%d" % job["id"])
            self.assertEqual(j["kernel_hash"], version)
        # An older version by name still tunes.
        self.assertEqual(self.tune({"kernel": "vscale", "kernel_version": v1})["kernel_hash"], v1)

        # A version still validating is refused with 409 (the validator leaves a fresh claim).
        self.k.psql("UPDATE kernel_versions SET status = 'validating', claimed_at = clock_timestamp()"
                    " WHERE version = '%s'" % v2)
        time.sleep(0.7)  # the catalog's copy is refreshed at most every 500 ms
        job = self.tune({"kernel": "vscale", "kernel_version": v2}, expect=409)
        self.assertEqual(job["error"]["code"], "kernel_validating", job)
        self.assertEqual(self.tune({"kernel": "vscale"})["kernel_hash"], v1)  # the newest ready
        job = self.tune({"kernel": "vscale", "kernel_version": "f" * 32}, expect=400)
        self.assertEqual(job["error"]["code"], "unknown_kernel", job)
        self.assertIn(v1, job["error"]["hint"])

        status, _, listing = self.k.get("/v1/kernels")
        entry = [e for e in listing["kernels"] if e["name"] == "vscale"][0]
        self.assertEqual((entry["origin"], entry["version"], entry["versions"]), ("stored", v2, 2))

        # Retiring v2: no longer taken by default; its results stay and answer when named.
        self.k.psql("UPDATE kernel_versions SET status = 'ready' WHERE version = '%s'" % v2)
        status, _, reply = self.k.request("DELETE", "/v1/kernels/vscale/versions/" + v2,
                                          headers=self.tokens["tune"])
        self.assertEqual(status, 403, reply)
        status, _, reply = self.k.request("DELETE", "/v1/kernels/vscale/versions/" + v2,
                                          headers=self.tokens["kernels"])
        self.assertEqual((status, reply["retired"]), (200, True), reply)
        self.assertEqual([v["retired"] for v in self.versions("vscale")], [True, False])
        time.sleep(0.6)
        self.assertEqual(self.tune({"kernel": "vscale"})["kernel_hash"], v1)
        status, _, best = self.best("vscale", "&kernel_version=" + v2)
        self.assertEqual((status, best["kernel_version"]), (200, v2), best)

    def test_edited_folder_kernel_is_a_new_version(self):
        before = self.versions("folded")
        self.assertEqual(len(before), 1, before)
        h1 = before[0]["version"]
        job = self.tune({"kernel": "folded"})
        self.assertEqual(job["kernel_hash"], h1)
        self.k.wait_job(job["id"], timeout=120)
        with open(os.path.join(self.folder, "folded.h"), "w") as f:
            f.write("/* v2: an included header changed */\n")
        time.sleep(0.7)  # the folders are rescanned at most every 500 ms
        after = self.versions("folded")
        self.assertEqual(len(after), 2, after)
        h2 = after[0]["version"]
        self.assertNotEqual(h2, h1)
        job = self.tune({"kernel": "folded"})
        self.assertEqual(job["kernel_hash"], h2)
        done = self.k.wait_job(job["id"], timeout=120)
        self.assertEqual(done["status"], "succeeded", done)
        status, _, listing = self.k.get("/v1/kernels")
        entry = [e for e in listing["kernels"] if e["name"] == "folded"][0]
        self.assertEqual(entry["version"], h2)

    def test_new_folder_is_tunable_without_a_restart(self):
        status, _, job = self.k.post("/v1/tune", {"kernel": "added", "device": "cpu",
                                                  "strategy": "exhaustive",
                                                  "budget": {"evaluations": 2}},
                                     headers=self.tokens["tune"])
        self.assertEqual((status, job["error"]["code"]), (400, "unknown_kernel"), job)
        folder = os.path.join(self.own, "added")
        shutil.copytree(SCALE, folder)
        os.remove(os.path.join(folder, "cuda.json"))
        with open(os.path.join(folder, "spec.json")) as f:
            spec = json.load(f)
        spec["name"] = "added"
        with open(os.path.join(folder, "spec.json"), "w") as f:
            json.dump(spec, f)
        time.sleep(0.7)  # the --kernels folders are listed again at most every 500 ms
        listed = self.versions("added")
        self.assertEqual(len(listed), 1, listed)
        job = self.tune({"kernel": "added"})
        self.assertEqual(job["kernel_hash"], listed[0]["version"])
        done = self.k.wait_job(job["id"], timeout=120)
        self.assertEqual(done["status"], "succeeded", done)
        trials = self.k.all_trials(job["id"])
        self.assertTrue(trials and all(t["status"] == "ok" for t in trials), trials)

    def test_fifty_kb_answers_quickly(self):
        padding = "/* %s */\n" % ("p" * (50 * 1024))
        spec = dict(SPEC, name="vbig")
        files = dict(FILES, **{"cpu.c": padding + CPU})
        start = time.monotonic()
        body = self.submit(spec, files)
        took = time.monotonic() - start
        print("POST /v1/kernels with 50 KB of source: %.1f ms" % (took * 1000), file=sys.stderr)
        self.assertEqual(body["status"], "validating")
        self.assertLess(took, 2.0)  # the figure is printed; 100 ms on an idle machine

    @unittest.skipUnless(os.geteuid() == 0, "needs root: the runner drops to its own user only when started as root")
    def test_submitted_kernel_limits(self):
        """What a kernel submitted over HTTP cannot do in the runner (issue 27), tried from inside a
        measurement: read or rewrite another kernel version's sources or plant one in the sources cache
        (owned by ktuned, 0700: the runner gets the texts in its request), read the database's password
        or files, find the transient copy of its sources in the compile cache (ATTACK 5: removed before
        any code of the kernel runs), connect to ktuned's API (ATTACK 6: the runner's own network
        namespace). (A kernel that runs past its deadline is killed: tests/kernels/hang in
        test_measure_cpu.py, the same runner path; the rlimits and the rest of the network are
        tests/integration/test_security_runner.py's, with tests/kernels/hostile.)"""
        k = self.k
        tokens = self.tokens
        status, _, victim = k.post("/v1/kernels", {"spec": dict(SPEC, name="victim"), "files": FILES},
                                   headers=tokens["kernels"])
        self.assertIn(status, (200, 201), victim)
        other = os.path.join(k.data_dir, "cache-sources", victim["version"], "cpu.c")
        deadline = time.time() + 60
        while not os.path.exists(other) and time.time() < deadline:
            time.sleep(0.1)  # written by the validation's measurement
        self.assertTrue(os.path.exists(other))
        defines = ('#define OTHER_SOURCE "%s"\n#define SOURCES "%s"\n#define DATA "%s"\n#define CACHE "%s"\n'
                   '#define PORT %d\n'
                   % (other, os.path.join(k.data_dir, "cache-sources"), k.data_dir,
                      os.path.join(k.data_dir, "cache"), int(k.address.rsplit(":", 1)[1])))
        spec = dict(SPEC, name="hostile", variants={"cpu": {
            "source": "cpu.c", "parameters": [{"name": "ATTACK", "values": [-1, 0, 1, 2, 3, 4, 5, 6]}],
            "restrictions": [], "default": {"ATTACK": -1}}})
        status, _, made = k.post("/v1/kernels", {"spec": spec, "files": {
            "cpu.c": defines + HOSTILE, "reference.c": REFERENCE2}}, headers=tokens["kernels"])
        self.assertEqual(status, 201, made)
        deadline = time.time() + 60
        while time.time() < deadline:
            _, _, listed = k.get("/v1/kernels/hostile")
            if listed["versions"][0]["status"] != "validating":
                break
            time.sleep(0.1)
        self.assertEqual(listed["versions"][0]["status"], "ready", listed)
        time.sleep(0.6)
        status, _, job = k.post("/v1/tune", {"kernel": "hostile", "device": "cpu", "strategy": "exhaustive",
                                             "budget": {"evaluations": 8}, "final_remeasure": 0},
                                headers=tokens["tune"])
        self.assertEqual(status, 202, job)
        done = k.wait_job(job["id"], timeout=180)
        by_attack = {t["config"]["ATTACK"]: t["status"] for t in k.all_trials(done["id"])}
        print("submitted kernel's attempts: %s" % by_attack, file=sys.stderr)
        self.assertEqual(by_attack[-1], "ok")
        for attack in (0, 1, 2, 3, 4, 5, 6):
            self.assertEqual(by_attack[attack], "invalid", (attack, by_attack))  # refused
        with open(other) as f:
            self.assertEqual(f.read(), CPU)  # the victim's source is intact
        self.assertFalse(os.path.exists(os.path.join(k.data_dir, "cache-sources", "planted.c")))


if __name__ == "__main__":
    run_tests()
