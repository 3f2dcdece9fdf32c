/* bench/device/bench_device_report — the readable report of a `ktune bench --device` result
 * (bench_device.h). Formats only: runs nothing. */
#ifndef KT_BENCH_DEVICE_REPORT_H
#define KT_BENCH_DEVICE_REPORT_H

#include <jansson.h>
#include <stdio.h>

/* Readable report of a bench_device_run result. */
void bench_device_print_table(const json_t *result, FILE *out);

#endif
