"""A framework's own harness tuning its own OpenCL kernel through ktune's ask/tell API.

PyOpenCL (Debian's python3-pyopencl) owns the device, the build and the timing: ktune only proposes
configurations and keeps the results. The kernel sums rows of a matrix; its parameters are the
work-group size (WG) and the rows each work item sums (ROWS); each configuration is built once with
its values as -D defines, run, checked against numpy, and timed with OpenCL profiling events (the
median of REPEATS runs after a warm-up). Afterwards the deploy-time table is exported and the best
configuration looked up from it without a server, as a deployment would.

Run: KTUNE_SERVER=http://127.0.0.1:8080 python3 examples/opencl_harness/harness.py [--budget N]
(with clients/python on PYTHONPATH, or the ktune package installed). Exit 77: no OpenCL here."""
import argparse
import hashlib
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
import ktune  # noqa: E402

try:
    import numpy as np
    import pyopencl as cl
except ImportError as e:  # the example needs Debian's python3-pyopencl and an OpenCL driver (PoCL)
    print("opencl_harness: skipped: %s (apt install python3-pyopencl pocl-opencl-icd)" % e)
    sys.exit(77)

SOURCE = r"""
__kernel void row_sums(__global const float *m, __global float *out, int rows, int cols) {
    int first = get_global_id(0) * ROWS;
    for (int r = first; r < first + ROWS && r < rows; r++) {
        float s = 0.0f;
        for (int c = 0; c < cols; c++)
            s += m[r * cols + c];
        out[r] = s;
    }
}
"""
KERNEL = "row_sums_opencl"
SPACE = {
    "parameters": [{"name": "WG", "values": [1, 2, 4, 8, 16, 32, 64, 128]},
                   {"name": "ROWS", "values": [1, 2, 4, 8]}],
    # rows must cover the problem with whole work-groups of work items
    "restrictions": ["rows % (WG * ROWS) == 0"],
    "default": {"WG": 16, "ROWS": 1},
}
REPEATS = 5


def device_class(dev):
    """The class this harness runs on: platform and device name (a fleet of equal hosts shares it)."""
    name = "%s %s" % (dev.platform.name, dev.name)
    return "opencl:" + "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)[:100]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=512)
    ap.add_argument("--table", default=None, help="where to write the deploy-time table")
    args = ap.parse_args()

    try:
        ctx = cl.create_some_context(interactive=False)
    except cl.Error as e:
        print("opencl_harness: skipped: no OpenCL platform (%s)" % e)
        return 77
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    dev = ctx.devices[0]
    klass = device_class(dev)
    rows, cols = args.rows, args.cols
    rng = np.random.default_rng(1)
    host = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    expect = host.sum(axis=1)
    mf = cl.mem_flags
    dm = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
    dout = cl.Buffer(ctx, mf.WRITE_ONLY, expect.nbytes)
    out = np.empty_like(expect)

    def measure(config):
        """(status, time_ms) of one configuration, measured here."""
        try:
            prg = cl.Program(ctx, SOURCE).build(options=["-D%s=%d" % kv for kv in config.items()])
        except cl.Error:
            return "compile_error", None
        wg, per = config["WG"], config["ROWS"]
        items = rows // per
        times = []
        try:
            for i in range(REPEATS + 1):
                ev = prg.row_sums(queue, (items,), (wg,), dm, dout, np.int32(rows), np.int32(cols))
                ev.wait()
                if i:  # the first run warms up
                    times.append((ev.profile.end - ev.profile.start) / 1e6)
        except cl.Error:
            return "runtime_error", None
        cl.enqueue_copy(queue, out, dout).wait()
        if not np.allclose(out, expect, rtol=1e-4, atol=1e-3):
            return "wrong_result", None
        return "ok", statistics.median(times)

    client = ktune.Client()
    version = hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
    problem = {"rows": rows, "cols": cols}
    tuning = client.tune_external(KERNEL, SPACE, problem=problem, device_class=klass,
                                  kernel_version=version, strategy="auto", budget=args.budget, seed=1)
    told = 0
    for trial in tuning:
        status, time_ms = measure(trial.config)
        trial.tell(time_ms=time_ms, status=status)
        told += 1
    print("opencl_harness: job %d on %s: %d configurations measured here" % (tuning.job_id, klass, told))

    # Deploy time: a table exported once, looked up without a server.
    table_path = args.table or os.path.join(tempfile.mkdtemp(prefix="ktune-opencl-"), "ktune.table")
    client.export_table(table_path, kernel=KERNEL)
    hit = ktune.Table.load(table_path).lookup(KERNEL, klass, problem)
    if hit is None:
        print("opencl_harness: the deploy table has no entry for %s on %s" % (KERNEL, klass))
        return 1
    how = "exact" if hit.exact else "nearest tuned problem %s" % hit.problem
    print("opencl_harness: deploy table %s: %s -> %s (%s)" % (table_path, problem, hit.config, how))
    status, time_ms = measure(hit.config)
    print("opencl_harness: the looked-up configuration measures %s %.4f ms" % (status, time_ms))
    return 0 if status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
