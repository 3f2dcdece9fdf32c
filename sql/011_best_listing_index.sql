-- GET /v1/best/entries lists the best table newest first (best_store_list_json: ORDER BY
-- measured_at DESC LIMIT n, optionally for one kernel and device class). Without an index that is a
-- scan and sort of the whole table, which grows with every tuned problem: 128 ms at 100,000 entries
-- (tests/bench/bench_db_millions.py). With these it reads the first n index entries, whatever the
-- table's size. (Issue 11, "Database cost flat as data grows"; number 011: 010 is reserved.)
CREATE INDEX best_measured_at_idx ON best (measured_at);
CREATE INDEX best_kernel_measured_at_idx ON best (kernel, measured_at);
