-- Data with a kernel (issue 27): a kernel submitted over HTTP may carry the caller's own data files
-- (POST /v1/kernels "data": input arrays a buffer's init names, expected outputs a verify answer
-- names). data is the canonical form catalog/kernel_data.h reads and writes, {"<name>": {"dtype":
-- "f32", "encoding": "base64", "data": "<base64>"}}, NULL for a kernel without data (and every row
-- before this migration). Its bytes are part of the version (their SHA-256s go into the hash), so a
-- row's data never changes. Bounded here as in the API (512 KiB decoded, 32 files: base64 and the
-- JSON around it stay below 1 MiB of text).
ALTER TABLE kernel_versions ADD COLUMN data jsonb
    CHECK (data IS NULL OR (jsonb_typeof(data) = 'object' AND octet_length(data::text) <= 1048576));
