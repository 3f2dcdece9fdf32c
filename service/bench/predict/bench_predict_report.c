/* bench/predict/bench_predict_report — the one prediction report, of `ktune bench --predict` (see
 * bench_predict.h) and of `ktune bench --accel-predict` (bench_accel.h): the users' table (time or
 * EDP of the predicted top-1 and best of the top-5 over the best found, against the targets,
 * training time, size) and seed 001's decoding table (accuracy / perfect / valid for greedy, free
 * and constrained beam at k = 1, 10, 100), both modes' columns, the same helpers. Formats only. */
#include <math.h>
#include <string.h>

#include "bench/accel/bench_accel.h"
#include "bench/bench_paired.h"
#include "bench/predict/bench_predict.h"

static void bp_num(FILE *out, const json_t *v, const char *fmt, int width)
{
    if (json_is_number(v))
        fprintf(out, fmt, width, json_number_value(v));
    else
        fprintf(out, "%*s", width, json_is_string(v) ? json_string_value(v) : "-");
}

/* The targets' verdict from the shares within 1.10x (top-1) and 1.05x (best of top-5); "-" when
 * dash and there is no top-1 share. */
static const char *bp_verdict(const json_t *w1, const json_t *w5, int dash)
{
    int m1 = json_is_number(w1) && json_number_value(w1) >= 0.80;
    int m5 = json_is_number(w5) && json_number_value(w5) >= 0.90;
    if (dash && !json_is_number(w1))
        return "-";
    return m1 && m5 ? "both met" : m1 ? "top1 met" : m5 ? "top5 met" : "missed";
}

/* A predictor's row begins: its name, the top-1 median and share within 1.10x, the verdict (dash:
 * as bp_verdict's). */
static void bp_print_top1(FILE *out, const char *kind, const json_t *t1, const json_t *t5, int dash)
{
    const json_t *w1 = json_object_get(t1, "within_1_10");
    fprintf(out, "%-9s", kind);
    bp_num(out, json_object_get(t1, "median"), " %*.3f", 9);
    bp_num(out, w1, " %*.2f", 8);
    fprintf(out, " %8s", bp_verdict(w1, json_object_get(t5, "within_1_05"), dash));
}

/* The best of the top-5: median and share within 1.05x. */
static void bp_print_top5(FILE *out, const json_t *t5)
{
    bp_num(out, json_object_get(t5, "median"), " %*.3f", 8);
    bp_num(out, json_object_get(t5, "within_1_05"), " %*.2f", 8);
}

/* Seed 001's table: per predictor and decoding, the cells at k = 1, 10, 100; then the wall time. */
static void bp_print_decoding(const json_t *res, const char *against, FILE *out)
{
    static const char *const modes[] = {"greedy", "free", "constrained"};
    static const char *const ks[] = {"1", "10", "100"};
    const char *kind;
    json_t *p;

    fprintf(out,
            "\nseed 001's metrics vs %s: per-parameter accuracy / perfect / valid share (k > 1: "
            "the best-matching of the k)\n",
            against);
    fprintf(out, "%-9s %-12s %20s %20s %20s\n", "predictor", "decoding", "k=1", "k=10", "k=100");
    json_object_foreach(json_object_get(res, "predictors"), kind, p)
    {
        for (int m = 0; m < 3; m++) {
            const json_t *mk = json_object_get(json_object_get(p, "decoding"), modes[m]);
            fprintf(out, "%-9s %-12s", m == 0 ? kind : "", modes[m]);
            for (int k = 0; k < 3; k++) {
                const json_t *c = json_object_get(mk, ks[k]);
                char cell[40];
                if (!c)
                    snprintf(cell, sizeof cell, "-");
                else if (json_is_number(json_object_get(c, "valid")))
                    snprintf(cell, sizeof cell, "%.2f / %.2f / %.2f",
                             json_number_value(json_object_get(c, "param_accuracy")),
                             json_number_value(json_object_get(c, "perfect")),
                             json_number_value(json_object_get(c, "valid")));
                else
                    snprintf(cell, sizeof cell, "%.2f / %.2f / -",
                             json_number_value(json_object_get(c, "param_accuracy")),
                             json_number_value(json_object_get(c, "perfect")));
                fprintf(out, " %20s", cell);
            }
            fputc('\n', out);
        }
    }
    fprintf(out, "\n%.1f s\n", json_number_value(json_object_get(res, "wall_s")));
}

void bench_predict_print_table(const json_t *res, FILE *out)
{
    const json_t *preds = json_object_get(res, "predictors"), *p, *w,
                 *sp = json_object_get(res, "spaces");
    const char *kind;
    size_t i;
    int unmeasured = 0;

    if (strcmp(json_string_value(json_object_get(res, "mode")) ?: "", "predict-pool") == 0) {
        bench_paired_pool_print(res, out);
        return;
    }
    fprintf(out,
            "ktune bench --predict: %s on %s, %lld problems (%lld trained on, %lld held out, "
            "seed %lld), %lld ok trials\n",
            json_string_value(json_object_get(res, "kernel")),
            json_string_value(json_object_get(res, "device_class")),
            json_integer_value(json_object_get(res, "problems")),
            json_integer_value(json_object_get(res, "train_problems")),
            json_integer_value(json_object_get(res, "test_problems")),
            json_integer_value(json_object_get(res, "seed")),
            json_integer_value(json_object_get(res, "ok_trials")));
    if (json_is_object(sp))
        fprintf(out,
                "spaces built as %s (limits: %s), kernel version %s; %lld of %lld trial lines "
                "not in those spaces (skipped)\n",
                json_string_value(json_object_get(sp, "device_class")),
                json_string_value(json_object_get(sp, "limits_from")),
                json_string_value(json_object_get(sp, "kernel_hash")),
                json_integer_value(json_object_get(res, "trials_skipped")),
                json_integer_value(json_object_get(res, "trial_lines")));
    json_array_foreach(json_object_get(res, "warnings"), i, w)
        fprintf(out, "warning: %s\n", json_string_value(w));
    fprintf(out, "\nheld-out problems: time of the prediction / best measured time "
                 "(targets: top-1 <= 1.10x on >= 80%%, best of top-5 <= 1.05x on >= 90%%)\n");
    fprintf(out, "%-9s %9s %8s %8s %5s %5s %8s %8s %5s %5s %9s %10s %8s\n", "predictor", "top1 med",
            "<=1.10x", "target", "n", "unmes", "top5 med", "<=1.05x", "n", "incpl", "train cpu",
            "bytes", "pred ms");
    json_object_foreach((json_t *)preds, kind, p)
    {
        const json_t *t1 = json_object_get(p, "top1"), *t5 = json_object_get(p, "top5");
        bp_print_top1(out, kind, t1, t5, 1);
        fprintf(out, " %5lld %5lld", json_integer_value(json_object_get(t1, "measured")),
                json_integer_value(json_object_get(t1, "unmeasured")));
        bp_print_top5(out, t5);
        fprintf(out, " %5lld %5lld", json_integer_value(json_object_get(t5, "measured")),
                json_integer_value(json_object_get(t5, "incomplete")));
        fprintf(out, " %8.2fs %10lld %8.3f\n", json_number_value(json_object_get(p, "train_cpu_s")),
                json_integer_value(json_object_get(p, "model_bytes")),
                json_number_value(json_object_get(p, "predict_cpu_ms")));
        unmeasured += (int)json_integer_value(json_object_get(t1, "unmeasured")) +
                      (int)json_integer_value(json_object_get(t5, "incomplete"));
    }
    if (unmeasured && !json_is_true(json_object_get(res, "measure")))
        fprintf(out, "(unmes: held-out problems whose predicted top-1 is not in the cache; incpl: "
                     "whose top-5 has one or more not in the cache. Ratios are over the measured "
                     "ones only; --measure measures the rest.)\n");
    bench_paired_print(json_object_get(res, "paired"), out);
    bp_print_decoding(res, "the best measured configuration", out);
}

void bench_accel_predict_print_table(const json_t *res, FILE *out)
{
    const json_t *preds = json_object_get(res, "predictors"), *p,
                 *con = json_object_get(res, "constrained");
    const char *kind;

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
        bp_print_top1(out, kind, t1, t5, 0);
        fprintf(out, " %5lld %7lld %5lld", json_integer_value(json_object_get(t1, "n")),
                json_integer_value(json_object_get(t1, "invalid")),
                json_integer_value(json_object_get(t1, "none")));
        bp_print_top5(out, t5);
        fprintf(out, " %5lld %8.2fs %10lld %8.3f\n", json_integer_value(json_object_get(t5, "n")),
                json_number_value(json_object_get(p, "train_s")),
                json_integer_value(json_object_get(p, "model_bytes")),
                json_number_value(json_object_get(p, "predict_ms")));
    }
    fprintf(out, "(invalid: held-out shapes whose predicted top-1 is not a valid mapping of the "
                 "shape; none: no valid candidate predicted; both count as misses, ratio infinite)"
                 "\n");
    bench_paired_print(json_object_get(res, "paired"), out);
    if (json_is_true(json_object_get(res, "no_grid")))
        fprintf(out, "\n(--no-grid: no decoding grid)\n\n%.1f s\n",
                json_number_value(json_object_get(res, "wall_s")));
    else
        bp_print_decoding(res, "the search's best mapping", out);
}
