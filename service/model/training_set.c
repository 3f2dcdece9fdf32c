/* model/training_set — problems and their measured configurations for the predictors (see
 * training_set.h). Trials of a problem are stored in insertion order (rows of value indices) with
 * an open-addressing hash from a row to its slot (dedupe in O(1)) and an order array kept sorted by
 * time (fastest first). */
#include "model/training_set.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/hash.h"
#include "core/number.h"
#include "model/derived.h"

typedef struct ts_problem {
    json_t *problem; /* canonical: every argument in arg order */
    char *key;       /* compact JSON, sorted keys */
    double *args;
    int *rows;  /* n * np value indices, insertion order */
    double *t;  /* n times */
    int *order; /* slots, fastest first */
    int *hash;  /* hcap slots holding slot + 1, 0 empty */
    size_t n, cap, hcap;
} ts_problem;

struct training_set {
    json_t *params, *arg_names;
    int np, na;
    int *nv;
    derived *dv; /* NULL: no derived features */
    ts_problem *probs;
    size_t n, cap;
};

static int ts_scalar(const json_t *v)
{
    return json_is_number(v) || json_is_string(v) || json_is_boolean(v);
}

static int ts_value_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_is_string(a) && json_is_string(b))
        return strcmp(json_string_value(a), json_string_value(b)) == 0;
    if (json_is_boolean(a) && json_is_boolean(b))
        return json_is_true(a) == json_is_true(b);
    return 0;
}

static int ts_check_params(const json_t *params, kt_error *err)
{
    size_t np = json_is_array(params) ? json_array_size(params) : 0;
    if (np < 1 || np > TS_MAX_PARAMS)
        return kt_error_set(err, KT_ERR_BAD_SPACE, "params must be an array of 1-%d parameters",
                            TS_MAX_PARAMS);
    for (size_t p = 0; p < np; p++) {
        const json_t *o = json_array_get(params, p);
        const json_t *name = json_object_get(o, "name"), *vals = json_object_get(o, "values");
        size_t nv = json_is_array(vals) ? json_array_size(vals) : 0;
        if (!json_is_string(name) || nv < 1 || nv > TS_MAX_VALUES)
            return kt_error_set(err, KT_ERR_BAD_SPACE,
                                "parameter %zu needs a \"name\" and 1-%d \"values\"", p,
                                TS_MAX_VALUES);
        for (size_t q = 0; q < p; q++) {
            if (strcmp(json_string_value(json_object_get(json_array_get(params, q), "name")),
                       json_string_value(name)) == 0)
                return kt_error_set(err, KT_ERR_BAD_SPACE, "parameter %s named twice",
                                    json_string_value(name));
        }
        for (size_t v = 0; v < nv; v++) {
            if (!ts_scalar(json_array_get(vals, v)))
                return kt_error_set(err, KT_ERR_BAD_SPACE,
                                    "parameter %s: value %zu is not a number, string or boolean",
                                    json_string_value(name), v);
            for (size_t w = 0; w < v; w++) {
                if (ts_value_equal(json_array_get(vals, v), json_array_get(vals, w)))
                    return kt_error_set(err, KT_ERR_BAD_SPACE, "parameter %s: value %zu repeated",
                                        json_string_value(name), v);
            }
        }
    }
    return 0;
}

static int ts_check_args(const json_t *names, kt_error *err)
{
    size_t na = json_is_array(names) ? json_array_size(names) : 0;
    if (na < 1 || na > TS_MAX_ARGS)
        goto bad;
    for (size_t a = 0; a < na; a++) {
        if (!json_is_string(json_array_get(names, a)))
            goto bad;
        for (size_t b = 0; b < a; b++) {
            if (strcmp(json_string_value(json_array_get(names, a)),
                       json_string_value(json_array_get(names, b))) == 0)
                goto bad;
        }
    }
    return 0;
bad:
    kt_error_set(err, KT_ERR_BAD_REQUEST, "arg_names must be 1-%d distinct strings", TS_MAX_ARGS);
    kt_error_hint(err, "the problem argument names of the kernel, in spec order");
    return -1;
}

training_set *training_set_new(const json_t *params, const json_t *arg_names, kt_error *err)
{
    training_set *ts = NULL;
    if (ts_check_params(params, err) < 0 || ts_check_args(arg_names, err) < 0)
        goto fail;
    ts = calloc(1, sizeof *ts);
    if (!ts)
        goto oom;
    ts->np = (int)json_array_size(params);
    ts->na = (int)json_array_size(arg_names);
    ts->params = json_deep_copy(params);
    ts->arg_names = json_deep_copy(arg_names);
    ts->nv = calloc((size_t)ts->np, sizeof *ts->nv);
    if (!ts->params || !ts->arg_names || !ts->nv)
        goto oom;
    for (int p = 0; p < ts->np; p++)
        ts->nv[p] = (int)json_array_size(json_object_get(json_array_get(params, p), "values"));
    return ts;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
fail:
    training_set_free(ts);
    return NULL;
}

training_set *training_set_new_from_space(const space *sp, const json_t *arg_names, kt_error *err)
{
    training_set *ts = NULL;
    json_t *params = json_array();
    int ok = params != NULL;
    for (int p = 0; ok && p < space_num_params(sp); p++) {
        json_t *vals = json_array();
        for (int v = 0; vals && v < space_param_num_values(sp, p); v++)
            json_array_append_new(vals, space_param_value_json(sp, p, v));
        json_t *o =
            vals ? json_pack("{s:s, s:o}", "name", space_param_name(sp, p), "values", vals) : NULL;
        ok = o && json_array_append_new(params, o) == 0;
    }
    if (!ok)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    else
        ts = training_set_new(params, arg_names, err);
    json_decref(params);
    return ts;
}

static void ts_problem_release(ts_problem *pr)
{
    json_decref(pr->problem);
    free(pr->key);
    free(pr->args);
    free(pr->rows);
    free(pr->t);
    free(pr->order);
    free(pr->hash);
}

void training_set_free(training_set *ts)
{
    if (!ts)
        return;
    for (size_t i = 0; i < ts->n; i++)
        ts_problem_release(&ts->probs[i]);
    free(ts->probs);
    free(ts->nv);
    derived_free(ts->dv);
    json_decref(ts->params);
    json_decref(ts->arg_names);
    free(ts);
}

/* A problem argument by name: "n" is the member n; "problem_size[1]" is element 1 of the list
 * problem_size (Kernel Tuner's problem_size, issue 27: a list argument is learnt from element by
 * element, under the names training_set_list_arg_names gives). NULL when there is none. */
static const json_t *problem_arg(const json_t *problem, const char *name)
{
    char member[128], digits[16];
    const char *open = strchr(name, '[');
    size_t len = open ? (size_t)(open - name) : 0, n_digits = open ? strlen(open + 1) : 0;
    int i;
    const json_t *whole = json_object_get(problem, name);
    if (whole || !open) /* a problem rebuilt from its arguments names its elements so */
        return whole;
    if (len == 0 || len >= sizeof member || n_digits < 2 || n_digits > sizeof digits ||
        open[n_digits] != ']')
        return NULL;
    memcpy(member, name, len);
    member[len] = '\0';
    memcpy(digits, open + 1, n_digits - 1);
    digits[n_digits - 1] = '\0';
    if (kt_parse_int(digits, 0, TS_MAX_ARGS - 1, &i) < 0)
        return NULL;
    return json_array_get(json_object_get(problem, member), (size_t)i);
}

/* Whether the argument name is an element of the problem's member key ("key[i]"). */
static int is_element_of(const char *name, const char *key)
{
    size_t len = strlen(key);
    return strncmp(name, key, len) == 0 && name[len] == '[';
}

int training_set_args_from(const json_t *arg_names, const json_t *problem, double *out,
                           kt_error *err)
{
    int na = (int)json_array_size(arg_names);
    const char *k;
    const json_t *v;
    if (na < 1 || na > TS_MAX_ARGS)
        return kt_error_set(err, KT_ERR_INTERNAL, "%d problem arguments", na);
    if (!json_is_object(problem))
        return kt_error_set(err, KT_ERR_BAD_PROBLEM, "the problem must be an object");
    for (int a = 0; a < na; a++) {
        const char *name = json_string_value(json_array_get(arg_names, (size_t)a));
        v = problem_arg(problem, name);
        if (!json_is_number(v) || !isfinite(json_number_value(v))) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem argument %s: %s", name,
                         v ? "not a finite number" : "missing");
            kt_error_hint(err, "give every argument of the kernel as a number (a list argument "
                               "with as many numbers as the model was trained on)");
            return -1;
        }
        out[a] = json_number_value(v);
    }
    json_object_foreach((json_t *)problem, k, v)
    {
        int whole = 0, elements = 0;
        for (int a = 0; a < na; a++) {
            const char *name = json_string_value(json_array_get(arg_names, (size_t)a));
            whole |= strcmp(name, k) == 0;
            elements += is_element_of(name, k);
        }
        if (whole)
            continue;
        if (elements == 0)
            return kt_error_set(err, KT_ERR_BAD_PROBLEM,
                                "problem argument %s is not an argument of the kernel", k);
        if (!json_is_array(v) || json_array_size(v) != (size_t)elements)
            return kt_error_set(err, KT_ERR_BAD_PROBLEM,
                                "problem argument %s: a list of %d numbers is what the model "
                                "knows",
                                k, elements);
    }
    return 0;
}

int training_set_args_of(const training_set *ts, const json_t *problem, double *out, kt_error *err)
{
    return training_set_args_from(ts->arg_names, problem, out, err);
}

int training_set_set_derived(training_set *ts, const json_t *desc, kt_error *err)
{
    if (ts->n > 0)
        return kt_error_set(err, KT_ERR_INTERNAL, "training_set_set_derived after a problem");
    derived *d = desc ? derived_new(desc, ts->arg_names, err) : NULL;
    if (desc && !d)
        return -1;
    derived_free(ts->dv);
    ts->dv = derived_count(d) > 0 ? d : NULL;
    if (!ts->dv)
        derived_free(d);
    return 0;
}

const json_t *training_set_derived(const training_set *ts)
{
    return derived_desc(ts->dv);
}

int training_set_num_derived(const training_set *ts)
{
    return derived_count(ts->dv);
}

int training_set_add_problem(training_set *ts, const json_t *problem, kt_error *err)
{
    double args[TS_MAX_ARGS + DERIVED_MAX];
    ts_problem pr;
    int rc = -1;

    memset(&pr, 0, sizeof pr);
    int nf = ts->na + derived_count(ts->dv);
    if (training_set_args_of(ts, problem, args, err) < 0 ||
        derived_eval(ts->dv, args, args + ts->na, err) < 0)
        goto out;
    if (!(pr.problem = json_object()))
        goto oom;
    for (int a = 0; a < ts->na; a++) {
        const char *name = json_string_value(json_array_get(ts->arg_names, (size_t)a));
        double x = args[a]; /* 64.0 and 64 are the same argument */
        json_t *v = x == floor(x) && fabs(x) < 9.0e15 ? json_integer((json_int_t)x) : json_real(x);
        if (json_object_set_new(pr.problem, name, v) != 0)
            goto oom;
    }
    if (!(pr.key = json_dumps(pr.problem, JSON_COMPACT | JSON_SORT_KEYS)))
        goto oom;
    for (size_t i = 0; i < ts->n; i++) {
        if (strcmp(ts->probs[i].key, pr.key) == 0) {
            rc = (int)i;
            goto out;
        }
    }
    if (ts->n >= TS_MAX_PROBLEMS) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "a training set holds at most %d problems",
                     TS_MAX_PROBLEMS);
        goto out;
    }
    if (!(pr.args = malloc((size_t)nf * sizeof *pr.args)) ||
        KT_ARRAY_GROW(ts->probs, ts->cap, ts->n + 1, TS_MAX_PROBLEMS) < 0)
        goto oom;
    memcpy(pr.args, args, (size_t)nf * sizeof *pr.args);
    ts->probs[ts->n] = pr;
    memset(&pr, 0, sizeof pr);
    rc = (int)ts->n++;
    goto out;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    ts_problem_release(&pr);
    return rc;
}

int training_set_value_index(const training_set *ts, int p, const json_t *value)
{
    if (p < 0 || p >= ts->np || !value)
        return -1;
    const json_t *vals = json_object_get(json_array_get(ts->params, (size_t)p), "values");
    for (int v = 0; v < ts->nv[p]; v++) {
        if (ts_value_equal(json_array_get(vals, (size_t)v), value))
            return v;
    }
    return -1;
}

static uint64_t ts_row_hash(const int *row, int np)
{
    return kt_fnv1a(KT_FNV1A_OFFSET, row, (size_t)np * sizeof *row);
}

/* The slot of row in pr, or -1; *h set to the hash position where it is or would go. */
static long ts_lookup(const training_set *ts, const ts_problem *pr, const int *row, size_t *h)
{
    if (pr->hcap == 0)
        return -1;
    size_t mask = pr->hcap - 1, i = (size_t)ts_row_hash(row, ts->np) & mask;
    for (; pr->hash[i]; i = (i + 1) & mask) {
        int s = pr->hash[i] - 1;
        if (memcmp(pr->rows + (size_t)s * (size_t)ts->np, row, (size_t)ts->np * sizeof *row) == 0) {
            *h = i;
            return s;
        }
    }
    *h = i;
    return -1;
}

static int ts_rehash(const training_set *ts, ts_problem *pr, size_t cap)
{
    int *h = calloc(cap, sizeof *h);
    if (!h)
        return -1;
    for (size_t s = 0; s < pr->n; s++) {
        size_t i = (size_t)ts_row_hash(pr->rows + s * (size_t)ts->np, ts->np) & (cap - 1);
        while (h[i])
            i = (i + 1) & (cap - 1);
        h[i] = (int)s + 1;
    }
    free(pr->hash);
    pr->hash = h;
    pr->hcap = cap;
    return 0;
}

/* Position in pr->order (first n entries) where a time t goes: after every time <= t. */
static size_t ts_order_pos(const ts_problem *pr, size_t n, double t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pr->t[pr->order[mid]] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int training_set_add_trial(training_set *ts, int p, const json_t *config, double time_ms)
{
    int row[TS_MAX_PARAMS];
    if (p < 0 || (size_t)p >= ts->n || !json_is_object(config) || !isfinite(time_ms) ||
        time_ms <= 0)
        return 0;
    for (int q = 0; q < ts->np; q++) {
        const char *name =
            json_string_value(json_object_get(json_array_get(ts->params, (size_t)q), "name"));
        if ((row[q] = training_set_value_index(ts, q, json_object_get(config, name))) < 0)
            return 0;
    }
    ts_problem *pr = &ts->probs[p];
    size_t h = 0;
    long s = ts_lookup(ts, pr, row, &h);
    if (s >= 0) { /* measured before: keep the lower time, moving it up the order */
        if (time_ms >= pr->t[s])
            return 1;
        size_t at = 0;
        while (pr->order[at] != s)
            at++;
        memmove(pr->order + at, pr->order + at + 1, (pr->n - at - 1) * sizeof *pr->order);
        pr->t[s] = time_ms;
        size_t pos = ts_order_pos(pr, pr->n - 1, time_ms);
        memmove(pr->order + pos + 1, pr->order + pos, (pr->n - 1 - pos) * sizeof *pr->order);
        pr->order[pos] = (int)s;
        return 1;
    }
    if (pr->n >= TS_MAX_TRIALS)
        return 0;
    size_t cap = pr->cap;
    int *rows = pr->rows;
    if (pr->n + 1 > cap) {
        cap = kt_array_next_cap(cap, pr->n + 1, TS_MAX_TRIALS);
        if (kt_array_resize((void **)&rows, cap * (size_t)ts->np, sizeof *rows) < 0)
            return -1;
        pr->rows = rows;
        if (kt_array_resize((void **)&pr->t, cap, sizeof *pr->t) < 0 ||
            kt_array_resize((void **)&pr->order, cap, sizeof *pr->order) < 0)
            return -1;
        pr->cap = cap;
    }
    if (2 * (pr->n + 1) > pr->hcap) {
        if (ts_rehash(ts, pr, pr->hcap ? 2 * pr->hcap : 64) < 0)
            return -1;
        ts_lookup(ts, pr, row, &h);
    }
    size_t slot = pr->n;
    memcpy(pr->rows + slot * (size_t)ts->np, row, (size_t)ts->np * sizeof *row);
    pr->t[slot] = time_ms;
    pr->hash[h] = (int)slot + 1;
    size_t pos = ts_order_pos(pr, pr->n, time_ms);
    memmove(pr->order + pos + 1, pr->order + pos, (pr->n - pos) * sizeof *pr->order);
    pr->order[pos] = (int)slot;
    pr->n++;
    return 1;
}

int training_set_num_problems(const training_set *ts)
{
    return (int)ts->n;
}
int training_set_num_params(const training_set *ts)
{
    return ts->np;
}
int training_set_num_args(const training_set *ts)
{
    return ts->na;
}
int training_set_num_values(const training_set *ts, int param)
{
    return param >= 0 && param < ts->np ? ts->nv[param] : 0;
}
const json_t *training_set_params(const training_set *ts)
{
    return ts->params;
}
const json_t *training_set_arg_names(const training_set *ts)
{
    return ts->arg_names;
}
const json_t *training_set_problem(const training_set *ts, int p)
{
    return p >= 0 && (size_t)p < ts->n ? ts->probs[p].problem : NULL;
}
const char *training_set_problem_key(const training_set *ts, int p)
{
    return p >= 0 && (size_t)p < ts->n ? ts->probs[p].key : NULL;
}
const double *training_set_problem_args(const training_set *ts, int p)
{
    return p >= 0 && (size_t)p < ts->n ? ts->probs[p].args : NULL;
}
int training_set_num_trials(const training_set *ts, int p)
{
    return p >= 0 && (size_t)p < ts->n ? (int)ts->probs[p].n : 0;
}

const int *training_set_trial(const training_set *ts, int p, int i, double *time_ms)
{
    if (p < 0 || (size_t)p >= ts->n || i < 0 || (size_t)i >= ts->probs[p].n)
        return NULL;
    const ts_problem *pr = &ts->probs[p];
    int s = pr->order[i];
    if (time_ms)
        *time_ms = pr->t[s];
    return pr->rows + (size_t)s * (size_t)ts->np;
}

int training_set_find_trial(const training_set *ts, int p, const int *idx, double *time_ms)
{
    size_t h;
    if (p < 0 || (size_t)p >= ts->n)
        return 0;
    long s = ts_lookup(ts, &ts->probs[p], idx, &h);
    if (s < 0)
        return 0;
    if (time_ms)
        *time_ms = ts->probs[p].t[s];
    return 1;
}

json_t *training_set_config_json(const training_set *ts, const int *idx)
{
    json_t *o = json_object();
    for (int p = 0; o && p < ts->np; p++) {
        const json_t *d = json_array_get(ts->params, (size_t)p);
        const json_t *v = json_array_get(json_object_get(d, "values"), (size_t)idx[p]);
        if (idx[p] < 0 || !v ||
            json_object_set(o, json_string_value(json_object_get(d, "name")), (json_t *)v) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

int training_set_copy_problem(training_set *dst, const training_set *src, int p, kt_error *err)
{
    if (dst->np != src->np || dst->na != src->na || p < 0 || (size_t)p >= src->n)
        return kt_error_set(err, KT_ERR_INTERNAL, "training_set_copy_problem: another layout");
    int q = training_set_add_problem(dst, src->probs[p].problem, err);
    const ts_problem *pr = &src->probs[p];
    for (size_t i = 0; q >= 0 && i < pr->n; i++) {
        int s = pr->order[i];
        json_t *c = training_set_config_json(src, pr->rows + (size_t)s * (size_t)src->np);
        int r = c ? training_set_add_trial(dst, q, c, pr->t[s]) : -1;
        json_decref(c);
        if (r < 0)
            q = kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    }
    return q;
}

typedef struct ts_rank {
    uint64_t h;
    int p;
} ts_rank;

static int ts_rank_cmp(const void *a, const void *b)
{
    const ts_rank *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->p - y->p;
}

int training_set_split(const training_set *ts, double test_fraction, uint64_t seed,
                       training_set **train, training_set **test, kt_error *err)
{
    ts_rank *rank = NULL;
    int rc = -1;
    *train = *test = NULL;
    if (!(test_fraction >= 0 && test_fraction < 1)) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "test fraction %g is not in [0, 1)", test_fraction);
        goto out;
    }
    size_t n = ts->n, n_test = (size_t)llround((double)n * test_fraction);
    if (n >= 2 && test_fraction > 0 && n_test < 1)
        n_test = 1;
    if (n >= 2 && n_test > n - 1)
        n_test = n - 1;
    if (n < 2)
        n_test = 0;
    rank = malloc((n ? n : 1) * sizeof *rank);
    *train = training_set_new(ts->params, ts->arg_names, err);
    *test = training_set_new(ts->params, ts->arg_names, err);
    if (!rank || !*train || !*test) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (training_set_set_derived(*train, training_set_derived(ts), err) < 0 ||
        training_set_set_derived(*test, training_set_derived(ts), err) < 0)
        goto out;
    uint64_t h0 = kt_fnv1a(KT_FNV1A_OFFSET, &seed, sizeof seed);
    for (size_t i = 0; i < n; i++) {
        rank[i].h = kt_fnv1a(h0, ts->probs[i].key, strlen(ts->probs[i].key));
        rank[i].p = (int)i;
    }
    qsort(rank, n, sizeof *rank, ts_rank_cmp);
    /* added in the original order, so each side keeps it */
    for (size_t i = 0; i < n; i++) {
        int held = 0;
        for (size_t j = 0; j < n_test && !held; j++)
            held = rank[j].p == (int)i;
        if (training_set_copy_problem(held ? *test : *train, ts, (int)i, err) < 0)
            goto out;
    }
    rc = 0;
out:
    if (rc < 0) {
        training_set_free(*train);
        training_set_free(*test);
        *train = *test = NULL;
    }
    free(rank);
    return rc;
}
