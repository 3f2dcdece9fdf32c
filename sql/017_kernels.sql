-- Kernels are data (issue 27): a kernel submitted over HTTP (POST /v1/kernels) is stored in
-- kernel_versions, one row per version (the table kernels of sql/001 mirrors the catalog's list).
-- version is the hash of everything compiled (catalog/kernel_files.h: the
-- canonical spec and every compiled source byte, includes resolved), the kernel_hash of every
-- result measured on it; a name has many versions, and results stay under their own version.
-- spec_text is the canonical spec exactly as hashed (jsonb may respell numbers); files are the
-- sources, {"name": "text"}. status: 'validating' until a worker compiled and verified the default
-- configuration of every variant it has a device for ('ready'), or found it does not build or
-- verify ('invalid'); log holds the compiler or verification output, validation the per-variant
-- outcome ({"cpu": "ok", "cuda": "not run: ..."}). A retired version (retired_at) is no longer
-- picked as the newest; its results are kept.
CREATE TABLE kernel_versions (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL,
    version      text NOT NULL,
    spec         jsonb NOT NULL,
    spec_text    text NOT NULL,
    files        jsonb NOT NULL,
    submitter    text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    status       text NOT NULL DEFAULT 'validating'
                 CHECK (status IN ('validating', 'ready', 'invalid')),
    log          text,
    validation   jsonb,
    validated_at timestamptz,
    validator    text,
    claimed_at   timestamptz,
    retired_at   timestamptz,
    UNIQUE (name, version)
);
CREATE INDEX kernel_versions_name_idx ON kernel_versions (name, created_at DESC, id DESC);
CREATE INDEX kernel_versions_validating_idx ON kernel_versions (created_at) WHERE status = 'validating';

-- The scope that may submit kernels: read < tune < kernels < admin (api/tokens.c).
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check
    CHECK (scope IN ('read', 'tune', 'kernels', 'admin'));
