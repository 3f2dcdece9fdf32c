-- The final pick (issue #12): a job on a real device (cpu, cuda), once its budget is spent,
-- re-measures its fastest few distinct ok configurations interleaved over several rounds and takes
-- the winner by the median of the re-measurements (worker/final_pick.c, worker/job_driver.c).
--
-- final_remeasure: how many configurations are re-measured (0 = off: replay jobs, imports, jobs
-- from before this migration); final_rounds: how many times each (0 when off).
ALTER TABLE jobs ADD COLUMN final_remeasure integer NOT NULL DEFAULT 0
    CHECK (final_remeasure BETWEEN 0 AND 8);
ALTER TABLE jobs ADD COLUMN final_rounds integer NOT NULL DEFAULT 0
    CHECK (final_rounds BETWEEN 0 AND 16);
-- What the pick found, written with the job's best in one transaction (store/pick_store.c):
-- {"rounds","candidates":[{"config_id","search_trial_id","search_ms","times_ms":[...],"ok",
-- "median_ms","spread","qualified"}...],"winner": index or null,"winner_trial_id"}. NULL until then.
ALTER TABLE jobs ADD COLUMN final_pick jsonb;

-- A re-measurement is a trial of its own (status, times, charge, claimed and requeued like any
-- other) whose final_round is its round (1..final_rounds); an evaluation of the search has NULL.
-- Re-measurements take the seqs after the search's last trial (the search is over when they are
-- made), are not counted in jobs.trials_done and are not offered to a best one by one.
ALTER TABLE trials ADD COLUMN final_round integer CHECK (final_round > 0);

-- "A job never measures a configuration twice" now holds for the search's trials; a configuration
-- is re-measured once per round.
ALTER TABLE trials DROP CONSTRAINT trials_job_id_config_id_key;
CREATE UNIQUE INDEX trials_job_config_search_idx ON trials (job_id, config_id)
    WHERE final_round IS NULL;
CREATE UNIQUE INDEX trials_job_config_round_idx ON trials (job_id, config_id, final_round)
    WHERE final_round IS NOT NULL;
