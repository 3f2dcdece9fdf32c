"""A user's own C kernel, registered over HTTP with the Python client, tuned on the server's cpu
device, edited and registered again: two versions, both versions' results kept and listed.

No file is written on the server's host and nothing restarts. Run against a server:
KTUNE_SERVER=http://127.0.0.1:8080 PYTHONPATH=clients/python python3 examples/own_kernel/register_and_tune.py
(make test: ctest example_own_kernel)."""
import json
import os

import ktune

HERE = os.path.dirname(os.path.abspath(__file__))
PROBLEM = {"n": 256, "m": 1000}


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def register_and_tune(c, spec, source, budget):
    reg = c.register_kernel(spec, {"rowsum.c": source})        # POST /v1/kernels
    print("registered %s version %s: %s" % (reg["name"], reg["version"], reg["status"]))
    entry = c.wait_kernel("rowsum", reg["version"])             # validating -> ready (or raises)
    print("  validated: %s %s" % (entry["status"], json.dumps(entry.get("validation"))))
    job = c.tune("rowsum", device="cpu", problem=PROBLEM, budget=budget, kernel_version=reg["version"],
                 final_remeasure=0)                             # POST /v1/tune
    done = c.wait_job(job["id"])
    assert done["status"] == "succeeded", done
    assert done["kernel_hash"] == reg["version"], done
    trials = [t for t in c.trials(job["id"]) if t["status"] == "ok"]
    print("  job %d: %d trials, best %s %.4f ms" % (job["id"], len(trials),
                                                    json.dumps(done["best"]["config"]),
                                                    done["best"]["time_ms"]))
    return reg["version"], done, trials


def main():
    c = ktune.Client()                                          # KTUNE_SERVER, KTUNE_TOKEN
    spec, source = json.loads(read("spec.json")), read("rowsum.c")
    v1, job1, trials1 = register_and_tune(c, spec, source, budget=5)

    # The user edits the kernel (partial sums in double) and registers it again: a new version.
    edited = source.replace("float acc[ACC]", "double acc[ACC]").replace("float s = 0", "double s = 0")
    assert edited != source
    v2, job2, trials2 = register_and_tune(c, spec, edited, budget=5)
    assert v2 != v1, "an edited source is a new version"
    again = c.register_kernel(spec, {"rowsum.c": edited})
    assert again["version"] == v2, again                        # the same bytes: the same version

    versions = c.kernel_versions("rowsum")                      # GET /v1/kernels/rowsum
    print("GET /v1/kernels/rowsum: %s" % [(v["version"][:12], v["status"]) for v in versions])
    assert [v["version"] for v in versions] == [v2, v1], versions
    assert all(v["status"] == "ready" for v in versions), versions

    # Both versions' results are kept: /v1/best answers each version, and the newest by default.
    for version, job in ((v1, job1), (v2, job2)):
        b = c.best("rowsum", device="cpu", problem=PROBLEM, kernel_version=version)
        print("GET /v1/best?kernel_version=%s...: %s" % (version[:12], b))
        assert b is not None and b.kernel_version == version, b
        assert b.config == job["best"]["config"], (b, job["best"])
    newest = c.best("rowsum", device="cpu", problem=PROBLEM)
    assert newest.kernel_version == v2, newest
    for trials in (trials1, trials2):
        assert trials and all(t["time_ms"] > 0 and "gbps" in t["extras"]["metrics"] for t in trials)
    print("ok: two versions, both tuned, both results kept")


if __name__ == "__main__":
    main()
