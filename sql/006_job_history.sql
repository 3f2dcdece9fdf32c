-- Warm starts from history (issue #10, section 4).
--
-- jobs.history: what POST /v1/tune asked for, 'auto' (seed the search from results of the same
-- kernel on other devices and problems) or 'none'. Jobs made before this migration are 'none', so
-- that a job resumed by replay after an upgrade keeps the searcher it started with.
ALTER TABLE jobs ADD COLUMN history text NOT NULL DEFAULT 'none'
    CHECK (history IN ('auto', 'none'));

-- jobs.history_used: what the job driver seeded the searcher with, written once when it first
-- opens a job with history 'auto' (worker/warm_start.c), and read back on every resume instead of
-- a fresh query, so that the searcher replays exactly: {"first":[{"config","time_ms","source"}],
-- "prior":[{"config","time_ms","source"}],"sources":[{"device_class","problem_key","relation",
-- "distance"}]}. NULL until then (and for history 'none').
ALTER TABLE jobs ADD COLUMN history_used jsonb;

-- The history query (store/history_store.c) reads the ok trials of one kernel's jobs.
CREATE INDEX jobs_kernel_idx ON jobs (kernel, device_class, problem_key);
CREATE INDEX trials_job_ok_idx ON trials (job_id, time_ms) WHERE status = 'ok';
