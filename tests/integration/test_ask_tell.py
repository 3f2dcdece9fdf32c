"""Integration: ask/tell (issue 27, section 3). A job on the `external` device with its space inline
(parameters, a restriction, a default, a problem) is measured by the test itself acting as the
caller's harness: ask n=4 leases 4 distinct valid configurations; tell records ok and invalid results
(a second tell of a trial is a duplicate); ids that are unknown or another job's are a 400 naming
trials[i].id; a bad space is a 400 with its JSON path; a lease that runs out (lease_s 1) offers its
configuration again; a harness that goes away leaves the job running with the view saying
"waiting", and when it comes back the job finishes with a best; GET /v1/best answers the external
key with the version it answers for, and a catalog key by device_class as by device; an ask on a
job of another device is a 409; with a token, ask and tell need the tune scope; asks that wait
(more than the HTTP threads) leave GET /healthz answered at once; a tell that also asks ("ask")
answers the next configurations in its reply, the same ones as separate asks would. `ktune bench
--server` (issue 28 item 1) runs the offline bench with ktuned's searchers through ask/tell: the same
seeds give the same curves as in process; an unreachable server and a strategy the server refuses
fail with their messages."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
ADMIN = "ktk_" + "a" * 48

SPACE = {"parameters": [{"name": "BS", "values": [32, 64, 128, 256]},
                        {"name": "T", "values": [1, 2, 4, 8]}],
         "restrictions": ["BS * T <= 512", "n % BS == 0"],
         "default": {"BS": 64, "T": 1}}
PROBLEM = {"n": 1024}


def valid(config):
    return config["BS"] * config["T"] <= 512 and PROBLEM["n"] % config["BS"] == 0


def fake_time(config):
    """The harness's measurement: a made-up time with one best configuration."""
    return 1.0 + abs(config["BS"] - 128) / 64.0 + abs(config["T"] - 2)


class AskTellTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--workers", "1", "--replay-speed", "0"])
        cls.k.start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop() if cls.k.proc else 0
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def submit(self, budget=8, version=None, strategy="random", seed=1, **extra):
        body = {"kernel": "vadd_it", "device": "external", "device_class": "it-class",
                "space": SPACE, "problem": PROBLEM, "strategy": strategy,
                "budget": {"evaluations": budget}, "seed": seed, "history": "none", "parallel": 4}
        if version:
            body["kernel_version"] = version
        body.update(extra)
        status, _, job = self.k.post("/v1/tune", body)
        self.assertEqual(status, 202, job)
        return job["id"]

    def ask(self, jid, **body):
        status, _, reply = self.k.post("/v1/jobs/%d/ask" % jid, body)
        self.assertEqual(status, 200, reply)
        return reply

    def tell(self, jid, trials, want=200):
        status, _, reply = self.k.post("/v1/jobs/%d/tell" % jid, {"trials": trials})
        self.assertEqual(status, want, reply)
        return reply

    def finish(self, jid):
        """Measures every configuration the job proposes until it ends."""
        for _ in range(200):
            a = self.ask(jid, n=4, wait_s=5)
            if a["done"]:
                return a
            self.tell(jid, [{"id": t["id"], "status": "ok", "time_ms": fake_time(t["config"])}
                            for t in a["trials"]])
        self.fail("job %d did not end" % jid)

    def test_a_ask_tell_duplicate(self):
        jid = self.submit()
        a = self.ask(jid, n=4)
        self.assertEqual((a["job_id"], a["done"]), (jid, False))
        configs = [t["config"] for t in a["trials"]]
        self.assertEqual(len(configs), 4, a)
        self.assertEqual(len({tuple(sorted(c.items())) for c in configs}), 4, configs)
        for t in a["trials"]:
            self.assertTrue(valid(t["config"]), t)
            self.assertEqual(t["lease_s"], 60)
            self.assertIn("T", t["lease_expires_at"])
        _, _, view = self.k.get("/v1/jobs/%d" % jid)
        self.assertEqual((view["harness"]["state"], view["harness"]["leased"]), ("active", 4), view)
        told = [{"id": a["trials"][0]["id"], "status": "ok", "time_ms": 2.5, "metrics": {"gflops": 12.5}},
                {"id": a["trials"][1]["id"], "status": "ok", "time_ms": 1.5},
                {"id": a["trials"][2]["id"], "status": "invalid"},
                {"id": a["trials"][3]["id"], "status": "runtime_error"}]
        r = self.tell(jid, told)
        self.assertEqual([x["outcome"] for x in r["results"]], ["recorded"] * 4, r)
        again = self.tell(jid, told[:2])
        self.assertEqual([x["outcome"] for x in again["results"]], ["duplicate"] * 2, again)
        # A tell of one trial records first (sql/024); one already final falls back to the checks.
        once = self.tell(jid, told[2:3])
        self.assertEqual([x["outcome"] for x in once["results"]], ["duplicate"], once)
        # What was told is what the trials page shows; the best is the fastest ok.
        page = self.k.all_trials(jid)
        by_id = {t["id"]: t for t in page}
        self.assertEqual(by_id[told[0]["id"]]["status"], "ok")
        self.assertEqual(by_id[told[0]["id"]]["time_ms"], 2.5)
        self.assertEqual(by_id[told[0]["id"]]["extras"], {"metrics": {"gflops": 12.5}})
        self.assertEqual(by_id[told[2]["id"]]["status"], "invalid")
        # The dashboard's compact page carries the metrics too (null where none were told).
        _, _, compact = self.k.get("/v1/jobs/%d/trials?format=compact" % jid)
        metrics = {row[compact["fields"].index("seq")]: row[compact["fields"].index("metrics")]
                   for row in compact["rows"]}
        self.assertEqual(metrics[a["trials"][0]["seq"]], {"gflops": 12.5}, compact)
        self.assertIsNone(metrics[a["trials"][1]["seq"]], compact)
        _, _, view = self.k.get("/v1/jobs/%d" % jid)
        self.assertEqual(view["best"]["time_ms"], 1.5, view)
        self.assertEqual(view["progress"]["trials"], 4)
        # ok needs a time; a status outside the list is refused, naming the field.
        status, _, bad = self.k.post("/v1/jobs/%d/tell" % jid, {"trials": [{"id": 1, "status": "ok"}]})
        self.assertEqual((status, bad["error"]["message"][:18]), (400, "trials[0].time_ms "), bad)
        self.finish(jid)
        self.assertEqual(self.k.wait_job(jid)["status"], "succeeded")

    def test_b_wrong_ids(self):
        one, two = self.submit(seed=2), self.submit(seed=3)
        a1, a2 = self.ask(one, n=1), self.ask(two, n=1)
        status, _, r = self.k.post("/v1/jobs/%d/tell" % one,
                                   {"trials": [{"id": a1["trials"][0]["id"], "status": "invalid"},
                                               {"id": 987654321, "status": "invalid"}]})
        self.assertEqual(status, 400, r)
        self.assertTrue(r["error"]["message"].startswith("trials[1].id:"), r)
        status, _, r = self.k.post("/v1/jobs/%d/tell" % one,
                                   {"trials": [{"id": a2["trials"][0]["id"], "status": "invalid"}]})
        self.assertEqual(status, 400, r)
        self.assertTrue(r["error"]["message"].startswith("trials[0].id:"), r)
        self.assertIn("another job", r["error"]["message"])
        # Nothing of a refused tell was recorded.
        self.assertEqual(self.k.all_trials(one), [])
        for jid in (one, two):
            self.assertEqual(self.k.request("DELETE", "/v1/jobs/%d" % jid)[0], 200)
        # A cancelled job's ask is done; a trial told after it is lost.
        a = self.ask(one, wait_s=0)
        self.assertEqual((a["trials"], a["done"], a["job_status"]), ([], True, "cancelled"))
        r = self.tell(one, [{"id": a1["trials"][0]["id"], "status": "ok", "time_ms": 1}])
        self.assertEqual(r["results"][0]["outcome"], "lost", r)

    def test_c_bad_space_names_the_path(self):
        cases = [
            ({"parameters": [{"name": "BS", "values": [1, 2]}], "restrictions": ["BS > 0", "BS > 0 && BS < 4"]},
             "space.restrictions[1]: unexpected '&' at column "),
            ({"parameters": [{"name": "in", "values": [1]}]}, "space.parameters[0].name:"),
            ({"parameters": [{"name": "BS", "values": [1, 1]}]}, "space.parameters[0].values[1]:"),
            ({"parameters": [{"name": "BS", "values": [1, 2]}], "default": {"BS": 3}}, "space.default:"),
            ({"parameters": []}, "space.parameters:"),
        ]
        for space, prefix in cases:
            body = {"kernel": "k", "device": "external", "device_class": "c", "space": space}
            status, _, r = self.k.post("/v1/tune", body)
            self.assertEqual((status, r["error"]["code"]), (400, "bad_space"), r)
            self.assertTrue(r["error"]["message"].startswith(prefix), (prefix, r))
        self.assertIn('write "and"', cases and self.k.post("/v1/tune", {
            "kernel": "k", "device": "external", "device_class": "c",
            "space": cases[0][0]})[2]["error"]["message"])
        status, _, r = self.k.post("/v1/tune", {"kernel": "k", "device": "external", "space": SPACE})
        self.assertEqual(status, 400, r)
        self.assertIn("device_class", r["error"]["message"])
        status, _, r = self.k.post("/v1/tune", {"kernel": "k", "device": "external", "device_class": "c",
                                                "space": SPACE, "problem": {"n": "big"}})
        self.assertEqual((status, r["error"]["message"]), (400, "problem.n: must be a number"), r)

    def test_e_events_wake_on_a_tell(self):
        """GET /v1/jobs/{id}/events waits while nothing changes and answers as soon as a tell records a
        trial, with the trial and the new cursor."""
        jid = self.submit(budget=4, seed=9)
        t = self.ask(jid, n=1)["trials"][0]
        got = {}

        def listen():
            t0 = time.monotonic()
            got["reply"] = self.k.get("/v1/jobs/%d/events?after=0&status=running&wait_s=20" % jid)
            got["s"] = time.monotonic() - t0

        th = threading.Thread(target=listen)
        th.start()
        time.sleep(1.5)
        self.assertTrue(th.is_alive(), "the events answered with nothing to say")
        self.tell(jid, [{"id": t["id"], "status": "ok", "time_ms": 1.25}])
        th.join(20)
        status, hdrs, text = got["reply"]
        self.assertEqual((status, hdrs["content-type"]), (200, "text/event-stream"), text)
        self.assertLess(got["s"], 10, "the tell did not wake the events")
        page = json.loads(text.split("event: trials\ndata: ")[1].split("\n\n")[0])
        self.assertEqual([r[4] for r in page["rows"]], [1.25])
        self.assertIn("\nid: %d\n" % page["next_after"], text)
        self.assertEqual(self.k.request("DELETE", "/v1/jobs/%d" % jid)[0], 200)

    def test_d_lease_expiry_and_absent_harness(self):
        jid = self.submit(budget=6, seed=4)
        first = self.ask(jid, n=1, lease_s=1)["trials"][0]
        # While leased the trial is not offered: the next ask gets the batch's other trials.
        others = self.ask(jid, n=4, wait_s=0)["trials"]
        self.assertNotIn(first["id"], [t["id"] for t in others])
        self.tell(jid, [{"id": t["id"], "status": "ok", "time_ms": fake_time(t["config"])} for t in others])
        time.sleep(1.3)
        again = self.ask(jid, n=1, lease_s=1)["trials"]
        self.assertEqual([(t["id"], t["config"]) for t in again], [(first["id"], first["config"])])
        # The harness goes away: the job waits, running, and says so.
        time.sleep(5.5)
        _, _, view = self.k.get("/v1/jobs/%d" % jid)
        self.assertEqual(view["status"], "running", view)
        self.assertEqual(view["harness"]["state"], "waiting", view)
        self.assertIsNotNone(view["harness"]["last_ask_at"])
        # It comes back: the expired lease is offered once more, and the job finishes with a best.
        back = self.ask(jid, n=4)["trials"]
        self.assertIn(first["id"], [t["id"] for t in back])
        self.tell(jid, [{"id": t["id"], "status": "ok", "time_ms": fake_time(t["config"])} for t in back])
        self.finish(jid)
        view = self.k.wait_job(jid)
        self.assertEqual((view["status"], view["progress"]["trials"]), ("succeeded", 6), view)
        self.assertIsNotNone(view["best"])
        self.assertEqual(view["harness"]["state"], "ended")

    def test_g_waiting_asks_hold_no_http_worker(self):
        """An ask with configurations ready is answered on the HTTP worker (api_job_ask's first
        call); one that must wait defers to a thread of its own: more waiting asks than HTTP
        threads (4) leave every worker free, and GET /healthz answers at once meanwhile."""
        jid = self.submit(budget=8, seed=7)
        leased = self.ask(jid, n=8, wait_s=5)["trials"]
        self.assertTrue(leased)
        results = []

        def waiting_ask():
            t0 = time.monotonic()
            status, _, reply = self.k.post("/v1/jobs/%d/ask" % jid, {"n": 1, "wait_s": 1.5})
            results.append((status, reply.get("trials"), time.monotonic() - t0))

        threads = [threading.Thread(target=waiting_ask) for _ in range(6)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        for _ in range(5):
            self.assertEqual(self.k.get("/healthz")[0], 200)
        healthz_s = time.monotonic() - t0
        for t in threads:
            t.join()
        # Nothing was open (every trial of the batch leased for 60 s): each ask waited its wait_s.
        self.assertEqual([(s, tr) for s, tr, _ in results], [(200, [])] * 6, results)
        self.assertTrue(all(w >= 1.4 for _, _, w in results), results)
        self.assertLess(healthz_s, 1.0, "GET /healthz waited for the asks")
        self.tell(jid, [{"id": t["id"], "status": "ok", "time_ms": fake_time(t["config"])}
                        for t in leased])
        self.finish(jid)

    def test_h_tell_that_asks(self):
        """A tell with "ask" records, then leases the configurations the step it caused proposed,
        in one round trip: the same configurations in the same order as a job of the same seed
        driven by separate asks and tells; its last reply says done. A bad "ask" is a 400 naming
        it, and nothing is recorded then."""
        def configs(jid):
            return [t["config"] for t in sorted(self.k.all_trials(jid), key=lambda t: t["seq"])
                    if t.get("final_round") is None]

        plain, combined = self.submit(budget=5, seed=11, parallel=1), self.submit(budget=5, seed=11, parallel=1)
        self.finish(plain)
        trials = self.ask(combined, n=1)["trials"]
        status, _, bad = self.k.post("/v1/jobs/%d/tell" % combined,
                                     {"trials": [{"id": trials[0]["id"], "status": "invalid"}], "ask": 0})
        self.assertEqual((status, bad["error"]["message"][:13]), (400, "field 'ask' m"), bad)
        status, _, bad = self.k.post("/v1/jobs/%d/tell" % combined,
                                     {"trials": [{"id": trials[0]["id"], "status": "invalid"}],
                                      "ask": {"n": 1, "wait": 1}})
        self.assertEqual(status, 400, bad)
        self.assertIn("wait", bad["error"]["message"])
        _, _, view = self.k.get("/v1/jobs/%d" % combined)
        self.assertEqual(view["progress"]["trials"], 0, view)  # the refused tells recorded nothing
        replies = []
        while trials:
            t = trials[0]
            status, _, r = self.k.post("/v1/jobs/%d/tell" % combined,
                                       {"trials": [{"id": t["id"], "status": "ok", "time_ms": fake_time(t["config"])}],
                                        "ask": {"n": 1, "wait_s": 5}})
            self.assertEqual(status, 200, r)
            self.assertEqual(r["results"], [{"id": t["id"], "outcome": "recorded"}], r)
            replies.append(r["ask"])
            trials = r["ask"]["trials"]
        self.assertEqual([len(a["trials"]) for a in replies], [1, 1, 1, 1, 0], replies)
        self.assertTrue(replies[-1]["done"], replies)
        self.assertEqual(replies[-1]["job_status"], "succeeded", replies)
        self.assertEqual(configs(combined), configs(plain))
        self.assertEqual(self.k.wait_job(combined)["best"]["config"], self.k.wait_job(plain)["best"]["config"])

    def bench(self, *args, env_server=None, expect=0):
        """`ktune bench` with args: the completed process (its exit code checked)."""
        env = dict(os.environ)
        for var in ("KTUNE_SERVER", "KTUNE_TOKEN", "KTUNE_TIMEOUT"):
            env.pop(var, None)
        if env_server:
            env["KTUNE_SERVER"] = env_server
        ktune = os.path.join(os.path.dirname(os.path.abspath(ARGS.ktuned)), "ktune")
        p = subprocess.run([ktune, "bench"] + list(args), env=env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, expect, "ktune bench %s\nstdout: %s\nstderr: %s"
                         % (" ".join(args), p.stdout[-2000:], p.stderr[-2000:]))
        return p

    def test_i_bench_remote(self):
        """ktune bench --server / --remote: each run an external job whose searcher ktuned runs, the
        replayed cache answering; curves, fractions and rounds as in process (same seeds, same
        configurations), the jobs succeeded with the budget's trials."""
        space = os.path.join(ARGS.source_dir, "datasets", "pnpoly_kt-RTX_3090.json.gz")
        tmp = tempfile.mkdtemp(prefix="kt-bench-remote-", dir="/tmp")
        self.addCleanup(shutil.rmtree, tmp, True)
        cases = [(["--strategies", "random,auto", "--budget", "30", "--seeds", "2"], "server"),
                 (["--strategies", "gbfs", "--budget", "12", "--seeds", "1", "--batch", "3",
                   "--include-failed"], "env")]
        for n, (args, how) in enumerate(cases):
            common = ["--spaces", space] + args
            local_json, remote_json = ("%s/%s-%d.json" % (tmp, w, n) for w in ("local", "remote"))
            local = self.bench(*common, "--json", local_json)
            if how == "server":
                remote = self.bench(*common, "--json", remote_json, "--server",
                                    "http://" + self.k.address)
            else:
                remote = self.bench(*common, "--json", remote_json, "--remote",
                                    env_server="http://" + self.k.address)
            # The tables: the same but for the searcher's time (ask + tell are HTTP round trips
            # now), in "ovh us" and in the score's clock (the score, the share of its range after
            # a run's last evaluation).
            def masked(text):
                return [re.sub(r"up to \d+% of it", "up to N% of it",
                               re.sub(r"\|\s+[\d.]+ \|\s+-?[\d.]+ ", "| OVH | SCORE ", line))
                        for line in text.splitlines()]
            self.assertEqual(masked(local.stdout), masked(remote.stdout), remote.stdout)
            with open(local_json) as f:
                lj = json.load(f)
            with open(remote_json) as f:
                rj = json.load(f)
            self.assertEqual((lj.get("remote"), rj.get("remote")), (None, True))
            for ls, rs in zip(lj["spaces"], rj["spaces"]):
                for name, lf in ls["strategies"].items():
                    rf = rs["strategies"][name]
                    for key in ("fraction", "evals_to_5pct", "rounds_fraction", "clock_fraction"):
                        self.assertEqual(lf[key], rf[key], (name, key))
                    for lr, rr in zip(lf["runs"], rf["runs"]):
                        for key in ("evaluations", "rounds", "best_so_far", "cum_cost_s"):
                            self.assertEqual(lr[key], rr[key], (name, lr["seed"], key))
        # The jobs: external, one per run, each ended by its budget.
        _, _, page = self.k.get("/v1/jobs?limit=100")
        jobs = [j for j in page["jobs"] if j["kernel"] == "pnpoly_kt-RTX_3090"]
        self.assertEqual(len(jobs), 5, page)
        for j in jobs:
            view = self.k.wait_job(j["id"], timeout=30)
            self.assertEqual(view["status"], "succeeded", view)
            self.assertIn(view["progress"]["trials"], (30, 12), view)
        # Errors: no server, a strategy the server refuses (its message), history with --remote.
        p = self.bench("--spaces", space, "--strategies", "random", "--budget", "5", "--seeds", "1",
                       "--server", "http://127.0.0.1:1", expect=3)
        self.assertIn("cannot reach ktuned at http://127.0.0.1:1", p.stderr)
        self.assertIn("--remote needs ktuned at http://127.0.0.1:1", p.stderr)
        p = self.bench("--spaces", space, "--strategies", "mindmap", "--budget", "5", "--seeds",
                       "1", "--server", "http://" + self.k.address, expect=1)
        self.assertIn("strategy mindmap needs a trained surrogate", p.stderr)
        self.assertIn("ktune bench: error: strategy mindmap on pnpoly_kt-RTX_3090: POST /v1/tune",
                      p.stderr)
        self.assertIn("ktuned answered HTTP 409 (its message above)", p.stderr)
        p = self.bench("--spaces", space, "--strategies", "random", "--history", space, "--remote",
                       expect=2)
        self.assertIn("--history runs in process only", p.stderr)

    def test_e_best_names_the_version(self):
        v1 = self.submit(budget=16, version="v1", seed=5)
        self.finish(v1)
        self.assertEqual(self.k.wait_job(v1)["status"], "succeeded")
        q = "/v1/best?kernel=vadd_it&device=external&device_class=it-class&n=1024"
        status, _, best = self.k.get(q)
        self.assertEqual((status, best["kernel_hash"], best["kernel_version"]), (200, "v1", "v1"), best)
        self.assertEqual(best["config"], {"BS": 128, "T": 2}, best)
        v2 = self.submit(budget=4, version="v2", seed=6)
        self.finish(v2)
        self.k.wait_job(v2)
        self.assertEqual(self.k.get(q)[2]["kernel_hash"], "v2")
        self.assertEqual(self.k.get(q + "&kernel_version=v1")[2]["kernel_hash"], "v1")
        status, _, miss = self.k.get(q.replace("n=1024", "n=2048"))
        self.assertEqual((status, miss["error"]["code"]), (404, "no_best"), miss)
        status, _, bad = self.k.get(q.replace("&device_class=it-class", ""))
        self.assertEqual(status, 400, bad)

    def test_f_not_external_is_409(self):
        _, _, devices = self.k.get("/v1/devices")
        replay = [d for d in devices["devices"] if d["name"].startswith("replay:")][0]
        status, _, job = self.k.post("/v1/tune", {"kernel": replay["kernels"][0], "device": replay["name"],
                                                  "budget": {"evaluations": 2}, "history": "none"})
        self.assertEqual(status, 202, job)
        status, _, r = self.k.post("/v1/jobs/%d/ask" % job["id"], {"n": 1, "wait_s": 0})
        self.assertEqual((status, r["error"]["code"]), (409, "conflict"), r)
        self.assertIn("external", r["error"]["hint"])
        # GET /v1/best by device class (a host asks for the class it runs on): the same answer.
        self.k.wait_job(job["id"])
        q = "/v1/best?kernel=%s" % replay["kernels"][0]
        by_device = self.k.get(q + "&device=" + replay["name"])
        by_class = self.k.get(q + "&device_class=" + replay["class"])
        self.assertEqual((by_device[0], by_class[0]), (200, 200), (by_device, by_class))
        self.assertEqual(by_class[2]["config"], by_device[2]["config"])
        self.assertEqual(by_class[2]["device_class"], replay["class"])
        status, _, r = self.k.get(q + "&device_class=no-such-class")
        self.assertEqual((status, r["error"]["code"]), (400, "unknown_device"), r)
        status, _, r = self.k.get(q + "&device_class=" + replay["class"] + "&tune_on_miss=5")
        self.assertEqual(status, 400, r)
        status, _, r = self.k.post("/v1/jobs/%d/ask" % 99999999, {})
        self.assertEqual(status, 404, r)
        status, _, r = self.k.post("/v1/tune", {"kernel": replay["kernels"][0], "device": replay["name"],
                                                "space": SPACE})
        self.assertEqual(status, 400, r)


class AskTellScopeTest(unittest.TestCase):
    def test_tune_scope(self):
        k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--workers", "1", "--api-token", ADMIN])
        try:
            k.start()
            admin = {"Authorization": "Bearer " + ADMIN}
            status, _, t = k.post("/v1/tokens", {"name": "reader", "scope": "read"}, headers=admin)
            self.assertEqual(status, 201, t)
            reader = {"Authorization": "Bearer " + t["token"]}
            status, _, job = k.post("/v1/tune", {"kernel": "s", "device": "external", "device_class": "c",
                                                 "space": SPACE, "problem": PROBLEM,
                                                 "budget": {"evaluations": 2}, "parallel": 2},
                                 headers=admin)
            self.assertEqual(status, 202, job)
            path = "/v1/jobs/%d/" % job["id"]
            self.assertEqual(k.post(path + "ask", {"wait_s": 0}, headers={})[0], 401)
            self.assertEqual(k.post(path + "ask", {"wait_s": 0}, headers=reader)[0], 403)
            self.assertEqual(k.post(path + "tell", {"trials": [{"id": 1, "status": "invalid"}]},
                                    headers=reader)[0], 403)
            status, _, a = k.post(path + "ask", {"n": 2}, headers=admin)
            self.assertEqual((status, len(a["trials"])), (200, 2), a)
            status, _, r = k.post(path + "tell", {"trials": [{"id": t["id"], "status": "invalid"}
                                                             for t in a["trials"]]}, headers=admin)
            self.assertEqual(status, 200, r)
        finally:
            k.cleanup()


if __name__ == "__main__":
    run_tests()
