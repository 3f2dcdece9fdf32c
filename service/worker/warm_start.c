/* worker/warm_start — history for a job's searcher (see warm_start.h). */
#include "worker/warm_start.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "store/history_store.h"

#define WARM_MISMATCH 4.0 /* distance of an argument that cannot be compared */

static double value_distance(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        if (x == y)
            return 0;
        if (x > 0 && y > 0)
            return (log(x) - log(y)) * (log(x) - log(y));
        return WARM_MISMATCH * WARM_MISMATCH;
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t na = json_array_size(a), nb = json_array_size(b), n = na > nb ? na : nb;
        double d = 0;
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
            d += x && y ? value_distance(x, y) : WARM_MISMATCH * WARM_MISMATCH;
        }
        return d;
    }
    return json_equal((json_t *)a, (json_t *)b) ? 0 : WARM_MISMATCH * WARM_MISMATCH;
}

double warm_start_problem_distance(const json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;
    double d = 0;
    if (!json_is_object(a) || !json_is_object(b))
        return json_equal((json_t *)a, (json_t *)b) ? 0 : WARM_MISMATCH;
    json_object_foreach((json_t *)a, k, v)
    {
        const json_t *w = json_object_get(b, k);
        d += w ? value_distance(v, w) : WARM_MISMATCH * WARM_MISMATCH;
    }
    json_object_foreach((json_t *)b, k, v)
    {
        if (!json_object_get(a, k))
            d += WARM_MISMATCH * WARM_MISMATCH;
    }
    return sqrt(d);
}

void warm_start_release(warm_start *ws)
{
    free(ws->first);
    free(ws->prior_id);
    free(ws->prior_ms);
    free(ws->prior_source);
    memset(ws, 0, sizeof *ws);
}

int warm_start_from_used(const json_t *used, const space *sp, warm_start *ws, kt_error *err)
{
    const json_t *first = json_object_get(used, "first"), *prior = json_object_get(used, "prior");
    size_t nf = json_array_size(first), np = json_array_size(prior), i;
    json_t *e;
    memset(ws, 0, sizeof *ws);
    if (nf > SEARCHER_MAX_FIRST)
        nf = SEARCHER_MAX_FIRST;
    if (np > SEARCHER_MAX_PRIOR)
        np = SEARCHER_MAX_PRIOR;
    ws->first = calloc(nf + 1, sizeof *ws->first);
    ws->prior_id = calloc(np + 1, sizeof *ws->prior_id);
    ws->prior_ms = calloc(np + 1, sizeof *ws->prior_ms);
    ws->prior_source = calloc(np + 1, sizeof *ws->prior_source);
    if (!ws->first || !ws->prior_id || !ws->prior_ms || !ws->prior_source) {
        warm_start_release(ws);
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory for a job's history");
    }
    json_array_foreach(first, i, e)
    {
        kt_error ignored;
        if ((size_t)ws->h.n_first < nf &&
            space_config_from_json(sp, json_object_get(e, "config"), &ws->first[ws->h.n_first],
                                   &ignored) == 0)
            ws->h.n_first++;
    }
    json_array_foreach(prior, i, e)
    {
        kt_error ignored;
        int n = ws->h.n_prior;
        if ((size_t)n < np && space_config_from_json(sp, json_object_get(e, "config"),
                                                     &ws->prior_id[n], &ignored) == 0) {
            ws->prior_ms[n] = json_number_value(json_object_get(e, "time_ms"));
            ws->prior_source[n] = (int)json_integer_value(json_object_get(e, "source"));
            ws->h.n_prior++; /* searcher_set_history drops bad times and sources */
        }
    }
    ws->h.first = ws->first;
    ws->h.prior_id = ws->prior_id;
    ws->h.prior_ms = ws->prior_ms;
    ws->h.prior_source = ws->prior_source;
    return 0;
}

typedef struct ranked_source {
    const history_source *s;
    int relation;
    double distance;
} ranked_source;

static int ranked_cmp(const void *a, const void *b)
{
    const ranked_source *x = a, *y = b;
    if (x->relation != y->relation)
        return x->relation - y->relation;
    if (x->distance != y->distance)
        return x->distance < y->distance ? -1 : 1;
    int c = strcmp(x->s->device_class, y->s->device_class);
    return c ? c : strcmp(x->s->problem_key, y->s->problem_key);
}

/* The source's trials valid in sp as [{"config","time_ms","source"}] (fastest first), appended to
 * valid; returns how many, -1 on error. */
static int map_trials(const history_trials *t, const space *sp, int source, json_t *valid)
{
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        config_id id;
        kt_error ignored;
        if (space_config_from_json(sp, t->t[i].config, &id, &ignored) < 0)
            continue; /* another parameter set, or not valid for this problem: dropped */
        if (json_array_append_new(valid, json_pack("{s:O, s:f, s:i}", "config", t->t[i].config,
                                                   "time_ms", t->t[i].time_ms, "source", source)) <
            0)
            return -1;
        n++;
    }
    return n;
}

/* 1 when list (of {"config",...}) holds config already: the best of two sources may coincide, and
 * `first` counts what will be proposed. */
static int has_config(const json_t *list, const json_t *config)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if (json_equal(json_object_get(e, "config"), (json_t *)config))
            return 1;
    }
    return 0;
}

/* The sources ranked: the same problem on another class first, then the same class's other
 * problems, then the rest, nearer problems first (ranked_cmp). NULL when out of memory; freed by
 * the caller. */
static ranked_source *rank_sources(history_sources *all, const target_key *key,
                                   const json_t *problem)
{
    ranked_source *rank = calloc((size_t)all->n + 1, sizeof *rank);
    if (!rank)
        return NULL;
    for (int i = 0; i < all->n; i++) {
        int same_problem = strcmp(all->s[i].problem_key, key->problem_key) == 0;
        int same_class = strcmp(all->s[i].device_class, key->device_class) == 0;
        rank[i].s = &all->s[i];
        rank[i].relation = same_problem ? 0 : same_class ? 1 : 2;
        rank[i].distance =
            same_problem ? 0 : warm_start_problem_distance(all->s[i].problem, problem);
    }
    qsort(rank, (size_t)all->n, sizeof *rank, ranked_cmp);
    return rank;
}

/* `first`: the predictor's top-k for this problem (source -1, no time), then the n sources'
 * best interleaved, each configuration once. This is the only place that builds `first`. */
static void fill_first(json_t *first, const json_t *predicted, const space *sp, json_t *const *per,
                       int n)
{
    size_t pi;
    json_t *cand;
    json_array_foreach(json_object_get(predicted, "candidates"), pi, cand)
    {
        const json_t *config = json_object_get(cand, "config");
        config_id id;
        kt_error ignored;
        if (json_array_size(first) >= WARM_PREDICTED)
            break;
        if (!config || space_config_from_json(sp, config, &id, &ignored) < 0 ||
            has_config(first, config))
            continue;
        json_array_append_new(
            first, json_pack("{s:O, s:n, s:i}", "config", config, "time_ms", "source", -1));
    }
    for (size_t r = 0, any = 1; any && json_array_size(first) < WARM_FIRST; r++) {
        any = 0;
        for (int s = 0; s < n && json_array_size(first) < WARM_FIRST; s++) {
            json_t *e = json_array_get(per[s], r);
            if (e && r < WARM_FIRST_PER_SOURCE) {
                any = 1;
                if (!has_config(first, json_object_get(e, "config")))
                    json_array_append(first, e);
            }
        }
    }
}

json_t *warm_start_gather(PGconn *c, const target_key *key, const json_t *problem, const space *sp,
                          const json_t *predicted, kt_error *err)
{
    history_sources all;
    ranked_source *rank = NULL;
    json_t *res = NULL, *first = json_array(), *prior = json_array(), *srcs = json_array();
    json_t *per[WARM_MAX_SOURCES] = {0};
    int n = 0;

    memset(&all, 0, sizeof all);
    if (!first || !prior || !srcs) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory gathering history");
        goto out;
    }
    if (history_store_sources(c, key->kernel, key->device_class, key->problem_key, &all, err) < 0)
        goto out;
    if (!(rank = rank_sources(&all, key, problem))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory gathering history");
        goto out;
    }
    for (int i = 0; i < all.n && n < WARM_MAX_SOURCES; i++) {
        history_trials t;
        int room = WARM_MAX_PRIOR - (int)json_array_size(prior);
        int in_prior = rank[i].relation == 0 && room > WARM_FIRST_PER_SOURCE;
        int limit = !in_prior                      ? WARM_FIRST_PER_SOURCE
                    : room < WARM_PRIOR_PER_SOURCE ? room
                                                   : WARM_PRIOR_PER_SOURCE;
        if (history_store_source_trials(c, key->kernel, rank[i].s->device_class,
                                        rank[i].s->problem_key, limit, &t, err) < 0)
            goto out;
        per[n] = json_array();
        int got = per[n] ? map_trials(&t, sp, n, per[n]) : -1;
        history_trials_release(&t);
        if (got < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory gathering history");
            goto out;
        }
        if (got == 0) { /* nothing of it fits this space (other parameters): not a source */
            json_decref(per[n]);
            per[n] = NULL;
            continue;
        }
        json_array_append_new(srcs, json_pack("{s:s, s:s, s:i, s:f, s:i}", "device_class",
                                              rank[i].s->device_class, "problem_key",
                                              rank[i].s->problem_key, "relation", rank[i].relation,
                                              "distance", rank[i].distance, "configurations", got));
        if (in_prior)
            json_array_extend(prior, per[n]);
        n++;
    }
    fill_first(first, predicted, sp, per, n);
    res = json_pack("{s:O, s:O, s:O, s:O*}", "first", first, "prior", prior, "sources", srcs,
                    "model", json_object_get(predicted, "model"));
    if (!res)
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory gathering history");
out:
    for (int s = 0; s < WARM_MAX_SOURCES; s++)
        json_decref(per[s]);
    free(rank);
    history_sources_release(&all);
    json_decref(first);
    json_decref(prior);
    json_decref(srcs);
    return res;
}

int warm_start_prepare(PGconn *c, const job_row *row, const target *t, model_cache *models,
                       warm_start *ws, kt_error *err)
{
    const space *sp = t->sp;
    json_t *gathered = NULL, *predicted = NULL;
    const json_t *used = row->history_used;
    int rc = -1, stored = 0;

    memset(ws, 0, sizeof *ws);
    if (!row->history || strcmp(row->history, "auto") != 0) {
        rc = 0;
        goto out;
    }
    if (!used) {
        kt_error why;
        kt_error_clear(&why);
        if (models && model_cache_predict(models, c, t, WARM_PREDICTED, &predicted, &why) < 0)
            log_warn("job %lld: no prediction for its warm start: %s", row->id, why.message);
        gathered = warm_start_gather(c, &row->target.key, row->target.problem, sp, predicted, err);
        if (!gathered || job_store_set_history_used(c, row->id, gathered, &stored, err) < 0)
            goto out;
        if (!stored) { /* recorded meanwhile by an earlier run: never two histories for a job */
            kt_error_set(err, KT_ERR_CONFLICT,
                         "job %lld: its history was recorded by another run; reopen it", row->id);
            goto out;
        }
        used = gathered;
        log_info("job %lld: history of %zu sources, %zu configurations first, %zu prior trials",
                 row->id, json_array_size(json_object_get(used, "sources")),
                 json_array_size(json_object_get(used, "first")),
                 json_array_size(json_object_get(used, "prior")));
    }
    rc = warm_start_from_used(used, sp, ws, err);
out:
    json_decref(predicted);
    json_decref(gathered);
    return rc;
}
