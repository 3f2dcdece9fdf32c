/* accel/accel_kernel — the two kernels (cnn_layer, mttkrp): definitions, presets (Mind Mappings
 * Table 1), problems (parse, canonical JSON, the training distribution), hashes and JSON views.
 * The mapping space is built in accel_space.c. */
#include "accel/accel_kernel_impl.h"
#include "core/hash.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { CN, CK, CC, CP, CQ, CR, CS };
enum { MI, MJ, MK, ML };
#define BIT(d) (1u << (d))

static void sample_cnn(const accel_kernel *k, kt_rng *rng, long long *arg);
static void sample_mttkrp(const accel_kernel *k, kt_rng *rng, long long *arg);

/* cnn_layer: O[n][k][p][q] += I[n][c][p*stride + r][q*stride + s] * W[k][c][r][s]. The arguments
 * are the OUTPUT rows and columns P, Q (Table 1's H, W, as in the paper's Timeloop problems: its
 * layers keep their size, "same" padding); the input is (P - 1) * stride + R rows. */
static const accel_kernel cnn_layer = {
    .name = "cnn_layer",
    .summary = "convolution layer O[n][k][p][q] += I[n][c][p*stride+r][q*stride+s] * W[k][c][r][s] "
               "(P, Q: output rows and columns; input (P-1)*stride+R rows)",
    .n_args = 8,
    .args = {{"N", 1, 256, 16},
             {"K", 1, 4096, 256},
             {"C", 1, 4096, 256},
             {"P", 1, 1024, 14},
             {"Q", 1, 1024, 14},
             {"R", 1, 11, 3},
             {"S", 1, 11, 3},
             {"stride", 1, 4, 1}},
    .stride_arg = 7,
    .n_dims = 7,
    .dims = {"N", "K", "C", "P", "Q", "R", "S"},
    .n_tensors = 3,
    .tensors = {{"I",
                 BIT(CN) | BIT(CC) | BIT(CP) | BIT(CQ) | BIT(CR) | BIT(CS),
                 2,
                 {{CP, CR}, {CQ, CS}},
                 0},
                {"W", BIT(CK) | BIT(CC) | BIT(CR) | BIT(CS), 0, {{0, 0}, {0, 0}}, 0},
                {"O", BIT(CN) | BIT(CK) | BIT(CP) | BIT(CQ), 0, {{0, 0}, {0, 0}}, 1}},
    .n_classes = 3,
    .class_mask = {BIT(CN) | BIT(CP) | BIT(CQ), BIT(CK), BIT(CC) | BIT(CR) | BIT(CS)},
    .class_name = {"NPQ", "K", "CRS"},
    .operands = 2,
    .n_presets = 6,
    .presets = {{"resnet_conv3", {16, 128, 128, 28, 28, 3, 3, 1}},
                {"resnet_conv4", {16, 256, 256, 14, 14, 3, 3, 1}},
                {"inception_conv2", {32, 192, 192, 56, 56, 3, 3, 1}},
                {"vgg_conv2", {16, 128, 64, 112, 112, 3, 3, 1}},
                {"alexnet_conv2", {8, 256, 96, 27, 27, 5, 5, 1}},
                {"alexnet_conv4", {8, 384, 384, 13, 13, 3, 3, 1}}},
    .sample = sample_cnn,
};

/* mttkrp: O[i][j] += A[i][k][l] * B[k][j] * C[l][j]. */
static const accel_kernel mttkrp = {
    .name = "mttkrp",
    .summary =
        "matricized tensor times Khatri-Rao product O[i][j] += A[i][k][l] * B[k][j] * C[l][j]",
    .n_args = 4,
    .args = {{"I", 1, 16384, 128},
             {"J", 1, 16384, 1024},
             {"K", 1, 16384, 4096},
             {"L", 1, 16384, 2048}},
    .stride_arg = -1,
    .n_dims = 4,
    .dims = {"I", "J", "K", "L"},
    .n_tensors = 4,
    .tensors = {{"A", BIT(MI) | BIT(MK) | BIT(ML), 0, {{0, 0}, {0, 0}}, 0},
                {"B", BIT(MK) | BIT(MJ), 0, {{0, 0}, {0, 0}}, 0},
                {"C", BIT(ML) | BIT(MJ), 0, {{0, 0}, {0, 0}}, 0},
                {"O", BIT(MI) | BIT(MJ), 0, {{0, 0}, {0, 0}}, 1}},
    .n_classes = 4,
    .class_mask = {BIT(MI), BIT(MJ), BIT(MK), BIT(ML)},
    .class_name = {"I", "J", "K", "L"},
    .operands = 3,
    .n_presets = 2,
    .presets = {{"mttkrp_0", {128, 1024, 4096, 2048}}, {"mttkrp_1", {2048, 4096, 1024, 128}}},
    .sample = sample_mttkrp,
};

static const accel_kernel *const kernels[] = {&cnn_layer, &mttkrp};

const accel_kernel *accel_kernel_find(const char *name)
{
    for (int i = 0; name && i < accel_kernel_count(); i++)
        if (strcmp(kernels[i]->name, name) == 0)
            return kernels[i];
    return NULL;
}

int accel_kernel_count(void)
{
    return (int)(sizeof kernels / sizeof kernels[0]);
}

const accel_kernel *accel_kernel_at(int i)
{
    return i >= 0 && i < accel_kernel_count() ? kernels[i] : NULL;
}

const char *accel_kernel_name(const accel_kernel *k)
{
    return k->name;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return kt_fnv1a_field(h, s, strlen(s));
}

static uint64_t hash_ll(uint64_t h, long long x)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", x);
    return kt_fnv1a_field(h, buf, (size_t)n);
}

uint64_t accel_kernel_hash(const accel_kernel *k)
{
    uint64_t h = hash_str(KT_FNV1A_OFFSET, ACCEL_MODEL_VERSION);
    h = hash_str(h, k->name);
    for (int a = 0; a < k->n_args; a++) {
        h = hash_str(h, k->args[a].name);
        h = hash_ll(h, k->args[a].min);
        h = hash_ll(h, k->args[a].max);
    }
    for (int d = 0; d < k->n_dims; d++)
        h = hash_str(h, k->dims[d]);
    for (int t = 0; t < k->n_tensors; t++) {
        const accel_tensor_def *td = &k->tensors[t];
        h = hash_str(h, td->name);
        h = hash_ll(h, td->rel);
        h = hash_ll(h, td->n_halo);
        for (int i = 0; i < td->n_halo; i++)
            h = hash_ll(h, td->halo[i][0] * 16 + td->halo[i][1]);
        h = hash_ll(h, td->output);
    }
    return hash_ll(h, k->operands);
}

static json_t *dims_json(const accel_kernel *k, unsigned mask)
{
    json_t *a = json_array();
    for (int d = 0; d < k->n_dims; d++)
        if (mask & BIT(d))
            json_array_append_new(a, json_string(k->dims[d]));
    return a;
}

static json_t *args_json(const accel_kernel *k, const long long *arg)
{
    json_t *o = json_object();
    for (int a = 0; a < k->n_args; a++)
        json_object_set_new(o, k->args[a].name, json_integer(arg[a]));
    return o;
}

json_t *accel_kernel_json(const accel_kernel *k)
{
    json_t *args = json_array();
    for (int a = 0; a < k->n_args; a++)
        json_array_append_new(args, json_pack("{s:s, s:I, s:I, s:I}", "name", k->args[a].name,
                                              "min", (json_int_t)k->args[a].min, "max",
                                              (json_int_t)k->args[a].max, "default",
                                              (json_int_t)k->args[a].def));
    json_t *presets = json_object();
    for (int i = 0; i < k->n_presets; i++)
        json_object_set_new(presets, k->presets[i].name, args_json(k, k->presets[i].arg));
    json_t *tensors = json_array();
    for (int t = 0; t < k->n_tensors; t++)
        json_array_append_new(tensors, json_pack("{s:s, s:o, s:b}", "name", k->tensors[t].name,
                                                 "dims", dims_json(k, k->tensors[t].rel), "output",
                                                 k->tensors[t].output));
    json_t *classes = json_array();
    for (int c = 0; c < k->n_classes; c++)
        json_array_append_new(classes, json_string(k->class_name[c]));
    return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "name", k->name, "summary", k->summary,
                     "problem_arguments", args, "presets", presets, "dims",
                     dims_json(k, (1u << k->n_dims) - 1), "tensors", tensors, "reuse_classes",
                     classes);
}

/* ---- problems ---- */

long long accel_problem_stride(const accel_problem *p)
{
    return p->kernel->stride_arg >= 0 ? p->arg[p->kernel->stride_arg] : 1;
}

static void problem_fill(const accel_kernel *k, const long long *arg, accel_problem *out)
{
    memset(out, 0, sizeof *out);
    out->kernel = k;
    for (int a = 0; a < k->n_args; a++)
        out->arg[a] = arg[a];
    for (int d = 0; d < k->n_dims; d++)
        out->dim[d] = arg[d];
}

/* Ordered factorisations of n into 4 factors: prod over primes p^e of C(e + 3, 3). */
static double factorisations4(long long n)
{
    double c = 1.0;
    for (long long q = 2; q * q <= n; q++) {
        int e = 0;
        while (n % q == 0) {
            n /= q;
            e++;
        }
        c *= (double)(e + 3) * (e + 2) * (e + 1) / 6.0;
    }
    if (n > 1)
        c *= 4.0;
    return c;
}

static double binom(int n, int r)
{
    double c = 1.0;
    for (int i = 1; i <= r; i++)
        c = c * (n - r + i) / i;
    return c;
}

double accel_space_bound(const accel_problem *p, int banks)
{
    const accel_kernel *k = p->kernel;
    double c = 1.0;
    for (int d = 0; d < k->n_dims; d++)
        c *= factorisations4(p->dim[d]);
    double orders = accel_num_orders(k);
    double alloc = banks >= k->n_tensors ? binom(banks, k->n_tensors) : 0.0;
    return c * orders * orders * orders * alloc * alloc;
}

/* 2^64 - 1 ids; the shipped devices have 8 banks per buffer. A problem whose bound passes may still
 * have more than SPACE_MAX_COUNT (2^63 - 1) configurations on a device: accel_space_new refuses it
 * (space_too_large). */
#define BOUND_LIMIT 1.8446744073709552e19
#define BOUND_BANKS 8
/* The training distribution keeps only problems whose bound is within SPACE_MAX_COUNT, so every
 * sampled problem's space builds on the shipped devices (no trainer skips one). */
#define SAMPLE_LIMIT 9.2233720368547758e18

static int problem_check(const accel_problem *p, kt_error *err)
{
    double bound = accel_space_bound(p, BOUND_BANKS);
    if (bound >= BOUND_LIMIT) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM,
                     "%s: the mapping space of this problem would have up to %.3g configurations, "
                     "more than 64-bit ids hold",
                     p->kernel->name, bound);
        kt_error_hint(err, "dims with fewer prime factors (powers of two, or multiples of few "
                           "small primes) keep the space countable");
        return -1;
    }
    return 0;
}

static void presets_hint(const accel_kernel *k, kt_error *err)
{
    char list[512];
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; i < k->n_presets && used < sizeof list; i++) {
        int w =
            snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", k->presets[i].name);
        used += w > 0 ? (size_t)w : 0;
    }
    kt_error_hint(err, "presets of %s: %s; or arguments (see GET /v1/kernels)", k->name, list);
}

static int parse_preset(const accel_kernel *k, const json_t *problem, accel_problem *out,
                        kt_error *err)
{
    const json_t *v = json_object_get(problem, "preset");
    if (json_object_size(problem) != 1) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM, "%s: a problem with \"preset\" takes no other field",
                     k->name);
        presets_hint(k, err);
        return -1;
    }
    for (int i = 0; json_is_string(v) && i < k->n_presets; i++)
        if (strcmp(json_string_value(v), k->presets[i].name) == 0) {
            problem_fill(k, k->presets[i].arg, out);
            return 0;
        }
    kt_error_set(err, KT_ERR_BAD_PROBLEM, "%s: unknown preset %s%.64s%s", k->name,
                 json_is_string(v) ? "'" : "",
                 json_is_string(v) ? json_string_value(v) : "(not a string)",
                 json_is_string(v) ? "'" : "");
    presets_hint(k, err);
    return -1;
}

int accel_problem_parse(const accel_kernel *k, const json_t *problem, accel_problem *out,
                        kt_error *err)
{
    long long arg[ACCEL_MAX_ARGS] = {0};
    for (int a = 0; a < k->n_args; a++)
        arg[a] = k->args[a].def;
    if (problem && !json_is_null(problem)) {
        if (!json_is_object(problem)) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "%s: the problem is not an object", k->name);
            presets_hint(k, err);
            return -1;
        }
        if (json_object_get(problem, "preset")) {
            if (parse_preset(k, problem, out, err) < 0)
                return -1;
            return problem_check(out, err);
        }
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)problem, key, v)
        {
            int a = 0;
            while (a < k->n_args && strcmp(k->args[a].name, key) != 0)
                a++;
            if (a == k->n_args) {
                char list[256];
                size_t used = 0;
                list[0] = '\0';
                for (int i = 0; i < k->n_args && used < sizeof list; i++) {
                    int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     k->args[i].name);
                    used += w > 0 ? (size_t)w : 0;
                }
                kt_error_set(err, KT_ERR_BAD_PROBLEM,
                             "%s: unknown problem argument '%.64s'; accepted: %s, or preset",
                             k->name, key, list);
                presets_hint(k, err);
                return -1;
            }
            const accel_arg_def *ad = &k->args[a];
            if (!json_is_integer(v) || json_integer_value(v) < ad->min ||
                json_integer_value(v) > ad->max) {
                kt_error_set(err, KT_ERR_BAD_PROBLEM,
                             "%s: problem argument %s must be an integer in [%lld, %lld]", k->name,
                             ad->name, ad->min, ad->max);
                presets_hint(k, err);
                return -1;
            }
            arg[a] = (long long)json_integer_value(v);
        }
    }
    problem_fill(k, arg, out);
    return problem_check(out, err);
}

json_t *accel_problem_json(const accel_problem *p)
{
    return args_json(p->kernel, p->arg);
}

static long long pick(kt_rng *rng, const long long *v, int n)
{
    return v[kt_rng_below(rng, (uint64_t)n)];
}

/* Layer shapes of typical CNNs (ResNet, VGG, AlexNet, Inception, MobileNet-like 1x1): square
 * outputs and filters, stride 1. */
static void sample_cnn(const accel_kernel *k, kt_rng *rng, long long *arg)
{
    (void)k;
    static const long long n[] = {1, 2, 4, 8, 16, 32};
    static const long long ch[] = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512};
    static const long long pq[] = {7, 13, 14, 27, 28, 56, 112};
    static const long long rs[] = {1, 3, 3, 3, 5, 7};
    arg[0] = pick(rng, n, 6);
    arg[1] = pick(rng, ch, 10);
    arg[2] = pick(rng, ch, 10);
    arg[3] = arg[4] = pick(rng, pq, 7);
    arg[5] = arg[6] = pick(rng, rs, 6);
    arg[7] = 1;
}

/* Tall and skinny tensors: powers of two 64..4096 and a few multiples of 3. */
static void sample_mttkrp(const accel_kernel *k, kt_rng *rng, long long *arg)
{
    (void)k;
    static const long long v[] = {64,  96,   128,  192,  256,  384, 512,
                                  768, 1024, 1536, 2048, 3072, 4096};
    for (int a = 0; a < 4; a++)
        arg[a] = pick(rng, v, 13);
}

void accel_problem_sample(const accel_kernel *k, kt_rng *rng, accel_problem *out)
{
    long long arg[ACCEL_MAX_ARGS] = {0};
    for (;;) {
        k->sample(k, rng, arg);
        problem_fill(k, arg, out);
        if (accel_space_bound(out, BOUND_BANKS) < SAMPLE_LIMIT)
            return;
    }
}

/* ---- loop orders ---- */

int accel_num_orders(const accel_kernel *k)
{
    int f = 1;
    for (int i = 2; i <= k->n_classes; i++)
        f *= i;
    return f;
}

void accel_order_classes(const accel_kernel *k, int v, int *cls)
{
    /* Lehmer code: digit i picks among the classes left, lowest index first. */
    int left[ACCEL_MAX_CLASSES];
    int n = k->n_classes;
    for (int i = 0; i < n; i++)
        left[i] = i;
    int f = accel_num_orders(k);
    for (int i = 0; i < n; i++) {
        f /= n - i;
        int j = v / f;
        v %= f;
        cls[i] = left[j];
        for (int m = j; m + 1 < n - i; m++)
            left[m] = left[m + 1];
    }
}

void accel_order_name(const accel_kernel *k, int v, char *buf, size_t cap)
{
    int cls[ACCEL_MAX_CLASSES];
    accel_order_classes(k, v, cls);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->n_classes && used < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i ? ">" : "", k->class_name[cls[i]]);
        used += w > 0 ? (size_t)w : 0;
    }
}
