/* bench/offline/bench_history — history spaces and warm-start seeds of the offline harness (see
 * bench_history.h). */
#include "bench/offline/bench_history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

#define BENCH_SHUFFLE_SEED 0x5eed5eedULL

void bench_history_free(bench_history *h)
{
    for (int i = 0; h->src && i < h->n; i++)
        bench_space_free(&h->src[i]);
    free(h->src);
    memset(h, 0, sizeof *h);
}

/* Fisher-Yates over the valid configurations' times: the same multiset of times, no structure.
 * 0, or -1 out of memory. */
static int bench_history_shuffle(bench_space *bs, kt_rng *rng)
{
    config_id *ids = malloc((bs->valid + 1) * sizeof *ids);
    uint64_t n = 0;
    if (!ids)
        return -1;
    for (config_id id = 0; id < bs->n; id++)
        if (!isnan(bs->time[id]))
            ids[n++] = id;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = kt_rng_below(rng, i);
        double t = bs->time[ids[i - 1]];
        bs->time[ids[i - 1]] = bs->time[ids[j]];
        bs->time[ids[j]] = t;
    }
    free(ids);
    return 0;
}

int bench_history_load(const char *const *paths, int n_paths, bench_history_transform tf,
                       bench_history *h, kt_error *err)
{
    json_t *files = NULL;
    size_t i;
    json_t *p;
    int rc = -1;
    kt_rng rng;

    memset(h, 0, sizeof *h);
    kt_rng_seed(&rng, BENCH_SHUFFLE_SEED);
    files = bench_space_paths(paths, n_paths, err);
    if (!files)
        goto out;
    h->src = calloc(json_array_size(files) + 1, sizeof *h->src);
    if (!h->src) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    json_array_foreach(files, i, p)
    {
        if (bench_space_load(json_string_value(p), 0, &h->src[h->n], err) < 0) {
            kt_error_prefix(err, "--history");
            goto out;
        }
        bench_space *bs = &h->src[h->n++];
        if (tf == BENCH_HISTORY_SHUFFLED && bench_history_shuffle(bs, &rng) < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
        for (config_id id = 0; tf == BENCH_HISTORY_INVERTED && id < bs->n; id++)
            bs->time[id] = 1.0 / bs->time[id]; /* NAN stays NAN; times are > 0 */
    }
    rc = 0;
out:
    if (rc < 0)
        bench_history_free(h);
    json_decref(files);
    return rc;
}

void bench_seed_free(bench_seed *seed)
{
    free(seed->first);
    free(seed->prior_id);
    free(seed->prior_ms);
    free(seed->prior_source);
    json_decref(seed->sources);
    memset(seed, 0, sizeof *seed);
}

/* The kernel of a replay space: its name up to the first '_' (the catalog's rule). */
static size_t bench_kernel_len(const char *name)
{
    const char *us = strchr(name, '_');
    return us && us != name ? (size_t)(us - name) : strlen(name);
}

static int bench_related(const bench_space *a, const bench_space *b)
{
    size_t ka = bench_kernel_len(a->name), kb = bench_kernel_len(b->name);
    int np = space_num_params(a->sp);
    if (strcmp(a->file, b->file) == 0 || strcmp(a->name, b->name) == 0 || ka != kb ||
        strncmp(a->name, b->name, ka) != 0 || np != space_num_params(b->sp))
        return 0;
    for (int p = 0; p < np; p++)
        if (space_param_index(b->sp, space_param_name(a->sp, p)) < 0)
            return 0;
    return 1;
}

typedef struct bench_ranked {
    double t;
    config_id id; /* in the target space */
} bench_ranked;

static int bench_ranked_cmp(const void *a, const void *b)
{
    const bench_ranked *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Maps the valid configurations of src into target: rows (fastest first), their count. */
static int bench_map_source(const bench_space *src, const bench_space *target, bench_ranked *rows,
                            kt_error *err)
{
    int n = 0;
    for (config_id id = 0; id < src->n; id++) {
        kt_error e;
        config_id tid;
        if (isnan(src->time[id]))
            continue;
        json_t *cfg = space_config_json(src->sp, id);
        if (!cfg) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            return -1;
        }
        int ok = space_config_from_json(target->sp, cfg, &tid, &e) == 0;
        json_decref(cfg);
        if (!ok)
            continue; /* not valid (or not expressible) in the target: dropped */
        rows[n].t = src->time[id];
        rows[n].id = tid;
        n++;
    }
    qsort(rows, (size_t)n, sizeof *rows, bench_ranked_cmp);
    return n;
}

int bench_history_for(const bench_history *h, const bench_space *target, int n_first,
                      bench_seed *seed, kt_error *err)
{
    bench_ranked **rows = NULL;
    int *n_rows = NULL, n_src = 0, rc = -1;
    size_t total = 0;

    memset(seed, 0, sizeof *seed);
    seed->sources = json_array();
    rows = calloc((size_t)h->n + 1, sizeof *rows);
    n_rows = calloc((size_t)h->n + 1, sizeof *n_rows);
    if (!seed->sources || !rows || !n_rows)
        goto oom;
    for (int i = 0; i < h->n && n_src < SEARCHER_MAX_SOURCES; i++) {
        if (!bench_related(target, &h->src[i]))
            continue;
        rows[n_src] = malloc((size_t)(h->src[i].valid + 1) * sizeof **rows);
        if (!rows[n_src])
            goto oom;
        n_rows[n_src] = bench_map_source(&h->src[i], target, rows[n_src], err);
        if (n_rows[n_src] < 0)
            goto out;
        json_array_append_new(seed->sources, json_string(h->src[i].name));
        total += (size_t)n_rows[n_src];
        n_src++;
    }
    if (total > SEARCHER_MAX_PRIOR)
        total = SEARCHER_MAX_PRIOR;
    seed->first = calloc((size_t)n_first + 1, sizeof *seed->first);
    seed->prior_id = calloc(total + 1, sizeof *seed->prior_id);
    seed->prior_ms = calloc(total + 1, sizeof *seed->prior_ms);
    seed->prior_source = calloc(total + 1, sizeof *seed->prior_source);
    if (!seed->first || !seed->prior_id || !seed->prior_ms || !seed->prior_source)
        goto oom;
    /* first: interleaved by rank (searcher_set_history drops the duplicates). */
    for (int r = 0, any = 1; any && seed->h.n_first < n_first; r++) {
        any = 0;
        for (int s = 0; s < n_src && seed->h.n_first < n_first; s++) {
            if (r < n_rows[s]) {
                seed->first[seed->h.n_first++] = rows[s][r].id;
                any = 1;
            }
        }
    }
    for (int s = 0; s < n_src; s++) {
        for (int r = 0; r < n_rows[s] && (size_t)seed->h.n_prior < total; r++) {
            seed->prior_id[seed->h.n_prior] = rows[s][r].id;
            seed->prior_ms[seed->h.n_prior] = rows[s][r].t;
            seed->prior_source[seed->h.n_prior] = s;
            seed->h.n_prior++;
        }
    }
    seed->h.first = seed->first;
    seed->h.prior_id = seed->prior_id;
    seed->h.prior_ms = seed->prior_ms;
    seed->h.prior_source = seed->prior_source;
    rc = 0;
    goto out;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    for (int s = 0; rows && s < n_src + 1 && s <= h->n; s++)
        free(rows[s]);
    free(rows);
    free(n_rows);
    if (rc < 0)
        bench_seed_free(seed);
    return rc;
}
