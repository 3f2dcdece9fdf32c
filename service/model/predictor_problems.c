/* model/predictor_problems — the table of tuned problems behind the neighbourhood kinds (nearest in
 * predictor_simple.c, local in predictor_local.c): per problem the log2 of its features and its
 * fastest rows, with their time over the problem's best when ratios are kept; the distance of a
 * problem to each; the table in a model's meta and back. */
#include "model/predictor_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double problems_log2(double v)
{
    return log2(v < 1 ? 1 : v);
}

void pred_problems_free(pred_problems *t)
{
    free(t->lg);
    free(t->off);
    free(t->rows);
    free(t->rat);
    *t = (pred_problems){0};
}

/* Room for n problems and total rows (ratios: their ratios too); -1 out of memory (t empty). */
static int problems_alloc(pred_problems *t, const predictor *p, int n, int total, int ratios)
{
    size_t nt = (size_t)(total ? total : 1);
    t->n = n;
    t->lg = malloc((size_t)(n ? n : 1) * (size_t)p->nf * sizeof *t->lg);
    t->off = calloc((size_t)n + 1, sizeof *t->off);
    t->rows = malloc(nt * (size_t)p->np * sizeof *t->rows);
    t->rat = ratios ? malloc(nt * sizeof *t->rat) : NULL;
    if (!t->lg || !t->off || !t->rows || (ratios && !t->rat)) {
        pred_problems_free(t);
        return -1;
    }
    return 0;
}

int pred_problems_train(pred_problems *t, const predictor *p, const training_set *ts, int cap,
                        int ratios)
{
    int n = 0, total = 0, j = 0, at = 0;
    for (int i = 0; i < training_set_num_problems(ts); i++) {
        int k = training_set_num_trials(ts, i);
        n += k > 0;
        total += k < cap ? k : cap;
    }
    if (problems_alloc(t, p, n, total, ratios) < 0)
        return -1;
    for (int i = 0; i < training_set_num_problems(ts); i++) {
        int k = training_set_num_trials(ts, i);
        double best;
        if (k == 0)
            continue;
        training_set_trial(ts, i, 0, &best);
        const double *a = training_set_problem_args(ts, i);
        for (int q = 0; q < p->nf; q++)
            t->lg[(size_t)j * (size_t)p->nf + (size_t)q] = problems_log2(a[q]);
        t->off[j] = at;
        for (int r = 0; r < k && r < cap; r++, at++) {
            double ms;
            memcpy(t->rows + (size_t)at * (size_t)p->np, training_set_trial(ts, i, r, &ms),
                   (size_t)p->np * sizeof *t->rows);
            if (t->rat)
                t->rat[at] = ms / best;
        }
        j++;
    }
    t->off[j] = at;
    return 0;
}

void pred_problems_dist(const pred_problems *t, const predictor *p, const double *args,
                        double *dist)
{
    for (int i = 0; i < t->n; i++) {
        double s = 0;
        for (int q = 0; q < p->nf; q++) {
            double x = t->lg[(size_t)i * (size_t)p->nf + (size_t)q] - problems_log2(args[q]);
            s += x * x;
        }
        dist[i] = sqrt(s);
    }
}

int pred_problems_save(const pred_problems *t, const predictor *p, json_t *meta, kt_error *err)
{
    json_t *probs = json_array();
    for (int i = 0; probs && i < t->n; i++) {
        json_t *lg = json_array(), *rows = json_array(), *rat = t->rat ? json_array() : NULL;
        for (int q = 0; lg && q < p->nf; q++)
            json_array_append_new(lg, json_real(t->lg[(size_t)i * (size_t)p->nf + (size_t)q]));
        for (int r = t->off[i]; rows && r < t->off[i + 1]; r++) {
            json_array_append_new(rows, pred_int_array(t->rows + (size_t)r * (size_t)p->np, p->np));
            if (rat)
                json_array_append_new(rat, json_real(t->rat[r]));
        }
        json_t *o = lg && rows && (rat || !t->rat)
                        ? json_pack("{s:o, s:o}", "log2_args", lg, "rows", rows)
                        : NULL;
        if (o && rat && json_object_set_new(o, "ratios", rat) != 0) {
            json_decref(o);
            o = NULL;
        }
        if (!o || json_array_append_new(probs, o) != 0) {
            json_decref(probs);
            probs = NULL;
        }
    }
    if (!probs || json_object_set_new(meta, "problems", probs) != 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return 0;
}

int pred_problems_load(pred_problems *t, const predictor *p, const json_t *meta, int ratios,
                       kt_error *err)
{
    const char *kind = p->ops->name;
    const json_t *probs = json_object_get(meta, "problems");
    int n = json_is_array(probs) ? (int)json_array_size(probs) : -1, total = 0, at = 0;
    for (int i = 0; i < n; i++) {
        const json_t *rows = json_object_get(json_array_get(probs, (size_t)i), "rows");
        total += json_is_array(rows) ? (int)json_array_size(rows) : 0;
    }
    if (n < 0 || total >= (1 << 24) || problems_alloc(t, p, n, total, ratios) < 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s model: bad \"problems\"", kind);
    for (int i = 0; i < n; i++) {
        const json_t *o = json_array_get(probs, (size_t)i), *lg = json_object_get(o, "log2_args");
        const json_t *rows = json_object_get(o, "rows"), *rat = json_object_get(o, "ratios");
        if (!json_is_array(lg) || json_array_size(lg) != (size_t)p->nf || !json_is_array(rows) ||
            (ratios && (!json_is_array(rat) || json_array_size(rat) != json_array_size(rows))))
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s model: bad problem %d", kind, i);
        for (int q = 0; q < p->nf; q++)
            t->lg[(size_t)i * (size_t)p->nf + (size_t)q] =
                json_number_value(json_array_get(lg, (size_t)q));
        t->off[i] = at;
        for (size_t r = 0; r < json_array_size(rows); r++, at++) {
            double x = ratios ? json_number_value(json_array_get(rat, r)) : 1;
            if (!(x >= 1) || !isfinite(x) ||
                pred_read_ints(json_array_get(rows, r), p->np, p->nv,
                               t->rows + (size_t)at * (size_t)p->np) < 0)
                return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s model: bad row", kind);
            if (ratios)
                t->rat[at] = x;
        }
    }
    t->off[n] = at;
    return 0;
}
