-- Objective by metric (issue 27, section 2): a job may optimise a user metric instead of the time.
--
-- jobs.objective_metric: the metric's name (a kernel spec's "metrics" name, computed by the
-- backend into extras.metrics, or a name an ask/tell harness tells in "metrics"); NULL is the time
-- (every job before this migration). jobs.objective_goal: 'min' or 'max' ('min' for the time).
-- jobs.best_value: the objective's value of the job's best trial (NULL for time jobs, whose value
-- is best_time_ms). core/objective.h is the rule in C; these functions are the same rule in SQL.
ALTER TABLE jobs ADD COLUMN objective_metric text
    CHECK (objective_metric IS NULL OR length(objective_metric) BETWEEN 1 AND 64);
ALTER TABLE jobs ADD COLUMN objective_goal text NOT NULL DEFAULT 'min'
    CHECK (objective_goal IN ('min', 'max'));
ALTER TABLE jobs ADD COLUMN best_value double precision;
-- A metric job's best lives in the job, never in the best table (GET /v1/best answers the time):
-- a job re-measuring a pick is refused with a metric objective (501), so pick_store_record never
-- meets one.
ALTER TABLE jobs ADD CONSTRAINT jobs_objective_no_pick
    CHECK (objective_metric IS NULL OR final_remeasure = 0);

-- The objective value of a metric of a finished trial: extras.metrics.<metric> of an ok trial,
-- when it is a number > 0 (jsonb numbers are finite); else NULL (kt_objective_value).
CREATE FUNCTION ktune_objective_value(p_status text, p_extras jsonb, p_metric text)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_status = 'ok' AND jsonb_typeof(p_extras -> 'metrics' -> p_metric) = 'number'
                     AND (p_extras -> 'metrics' ->> p_metric)::double precision > 0
                THEN (p_extras -> 'metrics' ->> p_metric)::double precision END
$$;

-- When a metric value replaces a job's best: it exists and beats the incumbent strictly (higher
-- for max, lower for min), or there is no incumbent; ties keep the incumbent, as
-- ktune_improves_best does for times.
CREATE FUNCTION ktune_objective_improves(candidate double precision, incumbent double precision,
                                         maximise boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT candidate IS NOT NULL
           AND (incumbent IS NULL OR CASE WHEN maximise THEN candidate > incumbent
                                          ELSE candidate < incumbent END)
$$;

-- ktune_complete_trial (sql/020) with the job's objective: the same statements and rules, but a
-- metric job's best is the trial with the best metric value (best_value; best_time_ms is that
-- trial's time), an ok trial without the metric is no candidate, and a metric job offers the best
-- table nothing (the best table holds the fastest configurations only).
CREATE OR REPLACE FUNCTION ktune_complete_trial(p_trial bigint, p_job bigint, p_worker text,
                                                p_status text, p_time_ms double precision,
                                                p_repeats integer, p_compile_ms double precision,
                                                p_measure_ms double precision,
                                                p_noise_cv double precision, p_extras jsonb,
                                                p_charged double precision)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_job_status text;
    v_config json;
    v_remeasure boolean;
    v_offer boolean;
    v_metric text;
    v_max boolean;
    v_value double precision;
    j record;
BEGIN
    SELECT status, objective_metric, objective_goal = 'max' INTO v_job_status, v_metric, v_max
      FROM jobs WHERE id = p_job FOR UPDATE;
    IF v_job_status IS DISTINCT FROM 'running' THEN
        DELETE FROM trials WHERE id = p_trial AND worker = p_worker AND status = 'running';
        RETURN 0;
    END IF;
    UPDATE trials SET status = p_status, time_ms = p_time_ms, repeats = p_repeats,
           compile_ms = p_compile_ms, measure_ms = p_measure_ms, noise_cv = p_noise_cv,
           extras = p_extras, charged_seconds = p_charged, finished_at = now(),
           done_seq = nextval('trials_done_seq')
     WHERE id = p_trial AND worker = p_worker AND status = 'running'
    RETURNING config, final_round IS NOT NULL INTO v_config, v_remeasure;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    v_offer := p_status = 'ok' AND p_time_ms IS NOT NULL AND NOT v_remeasure;
    IF v_metric IS NOT NULL THEN
        v_value := ktune_objective_value(p_status, p_extras, v_metric);
        v_offer := v_offer AND v_value IS NOT NULL;
    END IF;
    UPDATE jobs SET trials_done = trials_done + CASE WHEN v_remeasure THEN 0 ELSE 1 END,
           clock_seconds = clock_seconds + p_charged,
           start_attempts = least(start_attempts, 1), updated_at = now(),
           best_trial_id = CASE WHEN v_offer AND CASE WHEN v_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, v_max) END
                THEN p_trial ELSE best_trial_id END,
           best_config = CASE WHEN v_offer AND CASE WHEN v_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, v_max) END
                THEN v_config ELSE best_config END,
           best_value = CASE WHEN v_offer AND v_metric IS NOT NULL
                             AND ktune_objective_improves(v_value, best_value, v_max)
                THEN v_value ELSE best_value END,
           best_time_ms = CASE WHEN v_offer AND CASE WHEN v_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, v_max) END
                THEN p_time_ms ELSE best_time_ms END
     WHERE id = p_job
    RETURNING kernel, device_class, kernel_hash, problem_key, problem, device, toolchain,
              final_remeasure INTO j;
    PERFORM pg_notify('ktune_trials', p_job::text);
    IF v_offer AND v_metric IS NULL AND j.final_remeasure = 0 THEN
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
    RETURN 1;
END
$$;
