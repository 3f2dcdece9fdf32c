"""A Kernel Tuner user's script, on ktune: the only change is the import line.

    import kernel_tuner            ->   import ktune as kernel_tuner

A C kernel with an f64 output, f64 and i32 inputs and a float scalar argument,
y[i] = a * x[idx[i]] + x[i], tuned on the server's cpu device over its unrolling and blocking. The
input arrays and the answer travel with the kernel: every configuration computes on x and idx as
they are here, and its y is compared with the answer (a configuration that differs: a wrong_result).
Run against a server: KTUNE_SERVER=http://127.0.0.1:8080 PYTHONPATH=clients/python \
/usr/bin/python3 examples/kernel_tuner_style/tune_gather.py (make test: ctest example_kernel_tuner_style).
Exits 77 (skipped) without numpy."""
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed (Debian: apt install python3-numpy)")
    sys.exit(77)

import ktune as kernel_tuner  # was: import kernel_tuner

kernel_string = """
void gather_axpy(double *y, const double *x, const int *idx, double a, int n)
{
    for (int b = 0; b < n; b += BLOCK) {
        int end = b + BLOCK < n ? b + BLOCK : n, i = b;
        for (; i + UNROLL <= end; i += UNROLL)
            for (int u = 0; u < UNROLL; u++)
                y[i + u] = a * x[idx[i + u]] + x[i + u];
        for (; i < end; i++)
            y[i] = a * x[idx[i]] + x[i];
    }
}
"""

size = 20000                                           # x, idx and the answer: 400 KB, within 512 KiB
rng = np.random.default_rng(1)
x = rng.standard_normal(size)                          # float64
idx = rng.permutation(size).astype(np.int32)           # int32
y = np.zeros_like(x)
a = 1.5                                                # a Python float: a C double
n = np.int32(size)

args = [y, x, idx, a, n]
answer = [a * x[idx] + x, None, None, None, None]      # which argument is the output

tune_params = {"BLOCK": [256, 1024, 4096], "UNROLL": [1, 2, 4, 8]}
restrictions = ["BLOCK % UNROLL == 0", "UNROLL * 64 <= BLOCK"]
metrics = {"GFLOP/s": "2*n / (time * 1e6)", "GB/s": "28*n / (time * 1e6)"}

results, env = kernel_tuner.tune_kernel("gather_axpy", kernel_string, size, args, tune_params,
                                        restrictions=restrictions, answer=answer, metrics=metrics,
                                        strategy_options={"max_fevals": 6})

for r in sorted(results, key=lambda r: r["time"]):
    print("BLOCK=%-5d UNROLL=%d  %.4f ms  %.2f GFLOP/s  %.2f GB/s"
          % (r["BLOCK"], r["UNROLL"], r["time"], r["GFLOP/s"], r["GB/s"]))
print("job %(job_id)s, kernel version %(kernel_version)s on %(device)s, verify %(verify)s" % env)
print("best:", env["best"])

# What the script checks (it is ctest example_kernel_tuner_style):
assert 1 <= len(results) <= 6, results
assert env["failed"] == 0, env
assert env["verify"] == "answer" and env["uploaded"], env   # compared with the answer above
for r in results:
    assert r["time"] > 0 and r["BLOCK"] % r["UNROLL"] == 0 and r["UNROLL"] * 64 <= r["BLOCK"], r
    assert abs(r["GFLOP/s"] - 2 * size / (r["time"] * 1e6)) < 1e-6 * r["GFLOP/s"], r
assert env["best"]["config"] in [{"BLOCK": r["BLOCK"], "UNROLL": r["UNROLL"]} for r in results], env
# The result stays on the server: /v1/best answers it for this problem, under this version.
best = kernel_tuner.Client().best("gather_axpy", device="cpu", problem=env["problem"])
assert best is not None and best.kernel_version == env["kernel_version"], best
assert best.config == env["best"]["config"], (best, env["best"])
print("GET /v1/best:", best)
# The data is what the kernel saw: the same kernel with a wrong answer does not verify.
try:
    kernel_tuner.tune_kernel("gather_axpy", kernel_string, size, args, tune_params,
                             restrictions=restrictions, answer=[answer[0] + 1.0] + answer[1:],
                             strategy_options={"max_fevals": 1})
    raise AssertionError("a wrong answer verified")
except kernel_tuner.KtuneError as e:
    assert e.code == "kernel_invalid" and "wrong_result" in e.message, e
    print("a wrong answer: %s" % e.code)
