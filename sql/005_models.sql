-- Models as data (issue 10): predictors trained in the background by any ktuned (worker/trainer.c),
-- claimed like jobs, kept with their bytes, read back by every process (worker/model_cache.c).
-- A model's key is (kind, kernel, device_class, kernel_hash, toolchain); its version counts per key.
-- Status: 'training' (queued or being trained: runner is the ktuned training it, NULL when nobody
-- is), 'ready' (bytes, metrics), 'failed' (error), 'superseded' (a newer model of the key is ready).
-- POST /v1/models {"kernel", "device"|"device_class", "kind": "predictor", "algorithm"?: default
-- predictor_default_kind(), "hyper"?: {...}}. A model's version counts per (kind, kernel, class,
-- hash, toolchain).
CREATE TABLE models (
  id bigserial PRIMARY KEY, kind text NOT NULL,   -- 'predictor' (the only kind today)
  algorithm text NOT NULL,                         -- predictor_kinds(): seq2seq | nearest | common | xgb
  kernel text NOT NULL, device_class text NOT NULL,
  kernel_hash text NOT NULL, toolchain text NOT NULL DEFAULT '', version integer NOT NULL,
  status text NOT NULL CHECK (status IN ('training','ready','failed','superseded')),
  training jsonb NOT NULL DEFAULT '{}',   -- {"problems":n,"trials":n,"from":ts,"to":ts,"max_trial_id":id}
  hyper jsonb NOT NULL DEFAULT '{}', metrics jsonb, model bytea, format_version integer,
  error jsonb, reason text,              -- 'requested' | 'retrain'
  runner text, runner_heartbeat timestamptz, attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(), started_at timestamptz, finished_at timestamptz,
  UNIQUE (kind, kernel, device_class, kernel_hash, toolchain, version));

-- At most one model of a key is training: model_store_create answers 409 when one is, and this
-- index settles two creates that race (the loser gets a unique violation, also a 409).
CREATE UNIQUE INDEX models_one_training_idx ON models (kind, kernel, device_class, kernel_hash, toolchain)
  WHERE status = 'training';
-- The newest ready model of a key (model_store_latest_ready, once per /v1/best miss).
CREATE INDEX models_ready_idx ON models (kind, kernel, device_class, kernel_hash, toolchain, version DESC)
  WHERE status = 'ready';
-- The ok trials of a key's jobs (store/model_data_store.c): the training data, its newest trial id
-- (a backward index lookup per job) and the retrain check (per job, the ids above a model's
-- max_trial_id: a range of this index, not every ok trial of the job). Measured on 100 jobs x 2,000
-- trials of one key: newest id 473 -> 5 ms, retrain count 66 -> 7 ms, with (job_id, time_ms) before.
CREATE INDEX models_jobs_key_idx ON jobs (kernel, device_class, kernel_hash);
CREATE INDEX models_trials_ok_idx ON trials (job_id, id) WHERE status = 'ok';
