/* bench/fisher/bench_fisher_args — the options of `ktune bench --fisher` and their parsing (see
 * bench_fisher.h). */
#include <stddef.h>
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
    {.name = "--networks",
     .kind = KT_OPT_STRING,
     .offset = O(networks_dir),
     .arg = "--networks DIR",
     .help = "preset networks (*.json) [<ktune>/../networks]"},
    {.name = "--network",
     .kind = KT_OPT_STRINGS,
     .offset = O(names),
     .count_offset = O(n_names),
     .hi = BENCH_FISHER_MAX_NETWORKS,
     .arg = "--network NAME",
     .help = "only this preset (repeatable) [all]"},
    {.name = "--data",
     .kind = KT_OPT_CALLBACK,
     .cb = bench_fisher_opt_data,
     .arg = "--data SET",
     .help = "fashion-mnist (Debian's package) or fashion-mnist-small\n"
             "(the copy shipped in DIR/data) [fashion-mnist]"},
    {.name = "--train-images",
     .kind = KT_OPT_INT,
     .offset = O(train_images),
     .lo = 0,
     .hi = NN_DATASET_MAX_IMAGES,
     .arg = "--train-images N",
     .help = "first N training images [all]"},
    {.name = "--test-images",
     .kind = KT_OPT_INT,
     .offset = O(test_images),
     .lo = 0,
     .hi = NN_DATASET_MAX_IMAGES,
     .arg = "--test-images N",
     .help = "first N test images [all]"},
    {.name = "--epochs",
     .kind = KT_OPT_INT,
     .offset = O(epochs),
     .lo = 1,
     .hi = 1000,
     .arg = "--epochs N",
     .help = "training epochs [3]; --batch N [64]; --lr X [0.05]"},
    {.name = "--batch", .kind = KT_OPT_INT, .offset = O(batch), .lo = 1, .hi = 1024},
    {.name = "--lr", .kind = KT_OPT_DOUBLE, .offset = O(lr), .lo = 1e-12, .hi = 10},
    {.name = "--threshold",
     .kind = KT_OPT_DOUBLE,
     .offset = O(threshold),
     .lo = 1e-12,
     .hi = 1000,
     .arg = "--threshold R",
     .help = "accepted when Fisher ratio >= R [1.0]"},
    {.name = "--train-accepted",
     .kind = KT_OPT_INT,
     .offset = O(train_accepted),
     .lo = 0,
     .hi = 100,
     .arg = "--train-accepted N",
     .help = "accepted variants trained per network [3]"},
    {.name = "--train-rejected",
     .kind = KT_OPT_INT,
     .offset = O(train_rejected),
     .lo = 0,
     .hi = 100,
     .arg = "--train-rejected N",
     .help = "rejected variants trained per network [3]"},
    {.name = "--fisher-batch",
     .kind = KT_OPT_INT,
     .offset = O(fisher_batch),
     .lo = 2,
     .hi = 1024,
     .arg = "--fisher-batch N",
     .help = "images of the Fisher minibatch [64]"},
    {.name = "--seed",
     .kind = KT_OPT_SEED,
     .offset = O(seed),
     .arg = "--seed N",
     .help = "initialisation, shuffling and minibatch seed [1]"},
    {.name = "--json",
     .kind = KT_OPT_STRING,
     .offset = O(json_path),
     .arg = "--json FILE",
     .help = "the whole result as one JSON line"},
    {.name = "--from-json",
     .kind = KT_OPT_STRING,
     .offset = O(from_json),
     .arg = "--from-json FILE",
     .help = "reprint the tables of a saved result (no training)"},
    {.name = "--log-level",
     .kind = KT_OPT_CALLBACK,
     .offset = O(log_level),
     .cb = bench_opt_log_level},
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_fisher_table = {
    .options = bench_fisher_option_list,
    .mode = "--fisher",
    .usage = "\n"
             "usage: ktune bench --fisher [--networks DIR] [--network NAME]... [--data SET]\n"
             "                   [--train-images N] [--test-images N] [--epochs N] [--batch N]\n"
             "                   [--lr X] [--threshold R] [--train-accepted N]\n"
             "                   [--train-rejected N] [--fisher-batch N] [--seed N]\n"
             "                   [--json FILE] [--from-json FILE] [--log-level LEVEL]\n"
             "\n"
             "The Fisher Potential check validated (issue 14): per preset network, variants\n"
             "(one layer grouped, bottlenecked, or by Sequences 1-3; whole-network\n"
             "combinations) scored by Fisher Potential at initialisation, accepted when\n"
             "their ratio to the original is at least the threshold; the original and some\n"
             "accepted and rejected ones trained with the same seed and schedule; test\n"
             "accuracies, Spearman rank correlation of Fisher Potential and accuracy, and the\n"
             "time of one check against one training.\n"
             "\n"};

int bench_fisher_wanted(int argc, char **argv)
{
    static const char *const selectors[] = {"--fisher", NULL};
    return bench_args_has(argc, argv, selectors);
}

void bench_fisher_usage(FILE *out)
{
    kt_opt_usage(&bench_fisher_table, out);
}

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
}

const bench_args bench_fisher_args = {&bench_fisher_table, bench_fisher_defaults, NULL,
                                      bench_fisher_usage};

int bench_fisher_parse_args(int argc, char **argv, bench_fisher_options *opt, char *msg, size_t cap,
                            FILE *out)
{
    return bench_args_parse(&bench_fisher_args, argc, argv, opt, msg, cap, out);
}
