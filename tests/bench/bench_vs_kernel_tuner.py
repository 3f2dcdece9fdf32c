#!/usr/bin/env python3
"""Bench: ktune side by side with Kernel Tuner (issue 32, item 4): the same CPU kernel source,
space, budget and strategy, each timed end to end, a ratio in one run.

Runs when Kernel Tuner's source is given (--kernel-tuner-src DIR or KERNEL_TUNER_SRC: the folder
holding the `kernel_tuner` package, e.g. a checkout of its 1.4.0 tag) and importable by the Python
named by --kernel-tuner-python (KERNEL_TUNER_PYTHON; default /usr/bin/python3 where it exists, else
this one) with --kernel-tuner-pythonpath (KERNEL_TUNER_PYTHONPATH: more folders, e.g. a source copy
of python-constraint2); otherwise it prints "skipped: <reason>" and exits 0 (the normal case under
`make bench`). This file needs the standard library only; Kernel Tuner and numpy are imported only
by the child processes it starts with that Python (--kt-child, --kt-remeasure).

What is the same on both sides:
- Kernel source: the catalog's CPU gemm, kernels/gemm/cpu.c. Kernel Tuner's C backend calls one
  C function that returns its own time; tests/bench/kt_gemm_cpu.c #includes cpu.c and wraps its
  entry point `ktune_kernel` in that convention (kt_gemm times one call with CLOCK_MONOTONIC, as
  ktune-runner brackets each timed call). Kernel Tuner prepends the parameters as #define lines,
  ktune passes them as -D flags: cpu.c's #ifndef defaults yield to both.
- Compiler and flags: ktune-runner's (service/runner/cpu_compile.c): `cc -std=gnu11 -O3
  -march=native -fPIC -shared`; Kernel Tuner gets compiler "cc" and those options (it adds -fPIC,
  compiles with -c and links with -shared in a second call: two compiler runs per configuration
  where ktune makes one).
- Space: exported from the ktuned under test, never copied by hand: the cpu variant's parameters
  and restrictions from GET /v1/kernels/gemm (the catalog's spec.json), each name that is no
  parameter replaced by the cpu device's value from GET /v1/devices (vector_bits, l2_bytes, ...;
  0 where the probe does not know it, as ktuned's device.c does) or by the problem's. The size of
  Kernel Tuner's space is checked against the job's progress.space_size (a difference is an
  error: exit 1).
- Problem and budget: M = N = K = --size (512), --evaluations distinct configurations (60).
- Strategy: --strategies pairs ktune:kerneltuner, default random:random_sample;
  `auto:greedy_ils` (ktune's default strategy beside Kernel Tuner's greedy iterated local search)
  is a second pair. Seeds
  --seed on both sides (their random streams differ: the same strategy, not the same sample).

What differs (each side as its users run it):
- ktune: a job through a real ktuned (POST /v1/tune on device cpu, history none, everything else
  ktuned's defaults, its embedded PostgreSQL with the product's settings), started fresh for every
  job so that its compile cache (the data folder's) is empty; its start-up is not counted. The
  clock runs from the POST to the job's end as GET /v1/jobs/ID reports it (polled every 50 ms). It
  includes ktuned's final pick (3 candidates re-measured 5 rounds: its default), shown apart. Each
  configuration is verified against OpenBLAS's sgemm (|o - r| <= 1e-3 + 1e-3 |r|), then timed: at
  least 5 calls and 0.2 s (ktuned's --min-repeats, --min-seconds), the median is its time; one
  clearly slower than the job's best stops after 3 calls. Compiles run ahead on the cores not
  measuring; measurements run on the last core (pinned).
- Kernel Tuner 1.4.0: tune_kernel in a child process with lang "C"; the clock runs from the call
  to its return and also counts making the inputs (uniform in [-1, 1), as ktune-runner's) and the
  answer (numpy, float64), which ktune's runner makes inside the job; the child's Python start-up
  and imports are shown apart, not counted. Each configuration is compiled, called once and
  verified (a verify function with ktune's tolerance), then called 7 times (its default
  iterations): the mean is its time. Its first configuration is compiled and timed twice (a
  warm-up whose result it drops). Everything runs in one process, one step after another,
  unpinned. Its budget counts every configuration a strategy visits, revisits included (answered
  from its cache): a local search such as greedy_ils measures fewer distinct configurations than
  --evaluations; ktune's budget counts distinct evaluations. Both counts are printed.
- The kernel allocates its pack buffers on every call. ktune-runner fixes glibc's mmap threshold
  at start; Kernel Tuner's process keeps glibc's default, whose threshold moves with the history
  of the process (issue 32, item 2): a few configurations may be timed slower there.

Printed for every job: wall seconds, where the time went (compile, measure, the rest), evaluations
made (distinct configurations and their statuses), the best configuration and its time; for every
pair: the ratio ktune / Kernel Tuner; then both bests re-measured side by side in one process (the
adapter compiled with ktune's flags, interleaved calls, buffers 64-byte aligned and glibc's mmap
and trim thresholds fixed as ktune-runner has them) and whether they agree within the noise;
with --cpu (and always when the load average is >= 1.5 at the start) the CPU seconds of each side
(user + system: ktuned, its runners and compilers and its embedded PostgreSQL; Kernel Tuner's
process and its compilers), which a busy machine moves less than wall time. Rounds (--rounds)
alternate which side goes first. Exits 1 when a side fails or the spaces differ, never on a time.

  python3 tests/bench/bench_vs_kernel_tuner.py --ktuned build/ktuned --source-dir . \\
      --kernel-tuner-src DIR [--kernel-tuner-pythonpath DIR] [--size 512] [--evaluations 60] \\
      [--rounds 1] [--strategies random:random_sample,auto:greedy_ils] [--cpu]

How the checked-in run got Kernel Tuner without PyPI: tests/bench/results/README.md.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import proc_tree  # noqa: E402
ADAPTER = os.path.join(HERE, "kt_gemm_cpu.c")
# ktune-runner's kernel flags (service/runner/cpu_compile.c, kernel_flags; -fPIC and -shared are
# added by Kernel Tuner itself, and by the re-measurement below).
CC = "cc"
CC_FLAGS = ["-std=gnu11", "-O3", "-march=native"]
TOL = 1e-3  # kernels/gemm/spec.json's tolerance: rtol and atol
PY_KEYWORDS = {"and", "or", "not", "in", "is", "if", "else", "True", "False", "None"}


def load():
    return " ".join("%.2f" % x for x in os.getloadavg())


# --- the Kernel Tuner side, run by a child process with the Python that has Kernel Tuner ----------

def kt_import(src):
    """Imports kernel_tuner from its source folder. Run from a source tree, the package has no
    installed metadata and its __init__ asks importlib.metadata for its version: a minimal
    dist-info (name and version from pyproject.toml) in a temporary folder answers that."""
    import importlib.metadata
    sys.path.insert(0, src)
    meta = None
    try:
        importlib.metadata.version("kernel_tuner")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
        try:
            with open(os.path.join(src, "pyproject.toml")) as f:
                m = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
                version = m.group(1) if m else version
        except OSError:
            pass
        meta = tempfile.mkdtemp(prefix="kt-meta-")
        info = os.path.join(meta, "kernel_tuner-%s.dist-info" % version)
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: kernel_tuner\nVersion: %s\n" % version)
        sys.path.insert(0, meta)
    try:
        import kernel_tuner  # its __init__ reads the version once
    finally:
        if meta:
            shutil.rmtree(meta, ignore_errors=True)
    return kernel_tuner


def cpu_self_children():
    import resource
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def kt_child(spec_path, out_path):
    """Runs Kernel Tuner's tune_kernel as the spec says; writes the figures as JSON."""
    with open(spec_path) as f:
        spec = json.load(f)
    t_import = time.perf_counter()
    kernel_tuner = kt_import(spec["kt_src"])
    import numpy as np
    from kernel_tuner.searchspace import Searchspace
    import_s = time.perf_counter() - t_import

    n = spec["size"]
    cpu0, t0 = cpu_self_children(), time.perf_counter()
    rng = np.random.default_rng(1)
    A = (rng.random((n, n), dtype=np.float32) * 2 - 1).astype(np.float32)
    B = (rng.random((n, n), dtype=np.float32) * 2 - 1).astype(np.float32)
    C = np.zeros((n, n), dtype=np.float32)
    ref = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    args = [A, B, C, np.int32(n), np.int32(n), np.int32(n)]
    answer = [None, None, ref, None, None, None]

    def verify(expected, got, atol=None):
        r, o = expected[2].astype(np.float64), got[2].astype(np.float64)
        return bool(np.all(np.abs(o - r) <= TOL + TOL * np.abs(r)))

    setup_s = time.perf_counter() - t0
    results, env = kernel_tuner.tune_kernel(
        "kt_gemm", spec["adapter"], (1,), args, spec["tune_params"],
        restrictions=spec["restrictions"], answer=answer, verify=verify, lang="C",
        compiler=CC, compiler_options=CC_FLAGS + ["-I" + spec["include"]],
        strategy=spec["strategy"], strategy_options={"max_fevals": spec["evaluations"]},
        seed=spec["seed"], quiet=True, verbose=False)
    wall = time.perf_counter() - t0
    cpu = cpu_self_children() - cpu0

    names = list(spec["tune_params"])
    evals, best, sums = [], None, {"compile": 0.0, "verify": 0.0, "benchmark": 0.0}
    for r in results:
        t = r.get("time")
        ok = isinstance(t, (int, float)) and t == t and t > 0
        status = (type(r["__error__"]).__name__ if "__error__" in r
                  else "ok" if ok else "no time")
        config = {k: r[k] for k in names}
        evals.append({"config": config, "status": status, "time_ms": t if ok else None})
        for key, field in (("compile", "compile_time"), ("verify", "verification_time"),
                           ("benchmark", "benchmark_time")):
            v = r.get(field)
            sums[key] += v if isinstance(v, (int, float)) else 0.0
        if ok and (best is None or t < best["time_ms"]):
            best = {"config": config, "time_ms": t}
    t_space = time.perf_counter()
    size = Searchspace(spec["tune_params"], spec["restrictions"], 1024).size
    space_s = time.perf_counter() - t_space
    with open(out_path, "w") as f:
        json.dump({"version": kernel_tuner.__version__, "wall_s": wall, "setup_s": setup_s,
                   "import_s": import_s, "cpu_s": cpu, "evals": evals, "best": best,
                   "sums_ms": sums, "space_size": size, "space_build_s": space_s}, f)


def kt_remeasure(spec_path, out_path):
    """Both bests timed side by side in this process: the adapter compiled with ktune's flags for
    each configuration, one verification call each, then `rounds` rounds of `calls` calls of each
    (the order alternating), every call's time."""
    import ctypes
    import numpy as np
    with open(spec_path) as f:
        spec = json.load(f)
    n = spec["size"]
    rng = np.random.default_rng(2)

    def aligned(values):
        """A copy 64-byte aligned, as ktune-runner's buffers are (numpy's are 16-byte aligned)."""
        buf = np.empty(values.size + 16, dtype=np.float32)
        off = (-buf.ctypes.data % 64) // 4
        out = buf[off:off + values.size].reshape(values.shape)
        out[:] = values
        return out

    A = aligned(rng.random((n, n), dtype=np.float32) * 2 - 1)
    B = aligned(rng.random((n, n), dtype=np.float32) * 2 - 1)
    C = aligned(np.zeros((n, n), dtype=np.float32))
    ref = A.astype(np.float64) @ B.astype(np.float64)
    # glibc's thresholds fixed as ktune-runner fixes them at start (service/runner/README.md): the
    # kernel allocates its pack buffers on every call, and with glibc's moving mmap threshold a
    # configuration with large buffers would be timed with page faults on every call
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3
    fixed = (libc.mallopt(m_mmap_threshold, 32 << 20) == 1
             and libc.mallopt(m_trim_threshold, 512 << 20) == 1)
    tmp = tempfile.mkdtemp(prefix="kt-remeasure-")
    fns, out = [], {"times_ms": [], "verified": [], "allocator_fixed": fixed}
    ptr = ctypes.POINTER(ctypes.c_float)
    try:
        for i, config in enumerate(spec["configs"]):
            so = os.path.join(tmp, "c%d.so" % i)
            cmd = ([CC] + CC_FLAGS + ["-fPIC", "-shared", "-I" + spec["include"]]
                   + ["-D%s=%s" % kv for kv in config.items()] + ["-o", so, spec["adapter"]])
            subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            fn = ctypes.CDLL(so).kt_gemm
            fn.restype = ctypes.c_float
            fn.argtypes = [ptr, ptr, ptr, ctypes.c_int, ctypes.c_int, ctypes.c_int]
            fns.append(fn)
        call_args = [A.ctypes.data_as(ptr), B.ctypes.data_as(ptr), C.ctypes.data_as(ptr), n, n, n]
        for fn in fns:
            C[:] = np.nan
            fn(*call_args)
            err = np.abs(C.astype(np.float64) - ref)
            out["verified"].append(bool(np.all(err <= TOL + TOL * np.abs(ref))))
            out["times_ms"].append([])
        for r in range(spec["rounds"]):
            order = list(range(len(fns)))
            if r % 2:
                order.reverse()
            for i in order:
                for _ in range(spec["calls"]):
                    out["times_ms"][i].append(fns[i](*call_args))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(out_path, "w") as f:
        json.dump(out, f)


# --- the ktune side and the comparison (standard library) --------------------------------------

def tree_cpu_s(ktuned, postmaster):
    """CPU seconds (user + system) of ktuned's processes from /proc: (ktuned itself: its HTTP,
    searcher and scheduling threads; its descendants, runners and the compilers they reaped, plus
    the children ktuned reaped; the embedded PostgreSQL's postmaster and its backends, which pg_ctl
    starts outside ktuned's tree). A process's reaped children count in its children time."""
    t = proc_tree.table()
    if t is None:
        raise RuntimeError("no /proc: the CPU seconds of ktuned's processes cannot be read")
    kids, procs = t

    def tree(root):
        return sum(procs[p].own_s + procs[p].reaped_s
                   for p in proc_tree.descendants(kids, root) if p in procs)

    self_s = procs[ktuned].own_s if ktuned in procs else 0.0
    return (self_s, tree(ktuned) - self_s, tree(postmaster))


def export_space(k, size):
    """The cpu gemm space as ktuned defines it at M = N = K = size: (tune_params, restrictions
    with every name that is no parameter replaced by its value, constants)."""
    status, _, kern = k.get("/v1/kernels/gemm")
    if status != 200:
        raise SystemExit("GET /v1/kernels/gemm: %d %s" % (status, kern))
    variant = kern["versions"][0]["spec"]["variants"]["cpu"]
    status, _, devs = k.get("/v1/devices")
    cpu = [d for d in devs["devices"] if d["name"] == "cpu"][0]
    params = {p["name"]: p["values"] for p in variant["parameters"]}
    problem = {"M": size, "N": size, "K": size}
    consts = {}

    def value(m):
        name = m.group(0)
        if name in params or name in PY_KEYWORDS:
            return name
        v = problem.get(name, cpu["description"].get(name))
        consts[name] = v if isinstance(v, int) and not isinstance(v, bool) else 0
        return str(consts[name])

    restrictions = [fold_constants(re.sub(r"\b[A-Za-z_][A-Za-z_0-9]*\b", value, r), params)
                    for r in variant.get("restrictions", [])]
    return params, restrictions, consts, cpu


def fold_constants(expr, params):
    """Replaces each innermost parenthesised part that reads no parameter by its integer value
    (a comparison by 0 or 1), as ktuned's parser folds constant subtrees: python-constraint2's
    restriction parser splits a restriction at its comparisons and cannot read one inside
    parentheses ("16 + 16*(256 >= 512)")."""
    def fold(m):
        inner = m.group(1)
        names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", inner))
        if not inner.strip() or names - {"and", "or", "not", "True", "False"}:
            return m.group(0)
        v = eval(inner, {"__builtins__": {}}, {})  # numbers, operators and those words only
        return str(int(v)) if isinstance(v, (bool, int)) else m.group(0)

    while True:
        folded = re.sub(r"\(([^()]*)\)", fold, expr)
        if folded == expr:
            return expr
        expr = folded


def ktune_job(k, strategy, args):
    """One job through ktuned; returns its figures."""
    body = {"kernel": "gemm", "device": "cpu", "problem": {"M": args.size, "N": args.size,
                                                           "K": args.size},
            "strategy": strategy, "seed": args.seed, "history": "none",
            "budget": {"evaluations": args.evaluations}}
    roots = (k.proc.pid, k.postmaster_pid())
    cpu0 = tree_cpu_s(*roots)
    t0 = time.perf_counter()
    status, _, job = k.post("/v1/tune", body)
    if status != 202:
        raise RuntimeError("POST /v1/tune: %d %s" % (status, job))
    job = k.wait_job(job["id"], timeout=120 + 30 * args.evaluations)
    wall = time.perf_counter() - t0
    cpu = [b - a for a, b in zip(cpu0, tree_cpu_s(*roots))]
    trials = k.all_trials(job["id"])
    # every binary the runners built, measured or not (a compile ahead of a proposal the searcher
    # then dropped, or past the budget, is one too; a compiled reference where the kernel has one)
    cache = os.path.join(k.data_dir, "cache")
    built = (len([f for f in os.listdir(cache) if f.endswith(".so")]) if os.path.isdir(cache)
             else None)
    search = [t for t in trials if t["final_round"] is None]
    remeasured = [t for t in trials if t["final_round"] is not None]
    statuses = {}
    for t in search:
        statuses[t["status"]] = statuses.get(t["status"], 0) + 1
    last_search = max((datetime.fromisoformat(t["finished_at"]) for t in search), default=None)
    finished = job["timings"]["finished_at"]
    pick_s = ((datetime.fromisoformat(finished) - last_search).total_seconds()
              if finished and last_search and remeasured else 0.0)
    return {"job": job, "wall_s": wall, "cpu_s": sum(cpu), "cpu_split": cpu, "statuses": statuses,
            "built": built,
            "distinct": len({t["config_id"] for t in search}), "search": len(search),
            "remeasured": len(remeasured), "pick_s": pick_s,
            "compile_ms": sum(t["compile_ms"] or 0 for t in search),
            "measure_ms": sum(t["measure_ms"] or 0 for t in trials)}


def run_child(py, mode, spec, env, log):
    with tempfile.TemporaryDirectory(prefix="bench-vs-kt-") as d:
        sp, op = os.path.join(d, "spec.json"), os.path.join(d, "out.json")
        with open(sp, "w") as f:
            json.dump(spec, f)
        t0 = time.perf_counter()
        p = subprocess.run([py, os.path.abspath(__file__), mode, sp, op], env=env, cwd=d,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        outer = time.perf_counter() - t0
        if p.returncode != 0 or not os.path.exists(op):
            log.append(p.stdout.decode(errors="replace")[-3000:])
            return None, outer
        with open(op) as f:
            return json.load(f), outer


def child_env(args):
    env = dict(os.environ)
    extra = [x for x in (args.kernel_tuner_pythonpath or "").split(":") if x]
    env["PYTHONPATH"] = ":".join(extra + [p for p in env.get("PYTHONPATH", "").split(":") if p])
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def probe_kernel_tuner(args, env):
    """None when the child Python imports Kernel Tuner and numpy; else the reason."""
    code = ("import sys; sys.argv = ['x']; sys.path.insert(0, %r); "
            "import bench_vs_kernel_tuner as b; kt = b.kt_import(%r); import numpy, scipy; "
            "print(kt.__version__)"
            % (HERE, args.kernel_tuner_src))
    try:
        p = subprocess.run([args.kernel_tuner_python, "-c", code], env=env, timeout=120,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "%s cannot run: %s" % (args.kernel_tuner_python, e), None
    out = p.stdout.decode(errors="replace").strip().splitlines()
    if p.returncode != 0:
        return ("%s cannot import Kernel Tuner from %s: %s" % (
            args.kernel_tuner_python, args.kernel_tuner_src, out[-1] if out else "no output"), None)
    return None, out[-1]


def fmt_config(c):
    return ",".join("%s=%s" % kv for kv in c.items())


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def quartiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 4], xs[(3 * len(xs)) // 4]


def compare_bests(args, env, kt_best, kn_best, log):
    """Both bests re-measured side by side; prints the verdict."""
    if kt_best["config"] == kn_best["config"]:
        print("  bests: the same configuration (%s)" % fmt_config(kt_best["config"]))
        return True
    spec = {"size": args.size, "adapter": ADAPTER, "include": os.path.abspath(args.source_dir),
            "configs": [kt_best["config"], kn_best["config"]], "rounds": 10, "calls": 5}
    out, _ = run_child(args.kernel_tuner_python, "--kt-remeasure", spec, env, log)
    if out is None:
        print("  bests re-measured: FAILED\n" + "\n".join(log))
        return False
    meds = [median(t) for t in out["times_ms"]]
    spreads = []
    for t, m in zip(out["times_ms"], meds):
        q1, q3 = quartiles(t)
        spreads.append((q3 - q1) / m)
    noise = max([0.02] + spreads)
    diff = abs(meds[0] - meds[1]) / min(meds)
    for label, m, s, v in zip(("ktune's", "Kernel Tuner's"), meds, spreads, out["verified"]):
        print("  %s best re-measured here: median %.4f ms, interquartile %.1f%% of it, %d calls, "
              "verified %s%s" % (label, m, 100 * s, len(out["times_ms"][0]), "yes" if v else "NO",
                                 "" if out["allocator_fixed"] else
                                 " (glibc's thresholds NOT fixed: mallopt failed)"))
    print("  bests: %s (medians %.1f%% apart; noise: the larger interquartile share, at least 2%%, "
          "%.1f%%; ktune's / Kernel Tuner's %.3f)"
          % ("AGREE within the noise" if diff <= noise else "DIFFER beyond the noise", 100 * diff,
             100 * noise, meds[0] / meds[1]))
    return all(out["verified"])


def one_pair(args, env, kt_strategy, kn_strategy, first, rnd):
    """A fresh ktuned, the space exported from it, both sides in the order `first`; returns
    (ratio, ok)."""
    sys.path.insert(0, os.path.join(HERE, "..", "integration"))
    from ktuned_fixture import Ktuned
    # product_db: the product's own database path and settings (fsync on), as a user's ktuned runs
    k = Ktuned(args.ktuned, args.source_dir, product_db=True)
    k.start()
    res, log, ok = {}, [], True
    try:
        params, restrictions, consts, cpu = export_space(k, args.size)
        if rnd == 1:
            print("space: %d parameters, %d restrictions; constants of this cpu (%s, %s): %s"
                  % (len(params), len(restrictions), cpu["class"], cpu.get("toolchain", "?"),
                     ", ".join("%s=%d" % kv for kv in sorted(consts.items()))))
        spec = {"kt_src": os.path.abspath(args.kernel_tuner_src), "size": args.size,
                "adapter": ADAPTER, "include": os.path.abspath(args.source_dir),
                "tune_params": params, "restrictions": restrictions, "strategy": kn_strategy,
                "evaluations": args.evaluations, "seed": args.seed}
        for side in first:
            if side == "ktune":
                res["ktune"] = ktune_job(k, kt_strategy, args)
            else:
                out, outer = run_child(args.kernel_tuner_python, "--kt-child", spec, env, log)
                if out is None:
                    print("Kernel Tuner failed:\n" + "\n".join(log))
                    return None, False
                out["outer_s"] = outer
                res["kt"] = out
    finally:
        k.cleanup()
    kn, kt = res["ktune"], res["kt"]
    job = kn["job"]
    print("round %d, %s (ktune) vs %s (Kernel Tuner %s), %s first; load %s"
          % (rnd, kt_strategy, kn_strategy, kt["version"], first[0], load()))
    print("  space size: ktune %d, Kernel Tuner %d%s" % (
        job["progress"]["space_size"], kt["space_size"],
        "" if job["progress"]["space_size"] == kt["space_size"] else "  DIFFERENT SPACES"))
    if job["progress"]["space_size"] != kt["space_size"]:
        ok = False
    if job["status"] != "succeeded" or not job.get("best"):
        print("  ktune job %d: %s (%s)" % (job["id"], job["status"], job.get("error")))
        return None, False
    kn_best = {"config": job["best"]["config"], "time_ms": job["best"]["time_ms"]}
    busy = job["timings"].get("device_busy_seconds")
    print("  ktune:        %6.1f s wall  (compile %.2f s summed over trials, measure %.2f s "
          "incl. the final pick, the device busy %s s, idle share %s; final pick %.2f s after "
          "the search; %d evaluations: %d distinct, %s; %d re-measurements; %s binaries "
          "built: its compile cache's .so files)"
          % (kn["wall_s"], kn["compile_ms"] / 1e3, kn["measure_ms"] / 1e3,
             "%.2f" % busy if busy is not None else "?",
             "%.2f" % job["timings"]["device_idle_share"]
             if job["timings"].get("device_idle_share") is not None else "?", kn["pick_s"],
             kn["search"], kn["distinct"],
             ", ".join("%d %s" % (v, s) for s, v in sorted(kn["statuses"].items())),
             kn["remeasured"], "?" if kn["built"] is None else kn["built"]))
    kt_ok = [e for e in kt["evals"] if e["status"] == "ok"]
    kt_status = {}
    for e in kt["evals"]:
        kt_status[e["status"]] = kt_status.get(e["status"], 0) + 1
    print("  Kernel Tuner: %6.1f s wall  (compile %.2f s, verify %.2f s, benchmark %.2f s; "
          "inputs and answer %.2f s; its space alone builds in %.2f s; %d evaluations: %d "
          "distinct, %s; not counted: the child's start-up and imports %.1f s)"
          % (kt["wall_s"], kt["sums_ms"]["compile"] / 1e3, kt["sums_ms"]["verify"] / 1e3,
             kt["sums_ms"]["benchmark"] / 1e3, kt["setup_s"], kt["space_build_s"],
             len(kt["evals"]),
             len({json.dumps(e["config"], sort_keys=True) for e in kt["evals"]}),
             ", ".join("%d %s" % (v, s) for s, v in sorted(kt_status.items())),
             kt["outer_s"] - kt["wall_s"] - kt["space_build_s"]))
    ratio = kn["wall_s"] / kt["wall_s"]
    print("  ratio ktune / Kernel Tuner: %.2f (wall)" % ratio)
    if args.cpu:
        print("  CPU seconds (user + system): ktune %.1f (ktuned itself %.1f, its runners and "
              "compilers %.1f, PostgreSQL %.1f), Kernel Tuner %.1f (its process and compilers); "
              "ratio %.2f" % ((kn["cpu_s"],) + tuple(kn["cpu_split"]) + (
                  kt["cpu_s"], kn["cpu_s"] / kt["cpu_s"] if kt["cpu_s"] else 0)))
    print("  ktune best:        %.4f ms (median of its repeats%s)  %s"
          % (kn_best["time_ms"], ", final pick" if kn["remeasured"] else "",
             fmt_config(kn_best["config"])))
    if not kt_ok or not kt["best"]:
        print("  Kernel Tuner: no configuration measured ok")
        return ratio, False
    print("  Kernel Tuner best: %.4f ms (mean of 7 calls)  %s"
          % (kt["best"]["time_ms"], fmt_config(kt["best"]["config"])))
    ok = compare_bests(args, env, kt["best"], kn_best, log) and ok
    return ratio, ok


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--kt-child":
        return kt_child(sys.argv[2], sys.argv[3]) or 0
    if len(sys.argv) == 4 and sys.argv[1] == "--kt-remeasure":
        return kt_remeasure(sys.argv[2], sys.argv[3]) or 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--kernel-tuner-src", default=os.environ.get("KERNEL_TUNER_SRC"))
    ap.add_argument("--kernel-tuner-python", default=os.environ.get("KERNEL_TUNER_PYTHON") or (
        "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable))
    ap.add_argument("--kernel-tuner-pythonpath", default=os.environ.get("KERNEL_TUNER_PYTHONPATH"))
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--evaluations", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--strategies", default="random:random_sample",
                    help="comma-separated ktune:kerneltuner strategy pairs [random:random_sample]")
    ap.add_argument("--cpu", action="store_true",
                    help="print each side's CPU seconds (on when the load is >= 1.5 at the start)")
    args = ap.parse_args()
    if not args.kernel_tuner_src:
        print("skipped: no Kernel Tuner source (--kernel-tuner-src DIR or KERNEL_TUNER_SRC: a "
              "checkout of github.com/KernelTuner/kernel_tuner, tag 1.4.0)")
        return 0
    if not os.path.isdir(os.path.join(args.kernel_tuner_src, "kernel_tuner")):
        print("skipped: %s holds no kernel_tuner package" % args.kernel_tuner_src)
        return 0
    if not os.path.exists(os.path.join(args.source_dir, "kernels", "gemm", "cpu.c")):
        print("skipped: kernels/gemm/cpu.c does not exist under %s" % args.source_dir)
        return 0
    if not shutil.which(CC):
        print("skipped: no C compiler '%s'" % CC)
        return 0
    env = child_env(args)
    reason, version = probe_kernel_tuner(args, env)
    if reason:
        print("skipped: " + reason)
        return 0
    pairs = [p.split(":", 1) for p in args.strategies.split(",") if p]
    if any(len(p) != 2 for p in pairs):
        raise SystemExit("--strategies: pairs ktune:kerneltuner, comma-separated")
    start_load = os.getloadavg()[0]
    args.cpu = args.cpu or start_load >= 1.5
    print("bench vs Kernel Tuner %s (%s): gemm %d^3, %d evaluations, strategies %s, %d round(s); "
          "load average at start %s (%d cores)"
          % (version, os.path.abspath(args.kernel_tuner_src), args.size, args.evaluations,
             args.strategies, args.rounds, load(), os.cpu_count()))
    if start_load >= 1.5:
        print("the machine is busy (load >= 1.5): wall times are shared with other work; compare "
              "the CPU seconds too")
    ratios, ok = {}, True
    for rnd in range(1, args.rounds + 1):
        for kt_s, kn_s in pairs:
            first = ("ktune", "kt") if rnd % 2 else ("kt", "ktune")
            ratio, good = one_pair(args, env, kt_s, kn_s, first, rnd)
            ok = ok and good
            if ratio is not None:
                ratios.setdefault("%s vs %s" % (kt_s, kn_s), []).append(ratio)
    for key, rs in ratios.items():
        print("ratio ktune / Kernel Tuner, %s: %s%s" % (
            key, ", ".join("%.2f" % r for r in rs),
            " (median %.2f)" % median(rs) if len(rs) > 1 else ""))
    print("load average at end %s" % load())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
