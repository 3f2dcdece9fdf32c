/* bench/fisher/bench_fisher — `ktune bench --fisher`: the validation of the Fisher Potential
 * legality check of issue 14. For each preset network (the *.json files of networks/): the variants
 * (the original; one transformation of one conv layer: group 2/4/8, bottleneck 2, spatial_group 4,
 * unroll_group 4, split_group 2; a few whole-network combinations), each one's Fisher Potential at
 * initialisation (nn_fisher_potential) and ratio to the original's, accepted when the ratio is at
 * least the threshold; then the original, --train-accepted accepted and --train-rejected rejected
 * variants (spread evenly over their Fisher ratios) are trained by nn_train with the same seed and
 * schedule, and the report gives per variant its parameters, Fisher ratio, verdict, test accuracy
 * and the difference to the original's; the Spearman rank correlation between Fisher Potential and
 * final accuracy over the trained variants (per network and over all: each network's Fisher scores
 * taken relative to its original's); the mean time of one legality check (one Fisher computation)
 * against one training.
 *
 * Call order: bench_args_wanted(&bench_fisher_args) -> bench_args_parse ->
 * bench_fisher_run (or, with --from-json, the saved result loaded) -> bench_fisher_print_table, or
 * bench_main (bench_main.h) for all of it. Results are new references. */
#ifndef KT_BENCH_FISHER_H
#define KT_BENCH_FISHER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "bench/bench_parse.h"

#define BENCH_FISHER_MAX_NETWORKS 8
#define BENCH_FISHER_MAX_SEEDS    10 /* --seeds: trainings per variant */
#define BENCH_FISHER_MAX_REPLAY   16 /* --replay FILE (repeatable) */

typedef struct bench_fisher_options {
    const char *networks_dir; /* --networks DIR [<exe_dir>/../networks, else ./networks] */
    const char *names[BENCH_FISHER_MAX_NETWORKS]; /* --network NAME (repeatable) [all presets] */
    int n_names;
    const char *data;    /* --data fashion-mnist|fashion-mnist-small [fashion-mnist] */
    int train_images;    /* --train-images N [0: all] */
    int test_images;     /* --test-images N [0: all] */
    int epochs;          /* --epochs N [3] */
    int batch;           /* --batch N [64] */
    double lr;           /* --lr X [0.05] */
    double threshold;    /* --threshold R [1.0] */
    int train_accepted;  /* --train-accepted N [3] per network */
    int train_rejected;  /* --train-rejected N [3] per network */
    int fisher_batch;    /* --fisher-batch N [64] */
    uint64_t seed;       /* --seed N [1]: initialisation, shuffling, Fisher minibatch */
    int seeds;           /* --seeds K [1]: each trained variant trained with K seeds ... */
    uint64_t train_seed; /* --train-seed N [UINT64_MAX: --seed]: ... train_seed, train_seed+1, ...
                            (the variants, the selection and the Fisher scores follow --seed
                            alone, so runs of other training seeds pool by --replay) */
    int fisher_seeds;    /* --fisher-seeds N [1]: initialisations averaged per Fisher Potential */
    int train_variants;  /* --train-variants N [0]: per network, N variants trained, chosen
                            without their Fisher score (every whole-network one, then single-layer
                            ones at random); 0: --train-accepted / --train-rejected */
    int permutations;    /* --permutations P [100000]: draws of the random check */
    const char *replay[BENCH_FISHER_MAX_REPLAY]; /* --replay FILE: the statistics recomputed */
    int n_replay;
    const char *json_path;
    const char *from_json; /* --from-json FILE: reprint a saved result */
    const char *log_level;
} bench_fisher_options;

/* The --fisher mode's arguments (selected by --fisher): its option table, defaults and --help. */
extern const bench_args bench_fisher_args;
/* The report as JSON (service/bench/README.md, "--fisher", documents the fields). exe_dir places
 * the default networks folder. progress: one line per trained variant (NULL: none). NULL with err:
 * 4xx codes for what was asked (unknown network or data set), KT_ERR_UNAVAILABLE when the data set
 * is absent. */
json_t *bench_fisher_run(const bench_fisher_options *opt, const char *exe_dir, FILE *progress,
                         kt_error *err);
/* The first training seed: --train-seed, else --seed. */
uint64_t bench_fisher_train_seed(const bench_fisher_options *opt);
/* The statistics of a result recomputed from its per-variant measurements (Fisher ratios,
 * verdicts, per-seed accuracies), in place: each network's Spearman, and over all networks the
 * Spearman rank correlation of Fisher ratio and accuracy difference with its p-values, the mean
 * accuracy differences of the accepted and rejected, and the random check of the same acceptance
 * rate (per network as many of its trained candidates drawn at random as Fisher accepted, P
 * draws seeded by seed: a one-sided permutation p that Fisher's accepted are better; per seed
 * too), the timing. 0, or -1 with err (no memory). bench_fisher_run calls it; so does --replay. */
int bench_fisher_summarise(json_t *res, int permutations, uint64_t seed, kt_error *err);
/* --replay: the results in paths pooled and summarised anew: a network met again (same name)
 * must have the same variants and Fisher scores (the same --seed), and its trainings of other
 * training seeds are appended; other networks are added. Data, images, epochs, schedule,
 * threshold and Fisher settings must agree, and every network must end with the same training
 * seeds. NULL with err (4xx for a bad file or a mismatch). */
json_t *bench_fisher_replay(const char *const *paths, int n, int permutations, kt_error *err);
/* Checks a result's structure (a saved one before reprinting it): 0, or -1 with err naming the
 * first missing or out-of-range field. */
int bench_fisher_check(const json_t *res, kt_error *err);
/* The tables for people. */
void bench_fisher_print_table(const json_t *res, FILE *out);
/* Spearman's rank correlation of x and y (n pairs; ties get their mean rank). NAN when n < 2 or
 * either is constant. */
double bench_fisher_spearman(const double *x, const double *y, int n);

#endif
