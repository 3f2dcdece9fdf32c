#!/usr/bin/env python3
"""Bench: neural transformations per layer (issue 14's first report table). A real ktuned tunes every
conv layer of each preset network (GET /v1/networks) on the cpu device twice with the kernel
conv2d_neural: a plain job (semantics-preserving configurations only) and a neural job (the
transformations the layer admits, judged by Fisher Potential against --threshold on --data). Per
layer: the fastest semantics-preserving configuration, the fastest legal neural one, the speed-up,
the network's parameter ratio with that layer transformed, its Fisher ratio, and how many
candidates were judged illegal; per network: the conv layers' inference time before and after
(each layer's own choice; a bottleneck's effect on the next layer's inputs is not counted, so the
"after" figure is conservative) and the mean time of one legality check (a Fisher Potential
computed, not cached).

  python3 tests/bench/bench_neural_layers.py --ktuned build/ktuned --source-dir . [--quick]
      [--networks vgg_fm,resnet_fm] [--budget N] [--strategy S] [--threshold T]
      [--data fashion-mnist|fashion-mnist-small] [--batch N] [--out PREFIX]
  python3 tests/bench/bench_neural_layers.py --from-json tests/bench/results/neural-layers.json

--quick (ctest): one network, its first layer that takes every transformation, budget 12, the small
data set; checks the report's structure. Exits 1 when a job fails or a figure is missing.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from ktuned_fixture import Ktuned  # noqa: E402

ALL = ["group", "bottleneck", "spatial_group", "unroll_group", "split_group"]


def changes(config):
    return (config.get("GROUPS", 1), config.get("BOTTLENECK", 1), config.get("SEQ", 0)) != (1, 1, 0)


def run_job(k, args, problem, neural):
    body = {"kernel": "conv2d_neural", "device": "cpu", "problem": problem, "strategy": args.strategy,
            "seed": args.seed, "history": "none", "budget": {"evaluations": args.budget},
            "final_remeasure": 0, "parallel": 1}
    if neural:
        body["neural"] = neural
    status, _, job = k.post("/v1/tune", body)
    if status != 202:
        raise SystemExit("POST /v1/tune: %d %s" % (status, job))
    job = k.wait_job(job["id"], timeout=3600)
    if job["status"] != "succeeded":
        raise SystemExit("job %d %s: %s" % (job["id"], job["status"], job.get("error")))
    return job, k.all_trials(job["id"])


def layer_row(k, args, net, conv):
    problem = {"N": args.batch, **{a: conv[a] for a in ("C", "K", "H", "W", "R", "S")}}
    allow = [a for a in ALL if a != "bottleneck" or conv["bottleneck_ok"]]
    neural = {"allow": allow, "network": net["name"], "layer": conv["name"], "data": args.data,
              "threshold": args.threshold}
    plain, _ = run_job(k, args, problem, None)
    job, trials = run_job(k, args, problem, neural)
    judged = [t for t in trials if changes(t["config"])]
    illegal = [t for t in judged if t["status"] == "illegal"]
    legal_ok = [t for t in judged if t["status"] == "ok"]
    checks = [t["extras"]["legality_seconds"] for t in judged
              if t["extras"] and "legality_seconds" in t["extras"] and not t["extras"]["legality_cached"]]
    row = {"network": net["name"], "layer": conv["name"], "problem": problem,
           "plain_ms": plain["best"]["time_ms"], "plain_config": plain["best"]["config"],
           "judged": len(judged), "illegal": len(illegal), "legal_measured": len(legal_ok),
           "check_seconds": checks}
    if legal_ok:
        best = min(legal_ok, key=lambda t: t["time_ms"])
        e = best["extras"]
        row.update({"neural_ms": best["time_ms"], "neural_config": best["config"],
                    "transformation": e["transformation"], "fisher_ratio": e["fisher_ratio"],
                    "params_ratio": e["network_params"] / e["network_params_original"],
                    "speedup": plain["best"]["time_ms"] / best["time_ms"]})
    return row


def report(doc):
    lines = ["Neural transformations per layer (conv2d_neural on cpu; %s)" % doc["setup"], ""]
    lines.append("%-10s %-10s %-26s %10s %10s %7s %-26s %7s %7s %9s" % (
        "network", "layer", "problem (N,C,K,H,W,R,S)", "plain ms", "neural ms", "speedup",
        "transformation", "fisher", "params", "illegal"))
    for r in doc["layers"]:
        p = r["problem"]
        shape = ",".join(str(p[a]) for a in ("N", "C", "K", "H", "W", "R", "S"))
        if "neural_ms" in r:
            lines.append("%-10s %-10s %-26s %10.4f %10.4f %6.2fx %-26s %7.3f %6.3fx %4d/%-4d" % (
                r["network"], r["layer"], shape, r["plain_ms"], r["neural_ms"], r["speedup"],
                r["transformation"], r["fisher_ratio"], r["params_ratio"], r["illegal"], r["judged"]))
        else:
            lines.append("%-10s %-10s %-26s %10.4f %10s %7s %-26s %7s %7s %4d/%-4d" % (
                r["network"], r["layer"], shape, r["plain_ms"], "-", "-",
                "(no legal candidate)" if r["judged"] else "(none applies)",
                "-", "-", r["illegal"], r["judged"]))
    lines.append("")
    for n in doc["networks"]:
        lines.append("%s: conv layers %.4f ms -> %.4f ms (%.2fx); legality check %.3f s mean over %d "
                     "computed (%d judged in all)" % (
                         n["network"], n["before_ms"], n["after_ms"], n["before_ms"] / n["after_ms"],
                         n["check_mean_s"], n["checks"], n["judged"]))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ktuned")
    ap.add_argument("--source-dir", default=".")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--networks", default="vgg_fm,resnet_fm")
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threshold", type=float, default=1.0)
    ap.add_argument("--data", default="fashion-mnist")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", help="write PREFIX.txt and PREFIX.json")
    ap.add_argument("--from-json", help="reprint a checked-in result")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            sys.stdout.write(report(json.load(f)))
        return 0
    if args.quick:
        args.networks, args.budget, args.data = "vgg_fm", 12, "fashion-mnist-small"
    k = Ktuned(args.ktuned, args.source_dir,
               extra=["--kernels", os.path.join(os.path.abspath(args.source_dir), "kernels"),
                      "--workers", "1", "--min-seconds", "0.05"])
    k.start()
    t0 = time.time()
    try:
        status, _, body = k.get("/v1/networks")
        if status != 200:
            raise SystemExit("GET /v1/networks: %d %s" % (status, body))
        nets = {n["name"]: n for n in body["networks"]}
        doc = {"setup": "%s, budget %d per job, threshold %g, data %s, batch %d" % (
            args.strategy, args.budget, args.threshold, args.data, args.batch), "layers": [], "networks": []}
        for name in args.networks.split(","):
            net = nets[name]
            convs = net["convs"]
            if args.quick:
                convs = [c for c in convs if c["C"] % 16 == 0 and c["K"] % 16 == 0][:1]
            rows = []
            for conv in convs:
                rows.append(layer_row(k, args, net, conv))
                print("%s %s done (%.0f s)" % (name, conv["name"], time.time() - t0), file=sys.stderr)
            checks = [s for r in rows for s in r["check_seconds"]]
            doc["layers"] += rows
            doc["networks"].append({
                "network": name, "before_ms": sum(r["plain_ms"] for r in rows),
                "after_ms": sum(min(r["plain_ms"], r.get("neural_ms", r["plain_ms"])) for r in rows),
                "checks": len(checks), "check_mean_s": sum(checks) / len(checks) if checks else 0.0,
                "judged": sum(r["judged"] for r in rows)})
        doc["seconds"] = time.time() - t0
    finally:
        k.stop()
        k.cleanup()
    text = report(doc)
    sys.stdout.write(text)
    if args.out:
        with open(args.out + ".txt", "w") as f:
            f.write(text)
        with open(args.out + ".json", "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    if args.quick:
        assert doc["layers"] and all(r["plain_ms"] > 0 and r["judged"] > 0 for r in doc["layers"]), doc
        assert all(0 < r.get("fisher_ratio", 1) and 0 < r.get("params_ratio", 1) <= 1.0 + 1e-9
                   for r in doc["layers"]), doc
    return 0


if __name__ == "__main__":
    sys.exit(main())
