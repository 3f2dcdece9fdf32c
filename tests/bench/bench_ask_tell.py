#!/usr/bin/env python3
"""Bench: ask/tell (issue 27, section 3, "Speed"). A real ktuned (embedded PostgreSQL,
--replay-speed 0) and harnesses written here in Python (standard library, one keep-alive connection
each):

1. Round trip: one harness on one external job (random over a 32 x 32 space, parallel 1) asks one
   configuration and tells its result, --rounds times: p50 and p90 of ask + tell in milliseconds
   (target: p50 < 2 ms); then the same with one request a round, a tell that also asks for the
   next configuration ("ask": 1; both figures are printed, each labelled); the two-call round trip
   again after the throughput part, on a database holding its trials too (a tell's cost must not
   grow with the trials table).
2. Throughput: --harnesses harnesses at once (default 8), each a process of its own on its own
   external job (parallel 8), ask 8 and tell each result in a request of its own: tells a second
   over all of them (target: >= 1,000); then the same with the last tell of each batch asking for
   the next 8 (no ask requests but the first), labelled apart.
3. Replay equivalence: the same `auto` job (seed 1, history none, parallel 1, --evaluations, default
   400) twice: in process on the replay device replay:gemm_clblast-RTX_2080_Ti, and on the external
   device with the dataset's space inline, measured by a harness that looks each configuration up in
   the same Kernel Tuner cache file (its time, or its failure as the replay backend reads it). Both
   must propose the same configurations in the same order (checked: exit 1 otherwise); prints both
   wall times and their ratio (target: external <= 1.5 x replay).

Parts 1 and 2 run twice each: with the harnesses written here in Python, then with harnesses in C
(bench_ask_tell_load, tests/bench/bench_ask_tell_load.c: a thread and a libcurl keep-alive
connection per harness, jansson for the replies; the same request bodies, batch sizes and fake
times) when that program exists (--c-harness, default: beside --ktuned, where the build puts it).
Each figure is labelled "harnesses in Python" or "harnesses in C", each with the server's CPU per
tell and the harnesses' own CPU per tell (Python: this process, or the harness processes from
RUSAGE_CHILDREN; C: its getrusage, all threads): on a small machine the harnesses share the cores
with ktuned and its PostgreSQL, and a Python harness's 0.3-0.7 ms of CPU per request is a large part
of what a tell costs, where a framework's own harness (C++, CUDA) costs far less.

Beside them: the load average, a baseline measured in the same run (GET /healthz p50 on a keep-alive
connection; the round trip is also given as a ratio to it) and the server's CPU time per round trip
and per tell in the throughput part (ktuned's processes and its embedded PostgreSQL's, which pg_ctl
starts outside ktuned's process tree, from /proc: figures the machine's load moves less than a
rate).

Prints the figures; exits 1 only when a check of correctness fails (a configuration sequence that
differs, an error reply, a job that does not end, harnesses in C that fail or tell fewer than asked),
never on a time. --quick (ctest bench_ask_tell_small): 40 rounds, 2 harnesses of 40 tells, 60
evaluations, the harnesses in C at the same sizes.

  python3 tests/bench/bench_ask_tell.py --ktuned build/ktuned --source-dir .

The >= 1,000 tells/s target is a figure of a quiet machine: rates fall with whatever else shares the
cores (tests/bench/results/ask-tell.txt). To check it, nothing else running (`cat /proc/loadavg`
below 1), three runs in a row with 8,000 tells a throughput part (a job's start then weighs less):

  for i in 1 2 3; do cat /proc/loadavg; python3 tests/bench/bench_ask_tell.py --ktuned build/ktuned \
      --source-dir . --c-harness build/bench_ask_tell_load --tells 1000; done

and read "tells/s" of the harnesses in C beside their "server CPU per tell". On a busy machine
compare builds by the server's CPU per tell (run both builds' ktuned at the same time), not by rates.
"""
import argparse
import gzip
import http.client
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from ktuned_fixture import Ktuned  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proc_tree  # noqa: E402

DATASET = "gemm_clblast-RTX_2080_Ti"
GRID = {"parameters": [{"name": "A", "values": list(range(1, 33))},
                       {"name": "B", "values": list(range(1, 33))}]}


class Client:
    """One keep-alive connection: what a harness holds."""

    def __init__(self, address):
        self.conn = http.client.HTTPConnection(address, timeout=120)

    def post(self, path, body):
        self.conn.request("POST", path, body=json.dumps(body).encode(),
                          headers={"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        reply = json.loads(resp.read() or b"null")
        if resp.status not in (200, 202):
            raise RuntimeError("POST %s: %d %s" % (path, resp.status, reply))
        return reply

    def get(self, path):
        self.conn.request("GET", path)
        resp = self.conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")


def external_job(client, kernel, space, budget, parallel, strategy="random", seed=1, problem=None):
    body = {"kernel": kernel, "device": "external", "device_class": "bench-class", "space": space,
            "strategy": strategy, "budget": {"evaluations": budget}, "seed": seed, "history": "none",
            "parallel": parallel}
    if problem is not None:
        body["problem"] = problem
    return client.post("/v1/tune", body)["id"]


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def tree_cpu_s(*roots):
    """CPU seconds (user + system) used so far by the processes roots and their descendants alive
    now, each counted once, from /proc; None without /proc (proc_tree.py)."""
    t = proc_tree.table()
    if t is None:
        return None
    kids, procs = t
    return sum(procs[pid].own_s for pid in proc_tree.descendants(kids, *roots) if pid in procs)


def baseline(address, rounds):
    """p50 of GET /healthz on one keep-alive connection: the HTTP round trip alone, measured in the
    same run (the machine's load moves every figure; ratios to this one move less)."""
    c = Client(address)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        c.get("/healthz")
        times.append((time.perf_counter() - t0) * 1000)
    return percentile(times, 0.5)


def round_trip(address, rounds, combined=False):
    """p50 and p90 of one round of batch 1: an ask and a tell (two requests), or (combined) a tell
    that also asks for the next configuration ("ask": 1 in its body: one request)."""
    c = Client(address)
    jid = external_job(c, "bench_rt", GRID, rounds + 10, 1)
    times = []
    trials = c.post("/v1/jobs/%d/ask" % jid, {"n": 1})["trials"] if combined else None
    for i in range(rounds):
        t0 = time.perf_counter()
        if not combined:
            trials = c.post("/v1/jobs/%d/ask" % jid, {"n": 1})["trials"]
        if not trials:
            raise RuntimeError("round %d: an empty ask" % i)
        body = {"trials": [{"id": trials[0]["id"], "status": "ok", "time_ms": 1.0 + i % 13}]}
        if combined:
            body["ask"] = 1
        reply = c.post("/v1/jobs/%d/tell" % jid, body)
        if combined:
            trials = reply["ask"]["trials"]
        times.append((time.perf_counter() - t0) * 1000)
    # The job's budget has 10 to spare: left running, it would hold one of the runner's --max-jobs
    # slots (8) until handed back as idle (30 s), and the throughput part's jobs would wait for it.
    c.conn.request("DELETE", "/v1/jobs/%d" % jid)
    resp = c.conn.getresponse()
    resp.read()
    if resp.status not in (200, 409):
        raise RuntimeError("DELETE /v1/jobs/%d: %d" % (jid, resp.status))
    return percentile(times, 0.5), percentile(times, 0.9)


def harness_loop(address, job, tells_each, start, done, combined):
    """One harness of the throughput part, in a process of its own (a harness is a program of its
    own; 8 threads of one Python would share one interpreter lock): asks 8, tells each result in a
    request of its own, until tells_each are told or the job is done; combined: the last tell of
    each batch also asks for the next 8 ("ask" in its body), no ask of its own but the first. Puts
    (tells, error) on done."""
    told, error = 0, None
    try:
        c = Client(address)
        start.wait()
        a = None
        while told < tells_each:
            if a is None:
                a = c.post("/v1/jobs/%d/ask" % job, {"n": 8, "wait_s": 10})
            if a["done"]:
                break
            trials, a = a["trials"], None
            for i, t in enumerate(trials):
                body = {"trials": [{"id": t["id"], "status": "ok", "time_ms": 1.0 + t["seq"] % 7}]}
                if combined and i == len(trials) - 1:
                    body["ask"] = {"n": 8, "wait_s": 10}
                r = c.post("/v1/jobs/%d/tell" % job, body)
                told += 1
                if "ask" in body:
                    a = r["ask"]
    except Exception as e:  # reported, and the bench fails
        error = "harness on job %d: %s" % (job, e)
    done.put((told, error))


def throughput(address, harnesses, tells_each, combined=False):
    ctx = multiprocessing.get_context("fork")
    tag = "c" if combined else ""
    jobs = [external_job(Client(address), "bench_tp%s_%d" % (tag, h), GRID, tells_each, 8, seed=h + 1)
            for h in range(harnesses)]
    start, done = ctx.Barrier(harnesses + 1), ctx.Queue()
    procs = [ctx.Process(target=harness_loop, args=(address, jobs[h], tells_each, start, done, combined))
             for h in range(harnesses)]
    for p in procs:
        p.start()
    start.wait()
    t0 = time.perf_counter()
    results = [done.get(timeout=600) for _ in procs]
    seconds = time.perf_counter() - t0
    for p in procs:
        p.join()
    return sum(r[0] for r in results), seconds, [r[1] for r in results if r[1]]


def c_harness(path, k, extra):
    """Runs the harnesses in C (bench_ask_tell_load, tests/bench/bench_ask_tell_load.c) against k
    with extra arguments: (its JSON figures, the server's CPU seconds over the run, an error or None).
    The server's CPU is read from /proc around the run as for the Python harnesses; the C program's
    own CPU (getrusage, all its threads) is in its figures."""
    cmd = [path, "--url", "http://" + k.address, "--json"] + extra
    if k.token:
        cmd += ["--token", k.token]
    cpu0 = tree_cpu_s(k.proc.pid, k.postmaster_pid())
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    cpu1 = tree_cpu_s(k.proc.pid, k.postmaster_pid())
    server = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return None, server, "harnesses in C (%s): exit %d: %s" % (
            " ".join(extra), out.returncode, (out.stderr or out.stdout).strip()[-500:])
    return json.loads(lines[-1]), server, None


def lat_text(fig, kind):
    lat = fig["latency"].get(kind)
    return "p50 %.2f ms, p90 %.2f ms" % (lat["p50_ms"], lat["p90_ms"]) if lat else "-"


def load_cache(source_dir):
    with gzip.open(os.path.join(source_dir, "datasets", DATASET + ".json.gz")) as f:
        return json.load(f)


def replay_result(cache, keys, tid, config):
    """What the replay backend reads from the record (catalog/dataset.c): a number is ok with that
    time; CompilationFailedConfig / RuntimeFailedConfig are compile / runtime errors; anything else,
    or no record, is invalid. The recorded compile and measure times go with it."""
    rec = cache["cache"].get(",".join(str(config[k]) for k in keys))
    out = {"id": tid, "status": "invalid"}
    if rec is None:
        return out
    t = rec.get("time")
    out["compile_ms"] = max(float(rec.get("compile_time") or 0), 0.0)
    out["measure_ms"] = max(float(rec.get("verification_time") or 0) + float(rec.get("benchmark_time") or 0), 0.0)
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        out.update(status="ok", time_ms=float(t))
    elif t == "CompilationFailedConfig":
        out["status"] = "compile_error"
    elif t == "RuntimeFailedConfig":
        out["status"] = "runtime_error"
    return out


def configs_in_order(k, jid):
    trials = [t for t in k.all_trials(jid) if t.get("final_round") is None]
    return [t["config"] for t in sorted(trials, key=lambda t: t["seq"])]


def replay_equivalence(k, source_dir, evaluations):
    cache = load_cache(source_dir)
    keys = cache["tune_params_keys"]
    c = Client(k.address)
    common = {"strategy": "auto", "seed": 1, "history": "none", "parallel": 1,
              "budget": {"evaluations": evaluations}}
    t0 = time.perf_counter()
    rid = c.post("/v1/tune", dict(common, kernel="clblast_gemm", device="replay:" + DATASET))["id"]
    replay_job = k.wait_job(rid, timeout=1800)
    replay_s = time.perf_counter() - t0
    space = {"parameters": [{"name": p, "values": cache["tune_params"][p]} for p in keys],
             "restrictions": cache.get("restrictions") or []}
    # A connection of its own: the first one sat idle through the replay job, longer than ktuned's
    # idle limit on a loaded machine, and may have been closed.
    c = Client(k.address)
    t0 = time.perf_counter()
    eid = c.post("/v1/tune", dict(common, kernel="gemm_bench", device="external",
                                  device_class="bench-" + DATASET, space=space))["id"]
    while True:
        a = c.post("/v1/jobs/%d/ask" % eid, {"n": 1, "wait_s": 10})
        if a["done"]:
            break
        c.post("/v1/jobs/%d/tell" % eid,
               {"trials": [replay_result(cache, keys, t["id"], t["config"]) for t in a["trials"]]})
    external_job_view = k.wait_job(eid, timeout=60)
    external_s = time.perf_counter() - t0
    same = configs_in_order(k, rid) == configs_in_order(k, eid)
    return {"replay_s": replay_s, "external_s": external_s, "same": same,
            "replay": replay_job, "external": external_job_view}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--quick", action="store_true", help="small sizes, for ctest (correctness only)")
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--harnesses", type=int, default=8)
    ap.add_argument("--tells", type=int, default=400, help="tells per harness")
    ap.add_argument("--evaluations", type=int, default=400)
    ap.add_argument("--two-call-only", action="store_true",
                    help="leave out the tell that also asks (a server from before it, to compare)")
    ap.add_argument("--c-harness", default=None,
                    help="the harnesses in C (bench_ask_tell_load; default: beside --ktuned, where "
                         "the build puts it; not run when that one is missing, an error when a path "
                         "given here is)")
    args = ap.parse_args()
    c_path = args.c_harness or os.path.join(os.path.dirname(os.path.abspath(args.ktuned)),
                                            "bench_ask_tell_load")
    if not os.access(c_path, os.X_OK):
        if args.c_harness:
            print("FAIL: --c-harness %s: no such program" % c_path)
            sys.exit(1)
        print("harnesses in C: not run (no %s: `make build` builds it)" % c_path)
        c_path = None
    if args.quick:
        args.rounds, args.harnesses, args.tells, args.evaluations = 40, 2, 40, 60
    failures = []
    k = Ktuned(args.ktuned, os.path.abspath(args.source_dir),
               extra=["--workers", "1", "--replay-speed", "0", "--log-level", "warn"])
    try:
        k.start()
        print("load average before: %s (cores: %d)" % (" ".join("%.2f" % x for x in os.getloadavg()),
                                                       os.cpu_count() or 0))
        base = baseline(k.address, args.rounds)
        print("baseline GET /healthz (same connection kind, %d rounds): p50 %.2f ms"
              % (args.rounds, base))
        kinds = (False,) if args.two_call_only else (False, True)
        for combined in kinds:
            label = ("one tell with \"ask\": 1, one request" if combined
                     else "ask + tell, two requests")
            rt0 = tree_cpu_s(k.proc.pid, k.postmaster_pid())
            pc0 = time.process_time()
            p50, p90 = round_trip(k.address, args.rounds, combined)
            pc1 = time.process_time()
            rt1 = tree_cpu_s(k.proc.pid, k.postmaster_pid())
            print("round trip (%s, batch 1, %d rounds), harnesses in Python: p50 %.2f ms, p90 "
                  "%.2f ms, %.1f x the baseline (target p50 < 2 ms)"
                  % (label, args.rounds, p50, p90, p50 / base if base > 0 else 0))
            if rt0 is not None and rt1 is not None:
                print("  server CPU per round trip (ktuned + its PostgreSQL, user + system): %.3f ms"
                      % ((rt1 - rt0) * 1000 / args.rounds))
            print("  client CPU per round trip (the harness, user + system): %.3f ms"
                  % ((pc1 - pc0) * 1000 / args.rounds))
            if c_path:
                fig, server, err = c_harness(c_path, k, ["--roundtrip", "--rounds", str(args.rounds)]
                                             + (["--combined"] if combined else []))
                if err:
                    failures.append(err)
                    continue
                print("round trip (%s, batch 1, %d rounds), harnesses in C: %s, %.1f x the baseline"
                      % (label, args.rounds, lat_text(fig, "round"),
                         fig["latency"]["round"]["p50_ms"] / base if base > 0 else 0))
                if server is not None:
                    print("  server CPU per round trip (ktuned + its PostgreSQL, user + system): "
                          "%.3f ms" % (server * 1000 / args.rounds))
                print("  client CPU per round trip (the harness, user + system): %.3f ms"
                      % fig["client_cpu_ms_per_tell"])
        for combined in kinds:
            label = ("the last tell of each batch asks for the next 8" if combined
                     else "ask 8, then a tell per result: two-call")
            cpu0 = tree_cpu_s(k.proc.pid, k.postmaster_pid())
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            n, seconds, errors = throughput(k.address, args.harnesses, args.tells, combined)
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu1 = tree_cpu_s(k.proc.pid, k.postmaster_pid())
            failures += errors
            print("throughput (%s), harnesses in Python: %d tells from %d harnesses in %.2f s: "
                  "%.0f tells/s (target >= 1,000)" % (label, n, args.harnesses, seconds,
                                                      n / seconds if seconds > 0 else 0))
            if cpu0 is not None and cpu1 is not None and n > 0:
                print("  server CPU per tell (ktuned + its PostgreSQL, user + system, asks and "
                      "steps included): %.3f ms" % ((cpu1 - cpu0) * 1000 / n))
            if n > 0:
                # the harness processes, reaped by throughput(): their whole lives, start included
                client = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
                print("  client CPU per tell (the harness processes, user + system): %.3f ms"
                      % (client * 1000 / n))
            if c_path:
                fig, server, err = c_harness(c_path, k, ["--harnesses", str(args.harnesses),
                                                         "--tells", str(args.tells)]
                                             + (["--combined"] if combined else []))
                if err:
                    failures.append(err)
                    continue
                print("throughput (%s), harnesses in C: %d tells from %d harnesses in %.2f s: "
                      "%.0f tells/s (target >= 1,000)"
                      % (label, fig["tells"], fig["harnesses"], fig["seconds"], fig["tells_per_s"]))
                if server is not None and fig["tells"] > 0:
                    print("  server CPU per tell (ktuned + its PostgreSQL, user + system, asks and "
                          "steps included): %.3f ms" % (server * 1000 / fig["tells"]))
                print("  client CPU per tell (the harness threads, user + system): %.3f ms"
                      % fig["client_cpu_ms_per_tell"])
                print("  request latency: first ask (the job's start) %s; ask %s; tell %s; tell "
                      "that asks %s" % (lat_text(fig, "first_ask"), lat_text(fig, "ask"),
                                        lat_text(fig, "tell"), lat_text(fig, "tell_ask")))
                if fig["tells"] != args.harnesses * args.tells:
                    failures.append("harnesses in C told %d of %d" % (fig["tells"],
                                                                      args.harnesses * args.tells))
        # The same round trip again, the database now holding the throughput part's trials too: a
        # tell must cost the same whatever the trials table holds (sql/020's tell scanned it all).
        held = int(k.psql("SELECT count(*) FROM trials"))
        p50b, p90b = round_trip(k.address, args.rounds)
        print("round trip again (ask + tell, two requests), %d trials in the database: p50 %.2f "
              "ms, p90 %.2f ms"
              % (held, p50b, p90b))
        eq = replay_equivalence(k, args.source_dir, args.evaluations)
        for name in ("replay", "external"):
            job = eq[name]
            print("%-8s auto job of %d evaluations: %s, %d trials, best %s ms, %.2f s"
                  % (name, args.evaluations, job["status"], job["progress"]["trials"],
                     (job["best"] or {}).get("time_ms"), eq[name + "_s"]))
            if job["status"] != "succeeded" or job["progress"]["trials"] != args.evaluations:
                failures.append("the %s job did not finish its budget: %s" % (name, job["status"]))
        print("same configurations in the same order: %s; wall time external / replay: %.2f (target <= 1.5)"
              % ("yes" if eq["same"] else "NO", eq["external_s"] / eq["replay_s"]))
        if not eq["same"]:
            failures.append("the ask/tell job proposed other configurations than the replay job")
        if eq["replay"]["best"] and eq["external"]["best"] and \
                eq["replay"]["best"]["config"] != eq["external"]["best"]["config"]:
            failures.append("the two jobs' bests differ")
    finally:
        k.stop()
        k.cleanup()
    print("load average after: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
