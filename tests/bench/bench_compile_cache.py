"""Bench: a second problem size of the same CPU kernel, tuned after the first (issue 32, "the compile
cache makes a second problem size of the same kernel >= 3x faster to tune than the first").

One ktuned (measuring on the cpu device, a fresh data folder: an empty binary cache), two jobs one
after the other, each the catalog's CPU `gemm` with the same strategy, seed and budget (random,
seed 1, --evaluations distinct configurations, history none, no final pick, so the two propose the
same configurations: gemm's space does not depend on the problem), on two problems of the same work
(2 M N K flops): 512 x 512 x 512 first, then 1024 x 512 x 256. A CPU kernel's binary does not
depend on the problem size (service/runner/README.md, "Caching"), so the second job finds every
configuration compiled. Prints per job: wall seconds (the job's elapsed_seconds, queue to finish),
the trials' compile seconds and how many found their binary cached, measuring seconds, the
configurations in common, and the ratio first / second (the aim: >= 3). Asserts only that both jobs
succeed with their budget (exit 1 otherwise): a bench, not a test.

  python3 tests/bench/bench_compile_cache.py --ktuned build/ktuned --source-dir . \\
      [--evaluations 20] [--out FILE]
"""
import argparse
import datetime
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from ktuned_fixture import Ktuned  # noqa: E402

FIRST = {"M": 512, "N": 512, "K": 512}
SECOND = {"M": 1024, "N": 512, "K": 256}


def tune(k, problem, evaluations):
    status, _, job = k.post("/v1/tune", {"kernel": "gemm", "device": "cpu", "problem": problem,
                                         "strategy": "random", "seed": 1, "history": "none",
                                         "final_remeasure": 0,
                                         "budget": {"evaluations": evaluations}})
    if status != 202:
        raise SystemExit("POST /v1/tune answered %d: %s" % (status, job))
    job = k.wait_job(job["id"], timeout=60 + 30 * evaluations)
    trials = k.all_trials(job["id"])
    if job["status"] != "succeeded" or len(trials) != evaluations:
        raise SystemExit("job %s: %s with %d trials" % (job["id"], job["status"], len(trials)))
    cached = sum(1 for t in trials if (t.get("extras") or {}).get("cached_binary"))
    return {"job": job["id"], "wall_s": job["timings"]["elapsed_seconds"],
            "compile_s": sum((t.get("compile_ms") or 0) for t in trials) / 1000.0,
            "measure_s": sum((t.get("measure_ms") or 0) for t in trials) / 1000.0,
            "cached": cached, "n": len(trials), "best_ms": job["best"]["time_ms"],
            "configs": {tuple(sorted(t["config"].items())) for t in trials}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--evaluations", type=int, default=20)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.source_dir, "kernels", "gemm", "spec.json")):
        print("skipped: the CPU gemm kernel is not in this tree")
        return 0
    k = Ktuned(args.ktuned, os.path.abspath(args.source_dir),
               extra=["--kernels", os.path.join(os.path.abspath(args.source_dir), "kernels"),
                      "--workers", "1"])
    lines = []
    k.start()
    try:
        load = os.getloadavg()
        first = tune(k, FIRST, args.evaluations)
        second = tune(k, SECOND, args.evaluations)
    finally:
        k.stop()
        k.cleanup()
    lines.append("bench_compile_cache: CPU gemm, random seed 1, %d evaluations, history none, no "
                 "final pick; one ktuned, an empty binary cache at the start; %s UTC, load average "
                 "%.2f %.2f %.2f" % (args.evaluations,
                                     datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), *load))
    lines.append("%-22s %8s %10s %8s %10s %9s" % ("job", "wall s", "compile s", "cached",
                                                  "measure s", "best ms"))
    for name, r, p in (("first", first, FIRST), ("second", second, SECOND)):
        lines.append("%-22s %8.2f %10.2f %5d/%-2d %10.2f %9.4f" % (
            "%s %dx%dx%d" % (name, p["M"], p["N"], p["K"]), r["wall_s"], r["compile_s"],
            r["cached"], r["n"], r["measure_s"], r["best_ms"]))
    common = len(first["configs"] & second["configs"])
    ratio = first["wall_s"] / second["wall_s"] if second["wall_s"] > 0 else float("inf")
    lines.append("configurations in common: %d of %d; wall time first / second: %.2f (aim >= 3: %s)"
                 % (common, args.evaluations, ratio, "met" if ratio >= 3 else "MISSED"))
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
