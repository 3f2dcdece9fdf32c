/* model/predictor — the facade: kinds, hyper-parameters, the layout check against a space,
 * candidates, and the serialised format (see predictor.h). The algorithms are behind pred_ops
 * (predictor_impl.h); held-out metrics are in predictor_eval.c. */
#include "model/predictor_impl.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRED_MAGIC "ktune-model"

enum {
    K_SEQ2SEQ = 1,
    K_NEAREST = 2,
    K_COMMON = 4,
    K_XGB = 8,
    K_ENSEMBLE = 16,
    K_LOCAL = 32,
    K_ALL = 63
};

typedef struct pred_kind {
    const char *name;
    unsigned bit;
    const pred_ops *ops;
} pred_kind;

static const pred_kind kinds[] = {
    {"seq2seq", K_SEQ2SEQ, &pred_seq2seq_ops}, {"nearest", K_NEAREST, &pred_nearest_ops},
    {"common", K_COMMON, &pred_common_ops},    {"xgb", K_XGB, &pred_xgb_ops},
    {"local", K_LOCAL, &pred_local_ops},       {"ensemble", K_ENSEMBLE, &pred_ensemble_ops},
};

typedef struct hyper_key {
    const char *name;
    int is_int;
    double lo, hi, def;
    unsigned kinds;
    size_t off; /* into struct predictor: int or double */
} hyper_key;

static const hyper_key hyper_keys[] = {
    {"top", 1, 1, 1000, 8, K_ALL, offsetof(predictor, top)},
    {"next_weight", 0, 0, 1, 0.5, K_ALL, offsetof(predictor, next_weight)},
    {"beam", 1, 1, 1024, 32, K_ALL, offsetof(predictor, beam)},
    {"hidden", 1, 4, 512, 64, K_SEQ2SEQ | K_ENSEMBLE, offsetof(predictor, hidden)},
    {"epochs", 1, 1, 100000, 300, K_SEQ2SEQ | K_ENSEMBLE, offsetof(predictor, epochs)},
    {"lr", 0, 1e-6, 1, 0.003, K_SEQ2SEQ | K_ENSEMBLE, offsetof(predictor, lr)},
    {"rounds", 1, 1, 2000, 60, K_XGB | K_ENSEMBLE, offsetof(predictor, rounds)},
    {"depth", 1, 1, 16, 4, K_XGB | K_ENSEMBLE, offsetof(predictor, depth)},
    /* the training set's derived features (model/derived.h) as extra inputs: 1 use (the
     * default: the cpu-shapes report's ensemble gains on conv2d, service/model/README.md), 0 drop
     */
    {"derived", 1, 0, 1, 1, K_SEQ2SEQ | K_XGB | K_NEAREST | K_LOCAL | K_ENSEMBLE,
     offsetof(predictor, use_derived)},
    /* local: neighbours voting, the ratio to a neighbour's best that still counts (tol) */
    {"neighbours", 1, 1, 1000, 4, K_LOCAL | K_ENSEMBLE, offsetof(predictor, loc_k)},
    {"tol", 0, 0.001, 10, 0.10, K_LOCAL | K_ENSEMBLE, offsetof(predictor, loc_tol)},
    /* ensemble: a member's weight (0: not trained), the fusion constant, the members' list length,
     * whether every member's first choice joins the top-k (predictor_ensemble.c) */
    {"w_seq2seq", 0, 0, 100, 1, K_ENSEMBLE, offsetof(predictor, ens_w[0])},
    {"w_nearest", 0, 0, 100, 1, K_ENSEMBLE, offsetof(predictor, ens_w[1])},
    {"w_common", 0, 0, 100, 0.5, K_ENSEMBLE, offsetof(predictor, ens_w[2])},
    {"w_xgb", 0, 0, 100, 1, K_ENSEMBLE, offsetof(predictor, ens_w[3])},
    {"w_local", 0, 0, 100, 1, K_ENSEMBLE, offsetof(predictor, ens_w[4])},
    {"fuse_c", 0, 0, 1000, 10, K_ENSEMBLE, offsetof(predictor, ens_c)},
    {"list", 1, 1, PREDICTOR_MAX_K, 20, K_ENSEMBLE, offsetof(predictor, ens_list)},
    {"diverse", 1, 0, 1, 1, K_ENSEMBLE, offsetof(predictor, ens_diverse)},
};

#define N_KINDS (sizeof kinds / sizeof kinds[0])
#define N_HYPER (sizeof hyper_keys / sizeof hyper_keys[0])

const char *predictor_kinds(void)
{
    return "seq2seq, nearest, common, xgb, local, ensemble";
}

/* The report's choice (tests/bench/results/predict-cpu-shapes.txt, every top-5 measured): on the
 * cpu-shapes caches (43 + 43 problems, seeds 0-4 pooled) the ensemble with derived features leads
 * over both kernels paired on both of the targets (top-1 0.75, top-5 0.86) with the lowest
 * mean ratio and a worst top-1 of 2.35x. It costs the sum of its members (seq2seq's training
 * dominates: ~11-15 CPU s). */
const char *predictor_default_kind(void)
{
    return "ensemble";
}

static const pred_kind *pred_find_kind(const char *name)
{
    for (size_t i = 0; name && i < N_KINDS; i++) {
        if (strcmp(kinds[i].name, name) == 0)
            return &kinds[i];
    }
    return NULL;
}

int predictor_kind_exists(const char *kind)
{
    return pred_find_kind(kind) != NULL;
}

const char *predictor_kind(const predictor *p)
{
    return p->ops->name;
}

int predictor_num_params(const predictor *p)
{
    return p->np;
}

json_t *predictor_hyper_json(const predictor *p)
{
    return json_deep_copy(p->hyper);
}

json_t *pred_member_hyper(const predictor *p, const char *kind)
{
    const pred_kind *k = pred_find_kind(kind);
    json_t *h = json_object();
    for (size_t i = 0; h && k && i < N_HYPER; i++) {
        const json_t *v = json_object_get(p->hyper, hyper_keys[i].name);
        if ((hyper_keys[i].kinds & k->bit) && v &&
            json_object_set_new(h, hyper_keys[i].name, json_deep_copy(v)) != 0) {
            json_decref(h);
            h = NULL;
        }
    }
    return h;
}

/* Fills p's hyper fields and p->hyper from hyper (NULL: defaults). */
static int pred_parse_hyper(predictor *p, const pred_kind *k, const json_t *hyper, kt_error *err)
{
    const char *key;
    const json_t *v;
    if (hyper && !json_is_object(hyper))
        return kt_error_set(err, KT_ERR_BAD_OPTION, "hyper must be an object");
    json_object_foreach((json_t *)hyper, key, v)
    {
        int known = 0;
        for (size_t i = 0; i < N_HYPER && !known; i++)
            known = (hyper_keys[i].kinds & k->bit) && strcmp(hyper_keys[i].name, key) == 0;
        if (!known) {
            kt_error_set(err, KT_ERR_BAD_OPTION, "%s: unknown hyper-parameter '%s'", k->name, key);
            kt_error_hint(err, "accepted: top, next_weight, beam%s",
                          k->bit == K_SEQ2SEQ   ? ", hidden, epochs, lr, derived"
                          : k->bit == K_XGB     ? ", rounds, depth, derived"
                          : k->bit == K_LOCAL   ? ", neighbours, tol, derived"
                          : k->bit == K_NEAREST ? ", derived"
                          : k->bit == K_ENSEMBLE
                              ? ", hidden, epochs, lr, rounds, depth, derived, neighbours, tol, "
                                "w_seq2seq, "
                                "w_nearest, w_common, w_xgb, w_local, fuse_c, list, diverse"
                              : "");
            return -1;
        }
    }
    if (!(p->hyper = json_object()))
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (size_t i = 0; i < N_HYPER; i++) {
        const hyper_key *h = &hyper_keys[i];
        if (!(h->kinds & k->bit))
            continue;
        double x = h->def;
        v = hyper ? json_object_get(hyper, h->name) : NULL;
        if (v) {
            x = json_is_number(v) ? json_number_value(v) : NAN;
            if (!(x >= h->lo && x <= h->hi) || (h->is_int && x != floor(x))) {
                kt_error_set(err, KT_ERR_BAD_OPTION,
                             "%s: hyper-parameter %s must be %s in [%g, %g]", k->name, h->name,
                             h->is_int ? "an integer" : "a number", h->lo, h->hi);
                kt_error_hint(err, "default %g", h->def);
                return -1;
            }
        }
        char *field = (char *)p + h->off;
        if (h->is_int)
            *(int *)field = (int)x;
        else
            *(double *)field = x;
        if (json_object_set_new(p->hyper, h->name,
                                h->is_int ? json_integer((json_int_t)x) : json_real(x)) != 0)
            return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    }
    return 0;
}

int predictor_hyper_check(const char *kind, const json_t *hyper, kt_error *err)
{
    const pred_kind *k = pred_find_kind(kind ? kind : predictor_default_kind());
    predictor scratch;
    if (!k) {
        kt_error_set(err, KT_ERR_BAD_OPTION, "unknown predictor '%s'", kind);
        kt_error_hint(err, "predictors: %s", predictor_kinds());
        return -1;
    }
    memset(&scratch, 0, sizeof scratch);
    int rc = pred_parse_hyper(&scratch, k, hyper, err);
    json_decref(scratch.hyper);
    return rc;
}

/* A predictor of kind k with its layout copied from params / arg_names / derived (NULL: none). */
static predictor *pred_new(const pred_kind *k, const json_t *hyper, const json_t *params,
                           const json_t *arg_names, const json_t *ddesc, kt_error *err)
{
    predictor *p = calloc(1, sizeof *p);
    if (!p) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    p->ops = k->ops;
    if (pred_parse_hyper(p, k, hyper, err) < 0)
        goto fail;
    /* a training set validates its layout: build one to check a loaded model's */
    training_set *chk = training_set_new(params, arg_names, err);
    if (!chk)
        goto fail;
    training_set_free(chk);
    p->params = json_deep_copy(params);
    p->arg_names = json_deep_copy(arg_names);
    p->np = (int)json_array_size(params);
    p->na = (int)json_array_size(arg_names);
    if (ddesc && p->use_derived && !(p->dv = derived_new(ddesc, arg_names, err)))
        goto fail;
    p->nd = derived_count(p->dv);
    p->nf = p->na + p->nd;
    p->nv = calloc((size_t)p->np, sizeof *p->nv);
    if (!p->params || !p->arg_names || !p->nv) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto fail;
    }
    for (int q = 0; q < p->np; q++)
        p->nv[q] =
            (int)json_array_size(json_object_get(json_array_get(params, (size_t)q), "values"));
    return p;
fail:
    predictor_free(p);
    return NULL;
}

void predictor_free(predictor *p)
{
    if (!p)
        return;
    if (p->state && p->ops->destroy)
        p->ops->destroy(p);
    json_decref(p->hyper);
    json_decref(p->params);
    json_decref(p->arg_names);
    derived_free(p->dv);
    free(p->nv);
    free(p);
}

predictor *predictor_train(const char *kind, const training_set *ts, const json_t *hyper,
                           uint64_t seed, kt_error *err)
{
    predictor *p = NULL;
    const pred_kind *k = pred_find_kind(kind);
    if (!k) {
        kt_error_set(err, KT_ERR_BAD_OPTION, "unknown predictor '%s'", kind ? kind : "(null)");
        kt_error_hint(err, "predictors: %s", predictor_kinds());
        goto fail;
    }
    if (!k->ops) {
        kt_error_set(err, KT_ERR_NOT_IMPLEMENTED, "predictor '%s' is not built yet", kind);
        goto fail;
    }
    int trials = 0;
    for (int i = 0; i < training_set_num_problems(ts); i++)
        trials += training_set_num_trials(ts, i) > 0;
    if (trials == 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the training set has no tuned problem");
        kt_error_hint(err, "tune a few problems of this kernel on this device class first");
        goto fail;
    }
    if (!(p = pred_new(k, hyper, training_set_params(ts), training_set_arg_names(ts),
                       training_set_derived(ts), err)) ||
        p->ops->train(p, ts, seed, err) < 0)
        goto fail;
    return p;
fail:
    predictor_free(p);
    return NULL;
}

/* The problem's arguments in the model's order, as training_set_args_of, then its derived values
 * (out holds p->nf). */
static int pred_args(const predictor *p, const json_t *problem, double *out, kt_error *err)
{
    if (training_set_args_from(p->arg_names, problem, out, err) < 0)
        return -1;
    return derived_eval(p->dv, out, out + p->na, err);
}

/* sp has the model's parameters: same names, order and values. */
static int pred_check_space(const predictor *p, const space *sp, kt_error *err)
{
    const char *why = NULL;
    int q = 0;
    if (space_num_params(sp) != p->np)
        why = "another number of parameters";
    for (; !why && q < p->np; q++) {
        const json_t *d = json_array_get(p->params, (size_t)q);
        const json_t *vals = json_object_get(d, "values");
        if (strcmp(space_param_name(sp, q), json_string_value(json_object_get(d, "name"))) != 0)
            why = "another parameter name";
        else if (space_param_num_values(sp, q) != p->nv[q])
            why = "another number of values";
        for (int v = 0; !why && v < p->nv[q]; v++) {
            json_t *x = space_param_value_json(sp, q, v);
            if (!json_equal(x, json_array_get(vals, (size_t)v)) &&
                !(json_is_number(x) && json_is_number(json_array_get(vals, (size_t)v)) &&
                  json_number_value(x) == json_number_value(json_array_get(vals, (size_t)v))))
                why = "another value";
            json_decref(x);
        }
    }
    if (!why)
        return 0;
    kt_error_set(err, KT_ERR_BAD_REQUEST, "the space's parameters differ from the model's (%s%s%s)",
                 why, q > 0 && q <= p->np ? " at parameter " : "",
                 q > 0 && q <= p->np ? json_string_value(json_object_get(
                                           json_array_get(p->params, (size_t)q - 1), "name"))
                                     : "");
    kt_error_hint(err, "train a new model: the kernel's parameters changed");
    return -1;
}

int pred_row_valid(const space *sp, const int *row)
{
    config_id id;
    return space_encode(sp, row, &id) == 0;
}

int pred_row_push(const predictor *p, int *rows, double *score, int *n, int k, const int *row,
                  double s)
{
    size_t w = (size_t)p->np * sizeof *row;
    if (*n >= k)
        return 0;
    for (int i = 0; i < *n; i++) {
        if (memcmp(rows + (size_t)i * (size_t)p->np, row, w) == 0)
            return 0;
    }
    memcpy(rows + (size_t)*n * (size_t)p->np, row, w);
    score[*n] = s;
    (*n)++;
    return 1;
}

int pred_training_rows(const predictor *p, const training_set *ts, int **prob, int **rank)
{
    int n = 0, at = 0;
    for (int i = 0; i < training_set_num_problems(ts); i++) {
        int t = training_set_num_trials(ts, i);
        n += t < p->top ? t : p->top;
    }
    *prob = malloc((size_t)(n ? n : 1) * sizeof **prob);
    *rank = malloc((size_t)(n ? n : 1) * sizeof **rank);
    if (!*prob || !*rank) {
        free(*prob);
        free(*rank);
        *prob = *rank = NULL;
        return -1;
    }
    for (int i = 0; i < training_set_num_problems(ts); i++) {
        for (int r = 0; r < training_set_num_trials(ts, i) && r < p->top; r++) {
            (*prob)[at] = i;
            (*rank)[at++] = r;
        }
    }
    return n;
}

int predictor_decode(predictor *p, const json_t *problem, const space *sp, predict_mode mode,
                     int width, int k, int *rows, double *score, kt_error *err)
{
    double args[PRED_MAX_FEATS];
    if (k < 1 || k > PREDICTOR_MAX_K)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "k must be 1-%d", PREDICTOR_MAX_K);
    if (mode == PREDICT_CONSTRAINED && !sp)
        return kt_error_set(err, KT_ERR_INTERNAL, "predictor_decode: constrained without a space");
    if (pred_args(p, problem, args, err) < 0 || (sp && pred_check_space(p, sp, err) < 0))
        return -1;
    if (width <= 0)
        width = p->beam;
    if (width < k)
        width = k;
    return p->ops->decode(p, args, sp, mode, width, k, rows, score, err);
}

void predictor_candidates_release(predictor_candidate *c, int n)
{
    for (int i = 0; c && i < n; i++) {
        json_decref(c[i].config);
        c[i].config = NULL;
    }
}

int predictor_predict(predictor *p, const json_t *problem, const space *sp, int k,
                      predictor_candidate *out, kt_error *err)
{
    int *rows = NULL, n = 0, got = -1;
    double *score = NULL;
    if (k < 1 || k > PREDICTOR_MAX_K)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "k must be 1-%d", PREDICTOR_MAX_K);
    if (!sp)
        return kt_error_set(err, KT_ERR_INTERNAL, "predictor_predict: no space");
    rows = malloc((size_t)k * (size_t)p->np * sizeof *rows);
    score = malloc((size_t)k * sizeof *score);
    if (!rows || !score) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if ((got = predictor_decode(p, problem, sp, PREDICT_CONSTRAINED, 0, k, rows, score, err)) < 0)
        goto out;
    for (int i = 0; i < got; i++) {
        config_id id;
        if (space_encode(sp, rows + (size_t)i * (size_t)p->np, &id) < 0)
            continue; /* the decoders keep only valid rows; never trust it blindly */
        if (!(out[n].config = space_config_json(sp, id))) {
            predictor_candidates_release(out, n);
            got = kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
        out[n].id = id;
        out[n++].score = score[i];
    }
    got = n;
out:
    free(rows);
    free(score);
    return got;
}

/* ---- serialisation ---- */

int pred_put_blob(strbuf *bin, const void *data, size_t n)
{
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)n >> (8 * i));
    if (strbuf_append(bin, (const char *)len, 8) < 0)
        return -1;
    return n ? strbuf_append(bin, data, n) : 0;
}

int pred_get_blob(const unsigned char *bin, size_t len, size_t *pos, const unsigned char **data,
                  size_t *n, kt_error *err)
{
    uint64_t m = 0;
    if (len - *pos < 8 || *pos > len)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "model bytes cut short");
    for (int i = 0; i < 8; i++)
        m |= (uint64_t)bin[*pos + (size_t)i] << (8 * i);
    *pos += 8;
    if (m > len - *pos)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "model bytes cut short");
    *data = bin + *pos;
    *n = (size_t)m;
    *pos += (size_t)m;
    return 0;
}

int predictor_save(const predictor *p, strbuf *out, kt_error *err)
{
    strbuf bin;
    char *hyper = NULL, *meta_text = NULL;
    json_t *meta = json_pack("{s:O, s:O}", "params", p->params, "arg_names", p->arg_names);
    int rc = -1;

    strbuf_init(&bin, (size_t)1 << 31);
    if (meta && p->dv && json_object_set(meta, "derived", (json_t *)derived_desc(p->dv)) < 0) {
        json_decref(meta);
        meta = NULL;
    }
    if (!meta) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (p->ops->save(p, meta, &bin, err) < 0)
        goto out;
    hyper = json_dumps(p->hyper, JSON_COMPACT | JSON_SORT_KEYS);
    meta_text = json_dumps(meta, JSON_COMPACT);
    if (!hyper || !meta_text || bin.failed ||
        strbuf_appendf(out, "%s %d %s\n%s\n%s\n", PRED_MAGIC, PREDICTOR_FORMAT_VERSION,
                       p->ops->name, hyper, meta_text) < 0 ||
        strbuf_append(out, strbuf_str(&bin), bin.len) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "the model does not fit in memory");
        goto out;
    }
    rc = 0;
out:
    free(hyper);
    free(meta_text);
    json_decref(meta);
    strbuf_release(&bin);
    return rc;
}

/* The next line of buf from *pos (without the newline) as a NUL-terminated copy, or NULL. */
static char *pred_line(const unsigned char *buf, size_t len, size_t *pos)
{
    const unsigned char *nl = *pos < len ? memchr(buf + *pos, '\n', len - *pos) : NULL;
    if (!nl)
        return NULL;
    size_t n = (size_t)(nl - (buf + *pos));
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, buf + *pos, n);
        s[n] = 0;
    }
    *pos += n + 1;
    return s;
}

predictor *predictor_load(const unsigned char *buf, size_t len, kt_error *err)
{
    predictor *p = NULL;
    size_t pos = 0;
    char *head = pred_line(buf, len, &pos), kind[32];
    char *hyper_text = pred_line(buf, len, &pos), *meta_text = pred_line(buf, len, &pos);
    json_t *hyper = NULL, *meta = NULL;
    int version = 0, used = 0;
    const pred_kind *k = NULL;

    if (!head || sscanf(head, PRED_MAGIC " %d %31s%n", &version, kind, &used) != 2 ||
        head[used] != 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "not a ktune model (no \"%s\" header)", PRED_MAGIC);
        goto fail;
    }
    if (version < PREDICTOR_FORMAT_VERSION_MIN || version > PREDICTOR_FORMAT_VERSION) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "model format %d, this build reads %d-%d", version,
                     PREDICTOR_FORMAT_VERSION_MIN, PREDICTOR_FORMAT_VERSION);
        kt_error_hint(err, "train the model again with this build");
        goto fail;
    }
    if (!(k = pred_find_kind(kind)) || !k->ops) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "model of unknown kind '%s'", kind);
        goto fail;
    }
    if (!hyper_text || !meta_text || !(hyper = json_loads(hyper_text, 0, NULL)) ||
        !(meta = json_loads(meta_text, 0, NULL))) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "model bytes damaged (hyper or meta line)");
        goto fail;
    }
    if (!(p = pred_new(k, hyper, json_object_get(meta, "params"),
                       json_object_get(meta, "arg_names"),
                       version >= 2 ? json_object_get(meta, "derived") : NULL, err)) ||
        p->ops->load(p, meta, buf + pos, len - pos, err) < 0) {
        kt_error_prefix(err, "loading a %s model", kind);
        goto fail;
    }
    goto out;
fail:
    predictor_free(p);
    p = NULL;
out:
    free(head);
    free(hyper_text);
    free(meta_text);
    json_decref(hyper);
    json_decref(meta);
    return p;
}

json_t *pred_int_array(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) {
        if (json_array_append_new(a, json_integer(v[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

int pred_read_ints(const json_t *a, int n, const int *lim, int *out)
{
    if (!json_is_array(a) || json_array_size(a) != (size_t)n)
        return -1;
    for (int i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= (lim ? lim[i] : 1 << 30))
            return -1;
        out[i] = (int)json_integer_value(v);
    }
    return 0;
}
