/* bench/fisher/bench_fisher — `ktune bench --fisher`: variants, their Fisher Potential, the
 * training of a chosen few and the report (see bench_fisher.h). */
#include "bench/fisher/bench_fisher.h"

#include <math.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/array.h"
#include "core/clock.h"
#include "core/rng.h"

#include "neural/nn_dataset.h"
#include "neural/nn_fisher.h"
#include "neural/nn_network.h"
#include "neural/nn_train.h"

#define BF_PATH_MAX 4096
#define BF_DESC_MAX 160

/* One layer's transformations tried (group 2/4/8, bottleneck 2, Sequences 1-3), and the
 * whole-network combinations (each applied to every conv where it is valid). */
static const nn_transform BF_SINGLE[] = {{2, 1, 0}, {4, 1, 0}, {8, 1, 0}, {1, 2, 0},
                                         {4, 1, 1}, {4, 1, 2}, {2, 1, 3}};
static const nn_transform BF_WHOLE[] = {{2, 1, 0}, {4, 1, 0}, {8, 1, 0},
                                        {1, 2, 0}, {2, 2, 0}, {4, 1, 2}};

typedef struct bf_variant {
    char desc[BF_DESC_MAX];
    nn_transform *per_conv; /* conv_count entries, owned */
    long long params;
    double fisher, fisher_seconds;
    int accepted, trained;
    nn_train_result tr[BENCH_FISHER_MAX_SEEDS]; /* one per training seed */
} bf_variant;

typedef struct bf_net {
    const nn_network *net;
    int convs;
    bf_variant *v; /* v[0]: the original */
    int n;
    size_t cap;
} bf_net;

/* "group g=4", "bottleneck b=2", "spatial_group g=4", "group+bottleneck g=2 b=2". */
static void describe(const nn_transform *t, char *buf, int cap)
{
    char name[64];
    nn_transform_describe(t, name, sizeof name);
    int w = snprintf(buf, (size_t)cap, "%s", name);
    if (t->groups > 1 && w >= 0 && w < cap)
        w += snprintf(buf + w, (size_t)(cap - w), " g=%d", t->groups);
    if (t->bottleneck > 1 && w >= 0 && w < cap)
        snprintf(buf + w, (size_t)(cap - w), " b=%d", t->bottleneck);
}

static void bf_net_free(bf_net *b)
{
    for (int i = 0; i < b->n; i++)
        free(b->v[i].per_conv);
    free(b->v);
    memset(b, 0, sizeof *b);
}

/* Appends a variant holding a copy of per_conv when it is valid for the network (an invalid one is
 * skipped: returns 0). -1 on no memory. */
static int add_variant(bf_net *b, const nn_transform *per_conv, const char *desc, kt_error *err)
{
    kt_error ignored;
    if (!nn_network_transforms_valid(b->net, per_conv, &ignored))
        return 0;
    if (KT_ARRAY_GROW(b->v, b->cap, (size_t)b->n + 1, (size_t)INT_MAX) < 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for variants");
    bf_variant *v = &b->v[b->n];
    memset(v, 0, sizeof *v);
    v->per_conv = malloc((size_t)b->convs * sizeof *v->per_conv);
    if (!v->per_conv)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for variants");
    memcpy(v->per_conv, per_conv, (size_t)b->convs * sizeof *per_conv);
    snprintf(v->desc, sizeof v->desc, "%s", desc);
    v->params = nn_network_params(b->net, per_conv);
    b->n++;
    return 0;
}

/* The original, every single-layer transformation that applies, the whole-network combinations
 * that change at least two layers. */
static int build_variants(bf_net *b, kt_error *err)
{
    int rc = -1;
    kt_error ignored;
    nn_transform *pc = malloc((size_t)b->convs * sizeof *pc);
    char desc[BF_DESC_MAX], what[64];
    if (!pc) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for variants");
        goto done;
    }
    for (int i = 0; i < b->convs; i++)
        pc[i] = nn_transform_identity();
    if (add_variant(b, pc, "original", err) < 0)
        goto done;
    for (int l = 0; l < b->convs; l++) {
        nn_conv_shape s;
        nn_network_conv(b->net, l, &s);
        for (size_t t = 0; t < sizeof BF_SINGLE / sizeof BF_SINGLE[0]; t++) {
            pc[l] = BF_SINGLE[t];
            describe(&BF_SINGLE[t], what, sizeof what);
            snprintf(desc, sizeof desc, "%s: %s", s.name, what);
            if (add_variant(b, pc, desc, err) < 0)
                goto done;
        }
        pc[l] = nn_transform_identity();
    }
    for (size_t t = 0; t < sizeof BF_WHOLE / sizeof BF_WHOLE[0]; t++) {
        int k = 0;
        for (int l = 0; l < b->convs; l++) { /* pc[l] set where valid alone */
            nn_transform one[NN_MAX_LAYERS];
            for (int j = 0; j < b->convs; j++)
                one[j] = nn_transform_identity();
            one[l] = BF_WHOLE[t];
            pc[l] = nn_network_transforms_valid(b->net, one, &ignored) == 1
                        ? BF_WHOLE[t]
                        : nn_transform_identity();
            k += !nn_transform_is_identity(&pc[l]);
        }
        if (k < 2)
            continue;
        describe(&BF_WHOLE[t], what, sizeof what);
        snprintf(desc, sizeof desc, "all: %s (%d of %d convs)", what, k, b->convs);
        if (add_variant(b, pc, desc, err) < 0)
            goto done;
    }
    rc = 0;
done:
    free(pc);
    return rc;
}

uint64_t bench_fisher_train_seed(const bench_fisher_options *opt)
{
    return opt->train_seed == UINT64_MAX ? opt->seed : opt->train_seed;
}

static int cmp_ratio(const void *a, const void *b, void *arg)
{
    const bf_variant *v = arg;
    double x = v[*(const int *)a].fisher, y = v[*(const int *)b].fisher;
    return x < y ? -1 : x > y ? 1 : *(const int *)a - *(const int *)b;
}

/* Marks up to want of the candidates in idx (m of them) trained, spread evenly over their sorted
 * Fisher scores (want 1: the median). */
static void pick_spread(bf_variant *v, int *idx, int m, int want)
{
    if (want <= 0 || m <= 0)
        return;
    qsort_r(idx, (size_t)m, sizeof *idx, cmp_ratio, v);
    if (want >= m) {
        for (int i = 0; i < m; i++)
            v[idx[i]].trained = 1;
        return;
    }
    for (int j = 0; j < want; j++) {
        int k = want == 1 ? m / 2 : (int)lround((double)j * (m - 1) / (want - 1));
        v[idx[k]].trained = 1;
    }
}

/* --train-variants N: N candidates chosen without looking at their Fisher scores (so that what
 * Fisher accepts among them can be compared with a random check): every whole-network variant
 * (their descriptions start with "all:"), then single-layer ones in a seeded random order. */
static int select_blind(bf_net *b, const bench_fisher_options *opt, kt_error *err)
{
    int *single = malloc((size_t)b->n * sizeof *single), ns = 0, left = opt->train_variants;
    if (!single)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for the selection");
    b->v[0].trained = 1;
    for (int i = 1; i < b->n; i++) {
        if (strncmp(b->v[i].desc, "all:", 4) == 0 && left > 0) {
            b->v[i].trained = 1;
            left--;
        } else if (strncmp(b->v[i].desc, "all:", 4) != 0) {
            single[ns++] = i;
        }
    }
    kt_rng r;
    kt_rng_seed(&r, opt->seed ^ 0x5eedf15c5e1ec7ULL);
    for (int i = 0; i < ns && left > 0; i++, left--) { /* a partial Fisher-Yates shuffle */
        int j = i + (int)kt_rng_below(&r, (uint64_t)(ns - i));
        int t = single[i];
        single[i] = single[j];
        single[j] = t;
        b->v[single[i]].trained = 1;
    }
    free(single);
    return 0;
}

static int select_trained(bf_net *b, const bench_fisher_options *opt, kt_error *err)
{
    if (opt->train_variants > 0)
        return select_blind(b, opt, err);
    int *acc = malloc((size_t)b->n * sizeof *acc), *rej = malloc((size_t)b->n * sizeof *rej);
    int na = 0, nr = 0, rc = -1;
    if (!acc || !rej) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for the selection");
        goto done;
    }
    for (int i = 1; i < b->n; i++) {
        if (b->v[i].accepted)
            acc[na++] = i;
        else
            rej[nr++] = i;
    }
    b->v[0].trained = 1;
    pick_spread(b->v, acc, na, opt->train_accepted);
    pick_spread(b->v, rej, nr, opt->train_rejected);
    rc = 0;
done:
    free(acc);
    free(rej);
    return rc;
}

typedef struct bf_progress {
    FILE *out;
    const char *net, *desc;
} bf_progress;

static void on_epoch(void *arg, int epoch, double loss, double acc)
{
    const bf_progress *p = arg;
    if (p->out)
        fprintf(p->out, "  %s / %s: epoch %d loss %.4f test accuracy %.4f\n", p->net, p->desc,
                epoch, loss, acc);
}

/* Fisher of every variant, the verdicts, the selection and the training of one network. */
static int run_network(bf_net *b, const bench_fisher_options *opt, const nn_dataset *train,
                       const nn_dataset *test, FILE *progress, kt_error *err)
{
    nn_fisher_opts fo = nn_fisher_default_opts();
    fo.batch = opt->fisher_batch;
    fo.seed = opt->seed;
    fo.seeds = opt->fisher_seeds;
    for (int i = 0; i < b->n; i++) {
        double t0 = kt_clock_s();
        if (nn_fisher_potential(b->net, b->v[i].per_conv, train, &fo, NULL, &b->v[i].fisher, NULL,
                                err) != 0) {
            kt_error_prefix(err, "%s, %s", nn_network_name(b->net), b->v[i].desc);
            return -1;
        }
        b->v[i].fisher_seconds = kt_clock_s() - t0;
    }
    double f0 = b->v[0].fisher;
    for (int i = 0; i < b->n; i++)
        b->v[i].accepted = f0 > 0 && b->v[i].fisher / f0 >= opt->threshold;
    if (progress)
        fprintf(progress, "%s: %d variants scored (original Fisher %.6g)\n",
                nn_network_name(b->net), b->n, f0);
    if (select_trained(b, opt, err) < 0)
        return -1;
    nn_train_opts to = nn_train_default_opts();
    to.epochs = opt->epochs;
    to.batch = opt->batch;
    to.lr = opt->lr;
    for (int i = 0; i < b->n; i++) {
        if (!b->v[i].trained)
            continue;
        for (int s = 0; s < opt->seeds; s++) {
            bf_progress p = {progress, nn_network_name(b->net), b->v[i].desc};
            nn_train_result *tr = &b->v[i].tr[s];
            to.seed = bench_fisher_train_seed(opt) + (uint64_t)s;
            to.progress = on_epoch;
            to.progress_arg = &p;
            if (nn_train(b->net, b->v[i].per_conv, train, test, &to, tr, err) < 0) {
                kt_error_prefix(err, "training %s, %s", nn_network_name(b->net), b->v[i].desc);
                return -1;
            }
            if (progress)
                fprintf(progress, "%s / %s (seed %llu): accuracy %.4f in %.1f s\n",
                        nn_network_name(b->net), b->v[i].desc, (unsigned long long)to.seed,
                        tr->test_accuracy, tr->seconds);
        }
    }
    return 0;
}

/* A real, or null when not finite (JSON has no NaN). */
static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *variant_json(const bf_net *b, const bf_variant *v, int seeds)
{
    const bf_variant *o = &b->v[0];
    json_t *changes = json_array();
    for (int l = 0; l < b->convs; l++) {
        if (nn_transform_is_identity(&v->per_conv[l]))
            continue;
        nn_conv_shape s;
        nn_network_conv(b->net, l, &s);
        json_array_append_new(
            changes, json_pack("{s:s,s:i,s:i,s:i}", "conv", s.name, "groups", v->per_conv[l].groups,
                               "bottleneck", v->per_conv[l].bottleneck, "seq", v->per_conv[l].seq));
    }
    json_t *j = json_pack("{s:s,s:o,s:I,s:o,s:o,s:o,s:b,s:o,s:b}", "description", v->desc,
                          "changes", changes, "params", (json_int_t)v->params, "params_ratio",
                          num((double)v->params / (double)o->params), "fisher", num(v->fisher),
                          "fisher_ratio", num(v->fisher / o->fisher), "accepted", v->accepted,
                          "fisher_seconds", num(v->fisher_seconds), "trained", v->trained);
    if (v->trained) { /* per seed, and the means over the seeds */
        json_t *acc = json_array(), *diff = json_array();
        double a = 0, d = 0, loss = 0, sec = 0;
        for (int s = 0; s < seeds; s++) {
            json_array_append_new(acc, num(v->tr[s].test_accuracy));
            json_array_append_new(diff, num(v->tr[s].test_accuracy - o->tr[s].test_accuracy));
            a += v->tr[s].test_accuracy;
            d += v->tr[s].test_accuracy - o->tr[s].test_accuracy;
            loss += v->tr[s].train_loss;
            sec += v->tr[s].seconds;
        }
        json_object_set_new(j, "test_accuracy", num(a / seeds));
        json_object_set_new(j, "accuracy_diff", num(d / seeds));
        json_object_set_new(j, "train_loss", num(loss / seeds));
        json_object_set_new(j, "train_seconds", num(sec / seeds));
        json_object_set_new(j, "accuracies", acc);
        json_object_set_new(j, "accuracy_diffs", diff);
    }
    return j;
}

/* The network's variants; its Spearman comes from bench_fisher_summarise. */
static json_t *network_json(const bf_net *b, int seeds)
{
    json_t *vs = json_array();
    int acc = 0, n = 0;
    for (int i = 0; i < b->n; i++) {
        json_array_append_new(vs, variant_json(b, &b->v[i], seeds));
        acc += i > 0 && b->v[i].accepted;
        n += b->v[i].trained;
    }
    double rho = NAN;
    return json_pack("{s:s,s:s,s:i,s:I,s:o,s:i,s:i,s:i,s:o,s:o}", "name", nn_network_name(b->net),
                     "hash", nn_network_hash(b->net), "convs", b->convs, "params",
                     (json_int_t)b->v[0].params, "fisher", num(b->v[0].fisher), "candidates",
                     b->n - 1, "accepted", acc, "trained", n, "spearman", num(rho), "variants", vs);
}

/* The networks folder: --networks, else <exe_dir>/../networks, else ./networks. */
static void networks_dir(const bench_fisher_options *opt, const char *exe_dir, char *buf,
                         size_t cap)
{
    if (opt->networks_dir) {
        snprintf(buf, cap, "%s", opt->networks_dir);
        return;
    }
    if (exe_dir) {
        int w = snprintf(buf, cap, "%s/../networks", exe_dir);
        if (w > 0 && (size_t)w < cap && access(buf, R_OK) == 0)
            return;
    }
    snprintf(buf, cap, "networks");
}

json_t *bench_fisher_run(const bench_fisher_options *opt, const char *exe_dir, FILE *progress,
                         kt_error *err)
{
    json_t *res = NULL, *nets_json = NULL;
    nn_presets *presets = NULL;
    nn_dataset train = {0}, test = {0};
    bf_net nets[BENCH_FISHER_MAX_NETWORKS + NN_MAX_PRESETS];
    int n_nets = 0;
    char dir[BF_PATH_MAX], small[BF_PATH_MAX + 32];
    memset(nets, 0, sizeof nets);
    networks_dir(opt, exe_dir, dir, sizeof dir);
    int w = snprintf(small, sizeof small, "%s/data/fashion-mnist-small", dir);
    if (w < 0 || (size_t)w >= sizeof small) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "--networks: path too long");
        goto done;
    }
    if (!(presets = nn_presets_load(dir, err)))
        goto done;
    nn_dataset_paths paths = {NULL, small};
    if (nn_dataset_load(opt->data, "train", opt->train_images, &paths, &train, err) < 0 ||
        nn_dataset_load(opt->data, "test", opt->test_images, &paths, &test, err) < 0)
        goto done;
    int want = opt->n_names ? opt->n_names : nn_presets_count(presets);
    for (int k = 0; k < want; k++) {
        const nn_network *net =
            opt->n_names ? nn_presets_find(presets, opt->names[k]) : nn_presets_at(presets, k);
        if (!net) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "--network %s: no such preset in %s",
                         opt->names[k], dir);
            goto done;
        }
        bf_net *b = &nets[n_nets++];
        b->net = net;
        b->convs = nn_network_conv_count(net);
        if (build_variants(b, err) < 0 || run_network(b, opt, &train, &test, progress, err) < 0)
            goto done;
    }
    nets_json = json_array();
    for (int k = 0; k < n_nets; k++)
        json_array_append_new(nets_json, network_json(&nets[k], opt->seeds));
    res = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:f,s:f,s:i,s:I,s:i,s:i,s:i,s:i,s:i,s:O}", "mode",
                    "fisher", "data", opt->data, "train_images", train.n, "test_images", test.n,
                    "epochs", opt->epochs, "batch", opt->batch, "lr", opt->lr, "threshold",
                    opt->threshold, "fisher_batch", opt->fisher_batch, "seed",
                    (json_int_t)opt->seed, "train_accepted", opt->train_accepted, "train_rejected",
                    opt->train_rejected, "seeds", opt->seeds, "fisher_seeds", opt->fisher_seeds,
                    "train_variants", opt->train_variants, "networks", nets_json);
    json_t *ts = json_array();
    for (int i = 0; i < opt->seeds && ts; i++)
        json_array_append_new(ts, json_integer((json_int_t)(bench_fisher_train_seed(opt) + i)));
    size_t k;
    json_t *net;
    if (res && ts)
        json_array_foreach(nets_json, k, net) json_object_set(net, "train_seeds", ts);
    if (!res || !ts || json_object_set(res, "train_seeds", ts) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for the report");
        json_decref(res);
        res = NULL;
    } else if (bench_fisher_summarise(res, opt->permutations, opt->seed, err) < 0) {
        json_decref(res);
        res = NULL;
    }
    json_decref(ts);
done:
    json_decref(nets_json);
    for (int k = 0; k < n_nets; k++)
        bf_net_free(&nets[k]);
    nn_dataset_release(&train);
    nn_dataset_release(&test);
    nn_presets_free(presets);
    return res;
}
