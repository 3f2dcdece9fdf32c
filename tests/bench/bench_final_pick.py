#!/usr/bin/env python3
"""Bench: the final pick under measurement noise (issue 12). A real ktuned runs THREE repeated jobs
on the same cpu `gemm` key (history "none", one after the other, one measuring thread): by default
the same strategy and seed (`random`, seed 1), so the three searches propose the same
configurations and differ only by the noise of the machine; `--seeds distinct` gives each job its
own seed (three independent tunings of the key). Each job ends with the final pick:
its `--count` fastest configurations re-measured `--rounds` times, interleaved, the winner by the
median.

Printed per job: the search's fastest configuration and its single time (what the job would have
reported without the pick), the pick's winner, its re-measured median, min-max and spread
((max - min) / median), and each candidate's median; where each winner stood in every job's search;
the job-to-job drift (configurations re-measured in several jobs: how far apart their medians are).
Then the verdict: the three picks AGREE (one configuration), or their winners lie WITHIN THE NOISE
(every two winners' medians differ by at most the noise: the larger of the winners' spreads and
the job-to-job drift; winners re-measured side by side in one job are compared there too), or NOT;
the same for the search's fastest without the pick, for comparison. Exits 1 only when a job fails or a pick is missing (the
verdict is a measurement, not a test). Full run (`make bench`): gemm 384^3, budget 30, 3 x 5
re-measurements, a few minutes; `--quick`: gemm 128^3, budget 8, 3 x 3, under a minute.

  python3 tests/bench/bench_final_pick.py --ktuned build/ktuned --source-dir . [--quick]
      [--size N] [--budget N] [--count N] [--rounds N] [--seeds same|distinct] [--cpu-core N]
      [--warmup N]

--warmup N runs a throwaway job of N evaluations (gemm at half the size, no pick) first: with
--cpu-core 0 the measuring core is shared with ktuned and the database it has just created, whose
start-up work otherwise slows job 1's first trials only.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from ktuned_fixture import Ktuned  # noqa: E402


def fmt_config(config):
    return ",".join("%s=%s" % kv for kv in config.items())


def run_job(k, args, seed, timeout):
    n = args.size
    body = {"kernel": "gemm", "device": "cpu", "problem": {"M": n, "N": n, "K": n},
            "strategy": args.strategy, "seed": seed, "history": "none",
            "budget": {"evaluations": args.budget}, "final_remeasure": args.count,
            "final_rounds": args.rounds, "parallel": 1}
    status, _, job = k.post("/v1/tune", body)
    if status != 202:
        raise SystemExit("POST /v1/tune: %d %s" % (status, job))
    t0 = time.time()
    job = k.wait_job(job["id"], timeout=timeout)
    return job, k.all_trials(job["id"]), time.time() - t0


def drift_between_jobs(jobs_cands):
    """The job-to-job noise: for each configuration re-measured in two or more jobs, the relative
    range of its medians across them; returns (largest, [lines])."""
    by_config = {}
    for cands in jobs_cands:
        for c in cands:
            if c["median_ms"]:
                by_config.setdefault(c["config_id"], []).append(c["median_ms"])
    worst, lines = 0.0, []
    for cid, meds in sorted(by_config.items()):
        if len(meds) < 2:
            continue
        d = (max(meds) - min(meds)) / min(meds)
        worst = max(worst, d)
        lines.append("config %d: medians %s (%.1f%% apart)"
                     % (cid, " / ".join("%.5f" % m for m in meds), 100 * d))
    return worst, lines


def verdict(label, winners, jobs_cands):
    """winners: [(config_id, its candidate record in its job)]. AGREE: one configuration. WITHIN
    THE NOISE: every two winners' medians differ by at most the noise, the larger of the winners'
    own spreads ((max - min) / median over the rounds) and the job-to-job drift of configurations
    re-measured in several jobs; where two winners were re-measured side by side (interleaved) in
    one job, that comparison is shown too. Else NOT within the noise."""
    ids = [w[0] for w in winners]
    if len(set(ids)) == 1:
        line = "%s: AGREE (all three: config %d)" % (label, ids[0])
        print(line)
        return line
    drift, _ = drift_between_jobs(jobs_cands)
    noise = max([drift] + [w[1]["spread"] or 0 for w in winners])
    pairs, ok_all = [], True
    for i in range(len(winners)):
        for j in range(i + 1, len(winners)):
            a, b = winners[i], winners[j]
            if a[0] == b[0]:
                continue
            diff = abs(a[1]["median_ms"] - b[1]["median_ms"]) / min(a[1]["median_ms"],
                                                                     b[1]["median_ms"])
            ok_all &= diff <= noise
            side = []
            for k, cands in enumerate(jobs_cands):
                m = {c["config_id"]: c["median_ms"] for c in cands if c["median_ms"]}
                if a[0] in m and b[0] in m:
                    side.append("side by side in job %d: %d %+.1f%% vs %d"
                                % (k + 1, a[0], 100 * (m[a[0]] / m[b[0]] - 1), b[0]))
            pairs.append("%d vs %d: %.1f%%%s" % (a[0], b[0], 100 * diff,
                                                 " (" + "; ".join(side) + ")" if side else ""))
    line = "%s: %s (%d distinct configurations; noise %.1f%%; medians apart: %s)" % (
        label, "WITHIN THE NOISE" if ok_all else "NOT within the noise", len(set(ids)),
        100 * noise, "; ".join(pairs))
    print(line)
    return line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--quick", action="store_true", help="gemm 128^3, budget 8, 3 x 3 rounds")
    ap.add_argument("--size", type=int, default=384)
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--count", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--seeds", choices=["same", "distinct"], default="same")
    ap.add_argument("--warmup", type=int, default=0,
                    help="evaluations of a throwaway job (another problem, no pick) run first, so "
                         "that ktuned's and its new database's start-up work is over before job 1 "
                         "[0: none]")
    ap.add_argument("--cpu-core", type=int, default=None,
                    help="ktuned's --cpu-core (default: ktuned's own, the last core)")
    args = ap.parse_args()
    if args.quick:
        args.size, args.budget, args.rounds = 128, 8, 3
    if not os.path.exists(os.path.join(args.source_dir, "kernels", "gemm", "spec.json")):
        print("skipped: kernels/gemm/spec.json does not exist")
        return 0
    extra = ["--workers", "1"]
    if args.cpu_core is not None:
        extra += ["--cpu-core", str(args.cpu_core)]
    k = Ktuned(args.ktuned, args.source_dir, extra=extra)
    k.start()
    failed = False
    try:
        status, _, devices = k.get("/v1/devices")
        cpu = [d for d in devices["devices"] if d["name"] == "cpu"][0]
        print("final pick bench: gemm %d^3 on %s (%s), strategy %s, seeds %s, budget %d, "
              "re-measure %d x %d rounds" % (args.size, cpu["class"], cpu["toolchain"] if "toolchain"
                                              in cpu else "", args.strategy, args.seeds,
                                              args.budget, args.count, args.rounds))
        if args.warmup > 0:
            n = max(8, args.size // 2)
            status, _, warm = k.post("/v1/tune", {
                "kernel": "gemm", "device": "cpu", "problem": {"M": n, "N": n, "K": n},
                "strategy": "random", "seed": 99, "history": "none", "final_remeasure": 0,
                "budget": {"evaluations": args.warmup}})
            t0 = time.time()
            warm = k.wait_job(warm["id"], timeout=60 + 30 * args.warmup)
            print("warm-up job: gemm %d^3, %d evaluations, %s in %.0f s (not reported)"
                  % (n, args.warmup, warm["status"], time.time() - t0))
        picks, searches, searched, jobs_cands = [], [], [], []
        for i in range(3):
            seed = 1 if args.seeds == "same" else 1 + i
            job, trials, secs = run_job(k, args, seed, timeout=60 + 30 * args.budget)
            pick = job.get("final_pick") or {}
            if job["status"] != "succeeded" or pick.get("state") != "picked":
                print("job %d (id %d): %s, pick %s: %s" % (i + 1, job["id"], job["status"],
                                                            pick.get("state"), job.get("error")))
                failed = True
                continue
            search = [t for t in trials if t["final_round"] is None and t["status"] == "ok"]
            searched.append({t["config_id"]: t["time_ms"] for t in search})
            fastest = min(search, key=lambda t: (t["time_ms"], t["seq"]))
            cands = pick["candidates"]
            jobs_cands.append(cands)
            w = pick["winner"]
            statuses = {}
            for t in trials:
                if t["final_round"] is None:
                    statuses[t["status"]] = statuses.get(t["status"], 0) + 1
            print("job %d (id %d, seed %d, %.0f s, %d evaluations %s + %d re-measurements):"
                  % (i + 1, job["id"], seed, secs, job["progress"]["trials"],
                     ", ".join("%d %s" % (v, s) for s, v in sorted(statuses.items())),
                     sum(1 for t in trials if t["final_round"] is not None)))
            print("  search's fastest: config %d at %.5f ms (one measurement)"
                  % (fastest["config_id"], fastest["time_ms"]))
            for ci, c in enumerate(cands):
                print("  %s config %-6d search %.5f ms  re-measured median %.5f ms  min-max "
                      "%.5f-%.5f  spread %5.2f%%  %s" % (
                          "*" if ci == w else " ", c["config_id"], c["search_ms"],
                          c["median_ms"] or float("nan"), c["min_ms"] or float("nan"),
                          c["max_ms"] or float("nan"), 100 * (c["spread"] or 0),
                          fmt_config([t for t in trials if t["id"] == c["search_trial_id"]][0]
                                     ["config"])))
            if w is None:
                print("  no candidate measured ok in every round: no pick")
                failed = True
                continue
            print("  pick: config %d, median %.5f ms, spread %.2f%% (job best %.5f ms)"
                  % (cands[w]["config_id"], cands[w]["median_ms"], 100 * cands[w]["spread"],
                     job["best"]["time_ms"]))
            picks.append((cands[w]["config_id"], cands[w]))
            # Without the pick, the job would report its search's fastest; its re-measured
            # figures are known when it was a candidate (it always is: the fastest is first).
            searches.append((fastest["config_id"], cands[0]))
        if len(picks) == 3:
            # Where each job's winner stood in every job's search: a configuration the pick never
            # saw (not measured, or outside a search's top --count) cannot be picked there.
            for cid in sorted({p[0] for p in picks}):
                where = []
                for i, times in enumerate(searched):
                    if cid not in times:
                        where.append("job %d: not measured" % (i + 1))
                        continue
                    rank = 1 + sum(1 for t in times.values() if t < times[cid])
                    where.append("job %d: %.5f ms, rank %d of %d" % (i + 1, times[cid], rank,
                                                                    len(times)))
                print("config %d in the searches: %s" % (cid, "; ".join(where)))
            drift, lines = drift_between_jobs(jobs_cands)
            if lines:
                print("job-to-job drift (configurations re-measured in several jobs): %.1f%% at most;"
                      " %s" % (100 * drift, "; ".join(lines)))
            verdict("final picks", picks, jobs_cands)
            verdict("search's fastest (no pick)", searches, jobs_cands)
    finally:
        k.stop()
        k.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
