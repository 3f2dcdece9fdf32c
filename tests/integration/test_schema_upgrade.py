"""Integration: a database of an older schema is migrated at start and keeps its data.

A ktuned (A, embedded PostgreSQL) measures a replay job and takes an import, so that their rows carry
real keys (kernel hash, device class, problem key). Then a second database on A's cluster gets only
the first migrations of sql/ (OLD_PREFIX, applied and recorded as store/migrate.c does) and those
rows, written with the columns that schema has: a job with its trials and best entry, an import job
and its entry, and a job of the CLBlast replay dataset under the kernel name it had then (`gemm`,
issue 31: renamed `clblast_gemm` by sql/025). A second ktuned (B, --database-url on that database) starts on it: it must apply every
later migration (schema_migrations lists every file of sql/), their back-fills must hold (the trials'
charges, the replay toolchain `recorded`, the import's entry `origin` imported), and the old data
must read back through B's API as A serves it (the job, its trials, GET /v1/best, /v1/best/entries);
a new job on the upgraded database succeeds."""
import glob
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
SQL = sorted(glob.glob(os.path.join(os.path.abspath(ARGS.source_dir), "sql", "[0-9]*.sql")))
OLD_PREFIX = 2  # 001, 002: before the trial charge (003), the toolchain (004), origin (008), ...
PNPOLY = {"kernel": "pnpoly", "device": "replay:pnpoly_kt-RTX_3090"}
CONV = {"kernel": "convolution", "device": "replay:convolution_milo-A4000"}
# Issue 31 (sql/025): the CLBlast replay dataset's kernel, "gemm" in databases of before.
CLBLAST = {"kernel": "clblast_gemm", "device": "replay:gemm_clblast-RTX_2080_Ti"}

# The columns of sql/001_schema.sql (002 adds none): what a database of that era holds.
ERA_COLUMNS = {
    "jobs": "id, status, kernel, device, device_class, kernel_hash, problem, problem_key, strategy, "
            "strategy_options, seed, budget_evaluations, budget_seconds, batch_size, space_size, "
            "trials_done, clock_seconds, best_trial_id, best_time_ms, best_config, stop_reason, error, "
            "runner, runner_host, runner_pid, runner_heartbeat, created_at, started_at, finished_at, "
            "updated_at",
    "trials": "id, job_id, seq, config_id, config, device, status, time_ms, repeats, compile_ms, "
              "measure_ms, noise_cv, extras, worker, done_seq, created_at, claimed_at, finished_at",
    "best": "kernel, device_class, kernel_hash, problem_key, problem, device, config, time_ms, job_id, "
            "trial_id, measured_at",
}


class SchemaUpgrade(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.a = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--workers", "1"]).start()
        cls.b = None

    @classmethod
    def tearDownClass(cls):
        if cls.b:
            cls.b.cleanup()
        cls.a.cleanup()

    def tune(self, k, body):
        status, _, job = k.post("/v1/tune", body)
        self.assertEqual(status, 202, job)
        job = k.wait_job(job["id"], timeout=120)
        self.assertEqual(job["status"], "succeeded", job)
        return job

    def old_psql(self, sql, stdin=None):
        out = subprocess.run(["psql", "-X", self.a.pg_conninfo(dbname="ktune_old"), "-v", "ON_ERROR_STOP=1",
                              "-At", "-c", sql], input=stdin, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.strip()

    def test_older_schema_is_migrated_and_its_data_reads_back(self):
        a = self.a
        self.assertGreater(len(SQL), OLD_PREFIX)
        # Rows with real keys, made by A.
        job = self.tune(a, dict(PNPOLY, strategy="random", budget={"evaluations": 12}, seed=3, history="none"))
        conv = self.tune(a, dict(CONV, strategy="random", budget={"evaluations": 2}, seed=4, history="none"))
        config = a.all_trials(conv["id"])[0]["config"]
        # (It replaces the conv job's measured entry, so the key's entry is the import's.)
        status, _, imp = a.post("/v1/imports", dict(CONV, replace_measured=True,
                                                    trials=[{"config": config, "status": "ok", "time_ms": 0.5}]))
        self.assertEqual(status, 201, imp)
        imp_id = imp["job"]["id"]
        status, _, a_best = a.get(best_query(PNPOLY["kernel"], PNPOLY["device"]))
        self.assertEqual(status, 200, a_best)
        a_trials = a.all_trials(job["id"])
        clblast = self.tune(a, dict(CLBLAST, strategy="random", budget={"evaluations": 2}, seed=5, history="none"))
        status, _, a_clblast = a.get(best_query(CLBLAST["kernel"], CLBLAST["device"]))
        self.assertEqual(status, 200, a_clblast)

        # The old database: the first migrations only, recorded as migrate_apply records them.
        a.psql("CREATE DATABASE ktune_old OWNER ktune", role="ktune_admin", dbname="postgres")
        self.old_psql("CREATE TABLE schema_migrations (name text PRIMARY KEY, "
                      "applied_at timestamptz NOT NULL DEFAULT now())")
        for path in SQL[:OLD_PREFIX]:
            with open(path) as f:
                self.old_psql("BEGIN;\n" + f.read() + "\nINSERT INTO schema_migrations (name) VALUES ('%s');"
                              "\nCOMMIT;" % os.path.basename(path))
        ids = "%d, %d, %d" % (job["id"], imp_id, clblast["id"])
        for table, where in (("jobs", "id IN (%s)" % ids), ("trials", "job_id IN (%s)" % ids),
                             ("best", "job_id IN (%s)" % ids)):
            rows = a.psql("COPY (SELECT %s FROM %s WHERE %s ORDER BY 1) TO STDOUT"
                          % (ERA_COLUMNS[table], table, where)) + "\n"
            self.old_psql("COPY %s (%s) FROM STDIN" % (table, ERA_COLUMNS[table]), stdin=rows)
        self.old_psql("SELECT setval('jobs_id_seq', (SELECT max(id) FROM jobs)), "
                      "setval('trials_id_seq', (SELECT max(id) FROM trials)), "
                      "setval('trials_done_seq', (SELECT max(done_seq) FROM trials))")
        # What an older ktuned wrote for the CLBlast dataset: kernel "gemm".
        self.old_psql("UPDATE jobs SET kernel = 'gemm' WHERE id = %d; UPDATE best SET kernel = 'gemm' "
                      "WHERE job_id = %d" % (clblast["id"], clblast["id"]))
        self.assertEqual(self.old_psql("SELECT count(*) FROM best"), "3")
        self.assertEqual(self.old_psql("SELECT count(*) FROM information_schema.columns WHERE "
                                       "table_name = 'trials' AND column_name = 'charged_seconds'"), "0")

        # B starts on it and migrates it to the latest.
        type(self).b = b = Ktuned(ARGS.ktuned, ARGS.source_dir,
                                  extra=["--workers", "1", "--database-url", a.pg_conninfo(dbname="ktune_old")])
        b.start()
        self.assertEqual(self.old_psql("SELECT string_agg(name, ',' ORDER BY name) FROM schema_migrations"),
                         ",".join(os.path.basename(p) for p in SQL))
        # The back-fills of the later migrations: 003 charges, 004 toolchain, 008 origin.
        self.assertEqual(self.old_psql("SELECT count(*) FROM trials WHERE charged_seconds IS NULL"), "0")
        self.assertEqual(self.old_psql("SELECT string_agg(DISTINCT toolchain, ',') FROM best"), "recorded")
        self.assertEqual(self.old_psql("SELECT origin FROM best WHERE job_id = %d" % imp_id), "imported")
        # 025: the CLBlast replay results renamed clblast_gemm, and they answer as A's do.
        self.assertEqual(self.old_psql("SELECT kernel FROM best WHERE job_id = %d" % clblast["id"]), "clblast_gemm")
        status, _, b_job = b.get("/v1/jobs/%d" % clblast["id"])
        self.assertEqual((status, b_job["kernel"]), (200, "clblast_gemm"), b_job)
        status, _, b_clblast = b.get(best_query(CLBLAST["kernel"], CLBLAST["device"]))
        self.assertEqual(status, 200, b_clblast)
        self.assertEqual((b_clblast["config"], b_clblast["time_ms"]), (a_clblast["config"], a_clblast["time_ms"]))

        # The old data through B's API, as A serves it.
        status, _, b_job = b.get("/v1/jobs/%d" % job["id"])
        self.assertEqual(status, 200, b_job)
        for field in ("status", "stop_reason", "kernel", "device", "device_class", "kernel_hash", "problem",
                      "strategy", "seed", "budget", "best"):
            self.assertEqual(b_job[field], job[field], field)
        self.assertEqual(b_job["progress"]["trials"], 12)
        self.assertAlmostEqual(b_job["progress"]["clock_seconds"], job["progress"]["clock_seconds"], places=6)
        b_trials = b.all_trials(job["id"])
        keep = ("id", "seq", "config", "status", "time_ms", "compile_ms", "measure_ms")
        self.assertEqual([{f: t[f] for f in keep} for t in b_trials], [{f: t[f] for f in keep} for t in a_trials])
        status, _, b_best = b.get(best_query(PNPOLY["kernel"], PNPOLY["device"]))
        self.assertEqual(status, 200, b_best)
        for field in ("time_ms", "config", "source", "problem"):
            self.assertEqual(b_best[field], a_best[field], field)
        status, _, entries = b.get("/v1/best/entries?kernel=convolution")
        self.assertEqual(status, 200, entries)
        self.assertEqual([(e["time_ms"], e["source"]) for e in entries["best"]], [(0.5, "imported")], entries)

        # And the upgraded database takes new work.
        new = self.tune(b, dict(PNPOLY, strategy="random", budget={"evaluations": 4}, seed=9))
        self.assertGreater(new["id"], imp_id)
        self.assertEqual(len(b.all_trials(new["id"])), 4)


if __name__ == "__main__":
    run_tests()
