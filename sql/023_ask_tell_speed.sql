-- Speed (issue 27): sql/020's tell, trial completion (with sql/022's objective) and ask, with the
-- same rules and replies, in fewer and cheaper statements. Functions only, no table changes.
--
-- Why (measured with pg_stat_statements and perf, tests/bench/results/ask-tell.txt): sql/020's ktune_tell
-- found the told trials with a join of jsonb_array_elements (which the planner guesses at 100
-- rows) and trials; on a table of a few thousand rows that plan was a hash join over a sequential
-- scan of every trial, twice per tell, so a tell cost more the more trials the database held (1.7
-- of a 4.5 ms tell with 3,000 trials). ktune_complete_trial's UPDATE was planned on the partial
-- index of running trials by worker, and every leased trial of every external job runs under the
-- one worker "harness": that scan grew with all open leases. A tell of one trial ran ten
-- statements and a nested function; ktune_ask's statement was planned again at every call (the
-- generic plan of its LIMIT p_n looked dearer than a custom one).
--
-- Now: each told id is one primary-key look-up that also locks the trial (after the job's row,
-- the order of every writer); the job's row is locked once per tell, not once per trial; what a
-- trial's record writes (the trial, the job's counters, clock and best, the best table's offer)
-- is ktune_record_trial, shared by the tell and by ktune_complete_trial (the measurers'
-- completion), so the rules stay in one place; ktune_ask keeps one generic plan per session. And a completion no longer sends
-- pg_notify('ktune_trials', job id): nothing ever LISTENed on it (ARCHITECTURE.md, "Writes that
-- nobody reads": the /v1/best cache listens to sql/007's triggers), and a NOTIFY costs every
-- committing tell a database-wide lock at commit (PostgreSQL queues notifications in commit order)
-- and a wake-up of every listening backend (ktuned's /v1/best listener, for nothing).

-- ktune_record_trial: records the result of trial p_trial of job p_job, whose rows the caller has
-- locked (the job's first) and checked (the job runs; the trial is running under p_worker, or
-- pending and taken by p_worker now). p_config and p_remeasure are the trial's config and whether
-- it is a final-pick re-measurement (final_round set: charged to the clock, no evaluation, no
-- best); p_metric is the job's objective_metric (NULL: the time). The rules of sql/020's
-- ktune_complete_trial as sql/022 extended them: done_seq taken under the job's lock; the job's
-- best replaced when ktune_improves_best says so (a metric job: the best metric value,
-- ktune_objective_value / ktune_objective_improves, an ok trial without the metric no candidate);
-- the best table offered a time job's measured ok result (a measured offer always replacing an
-- imported entry) unless the job re-measures its pick; a metric job offers it nothing.
CREATE FUNCTION ktune_record_trial(p_trial bigint, p_job bigint, p_worker text, p_status text,
                                   p_time_ms double precision, p_repeats integer,
                                   p_compile_ms double precision, p_measure_ms double precision,
                                   p_noise_cv double precision, p_extras jsonb,
                                   p_charged double precision, p_config json,
                                   p_remeasure boolean, p_metric text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_offer boolean := p_status = 'ok' AND p_time_ms IS NOT NULL AND NOT p_remeasure;
    v_value double precision;
    j record;
BEGIN
    IF p_metric IS NOT NULL THEN
        v_value := ktune_objective_value(p_status, p_extras, p_metric);
        v_offer := v_offer AND v_value IS NOT NULL;
    END IF;
    UPDATE trials SET status = p_status, worker = p_worker,
           claimed_at = CASE WHEN status = 'pending' THEN now() ELSE claimed_at END,
           time_ms = p_time_ms, repeats = p_repeats, compile_ms = p_compile_ms,
           measure_ms = p_measure_ms, noise_cv = p_noise_cv, extras = p_extras,
           charged_seconds = p_charged, finished_at = now(),
           done_seq = nextval('trials_done_seq')
     WHERE id = p_trial;
    UPDATE jobs SET trials_done = trials_done + CASE WHEN p_remeasure THEN 0 ELSE 1 END,
           clock_seconds = clock_seconds + p_charged,
           start_attempts = least(start_attempts, 1), updated_at = now(),
           best_trial_id = CASE WHEN v_offer AND CASE WHEN p_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, objective_goal = 'max') END
                THEN p_trial ELSE best_trial_id END,
           best_config = CASE WHEN v_offer AND CASE WHEN p_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, objective_goal = 'max') END
                THEN p_config ELSE best_config END,
           best_value = CASE WHEN v_offer AND p_metric IS NOT NULL
                             AND ktune_objective_improves(v_value, best_value,
                                                          objective_goal = 'max')
                THEN v_value ELSE best_value END,
           best_time_ms = CASE WHEN v_offer AND CASE WHEN p_metric IS NULL
                   THEN ktune_improves_best(p_time_ms, best_time_ms)
                   ELSE ktune_objective_improves(v_value, best_value, objective_goal = 'max') END
                THEN p_time_ms ELSE best_time_ms END
     WHERE id = p_job
    RETURNING kernel, device_class, kernel_hash, problem_key, problem, device, toolchain,
              final_remeasure INTO j;
    IF v_offer AND p_metric IS NULL AND j.final_remeasure = 0 THEN
        INSERT INTO best (kernel, device_class, kernel_hash, problem_key, problem, device, config,
                          time_ms, job_id, trial_id, toolchain, origin)
        VALUES (j.kernel, j.device_class, j.kernel_hash, j.problem_key, j.problem, j.device,
                p_config, p_time_ms, p_job, p_trial, j.toolchain, 'measured')
        ON CONFLICT (kernel, device_class, kernel_hash, toolchain, problem_key) DO UPDATE SET
            problem = EXCLUDED.problem, device = EXCLUDED.device, config = EXCLUDED.config,
            time_ms = EXCLUDED.time_ms, job_id = EXCLUDED.job_id, trial_id = EXCLUDED.trial_id,
            origin = EXCLUDED.origin, measured_at = now()
        WHERE best.origin = 'imported' OR ktune_improves_best(EXCLUDED.time_ms, best.time_ms);
    END IF;
END
$$;

-- ktune_complete_trial: the contract of sql/020 and sql/022 (their comments there), but for the
-- notification. The trial is locked and checked by its primary key, then recorded by
-- ktune_record_trial.
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
    v_mine boolean;
    v_config json;
    v_remeasure boolean;
BEGIN
    SELECT status, objective_metric INTO v_job_status, v_metric FROM jobs WHERE id = p_job FOR UPDATE;
    IF v_job_status IS DISTINCT FROM 'running' THEN
        DELETE FROM trials WHERE id = p_trial AND worker = p_worker AND status = 'running';
        RETURN 0;
    END IF;
    SELECT worker = p_worker AND status = 'running', config, final_round IS NOT NULL
      INTO v_mine, v_config, v_remeasure
      FROM trials WHERE id = p_trial FOR UPDATE;
    IF v_mine IS NOT TRUE THEN
        RETURN 0;
    END IF;
    PERFORM ktune_record_trial(p_trial, p_job, p_worker, p_status, p_time_ms, p_repeats,
                               p_compile_ms, p_measure_ms, p_noise_cv, p_extras, p_charged,
                               v_config, v_remeasure, v_metric);
    RETURN 1;
END
$$;

-- ktune_tell: sql/020's contract unchanged (its comment there): the checks first, nothing recorded
-- when the job is not external, an id is another job's, or (the job running) no trial; then each
-- trial in order: one already final is a duplicate; with the job no longer running, lost; running
-- under p_worker, or pending (an expired lease handed back), recorded; else lost. The job's row
-- is locked from the start (so its status cannot change under the tell), each trial of the job
-- as its id is checked; the records use what those locked look-ups read.
CREATE OR REPLACE FUNCTION ktune_tell(p_job bigint, p_worker text, p_told jsonb)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
    j record;
    n integer := jsonb_array_length(p_told);
    e jsonb;
    ids bigint[] := '{}';
    sts text[] := '{}';
    mine boolean[] := '{}';
    configs json[] := '{}';
    remeasures boolean[] := '{}';
    checks json[] := '{}';
    refuse boolean := false;
    v_id bigint;
    v_st text;
    v_jid bigint;
    v_mine boolean;
    v_config json;
    v_remeasure boolean;
    outcomes text[] := '{}';
    recorded integer := 0;
    v_open boolean := false;
BEGIN
    SELECT status, device, batch_size, objective_metric INTO j FROM jobs WHERE id = p_job
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    FOR i IN 0 .. n - 1 LOOP
        v_id := (p_told -> i ->> 'id')::bigint;
        v_jid := p_job;
        SELECT status, worker = p_worker AND status = 'running', config, final_round IS NOT NULL
          INTO v_st, v_mine, v_config, v_remeasure
          FROM trials WHERE id = v_id AND job_id = p_job FOR UPDATE;
        IF NOT FOUND THEN -- another job's, or none (not locked: nothing of it is written here)
            v_mine := NULL;
            v_config := NULL;
            v_remeasure := NULL;
            SELECT status, job_id INTO v_st, v_jid FROM trials WHERE id = v_id;
        END IF;
        checks := checks || json_build_array(v_st, v_jid <> p_job);
        refuse := refuse OR COALESCE(v_jid <> p_job, j.status = 'running');
        ids := ids || v_id;
        sts := sts || v_st;
        mine := mine || v_mine;
        configs := configs || v_config;
        remeasures := remeasures || v_remeasure;
    END LOOP;
    IF j.device <> 'external' OR refuse THEN
        RETURN json_build_object('job_status', j.status, 'device', j.device, 'batch_size',
                                 j.batch_size, 'checks', COALESCE(to_json(checks), '[]'::json),
                                 'outcomes', NULL, 'open', false);
    END IF;
    FOR i IN 1 .. n LOOP
        IF sts[i] IS NOT NULL AND sts[i] NOT IN ('pending', 'running') THEN
            outcomes := outcomes || 'duplicate'::text;
        ELSIF j.status <> 'running' OR NOT (mine[i] OR sts[i] = 'pending') THEN
            outcomes := outcomes || 'lost'::text;
        ELSE
            e := p_told -> (i - 1);
            PERFORM ktune_record_trial(ids[i], p_job, p_worker, e->>'status',
                                            (e->>'time_ms')::double precision,
                                            (e->>'repeats')::integer,
                                            (e->>'compile_ms')::double precision,
                                            (e->>'measure_ms')::double precision,
                                            (e->>'noise_cv')::double precision,
                                            CASE WHEN jsonb_typeof(e->'extras') = 'object'
                                                 THEN e->'extras' END,
                                            (e->>'charged')::double precision,
                                            configs[i], remeasures[i], j.objective_metric);
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

-- ktune_ask: sql/020's statement and contract unchanged; one generic plan per session (the
-- custom plans it got instead cost a planning of its CTEs at every ask).
ALTER FUNCTION ktune_ask(bigint, integer, integer, text) SET plan_cache_mode = force_generic_plan;
