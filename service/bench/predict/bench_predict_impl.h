/* bench/predict/bench_predict_impl — internal to `ktune bench --predict` (bench_predict*.c only):
 * the loaded measurement caches, resolved against the kernel catalog, as training sets.
 *
 * Lifecycle: bench_predict_load fills a bp_data (everything in it owned by it) ->
 * bench_predict_run reads it (and, with --measure, adds to it through bp_measure) ->
 * bp_data_free. */
#ifndef KT_BENCH_PREDICT_IMPL_H
#define KT_BENCH_PREDICT_IMPL_H

#include <stdio.h>

#include "catalog/catalog.h"
#include "measure/backend.h"
#include "model/training_set.h"
#include "bench/bench_mcache.h"
#include "bench/predict/bench_predict.h"

typedef struct bp_problem {
    char *path;       /* the cache file (the first one of this problem) */
    json_t *header;   /* its header line */
    target t;         /* resolved: canonical problem and its space on this machine */
    bench_mcache *mc; /* --measure: opened on the first measurement */
} bp_problem;

typedef struct bp_data {
    catalog *cat;
    backend *b;        /* --measure: opened on the first measurement */
    bp_problem *probs; /* indexed like the problems of all */
    int n;
    training_set *all;    /* ok trials */
    training_set *failed; /* configurations measured and failed (time 1): never a candidate time */
    json_t *warnings;     /* array of strings */
    const json_t *header; /* the first file's header (borrowed from probs[0]) */
    long long lines, skipped;
    /* how the spaces were built: {device_class, limits_from ("probed" or the --replay-as file),
     * kernel_hash (here)}; set by bench_predict_load */
    json_t *spaces;
} bp_data;

/* Reads every *.jsonl of the folders, checks that they are one kernel (and source hash) on one
 * device class, resolves each problem with the catalog (probing this machine's devices, or with
 * --replay-as the recorded device: no probe) and fills the training sets. With --measure, a cache
 * of another CPU class or kernel source is refused (KT_ERR_CONFLICT); with --replay-as, a cache of
 * another class than the record's; otherwise it is a warning. 0, or -1 with err. */
int bench_predict_load(const bench_predict_options *opt, const char *exe_dir, bp_data *d,
                       FILE *progress, kt_error *err);
void bp_data_free(bp_data *d);
/* Measures value-index row of problem di on the device (reusing the cache file: a configuration
 * already there is not measured again) and records it in d->all or d->failed. Returns 1 with
 * *time_ms (ok), 0 failed (status in *status), -1 with err. */
int bp_measure(bp_data *d, int di, const int *row, double *time_ms, const char **status,
               kt_error *err);

#endif
