#!/usr/bin/env python3
"""Bench: a database of several million trials stays fast to page and to look up (issue 11,
Scale-out). A real ktuned on an external PostgreSQL (bench_pg.PgServer, --database-url) whose tables
are filled with SQL (tests/bench/fill_trials.sql): one job of --big-job trials (default 1,000,000),
--jobs finished jobs of 1,000 trials (default 3,000: 4 M trials in all), and --small-jobs jobs of 2
trials (default 100,000: as many best-table entries), VACUUM ANALYZEd; one short replay job gives
/v1/best a real entry. Then, on one keep-alive connection, each request
--repeat times: GET /v1/jobs/{big}/trials?after=N (the first, middle and last page of the big job,
JSON and compact, 1,000 rows), GET /v1/jobs (first page, a page deep in the list, by status),
GET /v1/jobs/{big}, GET /v1/best (hit), GET /v1/best/entries, GET /metrics and GET /healthz as the
reference. Prints median and p90 milliseconds per request. Asserts only that every answer is a 200
with the expected row count. About 5-10 minutes (the fill).

  python3 tests/bench/bench_db_millions.py --ktuned build/ktuned --source-dir . [--jobs N --big-job N]
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_pg import PgServer  # noqa: E402
from ktuned_fixture import Ktuned  # noqa: E402

GEMM = {"kernel": "clblast_gemm", "device": "replay:gemm_clblast-RTX_2080_Ti"}


def timed(conn, path, repeat, check):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        times.append((time.perf_counter() - t0) * 1000)
        if resp.status != 200:
            raise AssertionError("%s: %d %s" % (path, resp.status, body[:300]))
    check(json.loads(body))
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))], len(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--jobs", type=int, default=3000, help="finished jobs of 1,000 trials [3000]")
    ap.add_argument("--big-job", type=int, default=1000000, help="trials of the one big job [1000000]")
    ap.add_argument("--small-jobs", type=int, default=100000,
                    help="jobs of 2 trials, each a problem of its own: best-table entries [100000]")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    fill_sql = os.path.join(args.source_dir, "tests", "bench", "fill_trials.sql")
    # fsync off: the fill writes gigabytes and durability is not what is measured (reads are).
    with PgServer(settings=["fsync=off", "full_page_writes=off"]) as pg:
        k = Ktuned(args.ktuned, args.source_dir, extra=["--database-url", pg.conninfo(), "--workers", "2"])
        try:
            k.start()
            status, _, job = k.post("/v1/tune", dict(GEMM, strategy="random", budget={"evaluations": 50}))
            assert status == 202, job
            k.wait_job(job["id"])
            t0 = time.time()
            pg.psql("SELECT pg_temp.ktune_bench_fill(1, %d, 1)" % args.big_job, file=fill_sql)
            pg.psql("SELECT pg_temp.ktune_bench_fill(%d, 1000, 2)" % args.jobs, file=fill_sql)
            if args.small_jobs:
                pg.psql("SELECT pg_temp.ktune_bench_fill(%d, 2, 3)" % args.small_jobs, file=fill_sql)
            pg.psql("VACUUM (ANALYZE) jobs, trials, best")
            fill_s = time.time() - t0
            n_trials = int(pg.psql("SELECT count(*) FROM trials"))
            n_jobs = int(pg.psql("SELECT count(*) FROM jobs"))
            size = pg.psql("SELECT pg_size_pretty(pg_total_relation_size('trials'))")
            n_best = int(pg.psql("SELECT count(*) FROM best"))
            big = int(pg.psql("SELECT id FROM jobs WHERE trials_done = %d ORDER BY id LIMIT 1" % args.big_job))
            lo, hi = map(int, pg.psql("SELECT min(done_seq) || ' ' || max(done_seq) FROM trials WHERE job_id = %d"
                                      % big).split())
            mid_id = int(pg.psql("SELECT id FROM jobs ORDER BY id OFFSET %d LIMIT 1" % (n_jobs // 2)))
            print("tables: %d trials (%s with indexes), %d jobs, %d best entries; big job %d has %d trials;"
                  " filled in %.0f s" % (n_trials, size, n_jobs, n_best, big, args.big_job, fill_s))
            print("%-58s %9s %9s %10s" % ("request (%d times each, one keep-alive connection)" % args.repeat,
                                         "median ms", "p90 ms", "bytes"))
            conn = http.client.HTTPConnection(k.address, timeout=120)

            def rows(n):
                return lambda b: len(b.get("trials", b.get("rows", []))) == n or \
                    (_ for _ in ()).throw(AssertionError("wanted %d rows" % n))

            def any_ok(_):
                return True

            def jobs_n(n, avail):
                return lambda b: len(b["jobs"]) == min(n, avail) or \
                    (_ for _ in ()).throw(AssertionError("wanted %d jobs, got %d" % (n, len(b["jobs"]))))
            q = urllib.parse.urlencode(GEMM)
            cases = [
                ("GET /healthz (reference: one database round trip)", "/healthz", any_ok),
                ("trials page, first (after=0, limit 1000)", "/v1/jobs/%d/trials?after=0&limit=1000" % big, rows(1000)),
                ("trials page, middle", "/v1/jobs/%d/trials?after=%d&limit=1000" % (big, lo + (hi - lo) // 2), rows(1000)),
                ("trials page, last", "/v1/jobs/%d/trials?after=%d&limit=1000" % (big, hi - 1000), rows(1000)),
                ("trials page, first, compact", "/v1/jobs/%d/trials?after=0&limit=1000&format=compact" % big, rows(1000)),
                ("trials page, middle, compact", "/v1/jobs/%d/trials?after=%d&limit=1000&format=compact"
                 % (big, lo + (hi - lo) // 2), rows(1000)),
                ("trials page, last, compact", "/v1/jobs/%d/trials?after=%d&limit=1000&format=compact"
                 % (big, hi - 1000), rows(1000)),
                ("GET /v1/jobs/{big} (job view)", "/v1/jobs/%d" % big, any_ok),
                ("GET /v1/jobs (newest 50)", "/v1/jobs", jobs_n(50, n_jobs)),
                ("GET /v1/jobs?before=<middle id>", "/v1/jobs?before=%d" % mid_id, jobs_n(50, n_jobs // 2)),
                ("GET /v1/jobs?status=succeeded&limit=500", "/v1/jobs?status=succeeded&limit=500", jobs_n(500, n_jobs)),
                ("GET /v1/best (hit)", "/v1/best?" + q, lambda b: b.get("source") == "measured" or
                 (_ for _ in ()).throw(AssertionError(b))),
                ("GET /v1/best/entries (newest 50)", "/v1/best/entries", any_ok),
                ("GET /v1/best/entries?kernel=gemm", "/v1/best/entries?kernel=gemm", any_ok),
                ("GET /v1/best/entries?kernel=gemm&device_class=bench-gpu",
                 "/v1/best/entries?kernel=gemm&device_class=bench-gpu", any_ok),
                ("GET /metrics", "/metrics", None),
            ]
            for title, path, check in cases:
                if check is None:  # text, not JSON
                    times = []
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        conn.request("GET", path)
                        resp = conn.getresponse()
                        body = resp.read()
                        times.append((time.perf_counter() - t0) * 1000)
                        assert resp.status == 200, (path, resp.status)
                    times.sort()
                    med, p90, nbytes = statistics.median(times), times[int(0.9 * (len(times) - 1))], len(body)
                else:
                    med, p90, nbytes = timed(conn, path, args.repeat, check)
                print("%-58s %9.2f %9.2f %10d" % (title, med, p90, nbytes))
            conn.close()
        finally:
            k.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
