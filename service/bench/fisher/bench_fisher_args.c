/* bench/fisher/bench_fisher_args — the options of `ktune bench --fisher` and their parsing (see
 * bench_fisher.h). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "neural/nn_dataset.h"
#include "bench/fisher/bench_fisher.h"
#include "bench/bench_parse.h"

static int bench_fisher_opt_data(void *o, const kt_option *ko, const char *v, char *msg, size_t cap)
{
    bench_fisher_options *opt = o;
    (void)ko;
    if (!nn_dataset_known(v)) {
        snprintf(msg, cap, "--data: '%s' is not fashion-mnist or fashion-mnist-small", v);
        return -1;
    }
    opt->data = v;
    return 0;
}

#define O(f) offsetof(bench_fisher_options, f)

static const kt_option bench_fisher_option_list[] = {
    {.name = "--fisher", .kind = KT_OPT_FLAG, .flags = KT_OPT_IGNORED},
    KT_OPT_ROW_STRING("--networks", O(networks_dir), 0, 0, "--networks DIR",
                      "preset networks (*.json) [<ktune>/../networks]"),
    {.name = "--network",
     .kind = KT_OPT_STRINGS,
     .offset = O(names),
     .count_offset = O(n_names),
     .hi = BENCH_FISHER_MAX_NETWORKS,
     .arg = "--network NAME",
     .help = "only this preset (repeatable) [all]"},
    KT_OPT_ROW_CALLBACK("--data", 0, 0, 0, bench_fisher_opt_data, "--data SET",
                        "fashion-mnist (Debian's package) or fashion-mnist-small\n"
                        "(the copy shipped in DIR/data) [fashion-mnist]"),
    KT_OPT_ROW_INT("--train-images", O(train_images), 0, NN_DATASET_MAX_IMAGES, 0,
                   "--train-images N", "first N training images [all]"),
    KT_OPT_ROW_INT("--test-images", O(test_images), 0, NN_DATASET_MAX_IMAGES, 0, "--test-images N",
                   "first N test images [all]"),
    KT_OPT_ROW_INT("--epochs", O(epochs), 1, 1000, 0, "--epochs N",
                   "training epochs [3]; --batch N [64]; --lr X [0.05]"),
    KT_OPT_ROW_INT("--batch", O(batch), 1, 1024, 0, NULL, NULL),
    KT_OPT_ROW_DOUBLE("--lr", O(lr), 1e-12, 10, 0, NULL, NULL),
    KT_OPT_ROW_DOUBLE("--threshold", O(threshold), 1e-12, 1000, 0, "--threshold R",
                      "accepted when Fisher ratio >= R [1.0]"),
    KT_OPT_ROW_INT("--train-accepted", O(train_accepted), 0, 100, 0, "--train-accepted N",
                   "accepted variants trained per network [3]"),
    KT_OPT_ROW_INT("--train-rejected", O(train_rejected), 0, 100, 0, "--train-rejected N",
                   "rejected variants trained per network [3]"),
    KT_OPT_ROW_INT("--fisher-batch", O(fisher_batch), 2, 1024, 0, "--fisher-batch N",
                   "images of the Fisher minibatch [64]"),
    BENCH_OPT_SEED(bench_fisher_options, "initialisation, shuffling and minibatch seed [1]"),
    KT_OPT_ROW_INT("--seeds", O(seeds), 1, BENCH_FISHER_MAX_SEEDS, 0, "--seeds K",
                   "trainings per trained variant, training seeds\n"
                   "train-seed..train-seed+K-1 [1]"),
    KT_OPT_ROW_SEED("--train-seed", O(train_seed), "--train-seed N",
                    "first training seed [--seed]; runs of other training\n"
                    "seeds pool by --replay"),
    KT_OPT_ROW_INT("--fisher-seeds", O(fisher_seeds), 1, 16, 0, "--fisher-seeds N",
                   "initialisations averaged per Fisher Potential [1;\n"
                   "the service averages 3]"),
    KT_OPT_ROW_INT("--train-variants", O(train_variants), 0, 1000, 0, "--train-variants N",
                   "per network N variants trained, chosen without\n"
                   "their Fisher score (every whole-network one, then\n"
                   "single-layer ones at random); 0: --train-accepted\n"
                   "and --train-rejected [0]"),
    KT_OPT_ROW_INT("--permutations", O(permutations), 100, 10000000, 0, "--permutations P",
                   "draws of the random check of the same acceptance\nrate [100000]"),
    {.name = "--replay",
     .kind = KT_OPT_STRINGS,
     .offset = O(replay),
     .count_offset = O(n_replay),
     .hi = BENCH_FISHER_MAX_REPLAY,
     .arg = "--replay FILE",
     .help = "a saved result's statistics recomputed from its\n"
             "per-variant measurements (repeatable: networks\n"
             "of runs with the same settings pooled; no training)"},
    BENCH_OPT_JSON(bench_fisher_options, 0, "the whole result as one JSON line"),
    BENCH_OPT_FROM_JSON(bench_fisher_options, "reprint the tables of a saved result (no training)"),
    BENCH_OPT_LOG_LEVEL(bench_fisher_options, 0, NULL),
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_fisher_table = {
    .options = bench_fisher_option_list,
    .mode = "--fisher",
    .usage = "\n"
             "usage: ktune bench --fisher [--networks DIR] [--network NAME]... [--data SET]\n"
             "                   [--train-images N] [--test-images N] [--epochs N] [--batch N]\n"
             "                   [--lr X] [--threshold R] [--train-accepted N]\n"
             "                   [--train-rejected N] [--fisher-batch N] [--seed N]\n"
             "                   [--seeds K] [--train-seed N] [--fisher-seeds N]\n"
             "                   [--train-variants N]\n"
             "                   [--permutations P] [--json FILE] [--from-json FILE]\n"
             "                   [--replay FILE]... [--log-level LEVEL]\n"
             "\n"
             "The Fisher Potential check validated (issue 14): per preset network, variants\n"
             "(one layer grouped, bottlenecked, or by Sequences 1-3; whole-network\n"
             "combinations) scored by Fisher Potential at initialisation, accepted when\n"
             "their ratio to the original is at least the threshold; the original and some\n"
             "accepted and rejected ones trained with the same seed and schedule; test\n"
             "accuracies, Spearman rank correlation of Fisher Potential and accuracy (with\n"
             "its p-value), what Fisher accepts against a random check of the same\n"
             "acceptance rate (a permutation test), and the time of one check against one\n"
             "training.\n"
             "\n"};

static const char *const bench_fisher_selectors[] = {"--fisher", NULL};

static void bench_fisher_defaults(void *o)
{
    bench_fisher_options *opt = o;
    memset(opt, 0, sizeof *opt);
    opt->data = "fashion-mnist";
    opt->epochs = 3;
    opt->batch = 64;
    opt->lr = 0.05;
    opt->threshold = 1.0;
    opt->train_accepted = 3;
    opt->train_rejected = 3;
    opt->fisher_batch = 64;
    opt->seed = 1;
    opt->seeds = 1;
    opt->train_seed = UINT64_MAX;
    opt->fisher_seeds = 1;
    opt->permutations = 100000;
}

const bench_args bench_fisher_args = {bench_fisher_selectors, &bench_fisher_table,
                                      bench_fisher_defaults, NULL, NULL};
