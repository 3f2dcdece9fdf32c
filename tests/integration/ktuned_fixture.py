"""Starts and stops a real ktuned (with its embedded PostgreSQL) for the integration tests.

Each test file calls `parse_args()` for --ktuned and --source-dir (ctest passes them), then uses
`Ktuned(...)` as a context manager or calls start/stop/kill explicitly. Data lives in a throw-away folder
under /tmp (the postgres user must be able to reach it), removed at the end.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

READY = re.compile(r"ktuned ready: dashboard http://([^/]+)/")


def copy_db_template(binary, data_dir):
    """Puts a test database into data_dir (tests/README.md, "Test databases"): kt_pg_template, beside
    ktuned, copies its migrated template cluster there (making the template first when needed).
    False when there is no such tool (ktuned then runs initdb itself)."""
    tool = os.path.join(os.path.dirname(os.path.realpath(binary)), "kt_pg_template")
    if not os.access(tool, os.X_OK):
        return False
    out = subprocess.run([tool, data_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if out.returncode != 0:
        raise RuntimeError("kt_pg_template failed:\n" + out.stdout.decode(errors="replace"))
    return True


SKIP_EXIT = 77  # ctest counts this exit status as a skip (SKIP_RETURN_CODE in CMakeLists.txt)


def run_tests():
    """unittest.main for a test file: verbosity 2 (each skipped case prints "skipped 'reason'",
    which make test's summary lists); exits 1 on a failure, SKIP_EXIT when every case was skipped
    (ctest then reports the whole file as skipped), else 0."""
    import unittest

    class TimedResult(unittest.TextTestResult):
        """Records each case's wall time (setUpClass and tearDownClass not included), so the
        slowest cases print at the end: where a file's time goes, for trimming `make test`."""

        def startTest(self, test):
            self._case_started = time.monotonic()
            super().startTest(test)

        def stopTest(self, test):
            super().stopTest(test)
            self.case_times.append((time.monotonic() - self._case_started, test.id()))

    TimedResult.case_times = []
    started = time.monotonic()
    runner = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult)
    result = unittest.main(testRunner=runner, exit=False).result
    slowest = sorted(TimedResult.case_times, reverse=True)[:5]
    print("slowest cases (of %.1f s in all): %s" % (time.monotonic() - started, ", ".join(
        "%s %.1f s" % (name.rsplit(".", 1)[-1], secs) for secs, name in slowest)))
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun > 0 and len(result.skipped) == result.testsRun:
        print("SKIP: every case of %s was skipped" % os.path.basename(sys.argv[0]))
        sys.exit(SKIP_EXIT)
    sys.exit(0)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    args, rest = ap.parse_known_args()
    sys.argv = [sys.argv[0]] + rest
    return args


def child_pids(parent, name=None):
    """Pids of the live (not zombie) child processes of parent whose command line contains name
    (any, when name is None), read from /proc."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if (name is None or name.encode() in cmd) and int(fields[1]) == parent and fields[0] not in "ZX":
            pids.append(int(d))
    return pids


class Ktuned:
    """netns: run inside that network namespace (`ip netns exec NS`, root only); hostname: with its
    own UTS namespace and that host name (`unshare --uts`), so that processes in several
    namespaces of one machine look like several hosts; listen: the --listen address."""

    def __init__(self, binary, source_dir, data_dir=None, extra=(), env=None, netns=None,
                 hostname=None, listen="127.0.0.1:0", product_db=False):
        self.binary = binary
        self.netns = netns
        self.hostname = hostname
        self.listen = listen
        self.source_dir = source_dir
        self.own_data_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="ktune-it-", dir="/tmp")
        os.chmod(self.data_dir, 0o755)
        self.extra = list(extra)
        # With --api-token, GETs made without explicit headers send it (reads need a token once any
        # token exists); writes, and calls with headers given, send only what they pass.
        self.token = None
        for i, a in enumerate(self.extra[:-1]):
            if a == "--api-token":
                self.token = self.extra[i + 1]
        # A test database (tests/README.md, "Test databases"): copied from the migrated template
        # instead of initdb + migrations, and no fsync (KTUNE_PG_FSYNC=off). product_db=True keeps
        # the product's own path and defaults: the kill -9, fault and security tests.
        self.product_db = product_db
        # Tests train models on a handful of problems: no minimum for a model to be served (issue
        # 31's --model-min-problems, --model-min-accuracy). test_models_best runs with the
        # defaults (env {"KTUNE_MODEL_MIN_PROBLEMS": ""}: an empty twin is unset).
        self.env = dict(os.environ, KTUNE_MODEL_MIN_PROBLEMS="0", KTUNE_MODEL_MIN_ACCURACY="0")
        self.env.update({} if product_db else {"KTUNE_PG_FSYNC": "off"})
        self.env.update(env or {})
        self.proc = None
        self.address = None
        self.log_path = os.path.join(self.data_dir, "ktuned.log")

    def start(self, timeout=90):
        args = [self.binary, "--listen", self.listen, "--data-dir", self.data_dir,
                "--datasets", os.path.join(self.source_dir, "datasets"),
                "--web-dir", os.path.join(self.source_dir, "web")] + self.extra
        if (not self.product_db and "--database-url" not in self.extra
                and not os.path.exists(os.path.join(self.data_dir, "pg"))):
            copy_db_template(self.binary, self.data_dir)
        # Each wrapper execs the next, so self.proc.pid stays ktuned's pid (kill9, signals).
        if self.hostname:
            args = ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"',
                    self.hostname] + args
        if self.netns:
            args = ["ip", "netns", "exec", self.netns] + args
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=self.env)
        deadline = time.time() + timeout
        line = b""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = READY.search(line.decode(errors="replace"))
            if m:
                self.address = m.group(1)
                return self
        self.proc.kill()
        raise RuntimeError("ktuned did not become ready; log:\n" + self.log_tail())

    def log_tail(self, n=60):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return "(no log)"

    def stop(self, timeout=60):
        """SIGTERM and wait: a clean shutdown; returns the exit code."""
        if not self.proc:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise RuntimeError("ktuned did not stop within %ss" % timeout)
        finally:
            self.proc.stdout.close()
            self.proc = None
        return rc

    def kill9(self):
        """kill -9: the embedded PostgreSQL stays up, as after a real crash."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc.stdout.close()
        self.proc = None

    def cleanup(self):
        if self.proc:
            try:
                self.stop()
            except RuntimeError:
                pass
        pg = os.path.join(self.data_dir, "pg")
        if os.path.exists(os.path.join(pg, "postmaster.pid")):
            pg_ctl = sorted(__import__("glob").glob("/usr/lib/postgresql/*/bin/pg_ctl"))[-1]
            cmd = [pg_ctl, "-D", pg, "-m", "immediate", "-w", "stop"]
            if os.geteuid() == 0:
                cmd = ["runuser", "-u", "postgres", "--"] + cmd
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.own_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # --- the embedded PostgreSQL (password logins only on a private socket; store/pg_auth.h) ------
    def pg_secret(self, role="ktune"):
        """The generated password of the service role `ktune` or of the superuser `ktune_admin`."""
        name = "pg-ktune.secret" if role == "ktune" else "pg-admin.secret"
        with open(os.path.join(self.data_dir, name)) as f:
            return f.read().strip()

    def pg_conninfo(self, dbname="ktune", role="ktune"):
        """libpq conninfo for psql or --database-url, password included."""
        return "host=%s port=5432 dbname=%s user=%s password=%s" % (
            os.path.join(self.data_dir, "pg-socket"), dbname, role, self.pg_secret(role))

    def psql(self, sql, role="ktune", dbname="ktune", check=True):
        """Runs SQL with psql on the embedded cluster; returns stdout (unaligned, tuples only)."""
        out = subprocess.run(["psql", "-X", self.pg_conninfo(dbname, role), "-v", "ON_ERROR_STOP=1",
                              "-At", "-c", sql], capture_output=True, text=True, timeout=60)
        if check and out.returncode != 0:
            raise AssertionError("psql failed: %s" % out.stderr)
        return out.stdout.strip() if check else out

    def postmaster_pid(self):
        """The embedded PostgreSQL's postmaster pid (postmaster.pid), or None."""
        try:
            with open(os.path.join(self.data_dir, "pg", "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def children(self, name):
        """Pids of this ktuned's live child processes whose command line contains name."""
        return child_pids(self.proc.pid, name) if self.proc else []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()

    # --- HTTP helpers -------------------------------------------------------------------------
    def request(self, method, path, body=None, headers=None, raw=None, conn=None):
        """Returns (status, headers dict, parsed JSON or text)."""
        own = conn is None
        conn = conn or http.client.HTTPConnection(self.address, timeout=60)
        hdrs = dict(headers or {})
        if headers is None and self.token and method == "GET":
            hdrs["Authorization"] = "Bearer " + self.token
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        payload = resp.read()
        if own:
            conn.close()
        ctype = resp.getheader("Content-Type", "")
        parsed = json.loads(payload) if ctype.startswith("application/json") and payload else payload.decode(errors="replace")
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, parsed

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body=body, **kw)

    def raw(self, data, timeout=10, body_too=False):
        """Sends raw bytes on a fresh socket; returns the status code of the reply (and the body when
        body_too). The server may answer and close before all bytes are sent (413 on Content-Length):
        a failed send is fine as long as a reply arrives."""
        host, port = self.address.rsplit(":", 1)
        reply = b""
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError:  # broken pipe, reset, or not connected: the server already answered
                pass
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    reply += chunk
            except ConnectionResetError:
                pass
        m = re.match(rb"HTTP/1\.[01] (\d{3})", reply)
        status = int(m.group(1)) if m else None
        if not body_too:
            return status
        body = reply.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in reply else b""
        return status, body

    def wait_job(self, job_id, until=("succeeded", "failed", "cancelled"), timeout=300, predicate=None):
        deadline = time.time() + timeout
        job = None
        while time.time() < deadline:
            status, _, job = self.get("/v1/jobs/%d" % job_id)
            assert status == 200, job
            if job["status"] in until or (predicate and predicate(job)):
                return job
            time.sleep(0.05)
        raise AssertionError("job %d did not reach %s in %ss: %s" % (job_id, until, timeout, job))

    def all_trials(self, job_id):
        trials, after = [], 0
        while True:
            status, _, page = self.get("/v1/jobs/%d/trials?after=%d&limit=1000" % (job_id, after))
            assert status == 200, page
            trials += page["trials"]
            if not page["trials"]:
                return trials
            after = page["next_after"]


def best_query(kernel, device, **problem):
    q = {"kernel": kernel, "device": device}
    q.update(problem)
    return "/v1/best?" + urllib.parse.urlencode(q)

