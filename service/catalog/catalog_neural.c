/* catalog/catalog_neural — the "neural" member of a problem (catalog/catalog_neural.h): parsing
 * and canonical form, the layer's arguments, the legality verdict of a configuration and the
 * marking of /v1/best answers. */
#include "catalog/catalog_neural.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_impl.h"
#include "core/clock.h"

/* The problem arguments a layer fixes, in nn_conv_shape order. */
static const char *const layer_args[] = {"C", "K", "H", "W", "R", "S"};
#define N_LAYER_ARGS 6

static int layer_value(const nn_conv_shape *l, int i)
{
    const int v[N_LAYER_ARGS] = {l->C, l->K, l->H, l->W, l->R, l->S};
    return v[i];
}

int catalog_networks_load(catalog *c, const char *dir, double check_timeout_s, kt_error *err)
{
    char small[4096];
    int has_dir = dir && dir[0];
    c->neural_check_timeout_s =
        check_timeout_s > 0 ? check_timeout_s : CATALOG_NEURAL_CHECK_TIMEOUT_S;
    if (has_dir && !(c->networks = nn_presets_load(dir, err))) {
        kt_error_prefix(err, "--networks %.200s", dir);
        err->code = KT_ERR_CONFIG;
        return -1;
    }
    if (has_dir)
        snprintf(small, sizeof small, "%s/data/fashion-mnist-small", dir);
    nn_dataset_paths paths = {.package_dir = NULL, .small_dir = has_dir ? small : NULL};
    /* Three initialisations averaged: one alone moves a layer's ratio by 10-20% (service/neural/
     * README.md), enough to flip most verdicts near the paper's threshold of 1. */
    nn_fisher_opts fisher = nn_fisher_default_opts();
    fisher.seeds = CATALOG_NEURAL_FISHER_SEEDS;
    if (!(c->legality = nn_legality_new(&paths, &fisher, err)))
        return -1;
    return 0;
}

const nn_presets *catalog_networks(const catalog *c)
{
    return c ? c->networks : NULL;
}

double catalog_neural_check_timeout_s(const catalog *c)
{
    return c->neural_check_timeout_s;
}

void catalog_neural_free(catalog_neural *n)
{
    if (!n)
        return;
    nn_network_free(n->net_owned);
    free(n);
}

static int bad(kt_error *err, const char *field, const char *what)
{
    return kt_error_set(err, KT_ERR_BAD_PROBLEM, "neural.%s %s", field, what);
}

/* neural.allow: names of k's transformations into a mask. */
static int parse_allow(const kernel_spec *k, kspec_kind kind, const json_t *allow, unsigned *mask,
                       kt_error *err)
{
    size_t i;
    json_t *v;
    char names[256] = "";
    int n = kernel_spec_neural_count(k, kind);
    for (int j = 0, used = 0; j < n && used < (int)sizeof names; j++)
        used += snprintf(names + used, sizeof names - (size_t)used, "%s%s", j ? ", " : "",
                         kernel_spec_neural_name(k, kind, j));
    *mask = 0;
    if (!json_is_array(allow) || json_array_size(allow) == 0 ||
        json_array_size(allow) > KSPEC_MAX_NEURAL) {
        bad(err, "allow", "must be a list of 1 to 8 transformation names");
        kt_error_hint(err, "kernel %s accepts: %s (omit \"neural\" for none)", k->name, names);
        return -1;
    }
    json_array_foreach(allow, i, v)
    {
        int found = -1;
        for (int j = 0; json_is_string(v) && j < n; j++) {
            if (strcmp(json_string_value(v), kernel_spec_neural_name(k, kind, j)) == 0)
                found = j;
        }
        if (found < 0) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "neural.allow[%zu] is not a transformation of %s",
                         i, k->name);
            kt_error_hint(err, "accepted: %s", names);
            return -1;
        }
        *mask |= 1u << found;
    }
    return 0;
}

/* neural.network: a preset's name or an inline description, whose Fisher check keeps within the
 * limits (nn_legality_fits: a network of layers each within bounds may still imply GiBs of
 * activations, issue 26); refused here, nothing is queued. */
static int parse_network(const catalog *c, const json_t *v, catalog_neural *n, kt_error *err)
{
    if (json_is_string(v)) {
        n->net = c->networks ? nn_presets_find(c->networks, json_string_value(v)) : NULL;
        if (!n->net) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "neural.network '%.64s' is not a preset network",
                         json_string_value(v));
            kt_error_hint(err, "GET /v1/networks lists the presets; or give the network inline");
            return -1;
        }
    } else if (!json_is_object(v)) {
        return bad(err, "network", "must be a preset name or a network object");
    } else if (!(n->net = n->net_owned = nn_network_parse(v, err))) {
        kt_error_prefix(err, "neural.network");
        err->code = KT_ERR_BAD_PROBLEM;
        return -1;
    }
    if (nn_legality_fits(c->legality, n->net, err) < 0) {
        kt_error_prefix(err, "neural.network");
        err->code = KT_ERR_BAD_PROBLEM;
        return -1;
    }
    return 0;
}

/* neural.layer, then the problem's layer arguments filled or checked (plain is modified). */
static int parse_layer(const json_t *v, json_t *plain, catalog_neural *n, kt_error *err)
{
    if (!json_is_string(v))
        return bad(err, "layer", "must name a conv layer of the network");
    int i = nn_network_find_conv(n->net, json_string_value(v));
    if (i < 0 || nn_network_conv(n->net, i, &n->layer) < 0) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM, "neural.layer '%.64s' is not a conv of network %s",
                     json_string_value(v), nn_network_name(n->net));
        kt_error_hint(err, "GET /v1/networks lists each network's conv layers");
        return -1;
    }
    for (int a = 0; a < N_LAYER_ARGS; a++) {
        json_t *given = json_object_get(plain, layer_args[a]);
        int want = layer_value(&n->layer, a);
        if (!given) {
            if (json_object_set_new(plain, layer_args[a], json_integer(want)) < 0)
                return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        } else if (!json_is_number(given) || json_number_value(given) != want) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM,
                         "problem argument %s is not layer %s's (%d) of network %s", layer_args[a],
                         n->layer.name, want, nn_network_name(n->net));
            kt_error_hint(err, "omit C, K, H, W, R and S: a neural problem takes its layer's");
            return -1;
        }
    }
    return 0;
}

/* What the transformations allowed need of the layer: a bottleneck one that can propagate. */
static int check_applicable(const kernel_spec *k, kspec_kind kind, const catalog_neural *n,
                            kt_error *err)
{
    for (int j = 0; j < kernel_spec_neural_count(k, kind); j++) {
        if ((n->allow_mask & (1u << j)) &&
            strcmp(kernel_spec_neural_name(k, kind, j), "bottleneck") == 0 &&
            !n->layer.bottleneck_ok) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM,
                         "neural.allow: layer %s of %s cannot take a bottleneck (its output ends "
                         "a residual block: the sum needs every channel)",
                         n->layer.name, nn_network_name(n->net));
            kt_error_hint(err, "leave \"bottleneck\" out for this layer");
            return -1;
        }
    }
    return 0;
}

static json_t *canonical(const kernel_spec *k, kspec_kind kind, const catalog_neural *n)
{
    json_t *allow = json_array(), *o = NULL;
    for (int j = 0; allow && j < kernel_spec_neural_count(k, kind); j++) {
        if (n->allow_mask & (1u << j))
            json_array_append_new(allow, json_string(kernel_spec_neural_name(k, kind, j)));
    }
    json_t *net = n->net_owned ? nn_network_json(n->net) : json_string(nn_network_name(n->net));
    if (allow && net)
        o = json_pack("{s:o, s:o, s:s, s:s, s:s, s:f}", "allow", allow, "network", net,
                      "network_hash", nn_network_hash(n->net), "layer", n->layer.name, "data",
                      n->data, "threshold", n->threshold);
    else {
        json_decref(allow);
        json_decref(net);
    }
    return o;
}

static int parse_member(const catalog *c, const kernel_spec *k, kspec_kind kind,
                        const json_t *neural, json_t *plain, catalog_neural *n, kt_error *err)
{
    static const char *const fields[] = {"allow",     "network",      "layer", "data",
                                         "threshold", "network_hash", NULL};
    const char *key;
    json_t *v;
    if (!json_is_object(neural))
        return kt_error_set(err, KT_ERR_BAD_PROBLEM, "neural must be an object");
    json_object_foreach((json_t *)neural, key, v)
    {
        int known = 0;
        for (int i = 0; fields[i]; i++)
            known |= strcmp(key, fields[i]) == 0;
        if (!known) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "neural.%.64s is not accepted", key);
            kt_error_hint(err, "accepted: allow, network, layer, data, threshold");
            return -1;
        }
    }
    if (parse_allow(k, kind, json_object_get(neural, "allow"), &n->allow_mask, err) < 0 ||
        parse_network(c, json_object_get(neural, "network"), n, err) < 0 ||
        parse_layer(json_object_get(neural, "layer"), plain, n, err) < 0 ||
        check_applicable(k, kind, n, err) < 0)
        return -1;
    v = json_object_get(neural, "network_hash");
    if (v && (!json_is_string(v) || strcmp(json_string_value(v), nn_network_hash(n->net)) != 0)) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM, "neural.network_hash is not network %s's (%s)",
                     nn_network_name(n->net), nn_network_hash(n->net));
        kt_error_hint(err, "the network changed since this problem was made");
        return -1;
    }
    v = json_object_get(neural, "data");
    const char *data = v ? json_string_value(v) : CATALOG_NEURAL_DEFAULT_DATA;
    if (!data || !nn_dataset_known(data) || strlen(data) >= sizeof n->data) {
        bad(err, "data", "is not a known data set");
        kt_error_hint(err, "accepted: fashion-mnist, fashion-mnist-small");
        return -1;
    }
    snprintf(n->data, sizeof n->data, "%s", data);
    v = json_object_get(neural, "threshold");
    n->threshold = v ? json_number_value(v) : CATALOG_NEURAL_DEFAULT_THRESHOLD;
    if ((v && !json_is_number(v)) || !isfinite(n->threshold) || n->threshold <= 0 ||
        n->threshold > CATALOG_NEURAL_MAX_THRESHOLD)
        return bad(err, "threshold",
                   "must be a number in (0, 10]: the Fisher ratio a candidate needs");
    return 0;
}

/* A shallow copy of problem without its "neural" member (new reference), NULL when out of memory:
 * what kernel_spec_problem reads. */
static json_t *without_neural(const json_t *problem)
{
    json_t *plain = json_copy((json_t *)problem);
    if (plain && json_object_del(plain, "neural") < 0) {
        json_decref(plain);
        plain = NULL;
    }
    return plain;
}

int catalog_neural_parse(const catalog *c, const kernel_spec *k, kspec_kind kind,
                         const json_t *problem, json_t **plain, catalog_neural **out,
                         json_t **canon, kt_error *err)
{
    int rc = -1;
    catalog_neural *n = NULL;
    const json_t *neural = json_is_object(problem) ? json_object_get(problem, "neural") : NULL;
    *out = NULL;
    *canon = NULL;
    *plain = NULL;
    if (!neural) {
        *plain = json_incref((json_t *)problem);
        return 0;
    }
    if (!kernel_spec_has_neural(k, kind)) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM,
                     "kernel %s has no neural transformations on this device", k->name);
        kt_error_hint(err, "leave out \"neural\"; kernels with a neural section: GET /v1/kernels");
        return -1;
    }
    if (!(*plain = without_neural(problem)) || !(n = calloc(1, sizeof *n))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (parse_member(c, k, kind, neural, *plain, n, err) < 0)
        goto out;
    if (!(*canon = canonical(k, kind, n))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    *out = n;
    n = NULL;
    rc = 0;
out:
    catalog_neural_free(n);
    if (rc < 0) {
        json_decref(*plain);
        *plain = NULL;
    }
    return rc;
}

int catalog_target_problem(const kernel_spec *k, const target *t, kspec_problem *out, kt_error *err)
{
    if (!json_object_get(t->problem, "neural"))
        return kernel_spec_problem(k, t->problem, out, err);
    json_t *plain = without_neural(t->problem);
    int rc =
        plain ? kernel_spec_problem(k, plain, out, err) : kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    json_decref(plain);
    return rc;
}

int catalog_neural_check(const catalog *c, const target *t, config_id id, int (*stop)(void *),
                         void *stop_arg, catalog_neural_verdict *out, kt_error *err)
{
    int rc = -1;
    json_t *cfg = NULL;
    nn_transform *per_conv = NULL;
    memset(out, 0, sizeof *out);
    out->t = nn_transform_identity();
    snprintf(out->describe, sizeof out->describe, "none");
    if (!t->neural)
        return 0;
    if (!t->sp || !(cfg = space_config_json(t->sp, id))) {
        kt_error_set(err, KT_ERR_INTERNAL, "configuration %llu is outside the target's space",
                     (unsigned long long)id);
        goto out;
    }
    if (nn_transform_from_config(cfg, &out->t, err) < 0)
        goto out;
    nn_transform_describe(&out->t, out->describe, (int)sizeof out->describe);
    out->changes = !nn_transform_is_identity(&out->t);
    if (!out->changes) {
        rc = 0;
        goto out;
    }
    nn_stop s = {stop, stop ? stop_arg : NULL, kt_clock_s() + c->neural_check_timeout_s};
    rc = nn_legality_check(c->legality, t->neural->net, t->neural->layer.index, &out->t,
                           t->neural->data, t->neural->threshold, &s, &out->v, err);
    if (rc != 0)
        goto out;
    rc = -1;
    int n = nn_network_conv_count(t->neural->net);
    per_conv = malloc((size_t)n * sizeof *per_conv);
    if (!per_conv) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; i < n; i++)
        per_conv[i] = i == t->neural->layer.index ? out->t : nn_transform_identity();
    out->params = nn_network_params(t->neural->net, per_conv);
    out->params_original = nn_network_params(t->neural->net, NULL);
    rc = 0;
out:
    free(per_conv);
    json_decref(cfg);
    return rc;
}

int catalog_neural_mark(const catalog *c, const target *t, json_t *answer)
{
    const kernel_spec *k = catalog_find_kernel_version(c, t->key.kernel, t->key.kernel_hash);
    if (!k || !json_is_object(answer) ||
        (!kernel_spec_has_neural(k, KSPEC_CPU) && !kernel_spec_has_neural(k, KSPEC_CUDA)))
        return 0;
    nn_transform tr;
    char what[64] = "none";
    kt_error e;
    int changes = nn_transform_from_config(json_object_get(answer, "config"), &tr, &e) < 0 ||
                  !nn_transform_is_identity(&tr);
    nn_transform_describe(&tr, what, (int)sizeof what);
    json_object_set_new(answer, "changes_network", json_boolean(changes));
    json_object_set_new(answer, "transformation", json_string(what));
    return changes && !t->neural;
}

json_t *catalog_networks_json(const catalog *c)
{
    json_t *arr = json_array();
    for (int i = 0; arr && c->networks && i < nn_presets_count(c->networks); i++) {
        const nn_network *net = nn_presets_at(c->networks, i);
        json_t *doc = nn_network_json(net), *convs = json_array();
        for (int j = 0; convs && j < nn_network_conv_count(net); j++) {
            nn_conv_shape l;
            if (nn_network_conv(net, j, &l) == 0)
                json_array_append_new(
                    convs, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b}", "name",
                                     l.name, "C", l.C, "K", l.K, "H", l.H, "W", l.W, "R", l.R, "S",
                                     l.S, "pad", l.pad, "bottleneck_ok", l.bottleneck_ok));
        }
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:O?, s:O?, s:I, s:o, s:o}", "name", nn_network_name(net),
                           "hash", nn_network_hash(net), "input", json_object_get(doc, "input"),
                           "classes", json_object_get(doc, "classes"), "params",
                           (json_int_t)nn_network_params(net, NULL), "convs",
                           convs ? convs : json_array(), "network", doc ? doc : json_null()));
    }
    return arr;
}
