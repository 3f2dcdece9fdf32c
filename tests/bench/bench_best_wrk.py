"""Bench of GET /v1/best under load (make bench; prints and writes figures, asserts nothing).

wrk (2 threads, 64 connections, keep-alive) against ktuned's GET /v1/best for a measured hit, and
against nginx-light serving the same JSON body (the exact bytes ktuned sent) from a file, in the
same run, same request line, same connections; then against a second ktuned started with
--best-cache-entries 0 (the lookup as it was before the cache: catalog key + one SQL query per
request) as a second reference. Each server gets a 1 s warm-up, then the rounds alternate
(ktuned, nginx, ktuned uncached) so that machine noise falls on all of them. Reports requests/s,
p50/p99 latency, errors (socket errors and non-2xx replies) and the ratio ktuned / nginx per round.

  python3 tests/bench/bench_best_wrk.py --ktuned build/ktuned --source-dir . \\
      [--duration 5] [--rounds 6] [--connections 64] [--threads 2] [--cpus 0] [--http-threads 4] \\
      [--out tests/bench/results/v1-best-wrk.txt]

--cpus pins every process of the bench (ktuned, its PostgreSQL, nginx, wrk) to those cores
(taskset list, e.g. "0" or "0,1"); default: the cores this process may use. --wrk-cpus and
--server-cpus pin the load generator and the servers apart (issue 32: "wrk pinned to one core, the
server to the other": --wrk-cpus 0 --server-cpus 1), each overriding --cpus for its side.
Needs wrk and nginx (Debian: wrk, nginx-light; deploy/install-deps.sh installs them).
"""
import argparse
import datetime
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from ktuned_fixture import Ktuned, best_query  # noqa: E402

KERNEL, DEVICE = "convolution", "replay:convolution_milo-A4000"

NGINX_CONF = """
worker_processes {workers};
error_log {dir}/error.log warn;
pid {dir}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile {sendfile};
    tcp_nodelay on;
    open_file_cache max=16 inactive=60s;
    open_file_cache_valid 60s;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    client_body_temp_path {dir}/tmp-body;
    proxy_temp_path {dir}/tmp-proxy;
    fastcgi_temp_path {dir}/tmp-fastcgi;
    uwsgi_temp_path {dir}/tmp-uwsgi;
    scgi_temp_path {dir}/tmp-scgi;
    server {{
        listen 127.0.0.1:{port};
        root {dir}/www;
        location = /v1/best {{
            default_type application/json;
            try_files /best.json =404;
        }}
    }}
}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(cmd, cpus):
    return (["taskset", "-c", cpus] + cmd) if cpus else cmd


def start_nginx(body, cpus, workers, sendfile):
    d = tempfile.mkdtemp(prefix="ktune-bench-nginx-", dir="/tmp")
    os.chmod(d, 0o755)
    os.makedirs(os.path.join(d, "www"))
    with open(os.path.join(d, "www", "best.json"), "wb") as f:
        f.write(body)
    os.chmod(os.path.join(d, "www"), 0o755)
    os.chmod(os.path.join(d, "www", "best.json"), 0o644)
    port = free_port()
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(dir=d, port=port, workers=workers, sendfile=sendfile))
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen(pinned([nginx, "-p", d, "-e", os.path.join(d, "error.log"), "-c", conf,
                                    "-g", "daemon off;"], cpus),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, d, port
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("nginx did not start: " + proc.stderr.read().decode(errors="replace"))
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("nginx did not listen on %d" % port)


TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids):
    """utime + stime of the processes (every thread), in seconds."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / TICK


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except OSError:
                pass
    return out


def wrk(url, args, duration, pids=()):
    """wrk's figures, and the CPU the server's processes spent per request (robust to a busy
    machine, where requests/s mostly say how much of the core the server was given)."""
    cmd = pinned(["wrk", "-t%d" % args.threads, "-c%d" % args.connections, "-d%ds" % duration,
                  "--latency", url], args.wrk_cpus)
    c0 = cpu_seconds(pids)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60).stdout
    r = parse_wrk(out)
    r["cpu_us"] = (cpu_seconds(pids) - c0) * 1e6 / r["requests"] if r["requests"] else float("nan")
    return r


def to_ms(value, unit):
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}[unit]


def parse_wrk(out):
    r = {"raw": out}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    r["rps"] = float(m.group(1)) if m else 0.0
    for pct in ("50", "99"):
        m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s|m)\s*$" % pct, out, re.M)
        r["p" + pct] = to_ms(*m.groups()) if m else float("nan")
    m = re.search(r"(\d+) requests in", out)
    r["requests"] = int(m.group(1)) if m else 0
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    r["errors"] = errors
    return r


def seed(k):
    status, _, job = k.post("/v1/tune", {"kernel": KERNEL, "device": DEVICE, "strategy": "random",
                                         "budget": {"evaluations": 20}, "seed": 1})
    assert status == 202, job
    job = k.wait_job(job["id"])
    assert job["status"] == "succeeded", job


def raw_get(address, path):
    """The reply's status and exact body bytes, over one HTTP/1.1 request."""
    import http.client
    conn = http.client.HTTPConnection(address, timeout=30)
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktuned", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--http-threads", type=int, default=0, help="ktuned --http-threads (0: its default)")
    ap.add_argument("--nginx-workers", default="auto")
    ap.add_argument("--nginx-sendfile", default="off", choices=("on", "off"),
                    help="off: nginx reads the small file into its buffer and sends one writev")
    ap.add_argument("--cpus", default="")
    ap.add_argument("--wrk-cpus", default="", help="cores for wrk alone (default: --cpus)")
    ap.add_argument("--server-cpus", default="",
                    help="cores for ktuned, its PostgreSQL and nginx (default: --cpus)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "v1-best-wrk.txt"))
    ap.add_argument("--skip-uncached", action="store_true", help="leave the uncached reference out")
    ap.add_argument("--note", default="", help="a line about the conditions, written with the results")
    args = ap.parse_args()
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            sys.exit("bench_best_wrk: %s is missing (apt-get install wrk nginx-light; make deps)" % tool)
    args.wrk_cpus = args.wrk_cpus or args.cpus
    args.server_cpus = args.server_cpus or args.cpus
    if args.server_cpus:  # ktuned and postgres inherit it
        os.sched_setaffinity(0, {int(c) for c in args.server_cpus.split(",")})
    extra = ["--workers", "1", "--kernels", ""]
    if args.http_threads:
        extra += ["--http-threads", str(args.http_threads)]
    path = best_query(KERNEL, DEVICE)
    cached = Ktuned(args.ktuned, args.source_dir, extra=extra)
    uncached = Ktuned(args.ktuned, args.source_dir, extra=extra + ["--best-cache-entries", "0"])
    nginx = nginx_dir = None
    try:
        cached.start()
        seed(cached)
        if not args.skip_uncached:
            uncached.start()
            seed(uncached)
        status, headers, body = raw_get(cached.address, path)
        assert status == 200 and b'"source":"measured"' in body, (status, body[:200])
        status, headers2, body2 = raw_get(cached.address, path)
        assert body2 == body and headers2.get("etag") == headers.get("etag"), "the cached answer differs"
        if not args.skip_uncached:
            assert raw_get(uncached.address, path)[0] == 200
        nginx, nginx_dir, nginx_port = start_nginx(body, args.server_cpus, args.nginx_workers, args.nginx_sendfile)
        status, _, nbody = raw_get("127.0.0.1:%d" % nginx_port, path)
        assert status == 200 and nbody == body, (status, nbody[:200])
        urls = {"ktuned": "http://%s%s" % (cached.address, path),
                "nginx": "http://127.0.0.1:%d%s" % (nginx_port, path)}
        if not args.skip_uncached:
            urls["ktuned-uncached"] = "http://%s%s" % (uncached.address, path)
        pids = {"ktuned": [cached.proc.pid], "nginx": [nginx.pid] + children(nginx.pid),
                "ktuned-uncached": [uncached.proc.pid] if uncached.proc else []}
        for url in urls.values():
            wrk(url, args, 1)  # warm-up: connections, caches, page faults
        results = {name: [] for name in urls}
        for _ in range(args.rounds):
            for name, url in urls.items():
                results[name].append(wrk(url, args, args.duration, pids[name]))
        report(args, results, len(body))
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait(10)
        if nginx_dir:
            shutil.rmtree(nginx_dir, ignore_errors=True)
        cached.cleanup()
        uncached.cleanup()


def report(args, results, body_len):
    lines = []
    lines.append("bench_best_wrk (make bench): GET /v1/best (a measured hit of %s on %s, %d-byte body)"
                 % (KERNEL, DEVICE, body_len))
    lines.append("wrk -t%d -c%d -d%ds --latency, %d rounds alternating; nginx-light serves the same bytes"
                 " from a file (worker_processes %s, sendfile %s, access_log off, open_file_cache,"
                 " keepalive_requests 1000000);"
                 % (args.threads, args.connections, args.duration, args.rounds, args.nginx_workers,
                    args.nginx_sendfile))
    lines.append("ktuned-uncached: --best-cache-entries 0 (catalog key + SQL per request, as before the"
                 " cache). cores: wrk %s, servers %s; %s; %s"
                 % (args.wrk_cpus or "all", args.server_cpus or "all", datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                    ", ".join(os.uname()[0:1] + os.uname()[2:3])))
    if args.note:
        lines.append(args.note)
    lines.append("")
    lines.append("%-16s %5s %12s %9s %9s %7s %12s" % ("server", "round", "requests/s", "p50 ms", "p99 ms",
                                                    "errors", "cpu us/req"))
    for name, rs in results.items():
        for i, r in enumerate(rs):
            lines.append("%-16s %5d %12.0f %9.3f %9.3f %7d %12.1f" % (name, i + 1, r["rps"], r["p50"],
                                                                   r["p99"], r["errors"], r["cpu_us"]))
    lines.append("")
    ratios = [k["rps"] / n["rps"] if n["rps"] else 0 for k, n in zip(results["ktuned"], results["nginx"])]
    un = [u["rps"] / n["rps"] if n["rps"] else 0 for u, n in zip(results.get("ktuned-uncached", []), results["nginx"])]
    lines.append("ratio ktuned / nginx per round: %s (median %.2f)"
                 % (", ".join("%.2f" % r for r in ratios), statistics.median(ratios)))
    p99 = [k["p99"] / n["p99"] if n["p99"] else 0 for k, n in zip(results["ktuned"], results["nginx"])]
    lines.append("p99 ktuned / nginx per round: %s (median %.2f; at most 1 is the aim of issue 32)"
                 % (", ".join("%.2f" % r for r in p99), statistics.median(p99)))
    if un:
        lines.append("ratio ktuned-uncached / nginx per round: %s (median %.2f)"
                     % (", ".join("%.2f" % r for r in un), statistics.median(un)))
    cpu = {n: statistics.median(r["cpu_us"] for r in rs) for n, rs in results.items()}
    lines.append("server CPU per request, median: %s; nginx / ktuned %.2f (the requests/s ratio a core of"
                 " its own would give when the server is the bottleneck)"
                 % (", ".join("%s %.1f us" % (n, c) for n, c in cpu.items()), cpu["nginx"] / cpu["ktuned"]))
    for name, rs in results.items():
        lines.append("%-16s median requests/s %.0f, median p50 %.3f ms, median p99 %.3f ms, errors %d"
                     % (name, statistics.median(r["rps"] for r in rs), statistics.median(r["p50"] for r in rs),
                        statistics.median(r["p99"] for r in rs), sum(r["errors"] for r in rs)))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
