-- Poison jobs (issue 26): a job whose work kills or stalls the process driving it (the kernel's OOM
-- killer, a crash, a process that stops heart-beating) was resumed at every restart, and by every
-- other process of a shared database, and killed each in turn. start_attempts counts the claims of
-- a job that did not end in a clean hand-back: job_store_claim adds 1; a clean release (a
-- shutdown, a re-sync after a database outage, a driver that could not be opened) gives it back
-- (store/job_store.c). A running job with no runner that was claimed JOB_MAX_START_ATTEMPTS (3)
-- times already is failed before the next claim instead of resumed (stop_reason 'attempts',
-- job_store_fail_exhausted). Jobs from before this migration start at 0.
ALTER TABLE jobs ADD COLUMN start_attempts integer NOT NULL DEFAULT 0
    CHECK (start_attempts >= 0);
