"""Integration: the toolchain is part of every result's key (issue #10). ktuned probes the CPU's
compiler through ktune-runner (GET /v1/devices: "toolchain"); a job on the cpu stores it in its row and
shows it, its best entry carries it (in the table and in /v1/best and /v1/best/entries); a best entry
of the same kernel, class, hash and problem measured under another toolchain is kept beside it and
never served for this device; imports take the toolchain of the device they are imported for; and a
stored job whose toolchain is not the device's any more ends as failed, toolchain_changed, on resume.
Rows are read and written with psql on the embedded cluster's socket."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
KERNELS = os.path.join(SOURCE, "kernels") + "," + os.path.join(SOURCE, "tests", "kernels")
PNPOLY = "replay:pnpoly_kt-RTX_3090"
PNPOLY_CONFIG = {"between_method": 0, "block_size_x": 32, "tile_size": 1, "use_method": 0}


def cc_family():
    """The compiler family the runner's probe reads from `cc --version` here (runner/cpu_probe.c):
    "clang", "gcc", or None for another compiler or none; never assumed from the machine."""
    try:
        out = subprocess.run(["cc", "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.splitlines()[0] if out else ""
    if "clang" in first:
        return "clang"
    if "gcc" in first or "GCC" in first or "Free Software Foundation" in out:
        return "gcc"
    return None


class ToolchainTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir,
                       extra=["--kernels", KERNELS, "--workers", "1", "--min-seconds", "0.02",
                              "--replay-speed", "0.01"])
        cls.k.start()
        status, _, body = cls.k.get("/v1/devices")
        assert status == 200, body
        cls.devices = {d["name"]: d for d in body["devices"]}
        cls.cpu_toolchain = cls.devices["cpu"]["toolchain"]

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def sql(self, statement, *params):
        """Runs one statement on the embedded cluster (psql variables :'p1', :'p2'... are params);
        returns the rows as lists of text."""
        with open(os.path.join(self.k.data_dir, "pg", "postmaster.pid")) as f:
            socket_dir = f.read().splitlines()[4]
        cmd = ["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h", socket_dir,
               "-p", "5432", "-U", "ktune", "-d", "ktune"]
        for i, p in enumerate(params, 1):
            cmd += ["-v", "p%d=%s" % (i, p)]
        env = dict(os.environ, PGPASSWORD=self.k.pg_secret())
        out = subprocess.run(cmd, input=statement, capture_output=True, text=True, check=True, env=env).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def run_job(self, body, timeout=150):
        status, _, job = self.k.post("/v1/tune", body)
        self.assertEqual(status, 202, job)
        return self.k.wait_job(job["id"], timeout=timeout)

    def test_a_devices_report_their_toolchain(self):
        cpu = self.devices["cpu"]
        family, _, version = cpu["toolchain"].partition(" ")
        expect = cc_family()
        print("\n  cc here: %s; the probe's toolchain: %s" % (expect or "another compiler",
                                                             cpu["toolchain"]))
        if expect:
            self.assertEqual(family, expect, cpu)
            # The version is the one `cc --version` printed (the probe's compiler line).
            self.assertIn(version, cpu["description"]["compiler"], cpu)
        else:  # a compiler the probe does not parse: its first line, or "unknown" when unusable
            self.assertIn(cpu["toolchain"], (cpu["description"]["compiler"], "unknown"), cpu)
        self.assertEqual(cpu["description"]["toolchain"], cpu["toolchain"])
        self.assertEqual(self.devices[PNPOLY]["toolchain"], "recorded")
        if "cuda:0" in self.devices:
            self.assertTrue(self.devices["cuda:0"]["toolchain"].startswith("cuda driver "))
        else:
            self.assertIsNone(self.devices["cuda"]["toolchain"])

    def test_b_cpu_job_and_best_carry_the_toolchain(self):
        job = self.run_job({"kernel": "scale", "device": "cpu", "problem": {"n": 4096},
                            "strategy": "exhaustive", "budget": {"evaluations": 10}})
        self.assertEqual((job["status"], job["stop_reason"]), ("succeeded", "space_exhausted"), job)
        self.assertEqual(job["toolchain"], self.cpu_toolchain)
        rows = self.sql("SELECT toolchain FROM jobs WHERE id = :'p1'", job["id"])
        self.assertEqual(rows, [[self.cpu_toolchain]])
        rows = self.sql("SELECT toolchain, device_class, kernel_hash FROM best"
                        " WHERE kernel = 'scale' AND problem_key = '{\"n\":4096}'")
        self.assertEqual(rows, [[self.cpu_toolchain, job["device_class"], job["kernel_hash"]]])
        status, _, best = self.k.get(best_query("scale", "cpu", n=4096))
        self.assertEqual(status, 200, best)
        self.assertEqual((best["toolchain"], best["job_id"]), (self.cpu_toolchain, job["id"]), best)
        status, _, entries = self.k.get("/v1/best/entries?kernel=scale")
        self.assertEqual(status, 200, entries)
        self.assertIn(self.cpu_toolchain, [e["toolchain"] for e in entries["best"]])
        status, _, listed = self.k.get("/v1/jobs?limit=5")
        self.assertEqual(status, 200, listed)
        self.assertEqual([j["toolchain"] for j in listed["jobs"] if j["id"] == job["id"]],
                         [self.cpu_toolchain])

        # Another toolchain's entry for the very same key otherwise (and faster): kept beside this
        # one by the primary key, listed, and never served for this device.
        other = "gcc 1.0.0-elsewhere"
        self.sql("INSERT INTO best (kernel, device_class, kernel_hash, toolchain, problem_key, problem,"
                 " device, config, time_ms, job_id, trial_id) SELECT kernel, device_class, kernel_hash,"
                 " :'p1', problem_key, problem, device, config, time_ms / 1000, job_id, trial_id"
                 " FROM best WHERE kernel = 'scale' AND problem_key = '{\"n\":4096}'"
                 " AND toolchain = :'p2'", other, self.cpu_toolchain)
        status, _, again = self.k.get(best_query("scale", "cpu", n=4096))
        self.assertEqual(status, 200, again)
        self.assertEqual((again["toolchain"], again["time_ms"]), (self.cpu_toolchain, best["time_ms"]))
        status, _, entries = self.k.get("/v1/best/entries?kernel=scale")
        self.assertEqual(sorted(e["toolchain"] for e in entries["best"]
                                if e["problem"] == {"n": 4096}), sorted([other, self.cpu_toolchain]))
        # A problem known only under another toolchain is a miss here.
        self.sql("INSERT INTO best (kernel, device_class, kernel_hash, toolchain, problem_key, problem,"
                 " device, config, time_ms, job_id, trial_id) SELECT kernel, device_class, kernel_hash,"
                 " :'p1', '{\"n\":8192}', '{\"n\":8192}', device, config, time_ms, job_id, trial_id"
                 " FROM best WHERE kernel = 'scale' AND problem_key = '{\"n\":4096}'"
                 " AND toolchain = :'p2'", other, self.cpu_toolchain)
        status, _, miss = self.k.get(best_query("scale", "cpu", n=8192))
        self.assertEqual((status, miss["error"]["code"]), (404, "no_best"), miss)
        self.assertIn(self.cpu_toolchain, miss["error"]["message"])
        # A new measurement under this toolchain offers to this toolchain's entry only.
        job2 = self.run_job({"kernel": "scale", "device": "cpu", "problem": {"n": 8192},
                             "strategy": "exhaustive", "budget": {"evaluations": 10}})
        self.assertEqual(job2["status"], "succeeded", job2)
        status, _, found = self.k.get(best_query("scale", "cpu", n=8192))
        self.assertEqual((status, found["toolchain"], found["job_id"]),
                         (200, self.cpu_toolchain, job2["id"]), found)
        rows = self.sql("SELECT toolchain, job_id FROM best WHERE kernel = 'scale'"
                        " AND problem_key = '{\"n\":8192}' ORDER BY toolchain")
        self.assertEqual(sorted(rows), sorted([[other, str(job["id"])],
                                               [self.cpu_toolchain, str(job2["id"])]]))

    def test_c_imports_take_the_devices_toolchain(self):
        status, _, reply = self.k.post("/v1/imports", {
            "kernel": "pnpoly", "device": PNPOLY, "source": "test",
            "trials": [{"config": PNPOLY_CONFIG, "status": "ok", "time_ms": 1e6}]})
        self.assertEqual(status, 201, reply)
        job = reply["job"]
        self.assertEqual(job["toolchain"], "recorded")
        rows = self.sql("SELECT toolchain FROM jobs WHERE id = :'p1'", job["id"])
        self.assertEqual(rows, [["recorded"]])
        rows = self.sql("SELECT toolchain FROM best WHERE job_id = :'p1'", job["id"])
        self.assertEqual(rows, [["recorded"]])
        # An import job whose stored toolchain is not the device's takes no more trials.
        self.sql("UPDATE jobs SET toolchain = 'nvcc 9.0' WHERE id = :'p1'", job["id"])
        status, _, reply = self.k.post("/v1/imports", {"job": job["id"], "trials": [
            {"config": dict(PNPOLY_CONFIG, tile_size=2), "status": "ok", "time_ms": 1e6}]})
        self.assertEqual((status, reply["error"]["code"]), (409, "toolchain_changed"), reply)
        self.assertIn("nvcc 9.0", reply["error"]["message"])
        self.assertIn("new job", reply["error"]["hint"])

    def test_d_changed_toolchain_fails_the_stored_job_on_resume(self):
        status, _, job = self.k.post("/v1/tune", {"kernel": "pnpoly", "device": PNPOLY,
                                                  "strategy": "random", "seed": 3,
                                                  "budget": {"evaluations": 5000}})
        self.assertEqual(status, 202, job)
        self.assertEqual(job["toolchain"], "recorded")
        self.k.wait_job(job["id"], predicate=lambda j: j["progress"]["trials"] >= 3, timeout=120)
        self.k.kill9()
        self.sql("UPDATE jobs SET toolchain = 'gcc 0.1' WHERE id = :'p1'", job["id"])
        self.k.start()
        final = self.k.wait_job(job["id"], timeout=120)
        self.assertEqual((final["status"], final["stop_reason"]), ("failed", "toolchain_changed"), final)
        self.assertEqual(final["error"]["code"], "toolchain_changed", final)
        self.assertIn("gcc 0.1", final["error"]["message"])
        self.assertIn("recorded", final["error"]["message"])
        self.assertLess(final["progress"]["trials"], 5000)


if __name__ == "__main__":
    run_tests()
