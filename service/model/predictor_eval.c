/* model/predictor_eval — predictor_evaluate: held-out metrics of a predictor against the measured
 * trials of test problems (see predictor.h). */
#include "model/predictor_impl.h"

#include <math.h>
#include <stdlib.h>

static int eval_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static json_t *eval_num_or_null(int n, double x)
{
    return n > 0 ? json_real(x) : json_null();
}

json_t *predictor_evaluate(predictor *p, const training_set *test, predictor_space_fn space_for,
                           void *ctx, kt_error *err)
{
    int np = p->np, n_test = training_set_num_problems(test), n = 0, measured = 0, perfect = 0;
    int within = 0, *row = malloc((size_t)np * sizeof *row);
    double acc = 0, *ratios = malloc((size_t)(n_test ? n_test : 1) * sizeof *ratios), score;
    json_t *heldout = json_array(), *res = NULL;

    if (!row || !ratios || !heldout) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; i < n_test; i++) {
        double best_ms, t_ms;
        const int *best = training_set_trial(test, i, 0, &best_ms);
        const json_t *problem = training_set_problem(test, i);
        if (!best)
            continue; /* nothing measured ok: nothing to compare with */
        kt_error_clear(err);
        const space *sp = space_for(ctx, problem, err);
        if (!sp) {
            if (err && err->code != KT_OK)
                goto out;
            continue;
        }
        int got = predictor_decode(p, problem, sp, PREDICT_CONSTRAINED, 0, 1, row, &score, err);
        if (got < 0)
            goto out;
        json_t *cfg = got ? training_set_config_json(test, row) : json_null();
        int has_t = got && training_set_find_trial(test, i, row, &t_ms);
        int same = 0;
        for (int q = 0; got && q < np; q++)
            same += row[q] == best[q];
        n++;
        acc += (double)same / np;
        perfect += got && same == np;
        if (has_t) {
            ratios[measured++] = t_ms / best_ms;
            within += t_ms / best_ms <= 1.10;
        }
        json_t *o = json_pack("{s:O, s:o*, s:o, s:f}", "problem", problem, "config", cfg,
                              "predicted_time_ms", has_t ? json_real(t_ms) : json_null(),
                              "best_time_ms", best_ms);
        if (!o || json_array_append_new(heldout, o) != 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
    }
    qsort(ratios, (size_t)measured, sizeof *ratios, eval_dbl_cmp);
    double median = measured == 0       ? 0
                    : measured % 2 == 1 ? ratios[measured / 2]
                                        : (ratios[measured / 2 - 1] + ratios[measured / 2]) / 2;
    res = json_pack("{s:i, s:o, s:o, s:o, s:o, s:i, s:O}", "problems", n, "param_accuracy",
                    eval_num_or_null(n, n ? acc / n : 0), "perfect",
                    eval_num_or_null(n, n ? (double)perfect / n : 0), "top1_ratio_median",
                    eval_num_or_null(measured, median), "top1_within_1_10",
                    eval_num_or_null(measured, measured ? (double)within / measured : 0),
                    "measured", measured, "heldout", heldout);
    if (!res)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    else
        kt_error_clear(err);
out:
    free(row);
    free(ratios);
    json_decref(heldout);
    return res;
}
