"""Issue #11, break 3: the embedded PostgreSQL is no longer open to every local user.

Before: `local all all trust`, a world-reachable socket and a superuser `ktune`: as user nobody,
`psql -h <data-dir>/pg-socket -U ktune` then `COPY t FROM PROGRAM 'id'` ran commands as postgres.
Now: socket directory 0700 (owned by postgres), scram-sha-256 logins with generated secrets kept in
the data dir (0600), the service role `ktune` without superuser rights, and a cluster made by an
older ktuned upgraded at start. Needs root (runuser); CI runs as root."""
import glob
import os
import pwd
import stat
import subprocess
import sys
import tempfile
import unittest
import shutil

sys.path.insert(0, os.path.dirname(__file__))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
BINDIR = os.path.dirname(sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))[-1])


def as_postgres(cmd, **kw):
    return subprocess.run(["runuser", "-u", "postgres", "--"] + cmd, capture_output=True, text=True,
                          timeout=120, **kw)


@unittest.skipUnless(os.geteuid() == 0, "needs root (runuser to nobody and postgres)")
class EmbeddedPostgres(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, product_db=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.k.cleanup()

    def socket_dir(self):
        return os.path.join(self.k.data_dir, "pg-socket")

    def test_socket_directory_is_private(self):
        st = os.stat(self.socket_dir())
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        self.assertEqual(st.st_uid, pwd.getpwnam("postgres").pw_uid)

    def test_secrets_are_private(self):
        for name in ("pg-ktune.secret", "pg-admin.secret"):
            st = os.stat(os.path.join(self.k.data_dir, name))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, name)
            self.assertEqual(st.st_uid, os.geteuid(), name)
        with open(os.path.join(self.k.data_dir, "pg", "pg_hba.conf")) as f:
            rules = [line.split() for line in f if line.strip() and not line.startswith("#")]
        self.assertNotIn("trust", [r[-1] for r in rules], rules)

    def test_nobody_cannot_connect(self):
        for user in ("ktune", "ktune_admin", "postgres"):
            out = subprocess.run(["runuser", "-u", "nobody", "--", "psql", "-X", "-w", "-h",
                                  self.socket_dir(), "-U", user, "-d", "ktune", "-c", "SELECT 1"],
                                 capture_output=True, text=True, timeout=60, cwd="/")
            self.assertNotEqual(out.returncode, 0, (user, out.stdout))
            self.assertIn("Permission denied", out.stderr, out.stderr)

    def test_password_is_required(self):
        # Even a user who reaches the socket (here: postgres, its owner) needs the secret.
        out = as_postgres(["psql", "-X", "-w", "-h", self.socket_dir(), "-U", "ktune", "-d", "ktune",
                           "-c", "SELECT 1"], cwd="/")
        self.assertNotEqual(out.returncode, 0, out.stdout)
        self.assertIn("password", out.stderr)

    def test_service_role_cannot_run_programs(self):
        self.assertEqual(self.k.psql("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"), "f")
        self.assertEqual(self.k.psql("SELECT count(*) FROM pg_database WHERE datname = 'ktune' "
                                     "AND pg_get_userbyid(datdba) = 'ktune'"), "1")
        out = self.k.psql("CREATE TEMP TABLE t (x text); COPY t FROM PROGRAM 'id'", check=False)
        self.assertNotEqual(out.returncode, 0, out.stdout)
        self.assertIn("pg_execute_server_program", out.stderr)
        out = self.k.psql("SELECT pg_read_file('/etc/passwd')", check=False)
        self.assertNotEqual(out.returncode, 0, out.stdout)
        out = self.k.psql("CREATE ROLE intruder SUPERUSER", check=False)
        self.assertNotEqual(out.returncode, 0, out.stdout)
        # The service itself works as this role (it ran the migrations and owns the tables).
        self.assertEqual(self.k.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' "
                                     "AND tableowner <> 'ktune'"), "0")
        status, _, _ = self.k.get("/v1/jobs")
        self.assertEqual(status, 200)


@unittest.skipUnless(os.geteuid() == 0, "needs root (runuser to postgres)")
class LegacyClusterUpgrade(unittest.TestCase):
    def test_cluster_of_an_older_ktuned_is_upgraded(self):
        """A data dir as older versions left it (initdb -U ktune --auth=trust, server still running
        on a 0755 socket dir after a kill -9): ktuned upgrades it in place and keeps the data."""
        root = tempfile.mkdtemp(prefix="ktune-legacy-", dir="/tmp")
        os.chmod(root, 0o755)
        k = Ktuned(ARGS.ktuned, ARGS.source_dir, product_db=True, data_dir=root)
        try:
            pg, sock = os.path.join(root, "pg"), os.path.join(root, "pg-socket")
            os.mkdir(pg, 0o700)
            os.mkdir(sock, 0o755)
            os.chmod(sock, 0o755)
            for d in (pg, sock):
                shutil.chown(d, "postgres", "postgres")
            out = as_postgres([BINDIR + "/initdb", "-D", pg, "-U", "ktune", "--auth=trust", "-E", "UTF8",
                               "--locale=C.UTF-8"], cwd="/")
            self.assertEqual(out.returncode, 0, out.stderr)
            out = as_postgres([BINDIR + "/pg_ctl", "-D", pg, "-l", os.path.join(pg, "log"), "-w", "-o",
                               "-c listen_addresses='' -p 5432 -k " + sock, "start"], cwd="/")
            self.assertEqual(out.returncode, 0, out.stderr)
            legacy = ["psql", "-X", "-h", sock, "-U", "ktune", "-v", "ON_ERROR_STOP=1", "-At"]
            out = as_postgres(legacy + ["-d", "postgres", "-c", "CREATE DATABASE ktune"], cwd="/")
            self.assertEqual(out.returncode, 0, out.stderr)
            out = as_postgres(legacy + ["-d", "ktune", "-c", "CREATE TABLE old_data (x int); "
                                        "INSERT INTO old_data VALUES (42); CREATE SEQUENCE old_seq"], cwd="/")
            self.assertEqual(out.returncode, 0, out.stderr)

            k.start()
            self.assertEqual(stat.S_IMODE(os.stat(sock).st_mode), 0o700)
            self.assertEqual(k.psql("SELECT rolsuper::text || ' ' || (oid = 10)::text FROM pg_roles "
                                    "WHERE rolname = current_user"), "false false")
            self.assertEqual(k.psql("SELECT x FROM old_data"), "42")
            self.assertEqual(k.psql("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON "
                                    "n.oid = c.relnamespace WHERE n.nspname = 'public' AND "
                                    "pg_get_userbyid(c.relowner) <> 'ktune'"), "0")
            out = k.psql("COPY old_data FROM PROGRAM 'id'", check=False)
            self.assertNotEqual(out.returncode, 0, out.stdout)
            self.assertEqual(k.psql("SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
                                    role="ktune_admin", dbname="postgres"), "t")
            # The old trust login is gone, even for the socket's owner.
            out = as_postgres(legacy + ["-w", "-d", "ktune", "-c", "SELECT 1"], cwd="/")
            self.assertNotEqual(out.returncode, 0, out.stdout)
            status, _, _ = k.get("/v1/jobs")
            self.assertEqual(status, 200)
            # A second start finds everything in place.
            self.assertEqual(k.stop(), 0)
            k.start()
            self.assertEqual(k.psql("SELECT x FROM old_data"), "42")
        finally:
            k.cleanup()
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    run_tests()
