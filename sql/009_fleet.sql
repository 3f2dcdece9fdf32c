-- Scale-out (issue #11): the devices of the fleet, and the parallelism a job asked for.
--
-- Every ktuned that measures (roles worker and all) registers each device it serves here, one row
-- per (host, device name), with the full catalog record an API process on another host needs to
-- list the device and to resolve targets on it (store/catalog_store.c, catalog/catalog_fleet.c):
-- {"name","kind","ordinal","class","toolchain","limits":{...},"description":{...}}. The runner
-- thread heart-beats its rows every second; a row whose heartbeat is older than the lease
-- (--lease-s) is not live: its device is listed and offered only while some live row serves it.
-- Two hosts serving "cpu" with different processors have different classes: a job keeps the class
-- it was resolved with, and only workers serving (device, class, toolchain) claim its trials.
--
-- The devices table of 001 stays the summary by name written at each start (catalog_store_sync).
CREATE TABLE fleet_devices (
    host         text NOT NULL,            -- the worker process's host name
    name         text NOT NULL,            -- "cpu", "cuda:0", "replay:<space>"
    runner       text NOT NULL,            -- "<host>:<pid>:<start>" of the process serving it
    kind         text NOT NULL,            -- "cpu", "cuda", "replay"
    class        text NOT NULL,
    toolchain    text NOT NULL DEFAULT '',
    record       jsonb NOT NULL,           -- what catalog_resolve needs, see above
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host, name)
);
CREATE INDEX fleet_devices_runner_idx ON fleet_devices (runner);

-- "parallel": N of POST /v1/tune (1..64): how many configurations the searcher proposes per batch
-- for strategies that learn, measured by up to N workers of the device class at once. NULL for jobs
-- from before this migration and for imports.
ALTER TABLE jobs ADD COLUMN parallel integer CHECK (parallel BETWEEN 1 AND 64);

