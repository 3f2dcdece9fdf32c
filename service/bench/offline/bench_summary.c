/* bench/offline/bench_summary — averages over spaces and the warm-start summary (see
 * bench_summary.h). */
#include "bench/offline/bench_summary.h"

#include <stdio.h>

/* Mean of a numeric field over spaces (nulls skipped); null when none. */
static json_t *bench_mean_of(const json_t *spaces, const char *strategy, const char *group,
                             const char *key)
{
    double sum = 0;
    int n = 0;
    size_t i;
    json_t *sp;
    json_array_foreach(spaces, i, sp)
    {
        const json_t *st = json_object_get(json_object_get(sp, "strategies"), strategy);
        const json_t *v =
            group ? json_object_get(json_object_get(st, group), key) : json_object_get(st, key);
        if (json_is_number(v)) {
            sum += json_number_value(v);
            n++;
        }
    }
    return n ? json_real(sum / n) : json_null();
}

void bench_warm_name(const char *strategy, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s+history", strategy);
}

/* {"<key>": mean of group.key over spaces} for each integer of list. */
static json_t *bench_mean_group(const json_t *spaces, const char *name, const char *group,
                                const json_t *list)
{
    json_t *o = json_object(), *cp;
    size_t i;
    json_array_foreach(list, i, cp)
    {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
        json_object_set_new(o, key, bench_mean_of(spaces, name, group, key));
    }
    return o;
}

static json_t *bench_mean_median(const json_t *spaces, const char *name, const char *group)
{
    return json_pack("{s:o, s:o}", "median", bench_mean_of(spaces, name, group, "median"),
                     "success_rate", bench_mean_of(spaces, name, group, "success_rate"));
}

json_t *bench_averages(const bench_options *opt, const json_t *spaces, const json_t *checkpoints,
                       const json_t *clocks, const json_t *round_checkpoints, json_t **summary_out)
{
    json_t *avg = json_object(), *summary = json_object();
    int n_runs = opt->n_strategies * (opt->n_history > 0 ? 2 : 1);

    for (int r = 0; avg && summary && r < n_runs; r++) {
        char warm[80];
        const char *name = opt->strategies[r % opt->n_strategies];
        if (r >= opt->n_strategies) {
            bench_warm_name(name, warm, sizeof warm);
            name = warm;
        }
        json_t *fr = bench_mean_group(spaces, name, "fraction", checkpoints);
        json_object_set_new(summary, name, json_copy(fr));
        json_object_set_new(
            avg, name,
            json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "fraction", fr,
                      "evals_to_5pct", bench_mean_median(spaces, name, "evals_to_5pct"),
                      "clock_fraction", bench_mean_group(spaces, name, "clock_fraction", clocks),
                      "clock_to_5pct_s", bench_mean_median(spaces, name, "clock_to_5pct_s"),
                      "overhead_us", bench_mean_of(spaces, name, NULL, "overhead_us"),
                      "overhead_at_400_us", bench_mean_of(spaces, name, NULL, "overhead_at_400_us"),
                      "rounds_fraction",
                      bench_mean_group(spaces, name, "rounds_fraction", round_checkpoints),
                      "rounds_to_5pct", bench_mean_median(spaces, name, "rounds_to_5pct"), "score",
                      bench_mean_of(spaces, name, NULL, "score"), "score_beyond",
                      bench_mean_of(spaces, name, NULL, "score_beyond")));
    }
    *summary_out = summary;
    return avg;
}

json_t *bench_warm_summary(const bench_options *opt, const json_t *spaces,
                           const json_t *checkpoints)
{
    json_t *with = json_array(), *strat = json_object();
    size_t i;
    json_t *sp;
    json_array_foreach(spaces, i, sp)
    {
        if (json_array_size(json_object_get(sp, "history")) > 0)
            json_array_append(with, json_object_get(sp, "name"));
    }
    for (int s = 0; strat && s < opt->n_strategies; s++) {
        char warm[80];
        bench_warm_name(opt->strategies[s], warm, sizeof warm);
        json_t *cold_f = json_object(), *warm_f = json_object();
        size_t k;
        json_t *cp;
        json_array_foreach(checkpoints, k, cp)
        {
            char key[16];
            double sc = 0, sw = 0;
            int n = 0;
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
            json_array_foreach(spaces, i, sp)
            {
                const json_t *st = json_object_get(sp, "strategies");
                const json_t *w =
                    json_object_get(json_object_get(json_object_get(st, warm), "fraction"), key);
                const json_t *c = json_object_get(
                    json_object_get(json_object_get(st, opt->strategies[s]), "fraction"), key);
                if (json_is_number(w) && json_is_number(c)) {
                    sw += json_number_value(w);
                    sc += json_number_value(c);
                    n++;
                }
            }
            json_object_set_new(cold_f, key, n ? json_real(sc / n) : json_null());
            json_object_set_new(warm_f, key, n ? json_real(sw / n) : json_null());
        }
        json_object_set_new(strat, opt->strategies[s],
                            json_pack("{s:o, s:o}", "cold", cold_f, "warm", warm_f));
    }
    return json_pack("{s:o, s:i, s:s, s:o}", "spaces", with, "first", opt->history_first, "times",
                     opt->history_shuffle  ? "shuffled"
                     : opt->history_invert ? "inverted"
                                           : "as recorded",
                     "strategies", strat);
}
