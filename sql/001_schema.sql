-- ktune schema, version 1. Applied once by ktuned at start-up (store/migrate.c), in one transaction.

-- What can be tuned: mirrored from the catalog at start-up so that the database describes itself.
CREATE TABLE kernels (
    name        text PRIMARY KEY,
    description jsonb NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE devices (
    name        text PRIMARY KEY,
    kind        text NOT NULL,
    class       text NOT NULL,
    available   boolean NOT NULL DEFAULT true,
    reason      text,
    description jsonb NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE jobs (
    id                 bigserial PRIMARY KEY,
    status             text NOT NULL DEFAULT 'queued'
                       CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    kernel             text NOT NULL,
    device             text NOT NULL,
    device_class       text NOT NULL,
    kernel_hash        text NOT NULL,
    problem            jsonb NOT NULL,
    problem_key        text NOT NULL,
    strategy           text NOT NULL,
    strategy_options   jsonb NOT NULL DEFAULT '{}',
    seed               bigint NOT NULL,
    budget_evaluations bigint CHECK (budget_evaluations > 0),
    budget_seconds     double precision CHECK (budget_seconds > 0),
    batch_size         integer NOT NULL CHECK (batch_size > 0),
    space_size         bigint NOT NULL,
    trials_done        bigint NOT NULL DEFAULT 0,  -- trials with a final status
    clock_seconds      double precision NOT NULL DEFAULT 0, -- measurement seconds charged (virtual for replay)
    best_trial_id      bigint,
    best_time_ms       double precision,
    best_config        json,
    stop_reason        text,
    error              jsonb,
    runner             text,             -- "<host>:<pid>:<start>" of the process driving the job
    runner_host        text,
    runner_pid         integer,
    runner_heartbeat   timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    started_at         timestamptz,
    finished_at        timestamptz,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (budget_evaluations IS NOT NULL OR budget_seconds IS NOT NULL)
);
CREATE INDEX jobs_status_id_idx ON jobs (status, id);

-- Finished trials get a number from this sequence: /v1/jobs/{id}/trials?after=N pages by it, so a
-- poller never misses a trial that finished out of proposal order.
CREATE SEQUENCE trials_done_seq;

CREATE TABLE trials (
    id          bigserial PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq         integer NOT NULL CHECK (seq > 0), -- proposal order within the job, from 1
    config_id   bigint NOT NULL,
    config      json NOT NULL,  -- json, not jsonb: keeps the parameter order
    device      text NOT NULL,                    -- routes the trial to workers of that device
    status      text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'running', 'ok', 'invalid', 'compile_error', 'runtime_error',
                                  'timeout', 'wrong_result')),
    time_ms     double precision,
    repeats     integer,
    compile_ms  double precision,
    measure_ms  double precision,
    noise_cv    double precision,
    extras      jsonb,
    worker      text,
    done_seq    bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    claimed_at  timestamptz,
    finished_at timestamptz,
    UNIQUE (job_id, seq),
    UNIQUE (job_id, config_id)  -- a job never measures a configuration twice
);
CREATE INDEX trials_pending_idx ON trials (device, id) WHERE status = 'pending';
CREATE INDEX trials_running_idx ON trials (worker) WHERE status = 'running';
CREATE INDEX trials_job_done_idx ON trials (job_id, done_seq) WHERE done_seq IS NOT NULL;

-- Best known configuration per (kernel, device class, kernel source hash, problem).
CREATE TABLE best (
    kernel       text NOT NULL,
    device_class text NOT NULL,
    kernel_hash  text NOT NULL,
    problem_key  text NOT NULL,
    problem      jsonb NOT NULL,
    device       text NOT NULL,
    config       json NOT NULL,
    time_ms      double precision NOT NULL,
    job_id       bigint NOT NULL,
    trial_id     bigint NOT NULL,
    measured_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kernel, device_class, kernel_hash, problem_key)
);

-- Measurement workers (threads of some ktuned process, on any host).
CREATE TABLE workers (
    id            text PRIMARY KEY,  -- "<host>:<pid>:<start>/<n>"
    host          text NOT NULL,
    pid           integer NOT NULL,
    devices       text[] NOT NULL DEFAULT '{}',
    status        text NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'measuring', 'stopped', 'dead')),
    current_trial bigint,
    trials_done   bigint NOT NULL DEFAULT 0,
    started_at    timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workers_host_idx ON workers (host, pid);
