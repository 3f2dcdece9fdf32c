-- Mind Mappings (issue 13): the surrogate a job searches through. A job whose strategy needs a
-- trained surrogate (mindmap) records, when it is first opened, the newest ready model of kind
-- 'surrogate' of its key (store/model_store.c, model_store_job_model); every later open (a resume
-- by replay) loads that same model, even once a newer one superseded it (superseded models keep
-- their bytes), so the replayed searcher proposes what the first one did. NULL: none recorded
-- (other strategies, or not opened yet).
ALTER TABLE jobs ADD COLUMN surrogate_model_id bigint REFERENCES models (id);

-- The 'surrogate' kind (algorithm 'mlp'): a differentiable cost model of an accel device trained
-- on sampled problems and mappings, not on tuned trials; never retrained on new trials
-- (model_store_queue_retrains looks at predictors only).
COMMENT ON COLUMN models.kind IS 'predictor (trained on tuned trials) | surrogate (an accel device''s cost model, mlp)';
