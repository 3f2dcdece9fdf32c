-- Speed (issue 27): a trial's completion, and an ask/tell harness's whole tell, in one round trip.
--
-- ktune_complete_trial: what trial_store_complete did in six statements of one transaction (lock
-- the job, record the trial, the job's counters and clock, its best, the best table, pg_notify),
-- in one call, with the same rules: the job row is locked before done_seq is taken (within a job
-- done_seq order is commit order); a job that no longer runs records nothing and its trial (still
-- running under this worker) goes; a trial not running under p_worker records nothing (a lost
-- claim); a final-pick re-measurement (final_round set) is charged to the clock but is no
-- evaluation and no best; the job's best and the best table are replaced only when
-- ktune_improves_best (sql/003) says so, a measured offer always replacing an imported entry
-- (sql/008), and a job that re-measures its pick (final_remeasure > 0) offers the best table
-- nothing here. Returns 1 when recorded, else 0. The charge (p_charged) is computed by the caller
-- (trial_cost_seconds, the one rule).
CREATE FUNCTION ktune_complete_trial(p_trial bigint, p_job bigint, p_worker text, p_status text,
                                     p_time_ms double precision, p_repeats integer,
                                     p_compile_ms double precision, p_measure_ms double precision,
                                     p_noise_cv double precision, p_extras jsonb,
                                     p_charged double precision)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_job_status text;
    v_config json;
    v_remeasure boolean;
    v_offer boolean;
    j record;
BEGIN
    SELECT status INTO v_job_status FROM jobs WHERE id = p_job FOR UPDATE;
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
    UPDATE jobs SET trials_done = trials_done + CASE WHEN v_remeasure THEN 0 ELSE 1 END,
           clock_seconds = clock_seconds + p_charged,
           start_attempts = least(start_attempts, 1), updated_at = now(),
           best_trial_id = CASE WHEN v_offer AND ktune_improves_best(p_time_ms, best_time_ms)
                                THEN p_trial ELSE best_trial_id END,
           best_config = CASE WHEN v_offer AND ktune_improves_best(p_time_ms, best_time_ms)
                              THEN v_config ELSE best_config END,
           best_time_ms = CASE WHEN v_offer AND ktune_improves_best(p_time_ms, best_time_ms)
                               THEN p_time_ms ELSE best_time_ms END
     WHERE id = p_job
    RETURNING kernel, device_class, kernel_hash, problem_key, problem, device, toolchain,
              final_remeasure INTO j;
    PERFORM pg_notify('ktune_trials', p_job::text);
    IF v_offer AND j.final_remeasure = 0 THEN
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

-- ktune_tell: one POST /v1/jobs/{id}/tell (api/ask_tell.c) of job p_job, in one call and one
-- transaction. p_told: [{"id", "status", "time_ms", "repeats", "compile_ms", "measure_ms",
-- "noise_cv", "extras", "charged"}] (absent or null members are SQL NULL). First the check, before
-- anything is recorded: "checks" [[trial status or null, another job's]] in p_told's order; when
-- the job is not external, or an id is another job's, or (the job running) no trial, nothing is
-- recorded ("outcomes" null) and the caller refuses the tell. Else each trial, in order: one
-- already final is a duplicate; with the job no longer running, lost; else recorded by
-- ktune_complete_trial under p_worker (a trial an expired lease handed back to pending is taken
-- back first), or, when that records nothing, a duplicate (another tell finished it) or lost.
-- "open": some trial of the job still pending or running after the records (asked only when the
-- job's batch is larger than 1 and something was recorded; else false). NULL when there is no
-- such job.
CREATE FUNCTION ktune_tell(p_job bigint, p_worker text, p_told jsonb)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
    j record;
    checks json;
    refuse boolean;
    e record;
    st text;
    outcomes text[] := '{}';
    recorded integer := 0;
    v_open boolean := false;
BEGIN
    SELECT status, device, batch_size INTO j FROM jobs WHERE id = p_job;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT COALESCE(json_agg(json_build_array(t.status, t.job_id <> p_job) ORDER BY x.ord),
                    '[]'::json),
           bool_or(t.job_id <> p_job OR (t.id IS NULL AND j.status = 'running'))
      INTO checks, refuse
      FROM jsonb_array_elements(p_told) WITH ORDINALITY AS x(v, ord)
      LEFT JOIN trials t ON t.id = (x.v->>'id')::bigint;
    IF j.device <> 'external' OR refuse THEN
        RETURN json_build_object('job_status', j.status, 'device', j.device, 'batch_size',
                                 j.batch_size, 'checks', checks, 'outcomes', NULL, 'open', false);
    END IF;
    FOR e IN SELECT x.v, (x.v->>'id')::bigint AS id, t.status
               FROM jsonb_array_elements(p_told) WITH ORDINALITY AS x(v, ord)
               LEFT JOIN trials t ON t.id = (x.v->>'id')::bigint ORDER BY x.ord LOOP
        IF e.status IS NOT NULL AND e.status NOT IN ('pending', 'running') THEN
            outcomes := outcomes || 'duplicate'::text;
            CONTINUE;
        END IF;
        IF j.status <> 'running' THEN
            outcomes := outcomes || 'lost'::text;
            CONTINUE;
        END IF;
        IF e.status = 'pending' THEN
            UPDATE trials SET status = 'running', worker = p_worker, claimed_at = now()
             WHERE id = e.id AND job_id = p_job AND status = 'pending';
        END IF;
        IF ktune_complete_trial(e.id, p_job, p_worker, e.v->>'status',
                                (e.v->>'time_ms')::double precision,
                                (e.v->>'repeats')::integer,
                                (e.v->>'compile_ms')::double precision,
                                (e.v->>'measure_ms')::double precision,
                                (e.v->>'noise_cv')::double precision,
                                CASE WHEN jsonb_typeof(e.v->'extras') = 'object'
                                     THEN e.v->'extras' END,
                                (e.v->>'charged')::double precision) = 1 THEN
            outcomes := outcomes || 'recorded'::text;
            recorded := recorded + 1;
            CONTINUE;
        END IF;
        SELECT status INTO st FROM trials WHERE id = e.id;
        outcomes := outcomes || CASE WHEN st IS NOT NULL AND st NOT IN ('pending', 'running')
                                     THEN 'duplicate' ELSE 'lost' END;
    END LOOP;
    IF recorded > 0 AND j.batch_size > 1 THEN
        v_open := EXISTS (SELECT 1 FROM trials WHERE job_id = p_job
                                                 AND status IN ('pending', 'running'));
    END IF;
    RETURN json_build_object('job_status', j.status, 'device', j.device, 'batch_size',
                             j.batch_size, 'checks', checks, 'outcomes', to_json(outcomes),
                             'open', v_open);
END
$$;

-- ktune_ask: ask_store_lease's statement (store/ask_store.c: the ask recorded at most once a
-- second, up to p_n open trials of an external running job leased for p_lease_s seconds to
-- p_worker, in seq order, skipping those another ask is leasing), unchanged, in a function so
-- that each session plans it once (PL/pgSQL keeps its statements' plans) instead of at every ask.
-- NULL when there is no such job.
CREATE FUNCTION ktune_ask(p_job bigint, p_n integer, p_lease_s integer, p_worker text)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
    v json;
BEGIN
    -- A statement of its own (SELECT ... INTO), not a subquery: a WITH that writes must be at the
    -- top level.
    WITH info AS (SELECT status, device FROM jobs WHERE id = p_job),
        asked AS (UPDATE jobs SET last_ask_at = now() WHERE id = p_job AND device = 'external'
                     AND (last_ask_at IS NULL OR last_ask_at < now() - interval '1 second')
                  RETURNING id),
        pick AS (SELECT t.id FROM trials t WHERE t.job_id = p_job
                    AND (t.status = 'pending'
                         OR (t.status = 'running' AND t.lease_expires_at < now()))
                    AND EXISTS (SELECT 1 FROM info WHERE status = 'running' AND device = 'external')
                  ORDER BY t.seq LIMIT p_n FOR UPDATE OF t SKIP LOCKED),
        leased AS (UPDATE trials t SET status = 'running', worker = p_worker, claimed_at = now(),
                          lease_expires_at = now() + make_interval(secs => p_lease_s)
                     FROM pick WHERE t.id = pick.id
                   RETURNING t.id, t.seq, t.config, t.lease_expires_at)
    SELECT json_build_object('job_status', i.status, 'device', i.device,
                                 'asked', (SELECT count(*) FROM asked),
                                 'trials', COALESCE((SELECT json_agg(json_build_object(
                                     'id', l.id, 'seq', l.seq, 'config', l.config,
                                     'lease_s', p_lease_s,
                                     'lease_expires_at', l.lease_expires_at) ORDER BY l.seq)
                                   FROM leased l), '[]'::json)) INTO v
      FROM info i;
    RETURN v;
END
$$;
