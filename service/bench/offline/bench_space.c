/* bench/offline/bench_space — replay spaces of the offline harness (see bench_space.h). */
#include "bench/offline/bench_space.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/array.h"
#include "core/trial.h"

static int bench_has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n > m && strcmp(s + n - m, suf) == 0;
}

static int bench_str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

json_t *bench_space_paths(const char *const *spaces, int n_spaces, kt_error *err)
{
    json_t *paths = json_array(), *res = NULL;
    char **names = NULL;
    size_t n_names = 0, cap_names = 0;
    DIR *d = NULL;

    if (!paths) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; i < n_spaces; i++) {
        struct stat st;
        if (stat(spaces[i], &st) != 0) {
            kt_error_set(err, KT_ERR_IO, "space %s: %s", spaces[i], strerror(errno));
            goto out;
        }
        if (!S_ISDIR(st.st_mode)) {
            json_array_append_new(paths, json_string(spaces[i]));
            continue;
        }
        d = opendir(spaces[i]);
        if (!d) {
            kt_error_set(err, KT_ERR_IO, "space folder %s: %s", spaces[i], strerror(errno));
            goto out;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' ||
                !(bench_has_suffix(e->d_name, ".json") || bench_has_suffix(e->d_name, ".json.gz")))
                continue;
            if (KT_ARRAY_GROW(names, cap_names, n_names + 1, SIZE_MAX) != 0) {
                kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
                goto out;
            }
            names[n_names] = strdup(e->d_name);
            if (!names[n_names]) {
                kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
                goto out;
            }
            n_names++;
        }
        closedir(d);
        d = NULL;
        if (n_names == 0) {
            kt_error_set(err, KT_ERR_IO, "space folder %s holds no *.json or *.json.gz file",
                         spaces[i]);
            goto out;
        }
        qsort(names, n_names, sizeof *names, bench_str_cmp);
        for (size_t k = 0; k < n_names; k++) {
            char path[BENCH_MAX_PATH];
            int w = snprintf(path, sizeof path, "%s/%s", spaces[i], names[k]);
            if (w < 0 || (size_t)w >= sizeof path) {
                kt_error_set(err, KT_ERR_IO, "path too long in %s", spaces[i]);
                goto out;
            }
            json_array_append_new(paths, json_string(path));
        }
        for (size_t k = 0; k < n_names; k++)
            free(names[k]);
        n_names = 0;
    }
    if (json_array_size(paths) > BENCH_MAX_SPACES) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "%zu spaces: at most %d", json_array_size(paths),
                     BENCH_MAX_SPACES);
        goto out;
    }
    res = paths;
    paths = NULL;
out:
    if (d)
        closedir(d);
    for (size_t k = 0; k < n_names; k++)
        free(names[k]);
    free(names);
    json_decref(paths);
    return res;
}

void bench_space_free(bench_space *bs)
{
    space_free(bs->sp);
    free(bs->time);
    free(bs->cost_s);
    memset(bs, 0, sizeof *bs);
}

int bench_space_load(const char *path, int include_failed, bench_space *bs, kt_error *err)
{
    replay_dataset *ds = NULL;
    json_t *params = NULL, *configs = NULL;
    int *idx = NULL, rc = -1;
    char why[512], fallback[REPLAY_MAX_NAME + 1];
    const char *base = strrchr(path, '/');

    memset(bs, 0, sizeof *bs);
    base = base ? base + 1 : path;
    snprintf(fallback, sizeof fallback, "%s", base);
    char *dot = strstr(fallback, ".json");
    if (dot)
        *dot = '\0';
    why[0] = '\0';
    ds = dataset_load(path, fallback, why, sizeof why);
    if (!ds) {
        kt_error_set(err, KT_ERR_IO, "space %s: %s", path, why);
        goto out;
    }
    snprintf(bs->name, sizeof bs->name, "%s", dataset_name(ds));
    snprintf(bs->file, sizeof bs->file, "%s", path);
    const space *dsp = dataset_space(ds);
    int np = space_num_params(dsp);
    params = json_array();
    configs = json_array();
    idx = calloc((size_t)np, sizeof *idx);
    if (!params || !configs || !idx) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int p = 0; p < np; p++) {
        json_t *vals = json_array();
        for (int v = 0; vals && v < space_param_num_values(dsp, p); v++)
            json_array_append_new(vals, space_param_value_json(dsp, p, v));
        json_array_append_new(
            params, json_pack("{s:s, s:o*}", "name", space_param_name(dsp, p), "values", vals));
    }
    for (uint64_t r = 0; r < dataset_num_records(ds); r++) {
        const replay_record *rec = dataset_record_at(ds, r);
        if (!include_failed && rec->status != TRIAL_OK)
            continue;
        if (space_decode(dsp, rec->id, idx) < 0)
            continue;
        json_t *row = json_array();
        for (int p = 0; row && p < np; p++)
            json_array_append_new(row, space_param_value_json(dsp, p, idx[p]));
        json_array_append_new(configs, row);
    }
    if (json_array_size(configs) == 0) {
        kt_error_set(err, KT_ERR_BAD_SPACE, "space %s: no configuration with a valid time", path);
        goto out;
    }
    bs->sp = space_new_explicit(params, configs, err);
    if (!bs->sp) {
        kt_error_prefix(err, "space %s", path);
        goto out;
    }
    bs->n = space_count(bs->sp);
    bs->time = malloc(bs->n * sizeof *bs->time);
    bs->cost_s = malloc(bs->n * sizeof *bs->cost_s);
    if (!bs->time || !bs->cost_s) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    bs->optimum = INFINITY;
    for (config_id id = 0; id < bs->n; id++) {
        config_id oid;
        const replay_record *rec = NULL;
        if (space_decode(bs->sp, id, idx) == 0 && space_encode(dsp, idx, &oid) == 0)
            rec = dataset_record(ds, oid);
        if (!rec) {
            kt_error_set(err, KT_ERR_INTERNAL, "space %s: configuration %llu has no record", path,
                         (unsigned long long)id);
            goto out;
        }
        bs->time[id] = rec->status == TRIAL_OK ? rec->time_ms : NAN;
        bs->cost_s[id] = trial_cost_seconds_of(rec->compile_ms, rec->measure_ms);
        if (rec->status == TRIAL_OK) {
            bs->valid++;
            if (rec->time_ms < bs->optimum)
                bs->optimum = rec->time_ms;
        }
    }
    if (!(bs->optimum > 0) || !isfinite(bs->optimum)) {
        kt_error_set(err, KT_ERR_BAD_SPACE, "space %s: optimum time %g ms is not positive", path,
                     bs->optimum);
        goto out;
    }
    rc = 0;
out:
    if (rc < 0)
        bench_space_free(bs);
    dataset_free(ds);
    json_decref(params);
    json_decref(configs);
    free(idx);
    return rc;
}
