/* bench/bench_fisher_args — the options of `ktune bench --fisher` and their parsing (see
 * bench_fisher.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "neural/nn_dataset.h"
#include "bench/bench_fisher.h"
#include "bench/bench_parse.h"

int bench_fisher_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fisher") == 0)
            return 1;
    }
    return 0;
}

void bench_fisher_usage(FILE *out)
{
    fprintf(out,
            "\n"
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
            "\n"
            "  --networks DIR       preset networks (*.json) [<ktune>/../networks]\n"
            "  --network NAME       only this preset (repeatable) [all]\n"
            "  --data SET           fashion-mnist (Debian's package) or fashion-mnist-small\n"
            "                       (the copy shipped in DIR/data) [fashion-mnist]\n"
            "  --train-images N     first N training images [all]\n"
            "  --test-images N      first N test images [all]\n"
            "  --epochs N           training epochs [3]; --batch N [64]; --lr X [0.05]\n"
            "  --threshold R        accepted when Fisher ratio >= R [1.0]\n"
            "  --train-accepted N   accepted variants trained per network [3]\n"
            "  --train-rejected N   rejected variants trained per network [3]\n"
            "  --fisher-batch N     images of the Fisher minibatch [64]\n"
            "  --seed N             initialisation, shuffling and minibatch seed [1]\n"
            "  --json FILE          the whole result as one JSON line\n"
            "  --from-json FILE     reprint the tables of a saved result (no training)\n");
}

int bench_fisher_parse_args(int argc, char **argv, bench_fisher_options *opt, char *msg, size_t cap,
                            FILE *out)
{
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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            bench_fisher_usage(out);
            return 1;
        }
        if (strcmp(a, "--fisher") == 0)
            continue;
        if (!v) {
            snprintf(msg, cap, "%s: needs a value (or is not an option of --fisher)", a);
            return -1;
        }
        i++;
        int rc = 0;
        if (strcmp(a, "--networks") == 0) {
            opt->networks_dir = v;
        } else if (strcmp(a, "--network") == 0) {
            if (opt->n_names == BENCH_FISHER_MAX_NETWORKS) {
                snprintf(msg, cap, "--network: at most %d", BENCH_FISHER_MAX_NETWORKS);
                return -1;
            }
            opt->names[opt->n_names++] = v;
        } else if (strcmp(a, "--data") == 0) {
            if (!nn_dataset_known(v)) {
                snprintf(msg, cap, "--data: '%s' is not fashion-mnist or fashion-mnist-small", v);
                return -1;
            }
            opt->data = v;
        } else if (strcmp(a, "--train-images") == 0) {
            rc = bench_int_flag(a, v, 0, NN_DATASET_MAX_IMAGES, &opt->train_images, msg, cap);
        } else if (strcmp(a, "--test-images") == 0) {
            rc = bench_int_flag(a, v, 0, NN_DATASET_MAX_IMAGES, &opt->test_images, msg, cap);
        } else if (strcmp(a, "--epochs") == 0) {
            rc = bench_int_flag(a, v, 1, 1000, &opt->epochs, msg, cap);
        } else if (strcmp(a, "--batch") == 0) {
            rc = bench_int_flag(a, v, 1, 1024, &opt->batch, msg, cap);
        } else if (strcmp(a, "--lr") == 0) {
            rc = bench_double_flag(a, v, 1e-12, 10, &opt->lr, msg, cap);
        } else if (strcmp(a, "--threshold") == 0) {
            rc = bench_double_flag(a, v, 1e-12, 1000, &opt->threshold, msg, cap);
        } else if (strcmp(a, "--train-accepted") == 0) {
            rc = bench_int_flag(a, v, 0, 100, &opt->train_accepted, msg, cap);
        } else if (strcmp(a, "--train-rejected") == 0) {
            rc = bench_int_flag(a, v, 0, 100, &opt->train_rejected, msg, cap);
        } else if (strcmp(a, "--fisher-batch") == 0) {
            rc = bench_int_flag(a, v, 2, 1024, &opt->fisher_batch, msg, cap);
        } else if (strcmp(a, "--seed") == 0) {
            rc = bench_seed_flag(a, v, &opt->seed, msg, cap);
        } else if (strcmp(a, "--json") == 0) {
            opt->json_path = v;
        } else if (strcmp(a, "--from-json") == 0) {
            opt->from_json = v;
        } else if (strcmp(a, "--log-level") == 0) {
            opt->log_level = v;
        } else {
            snprintf(msg, cap, "%s: not an option of --fisher", a);
            return -1;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}
