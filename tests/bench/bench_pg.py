"""A throw-away PostgreSQL server for the script benchmarks (bench_db_millions.py,
bench_tune_burst.py): initdb in a /tmp folder, listening on a unix socket only, started with pg_ctl
(as user postgres when run as root), with psql for filling tables. ktuned is then pointed at it with
--database-url, as a deployment with an external database is; a server of its own (rather than
ktuned's embedded one) lets the benchmark fill and inspect the tables with psql whatever the
embedded cluster's authentication."""
import glob
import os
import shutil
import subprocess
import tempfile


def pg_bin(name):
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + name))
    if not found:
        raise RuntimeError("PostgreSQL's %s not found (deploy/install-deps.sh installs postgresql)" % name)
    return found[-1]


class PgServer:
    PORT = 5439

    def __init__(self, settings=()):
        self.root = tempfile.mkdtemp(prefix="ktune-bench-pg-", dir="/tmp")
        os.chmod(self.root, 0o755)
        self.data = os.path.join(self.root, "pg")
        self.sock = os.path.join(self.root, "sock")
        self.settings = list(settings)
        self.started = False

    def _as_postgres(self, cmd):
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--"] + cmd
        return cmd

    def start(self):
        os.mkdir(self.sock)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.sock, "postgres")
        subprocess.run(self._as_postgres([pg_bin("initdb"), "-D", self.data, "-U", "ktune", "-A", "trust",
                                          "-E", "UTF8", "--no-sync"]),
                       check=True, stdout=subprocess.DEVNULL)
        opts = "-c listen_addresses='' -k %s -p %d" % (self.sock, self.PORT)
        for s in self.settings:
            opts += " -c " + s
        subprocess.run(self._as_postgres([pg_bin("pg_ctl"), "-D", self.data, "-w", "-l",
                                          os.path.join(self.data, "log"), "-o", opts, "start"]),
                       check=True, stdout=subprocess.DEVNULL)
        self.started = True
        self.psql("CREATE DATABASE ktune", db="postgres")
        return self

    def conninfo(self, db="ktune"):
        return "host=%s port=%d dbname=%s user=ktune" % (self.sock, self.PORT, db)

    def psql(self, sql, db="ktune", file=None):
        cmd = ["psql", self.conninfo(db), "-v", "ON_ERROR_STOP=1", "-qAt"]
        cmd += ["-f", file] if file else []
        cmd += ["-c", sql] if sql else []
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def stop(self):
        if self.started:
            subprocess.run(self._as_postgres([pg_bin("pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
