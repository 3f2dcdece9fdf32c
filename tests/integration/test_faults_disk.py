"""Integration: the embedded database's disk fills up, then goes read-only (issue 11, break 2).

The data directory is a small tmpfs. With a running job, a file fills it to the last byte: /healthz
answers 503 with "database": "full", POST /v1/tune answers 507 `storage_full` with a hint (never 202);
the file is removed: the job finishes with every trial, none left `running`, new jobs are accepted and
finish. Then, with the server stopped (as after a crash), the file system is remounted read-only:
/healthz says "read_only", POST /v1/tune 507; remounted read-write, the supervisor starts the server
again and the interrupted job finishes. Needs root (mount); skips with the reason otherwise.
"""
import errno
import glob
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
DEVICE = "replay:convolution_milo-A4000"
BUDGET = 80
SLOW = ["--workers", "2", "--replay-speed", "0.03"]
TMPFS_MB = 160
PG_BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1] if glob.glob("/usr/lib/postgresql/*/bin") else None
JOB = {"kernel": "convolution", "device": DEVICE, "strategy": "random", "budget": {"evaluations": BUDGET}}


def run(cmd, check=True):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=check, timeout=90)


def pg_ctl(pgdata, *args):
    cmd = [os.path.join(PG_BIN, "pg_ctl"), "-D", pgdata] + list(args)
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    return run(cmd, check=False)


def fill(path):
    """Writes zeros until the file system has no byte left; returns the bytes written."""
    n = 0
    chunk = b"\0" * (1 << 20)
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                n += f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                break
        for size in (65536, 4096, 512, 1):  # the last few bytes too
            while True:
                try:
                    n += f.write(b"\0" * size)
                except OSError:
                    break
    return n


class DiskFaultsTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a tmpfs")
        if PG_BIN is None:
            self.skipTest("no PostgreSQL server binaries under /usr/lib/postgresql")
        self.mnt = tempfile.mkdtemp(prefix="ktune-disk-", dir="/tmp")
        out = run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0755" % TMPFS_MB, "tmpfs", self.mnt], check=False)
        if out.returncode != 0:
            os.rmdir(self.mnt)
            self.skipTest("cannot mount a tmpfs here: %s" % out.stdout.decode(errors="replace").strip())
        self.k = Ktuned(ARGS.ktuned, ARGS.source_dir, product_db=True, data_dir=self.mnt, extra=SLOW)
        # The log lives outside: it must survive the full disk and not keep the mount busy.
        fd, self.k.log_path = tempfile.mkstemp(prefix="ktuned-disk-", suffix=".log", dir="/tmp")
        os.close(fd)

    def tearDown(self):
        run(["mount", "-o", "remount,rw", self.mnt], check=False)
        conf = os.path.join(self.mnt, "pg", "postgresql.conf")
        if os.path.exists(conf + ".faults-off"):
            os.rename(conf + ".faults-off", conf)
        try:
            os.unlink(os.path.join(self.mnt, "fill"))
        except OSError:
            pass
        self.k.cleanup()
        for _ in range(50):  # backends of the killed server may take a moment to go
            if run(["umount", self.mnt], check=False).returncode == 0:
                break
            time.sleep(0.1)
        os.rmdir(self.mnt)
        os.unlink(self.k.log_path)

    def wait_job(self, jid, timeout=45):
        deadline = time.time() + timeout
        job = None
        while time.time() < deadline:
            status, _, body = self.k.get("/v1/jobs/%d" % jid)
            if status == 200:
                job = body
                if job["status"] in ("succeeded", "failed", "cancelled"):
                    return job
            time.sleep(0.1)
        raise AssertionError("job %d did not finish within %ss: %s" % (jid, timeout, job))

    def check_job(self, jid):
        final = self.wait_job(jid)
        self.assertEqual((final["status"], final["stop_reason"]), ("succeeded", "budget_evaluations"), final)
        trials = self.k.all_trials(jid)
        self.assertEqual(len(trials), BUDGET, "a trial was lost")
        self.assertEqual(len({t["config_id"] for t in trials}), BUDGET, "a configuration was measured twice")
        self.assertEqual([t for t in trials if t["status"] in ("pending", "running")], [])
        self.assertEqual([t for t in trials if "error" in (t.get("extras") or {})], [],
                         "the fault was recorded as a kernel failure")

    def start_job(self, seed):
        status, _, job = self.k.post("/v1/tune", dict(JOB, seed=seed))
        self.assertEqual(status, 202, job)
        mid = self.k.wait_job(job["id"], predicate=lambda j: j["progress"]["trials"] >= 10, timeout=60)
        self.assertEqual(mid["status"], "running", mid)
        return job["id"]

    def wait_health(self, want, timeout=5):
        deadline = time.time() + timeout
        health = None
        while time.time() < deadline:
            status, _, health = self.k.get("/healthz")
            if health.get("database") == want:
                return status, health
            time.sleep(0.1)
        self.fail("/healthz did not say %r within %ss: %s" % (want, timeout, health))

    def refused(self, body_check):
        status, _, body = self.k.post("/v1/tune", dict(JOB, seed=99))
        self.assertIn(status, (507, 503), "a job was accepted that cannot be stored: %s" % body)
        self.assertEqual(body["error"]["code"], "storage_full" if status == 507 else "database", body)
        self.assertTrue(body["error"]["hint"], body)
        body_check(body)

    def test_full_then_read_only(self):
        k = self.k
        try:
            k.start()
            jid = self.start_job(1)
            written = fill(os.path.join(self.mnt, "fill"))
            print("filled the %d MiB data directory with %.1f MiB" % (TMPFS_MB, written / 2**20), file=sys.stderr)
            status, health = self.wait_health("full")
            self.assertEqual(status, 503, health)
            self.assertIn("full", health["reason"])
            self.refused(lambda body: None)
            time.sleep(3)  # the job meets the full disk
            os.unlink(os.path.join(self.mnt, "fill"))
            status, health = self.wait_health("ok", timeout=30)
            self.assertEqual(status, 200, health)
            self.check_job(jid)
            status, _, job = k.post("/v1/tune", dict(JOB, seed=2))
            self.assertEqual(status, 202, job)
            self.check_job(job["id"])

            # Read-only: the server dies (as it would on its first failed write), the disk is
            # remounted read-only before it can be started again.
            jid = self.start_job(3)
            pgdata = os.path.join(self.mnt, "pg")
            conf = os.path.join(pgdata, "postgresql.conf")
            os.rename(conf, conf + ".faults-off")  # the supervisor's restarts fail until it is back
            out = pg_ctl(pgdata, "-m", "immediate", "-w", "stop")
            self.assertEqual(out.returncode, 0, out.stdout)
            for _ in range(100):
                out = run(["mount", "-o", "remount,ro", self.mnt], check=False)
                if out.returncode == 0:
                    break
                time.sleep(0.05)
            self.assertEqual(out.returncode, 0, out.stdout)
            status, health = self.wait_health("read_only")
            self.assertEqual(status, 503, health)
            self.refused(lambda body: None)  # 503 here: the server is down as well
            run(["mount", "-o", "remount,rw", self.mnt])
            os.rename(conf + ".faults-off", conf)
            self.check_job(jid)
            status, health = self.wait_health("ok", timeout=10)
            self.assertEqual(status, 200, health)
            with open(k.log_path, "rb") as f:
                log = f.read().decode(errors="replace")
            self.assertIn("database full", log)
            self.assertIn("database read_only", log)
            self.assertIn("is running again after", log)
        except Exception:
            print(k.log_tail(80), file=sys.stderr)
            raise


if __name__ == "__main__":
    run_tests()
