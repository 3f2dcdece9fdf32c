/* bench/bench_cutoff — the cut-offs of one run of `ktune bench --device` (see bench_cutoff.h). */
#include "bench/bench_cutoff.h"

#include <math.h>
#include <jansson.h>

/* Limits are compared in seconds as the backend computed them; a deadline recomputed from the
 * same best time is equal up to rounding. */
#define CUTOFF_EPS_S 1e-9

static double cutoff_extra(const trial_result *r, const char *key)
{
    const json_t *v = r->extras ? json_object_get(r->extras, key) : NULL;
    double d = json_is_number(v) ? json_number_value(v) : 0;
    return isfinite(d) && d > 0 ? d : 0;
}

bench_cut_kind bench_cutoff_kind(const trial_result *r, double *at_s)
{
    *at_s = 0;
    if (r->status != TRIAL_TIMEOUT)
        return BENCH_CUT_NONE;
    if ((*at_s = cutoff_extra(r, "call_limit_s")) > 0)
        return BENCH_CUT_CALL;
    if ((*at_s = cutoff_extra(r, "deadline_s")) > 0)
        return BENCH_CUT_DEADLINE;
    return BENCH_CUT_NONE;
}

int bench_cutoff_supersedes(const trial_result *stored, const trial_result *fresh)
{
    double s_at, f_at;
    bench_cut_kind s = bench_cutoff_kind(stored, &s_at), f = bench_cutoff_kind(fresh, &f_at);
    if (s == BENCH_CUT_NONE)
        return 0;
    if (f == BENCH_CUT_NONE)
        return trial_status_is_final(fresh->status);
    return f == s && f_at > s_at + CUTOFF_EPS_S;
}

/* A copy of entry with its own extras (NULL when out of memory: then none). */
static void cutoff_copy(const trial_result *entry, trial_result *out)
{
    *out = *entry;
    out->extras = entry->extras ? json_deep_copy(entry->extras) : NULL;
}

/* The timeout a run's call limit gives: extras as the real backend writes them. */
static void cutoff_timeout(const trial_result *entry, double limit_s, double measure_ms,
                           double from_ms, trial_result *out)
{
    trial_result_init(out);
    out->status = TRIAL_TIMEOUT;
    out->compile_ms = entry->compile_ms;
    out->measure_ms = measure_ms;
    out->extras = json_pack("{s:f, s:s}", "call_limit_s", limit_s, "reason",
                            "a kernel call took longer than slow_factor x the run's best time; "
                            "given up on (judged from the measurement cache)");
    if (out->extras && from_ms > 0)
        json_object_set_new(out->extras, "cut_from_time_ms", json_real(from_ms));
}

int bench_cutoff_verdict(const trial_result *entry, const bench_cutoff *run, trial_result *out)
{
    double at;
    double limit = run->call_limit_s > 0 ? run->call_limit_s : 0;
    switch (bench_cutoff_kind(entry, &at)) {
    case BENCH_CUT_CALL: {
        if (!(limit > 0) || limit > at + CUTOFF_EPS_S)
            return 0;
        double ms = entry->measure_ms - (at - limit) * 1e3;
        cutoff_timeout(entry, limit, ms > limit * 1e3 ? ms : limit * 1e3, 0, out);
        return 1;
    }
    case BENCH_CUT_DEADLINE:
        if (!(run->deadline_s > 0) || run->deadline_s > at + CUTOFF_EPS_S)
            return 0;
        cutoff_copy(entry, out);
        return 1;
    case BENCH_CUT_NONE:
        break;
    }
    /* The runner gives up when any one call passes the limit: judge the slowest timed call when
     * the entry has it, the median otherwise (older runners' caches replay as before). */
    double slowest = cutoff_extra(entry, "max_ms");
    double judged = slowest > entry->time_ms ? slowest : entry->time_ms;
    if (entry->status == TRIAL_OK && limit > 0 && judged > limit * 1e3) {
        cutoff_timeout(entry, limit, limit * 1e3, judged, out);
        return 1;
    }
    cutoff_copy(entry, out);
    return 1;
}
