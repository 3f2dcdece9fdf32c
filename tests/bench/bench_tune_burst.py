#!/usr/bin/env python3
"""Bench: POST /v1/tune bursts (issue 11, Load). A real ktuned (embedded PostgreSQL, default
settings unless --extra says otherwise) takes

1. a burst of --burst submissions (default 1,000) sent as fast as --concurrency clients (default 32,
   one keep-alive connection each) can: replay jobs of the three shipped datasets, --budget
   evaluations each (default 10), distinct seeds;
2. then --jobs concurrent replay jobs (default 20) of --big-budget evaluations (default 500) sent at
   once.

Each answer must be 202 (accepted) or 429 (refused, with Retry-After); anything else is counted as an
error. And at least as many must be accepted as the admission limits allow (service/api/tune.c and
api_job_quota: a submission is refused only when --max-queued-jobs jobs are queued, the queued
evaluations would pass --max-queued-evaluations, or the caller has --max-queued-jobs-per-token jobs
queued or running; each of those counts only accepted jobs, so at least min(submissions, those
limits) are accepted; --extra's values or the defaults: set the limits with --extra, not with the
KTUNE_MAX_QUEUED_* environment variables, which this script does not read), so a server that refuses
everything fails. Then it waits until no job is queued or running and checks that nothing was lost: every
accepted job ended `succeeded` with exactly its budget of trials (the concurrent jobs' trials are read
back: as many distinct configurations as trials). Prints the submission rate, the answer counts, the
time to drain and the trial throughput; exits 1 when a check fails (an error answer, a lost or
unfinished job). About 1-3 minutes.

  python3 tests/bench/bench_tune_burst.py --ktuned build/ktuned --source-dir .
"""
import argparse
import collections
import http.client
import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from ktuned_fixture import Ktuned  # noqa: E402

TARGETS = [
    {"kernel": "clblast_gemm", "device": "replay:gemm_clblast-RTX_2080_Ti"},
    {"kernel": "convolution", "device": "replay:convolution_milo-A4000"},
    {"kernel": "pnpoly", "device": "replay:pnpoly_kt-RTX_3090"},
]


def submit_all(address, bodies, concurrency, token):
    """Posts every body with `concurrency` threads; returns ([(status, job id or None, retry_after)],
    seconds)."""
    results = [None] * len(bodies)
    next_i = [0]
    lock = threading.Lock()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token

    def worker():
        conn = http.client.HTTPConnection(address, timeout=120)
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= len(bodies):
                break
            try:
                conn.request("POST", "/v1/tune", body=json.dumps(bodies[i]), headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
                job_id = None
                if resp.status == 202:
                    job_id = json.loads(payload)["id"]
                results[i] = (resp.status, job_id, resp.getheader("Retry-After"))
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = http.client.HTTPConnection(address, timeout=120)
            except (OSError, http.client.HTTPException) as e:
                results[i] = ("error: %s" % e.__class__.__name__, None, None)
                conn.close()
                conn = http.client.HTTPConnection(address, timeout=120)
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.perf_counter() - t0


def job_counts(k):
    status, _, text = k.get("/metrics")
    assert status == 200
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'ktune_jobs\{status="(\w+)"\} (\d+)', text)}


def drain(k, timeout):
    """Seconds until no job is queued or running."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        c = job_counts(k)
        if c.get("queued", 0) + c.get("running", 0) == 0:
            return time.perf_counter() - t0
        time.sleep(0.2)
    raise AssertionError("jobs still queued/running after %ss: %r" % (timeout, job_counts(k)))


def report(title, results, seconds):
    counts = collections.Counter(r[0] for r in results)
    ok = counts.get(202, 0)
    refused = counts.get(429, 0)
    no_retry = sum(1 for r in results if r[0] == 429 and not r[2])
    errors = {s: n for s, n in counts.items() if s not in (202, 429)}
    print("%s: %d submissions in %.2f s (%.0f/s): %d accepted (202), %d refused (429%s), errors %r"
          % (title, len(results), seconds, len(results) / seconds, ok, refused,
             ", %d without Retry-After" % no_retry if no_retry else "", errors or "none"))
    return not errors and not no_retry


# ktuned's defaults of the admission limits (service/core/config.c).
ADMISSION_DEFAULTS = {"--max-queued-jobs": 1000, "--max-queued-evaluations": 10000000,
                      "--max-queued-jobs-per-token": 100}


def admission_limits(extra):
    """The admission limits ktuned runs with: the defaults, overridden by --extra's flags."""
    limits = dict(ADMISSION_DEFAULTS)
    for i, flag in enumerate(extra):
        name, _, value = flag.partition("=")
        if name in limits:
            limits[name] = int(value if value else extra[i + 1])
    return limits


def min_accepted(limits, submissions, budget):
    """The fewest acceptances the limits allow: a refusal needs a limit reached by accepted jobs."""
    return min(submissions, limits["--max-queued-jobs"], limits["--max-queued-jobs-per-token"],
               limits["--max-queued-evaluations"] // budget)


def check_accepted(title, accepted, least):
    if len(accepted) >= least:
        return True
    print("  %s: only %d accepted; the admission limits accept at least %d" % (title, len(accepted), least))
    return False


def check_jobs(k, accepted, budget, read_trials=False):
    """Every accepted job succeeded with its budget of trials; returns (problems, trials)."""
    problems, trials = [], 0
    conn = http.client.HTTPConnection(k.address, timeout=60)
    for job_id in accepted:
        status, _, job = k.get("/v1/jobs/%d" % job_id, conn=conn)
        if status != 200:
            problems.append("job %d: GET %d" % (job_id, status))
            continue
        n = job["progress"]["trials"]
        trials += n
        if job["status"] != "succeeded" or n != budget:
            problems.append("job %d: %s with %d trials (budget %d): %s"
                            % (job_id, job["status"], n, budget, job.get("error")))
        if read_trials:
            rows = k.all_trials(job_id)
            distinct = len({t["config_id"] for t in rows})
            if len(rows) != budget or distinct != len(rows):
                problems.append("job %d: %d trials read back, %d distinct configurations"
                                % (job_id, len(rows), distinct))
    conn.close()
    return problems, trials


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--budget", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--big-budget", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=900, help="seconds to wait for the drain")
    ap.add_argument("--token", default="", help="an API token to send (when --extra sets one)")
    ap.add_argument("--extra", default="", help="more ktuned flags, space-separated")
    args = ap.parse_args()
    failed = False
    limits = admission_limits(args.extra.split())
    k = Ktuned(args.ktuned, args.source_dir, extra=args.extra.split())
    try:
        k.start()
        print("ktuned %s (defaults: --workers 2 --max-jobs 8 --http-threads <online CPUs, 1-4> --http-heavy-threads 2 unless set)" % args.extra)
        bodies = [dict(TARGETS[i % len(TARGETS)], strategy="random", seed=i + 1,
                       budget={"evaluations": args.budget}) for i in range(args.burst)]
        results, secs = submit_all(k.address, bodies, args.concurrency, args.token)
        failed |= not report("burst of %d, concurrency %d, budget %d" % (args.burst, args.concurrency,
                                                                        args.budget), results, secs)
        accepted = [r[1] for r in results if r[0] == 202]
        failed |= not check_accepted("burst", accepted, min_accepted(limits, args.burst, args.budget))
        drained = drain(k, args.timeout)
        problems, trials = check_jobs(k, accepted, args.budget)
        print("  drained %.1f s after the last answer (%.1f s from the first submission): %d jobs, %d trials,"
              " %.0f trials/s; lost or unfinished: %d" % (drained, drained + secs, len(accepted), trials,
                                                          trials / (drained + secs), len(problems)))
        for p in problems[:10]:
            print("  " + p)
        failed |= bool(problems)

        bodies = [dict(TARGETS[i % len(TARGETS)], strategy="random", seed=100000 + i,
                       budget={"evaluations": args.big_budget}) for i in range(args.jobs)]
        results, secs = submit_all(k.address, bodies, args.jobs, args.token)
        failed |= not report("%d concurrent jobs, budget %d" % (args.jobs, args.big_budget), results, secs)
        accepted = [r[1] for r in results if r[0] == 202]
        failed |= not check_accepted("concurrent jobs", accepted,
                                     min_accepted(limits, args.jobs, args.big_budget))
        drained = drain(k, args.timeout)
        problems, trials = check_jobs(k, accepted, args.big_budget, read_trials=True)
        print("  drained %.1f s after the last answer: %d jobs, %d trials, %.0f trials/s; trials read back,"
              " distinct configurations per job; lost, duplicated or unfinished: %d"
              % (drained, len(accepted), trials, trials / (drained + secs), len(problems)))
        for p in problems[:10]:
            print("  " + p)
        failed |= bool(problems)
    finally:
        k.cleanup()
    print("tune burst: %s" % ("FAILED" if failed else "every answer 202 or 429, as many accepted as the"
                                                     " limits allow, every accepted job finished"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
