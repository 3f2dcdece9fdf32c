-- Ask/tell (issue 27, section 3): jobs on the "external" device, whose configurations a caller's
-- own harness measures through POST /v1/jobs/{id}/ask and /tell.
-- jobs.space: the job's inline space ({"parameters", "restrictions", "default"} as canonical JSON),
-- stored with the job so that any process reopens its target (catalog_reopen_space) without the
-- request; NULL for jobs of catalog devices. jobs.last_ask_at: the last ask of the job's harness
-- (the job view's "harness" state). trials.lease_expires_at: the deadline of an asked trial's
-- lease; a trial running past it is offered again by the next ask. The reaper never requeues a
-- leased trial (its worker is no measuring process), only the lease's end does.
ALTER TABLE jobs ADD COLUMN space jsonb;
ALTER TABLE jobs ADD COLUMN last_ask_at timestamptz;
ALTER TABLE trials ADD COLUMN lease_expires_at timestamptz;
-- Ask claims a job's pending (or lease-expired) trials in seq order.
CREATE INDEX trials_job_open_idx ON trials (job_id, seq) WHERE status IN ('pending', 'running');
