"""Integration: scale-out across hosts (issue #11). Network namespaces joined by veth pairs to a bridge
stand for hosts on one switch: one runs PostgreSQL (an external cluster on TCP), one an API process
(--role api: no device, no measuring), two run workers (--role worker, --workers 2 each, the replay
device and cpu), each with its own host name (a UTS namespace), so that they see each other only
through the database and the lease (--lease-s 2), never by pid.

Checked: the API lists and validates the fleet's cpu device (served by both worker hosts) and tunes
on it; a worker serves /healthz and /metrics only; a replay job with "parallel": 4 is measured by
both worker hosts; a worker killed with -9 mid-job: the job completes on the other host with every
configuration measured once (trials == budget == the job's count, distinct config ids); a worker
frozen (SIGSTOP) past its lease: its job and trials move to the other host and its late results,
once it thaws, are refused (no duplicate count). Needs root (ip netns, runuser); cleans up in
finally."""
import glob
import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SOURCE = os.path.abspath(ARGS.source_dir)
DATASET = "pnpoly_kt-RTX_3090"  # about 0.24 recorded seconds per trial: replay-speed 1 is real time
REPLAY = "replay:" + DATASET
TOKEN = "multihost-test-token"
AUTH = {"Authorization": "Bearer " + TOKEN}
LEASE_S = 2
PG_BIN = (sorted(glob.glob("/usr/lib/postgresql/*/bin")) or [""])[-1]


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def names_in_use():
    """Every network namespace and interface name of this machine now (ours have to be new)."""
    used = set(line.split()[0] for line in sh("ip", "netns", "list", check=False).stdout.splitlines()
               if line.strip())
    for line in sh("ip", "-o", "link", "show", check=False).stdout.splitlines():
        parts = line.split(":", 2)  # "7: name@peer: <...>"
        if len(parts) > 1:
            used.add(parts[1].strip().split("@")[0])
    return used


def networks_in_use():
    """Every IPv4 network an address or a route of this namespace names (the default route
    aside): a subnet of ours must overlap none of them."""
    nets = []
    for cmd in (("ip", "-4", "-o", "addr", "show"), ("ip", "-4", "route", "show", "table", "all")):
        for word in sh(*cmd, check=False).stdout.split():
            try:
                net = ipaddress.ip_network(word, strict=False)
            except ValueError:
                continue
            if net.version == 4 and net.prefixlen > 0:
                nets.append(net)
    return nets


def pick_tag_and_subnet():
    """Names and a /24 that nothing on this machine uses, derived from the pid (a concurrent run
    has another pid): TAG prefixes the namespaces, the bridge and the veths ("kt<n>" + at most 6
    characters: under Linux's 15); the subnet lies in 198.18.0.0/15, which RFC 2544 reserves for
    network tests, and overlaps no address or route here. Only the test's own namespaces and its
    bridge ever hold or are sent to these addresses."""
    used_names, used_nets = names_in_use(), networks_in_use()
    pid, tag, subnet = os.getpid(), None, None
    for k in range(10000):
        cand = "kt%d" % ((pid + k) % 10000)
        if not any(n.startswith(cand) and n[len(cand):len(cand) + 1].isalpha() for n in used_names):
            tag = cand
            break
    for k in range(512):  # 198.18.0.0/24 .. 198.19.255.0/24
        n = (pid + k) % 512
        cand = ipaddress.ip_network("198.%d.%d.0/24" % (18 + n // 256, n % 256))
        if not any(cand.overlaps(u) for u in used_nets):
            subnet = str(cand.network_address).rsplit(".", 1)[0]
            break
    if tag is None or subnet is None:
        raise unittest.SkipTest("no free namespace names or /24 in 198.18.0.0/15 on this machine")
    return tag, subnet


TAG, SUBNET = None, None  # chosen in setUpClass (pick_tag_and_subnet), printed there


class Net:
    """A bridge in this namespace and one namespace per host, each with a veth into the bridge."""

    def __init__(self):
        self.bridge = TAG + "br"
        self.namespaces = []
        self.bridged = False

    def up(self):
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        self.bridged = True
        sh("ip", "addr", "add", SUBNET + ".1/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        # A concurrent run that picked the same /24 a moment ago: stop rather than share it.
        net = ipaddress.ip_network(SUBNET + ".0/24")
        for line in sh("ip", "-4", "-o", "addr", "show").stdout.splitlines():
            words = line.split()
            if (len(words) > 3 and words[1] != self.bridge
                    and ipaddress.ip_interface(words[3]).ip in net):
                raise AssertionError("%s.0/24 is also on %s now: %s" % (SUBNET, words[1], line))

    def host(self, name, octet):
        ns, outside, inside = TAG + name, TAG + name + "a", TAG + name + "b"
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        sh("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        sh("ip", "link", "set", inside, "netns", ns)
        sh("ip", "link", "set", outside, "master", self.bridge, "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", "%s.%d/24" % (SUBNET, octet), "dev", inside)
        sh("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        return ns, "%s.%d" % (SUBNET, octet)

    def down(self):
        for ns in self.namespaces:  # deleting a namespace deletes its end of the veth, and the pair
            sh("ip", "netns", "del", ns, check=False)
        if self.bridged:
            sh("ip", "link", "del", self.bridge, check=False)


class Postgres:
    """An external cluster owned by user postgres, on TCP in the db host's namespace, trust auth for
    the test network only."""

    def __init__(self, ns, address):
        self.ns, self.address = ns, address
        self.root = tempfile.mkdtemp(prefix="ktune-mh-pg-", dir="/tmp")
        self.data = os.path.join(self.root, "data")
        self.started = False

    def start(self):
        shutil.chown(self.root, "postgres")
        os.chmod(self.root, 0o700)
        sh("runuser", "-u", "postgres", "--", PG_BIN + "/initdb", "-D", self.data, "-A", "trust",
           "-U", "postgres", "--no-sync")
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("listen_addresses = '%s'\nport = 5432\nunix_socket_directories = '%s'\n"
                    "fsync = off\nsynchronous_commit = off\nmax_connections = 100\n"
                    % (self.address, self.data))
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as f:
            f.write("local all postgres trust\nhost all all %s.0/24 trust\n" % SUBNET)
        sh("ip", "netns", "exec", self.ns, "runuser", "-u", "postgres", "--", PG_BIN + "/pg_ctl",
           "-D", self.data, "-l", os.path.join(self.root, "log"), "-w", "start")
        self.started = True
        return "postgresql://postgres@%s:5432/postgres" % self.address

    def query(self, sql):
        """Rows of a query as lists of text (psql over TCP, as the processes connect)."""
        out = sh(PG_BIN + "/psql", "-h", self.address, "-U", "postgres", "-d", "postgres", "-At",
                 "-F", "\t", "-c", sql).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def stop(self):
        if self.started:
            sh("runuser", "-u", "postgres", "--", PG_BIN + "/pg_ctl", "-D", self.data, "-m",
               "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def host_of(worker_id):
    return (worker_id or "").split(":", 1)[0]


class MultiHostTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root for ip netns and runuser")
        if not PG_BIN or not shutil.which("ip") or not shutil.which("unshare"):
            raise unittest.SkipTest("needs PostgreSQL's initdb, iproute2 and unshare")
        global TAG, SUBNET
        TAG, SUBNET = pick_tag_and_subnet()
        print("multihost: names %s*, subnet %s.0/24" % (TAG, SUBNET), file=sys.stderr)
        probe = sh("ip", "netns", "add", TAG + "probe", check=False)
        if probe.returncode != 0:
            raise unittest.SkipTest("ip netns is not supported here: " + probe.stderr.strip())
        sh("ip", "netns", "del", TAG + "probe", check=False)
        cls.t0 = time.time()
        cls.net, cls.pg, cls.procs = Net(), None, []
        cls.tmp = tempfile.mkdtemp(prefix="ktune-mh-", dir="/tmp")
        os.chmod(cls.tmp, 0o755)
        try:
            cls.start_hosts()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_hosts(cls):
        cls.net.up()
        db_ns, db_addr = cls.net.host("db", 2)
        api_ns, api_addr = cls.net.host("api", 3)
        cls.worker_hosts = [cls.net.host("w1", 4), cls.net.host("w2", 5)]
        cls.pg = Postgres(db_ns, db_addr)
        url = cls.pg.start()
        # The same files on every host: one replay dataset, the scale test kernel.
        datasets = os.path.join(cls.tmp, "datasets")
        kernels = os.path.join(cls.tmp, "kernels")
        os.makedirs(datasets)
        os.makedirs(kernels)
        os.symlink(os.path.join(SOURCE, "datasets", DATASET + ".json.gz"),
                   os.path.join(datasets, DATASET + ".json.gz"))
        os.symlink(os.path.join(SOURCE, "tests", "kernels", "scale"), os.path.join(kernels, "scale"))
        common = ["--database-url", url, "--datasets", datasets, "--kernels", kernels,
                  "--lease-s", str(LEASE_S), "--api-token", TOKEN, "--log-level", "debug"]
        cls.api = Ktuned(ARGS.ktuned, SOURCE, netns=api_ns, hostname="api-host",
                         listen=api_addr + ":8080", extra=common + ["--role", "api"])
        cls.api.start()
        cls.procs.append(cls.api)
        cls.workers = [cls.start_worker(i) for i in range(2)]

    @classmethod
    def start_worker(cls, i):
        ns, addr = cls.worker_hosts[i]
        w = Ktuned(ARGS.ktuned, SOURCE, netns=ns, hostname="worker-%d" % (i + 1),
                   listen=addr + ":8080",
                   extra=cls.api.extra[:-2] + ["--role", "worker", "--workers", "2",
                                               "--replay-speed", "1", "--cpu-core", "-1",
                                               "--min-seconds", "0.01", "--min-repeats", "1"])
        w.start()
        cls.procs.append(w)
        return w

    @classmethod
    def tearDownClass(cls):
        keep = os.environ.get("KTUNE_KEEP_LOGS")  # a folder: the processes' logs are copied there
        for i, p in enumerate(cls.procs):
            if keep:
                os.makedirs(keep, exist_ok=True)
                shutil.copy(p.log_path, os.path.join(keep, "%d-%s.log" % (i, p.hostname)))
            if p.proc and p.proc.poll() is None:
                try:
                    os.kill(p.proc.pid, signal.SIGCONT)
                except OSError:
                    pass
            p.cleanup()
        if cls.pg:
            cls.pg.stop()
        cls.net.down()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        print("multihost: %.1f s" % (time.time() - cls.t0), file=sys.stderr)

    # --- helpers ----------------------------------------------------------------------------------
    def get(self, path, k=None):
        return (k or self.api).get(path, headers=AUTH)

    def tune(self, body):
        status, _, job = self.api.post("/v1/tune", body, headers=AUTH)
        self.assertEqual(status, 202, job)
        return job

    def wait_job(self, job_id, timeout=40, predicate=None):
        deadline = time.time() + timeout
        job = None
        while time.time() < deadline:
            status, _, job = self.get("/v1/jobs/%d" % job_id)
            self.assertEqual(status, 200, job)
            if job["status"] in ("succeeded", "failed", "cancelled") or (predicate and predicate(job)):
                return job
            time.sleep(0.05)
        self.fail("job %d did not end in %s s: %s\nworker logs:\n%s" % (
            job_id, timeout, job, "\n".join(w.log_tail(30) for w in self.workers)))

    def trials(self, job_id):
        out, after = [], 0
        while True:
            status, _, page = self.get("/v1/jobs/%d/trials?after=%d&limit=1000" % (job_id, after))
            self.assertEqual(status, 200, page)
            if not page["trials"]:
                return out
            out += page["trials"]
            after = page["next_after"]

    def live_workers(self):
        _, _, body = self.get("/v1/workers")
        return [w for w in body["workers"] if w["status"] in ("idle", "measuring")]

    def check_complete(self, job, budget):
        """Every configuration measured once: the count the job kept, the trial rows and the
        budget agree, config ids are distinct, every trial final."""
        trials = self.trials(job["id"])
        self.assertEqual((job["status"], job["stop_reason"]), ("succeeded", "budget_evaluations"), job)
        self.assertEqual(len(trials), budget)
        self.assertEqual(job["progress"]["trials"], budget, job)
        self.assertEqual(len({t["config_id"] for t in trials}), budget)
        for t in trials:
            self.assertNotIn(t["status"], ("pending", "running"), t)
        return trials

    def held_trials(self, job_id, host):
        """Ids of the job's trials that workers of host hold now (status running)."""
        rows = self.pg.query("SELECT id FROM trials WHERE job_id = %d AND status = 'running'"
                             " AND worker LIKE '%s:%%'" % (job_id, host))
        return {int(r[0]) for r in rows}

    def assert_measured_elsewhere(self, trials, held, host):
        by_id = {t["id"]: t for t in trials}
        for tid in held:
            self.assertIn(tid, by_id)
            self.assertNotEqual(host_of(by_id[tid]["worker"]), host, by_id[tid])

    def fleet_cpu(self):
        _, _, body = self.get("/v1/devices")
        return next((d for d in body["devices"] if d["name"] == "cpu"), None)

    # --- tests (run in name order: they share the hosts) -----------------------------------------
    def test_1_api_lists_validates_and_tunes_fleet_devices(self):
        deadline = time.time() + 15
        cpu = self.fleet_cpu()
        while time.time() < deadline and (not cpu or len(cpu.get("hosts", [])) < 2):
            time.sleep(0.2)
            cpu = self.fleet_cpu()
        self.assertIsNotNone(cpu, "the API does not list the workers' cpu")
        self.assertEqual((cpu["fleet"], sorted(cpu["hosts"])), (True, ["worker-1", "worker-2"]), cpu)
        self.assertEqual(cpu["kernels"], ["scale"])
        _, _, devices = self.get("/v1/devices")
        self.assertIn(REPLAY, [d["name"] for d in devices["devices"]])
        # A worker answers probes and scrapes, nothing else.
        w = self.workers[0]
        self.assertEqual(w.get("/healthz", headers=AUTH)[0], 200)
        self.assertEqual(w.get("/metrics", headers=AUTH)[0], 200)
        self.assertEqual(self.get("/v1/devices", k=w)[0], 404)
        # The API measures nothing itself.
        _, _, metrics = self.get("/metrics")
        self.assertIn("ktune_trials_measured_total 0\n", metrics)
        # Validation on the fleet's record: unknown kernel, bad parallel.
        status, _, err = self.api.post("/v1/tune", {"kernel": "gemm", "device": "cpu"}, headers=AUTH)
        self.assertEqual((status, err["error"]["code"]), (400, "unknown_kernel"), err)
        self.assertIn("scale", err["error"]["hint"])
        for bad in (0, 65, "4", 2.5):
            status, _, err = self.api.post("/v1/tune", {"kernel": "scale", "device": "cpu",
                                                        "parallel": bad}, headers=AUTH)
            self.assertEqual(status, 400, (bad, err))
            self.assertIn("parallel", err["error"]["message"])
        # A cpu job queued on the API, measured by the workers.
        job = self.tune({"kernel": "scale", "device": "cpu", "budget": {"evaluations": 2},
                         "history": "none", "parallel": 2, "problem": {"n": 4096},
                         "final_remeasure": 0})
        self.assertEqual((job["device_class"], job["parallel"]), (cpu["class"], 2), job)
        job = self.wait_job(job["id"])
        trials = self.check_complete(job, 2)
        for t in trials:
            self.assertTrue(host_of(t["worker"]).startswith("worker-"), t)

    def test_2_parallel_job_measured_on_both_hosts(self):
        budget = 24
        job = self.tune({"kernel": "pnpoly", "device": REPLAY, "budget": {"evaluations": budget},
                         "history": "none", "parallel": 4, "seed": 11})
        self.assertEqual(job["parallel"], 4, job)
        # While it runs, how many of its trials are measured at once: never more than the batch of
        # 4, and more than one host's 2 threads could take alone.
        most, deadline = 0, time.time() + 40
        while time.time() < deadline:
            counts = self.pg.query("SELECT count(*) FILTER (WHERE status = 'running'),"
                                   " (SELECT status FROM jobs WHERE id = %d) FROM trials"
                                   " WHERE job_id = %d" % (job["id"], job["id"]))
            most = max(most, int(counts[0][0]))
            if counts[0][1] != "running" and counts[0][1] != "queued":
                break
        print("multihost: parallel 4: at most %d trials measured at once" % most, file=sys.stderr)
        self.assertLessEqual(most, 4)
        self.assertGreaterEqual(most, 3)
        job = self.wait_job(job["id"])
        trials = self.check_complete(job, budget)
        self.assertEqual({host_of(t["worker"]) for t in trials}, {"worker-1", "worker-2"})

    def test_3_worker_killed_mid_job(self):
        budget = 40
        job = self.tune({"kernel": "pnpoly", "device": REPLAY, "budget": {"evaluations": budget},
                         "history": "none", "parallel": 4, "seed": 12})
        victim = self.workers[1]
        # Kill worker-2 while it holds trials of the job (a trial lasts about 0.24 s).
        deadline = time.time() + 20
        while time.time() < deadline:
            _, _, j = self.get("/v1/jobs/%d" % job["id"])
            if j["progress"]["trials"] >= 4 and self.held_trials(job["id"], "worker-2"):
                break
            time.sleep(0.02)
        victim.kill9()
        killed_at = time.time()
        held = self.held_trials(job["id"], "worker-2")  # a dead process changes nothing now
        job = self.wait_job(job["id"], timeout=40)
        trials = self.check_complete(job, budget)
        # What it held was handed back after the lease and measured by worker-1.
        self.assert_measured_elsewhere(trials, held, "worker-2")
        # Its workers are dead, its devices no longer live; the job finished on worker-1.
        deadline = time.time() + 10
        while time.time() < deadline and any(host_of(w["id"]) == "worker-2"
                                              for w in self.live_workers()):
            time.sleep(0.2)
        self.assertFalse([w for w in self.live_workers() if host_of(w["id"]) == "worker-2"])
        cpu = self.fleet_cpu()
        while time.time() < deadline and cpu and cpu["hosts"] != ["worker-1"]:
            time.sleep(0.2)
            cpu = self.fleet_cpu()
        self.assertEqual(cpu["hosts"], ["worker-1"], cpu)
        print("multihost: job %d finished %.1f s after the kill; %d trials it held were measured "
              "by worker-1" % (job["id"], time.time() - killed_at, len(held)), file=sys.stderr)
        self.workers[1] = self.start_worker(1)

    def test_4_frozen_worker_loses_its_lease(self):
        budget = 40
        job = self.tune({"kernel": "pnpoly", "device": REPLAY, "budget": {"evaluations": budget},
                         "history": "none", "parallel": 4, "seed": 13})
        # The host whose runner drives the job is frozen past the lease while it holds trials of
        # the job: its search must move to the other host, its trials be handed back.
        deadline = time.time() + 20
        runner = []
        while time.time() < deadline and not (runner and runner[0][0]):
            runner = self.pg.query("SELECT runner FROM jobs WHERE id = %d" % job["id"])
            time.sleep(0.02)
        host = host_of(runner[0][0])
        frozen = self.workers[int(host[-1]) - 1]
        self.assertEqual(frozen.hostname, host)
        # Frozen, it changes nothing: what the table says it holds is what it will try to store
        # when it thaws.
        held = set()
        while time.time() < deadline and not held:
            os.kill(frozen.proc.pid, signal.SIGSTOP)
            held = self.held_trials(job["id"], host)
            if not held:
                os.kill(frozen.proc.pid, signal.SIGCONT)
                time.sleep(0.03)
        self.assertTrue(held, "%s never held a trial of the job" % host)
        try:
            job = self.wait_job(job["id"], timeout=40)
        finally:
            os.kill(frozen.proc.pid, signal.SIGCONT)
        # The thawed worker's late results (its claims were handed back, measured elsewhere) must
        # change nothing: no trial measured twice, no count beyond the budget.
        time.sleep(1.5)
        _, _, job = self.get("/v1/jobs/%d" % job["id"])
        trials = self.check_complete(job, budget)
        self.assert_measured_elsewhere(trials, held, host)
        self.assertIsNone(frozen.proc.poll(), "the thawed worker died")
        # It took up work again: its workers are live.
        deadline = time.time() + 10
        while time.time() < deadline and not any(host_of(w["id"]) == host
                                                  for w in self.live_workers()):
            time.sleep(0.2)
        self.assertTrue([w for w in self.live_workers() if host_of(w["id"]) == host])


if __name__ == "__main__":
    run_tests()
