/* core/early_stop — see early_stop.h. */
#include "core/early_stop.h"

#include <math.h>

double kt_early_stop_spread(double median_ms, double min_ms, double cv)
{
    if (isfinite(median_ms) && isfinite(min_ms) && min_ms > 0 && min_ms <= median_ms)
        return (median_ms - min_ms) / median_ms;
    return isfinite(cv) && cv >= 0 ? cv : NAN;
}

double kt_early_stop_above_ms(double best_ms, double spread)
{
    if (!isfinite(best_ms) || !(best_ms > 0))
        return 0;
    double margin = KT_EARLY_STOP_UNKNOWN_SPREAD_MARGIN;
    if (isfinite(spread) && spread >= 0) {
        margin = KT_EARLY_STOP_Z * spread;
        if (margin < KT_EARLY_STOP_FLOOR)
            margin = KT_EARLY_STOP_FLOOR;
    }
    return best_ms * (1.0 + margin);
}

int kt_early_stop_now(double fastest_ms, int n, int after, double above_ms)
{
    return after >= 1 && n >= after && above_ms > 0 && isfinite(above_ms) && fastest_ms > above_ms;
}

int kt_timing_next(const kt_timing_limits *l, int n, double elapsed_s, double fastest_ms)
{
    if ((n >= l->min_repeats && elapsed_s >= l->min_seconds) || n >= l->max_repeats ||
        elapsed_s >= l->max_seconds)
        return KT_TIMING_DONE;
    if (kt_early_stop_now(fastest_ms, n, l->early_after, l->early_above_ms))
        return KT_TIMING_EARLY_STOP;
    return KT_TIMING_GO_ON;
}
