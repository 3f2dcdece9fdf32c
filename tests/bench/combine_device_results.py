#!/usr/bin/env python3
"""Combines the --json results of several `ktune bench --device` runs of one kernel, device and
problem (rows measured in parts, each part with its own measurement cache: a configuration measured
twice in parallel parts has two values, so one united cache would not replay every row exactly)
into one report: best ms at the evaluation and time checkpoints (mean, median), box data at the last
of each, and Welch's t-test of the --test rows against every other row. Reads only the JSON
(per_seed arrays): no measurement, no ktune needed.

usage: combine_device_results.py [--test gbfs,na2c] RESULT.json[.gz]... > report.txt
(rows in the order of the files; a name ending in .gz is read through gzip)
"""
import argparse
import gzip
import json
import math
import sys


def betacf(a, b, x):
    """Continued fraction of the regularised incomplete beta (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t, df):
    if math.isinf(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def welch(x, y):
    nx, ny = len(x), len(y)
    mx, my = sum(x) / nx, sum(y) / ny
    vx = sum((v - mx) ** 2 for v in x) / (nx - 1)
    vy = sum((v - my) ** 2 for v in y) / (ny - 1)
    se2 = vx / nx + vy / ny
    if se2 == 0:
        return mx, my, (0.0 if mx == my else math.copysign(math.inf, mx - my)), float(nx + ny - 2), (1.0 if mx == my else 0.0)
    t = (mx - my) / math.sqrt(se2)
    df = se2 ** 2 / ((vx / nx) ** 2 / (nx - 1) + (vy / ny) ** 2 / (ny - 1))
    return mx, my, t, df, t_two_sided_p(t, df)


def quantile(xs, q):
    s = sorted(xs)
    h = (len(s) - 1) * q
    lo = math.floor(h)
    return s[lo] + (h - lo) * (s[min(lo + 1, len(s) - 1)] - s[lo])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--test", default="gbfs,na2c")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    rows, head, sources = {}, None, []
    for path in a.results:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            d = json.load(f)
        ident = (d["kernel"], d["device_class"], json.dumps(d["problem"], sort_keys=True), d["budget"], d["seeds"])
        if head is None:
            head, first = ident, d
        elif ident != head:
            sys.exit(f"{path}: another experiment {ident} (expected {head})")
        if d.get("time_checkpoints") != first.get("time_checkpoints"):
            sys.exit(f"{path}: other time checkpoints")
        mc = d["measure_cache"]
        sources.append(f"{path}: {', '.join(d['strategies'])}; {mc['measured']} measured, {mc['hits']} replayed from {mc['file']}")
        for name, s in d["strategies"].items():
            if name in rows:
                sys.exit(f"{path}: row {name} given twice")
            rows[name] = s
    d = first
    cps = [str(c) for c in d["checkpoints"]]
    tcs = ["%g" % t for t in d.get("time_checkpoints") or []]
    print(f"ktune bench (combined): {d['kernel']} on {d['device']} ({d['device_class']}), problem {json.dumps(d['problem'])}")
    print(f"  {d['space_size']} configurations; budget {d['budget']} distinct evaluations, seeds 0-{d['seeds'] - 1}")
    for s in sources:
        print("  " + s)
    print("\nbest ms after N evaluations: mean over seeds (median)")
    print("%-12s" % "strategy" + "".join("%22s" % ("@" + c) for c in cps))
    for n, s in rows.items():
        print("%-12s" % n + "".join("%11.4g (%8.4g)" % (s["checkpoints"][c]["mean_ms"], s["checkpoints"][c]["median_ms"]) for c in cps))
    if tcs:
        print("\nbest ms at T s of the modelled tuning clock (recorded compile + measurement time plus the searcher's), mean (median); seeds that got to T")
        print("%-12s" % "strategy" + "".join("%26s" % ("@%ss" % t) for t in tcs))
        for n, s in rows.items():
            print("%-12s" % n + "".join("%11.4g (%8.4g) %3d" % (s["time_checkpoints"][t]["mean_ms"], s["time_checkpoints"][t]["median_ms"], s["time_checkpoints"][t]["reached"]) for t in tcs))
    blocks = [("@" + cps[-1] + " evaluations", lambda s: s["checkpoints"][cps[-1]]["per_seed"])]
    if tcs:
        blocks.append((f"T = {tcs[-1]} s of the modelled clock", lambda s: s["time_checkpoints"][tcs[-1]]["per_seed"]))
    for label, get in blocks:
        print(f"\nbox data over seeds at {label} (ms; quartiles by linear interpolation, type 7)")
        print("%-12s%10s%10s%10s%10s%10s%10s" % ("strategy", "min", "q1", "median", "mean", "q3", "max"))
        for n, s in rows.items():
            x = [v for v in get(s) if v is not None]
            print("%-12s%10.4g%10.4g%10.4g%10.4g%10.4g%10.4g" % (n, min(x), quantile(x, .25), quantile(x, .5), sum(x) / len(x), quantile(x, .75), max(x)))
    tests = [t for t in a.test.split(",") if t in rows]
    for label, get in blocks:
        print(f"\nWelch's t-test at {label} (two-sided, unequal variances, on ms)")
        done = set()
        for t in tests:
            for n in rows:
                if n == t or frozenset((t, n)) in done:
                    continue
                done.add(frozenset((t, n)))
                x, y = get(rows[t]), get(rows[n])
                if None in x or None in y:
                    print(f"  {t:12s} vs {n:12s} undefined (a seed found nothing)")
                    continue
                mx, my, tt, df, p = welch(x, y)
                lower = f"{t} {100 * (1 - mx / my):.1f}% lower" if mx < my else f"{n} {100 * (1 - my / mx):.1f}% lower"
                print(f"  {t:12s} vs {n:12s} means {mx:8.4g} vs {my:8.4g}, t {tt:7.3f}, df {df:5.1f}, p {p:.4f}; {lower}")


if __name__ == "__main__":
    main()
