#!/usr/bin/env python3
"""CPU time per kernel compile, with and without the precompiled prelude (issue 32, "compile cheaper").

Drives build/ktune-runner directly with the op "compile" (PROTOCOL.md) for a fixed list of distinct
configurations of the catalog's gemm and conv2d, each mode in a fresh cache folder:
`--no-pch` (every compile plain: what a runner did before) and the default (the first compile
notes the prelude, the second precompiles it, the rest include it). Per compile it reads the
reply's extras.compile_cpu_ms (user + system CPU time of the compiler processes, from wait4: robust
on a loaded machine, unlike wall time) and compile_ms (wall). It also sums the whole runner's CPU
time (RUSAGE_CHILDREN after it exits: the runner and every compiler it waited for), and checks
that each configuration's binary is byte-identical in both modes (the same object, the same key).

    nice python3 tests/bench/bench_compile_cost.py [--rounds 3] [--stage-rounds 5]
        [--runner build/ktune-runner] [--kernels gemm,conv2d]

First the stages of one gemm compile (direct cc commands with the runner's flags: preprocessing,
cc1, as, the link, -pipe, the precompiled prelude), then the runner's compiles.

Rounds alternate which mode goes first. Prints medians (n = compiles) per kernel and mode.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Distinct configurations that an AVX2 (or AVX-512) machine compiles; the register-tile limits of
# kernels/gemm/spec.json hold at 256-bit vectors.
GEMM = [
    dict(MR=6, NR=16, KC=512, MC=192, NC=512, UNROLL=1, PF_A=0, PF_B=0, PACK_A=0, PACK_B=1, LOOP=1),
    dict(MR=4, NR=24, KC=256, MC=96, NC=1024, UNROLL=2, PF_A=16, PF_B=4, PACK_A=1, PACK_B=1, LOOP=0),
    dict(MR=12, NR=8, KC=384, MC=192, NC=2048, UNROLL=4, PF_A=0, PF_B=16, PACK_A=1, PACK_B=0, LOOP=1),
    dict(MR=14, NR=8, KC=128, MC=384, NC=256, UNROLL=1, PF_A=16, PF_B=0, PACK_A=1, PACK_B=1, LOOP=1),
    dict(MR=6, NR=16, KC=768, MC=48, NC=4096, UNROLL=2, PF_A=0, PF_B=4, PACK_A=1, PACK_B=0, LOOP=0),
    dict(MR=4, NR=24, KC=1024, MC=192, NC=512, UNROLL=4, PF_A=16, PF_B=16, PACK_A=0, PACK_B=1, LOOP=1),
    dict(MR=12, NR=8, KC=256, MC=96, NC=1024, UNROLL=2, PF_A=0, PF_B=0, PACK_A=1, PACK_B=1, LOOP=0),
    dict(MR=6, NR=16, KC=128, MC=384, NC=256, UNROLL=4, PF_A=16, PF_B=16, PACK_A=1, PACK_B=1, LOOP=1),
]
CONV2D = [
    dict(TK=6, NV=2, VEC=8, CB=64, ORDER=1, PACK=0, PACK_IN=0, UNROLL=2),
    dict(TK=4, NV=3, VEC=8, CB=32, ORDER=0, PACK=1, PACK_IN=0, UNROLL=1),
    dict(TK=2, NV=4, VEC=4, CB=128, ORDER=1, PACK=0, PACK_IN=1, UNROLL=4),
    dict(TK=12, NV=1, VEC=8, CB=16, ORDER=0, PACK=1, PACK_IN=1, UNROLL=2),
    dict(TK=3, NV=3, VEC=4, CB=8, ORDER=1, PACK=1, PACK_IN=0, UNROLL=1),
    dict(TK=8, NV=1, VEC=8, CB=256, ORDER=0, PACK=0, PACK_IN=0, UNROLL=4),
    dict(TK=5, NV=2, VEC=8, CB=512, ORDER=1, PACK=0, PACK_IN=1, UNROLL=2),
    dict(TK=10, NV=1, VEC=4, CB=64, ORDER=0, PACK=1, PACK_IN=0, UNROLL=1),
]


def request(i, kernel, defines):
    kdir = os.path.join(ROOT, "kernels", kernel)
    files = {"cpu.c": open(os.path.join(kdir, "cpu.c")).read()}
    req = {"id": i, "op": "compile", "kernel": kernel, "source": f"/bench/{kernel}/cpu.c",
           "defines": defines, "tolerance": {"rtol": 1e-3, "atol": 1e-3}, "flops": 1,
           "compile_timeout_s": 120}
    if kernel == "gemm":
        req.update(problem=[64, 64, 64], problem_names=["M", "N", "K"],
                   buffers=[{"name": "A", "elements": 4096, "role": "input"},
                            {"name": "B", "elements": 4096, "role": "input"},
                            {"name": "C", "elements": 4096, "role": "output"}],
                   reference={"kind": "openblas_sgemm"})
    else:
        files["reference.c"] = open(os.path.join(kdir, "reference.c")).read()
        req.update(problem=[1, 8, 8, 8, 8, 3, 3], problem_names=list("NCKHWRS"),
                   buffers=[{"name": "input", "elements": 512, "role": "input"},
                            {"name": "weights", "elements": 576, "role": "input"},
                            {"name": "output", "elements": 288, "role": "output"}],
                   reference={"kind": "c", "source": f"/bench/{kernel}/reference.c"})
    req["files"] = files
    return req


def run_mode(runner, kernel, configs, no_pch):
    """One fresh runner and cache: per compile (compile_cpu_ms, compile_ms, prelude, prelude_cpu_ms,
    binary), the runner tree's CPU seconds, and the cache folder (caller removes it)."""
    cache = tempfile.mkdtemp(prefix="ktune-compile-cost-")
    os.chmod(cache, 0o777)  # a root-started runner hands it to its own user
    args = [runner, "--device", "cpu", "--cache-dir", cache, "--log-level", "warn"]
    if no_pch:
        args.append("--no-pch")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rows = []
    for i, d in enumerate(configs):
        p.stdin.write(json.dumps(request(i + 1, kernel, d)) + "\n")
        p.stdin.flush()
        r = json.loads(p.stdout.readline())
        if r.get("status") != "ok":
            sys.exit(f"{kernel} {d}: {r}")
        ex = r["extras"]
        rows.append((ex["compile_cpu_ms"], r["compile_ms"], ex["prelude"],
                     ex.get("prelude_cpu_ms", 0.0), ex["binary"], "reference_compile_ms" in ex))
    p.stdin.close()
    p.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tree = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rows, tree, cache


def binary_bytes(cache, name):
    for dirpath, _, files in os.walk(cache):
        if name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                return f.read()
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runner", default=os.path.join(ROOT, "build", "ktune-runner"))
    ap.add_argument("--kernels", default="gemm,conv2d")
    ap.add_argument("--stage-rounds", type=int, default=5, help="0: skip the stages")
    a = ap.parse_args()
    print(f"compiler: {subprocess.run(['cc', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}")
    if a.stage_rounds > 0:
        stages(a.stage_rounds)
    med = statistics.median
    for kernel in a.kernels.split(","):
        configs = GEMM if kernel == "gemm" else CONV2D
        # per configuration index: the CPU ms of its compile in each round, per mode
        cpu = {m: [[] for _ in configs] for m in (True, False)}
        state = [[] for _ in configs]
        made, amort, tree = [], {True: [], False: []}, {True: [], False: []}
        refs = requests = 0
        same = total = 0
        for rnd in range(a.rounds):
            caches = {}
            for no_pch in ((True, False) if rnd % 2 == 0 else (False, True)):
                rows, t, caches[no_pch] = run_mode(a.runner, kernel, configs, no_pch)
                tree[no_pch].append(t / len(configs) * 1000)
                amort[no_pch].append(sum(r[0] for r in rows) / len(rows))
                refs += sum(r[5] for r in rows)
                requests += len(rows)
                for i, r in enumerate(rows):
                    cpu[no_pch][i].append(r[0])
                    if not no_pch:
                        state[i].append(r[2])
                        if r[2] == "made":
                            made.append(r[3])
                names = [r[4] for r in rows]
            print(f"  {kernel} round {rnd + 1} prelude states: {' '.join(s[-1] for s in state)}")
            for name in names:
                x, y = binary_bytes(caches[True], name), binary_bytes(caches[False], name)
                total += 1
                same += x is not None and x == y
            for c in caches.values():
                shutil.rmtree(c, ignore_errors=True)
        # the steady state: configurations whose compile included the precompiled prelude in
        # every round, against the same configurations compiled plainly
        steady = [i for i, s in enumerate(state) if s and all(x == "used" for x in s)]
        before = [v for i in steady for v in cpu[True][i]]
        after = [v for i in steady for v in cpu[False][i]]
        ratios = [y / x for i in steady for x, y in zip(cpu[True][i], cpu[False][i])]
        saved = [x - y for i in steady for x, y in zip(cpu[True][i], cpu[False][i])]
        print(f"{kernel}: {len(configs)} configurations x {a.rounds} rounds, steady state over "
              f"configurations {[i + 1 for i in steady]}")
        if steady:
            print(f"  before (--no-pch)  compile CPU ms median {med(before):7.1f}  (n {len(before)}, "
                  f"min {min(before):.1f}, max {max(before):.1f})")
            print(f"  after  (prelude)   compile CPU ms median {med(after):7.1f}  (n {len(after)}, "
                  f"min {min(after):.1f}, max {max(after):.1f})")
            print(f"  paired after/before per configuration and round: median {med(ratios):.2f} "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f}); CPU ms saved per compile: "
                  f"median {med(saved):.1f} (min {min(saved):.1f}, max {max(saved):.1f})")
        if made:
            print(f"  the precompile (once per prelude, flags and toolchain): CPU ms median "
                  f"{med(made):.1f} (n {len(made)})")
        print(f"  mean CPU ms per compile over the {len(configs)} compiles of a fresh cache "
              f"(noting and precompiling included), median over rounds: before "
              f"{med(amort[True]):.1f}, after {med(amort[False]):.1f}")
        print(f"  whole runner tree CPU ms per compile (RUSAGE_CHILDREN), median over rounds: "
              f"before {med(tree[True]):.1f}, after {med(tree[False]):.1f}")
        print(f"  binaries byte-identical with and without the prelude: {same}/{total}")
        print(f"  requests that compiled the reference: {refs} of {requests} (one per fresh cache: "
              f"{'an openblas reference, none' if kernel == 'gemm' else 'reference.c'})")


def cpu_of(cmd):
    """User + system CPU seconds of cmd and what it waited for."""
    a = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (b.ru_utime - a.ru_utime) + (b.ru_stime - a.ru_stime)


def stages(rounds):
    """Where one compile of gemm's default configuration goes, by the driver's stages, and what
    the precompiled prelude takes away: direct cc commands with the runner's flags."""
    src = os.path.join(ROOT, "kernels", "gemm", "cpu.c")
    d = ["-D%s=%d" % kv for kv in GEMM[0].items()]
    f = ["-std=gnu11", "-O3", "-march=native", "-fPIC"]
    tmp = tempfile.mkdtemp(prefix="ktune-compile-stages-")
    pre = os.path.join(tmp, "pre.h")
    with open(pre, "w") as h:
        h.write("#include <stdlib.h>\n#include <string.h>\n"
                "#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))\n"
                "#include <immintrin.h>\n#endif\n")
    o = lambda n: os.path.join(tmp, n)
    subprocess.run(["cc"] + f + ["-x", "c-header", "-o", pre + ".gch", pre], check=True)
    cmds = [
        ("preprocess only (cc -E)", ["cc"] + f + d + ["-E", "-o", o("k.i"), src]),
        ("compile to assembly (cc -S: cc1)", ["cc"] + f + d + ["-S", "-o", o("k.s"), src]),
        ("assemble (as)", ["as", "-o", o("k2.o"), o("k.s")]),
        ("compile to an object (cc -c: cc1 + as)", ["cc"] + f + d + ["-c", "-o", o("k.o"), src]),
        ("link the object (cc -shared: collect2 + ld)", ["cc", "-shared", "-o", o("k2.so"), o("k.o")]),
        ("the runner's command (cc ... -shared)", ["cc"] + f + ["-shared"] + d + ["-o", o("k.so"), src]),
        ("the same with -pipe", ["cc"] + f + ["-shared", "-pipe"] + d + ["-o", o("k.so"), src]),
        ("with the precompiled prelude (-include)", ["cc"] + f + ["-shared", "-include", pre] + d +
         ["-o", o("k.so"), src]),
        ("assembly with the precompiled prelude", ["cc"] + f + ["-include", pre] + d +
         ["-S", "-o", o("k3.s"), src]),
    ]
    res = {n: [] for n, _ in cmds}
    for _ in range(rounds):
        for n, c in cmds:
            res[n].append(cpu_of(c) * 1000)
    lines = sum(1 for _ in open(o("k.i")))
    print(f"stages of one gemm compile (default configuration; {lines} lines once preprocessed), "
          f"CPU ms median of {rounds}:")
    for n, _ in cmds:
        print(f"  {n:48s} {statistics.median(res[n]):7.1f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
