/* bench/bench_accel_predict_report — the tables of `ktune bench --accel-predict` (formats only):
 * the users' table (EDP of the predicted top-1 and best of top-5 over the search's best) and seed
 * 001's decoding table, as `ktune bench --predict` prints them. */
#include <math.h>
#include <string.h>

#include "bench/bench_accel.h"

static void num(FILE *out, const json_t *v, const char *fmt, int width)
{
    if (json_is_number(v))
        fprintf(out, fmt, width, json_number_value(v));
    else
        fprintf(out, "%*s", width, json_is_string(v) ? json_string_value(v) : "-");
}

void bench_accel_predict_print_table(const json_t *res, FILE *out)
{
    const json_t *preds = json_object_get(res, "predictors"), *p,
                 *con = json_object_get(res, "constrained");
    const char *kind;
    static const char *const modes[] = {"greedy", "free", "constrained"};
    static const char *const ks[] = {"1", "10", "100"};

    fprintf(out,
            "ktune bench --accel-predict: cnn_layer on accel:%s, %lld sampled layer shapes "
            "(%lld trained on, %lld held out, seed %lld); best mappings per shape: %s, %lld "
            "cost-model evaluations, seed 0 (%.1f s)\n",
            json_string_value(json_object_get(res, "device")),
            json_integer_value(json_object_get(res, "shapes")),
            json_integer_value(json_object_get(res, "train_shapes")),
            json_integer_value(json_object_get(res, "test_shapes")),
            json_integer_value(json_object_get(res, "seed")),
            json_string_value(json_object_get(res, "search")),
            json_integer_value(json_object_get(res, "search_evals")),
            json_number_value(json_object_get(res, "search_s")));
    if (json_is_string(con))
        fprintf(out, "constrained beam: not available (%s); top-1 / top-5 from the free beam\n",
                json_string_value(con));
    fprintf(out, "\nheld-out shapes: EDP of the prediction / best EDP the search found "
                 "(targets of the learned-models issue: top-1 <= 1.10x on >= 80%%, best of "
                 "top-5 <= 1.05x on >= 90%%)\n");
    fprintf(out, "%-9s %9s %8s %8s %5s %7s %5s %8s %8s %5s %9s %10s %8s\n", "predictor", "top1 med",
            "<=1.10x", "target", "n", "invalid", "none", "top5 med", "<=1.05x", "n", "train s",
            "bytes", "pred ms");
    json_object_foreach((json_t *)preds, kind, p)
    {
        const json_t *t1 = json_object_get(p, "top1"), *t5 = json_object_get(p, "top5");
        const json_t *w1 = json_object_get(t1, "within_1_10"),
                     *w5 = json_object_get(t5, "within_1_05");
        int m1 = json_is_number(w1) && json_number_value(w1) >= 0.80;
        int m5 = json_is_number(w5) && json_number_value(w5) >= 0.90;
        fprintf(out, "%-9s", kind);
        num(out, json_object_get(t1, "median"), " %*.3f", 9);
        num(out, w1, " %*.2f", 8);
        fprintf(out, " %8s", m1 && m5 ? "both met" : m1 ? "top1 met" : m5 ? "top5 met" : "missed");
        fprintf(out, " %5lld %7lld %5lld", json_integer_value(json_object_get(t1, "n")),
                json_integer_value(json_object_get(t1, "invalid")),
                json_integer_value(json_object_get(t1, "none")));
        num(out, json_object_get(t5, "median"), " %*.3f", 8);
        num(out, w5, " %*.2f", 8);
        fprintf(out, " %5lld %8.2fs %10lld %8.3f\n", json_integer_value(json_object_get(t5, "n")),
                json_number_value(json_object_get(p, "train_s")),
                json_integer_value(json_object_get(p, "model_bytes")),
                json_number_value(json_object_get(p, "predict_ms")));
    }
    fprintf(out, "(invalid: held-out shapes whose predicted top-1 is not a valid mapping of the "
                 "shape; none: no valid candidate predicted; both count as misses, ratio infinite)"
                 "\n");
    fprintf(out, "\nseed 001's metrics vs the search's best mapping: per-parameter accuracy / "
                 "perfect / valid share (k > 1: the best-matching of the k)\n");
    fprintf(out, "%-9s %-12s %20s %20s %20s\n", "predictor", "decoding", "k=1", "k=10", "k=100");
    json_object_foreach((json_t *)preds, kind, p)
    {
        for (int m = 0; m < 3; m++) {
            const json_t *mk = json_object_get(json_object_get(p, "decoding"), modes[m]);
            fprintf(out, "%-9s %-12s", m == 0 ? kind : "", modes[m]);
            for (int k = 0; k < 3; k++) {
                const json_t *c = json_object_get(mk, ks[k]);
                char cell[40];
                if (!c)
                    snprintf(cell, sizeof cell, "-");
                else
                    snprintf(cell, sizeof cell, "%.2f / %.2f / %.2f",
                             json_number_value(json_object_get(c, "param_accuracy")),
                             json_number_value(json_object_get(c, "perfect")),
                             json_number_value(json_object_get(c, "valid")));
                fprintf(out, " %20s", cell);
            }
            fputc('\n', out);
        }
    }
    fprintf(out, "\n%.1f s\n", json_number_value(json_object_get(res, "wall_s")));
}
