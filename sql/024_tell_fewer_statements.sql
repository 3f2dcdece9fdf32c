-- Speed (issue 27, >= 1,000 tells/s): sql/023's tell and trial completion in fewer statements, the
-- same replies and the same rules but one (the best table's offer, below). Functions only, no
-- table changes.
--
-- Why (perf of PostgreSQL under 8 harnesses, tests/bench/results/ask-tell.txt): what was left of a
-- tell was per-statement cost inside PL/pgSQL — executor start-up, the CHECK constraints read again,
-- the tuple lock of an INSERT ... ON CONFLICT — more than the work of any one statement. A tell of
-- one trial ran six: the job's row lock, the trial's lock and check, the PERFORM of
-- ktune_record_trial, its UPDATE of the trial, its UPDATE of the job, its INSERT into best.
--
-- Now:
-- - The trial's check and its record are one statement: ktune_record_trial's UPDATE carries the
--   check in its WHERE (this job's trial, running under p_worker, or pending where the caller
--   takes an expired lease back) and returns the config and the final-pick flag the job's update
--   needs, so no SELECT ... FOR UPDATE comes first. The trial's lock is taken by that UPDATE,
--   still after the job's row (the order of every writer).
-- - A tell of one trial (a harness's usual tell) on a running external job records first: when
--   the record takes, the reply is what sql/023's checks would have given (the trial was this
--   job's, pending or running); when it does not, the tell goes the general way (each id checked,
--   nothing recorded when one refuses), which finds why. A tell of several keeps sql/023's order:
--   every id checked before anything is recorded.
-- - ktune_record_trial is called as an expression (PL/pgSQL evaluates a plain assignment without
--   an executor of its own), not by PERFORM.
-- - The best table is offered a time job's measured result only when it replaced the job's own
--   best (was: every ok result). An entry can only beat the job's best when something else put it
--   there — another job's better time (the offer would not take either) — or, the one difference,
--   when an import asked to replace measured entries (or a forgotten job's entry was restored
--   from an older one) while the job ran: the job's next improvement replaces it, not any ok
--   result. The offer's INSERT ... ON CONFLICT locked the existing row on every ok trial.

DROP FUNCTION ktune_record_trial(bigint, bigint, text, text, double precision, integer,
                                 double precision, double precision, double precision, jsonb,
                                 double precision, json, boolean, text);

-- ktune_record_trial: records the result of trial p_trial of job p_job, whose row the caller has
-- locked and checked (the job runs and p_metric is its objective_metric; NULL: the time). The trial
-- is recorded only when it is p_job's and running under p_worker, or pending and p_pending_ok (an
-- expired lease handed back by a tell; taken by p_worker now). Returns the trial's status before
-- ('pending' or 'running'), or NULL when nothing was recorded. The rules of sql/023's function
-- otherwise: done_seq taken under the job's lock; a final-pick re-measurement (final_round set) is
-- charged to the clock, counts no evaluation and is no best; the job's best replaced when
-- ktune_improves_best (a metric job: ktune_objective_improves on its value) says so; the best table
-- offered a time job's result that became the job's best, unless the job re-measures its pick.
CREATE FUNCTION ktune_record_trial(p_trial bigint, p_job bigint, p_worker text,
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
     WHERE id = p_trial AND job_id = p_job
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

-- ktune_complete_trial: the contract of sql/020, sql/022 and sql/023 (their comments there). The
-- job's row locked and checked, then the trial checked and recorded in one statement.
CREATE OR REPLACE FUNCTION ktune_complete_trial(p_trial bigint, p_job bigint, p_worker text,
                                                p_status text, p_time_ms double precision,
                                                p_repeats integer, p_compile_ms double precision,
                                                p_measure_ms double precision,
                                                p_noise_cv double precision, p_extras jsonb,
                                                p_charged double precision)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_job_status text;
    v_metric text;
BEGIN
    SELECT status, objective_metric INTO v_job_status, v_metric FROM jobs WHERE id = p_job FOR UPDATE;
    IF v_job_status IS DISTINCT FROM 'running' THEN
        DELETE FROM trials WHERE id = p_trial AND worker = p_worker AND status = 'running';
        RETURN 0;
    END IF;
    RETURN CASE WHEN ktune_record_trial(p_trial, p_job, p_worker, false, p_status, p_time_ms,
                                        p_repeats, p_compile_ms, p_measure_ms, p_noise_cv,
                                        p_extras, p_charged, v_metric) IS NULL
                THEN 0 ELSE 1 END;
END
$$;

-- ktune_tell: sql/020's contract unchanged (its comment there): the checks first, nothing recorded
-- when the job is not external, an id is another job's, or (the job running) no trial; then each
-- trial in order: one already final is a duplicate; with the job no longer running, lost; running
-- under p_worker, or pending (an expired lease handed back), recorded; else lost. A tell of one
-- trial on a running external job records first (see the top of this file): a record that takes
-- is the answer every check would have given; one that does not goes the general way.
CREATE OR REPLACE FUNCTION ktune_tell(p_job bigint, p_worker text, p_told jsonb)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
    j record;
    n integer := jsonb_array_length(p_told);
    e jsonb;
    ids bigint[] := '{}';
    sts text[] := '{}';
    checks json[] := '{}';
    refuse boolean := false;
    v_id bigint;
    v_st text;
    v_jid bigint;
    v_was text;
    outcomes text[] := '{}';
    recorded integer := 0;
    v_open boolean := false;
BEGIN
    SELECT status, device, batch_size, objective_metric INTO j FROM jobs WHERE id = p_job
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF n = 1 AND j.device = 'external' AND j.status = 'running' THEN
        e := p_told -> 0;
        v_was := ktune_record_trial((e->>'id')::bigint, p_job, p_worker, true, e->>'status',
                                    (e->>'time_ms')::double precision,
                                    (e->>'repeats')::integer,
                                    (e->>'compile_ms')::double precision,
                                    (e->>'measure_ms')::double precision,
                                    (e->>'noise_cv')::double precision,
                                    CASE WHEN jsonb_typeof(e->'extras') = 'object'
                                         THEN e->'extras' END,
                                    (e->>'charged')::double precision, j.objective_metric);
        IF v_was IS NOT NULL THEN
            IF j.batch_size > 1 THEN
                v_open := EXISTS (SELECT 1 FROM trials WHERE job_id = p_job
                                                         AND status IN ('pending', 'running'));
            END IF;
            RETURN json_build_object('job_status', j.status, 'device', j.device, 'batch_size',
                                     j.batch_size, 'checks',
                                     json_build_array(json_build_array(v_was, false)),
                                     'outcomes', json_build_array('recorded'), 'open', v_open);
        END IF;
    END IF;
    FOR i IN 0 .. n - 1 LOOP
        v_id := (p_told -> i ->> 'id')::bigint;
        v_jid := p_job;
        SELECT status INTO v_st FROM trials WHERE id = v_id AND job_id = p_job FOR UPDATE;
        IF NOT FOUND THEN -- another job's, or none (not locked: nothing of it is written here)
            SELECT status, job_id INTO v_st, v_jid FROM trials WHERE id = v_id;
        END IF;
        checks := checks || json_build_array(v_st, v_jid <> p_job);
        refuse := refuse OR COALESCE(v_jid <> p_job, j.status = 'running');
        ids := ids || v_id;
        sts := sts || v_st;
    END LOOP;
    IF j.device <> 'external' OR refuse THEN
        RETURN json_build_object('job_status', j.status, 'device', j.device, 'batch_size',
                                 j.batch_size, 'checks', COALESCE(to_json(checks), '[]'::json),
                                 'outcomes', NULL, 'open', false);
    END IF;
    FOR i IN 1 .. n LOOP
        IF sts[i] IS NOT NULL AND sts[i] NOT IN ('pending', 'running') THEN
            outcomes := outcomes || 'duplicate'::text;
            CONTINUE;
        END IF;
        v_was := NULL;
        IF j.status = 'running' THEN -- recorded when running under p_worker, or pending
            e := p_told -> (i - 1);
            v_was := ktune_record_trial(ids[i], p_job, p_worker, true, e->>'status',
                                        (e->>'time_ms')::double precision,
                                        (e->>'repeats')::integer,
                                        (e->>'compile_ms')::double precision,
                                        (e->>'measure_ms')::double precision,
                                        (e->>'noise_cv')::double precision,
                                        CASE WHEN jsonb_typeof(e->'extras') = 'object'
                                             THEN e->'extras' END,
                                        (e->>'charged')::double precision, j.objective_metric);
        END IF;
        IF v_was IS NULL THEN
            outcomes := outcomes || 'lost'::text;
        ELSE
            outcomes := outcomes || 'recorded'::text;
            recorded := recorded + 1;
        END IF;
    END LOOP;
    IF recorded > 0 AND j.batch_size > 1 THEN
        v_open := EXISTS (SELECT 1 FROM trials WHERE job_id = p_job
                                                 AND status IN ('pending', 'running'));
    END IF;
    RETURN json_build_object('job_status', j.status, 'device', j.device, 'batch_size',
                             j.batch_size, 'checks', COALESCE(to_json(checks), '[]'::json),
                             'outcomes', to_json(outcomes), 'open', v_open);
END
$$;
