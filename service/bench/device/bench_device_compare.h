/* bench/device/bench_device_compare — Welch's t-tests between the rows of a device bench, read from
 * the result's "strategies" member (so a saved --json can be tested again). Internal to bench/. */
#ifndef KT_BENCH_DEVICE_COMPARE_H
#define KT_BENCH_DEVICE_COMPARE_H

#include <jansson.h>

/* For each label in tested (a JSON array of row labels) against every other row: Welch's t-test
 * (bench_stats.h) of the per-seed best times (ms, not their logarithm: the paper compares costs)
 * at strategies[row][member][key].per_seed, member "checkpoints" or "time_checkpoints". Returns
 * [{"a","b","n_a","n_b","mean_a","mean_b","t","df","p","p_holm","lower_by"}] (t, df, p, p_holm
 * null when the test is undefined: a seed found nothing, fewer than 2 seeds, or no spread),
 * lower_by = 1 - mean_a / mean_b, p_holm the p-value adjusted by Holm's step-down correction over
 * the family of the tests made in this array (bench_stats_holm: the report marks significance by
 * it, not by the raw p). A pair is tested once (a tested row against an earlier tested row is
 * skipped). New reference, NULL when out of memory. */
json_t *bench_device_welch_json(const json_t *strategies, const json_t *tested, const char *member,
                                const char *key);

#endif
