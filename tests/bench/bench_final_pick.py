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
((max - min) / median), and each candidate's median. Then the verdict: the three picks AGREE (one
configuration), or their winners lie WITHIN THE NOISE (the min-max ranges of their re-measurements
overlap, and the medians differ by at most the largest spread), or NOT; the same for the search's
fastest without the pick, for comparison. Exits 1 only when a job fails or a pick is missing (the
verdict is a measurement, not a test). Full run (`make bench`): gemm 384^3, budget 30, 3 x 5
re-measurements, a few minutes; `--quick`: gemm 128^3, budget 8, 3 x 3, under a minute.

  python3 tests/bench/bench_final_pick.py --ktuned build/ktuned --source-dir . [--quick]
      [--size N] [--budget N] [--count N] [--rounds N] [--seeds same|distinct] [--cpu-core N]
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


def within_noise(a, b):
    """Two re-measured winners are within the noise of each other: their min-max ranges overlap
    and their medians differ by at most the larger spread."""
    overlap = a["min_ms"] <= b["max_ms"] and b["min_ms"] <= a["max_ms"]
    diff = abs(a["median_ms"] - b["median_ms"]) / min(a["median_ms"], b["median_ms"])
    return overlap and diff <= max(a["spread"], b["spread"]), diff


def verdict(label, winners, key):
    """winners: [(config_id, record)]; prints and returns the verdict line."""
    ids = [w[0] for w in winners]
    if len(set(ids)) == 1:
        line = "%s: AGREE (all three: config %d)" % (label, ids[0])
    else:
        pairs, worst = [], 0.0
        ok_all = True
        for i in range(len(winners)):
            for j in range(i + 1, len(winners)):
                if ids[i] == ids[j]:
                    continue
                ok, diff = within_noise(key(winners[i][1]), key(winners[j][1]))
                ok_all &= ok
                worst = max(worst, diff)
                pairs.append("%d vs %d: %+.1f%%%s" % (ids[i], ids[j], 100 * diff,
                                                     "" if ok else " (outside)"))
        line = "%s: %s (%d distinct configurations; medians differ %s)" % (
            label, "WITHIN THE NOISE" if ok_all else "NOT within the noise",
            len(set(ids)), "; ".join(pairs))
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
        picks, searches = [], []
        for i in range(3):
            seed = 1 if args.seeds == "same" else 1 + i
            job, trials, secs = run_job(k, args, seed, timeout=60 + 30 * args.budget)
            pick = job.get("final_pick") or {}
            if job["status"] != "succeeded" or pick.get("state") != "picked":
                print("job %d: %s, pick %s: %s" % (job["id"], job["status"], pick.get("state"),
                                                    job.get("error")))
                failed = True
                continue
            search = [t for t in trials if t["final_round"] is None and t["status"] == "ok"]
            fastest = min(search, key=lambda t: (t["time_ms"], t["seq"]))
            cands = pick["candidates"]
            w = pick["winner"]
            statuses = {}
            for t in trials:
                if t["final_round"] is None:
                    statuses[t["status"]] = statuses.get(t["status"], 0) + 1
            print("job %d (seed %d, %.0f s, %d evaluations %s + %d re-measurements):"
                  % (job["id"], seed, secs, job["progress"]["trials"],
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
            verdict("final picks", picks, lambda r: r)
            verdict("search's fastest (no pick)", searches, lambda r: r)
    finally:
        k.stop()
        k.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
