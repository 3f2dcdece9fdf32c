-- One place for two rules the stores used to restate at every site.
--
-- 1. What a trial costs. core/trial.c (trial_cost_seconds) is the rule: compile_ms + measure_ms of
--    the trial, in seconds, a part that is not finite counting 0. The stores compute it once in C
--    when a trial becomes final (store/trial_store.c, store/import_store.c) and keep it here; the
--    job clock (jobs.clock_seconds), the import recount and /metrics are sums of this column, never
--    of compile_ms and measure_ms. NULL while the trial is pending or running.
ALTER TABLE trials ADD COLUMN charged_seconds double precision;

-- Trials finished before this migration: the same rule, applied once (their compile_ms and
-- measure_ms were stored finite or NULL, so COALESCE is the isfinite guard).
UPDATE trials SET charged_seconds = (COALESCE(compile_ms, 0) + COALESCE(measure_ms, 0)) / 1000.0
WHERE done_seq IS NOT NULL;

-- 2. When a measured time replaces a best: it exists and is strictly lower than the incumbent, or
--    there is no incumbent. Ties keep the incumbent (the trial that got there first). Used by the
--    job's own best (jobs.best_*, store/job_store.c job_store_offer_best) and by the best across
--    jobs (the best table, store/best_store.c best_store_offer).
CREATE FUNCTION ktune_improves_best(candidate_ms double precision, incumbent_ms double precision)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT candidate_ms IS NOT NULL AND (incumbent_ms IS NULL OR candidate_ms < incumbent_ms)
$$;
