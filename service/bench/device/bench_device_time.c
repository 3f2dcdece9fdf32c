/* bench/device/bench_device_time — a device run's best cost by evaluations and by modelled clock,
 * and the default time checkpoints (see bench_device_time.h). */
#include "bench/device/bench_device_time.h"

#include <math.h>

#define TIME_DEFAULT_KEEP 6 /* default checkpoints kept: the last of the 1-2-5 steps */

double bench_device_best_at_eval(const bench_device_run_state *r, int n)
{
    if (r->evals == 0 || n < 1)
        return INFINITY;
    return n <= r->evals ? r->trials[n - 1].best_ms : r->best_ms;
}

double bench_device_best_at_time(const bench_device_run_state *r, double t, int *reached)
{
    int lo = 0, hi = r->evals; /* the first trial with clock_s > t: clocks never decrease */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (r->trials[mid].clock_s <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (reached)
        *reached = r->clock_s >= t;
    return lo == 0 ? INFINITY : r->trials[lo - 1].best_ms;
}

int bench_device_time_checkpoints(const bench_device_options *opt,
                                  const bench_device_run_state *runs, int n_runs, double *out)
{
    static const double steps[] = {1, 2, 5};
    double series[64], longest = 0;
    int n = 0, first;

    if (opt->n_time_checkpoints > 0) {
        for (int k = 0; k < opt->n_time_checkpoints; k++)
            out[k] = opt->time_checkpoints[k];
        return opt->n_time_checkpoints;
    }
    for (int k = 0; k < n_runs; k++)
        longest = runs[k].clock_s > longest ? runs[k].clock_s : longest;
    if (opt->time_budget_s > 0 && longest > opt->time_budget_s)
        longest = opt->time_budget_s; /* the runs stop just past it */
    for (double decade = 1; n < 64 && decade <= BENCH_DEVICE_MAX_TIME_S; decade *= 10) {
        for (int s = 0; s < 3 && n < 64; s++) {
            if (steps[s] * decade <= longest)
                series[n++] = steps[s] * decade;
        }
    }
    first = n > TIME_DEFAULT_KEEP ? n - TIME_DEFAULT_KEEP : 0;
    for (int k = first; k < n; k++)
        out[k - first] = series[k];
    n -= first;
    if (opt->time_budget_s > 0 && (n == 0 || out[n - 1] < opt->time_budget_s))
        out[n++] = opt->time_budget_s;
    return n;
}
