"""Integration: the README tells the truth (issue 31, item 6), kept so by running it.

On one ktuned (no token, as `make run` starts it; --min-seconds 0.01 only to keep the CPU runs short),
in name order:
- a: the configuration table of README.md against `ktuned --help`: the same flags, each with its
  environment twin, and the same default wherever --help's is a plain value;
- b: the curl walk-through, the first ```sh block of "A walk-through with curl", run as written by bash
  (only `localhost:8080` replaced by this ktuned's address): every command exits 0, the replay job ends
  `succeeded`, the best answers `measured`, the longer gemm job is watched while it runs and its cancel
  answers "cancelled" (it met a running job, not a finished one);
- c: the CLI block of "Command line", run as written in a folder holding `build` (this build) and
  `datasets` (the repository's): every command exits 0, the gemm header is not empty, and `export`
  says how many entries it wrote, which is what the file holds;
- d: the token text of the README and of the OpenAPI description: `POST /v1/tokens` answers the
  field `token` (the README's name), and once a token exists a read without one is 401 (reads need a
  token, as the OpenAPI description says).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
BUILD = os.path.dirname(os.path.abspath(ARGS.ktuned))


def readme():
    with open(os.path.join(SOURCE, "README.md")) as f:
        return f.read()


def section(text, title):
    start = text.index("\n" + title + "\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def first_sh_block(text):
    m = re.search(r"```sh\n(.*?)```", text, re.S)
    assert m, "no ```sh block"
    return m.group(1)


class ReadmeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--min-seconds", "0.01", "--workers", "1"])
        cls.k.start()
        cls.tmp = tempfile.mkdtemp(prefix="ktune-readme-")

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def bash(self, script, cwd=None, env=None):
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-x", "-c", script], cwd=cwd or self.tmp,
                           env=dict(os.environ, **(env or {})), capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, "exit %d\n--- stdout\n%s\n--- stderr\n%s" % (p.returncode, p.stdout, p.stderr))
        return p

    def test_a_configuration_table_is_ktuned_help(self):
        p = subprocess.run([ARGS.ktuned, "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        helped = {}
        for line in p.stdout.splitlines():
            m = re.match(r"  (--[a-z0-9-]+)\s+(KTUNE_[A-Z0-9_]+)?\s*(.*)$", line)
            if m:
                d = re.search(r"\[([^\]]*)\]$", m.group(3))
                helped[m.group(1)] = (m.group(2), d.group(1) if d else None)
        table = {}
        for line in section(readme(), "## Configuration").splitlines():
            if line.startswith("| `--"):
                flag, env, default = [c.strip().strip("`") for c in line.split("|")[1:4]]
                table[flag.split()[0]] = (None if env == "—" else env, default)
        self.assertGreater(len(helped), 40, p.stdout)
        self.assertEqual(sorted(set(helped) - set(table)), [], "flags of ktuned --help missing from README's table")
        self.assertEqual(sorted(set(table) - set(helped)), [], "README's table names flags ktuned does not have")
        for flag, (env, default) in helped.items():
            self.assertEqual(table[flag][0], env, flag)
            # A plain default (a number, a word, an address) is written the same in both.
            if default is not None and re.fullmatch(r"[A-Za-z0-9.:/_-]+", default):
                self.assertEqual(table[flag][1], default, flag)

    def test_b_curl_walk_through_runs_as_written(self):
        block = first_sh_block(section(readme(), "## A walk-through with curl"))
        self.assertIn("localhost:8080", block)
        p = self.bash(block.replace("localhost:8080", self.k.address))
        out = p.stdout
        self.assertIn('"cpu"', out)  # GET /v1/devices
        self.assertIn('"status": "succeeded"', out)  # job 1 polled until it ended
        self.assertIn('"source": "measured"', out)  # GET /v1/best
        self.assertIn('"measured"\n', out)  # ... with problem_size: .source
        self.assertTrue(out.rstrip().endswith('"cancelled"'), out[-400:])  # a running job cancelled
        status, _, job = self.k.get("/v1/jobs/2")
        self.assertEqual((job["kernel"], job["status"]), ("gemm", "cancelled"), job)
        self.assertLess(job["progress"]["trials"], 200, job)

    def test_c_cli_block_runs_as_written(self):
        block = first_sh_block(section(readme(), "## Command line"))
        os.symlink(BUILD, os.path.join(self.tmp, "build"))
        os.symlink(os.path.join(SOURCE, "datasets"), os.path.join(self.tmp, "datasets"))
        p = self.bash(block, env={"KTUNE_SERVER": "http://" + self.k.address})
        with open(os.path.join(self.tmp, "gemm.h")) as f:
            header = f.read()
        self.assertIn("#define KTUNE_", header)
        with open(os.path.join(self.tmp, "conv.json")) as f:
            entries = len(json.load(f)["cache"])
        self.assertRegex(p.stderr, r"ktune: wrote %d (trials|configurations) of job \d+ to conv.json" % entries)
        self.assertIn("ktune best: imported", p.stderr)  # the external kernel's lookup answered
        status, _, jobs = self.k.get("/v1/jobs?limit=100")
        cancelled = [j for j in jobs["jobs"] if j["status"] == "cancelled" and j["budget"]["evaluations"] == 200
                     and j["id"] != 2]
        self.assertEqual(len(cancelled), 1, jobs)

    def test_d_tokens_as_the_docs_say(self):
        text = readme()
        self.assertIn('answers the token\n  (`"token"`', text)
        with open(os.path.join(SOURCE, "service", "api", "openapi.json")) as f:
            spec = json.load(f)
        self.assertIn("every operation with an `x-scope` needs `Authorization: Bearer <token>`",
                      spec["info"]["description"])
        self.assertEqual(spec["paths"]["/v1/jobs"]["get"]["x-scope"], "read")
        status, _, made = self.k.post("/v1/tokens", {"name": "readme", "scope": "read"})
        self.assertEqual(status, 201, made)
        self.assertRegex(made["token"], r"^ktk_[0-9a-f]{48}$")
        req = urllib.request.Request("http://%s/v1/jobs" % self.k.address)
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        self.assertEqual(e.exception.code, 401)
        req.add_header("Authorization", "Bearer " + made["token"])
        with urllib.request.urlopen(req, timeout=10) as r:
            self.assertEqual(r.status, 200)


if __name__ == "__main__":
    run_tests()
