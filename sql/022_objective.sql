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

-- ktune_complete_trial with the job's objective (a metric job's best is the trial with the best
-- metric value, best_value; best_time_ms is that trial's time; an ok trial without the metric is
-- no candidate; a metric job offers the best table nothing) is sql/023's ktune_record_trial, which
-- replaced sql/020's functions before any release carried this file.
