-- The toolchain is part of a result's key (issue #10): the compiler and its version for the CPU
-- ("gcc 12.2.0"), the driver and NVRTC versions for CUDA ("cuda driver 13.0, nvrtc 13.0"),
-- "recorded" for a replay dataset (or the toolchain the dataset records). The runner's probe
-- reports it, the catalog puts it into every target_key (core/target_key.h), and a result measured
-- under another toolchain is another result: it is never served for this one, and a stored job
-- whose device now has another toolchain is not resumed (toolchain_changed).
--
-- Rows written before this migration on a replay device get 'recorded', the toolchain of every
-- replay dataset without its own (a replay result does not depend on a compiler of this host);
-- rows of real devices keep '' (the toolchain was not recorded): their best entries are no longer
-- served (no device has the toolchain ''), and a job stored with '' that is resumed ends as
-- failed, toolchain_changed.
ALTER TABLE jobs ADD COLUMN toolchain text NOT NULL DEFAULT '';
ALTER TABLE best ADD COLUMN toolchain text NOT NULL DEFAULT '';
UPDATE jobs SET toolchain = 'recorded' WHERE device LIKE 'replay:%';
UPDATE best SET toolchain = 'recorded' WHERE device LIKE 'replay:%';

-- The best table's key: one entry per (kernel, device class, kernel hash, toolchain, problem).
ALTER TABLE best DROP CONSTRAINT best_pkey;
ALTER TABLE best ADD PRIMARY KEY (kernel, device_class, kernel_hash, toolchain, problem_key);
