#!/usr/bin/env python3
"""Pools `ktune bench --predict --json` results over several seeds (splits): per kernel and
predictor, the held-out top-1 / best-of-top-5 time ratios over the measured predictions (share
within 1.10x / 1.05x, median), the constrained decoding's accuracy and perfect rates, training CPU
seconds and model bytes; then the paired comparison (only the (kernel, seed, problem) where both
predictors' prediction has a time), and the worst top-1 ratio of each predictor.

usage: tools/predict_pool.py RESULT.json...   (one JSON line each, as --json writes it)"""
import itertools
import json
import statistics
import sys


def num(x):
    if isinstance(x, (int, float)):
        return float(x)
    return float("inf") if x == "failed" else None


def main(paths):
    if not paths:
        print(__doc__)
        return 2
    results = [json.load(open(p)) for p in paths]
    rows, kinds = {}, []
    for kernel in sorted({r["kernel"] for r in results}):
        agg = {}
        runs = [r for r in results if r["kernel"] == kernel]
        for r in runs:
            for name, p in r["predictors"].items():
                if name not in kinds:
                    kinds.append(name)
                a = agg.setdefault(name, {"r1": [], "r5": [], "n": 0, "acc1": [], "acc10": [],
                                          "perf10": [], "perf100": [], "cpu": [], "bytes": []})
                for h in p["heldout"]:
                    a["n"] += 1
                    key = (kernel, r["seed"], json.dumps(h["problem"], sort_keys=True))
                    r1, r5 = num(h["top1_ratio"]), num(h["top5_ratio"])
                    rows.setdefault(key, {})[name] = (r1, r5)
                    if r1 is not None:
                        a["r1"].append(r1)
                    if r5 is not None:
                        a["r5"].append(r5)
                c = p["decoding"]["constrained"]
                a["acc1"].append(c["1"]["param_accuracy"])
                a["acc10"].append(c["10"]["param_accuracy"])
                a["perf10"].append(c["10"]["perfect"])
                a["perf100"].append(c["100"]["perfect"])
                a["cpu"].append(p.get("train_cpu_s", p["train_s"]))
                a["bytes"].append(p["model_bytes"])
        print(f"{kernel}: {len(runs)} splits (seeds {sorted(r['seed'] for r in runs)}), "
              f"{runs[0]['problems']} problems, {runs[0]['test_problems']} held out per split")
        print(f"{'pred':8} {'n':>3} {'top1 meas':>9} {'med':>6} {'<=1.10':>6} {'top5 meas':>9} "
              f"{'med':>6} {'<=1.05':>6} {'acc@1':>6} {'acc@10':>6} {'perf@10':>7} "
              f"{'perf@100':>8} {'cpu s':>6} {'bytes':>8}")
        for name, a in agg.items():
            mean = lambda v: statistics.mean(v) if v else float("nan")
            med = lambda v: statistics.median(v) if v else float("nan")
            share = lambda v, lim: sum(x <= lim for x in v) / len(v) if v else float("nan")
            print(f"{name:8} {a['n']:3} {len(a['r1']):9} {med(a['r1']):6.3f} "
                  f"{share(a['r1'], 1.10):6.2f} {len(a['r5']):9} {med(a['r5']):6.3f} "
                  f"{share(a['r5'], 1.05):6.2f} {mean(a['acc1']):6.2f} {mean(a['acc10']):6.2f} "
                  f"{mean(a['perf10']):7.2f} {mean(a['perf100']):8.2f} {mean(a['cpu']):6.2f} "
                  f"{int(mean(a['bytes'])):8}")
        print()
    for which, lim, label in ((0, 1.10, "top-1 <= 1.10x"), (1, 1.05, "best of top-5 <= 1.05x")):
        print(f"paired, {label} (both measured; mean ratio with misses capped at 3x):")
        for a, b in itertools.combinations(kinds, 2):
            both = [(v[a][which], v[b][which]) for v in rows.values()
                    if a in v and b in v and v[a][which] is not None and v[b][which] is not None]
            if not both:
                continue
            wa = sum(x <= lim for x, _ in both) / len(both)
            wb = sum(y <= lim for _, y in both) / len(both)
            ma = statistics.mean(min(x, 3) for x, _ in both)
            mb = statistics.mean(min(y, 3) for _, y in both)
            print(f"  {a:8} vs {b:8} n={len(both):3}: share {wa:.2f} vs {wb:.2f}; "
                  f"mean ratio {ma:.3f} vs {mb:.3f}")
    print("worst top-1 ratio (measured):")
    for name in kinds:
        v = [x[name][0] for x in rows.values() if name in x and x[name][0] is not None]
        if v:
            print(f"  {name:8} {max(v):.2f} ({sum(r > 1.5 for r in v)} of {len(v)} above 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
