/* search/searcher — the strategy registry (a const table of vtables), option validation and
 * dispatch. */
#include "search/searcher_impl.h"
#include "search/search_set.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/suggest.h"

struct searcher {
    const searcher_vtable *vt;
    searcher_vtable ops_vt; /* searcher_new_ops: the caller's operations, vt points here */
    void *state;
    const space *sp;
    int asked; /* 1 once searcher_ask was called: history comes too late then */
    /* Warm start (searcher_set_history): first ids, proposed in order before the strategy's. */
    config_id *first;
    int n_first, first_pos;
    search_map first_at;     /* id -> index in first */
    trial_result *first_res; /* told results of the first ids */
    unsigned char *first_told;
};

extern const searcher_vtable searcher_auto_vtable;      /* search/auto.c */
extern const searcher_vtable searcher_gbfs_vtable;      /* search/gbfs.c */
extern const searcher_vtable searcher_xgb_vtable;       /* search/xgb.c */
extern const searcher_vtable searcher_rnn_vtable;       /* search/rnn.c */
extern const searcher_vtable searcher_na2c_vtable;      /* search/na2c.c */
extern const searcher_vtable searcher_bo_vtable;        /* search/bo.c */
extern const searcher_vtable searcher_mindmap_vtable;   /* search/mindmap.c */
extern const searcher_vtable searcher_xgb_local_vtable; /* search/xgb_local.c */

static const searcher_vtable *const strategies[] = {
    &searcher_random_vtable,     &searcher_exhaustive_vtable, &searcher_anneal_vtable,
    &searcher_greedy_ils_vtable, &searcher_genetic_vtable,    &searcher_auto_vtable,
    &searcher_gbfs_vtable,       &searcher_xgb_vtable,        &searcher_rnn_vtable,
    &searcher_na2c_vtable,       &searcher_bo_vtable,         &searcher_mindmap_vtable,
    &searcher_xgb_local_vtable,
};
#define N_STRATEGIES ((int)(sizeof strategies / sizeof strategies[0]))

/* Kept in the table's order; a unit test checks that it matches. */
static const char strategy_names[] =
    "random, exhaustive, anneal, greedy_ils, genetic, auto, gbfs, xgb, rnn, na2c, bo, mindmap, "
    "xgb_local";

static const searcher_vtable *find_strategy(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; i < N_STRATEGIES; i++) {
        if (strcmp(strategies[i]->name, name) == 0)
            return strategies[i];
    }
    return NULL;
}

int searcher_learns(const char *name)
{
    const searcher_vtable *v = find_strategy(name);
    return v && v->tell != NULL;
}

int searcher_needs_surrogate(const char *name)
{
    const searcher_vtable *v = find_strategy(name);
    return v && v->needs_surrogate;
}

int searcher_exists(const char *name)
{
    return find_strategy(name) != NULL;
}

const char *searcher_names(void)
{
    return strategy_names;
}

/* Names people reach for that are none of ours, and the strategy they mean (issue 31: "bayes" is
 * two edits too far from "bo" for the distance rule). */
static const struct {
    const char *alias, *name;
} strategy_aliases[] = {
    {"bayes", "bo"},
    {"bayesian", "bo"},
    {"bayes_opt", "bo"},
    {"bayesian_optimization", "bo"},
    {"sa", "anneal"},
    {"simulated_annealing", "anneal"},
    {"annealing", "anneal"},
    {"ga", "genetic"},
    {"genetic_algorithm", "genetic"},
    {"brute_force", "exhaustive"},
    {"grid", "exhaustive"},
    {"ils", "greedy_ils"},
    {"mind_mappings", "mindmap"},
};

void searcher_suggest(const char *name, kt_error *err)
{
    kt_suggest s;
    kt_suggest_init(&s, name);
    for (size_t i = 0; name && i < sizeof strategy_aliases / sizeof strategy_aliases[0]; i++) {
        if (strcasecmp(name, strategy_aliases[i].alias) == 0 && err) {
            char old[KT_ERROR_HINT_MAX];
            snprintf(old, sizeof old, "%s", err->hint);
            kt_error_hint(err, "did you mean '%s'?%s%s", strategy_aliases[i].name,
                          old[0] ? " " : "", old);
            return;
        }
    }
    kt_suggest_add_list(&s, strategy_names);
    kt_suggest_hint(&s, err);
}

/* "a, b, c" of a strategy's option names into buf (truncated to fit). */
static void option_names(const searcher_option *opts, int n, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", opts[i].name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

static int choice_ok(const char *choices, const char *s)
{
    size_t n = strlen(s);
    const char *p = choices;
    while (p && *p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0)
            return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

static int check_value(const char *strategy, const searcher_option *o, const json_t *v,
                       kt_error *err)
{
    double x;
    switch (o->type) {
    case SEARCHER_OPT_INTEGER:
    case SEARCHER_OPT_NUMBER:
        if (!json_is_number(v))
            goto wrong_type;
        x = json_number_value(v);
        if (o->type == SEARCHER_OPT_INTEGER && (!isfinite(x) || x != floor(x)))
            goto wrong_type;
        if (!(x >= o->min && x <= o->max))
            return kt_error_set(err, KT_ERR_BAD_OPTION,
                                "option '%s' of strategy %s must be between %g and %g", o->name,
                                strategy, o->min, o->max);
        return 0;
    case SEARCHER_OPT_BOOLEAN:
        if (!json_is_boolean(v))
            goto wrong_type;
        return 0;
    case SEARCHER_OPT_START:
        if (json_is_object(v))
            return 0; /* a configuration: searcher_start_id checks it against the space */
        goto string_value;
    case SEARCHER_OPT_STRING:
    string_value:
        if (!json_is_string(v))
            goto wrong_type;
        if (o->choices && !choice_ok(o->choices, json_string_value(v))) {
            kt_error_set(err, KT_ERR_BAD_OPTION, "option '%s' of strategy %s must be one of: %s",
                         o->name, strategy, o->choices);
            return -1;
        }
        return 0;
    }
wrong_type:
    return kt_error_set(
        err, KT_ERR_BAD_OPTION, "option '%s' of strategy %s must be %s", o->name, strategy,
        o->type == SEARCHER_OPT_INTEGER   ? "an integer"
        : o->type == SEARCHER_OPT_NUMBER  ? "a number"
        : o->type == SEARCHER_OPT_BOOLEAN ? "a boolean"
        : o->type == SEARCHER_OPT_START ? "one of random, default, paper or a configuration object"
                                        : "a string");
}

int searcher_validate_options(const char *strategy, const searcher_option *opts, int n_opts,
                              const json_t *options, kt_error *err)
{
    const char *key;
    json_t *v;
    char names[KT_ERROR_HINT_MAX];

    if (!options || json_is_null(options))
        return 0;
    if (!json_is_object(options))
        return kt_error_set(err, KT_ERR_BAD_OPTION, "options of strategy %s must be a JSON object",
                            strategy);
    json_object_foreach((json_t *)options, key, v)
    {
        const searcher_option *o = NULL;
        for (int i = 0; i < n_opts && !o; i++) {
            if (strcmp(opts[i].name, key) == 0)
                o = &opts[i];
        }
        if (!o) {
            kt_error_set(err, KT_ERR_BAD_OPTION, "unknown option '%.100s' for strategy %s", key,
                         strategy);
            if (n_opts == 0) {
                kt_error_hint(err, "strategy %s takes no options", strategy);
            } else {
                option_names(opts, n_opts, names, sizeof names);
                kt_error_hint(err, "accepted options: %s", names);
                kt_suggest s;
                kt_suggest_init(&s, key);
                kt_suggest_add_list(&s, names);
                kt_suggest_hint(&s, err);
            }
            return -1;
        }
        if (check_value(strategy, o, v, err) < 0)
            return -1;
    }
    return 0;
}

static json_t *option_default(const searcher_option *o)
{
    return o->default_json ? json_loads(o->default_json, JSON_DECODE_ANY, NULL) : NULL;
}

double searcher_option_number(const searcher_option *o, const json_t *options)
{
    const json_t *v = options ? json_object_get(options, o->name) : NULL;
    if (v)
        return json_number_value(v);
    json_t *d = option_default(o);
    double x = d ? json_number_value(d) : 0.0;
    json_decref(d);
    return x;
}

int searcher_option_bool(const searcher_option *o, const json_t *options)
{
    const json_t *v = options ? json_object_get(options, o->name) : NULL;
    if (v)
        return json_is_true(v);
    json_t *d = option_default(o);
    int b = json_is_true(d);
    json_decref(d);
    return b;
}

const char *searcher_option_string(const searcher_option *o, const json_t *options, char *buf,
                                   size_t cap)
{
    const json_t *v = options ? json_object_get(options, o->name) : NULL;
    const char *s = NULL;
    if (v)
        return json_string_value(v);
    json_t *d = option_default(o);
    if (json_is_string(d) && cap > 0) {
        snprintf(buf, cap, "%s", json_string_value(d));
        s = buf;
    }
    json_decref(d);
    return s;
}

int searcher_start_id(const char *strategy, const searcher_option *o, const json_t *options,
                      const space *sp, kt_rng *rng, config_id *out, int *is_random, kt_error *err)
{
    const json_t *v = options ? json_object_get(options, o->name) : NULL;
    json_t *d = v ? NULL : option_default(o);
    const json_t *start = v ? v : d;
    kt_error why;
    int rc = -1;

    if (is_random)
        *is_random = 0;
    if (space_count(sp) == 0) {
        kt_error_set(err, KT_ERR_BAD_OPTION, "strategy %s has no start state: the space is empty",
                     strategy);
        goto out;
    }
    if (json_is_object(start)) {
        kt_error_clear(&why);
        if (space_config_from_json(sp, start, out, &why) < 0) {
            kt_error_set(err, KT_ERR_BAD_OPTION,
                         "option '%s' of strategy %s is not a configuration of the space", o->name,
                         strategy);
            kt_error_hint(err, "%s", why.message);
            goto out;
        }
        rc = 0;
    } else if (json_is_string(start) && strcmp(json_string_value(start), "paper") == 0) {
        *out = space_count(sp) - 1;
        rc = 0;
    } else if (json_is_string(start) && strcmp(json_string_value(start), "random") == 0) {
        *out = space_sample(sp, rng);
        if (is_random)
            *is_random = 1;
        rc = 0;
    } else {
        kt_error_set(err, KT_ERR_BAD_OPTION,
                     "option '%s' of strategy %s: \"default\" needs the kernel's default "
                     "configuration, which this caller does not know",
                     o->name, strategy);
        kt_error_hint(err, "pass a configuration object, \"paper\" or \"random\"");
    }
out:
    json_decref(d);
    return rc;
}

json_t *searcher_options_resolve_start(const json_t *options, const json_t *default_config,
                                       kt_error *err)
{
    const json_t *v = json_is_object(options) ? json_object_get(options, "start") : NULL;
    json_t *copy;

    if (!json_is_string(v) || strcmp(json_string_value(v), "default") != 0)
        return options ? json_incref((json_t *)options) : NULL;
    if (!json_is_object(default_config)) {
        kt_error_set(err, KT_ERR_BAD_OPTION,
                     "option 'start' is \"default\", but the kernel variant has no default "
                     "configuration");
        kt_error_hint(err, "pass a configuration object, \"paper\" or \"random\"");
        return NULL;
    }
    copy = json_deep_copy(options);
    if (!copy || json_object_set_new(copy, "start", json_deep_copy(default_config)) < 0) {
        json_decref(copy);
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    return copy;
}

searcher *searcher_new(const char *name, const space *sp, const json_t *options, uint64_t seed,
                       kt_error *err)
{
    searcher *s = NULL;
    const searcher_vtable *vt = find_strategy(name);

    if (!vt) {
        kt_error_set(err, KT_ERR_UNKNOWN_STRATEGY, "unknown strategy '%.100s'", name ? name : "");
        kt_error_hint(err, "valid strategies: %s", strategy_names);
        searcher_suggest(name, err);
        goto out;
    }
    if (!sp) {
        kt_error_set(err, KT_ERR_INTERNAL, "searcher %s needs a space", vt->name);
        goto out;
    }
    if (searcher_validate_options(vt->name, vt->options, vt->n_options, options, err) < 0)
        goto out;
    s = calloc(1, sizeof *s);
    if (!s) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    s->vt = vt;
    s->sp = sp;
    s->state = vt->create(sp, json_is_object(options) ? options : NULL, seed, err);
    if (!s->state) {
        free(s);
        s = NULL;
    }
out:
    return s;
}

searcher *searcher_new_ops(const searcher_ops *ops, void *state, const space *sp, kt_error *err)
{
    searcher *s = NULL;
    if (!ops || !ops->name || !ops->ask || !ops->tell || !ops->destroy || !sp) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "searcher_new_ops needs a name, ask, tell, destroy "
                     "and a space");
        return NULL;
    }
    if (!(s = calloc(1, sizeof *s))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    s->ops_vt.name = ops->name;
    s->ops_vt.summary = "";
    s->ops_vt.ask = ops->ask;
    s->ops_vt.tell = ops->tell;
    s->ops_vt.destroy = ops->destroy;
    s->vt = &s->ops_vt;
    s->state = state;
    s->sp = sp;
    return s;
}

/* A strategy's proposal that is one of the first ids: it was proposed already, so it is dropped;
 * when its result is known the strategy is told it again (it proposed it and waits for it). */
static int searcher_drop_first(searcher *s, config_id id)
{
    uint64_t k;
    if (s->n_first == 0 || !search_map_get(&s->first_at, id, &k))
        return 0;
    if (s->vt->proposes_first) { /* the strategy's own pick: counted, not dropped */
        s->first_pos++;
        return 0;
    }
    if (s->first_told[k] && s->vt->tell)
        s->vt->tell(s->state, &id, &s->first_res[k], 1);
    return 1;
}

int searcher_ask(searcher *s, config_id *out, int max)
{
    int n = 0;
    if (!s || !out || max <= 0)
        return 0;
    s->asked = 1;
    while (!s->vt->proposes_first && n < max && s->first_pos < s->n_first)
        out[n++] = s->first[s->first_pos++];
    while (n < max) {
        int got = s->vt->ask(s->state, out + n, max - n), kept = 0;
        if (got <= 0)
            break;
        for (int j = 0; j < got; j++) {
            if (!searcher_drop_first(s, out[n + j]))
                out[n + kept++] = out[n + j];
        }
        n += kept;
        if (kept == got) /* nothing dropped: the strategy's answer stands as it gave it */
            break;
    }
    return n;
}

void searcher_tell(searcher *s, const config_id *ids, const trial_result *r, int n)
{
    if (!s || n <= 0 || !ids || !r)
        return;
    for (int i = 0; s->n_first > 0 && i < n; i++) {
        uint64_t k;
        if (search_map_get(&s->first_at, ids[i], &k) && !s->first_told[k]) {
            s->first_res[k] = r[i];
            s->first_told[k] = 1;
        }
    }
    if (s->vt->tell) /* NULL: results do not steer this strategy */
        s->vt->tell(s->state, ids, r, n);
}

static void searcher_drop_history(searcher *s)
{
    free(s->first);
    free(s->first_res);
    free(s->first_told);
    search_map_free(&s->first_at);
    s->first = NULL;
    s->first_res = NULL;
    s->first_told = NULL;
    s->n_first = s->first_pos = 0;
}

/* Copies the usable part of h: first deduplicated and in the space, prior filtered. */
static int searcher_clean_history(searcher *s, const searcher_history *h, searcher_history *c,
                                  config_id **prior_id, double **prior_ms, int **prior_src,
                                  kt_error *err)
{
    uint64_t count = space_count(s->sp);
    int n_first = h->n_first < SEARCHER_MAX_FIRST ? h->n_first : SEARCHER_MAX_FIRST;
    int n_prior = h->n_prior < SEARCHER_MAX_PRIOR ? h->n_prior : SEARCHER_MAX_PRIOR;

    memset(c, 0, sizeof *c);
    s->first = calloc((size_t)(n_first > 0 ? n_first : 1), sizeof *s->first);
    s->first_res = calloc((size_t)(n_first > 0 ? n_first : 1), sizeof *s->first_res);
    s->first_told = calloc((size_t)(n_first > 0 ? n_first : 1), 1);
    *prior_id = calloc((size_t)(n_prior > 0 ? n_prior : 1), sizeof **prior_id);
    *prior_ms = calloc((size_t)(n_prior > 0 ? n_prior : 1), sizeof **prior_ms);
    *prior_src = calloc((size_t)(n_prior > 0 ? n_prior : 1), sizeof **prior_src);
    if (!s->first || !s->first_res || !s->first_told || !*prior_id || !*prior_ms || !*prior_src)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int i = 0; h->first && i < h->n_first && s->n_first < n_first; i++) {
        config_id id = h->first[i];
        uint64_t k;
        if (id >= count || search_map_get(&s->first_at, id, &k))
            continue;
        if (search_map_reserve(&s->first_at) < 0)
            return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        search_map_put(&s->first_at, id, (uint64_t)s->n_first);
        s->first[s->n_first++] = id;
    }
    for (int i = 0; h->prior_id && h->prior_ms && h->prior_source && i < n_prior; i++) {
        if (h->prior_id[i] >= count || !isfinite(h->prior_ms[i]) || !(h->prior_ms[i] > 0) ||
            h->prior_source[i] < 0 || h->prior_source[i] >= SEARCHER_MAX_SOURCES)
            continue;
        (*prior_id)[c->n_prior] = h->prior_id[i];
        (*prior_ms)[c->n_prior] = h->prior_ms[i];
        (*prior_src)[c->n_prior] = h->prior_source[i];
        c->n_prior++;
    }
    c->first = s->first;
    c->n_first = s->n_first;
    c->prior_id = *prior_id;
    c->prior_ms = *prior_ms;
    c->prior_source = *prior_src;
    return 0;
}

int searcher_set_history(searcher *s, const searcher_history *h, kt_error *err)
{
    config_id *prior_id = NULL;
    double *prior_ms = NULL;
    int *prior_src = NULL, rc = -1;
    searcher_history c;

    if (!s || !h || (h->n_first == 0 && h->n_prior == 0)) {
        rc = 0;
        goto out;
    }
    if (s->asked || s->first) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "searcher %s: history after the first ask",
                     s->vt->name);
        kt_error_hint(err, "set the history once, right after searcher_new");
        goto out;
    }
    if (h->n_first < 0 || h->n_prior < 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "searcher %s: negative history counts (%d, %d)",
                     s->vt->name, h->n_first, h->n_prior);
        goto out;
    }
    if (searcher_clean_history(s, h, &c, &prior_id, &prior_ms, &prior_src, err) < 0 ||
        (s->vt->history && s->vt->history(s->state, &c, err) < 0)) {
        searcher_drop_history(s); /* a strategy's hook fails before changing its state */
        goto out;
    }
    rc = 0;
out:
    free(prior_id);
    free(prior_ms);
    free(prior_src);
    return rc;
}

json_t *searcher_stats(const searcher *s)
{
    return s && s->vt->stats ? s->vt->stats(s->state) : NULL;
}

void searcher_set_oracle(searcher *s, searcher_oracle_fn fn, void *arg)
{
    if (s && s->vt->set_oracle)
        s->vt->set_oracle(s->state, fn, arg);
}

int searcher_set_surrogate(searcher *s, surrogate *m, const double *problem_feat, int n,
                           kt_error *err)
{
    if (!s)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "no searcher");
    if (!s->vt->set_surrogate)
        return 0;
    if (s->asked) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "searcher %s: surrogate after the first ask",
                     s->vt->name);
        kt_error_hint(err, "set the surrogate right after searcher_new");
        return -1;
    }
    if (!m || n < 0 || (n > 0 && !problem_feat))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "searcher %s: no surrogate or features",
                            s->vt->name);
    return s->vt->set_surrogate(s->state, m, problem_feat, n, err);
}

int searcher_first_proposed(const searcher *s)
{
    return s ? s->first_pos : 0;
}

int searcher_first_count(const searcher *s)
{
    return s ? s->n_first : 0;
}

void searcher_free(searcher *s)
{
    if (!s)
        return;
    s->vt->destroy(s->state);
    searcher_drop_history(s);
    free(s);
}

const char *searcher_name(const searcher *s)
{
    return s ? s->vt->name : "";
}

static json_t *option_json(const searcher_option *o)
{
    static const char *const type_names[] = {"integer", "number", "boolean", "string",
                                             "string|object"};
    json_t *d = option_default(o);
    json_t *j = json_pack("{s:s, s:o, s:s}", "type", type_names[o->type], "default",
                          d ? d : json_null(), "description", o->description);
    if (j && o->type == SEARCHER_OPT_INTEGER) {
        json_object_set_new(j, "minimum", json_integer((json_int_t)o->min));
        json_object_set_new(j, "maximum", json_integer((json_int_t)o->max));
    } else if (j && o->type == SEARCHER_OPT_NUMBER) {
        json_object_set_new(j, "minimum", json_real(o->min));
        json_object_set_new(j, "maximum", json_real(o->max));
    }
    if (j && (o->type == SEARCHER_OPT_STRING || o->type == SEARCHER_OPT_START) && o->choices)
        json_object_set_new(j, "choices", json_string(o->choices));
    return j;
}

json_t *searcher_catalog_json(void)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < N_STRATEGIES; i++) {
        const searcher_vtable *vt = strategies[i];
        json_t *opts = json_object();
        for (int k = 0; opts && k < vt->n_options; k++)
            json_object_set_new(opts, vt->options[k].name, option_json(&vt->options[k]));
        json_array_append_new(arr, json_pack("{s:s, s:s, s:o}", "name", vt->name, "summary",
                                             vt->summary, "options", opts ? opts : json_object()));
    }
    return arr;
}
