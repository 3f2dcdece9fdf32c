/* core/early_stop — the rule that stops timing a configuration early (issue 32, "measure only as
 * long as a decision needs"): one clearly slower than the job's best so far needs no more repeats
 * than it takes to be sure it is slower.
 *
 * ktuned derives a threshold from the job's best (kt_early_stop_above_ms: its median time and the
 * spread of its repeats) and sends it with the measure request; the runner asks kt_early_stop_now
 * after every timed repeat and stops once, after at least `after` repeats, even the fastest repeat
 * so far is above the threshold. Noise on a CPU or GPU only ever makes a repeat slower, so the
 * fastest of a few repeats above best x (1 + margin) says the configuration is slower, and one
 * that comes close keeps the full count of repeats (min_repeats, min_seconds). The margin grows
 * with the best's measured spread (KT_EARLY_STOP_Z times it, at least KT_EARLY_STOP_FLOOR), so a
 * noisy best stops fewer configurations. The spread (kt_early_stop_spread) is how far the best's
 * median lies above its fastest repeat, relative to the median: robust to the few slow outliers
 * of a loaded machine, which inflate a coefficient of variation (one 10x repeat in 100 makes it
 * about 1); the coefficient of variation only where the fastest repeat is unknown.
 *
 * Pure functions of their arguments; no state, nothing to free. */
#ifndef KT_CORE_EARLY_STOP_H
#define KT_CORE_EARLY_STOP_H

/* default repeats before a stop: one or two slow outliers among them do not decide it */
#define KT_EARLY_STOP_AFTER                 3
#define KT_EARLY_STOP_FLOOR                 0.10 /* the least margin over the best, a share of its time */
#define KT_EARLY_STOP_Z                     3.0  /* margin = Z x the best's spread, if larger */
#define KT_EARLY_STOP_UNKNOWN_SPREAD_MARGIN 0.25 /* the best's spread unknown (one repeat) */

/* The best's relative spread: (median_ms - min_ms) / median_ms when 0 < min_ms <= median_ms (the
 * runner's extras.min_ms of an ok CPU trial), else cv when it is a finite number >= 0 (noise_cv),
 * else NAN (unknown). */
double kt_early_stop_spread(double median_ms, double min_ms, double cv);

/* The time above which a configuration may stop early, ms: best_ms x (1 + margin), margin =
 * max(KT_EARLY_STOP_FLOOR, KT_EARLY_STOP_Z x spread), or KT_EARLY_STOP_UNKNOWN_SPREAD_MARGIN when
 * spread is not a finite number >= 0. 0 (no early stop) when best_ms is not a finite number > 0. */
double kt_early_stop_above_ms(double best_ms, double spread);

/* 1 when a measurement whose fastest of n timed repeats took fastest_ms may stop now: after >= 1,
 * n >= after, above_ms > 0 and fastest_ms > above_ms; else 0. */
int kt_early_stop_now(double fastest_ms, int n, int after, double above_ms);

/* When a timing loop stops (the runner's, cpu and cuda alike). */
typedef struct kt_timing_limits {
    int min_repeats, max_repeats;
    double min_seconds, max_seconds;
    int early_after;       /* 0: no early stop */
    double early_above_ms; /* 0: no early stop (kt_early_stop_above_ms) */
} kt_timing_limits;

#define KT_TIMING_GO_ON      0 /* time another repeat */
#define KT_TIMING_DONE       1 /* min_repeats and min_seconds reached, or a maximum */
#define KT_TIMING_EARLY_STOP 2 /* clearly slower than the best (kt_early_stop_now) */

/* After n timed repeats, elapsed_s seconds of timing, the fastest repeat fastest_ms: go on, done,
 * or stopped early. The full count (KT_TIMING_DONE) wins when both apply: a measurement is early
 * stopped only when it took fewer repeats or seconds than it would have. */
int kt_timing_next(const kt_timing_limits *l, int n, double elapsed_s, double fastest_ms);

#endif
