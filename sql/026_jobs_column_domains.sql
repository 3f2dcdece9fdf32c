-- Speed (issue 27, >= 1,000 tells/s): the single-column CHECK constraints of `jobs` become the
-- types of their columns (domains), so an UPDATE that does not assign a column no longer checks it.
-- The same rules on every value written; no column moves, no reader changes.
--
-- Why: PostgreSQL evaluates every CHECK constraint of a table at every UPDATE of a row, whichever
-- columns it assigns, and inside a PL/pgSQL function it builds their expressions again for each
-- statement (ExecConstraints -> ExecRelCheck: stringToNode, expression_planner, ExecInitExpr per
-- executor). `jobs` had 13; a tell's record (ktune_record_trial's UPDATE of the job's counters and
-- best) paid for all 13 at each tell (an ask's `last_ask_at` too, once a second). Measured (a
-- PL/pgSQL loop of the tell's UPDATE of one job row, a COMMIT after each, on a copy of this
-- schema; 2 cores at load ~24): backend CPU per UPDATE 105-140 us with the 13 CHECKs, 60-65 us
-- with the 11 as domains (the 2 multi-column CHECKs left), 48-50 us with no CHECK at all; in wall
-- time a narrow table of the counters alone was no faster than no CHECK. A domain's check runs
-- only where a value is coerced to the column's type — an INSERT, or an UPDATE that assigns the
-- column — with its expression planned once per session (the type cache), not once per statement.
--
-- Each domain keeps the old constraint's name, so a refused value names the same constraint
-- (SQLSTATE 23514, check_violation, as before). Clients see the base types (the protocol sends a
-- domain column as its base type; to_json/json_build_object look through domains).
--
-- Left as table CHECKs (they span two columns): `jobs_check` (a budget of evaluations or of
-- seconds) and `jobs_objective_no_pick`. `trials` keeps its CHECKs: a trial's record assigns its
-- `status` anyway, and the two others cost nothing measurable there.
--
-- The ALTER rewrites `jobs` and its indexes once (a job row per request: small).

CREATE DOMAIN ktune_job_status AS text
    CONSTRAINT jobs_status_check
    CHECK (VALUE IN ('queued', 'running', 'succeeded', 'failed', 'cancelled'));
CREATE DOMAIN ktune_job_budget_evaluations AS bigint
    CONSTRAINT jobs_budget_evaluations_check CHECK (VALUE > 0);
CREATE DOMAIN ktune_job_budget_seconds AS double precision
    CONSTRAINT jobs_budget_seconds_check CHECK (VALUE > 0);
CREATE DOMAIN ktune_job_batch_size AS integer
    CONSTRAINT jobs_batch_size_check CHECK (VALUE > 0);
CREATE DOMAIN ktune_job_history AS text
    CONSTRAINT jobs_history_check CHECK (VALUE IN ('auto', 'none'));
CREATE DOMAIN ktune_job_parallel AS integer
    CONSTRAINT jobs_parallel_check CHECK (VALUE BETWEEN 1 AND 64);
CREATE DOMAIN ktune_job_final_remeasure AS integer
    CONSTRAINT jobs_final_remeasure_check CHECK (VALUE BETWEEN 0 AND 8);
CREATE DOMAIN ktune_job_final_rounds AS integer
    CONSTRAINT jobs_final_rounds_check CHECK (VALUE BETWEEN 0 AND 16);
CREATE DOMAIN ktune_job_start_attempts AS integer
    CONSTRAINT jobs_start_attempts_check CHECK (VALUE >= 0);
CREATE DOMAIN ktune_job_objective_metric AS text
    CONSTRAINT jobs_objective_metric_check CHECK (length(VALUE) BETWEEN 1 AND 64);
CREATE DOMAIN ktune_job_objective_goal AS text
    CONSTRAINT jobs_objective_goal_check CHECK (VALUE IN ('min', 'max'));

-- One statement: one rewrite of the table and its indexes. NOT NULL and defaults stay on the
-- columns (a domain's CHECK passes NULL, as a table CHECK did).
ALTER TABLE jobs
    DROP CONSTRAINT jobs_status_check,
    DROP CONSTRAINT jobs_budget_evaluations_check,
    DROP CONSTRAINT jobs_budget_seconds_check,
    DROP CONSTRAINT jobs_batch_size_check,
    DROP CONSTRAINT jobs_history_check,
    DROP CONSTRAINT jobs_parallel_check,
    DROP CONSTRAINT jobs_final_remeasure_check,
    DROP CONSTRAINT jobs_final_rounds_check,
    DROP CONSTRAINT jobs_start_attempts_check,
    DROP CONSTRAINT jobs_objective_metric_check,
    DROP CONSTRAINT jobs_objective_goal_check,
    ALTER COLUMN status TYPE ktune_job_status,
    ALTER COLUMN budget_evaluations TYPE ktune_job_budget_evaluations,
    ALTER COLUMN budget_seconds TYPE ktune_job_budget_seconds,
    ALTER COLUMN batch_size TYPE ktune_job_batch_size,
    ALTER COLUMN history TYPE ktune_job_history,
    ALTER COLUMN parallel TYPE ktune_job_parallel,
    ALTER COLUMN final_remeasure TYPE ktune_job_final_remeasure,
    ALTER COLUMN final_rounds TYPE ktune_job_final_rounds,
    ALTER COLUMN start_attempts TYPE ktune_job_start_attempts,
    ALTER COLUMN objective_metric TYPE ktune_job_objective_metric,
    ALTER COLUMN objective_goal TYPE ktune_job_objective_goal;

-- ktune_tell's plans never scan `trials` sequentially. PL/pgSQL keeps one plan per statement per
-- session, made when the session first runs it: on a young database (the bench's, a new
-- deployment's first hours) the table is a few pages, the planner prefers a sequential scan, and
-- the plan stays while the table grows. Seen (auto_explain, 8 harnesses x 800 tells on a fresh
-- database): the open-batch EXISTS (`trials` of the job, pending or running) ran as a sequential
-- scan in 121 of 138 sampled tells, 2.2 ms a call against 0.03 ms on trials_job_open_idx — more
-- than the rest of the tell; which plan a session got was chance (a source of the bench's spread).
-- Every statement of a tell has an index made for it (the trial by its key, the job's open trials
-- by trials_job_open_idx, the job by its key), so the setting changes no other plan.
ALTER FUNCTION ktune_tell(bigint, text, jsonb) SET enable_seqscan = off;

-- The trial's record finds the trial by its key. Its UPDATE named the job as `job_id = p_job`
-- beside `id = p_trial`, and the status conditions let the planner use trials_job_open_idx (the
-- job's pending and running trials) instead of the key: seen in every sampled tell of one run
-- (auto_explain), a walk over every open trial of the job (a batch, up to 64) and a heap fetch for
-- each, to find one row. `IS NOT DISTINCT FROM` (job_id is NOT NULL: the same test) is no index
-- condition, so only the key is left. sql/024's function otherwise unchanged (its comment there).
CREATE OR REPLACE FUNCTION ktune_record_trial(p_trial bigint, p_job bigint, p_worker text,
                                   p_pending_ok boolean, p_status text,
                                   p_time_ms double precision, p_repeats integer,
                                   p_compile_ms double precision, p_measure_ms double precision,
                                   p_noise_cv double precision, p_extras jsonb,
                                   p_charged double precision, p_metric text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_ok boolean := p_status = 'ok' AND p_time_ms IS NOT NULL;
    v_value double precision;
    v_config json;
    v_remeasure boolean;
    v_was_pending boolean;
    v_improved boolean;
    j record;
BEGIN
    IF p_metric IS NOT NULL THEN
        v_value := ktune_objective_value(p_status, p_extras, p_metric);
        v_ok := v_ok AND v_value IS NOT NULL;
    END IF;
    -- claimed_at is set to now() exactly when the trial was pending: a lease taken in an earlier
    -- transaction has an earlier claimed_at, so the RETURNING tells the two states apart.
    UPDATE trials SET status = p_status, worker = p_worker,
           claimed_at = CASE WHEN status = 'pending' THEN now() ELSE claimed_at END,
           time_ms = p_time_ms, repeats = p_repeats, compile_ms = p_compile_ms,
           measure_ms = p_measure_ms, noise_cv = p_noise_cv, extras = p_extras,
           charged_seconds = p_charged, finished_at = now(),
           done_seq = nextval('trials_done_seq')
     WHERE id = p_trial AND job_id IS NOT DISTINCT FROM p_job -- (not an index condition: above)
       AND ((status = 'running' AND worker = p_worker) OR (p_pending_ok AND status = 'pending'))
    RETURNING config, final_round IS NOT NULL, claimed_at = now()
         INTO v_config, v_remeasure, v_was_pending;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_ok := v_ok AND NOT v_remeasure;
    UPDATE jobs SET trials_done = trials_done + CASE WHEN v_remeasure THEN 0 ELSE 1 END,
           clock_seconds = clock_seconds + p_charged,
           start_attempts = least(start_attempts, 1), updated_at = now(),
           best_trial_id = CASE WHEN v_ok AND CASE WHEN p_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, objective_goal = 'max') END
                THEN p_trial ELSE best_trial_id END,
           best_config = CASE WHEN v_ok AND CASE WHEN p_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, objective_goal = 'max') END
                THEN v_config ELSE best_config END,
           best_value = CASE WHEN v_ok AND p_metric IS NOT NULL
                             AND ktune_objective_improves(v_value, best_value,
                                                          objective_goal = 'max')
                THEN v_value ELSE best_value END,
           best_time_ms = CASE WHEN v_ok AND CASE WHEN p_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, objective_goal = 'max') END
                THEN p_time_ms ELSE best_time_ms END
     WHERE id = p_job
    RETURNING kernel, device_class, kernel_hash, problem_key, problem, device, toolchain,
              final_remeasure, best_trial_id IS NOT DISTINCT FROM p_trial AS improved INTO j;
    IF v_ok AND j.improved AND p_metric IS NULL AND j.final_remeasure = 0 THEN
        INSERT INTO best (kernel, device_class, kernel_hash, problem_key, problem, device, config,
                          time_ms, job_id, trial_id, toolchain, origin)
        VALUES (j.kernel, j.device_class, j.kernel_hash, j.problem_key, j.problem, j.device,
                v_config, p_time_ms, p_job, p_trial, j.toolchain, 'measured')
        ON CONFLICT (kernel, device_class, kernel_hash, toolchain, problem_key) DO UPDATE SET
            problem = EXCLUDED.problem, device = EXCLUDED.device, config = EXCLUDED.config,
            time_ms = EXCLUDED.time_ms, job_id = EXCLUDED.job_id, trial_id = EXCLUDED.trial_id,
            origin = EXCLUDED.origin, measured_at = now()
        WHERE best.origin = 'imported' OR ktune_improves_best(EXCLUDED.time_ms, best.time_ms);
    END IF;
    RETURN CASE WHEN v_was_pending THEN 'pending' ELSE 'running' END;
END
$$;
