-- The device's idle share per job (issue 32, "no idle device"): jobs.device_busy_ms sums the time
-- its trials held the device for measuring (a real backend's extras.device_busy_ms: the device
-- lock held for the runner's measure, final-pick re-measurements included), added by the measuring
-- worker after each recorded trial (worker/measurer.c, job_store_add_device_busy). NULL until a
-- measurement on a real device (cpu, cuda) is recorded: replay, accel and external jobs, imports
-- and jobs from before this migration keep NULL. The job view reports idle_share = 1 - busy /
-- (finished_at or now - started_at), api/job_view.c.
-- A domain, not a table CHECK (sql/026's rule): a tell's UPDATE of the job row must not evaluate it.
CREATE DOMAIN ktune_job_device_busy_ms AS double precision
    CONSTRAINT jobs_device_busy_ms_check CHECK (VALUE >= 0);
ALTER TABLE jobs ADD COLUMN device_busy_ms ktune_job_device_busy_ms;
