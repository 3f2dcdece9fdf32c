/* runner/data — the uploaded data files of a submitted kernel (issue 27, PROTOCOL.md "data"): a
 * measure request names them by SHA-256 (a buffer's init {"kind": "data", "sha256"}, a verify
 * answer {"sha256"}), and carries their bytes ("data": {"<sha256>": "<base64>"}) only after this
 * runner answered need_data. The runner holds them in memory, never on disk (another kernel's code
 * runs as the same user): ktuned gives a submitted kernel's version a runner of its own, so what a
 * runner holds is that version's data. At most RUNNER_DATA_FILES files and RUNNER_DATA_HELD_BYTES;
 * taking more drops what was held before (a later request asks again). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "core/sha256.h"
#include "runner/runner.h"

const runner_datum *runner_data_find(const runner_data *s, const char *sha)
{
    for (int i = 0; s && sha && i < s->n; i++)
        if (strcmp(s->d[i].sha, sha) == 0)
            return &s->d[i];
    return NULL;
}

void runner_data_release(runner_data *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->d[i].bytes);
    memset(s, 0, sizeof *s);
}

int runner_data_is_sha(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n != RUNNER_DATA_SHA_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* One "data" entry: decoded, checked against its name, held. */
static int take_one(runner_data *s, const char *sha, const json_t *v, kt_error *err)
{
    unsigned char digest[KT_SHA256_SIZE];
    char hex[RUNNER_DATA_SHA_LEN + 1];
    size_t n = json_string_length(v), bad = 0;
    if (!runner_data_is_sha(sha) || !json_is_string(v))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "data.%.70s: must be \"<lowercase hex SHA-256>\": \"<base64>\"", sha);
    if (runner_data_find(s, sha))
        return 0;
    if ((long long)kt_base64_decoded_max(n) > RUNNER_DATA_HELD_BYTES)
        return kt_error_set(err, KT_ERR_BODY_TOO_LARGE, "data.%s: more than %lld bytes", sha,
                            (long long)RUNNER_DATA_HELD_BYTES);
    unsigned char *bytes = malloc(kt_base64_decoded_max(n) + 1);
    if (!bytes)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory holding data %s", sha);
    long long len = kt_base64_decode(json_string_value(v), n, bytes, &bad);
    if (len < 0) {
        free(bytes);
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "data.%s: not base64 at character %zu", sha,
                            bad);
    }
    kt_sha256(bytes, (size_t)len, digest);
    for (int i = 0; i < KT_SHA256_SIZE; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    if (strcmp(hex, sha) != 0) {
        free(bytes);
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "data.%s: the bytes hash to %s", sha, hex);
    }
    if (s->n >= RUNNER_DATA_FILES || (long long)(s->total + (size_t)len) > RUNNER_DATA_HELD_BYTES)
        runner_data_release(s); /* full: what the next request needs it sends again */
    s->d[s->n] = (runner_datum){.bytes = bytes, .len = (size_t)len};
    memcpy(s->d[s->n].sha, sha, RUNNER_DATA_SHA_LEN + 1);
    s->n++;
    s->total += (size_t)len;
    return 0;
}

/* Appends sha to *missing (created when NULL) unless held or listed. */
static int note_missing(const runner_data *s, const char *sha, json_t **missing)
{
    size_t i;
    json_t *v;
    if (!runner_data_is_sha(sha) || runner_data_find(s, sha))
        return 0; /* a malformed name is the parser's to refuse */
    if (!*missing && !(*missing = json_array()))
        return -1;
    json_array_foreach(*missing, i, v)
    {
        if (strcmp(json_string_value(v), sha) == 0)
            return 0;
    }
    return json_array_append_new(*missing, json_string(sha));
}

int runner_data_take(runner_data *s, const json_t *req, json_t **missing, kt_error *err)
{
    const json_t *data = json_object_get(req, "data"), *v, *b;
    const char *sha;
    size_t i;
    *missing = NULL;
    if (data && !json_is_object(data))
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "field 'data' must be an object {\"<sha256>\": \"<base64>\"}");
    if (json_object_size(data) > RUNNER_DATA_FILES)
        return kt_error_set(err, KT_ERR_BODY_TOO_LARGE, "field 'data' holds more than %d files",
                            RUNNER_DATA_FILES);
    json_object_foreach((json_t *)data, sha, v)
    {
        if (take_one(s, sha, v, err) < 0)
            return -1;
    }
    int rc = 0;
    json_array_foreach(json_object_get(req, "buffers"), i, b)
    {
        const json_t *in = json_object_get(b, "init");
        if (json_is_string(json_object_get(in, "kind")) &&
            strcmp(json_string_value(json_object_get(in, "kind")), "data") == 0)
            rc |= note_missing(s, json_string_value(json_object_get(in, "sha256")), missing);
    }
    json_object_foreach(json_object_get(json_object_get(req, "verify"), "buffers"), sha, v)
    {
        rc |= note_missing(s, json_string_value(json_object_get(v, "sha256")), missing);
    }
    if (rc < 0) {
        json_decref(*missing);
        *missing = NULL;
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    }
    return 0;
}
