/* store/kernel_store — see kernel_store.h. */
#include "store/kernel_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store_util.h"

json_t *kernel_store_create(PGconn *c, const char *name, const char *version, const char *spec_json,
                            const char *spec_text, const char *files_json, const char *data_json,
                            const char *submitter, int *created, kt_error *err)
{
    const char *p[] = {name, version, spec_json, spec_text, files_json, submitter, data_json};
    /* The insert's row, else the existing one: one statement, so a race of two equal POSTs
     * answers both with the one row. */
    json_t *out = store_query_json(
        c,
        "WITH ins AS (INSERT INTO kernel_versions (name, version, spec, spec_text, files, "
        "submitter, data)"
        " VALUES ($1, $2, $3::jsonb, $4, $5::jsonb, $6, $7::jsonb)"
        " ON CONFLICT (name, version) DO NOTHING"
        " RETURNING name, version, status, created_at)"
        " SELECT json_build_object('name', name, 'version', version, 'status', status,"
        " 'created_at', created_at, 'created', true) FROM ins"
        " UNION ALL SELECT json_build_object('name', name, 'version', version, 'status', status,"
        " 'created_at', created_at, 'created', false) FROM kernel_versions"
        " WHERE name = $1 AND version = $2 AND NOT EXISTS (SELECT 1 FROM ins)",
        7, p, "the kernel version was not stored", err);
    if (out) {
        *created = json_is_true(json_object_get(out, "created"));
        json_object_del(out, "created");
    }
    return out;
}

json_t *kernel_store_versions_json(PGconn *c, const char *name, kt_error *err)
{
    const char *p[] = {name};
    return store_query_json(
        c,
        "SELECT COALESCE(json_agg(json_build_object('version', version, 'created_at', created_at,"
        " 'submitter', submitter, 'status', status, 'log', log, 'validation', validation,"
        " 'retired', retired_at IS NOT NULL, 'retired_at', retired_at, 'spec', spec)::jsonb"
        " || CASE WHEN data IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('data',"
        " (SELECT jsonb_object_agg(f.key, jsonb_build_object('dtype', f.value->'dtype', 'bytes',"
        " length(decode(f.value->>'data', 'base64')), 'sha256',"
        " encode(sha256(decode(f.value->>'data', 'base64')), 'hex'))) FROM jsonb_each(data) f)) END"
        " ORDER BY created_at DESC, id DESC), '[]'::json) FROM kernel_versions WHERE name = $1",
        1, p, "no versions", err);
}

json_t *kernel_store_fetch(PGconn *c, const char *name, int limit, kt_error *err)
{
    store_num n;
    const char *p[] = {name, store_ll(&n, limit)};
    return store_query_json(
        c,
        "SELECT COALESCE(json_agg(json_build_object('version', version, 'status', status, 'log',"
        " log, 'retired', retired_at IS NOT NULL, 'spec_text', spec_text, 'files', files,"
        " 'data', data) ORDER BY created_at DESC, id DESC), '[]'::json) FROM (SELECT * FROM"
        " kernel_versions"
        " WHERE name = $1 ORDER BY created_at DESC, id DESC LIMIT $2::bigint) k",
        2, p, "no versions", err);
}

json_t *kernel_store_names_json(PGconn *c, kt_error *err)
{
    return store_query_json(
        c,
        "SELECT COALESCE(json_agg(json_build_object('name', name, 'version', version, 'status',"
        " status, 'created_at', created_at, 'summary', COALESCE(spec->>'summary', ''),"
        " 'versions', versions) ORDER BY name), '[]'::json) FROM (SELECT DISTINCT ON (name) name,"
        " version, status, created_at, spec, count(*) OVER (PARTITION BY name) AS versions"
        " FROM kernel_versions ORDER BY name, created_at DESC, id DESC) k",
        0, NULL, "no kernels", err);
}

json_t *kernel_store_claim(PGconn *c, const char *validator, kt_error *err)
{
    store_num n;
    const char *p[] = {validator, store_ll(&n, KERNEL_STORE_CLAIM_S)};
    return store_query_json(
        c,
        "UPDATE kernel_versions SET validator = $1, claimed_at = clock_timestamp() WHERE id = ("
        " SELECT id FROM kernel_versions WHERE status = 'validating' AND (claimed_at IS NULL OR"
        " claimed_at < clock_timestamp() - make_interval(secs => $2::bigint))"
        " ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)"
        " RETURNING json_build_object('name', name, 'version', version)",
        2, p, "no kernel to validate", err);
}

json_t *kernel_store_retire(PGconn *c, const char *name, const char *version, kt_error *err)
{
    const char *p[] = {name, version};
    return store_query_json(
        c,
        "UPDATE kernel_versions SET retired_at = COALESCE(retired_at, clock_timestamp())"
        " WHERE name = $1 AND version = $2 RETURNING json_build_object('name', name, 'version',"
        " version, 'status', status, 'retired', true, 'retired_at', retired_at)",
        2, p, "no such kernel version", err);
}

int kernel_store_finish(PGconn *c, const char *name, const char *version, const char *status,
                        const char *log, const json_t *validation, kt_error *err)
{
    char *v = store_json_text(validation);
    const char *p[] = {name, version, status, log, v};
    int rc = db_run(c,
                    "UPDATE kernel_versions SET status = $3, log = $4, validation = $5::jsonb,"
                    " validated_at = clock_timestamp() WHERE name = $1 AND version = $2",
                    5, p, err);
    free(v);
    return rc;
}
