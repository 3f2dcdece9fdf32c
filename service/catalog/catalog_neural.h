/* catalog/catalog_neural — a problem's "neural" member (issue 14): the opt-in that lets a kernel
 * with a "neural" section (kernels/README.md; kernels/conv2d_neural) search configurations that
 * change the network, and how each such configuration is judged legal (Fisher Potential,
 * neural/nn_legality.h) before it is measured.
 *
 *   "neural": {"allow": ["group", "bottleneck", ...],   transformations of the kernel's section
 *              "network": "vgg_fm" | {<network JSON>},  a preset (GET /v1/networks) or inline
 *              "layer": "conv2",                        the network's conv this problem is
 *              "data": "fashion-mnist",                 [fashion-mnist] | fashion-mnist-small
 *              "threshold": 1.0}                        legal when Fisher ratio >= it [1.0]
 *
 * The problem's C, K, H, W, R, S are the layer's (filled from it when the request omits them; a
 * different value is refused). The canonical problem keeps the member, canonical: allow in the
 * spec's order, the network by preset name or inline, its hash (network_hash), data and threshold;
 * so a neural problem has its own problem_key, and its results never answer the plain problem
 * (GET /v1/best without "neural" only ever returns semantics-preserving configurations).
 *
 * The catalog owns the preset networks (catalog_options.networks_dir) and the process's legality
 * cache; a target of a neural problem owns its catalog_neural (target.neural).
 *
 * Bounds (issue 26): a network, inline or preset, whose Fisher check would need more memory or
 * work than neural/nn_cost.h allows is refused when the problem is parsed (a 400 naming the limit,
 * the figure and the layer: nothing is queued, and a stored job of such a network fails on resume
 * as target_unavailable); a check under way is stopped by the caller's stop check (its job was
 * cancelled) between images, and gives up after the catalog's time limit
 * (catalog_options.neural_check_timeout_s). */
#ifndef KT_CATALOG_CATALOG_NEURAL_H
#define KT_CATALOG_CATALOG_NEURAL_H

#include <jansson.h>

#include "core/error.h"
#include "catalog/catalog.h"
#include "neural/nn_legality.h"
#include "neural/nn_network.h"
#include "neural/nn_transform.h"

#define CATALOG_NEURAL_DEFAULT_DATA      "fashion-mnist"
#define CATALOG_NEURAL_DEFAULT_THRESHOLD 1.0
#define CATALOG_NEURAL_MAX_THRESHOLD     10.0
#define CATALOG_NEURAL_FISHER_SEEDS      3    /* initialisations averaged per Fisher Potential */
#define CATALOG_NEURAL_CHECK_TIMEOUT_S   60.0 /* one legality check, by default */

/* What catalog_neural_check returns when its computation was cut short (neural/nn_stop.h). */
#define CATALOG_NEURAL_STOPPED   NN_STOPPED   /* the stop check said stop */
#define CATALOG_NEURAL_TIMED_OUT NN_TIMED_OUT /* past catalog_neural_check_timeout_s */

struct catalog_neural {
    unsigned allow_mask;   /* bit i: the kernel's transformation i (kernel_spec_neural_name) */
    const nn_network *net; /* a preset of the catalog's, or net_owned */
    nn_network *net_owned; /* an inline network (owned); NULL for a preset */
    nn_conv_shape layer;   /* the conv this problem is */
    char data[32];
    double threshold;
};

/* The legality verdict on one configuration of a target. */
typedef struct catalog_neural_verdict {
    int changes;       /* 1: the configuration changes the network (then v is filled) */
    nn_transform t;    /* its transformation (the identity when changes is 0) */
    char describe[64]; /* nn_transform_describe */
    nn_verdict v;
    long long params, params_original; /* the network's trainable parameters with it, without */
} catalog_neural_verdict;

/* The preset networks (NULL when no networks folder was given). */
const nn_presets *catalog_networks(const catalog *c);
/* GET /v1/networks: [{"name","hash","input","classes","params","convs":[{"name","C","K","H","W",
 * "R","S","pad","bottleneck_ok"}]}] (new reference). */
json_t *catalog_networks_json(const catalog *c);

/* Whether configuration id of t changes the network and, when it does, its verdict (computed once
 * per transformation and cached). t without a neural member: *out->changes 0, nothing judged.
 * stop (NULL: never; stop_arg borrowed) is asked between the images of each layer while scores
 * are computed, and the computation gives up catalog_neural_check_timeout_s after the call.
 * Returns 0; CATALOG_NEURAL_STOPPED or CATALOG_NEURAL_TIMED_OUT (out->v.seconds: how long it
 * computed; err says where); -1 with err: the legality check's (data set missing, network cannot
 * take the transformation, network beyond the limits). */
int catalog_neural_check(const catalog *c, const target *t, config_id id, int (*stop)(void *),
                         void *stop_arg, catalog_neural_verdict *out, kt_error *err);
/* The time limit of one legality check, in seconds. */
double catalog_neural_check_timeout_s(const catalog *c);
/* Marks a /v1/best answer of t's key (answer["config"]) for a kernel with a neural section:
 * "changes_network" (bool) and "transformation" ("none", "group", ...). Returns 1 when the answer
 * changes the network but t's problem did not opt in (the caller must not serve it), else 0;
 * answers of other kernels are left as they are. */
int catalog_neural_mark(const catalog *c, const target *t, json_t *answer);

/* The kernel problem of a target of kernel k (kernel_spec_problem of its canonical problem, the
 * "neural" member left out). */
int catalog_target_problem(const kernel_spec *k, const target *t, kspec_problem *out,
                           kt_error *err);

/* Internal to the catalog (catalog_resolve.c): splits the request's "neural" member off problem,
 * validates it against kernel k's section and fills the problem's layer arguments; *plain is the
 * problem without it (new reference), *out the parsed member (caller frees with
 * catalog_neural_free), *canon its canonical JSON (new reference). No "neural" member: *out and
 * *canon NULL, *plain a reference to problem. Errors: KT_ERR_BAD_PROBLEM naming "neural.<field>".
 */
int catalog_neural_parse(const catalog *c, const kernel_spec *k, kspec_kind kind,
                         const json_t *problem, json_t **plain, catalog_neural **out,
                         json_t **canon, kt_error *err);
void catalog_neural_free(catalog_neural *n);

#endif
