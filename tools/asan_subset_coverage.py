#!/usr/bin/env python3
"""Which integration tests the sanitizer pass of `make test` runs, and what that subset costs in
coverage (tests/README.md, "Timing"): the lines of service/ that the unit tests plus a subset of the
integration tests execute, against those the unit tests plus every integration test execute.

  tools/asan_subset_coverage.py --build build-cov [--measure] [--subset a,b,...] [--target 0.95]

--measure configures and builds BUILD with gcc's --coverage, runs the unit tests once and then each
integration test alone (counters reset between them; the build folder is made writable for the
runner, which drops to `nobody` under root), and writes the executed lines of every run to
BUILD/coverage-lines.json. Without it, that file is read. Then: the coverage of the given subset
(--subset) or of a greedy pick that reaches --target of the full list at the least test time, with a
table of each test's lines, new lines and time. Exit 0 when the subset reaches the target, 1 when not.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time


def collect_lines(build, source_dir):
    """{file: [lines executed]} over service/ from every .gcda under build (gcov JSON)."""
    lines = {}
    service = os.path.join(source_dir, "service") + os.sep
    gcdas = glob.glob(os.path.join(build, "**", "*.gcda"), recursive=True)
    for i in range(0, len(gcdas), 40):
        batch = gcdas[i:i + 40]
        out = subprocess.run(["gcov", "--json-format", "--stdout"] + batch, cwd=build,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        for text in out.decode(errors="replace").splitlines():
            text = text.strip()
            if not text.startswith("{"):
                continue
            for f in json.loads(text).get("files", []):
                path = os.path.realpath(os.path.join(build, f["file"]))
                if not path.startswith(service):
                    continue
                rel = os.path.relpath(path, source_dir)
                got = lines.setdefault(rel, set())
                got.update(ln["line_number"] for ln in f["lines"] if ln["count"] > 0)
    return {k: sorted(v) for k, v in lines.items()}


def reset_counters(build):
    for p in glob.glob(os.path.join(build, "**", "*.gcda"), recursive=True):
        os.remove(p)


def ctest(build, args):
    t = time.time()
    r = subprocess.run(["ctest", "--test-dir", build, "--output-on-failure"] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return r.returncode, time.time() - t, r.stdout.decode(errors="replace")


def measure(build, source_dir):
    subprocess.run(["cmake", "-S", source_dir, "-B", build, "-DCMAKE_BUILD_TYPE=Debug",
                    "-DCMAKE_C_FLAGS=--coverage -O1", "-DCMAKE_EXE_LINKER_FLAGS=--coverage"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "-j%d" % os.cpu_count()], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["chmod", "-R", "a+rwX", build], check=True)
    names = subprocess.run(["ctest", "--test-dir", build, "-N"], stdout=subprocess.PIPE,
                           check=True).stdout.decode().split()
    integration = sorted({n for n in names if n.startswith("integration_")
                          or n == "bench_tune_burst_small"})
    runs = {}
    reset_counters(build)
    rc, secs, _ = ctest(build, ["-j%d" % os.cpu_count(), "-R", "^test_"])
    runs["unit"] = {"seconds": secs, "rc": rc, "lines": collect_lines(build, source_dir)}
    print("unit tests: %.0f s, rc %d" % (secs, rc), flush=True)
    for name in integration:
        reset_counters(build)
        rc, secs, _ = ctest(build, ["-R", "^%s$" % name])
        runs[name] = {"seconds": secs, "rc": rc, "lines": collect_lines(build, source_dir)}
        print("%s: %.0f s, rc %d" % (name, secs, rc), flush=True)
    with open(os.path.join(build, "coverage-lines.json"), "w") as f:
        json.dump(runs, f)
    return runs


def as_set(lines):
    return {(f, n) for f, ns in lines.items() for n in ns}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source-dir", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--subset", default="")
    ap.add_argument("--target", type=float, default=0.95)
    a = ap.parse_args()
    source_dir = os.path.realpath(a.source_dir)
    build = os.path.realpath(a.build)
    if a.measure:
        runs = measure(build, source_dir)
    else:
        with open(os.path.join(build, "coverage-lines.json")) as f:
            runs = json.load(f)
    unit = as_set(runs["unit"]["lines"])
    tests = {k: as_set(v["lines"]) for k, v in runs.items() if k != "unit"}
    secs = {k: v["seconds"] for k, v in runs.items()}
    full = set(unit).union(*tests.values())
    if a.subset:
        chosen = [s if s in tests else "integration_" + s for s in a.subset.split(",")]
    else:  # greedy: most new lines per second until the target holds
        chosen, have = [], set(unit)
        while len(have) < a.target * len(full):
            best = max((t for t in tests if t not in chosen),
                       key=lambda t: len(tests[t] - have) / max(secs[t], 1.0))
            chosen.append(best)
            have |= tests[best]
    have = set(unit).union(*(tests[t] for t in chosen))
    print("lines of service/ executed: unit tests %d; unit + every integration test %d"
          % (len(unit), len(full)))
    print("%-40s %8s %8s %7s %s" % ("integration test", "lines", "only it", "s", "in subset"))
    for t in sorted(tests, key=lambda t: -len(tests[t])):
        others = set(unit).union(*(tests[o] for o in tests if o != t))
        print("%-40s %8d %8d %7.0f %s" % (t, len(tests[t]), len(tests[t] - others), secs[t],
                                          "yes" if t in chosen else ""))
    ratio = len(have) / max(len(full), 1)
    print("subset: %s" % ",".join(c[len("integration_"):] for c in chosen))
    print("unit + subset: %d lines = %.1f%% of unit + all (target %.0f%%); subset time %.0f s of %.0f s"
          % (len(have), 100 * ratio, 100 * a.target, sum(secs[c] for c in chosen),
             sum(secs[t] for t in tests)))
    return 0 if ratio >= a.target else 1


if __name__ == "__main__":
    sys.exit(main())
