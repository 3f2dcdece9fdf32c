-- Issue #11, security: API tokens with scopes, where a best entry came from, who submitted a job.

-- API tokens (store/token_store.c). Only the SHA-256 of the secret is kept: the secret is shown
-- once, when POST /v1/tokens creates it. Scopes nest: admin includes tune includes read.
CREATE TABLE api_tokens (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    scope       text NOT NULL CHECK (scope IN ('read', 'tune', 'admin')),
    secret_hash bytea NOT NULL UNIQUE CHECK (length(secret_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- A best entry is 'measured' (a trial this service measured) or 'imported' (POST /v1/imports).
-- A measured result always replaces an imported one; an imported one replaces a measured one only
-- when its import asked for it (admin scope). store/best_store.c applies the rule.
ALTER TABLE best ADD COLUMN origin text NOT NULL DEFAULT 'measured'
    CHECK (origin IN ('measured', 'imported'));
UPDATE best b SET origin = 'imported' FROM jobs j WHERE j.id = b.job_id AND j.strategy = 'import';

-- Who queued a job: 'token:<id>', 'startup' (the --api-token) or 'anonymous' (no token exists);
-- NULL for jobs made before this migration and for imports. Queued + running jobs per submitter
-- are capped (--max-queued-jobs-per-token).
ALTER TABLE jobs ADD COLUMN submitter text;
CREATE INDEX jobs_submitter_active_idx ON jobs (submitter) WHERE status IN ('queued', 'running');
