#!/usr/bin/env python3
"""ctest gpu_check_no_device: make gpu-check where there is no GPU. The script (with the build
present) and `make gpu-check` itself must say "no CUDA device" and stop within 5 s, the script with
exit status 3 and make with its own 2 after "Error 3"; the report of an earlier run is left alone.
The driver's own logic that needs no device is checked too: the catalog's CUDA kernels, the ctest
output parser, the cuBLAS program's answer without a device. Where a CUDA device is present this
test skips (exit 77): make gpu-check runs the real check there.

  python3 tests/gpu/test_gpu_check_no_device.py --build build --source-dir .
"""
import argparse
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpu_check  # noqa: E402

LIMIT_S = 5.0
SKIP_EXIT = 77

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--source-dir", required=True)
ARGS, rest = ap.parse_known_args()
sys.argv = [sys.argv[0]] + rest
BUILD = os.path.abspath(ARGS.build)
SOURCE = os.path.abspath(ARGS.source_dir)


def timed(cmd, **kw):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, **kw)
    return p.returncode, p.stdout.decode(errors="replace"), time.monotonic() - t0


class NoDevice(unittest.TestCase):
    def test_script_exits_3_fast(self):
        report = os.path.join(BUILD, "gpu-check.txt")
        before = os.stat(report).st_mtime_ns if os.path.exists(report) else None
        rc, out, secs = timed([sys.executable, os.path.join(HERE, "gpu_check.py"),
                               "--build", BUILD, "--source-dir", SOURCE])
        print("gpu_check.py: exit %d in %.3f s:\n%s" % (rc, secs, out))
        self.assertEqual(rc, gpu_check.EXIT_NO_DEVICE, out)
        self.assertIn("gpu-check: no CUDA device (", out)
        self.assertLess(secs, LIMIT_S)
        after = os.stat(report).st_mtime_ns if os.path.exists(report) else None
        self.assertEqual(before, after, "no device, yet the report was written")

    def test_make_gpu_check_stops_fast(self):
        # make's own exit status is 2 whatever the recipe's; "Error 3" shows the script's.
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
        rc, out, secs = timed(["make", "-C", SOURCE, "--no-print-directory", "gpu-check",
                               "BUILD=%s" % BUILD], env=env)
        print("make gpu-check: exit %d in %.3f s:\n%s" % (rc, secs, out))
        self.assertIn("gpu-check: no CUDA device (", out)
        self.assertIn("Error 3", out)
        self.assertEqual(rc, 2, out)
        self.assertLess(secs, LIMIT_S)

    def test_probe_only(self):
        rc, out, secs = timed([sys.executable, os.path.join(HERE, "gpu_check.py"), "--probe-only"])
        self.assertEqual(rc, gpu_check.EXIT_NO_DEVICE, out)
        self.assertIn("no CUDA device", out)

    def test_cublas_program_says_no_device(self):
        # It opens cuBLAS first (status 4 without one) and then the driver (3 without a device).
        rc, out, _ = timed([os.path.join(BUILD, "gpu_gemm_cublas"), "--sizes", "64"])
        print("gpu_gemm_cublas: exit %d: %s" % (rc, out))
        self.assertIn(rc, (3, 4), out)
        self.assertIn("no CUDA device" if rc == 3 else "no cuBLAS", out)
        rc, out, _ = timed([os.path.join(BUILD, "gpu_gemm_cublas"), "--sizes", "64,x"])
        self.assertEqual(rc, 2, out)
        self.assertIn("bad argument --sizes", out)


class DriverLogic(unittest.TestCase):
    def test_catalog_cuda_kernels(self):
        names = [name for name, _ in gpu_check.cuda_kernels(SOURCE)]
        print("kernels with a CUDA variant: %s" % ", ".join(names))
        self.assertIn("gemm", names)
        self.assertEqual(names, sorted(names))
        for d in sorted(os.listdir(os.path.join(SOURCE, "kernels"))):
            has = os.path.exists(os.path.join(SOURCE, "kernels", d, "cuda.cu"))
            self.assertEqual(has, d in names, d)

    def test_ctest_output_parser(self):
        out = "\n".join([
            "test 60",
            "    Start 60: test_runner_cuda",
            "60: [ RUN      ] probe_has_the_limits",
            "60: SKIP: probe_has_the_limits: no CUDA device (cuInit failed: CUDA_ERROR_NO_DEVICE)",
            "1/3 Test #60: test_runner_cuda .................   Passed    0.35 sec",
            "2/3 Test #61: test_runner_nvrtc ................***Failed   12.00 sec",
            "3/3 Test #59: test_runner_cuda_emulated ........***Skipped   0.01 sec",
            "SKIP: NVRTC not available (none)",
        ])
        results, skips = gpu_check.parse_ctest(out)
        self.assertEqual(results, {"test_runner_cuda": ("Passed", 0.35),
                                   "test_runner_nvrtc": ("Failed", 12.0),
                                   "test_runner_cuda_emulated": ("Skipped", 0.01)})
        self.assertEqual(skips, ["SKIP: probe_has_the_limits: no CUDA device (cuInit failed: "
                                 "CUDA_ERROR_NO_DEVICE)", "SKIP: NVRTC not available (none)"])


if __name__ == "__main__":
    count, reason, name = gpu_check.probe_device()
    if count > 0:
        print("SKIP: a CUDA device is present; make gpu-check runs the real check (cuda:0 %s)" % name)
        sys.exit(SKIP_EXIT)
    print("no CUDA device here (%s)" % reason)
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
