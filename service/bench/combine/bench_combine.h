/* bench/combine/bench_combine — `ktune bench --combine RESULT.json[.gz]...`: the --json results of
 * several `ktune bench --device` runs of one kernel, device and problem (rows measured in parts,
 * each part with its own measurement cache: a configuration measured twice in parallel parts has
 * two values, so one united cache would not replay every row exactly) combined into one report:
 * best ms at the evaluation and time checkpoints (mean, median), box data at the last of each, and
 * Welch's t-test of the --test rows against every other row. Reads only the JSON (per_seed arrays),
 * measures nothing; rows in the order of the files.
 *
 * Call order: bench_combine_args (bench_main's mode table parses with it) -> bench_combine_run
 * (the files read and checked: one experiment, no row twice) -> bench_combine_print_table. */
#ifndef KT_BENCH_COMBINE_H
#define KT_BENCH_COMBINE_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"
#include "bench/bench_parse.h"

#define BENCH_COMBINE_MAX_FILES 64

typedef struct bench_combine_options {
    const char *files[BENCH_COMBINE_MAX_FILES]; /* --combine FILE... */
    int n_files;
    const char *test; /* --test A,B: the rows tested against every other [gbfs,na2c] */
} bench_combine_options;

/* The --combine mode's arguments (selected by --combine): option table, defaults, --help. */
extern const bench_args bench_combine_args;
/* The combined result: {"first": the first file's result, "sources": [lines], "rows": {name: the
 * strategy object of its file}, "test": [row names]}. NULL with err naming the file: unreadable,
 * not JSON, another experiment (kernel, device class, problem, budget, seeds) or other time
 * checkpoints than the first file, a row given twice. */
json_t *bench_combine_run(const bench_combine_options *opt, kt_error *err);
/* The report, as tests/bench/results/gemm_tiled-*-cpu*.txt show it. */
void bench_combine_print_table(const json_t *res, FILE *out);

#endif
