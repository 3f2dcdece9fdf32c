#!/usr/bin/env python3
"""make gpu-check: the whole CUDA side of ktune on this machine's GPU, in one command
(tests/gpu/README.md). The first thing to run on any machine with a GPU.

  python3 tests/gpu/gpu_check.py [--source-dir .] [--build build] [--jobs N] [--no-build]
      [--out FILE] [--sizes 1024,2048,4096] [--budget 32] [--check-budget 8] [--probe-only]
      [--no-probe]

1. Probe (no build needed, well under a second): libcuda.so.1 with ctypes, cuInit, cuDeviceGetCount.
   None: prints "gpu-check: no CUDA device (<reason>)" and exits 3 (make shows "Error 3").
2. Build (`make build`, unless --no-build), then ktune-runner's own probe of cuda:0 (name, compute
   capability, toolchain: what ktuned will key results by).
3. The CUDA unit tests (ctest: test_runner_cuda, test_runner_cuda_args, test_runner_nvrtc,
   test_runner_cuda_emulated) with
   KTUNE_REQUIRE_CUDA=1 KTUNE_REQUIRE_NVRTC=1: a skip is a failure, and so is any "SKIP:" line.
4. A real ktuned (tests/integration/ktuned_fixture.py, embedded PostgreSQL, one measuring thread):
   cuda:0 must be listed available; then a cuda:0 job per catalog kernel with a CUDA variant
   (kernels/*/spec.json variants.cuda or cuda.json): `random`, --check-budget evaluations, the
   kernel's default problem, and one of tests/kernels/typed_cuda (f64 and i32 buffers, a float
   problem argument, f32 and i32 scalars: the CUDA argument packing); for gemm instead one tuning job per --sizes (n^3, the default
   strategy, --budget evaluations, the final pick on). Every job must succeed with every trial ok
   (verified against the CPU reference by the runner).
5. cuBLAS: gpu_gemm_cublas times sgemm at the same sizes the way the runner times a kernel (the
   median of CUDA-event-timed calls); the ratio time(ktune's best) / time(cuBLAS) per size.

Everything measured goes to one file (--out, default <build>/gpu-check.txt; logs beside it in
<build>/gpu-check/), whose path is printed at the end. Exit status: 0 every check passed; 1 a check
failed; 2 the check could not run (bad arguments, the build failed); 3 no CUDA device.
--no-probe runs every step even without a device (to see how each one fails there).
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DEFAULT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

EXIT_OK, EXIT_FAILED, EXIT_SETUP, EXIT_NO_DEVICE = 0, 1, 2, 3
UNIT_TESTS = ("test_runner_cuda", "test_runner_cuda_args", "test_runner_cuda_emulated",
              "test_runner_nvrtc")
TYPED = "typed_cuda"  # tests/kernels/typed_cuda: dtypes, scalars and a float argument on the GPU
REQUIRE_ENV = {"KTUNE_REQUIRE_CUDA": "1", "KTUNE_REQUIRE_NVRTC": "1"}
MIN_SECONDS = 0.1  # of timed calls per measurement, ktuned's and gpu_gemm_cublas's alike
TARGET_S = 600     # the whole check, build excluded, should take less on one GPU


def probe_device():
    """(device count, reason when 0, name of device 0) from the driver itself, through ctypes:
    cheap enough to run before anything is built."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return 0, "no CUDA driver: %s" % e, None

    def error_name(rc):
        s = ctypes.c_char_p()
        try:
            if lib.cuGetErrorName(rc, ctypes.byref(s)) == 0 and s.value:
                return s.value.decode(errors="replace")
        except AttributeError:
            pass
        return "CUDA error %d" % rc

    rc = lib.cuInit(0)
    if rc != 0:
        return 0, "cuInit failed: %s" % error_name(rc), None
    n = ctypes.c_int(0)
    rc = lib.cuDeviceGetCount(ctypes.byref(n))
    if rc != 0:
        return 0, "cuDeviceGetCount failed: %s" % error_name(rc), None
    if n.value < 1:
        return 0, "the driver found no device", None
    dev = ctypes.c_int(0)
    name = ctypes.create_string_buffer(256)
    if lib.cuDeviceGet(ctypes.byref(dev), 0) != 0 or lib.cuDeviceGetName(name, 256, dev) != 0:
        return n.value, None, "CUDA device 0"
    return n.value, None, name.value.decode(errors="replace")


def cuda_kernels(source_dir):
    """[(name, spec)] of the catalog kernels (kernels/*/spec.json) with a CUDA variant, by name."""
    root = os.path.join(source_dir, "kernels")
    found = []
    for d in sorted(os.listdir(root)):
        spec_path = os.path.join(root, d, "spec.json")
        if not os.path.isfile(spec_path):
            continue
        with open(spec_path) as f:
            spec = json.load(f)
        if "cuda" in spec.get("variants", {}) or os.path.isfile(os.path.join(root, d, "cuda.json")):
            found.append((spec["name"], spec))
    return found


CTEST_LINE = re.compile(r"Test\s+#\d+:\s+(\S+)\s+\.*\s*(?:\*+)?\s*([A-Za-z][A-Za-z ]*?)\s+([\d.]+)\s+sec")


def parse_ctest(output):
    """{test name: (result, seconds)} from ctest's progress lines ("1/3 Test #60: name ....
    Passed 0.35 sec", "***Failed", "***Skipped", "***Timeout", "Not Run") and the "SKIP:" lines
    of the tests' own output (ctest -V prefixes them with the test's number)."""
    results = {}
    for line in output.splitlines():
        m = CTEST_LINE.search(line)
        if m:
            results[m.group(1)] = (m.group(2).strip(), float(m.group(3)))
    skips = [line.split(":", 1)[1].strip() if re.match(r"^\d+: SKIP:", line) else line.strip()
             for line in output.splitlines() if re.match(r"^(\d+: )?SKIP:", line)]
    return results, skips


def fmt_config(config):
    return ",".join("%s=%s" % kv for kv in (config or {}).items())


def fmt_problem(problem):
    return ",".join("%s=%s" % kv for kv in (problem or {}).items())


class Report:
    """The one file of figures: sections of aligned lines, written whole at the end (and after
    each step, so a crash or a kill leaves what was measured)."""

    def __init__(self, path):
        self.path = path
        self.head = []
        self.sections = []  # (title, [lines])
        self.failures = []

    def section(self, title):
        lines = []
        self.sections.append((title, lines))
        return lines

    def fail(self, what):
        self.failures.append(what)
        print("gpu-check: FAIL: %s" % what, flush=True)

    def write(self, verdict=None):
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            for line in self.head:
                f.write(line + "\n")
            if verdict:
                f.write(verdict + "\n")
            for title, lines in self.sections:
                f.write("\n[%s]\n" % title)
                for line in lines:
                    f.write(line + "\n")
            if self.failures:
                f.write("\n[failures]\n")
                for what in self.failures:
                    f.write(what + "\n")
        os.replace(tmp, self.path)


def run_logged(cmd, log_path, env=None, timeout=None, cwd=None):
    """Runs cmd with stdout and stderr into log_path; returns (exit status, output, seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                           timeout=timeout, cwd=cwd)
        rc, out = p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        rc, out = None, (e.stdout or b"").decode(errors="replace") + "\n(timed out)\n"
    with open(log_path, "w") as f:
        f.write("$ %s\n%s" % (" ".join(cmd), out))
    return rc, out, time.monotonic() - t0


def step_build(args, report, logs):
    lines = report.section("build")
    cmd = ["make", "-C", args.source_dir, "--no-print-directory", "build", "BUILD=%s" % args.build,
           "JOBS=%d" % args.jobs]
    print("gpu-check: building (%s)" % " ".join(cmd), flush=True)
    rc, out, secs = run_logged(cmd, os.path.join(logs, "build.log"))
    lines.append("make build: exit %s in %.1f s (log %s)" % (rc, secs, os.path.join(logs, "build.log")))
    if rc != 0:
        lines += out.splitlines()[-30:]
        report.fail("the build failed (exit %s)" % rc)
        return False
    return True


def step_runner_probe(args, report, logs):
    """ktune-runner's probe of cuda:0: the device as ktuned will see it."""
    lines = report.section("runner probe")
    runner = os.path.join(args.build, "ktune-runner")
    cache = tempfile.mkdtemp(prefix="ktune-gpu-check-cache-", dir="/tmp")
    try:
        p = subprocess.run([runner, "--device", "cuda:0", "--cache-dir", cache],
                           input=b'{"id": 1, "op": "probe"}\n', stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        out = p.stdout.decode(errors="replace")
        with open(os.path.join(logs, "runner-probe.log"), "w") as f:
            f.write(out + p.stderr.decode(errors="replace"))
        reply = json.loads(out.splitlines()[0]) if out.strip() else {}
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        reply = {"ok": False, "reason": "ktune-runner did not answer: %s" % e}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if not reply.get("ok"):
        lines.append("ktune-runner --device cuda:0: %s" % reply.get("reason", reply))
        report.fail("ktune-runner cannot open cuda:0: %s" % reply.get("reason", reply))
        return None
    dev = reply.get("device", {})
    for key in ("name", "compute_capability", "sms", "memory_bytes", "max_threads_per_block",
                "max_shared_memory_per_block", "max_registers_per_block", "driver_version",
                "nvrtc_version", "nvrtc_error", "toolchain"):
        if key in dev:
            lines.append("%-28s %s" % (key, dev[key]))
    if "nvrtc_error" in dev:
        report.fail("NVRTC is not available to the runner: %s" % dev["nvrtc_error"])
    return dev


def step_unit_tests(args, report, logs):
    lines = report.section("CUDA unit tests (KTUNE_REQUIRE_CUDA=1 KTUNE_REQUIRE_NVRTC=1)")
    regex = "^(%s)$" % "|".join(UNIT_TESTS)
    cmd = ["ctest", "--test-dir", args.build, "-R", regex, "-V", "-j%d" % len(UNIT_TESTS)]
    print("gpu-check: CUDA unit tests (%s)" % " ".join(cmd), flush=True)
    log = os.path.join(logs, "unit-tests.log")
    rc, out, secs = run_logged(cmd, log, env=dict(os.environ, **REQUIRE_ENV), timeout=900)
    results, skips = parse_ctest(out)
    for name in UNIT_TESTS:
        result, took = results.get(name, ("not run", 0.0))
        lines.append("%-28s %-10s %7.1f s" % (name, result, took))
        if result != "Passed":
            report.fail("unit test %s: %s (log %s)" % (name, result, log))
    for s in skips:
        lines.append("skipped: %s" % s)
        report.fail("a CUDA unit test skipped although a device is required: %s" % s)
    lines.append("ctest exit %s in %.1f s (log %s)" % (rc, secs, log))
    if rc != 0 and all(results.get(n, ("",))[0] == "Passed" for n in UNIT_TESTS):
        report.fail("ctest exited %s" % rc)


def check_job(k, job, report, what):
    """Every trial of a finished job ok and the job succeeded; returns its trials."""
    trials = k.all_trials(job["id"])
    statuses = {}
    for t in trials:
        statuses[t["status"]] = statuses.get(t["status"], 0) + 1
    if job["status"] != "succeeded":
        report.fail("%s: job %d %s (%s)" % (what, job["id"], job["status"],
                                            json.dumps(job.get("error"))))
    if not trials:
        report.fail("%s: job %d has no trials" % (what, job["id"]))
    for t in trials:
        if t["status"] != "ok":
            report.fail("%s: job %d trial %s is %s: config %s, extras %s"
                        % (what, job["id"], t.get("seq", t.get("id")), t["status"],
                           fmt_config(t.get("config")), json.dumps(t.get("extras"))[:600]))
    return trials, statuses


def run_job(k, body, timeout):
    status, _, job = k.post("/v1/tune", body)
    if status != 202:
        raise RuntimeError("POST /v1/tune %s: %d %s" % (json.dumps(body), status, job))
    try:
        return k.wait_job(job["id"], timeout=timeout)
    except AssertionError:
        k.request("DELETE", "/v1/jobs/%d" % job["id"])
        raise


def step_jobs(args, report, logs, kernels):
    """A real ktuned, the verification jobs and gemm's tuning jobs; returns {n: gemm job} for the
    cuBLAS comparison."""
    from ktuned_fixture import Ktuned
    lines = report.section("%s jobs through ktuned" % args.device)
    gemm_jobs = {}
    # the typed test kernel beside the catalog's (a folder of its own: tests/kernels holds kernels
    # that crash and hang on purpose)
    typed_dir = tempfile.mkdtemp(prefix="ktune-gpu-check-kernels-", dir="/tmp")
    os.symlink(os.path.join(args.source_dir, "tests", "kernels", TYPED),
               os.path.join(typed_dir, TYPED))
    k = Ktuned(os.path.join(args.build, "ktuned"), args.source_dir,
               extra=["--kernels", os.path.join(args.source_dir, "kernels") + "," + typed_dir,
                      "--workers", "1", "--min-seconds", str(MIN_SECONDS)])
    try:
        t0 = time.monotonic()
        k.start()
        lines.append("ktuned ready in %.1f s (data %s)" % (time.monotonic() - t0, k.data_dir))
        status, _, body = k.get("/v1/devices")
        devices = {d["name"]: d for d in body.get("devices", [])} if status == 200 else {}
        cuda = devices.get(args.device)
        if not cuda or not cuda.get("available"):
            why = (devices.get("cuda") or cuda or {}).get("reason", "not listed")
            lines.append("%s not available to ktuned: %s" % (args.device, why))
            report.fail("ktuned does not list %s as available: %s" % (args.device, why))
            return gemm_jobs
        lines.append("device %s: class %s, toolchain %s" % (args.device, cuda.get("class"),
                                                           cuda.get("toolchain")))
        lines.append("%-14s %-34s %5s %-8s %6s %-22s %10s %9s  %s"
                     % ("kernel", "problem", "job", "strategy", "trials", "statuses", "best_ms",
                        "seconds", "best config"))
        plan = []
        for name, spec in kernels:
            if name == "gemm":
                for n in args.sizes:
                    plan.append((name, {"kernel": name, "device": args.device,
                                        "problem": {"M": n, "N": n, "K": n},
                                        "budget": {"evaluations": args.budget}, "seed": 1}, n))
            else:
                plan.append((name, {"kernel": name, "device": args.device, "strategy": "random",
                                    "budget": {"evaluations": args.check_budget}, "seed": 1,
                                    "final_remeasure": 0}, None))
        # f64 and i32 buffers, a float problem argument, f32 and i32 scalars (runner/cuda_args.h):
        # every trial verified against its C reference
        plan.append((TYPED, {"kernel": TYPED, "device": args.device, "strategy": "random",
                             "budget": {"evaluations": 3}, "seed": 1, "final_remeasure": 0},
                     None))
        if "gemm" not in [name for name, _ in kernels]:
            report.fail("no gemm kernel with a CUDA variant in the catalog: no cuBLAS comparison")
        for name, body, n in plan:
            what = "%s on %s%s" % (name, args.device, " at %d^3" % n if n else "")
            print("gpu-check: job %s" % what, flush=True)
            t0 = time.monotonic()
            try:
                job = run_job(k, body, args.job_timeout)
            except (AssertionError, RuntimeError, OSError) as e:
                report.fail("%s: %s" % (what, e))
                continue
            secs = time.monotonic() - t0
            trials, statuses = check_job(k, job, report, what)
            best = job.get("best") or {}
            lines.append("%-14s %-34s %5d %-8s %6d %-22s %10s %9.1f  %s"
                         % (name, fmt_problem(job.get("problem")), job["id"], job["strategy"],
                            len(trials), ",".join("%s=%d" % kv for kv in sorted(statuses.items())),
                            "%.5f" % best["time_ms"] if best.get("time_ms") else "-", secs,
                            fmt_config(best.get("config"))))
            if n and job["status"] == "succeeded" and best.get("time_ms"):
                gemm_jobs[n] = job
    except RuntimeError as e:  # ktuned did not start
        report.fail("ktuned: %s" % e)
    finally:
        try:
            shutil.copy(k.log_path, os.path.join(logs, "ktuned.log"))
        except OSError:
            pass
        rc = None
        try:
            rc = k.stop()
        except RuntimeError as e:
            report.fail("ktuned: %s" % e)
        k.cleanup()
        shutil.rmtree(typed_dir, ignore_errors=True)
        if rc not in (None, 0):
            report.fail("ktuned exited %s on SIGTERM" % rc)
    lines.append("ktuned log: %s" % os.path.join(logs, "ktuned.log"))
    return gemm_jobs


def step_cublas(args, report, logs, gemm_jobs):
    lines = report.section("gemm: ktune's tuned CUDA kernel against cuBLAS sgemm")
    lines.append("ratio = time(ktune's best, the job's final pick) / time(cuBLAS sgemm, default "
                 "math: fp32, no TF32); both the median of CUDA-event-timed calls, >= 5 and >= %g s"
                 % MIN_SECONDS)
    cmd = [os.path.join(args.build, "gpu_gemm_cublas"), "--sizes",
           ",".join(str(n) for n in args.sizes), "--min-seconds", str(MIN_SECONDS)]
    print("gpu-check: cuBLAS (%s)" % " ".join(cmd), flush=True)
    log = os.path.join(logs, "cublas.log")
    rc, out, secs = run_logged(cmd, log, timeout=600)
    rows = []
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    if rc != 0 or not rows:
        report.fail("gpu_gemm_cublas exited %s: %s" % (rc, out.strip()[-600:]))
        return
    head = rows[0]
    lines.append("cuBLAS: %s %s (version %s) on %s" % (head.get("library"), head.get("math"),
                                                     head.get("cublas_version"), head.get("device")))
    by_n = {r["M"]: r for r in rows[1:]}
    lines.append("%-8s %11s %11s %8s %13s %13s %6s  %s" % ("size", "ktune_ms", "cublas_ms", "ratio",
                                                           "ktune_gflops", "cublas_gflops", "job",
                                                           "ktune config"))
    for n in args.sizes:
        c, job = by_n.get(n), gemm_jobs.get(n)
        if not c:
            report.fail("no cuBLAS time at %d^3" % n)
            continue
        if not job:
            lines.append("%-8s %11s %11.5f %8s %13s %13.1f %6s" % ("%d^3" % n, "-", c["time_ms"],
                                                                "-", "-", c["gflops"], "-"))
            continue  # the job's failure is already reported
        kt = job["best"]["time_ms"]
        flops = 2.0 * n * n * n
        lines.append("%-8s %11.5f %11.5f %8.3f %13.1f %13.1f %6d  %s"
                     % ("%d^3" % n, kt, c["time_ms"], kt / c["time_ms"], flops / (kt * 1e6),
                        c["gflops"], job["id"], fmt_config(job["best"].get("config"))))
    lines.append("gpu_gemm_cublas: %.1f s (log %s)" % (secs, log))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def git_head(source_dir):
    try:
        p = subprocess.run(["git", "-C", source_dir, "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source-dir", default=SOURCE_DEFAULT)
    ap.add_argument("--build", default=None, help="build folder (default <source-dir>/build)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="build jobs")
    ap.add_argument("--no-build", action="store_true", help="use the build as it is")
    ap.add_argument("--out", default=None, help="the figures file (default <build>/gpu-check.txt)")
    ap.add_argument("--sizes", default="1024,2048,4096", help="gemm sizes n (n^3) to tune and compare")
    ap.add_argument("--budget", type=int, default=32, help="evaluations per gemm tuning job")
    ap.add_argument("--check-budget", type=int, default=8, help="evaluations per verification job")
    ap.add_argument("--job-timeout", type=float, default=300, help="seconds one job may take")
    ap.add_argument("--probe-only", action="store_true", help="only probe: exit 0 or 3")
    ap.add_argument("--no-probe", action="store_true",
                    help="run every step even without a device (each then fails, saying why)")
    args = ap.parse_args(argv)
    args.device = "cuda:0"  # what the runner probe, the unit tests and gpu_gemm_cublas use too
    args.source_dir = os.path.abspath(args.source_dir)
    args.build = os.path.abspath(args.build or os.path.join(args.source_dir, "build"))
    args.out = os.path.abspath(args.out or os.path.join(args.build, "gpu-check.txt"))
    try:
        args.sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ap.error("--sizes: a comma-separated list of integers")
    if not args.sizes or min(args.sizes) < 1 or args.budget < 1 or args.check_budget < 1:
        ap.error("--sizes, --budget and --check-budget must be positive")
    return args


def main(argv):
    t_start = time.monotonic()
    args = parse_args(argv)
    count, reason, name = probe_device()
    if count < 1 and not args.no_probe:
        print("gpu-check: no CUDA device (%s)" % reason, flush=True)
        print("gpu-check: nothing was checked; exit status %d (no CUDA device)" % EXIT_NO_DEVICE,
              file=sys.stderr)
        return EXIT_NO_DEVICE
    if args.probe_only:
        print("gpu-check: %d CUDA device(s), cuda:0 is %s" % (count, name) if count else
              "gpu-check: no CUDA device (%s)" % reason)
        return EXIT_OK if count else EXIT_NO_DEVICE
    print("gpu-check: %s" % ("%d CUDA device(s), checking cuda:0: %s" % (count, name) if count
                             else "no CUDA device (%s); --no-probe: running every step" % reason),
          flush=True)
    logs = os.path.join(os.path.dirname(args.out), "gpu-check")
    os.makedirs(logs, exist_ok=True)
    report = Report(args.out)
    report.head += [
        "ktune gpu-check, %s, source %s (%s)" % (
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            args.source_dir, git_head(args.source_dir)),
        "host %s, %s, %d cores" % (platform.node(), cpu_model(), os.cpu_count() or 0),
        "driver probe: %s" % ("%d device(s), cuda:0 %s" % (count, name) if count
                              else "no CUDA device (%s)" % reason),
    ]
    phases = report.section("steps (seconds)")
    build_s = 0.0
    if not args.no_build:
        t = time.monotonic()
        ok = step_build(args, report, logs)
        build_s = time.monotonic() - t
        phases.append("%-12s %7.1f" % ("build", build_s))
        if not ok:
            report.write("result: FAIL (the build failed)")
            print("gpu-check: figures in %s" % args.out)
            return EXIT_SETUP
    kernels = cuda_kernels(args.source_dir)
    gemm_jobs = {}

    def jobs():
        gemm_jobs.update(step_jobs(args, report, logs, kernels))

    for label, step in (("runner", lambda: step_runner_probe(args, report, logs)),
                        ("unit tests", lambda: step_unit_tests(args, report, logs)),
                        ("jobs", jobs),
                        ("cuBLAS", lambda: step_cublas(args, report, logs, gemm_jobs))):
        t = time.monotonic()
        try:
            step()
        except Exception:  # a bug or the unexpected: reported, and the next step still runs
            report.fail("step %s stopped: %s" % (label, traceback.format_exc().strip()))
        phases.append("%-12s %7.1f" % (label, time.monotonic() - t))
        report.write()
    total = time.monotonic() - t_start
    checks = total - build_s
    phases.append("%-12s %7.1f (%.1f without the build; the target is under %d)"
                  % ("total", total, checks, TARGET_S))
    if checks > TARGET_S:
        phases.append("WARNING: the checks took longer than the %d s target" % TARGET_S)
    verdict = ("result: PASS (every check)" if not report.failures
               else "result: FAIL (%d failures, listed at the end)" % len(report.failures))
    report.write(verdict)
    print("gpu-check: %s" % verdict)
    print("gpu-check: figures in %s" % args.out)
    return EXIT_OK if not report.failures else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
