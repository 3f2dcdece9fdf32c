/* bench/offline/bench_report — the readable table of an offline `ktune bench` result (bench_run.h),
 * with Kernel Tuner's reference row when its summary.csv is given. Formats only: runs nothing. */
#ifndef KT_BENCH_REPORT_H
#define KT_BENCH_REPORT_H

#include <jansson.h>
#include <stdio.h>

/* Readable table of a bench_run result. The Kernel Tuner rows (per space and mean) come from the
 * result's "kt_best" (bench_run with a reference); kt_reference (summary.csv of kerneltuner-dev,
 * or NULL) is read only when the result has no "kt_reference" of its own. */
void bench_print_table(const json_t *result, const char *kt_reference, FILE *out);

#endif
