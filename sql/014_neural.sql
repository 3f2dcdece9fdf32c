-- Neural transformations (issue 14): a trial whose configuration changes the network (grouping,
-- bottlenecking, the composite sequences) and fails the job's legality check (Fisher Potential,
-- service/neural/nn_legality.h) ends 'illegal': counted, never measured; extras carry its
-- fisher_ratio. The column's CHECK (001_schema.sql, named by PostgreSQL trials_status_check) gains it.
ALTER TABLE trials DROP CONSTRAINT trials_status_check;
ALTER TABLE trials ADD CONSTRAINT trials_status_check
    CHECK (status IN ('pending', 'running', 'ok', 'invalid', 'compile_error', 'runtime_error',
                      'timeout', 'wrong_result', 'illegal'));
