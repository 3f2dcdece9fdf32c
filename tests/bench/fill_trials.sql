-- Bench data: fills jobs, trials and best with finished jobs of realistic shape, fast (one
-- INSERT ... SELECT generate_series per table, no per-row round trip). Used by
-- bench_store_db_per_trial.c and bench_db_millions.py. Creates pg_temp.ktune_bench_fill (lives for the
-- session): SELECT pg_temp.ktune_bench_fill(n_jobs, trials_per_job, tag) adds n_jobs succeeded jobs of
-- kernel 'gemm' on device 'replay:bench' (class 'bench-gpu', toolchain 'recorded'), each with a
-- distinct problem (M = <tag>*1e6 + n), trials_per_job finished trials (95% ok, 5% compile_error;
-- a 4-parameter configuration; compile and measure times; done_seq from the sequence, in job order,
-- as trial_store_complete gives it), the job's own best and one best-table row per job. Returns the
-- number of trials added.
CREATE OR REPLACE FUNCTION pg_temp.ktune_bench_fill(n_jobs integer, per_job integer, tag integer)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    first_id bigint;
    last_id bigint;
    added bigint;
BEGIN
    WITH made AS (
        INSERT INTO jobs (status, kernel, device, device_class, kernel_hash, problem, problem_key,
                          strategy, seed, budget_evaluations, batch_size, space_size, trials_done,
                          clock_seconds, stop_reason, runner, started_at, finished_at, toolchain,
                          history)
        SELECT 'succeeded', 'gemm', 'replay:bench', 'bench-gpu', 'benchhash',
               jsonb_build_object('M', tag::bigint * 1000000 + g, 'N', 1024, 'K', 1024),
               'K=1024,M=' || (tag::bigint * 1000000 + g) || ',N=1024', 'random', g, per_job, 8,
               1000000, per_job, per_job * 0.35, 'budget', NULL, now() - interval '1 hour', now(),
               'recorded', 'none'
        FROM generate_series(1, n_jobs) g
        RETURNING id)
    SELECT min(id), max(id) INTO first_id, last_id FROM made;

    INSERT INTO trials (job_id, seq, config_id, config, device, status, time_ms, repeats, compile_ms,
                        measure_ms, noise_cv, worker, done_seq, claimed_at, finished_at,
                        charged_seconds)
    SELECT j, s, s * 7 + (j % 5),
           json_build_object('block_size_x', 16 * (1 + s % 32), 'block_size_y', 1 + s % 8,
                             'tile_size', 1 + s % 4, 'use_shared', s % 2),
           'replay:bench',
           CASE WHEN s % 20 = 0 THEN 'compile_error' ELSE 'ok' END,
           CASE WHEN s % 20 = 0 THEN NULL ELSE 1.0 + ((s * 2654435761::bigint) % 1000) / 100.0 END,
           CASE WHEN s % 20 = 0 THEN NULL ELSE 7 END, 250.0, 100.0,
           CASE WHEN s % 20 = 0 THEN NULL ELSE 0.01 END, 'bench:1:1/0',
           nextval('trials_done_seq'), now() - interval '1 hour', now(), 0.35
    FROM generate_series(first_id, last_id) j CROSS JOIN generate_series(1, per_job) s
    ORDER BY j, s;
    GET DIAGNOSTICS added = ROW_COUNT;

    -- The job's own best: its fastest ok trial (the fill's times repeat, so the first of equals).
    UPDATE jobs SET best_trial_id = b.id, best_time_ms = b.time_ms, best_config = b.config
    FROM (SELECT DISTINCT ON (job_id) job_id, id, time_ms, config FROM trials
          WHERE job_id BETWEEN first_id AND last_id AND status = 'ok'
          ORDER BY job_id, time_ms, id) b
    WHERE jobs.id = b.job_id;

    INSERT INTO best (kernel, device_class, kernel_hash, toolchain, problem_key, problem, device,
                      config, time_ms, job_id, trial_id)
    SELECT kernel, device_class, kernel_hash, toolchain, problem_key, problem, device, best_config,
           best_time_ms, id, best_trial_id
    FROM jobs WHERE id BETWEEN first_id AND last_id AND best_trial_id IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN added;
END $$;
