/* /v1/best — the best known configuration of a kernel on a device for a problem, and the browsable
 * table. Problem arguments come as query parameters: numbers, comma-separated lists of numbers, or
 * strings; the other parameters (BEST_OPTIONS) choose where an answer may come from.
 *
 * An answer says how it was made ("source"): "measured" or "imported" (the best table, with the
 * trial's provenance) always wins; on a miss, "predicted" (the newest ready model of the key
 * through the process's model cache) or, with fallback=nearest, "nearest" (the nearest tuned
 * problem of the same key whose configuration is valid here). And where its configuration came
 * from ("origin"): measured, imported or predicted; a nearest answer's is its neighbour's. An
 * untrusted import (store/import_store.h) answers only a plain lookup, as "imported": never
 * source=measured, never a neighbour, and models never learn from it (issue 26). A measured
 * answer and a cached prediction are key-only (catalog_resolve_key); the problem's space
 * (catalog_resolve) is built only when a model must run (a prediction not cached yet) or a nearest
 * answer must be checked against it.
 *
 * Before any of that, the process's answer cache (lookup/best_cache.h, through api/best_cached.h):
 * the reply bytes made for the same normalized request, kept until a NOTIFY of the best or models
 * table says its key changed; a hit builds no JSON and reads no table. 200s carry an ETag (304 for
 * an If-None-Match that names it), cached or not. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device_name.h"
#include "catalog/catalog.h"
#include "catalog/catalog_neural.h"
#include "core/log.h"
#include "space/config_render.h"
#include "store/best_store.h"
#include "training/model_cache.h"
#include "api/api_internal.h"
#include "api/best_cached.h"
#include "api/best_nearest.h"
#include "http/prepared.h"
#include "api/handlers.h"

#define BEST_LIST_DEFAULT     100
#define BEST_LIST_MAX         1000
#define BEST_LIST_MAX_OFFSET  100000000LL /* paging past 10^8 entries is no use */
#define BEST_MAX_PROBLEM_ARGS 32
#define BEST_K_DEFAULT        5
#define BEST_K_MAX            20
/* Tuned problems of a key read for the nearest fallback. */
#define BEST_NEAREST_MAX 10000

/* Strictly decimal (api_number_text): "0x40", "+5", " 5" stay strings, which the catalog refuses
 * for a numeric argument. */
static json_t *scalar_from_text(const char *s, size_t len)
{
    long long i;
    double d;
    int kind = api_number_text(s, len, &i, &d);
    json_t *v = kind == 1 ? json_integer(i) : kind == 2 ? json_real(d) : json_stringn(s, len);
    /* Not UTF-8: a replacement character, so the argument is refused rather than left out. */
    return v ? v : json_string("\xef\xbf\xbd");
}

/* "4096" -> 4096, "4096,4096" -> [4096, 4096], "abc" -> "abc". */
static json_t *value_from_text(const char *s)
{
    if (!strchr(s, ','))
        return scalar_from_text(s, strlen(s));
    json_t *arr = json_array();
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        json_array_append_new(arr, scalar_from_text(p, len));
        if (!comma)
            break;
        p = comma + 1;
    }
    return arr;
}

/* The query parameters of GET /v1/best that are not problem arguments. Matched exactly (the
 * server's own lookup ignores case, and gemm's problem argument K is not the option k). */
static const char *const best_options[] = {
    "kernel",       "device",         "source", "fallback", "k", "tune_on_miss",
    "device_class", "kernel_version", "accept", "format",   NULL};
enum {
    OPT_KERNEL,
    OPT_DEVICE,
    OPT_SOURCE,
    OPT_FALLBACK,
    OPT_K,
    OPT_TUNE_ON_MISS,
    OPT_DEVICE_CLASS,
    OPT_KERNEL_VERSION,
    OPT_ACCEPT,
    OPT_FORMAT,
    OPT_COUNT
};

/* One pass over the query: the options by exact name, every other parameter a problem argument
 * (borrowed from the request; JSON is made of them only when the cache cannot answer). A repeated
 * parameter keeps its last value, and the request is not cached. */
typedef struct best_args {
    const char *opt[OPT_COUNT];
    best_param param[BEST_MAX_PROBLEM_ARGS];
    int count;
    int repeated;
} best_args;

static int collect_arg(void *ctx, const char *key, const char *value)
{
    best_args *a = ctx;
    value = value ? value : "";
    for (int i = 0; i < OPT_COUNT; i++) {
        if (strcmp(key, best_options[i]) == 0) {
            a->repeated |= a->opt[i] != NULL;
            a->opt[i] = value;
            return 0;
        }
    }
    for (int i = 0; i < a->count; i++) {
        if (strcmp(a->param[i].name, key) == 0) {
            a->repeated = 1;
            a->param[i].value = value;
            return 0;
        }
    }
    if (a->count == BEST_MAX_PROBLEM_ARGS)
        return 1;
    a->param[a->count++] = (best_param){key, value};
    return 0;
}

/* The problem arguments as a JSON object (numbers, lists of numbers, strings; neural a JSON
 * object); NULL: no memory. */
static json_t *problem_of(const best_args *a)
{
    json_t *problem = json_object();
    for (int i = 0; problem && i < a->count; i++) {
        /* neural=<JSON object> (catalog/catalog_neural.h): the opt-in of a neural problem. */
        json_t *v =
            strcmp(a->param[i].name, "neural") == 0 ? json_loads(a->param[i].value, 0, NULL) : NULL;
        if (!v)
            v = value_from_text(a->param[i].value);
        if (json_object_set_new(problem, a->param[i].name, v)) {
            json_decref(problem);
            return NULL;
        }
    }
    return problem;
}

typedef enum { BEST_FROM_ANY, BEST_FROM_MEASURED, BEST_FROM_PREDICTED } best_from;

/* What the options of one request ask for. */
typedef struct best_query {
    best_from from;         /* source: any (absent), measured, predicted */
    int nearest;            /* fallback=nearest */
    long long k;            /* candidates of a prediction */
    long long tune_on_miss; /* evaluations of the job queued on a miss; 0: none */
    int accept_weak;        /* accept=weak: a weak model's prediction is served (issue 31) */
} best_query;

static int parse_options(const api_context *svc, const best_args *a, best_query *q, kt_error *err)
{
    const char *source = a->opt[OPT_SOURCE], *fallback = a->opt[OPT_FALLBACK];
    memset(q, 0, sizeof *q);
    if (source && strcmp(source, "measured") == 0) {
        q->from = BEST_FROM_MEASURED;
    } else if (source && strcmp(source, "predicted") == 0) {
        q->from = BEST_FROM_PREDICTED;
    } else if (source) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown source '%.40s'", source);
        kt_error_hint(err, "source=measured (measurements and trusted imports only) or "
                           "source=predicted (the model only); leave it out to get a measurement "
                           "(or an import), else a prediction");
        return -1;
    }
    if (fallback && strcmp(fallback, "nearest") == 0) {
        q->nearest = 1;
    } else if (fallback && strcmp(fallback, "none") != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown fallback '%.40s'", fallback);
        kt_error_hint(err, "fallback=nearest (the nearest tuned problem when nothing else "
                           "answers) or fallback=none (the default)");
        return -1;
    }
    const char *accept = a->opt[OPT_ACCEPT];
    if (accept && strcmp(accept, "weak") != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown accept '%.40s'", accept);
        kt_error_hint(err, "accept=weak (serve the prediction of a model below ktuned's minimum "
                           "of trained problems or held-out accuracy); leave it out otherwise");
        return -1;
    }
    q->accept_weak = accept != NULL;
    if (q->nearest && q->from == BEST_FROM_MEASURED) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "source=measured refuses every answer but a measurement; it cannot be "
                     "combined with fallback=nearest");
        kt_error_hint(err, "leave out one of the two");
        return -1;
    }
    if (api_parse_ll("k", a->opt[OPT_K], 1, BEST_K_MAX, BEST_K_DEFAULT, &q->k, err) < 0 ||
        api_parse_ll("tune_on_miss", a->opt[OPT_TUNE_ON_MISS], 1, svc->cfg->max_evaluations, 0,
                     &q->tune_on_miss, err) < 0)
        return -1;
    return 0;
}

/* The part every answer shares: the key and the canonical problem, how it was made (source) and
 * where its configuration came from (origin). */
static json_t *answer_new(const target *t, const char *source, const char *origin)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:s, s:s}", "kernel", t->key.kernel, "device",
                     t->key.device, "device_class", t->key.device_class, "kernel_hash",
                     t->key.kernel_hash, "toolchain", t->key.toolchain, "problem", t->problem,
                     "source", source, "origin", origin);
}

/* Queues a budgeted job for the key unless one is queued or running: *out
 * {"job_id", "queued": true when this request queued it}. */
static int queue_on_miss(api_context *svc, PGconn *c, const target *t, long long evaluations,
                         const char *submitter, json_t **out, kt_error *err)
{
    tune_request tr;
    long long id = 0;
    int created = 0;
    tune_request_budgeted(&t->key, t->problem, evaluations, &tr);
    if (api_tune_queue(svc, c, &tr, submitter, 1, &id, &created, err) < 0)
        return -1;
    *out = json_pack("{s:I, s:b}", "job_id", (json_int_t)id, "queued", created);
    return 0;
}

/* The newest ready model's answer for t: 1 (*out), 0 none, -1 err, MODEL_CACHE_NEEDS_SPACE when t
 * is key-only and the answer is not cached. A weak model's answer (its confidence below ktuned's
 * minimum, training/model_confidence.h) is none unless accept_weak: *weak then gets the model and
 * why (a new reference; the 404 says it), once. */
static int predicted(api_context *svc, PGconn *c, const target *t, int k, int accept_weak,
                     json_t **out, json_t **weak, kt_error *err)
{
    json_t *pred = NULL;
    if (!svc->models)
        return 0;
    int rc = model_cache_predict(svc->models, c, t, k, &pred, err);
    json_t *conf = rc == 1 ? json_object_get(pred, "confidence") : NULL;
    if (conf && json_is_true(json_object_get(conf, "weak")) && !accept_weak) {
        if (!*weak)
            *weak = json_pack("{s:O, s:O}", "model", json_object_get(pred, "model"), "confidence",
                              conf);
        rc = 0;
    }
    if (rc == 1) {
        *out = answer_new(t, "predicted", "predicted");
        if (!*out || json_object_update(*out, pred) < 0)
            rc = kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory writing a prediction");
    }
    json_decref(pred);
    return rc;
}

/* The nearest tuned problem of t's key whose configuration is valid in t's space: 1 (*out), 0 none,
 * -1 err. Tuned: measured, or imported by a trusted import (best_store_problems_json); the answer's
 * origin is the neighbour's. */
static int nearest(PGconn *c, const target *t, json_t **out, kt_error *err)
{
    json_t *problems = best_store_problems_json(c, &t->key, BEST_NEAREST_MAX, err);
    if (!problems)
        return -1;
    double distance = 0;
    int i = best_nearest_pick(json_object_get(problems, "problems"), t->problem, t->sp, &distance);
    int rc = i >= 0;
    if (i >= 0) {
        json_t *e = json_array_get(json_object_get(problems, "problems"), (size_t)i);
        const char *origin = json_string_value(json_object_get(e, "origin"));
        *out = answer_new(t, "nearest", origin ? origin : "measured");
        if (!*out || json_object_set(*out, "config", json_object_get(e, "config")) < 0 ||
            json_object_set_new(*out, "nearest",
                                json_pack("{s:O, s:f, s:O, s:O, s:O, s:O}", "problem",
                                          json_object_get(e, "problem"), "distance", distance,
                                          "time_ms", json_object_get(e, "time_ms"), "job_id",
                                          json_object_get(e, "job_id"), "trial_id",
                                          json_object_get(e, "trial_id"), "measured_at",
                                          json_object_get(e, "measured_at"))) < 0)
            rc = kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory writing the nearest answer");
    }
    json_decref(problems);
    return rc;
}

/* 404 no_best for a miss, saying what was looked at and what would answer. */
static void no_best(const target *t, const best_query *q, const json_t *queued, const json_t *weak,
                    kt_error *err)
{
    const char *what = q->from == BEST_FROM_MEASURED    ? "measured"
                       : q->from == BEST_FROM_PREDICTED ? "predicted"
                                                        : "measured or predicted";
    if (weak) {
        /* The key has a ready model, but below the minimum (issue 31): say so, and how to take its
         * guess anyway. */
        const json_t *conf = json_object_get(weak, "confidence");
        kt_error_set(
            err, KT_ERR_NO_BEST,
            "no %s configuration of kernel %s is known for device class %s and "
            "problem %s, and model %lld of the key is weak: %s",
            q->from == BEST_FROM_PREDICTED ? "predicted" : "measured", t->key.kernel,
            t->key.device_class, t->key.problem_key,
            (long long)json_integer_value(json_object_get(json_object_get(weak, "model"), "id")),
            json_string_value(json_object_get(conf, "why")));
        kt_error_hint(err,
                      "add accept=weak to get its prediction anyway (\"source\": \"predicted\", "
                      "confidence.weak true); or tune this problem, or tune more problems of "
                      "kernel %s and train the model again",
                      t->key.kernel);
        return;
    }
    kt_error_set(err, KT_ERR_NO_BEST,
                 "no %s configuration of kernel %s is known for device class %s, toolchain %s and "
                 "problem %s",
                 what, t->key.kernel, t->key.device_class, t->key.toolchain, t->key.problem_key);
    if (queued)
        kt_error_hint(err, "job %lld tunes it (tune_on_miss); ask again when it has finished",
                      (long long)json_integer_value(json_object_get(queued, "job_id")));
    else
        kt_error_hint(
            err,
            "tune it: POST /v1/tune {\"kernel\": \"%s\", \"device\": \"%s\", \"problem\": "
            "%s} (or add ?tune_on_miss=N); train a model of the key: POST /v1/models "
            "{\"kernel\": \"%s\", \"device\": \"%s\"}; or ask with ?fallback=nearest",
            t->key.kernel, t->key.device, t->key.problem_key, t->key.kernel, t->key.device);
}

/* What a fresh answer depends on (lookup/best_cache.h), or -1 when it must not be cached: it
 * carries what a tune_on_miss did (queueing is done per request). */
static int answer_flags(const best_query *q, int measured, int got_nearest, const json_t *queued)
{
    if (queued || (q->tune_on_miss && !measured))
        return -1;
    if (measured)
        return BEST_CACHE_MEASURED;
    return (q->from != BEST_FROM_MEASURED ? BEST_CACHE_MODELS : 0) |
           (q->nearest || got_nearest ? BEST_CACHE_WHOLE_KEY : 0);
}

/* The cached reply of the request into res: 1 answered, 0 not (a miss, or a tune_on_miss request
 * whose cached answer is not a measurement: that miss must queue its job). */
static int from_cache(api_context *svc, const http_request *req, http_response *res,
                      const best_query *q, const char *qkey, size_t qlen)
{
    best_cache_hit hit;
    if (!svc->best || qlen == 0 || best_cache_get(svc->best, qkey, qlen, &hit) != 1)
        return 0;
    if (q->tune_on_miss && !(hit.flags & BEST_CACHE_MEASURED)) {
        free(hit.body);
        http_prepared_release(hit.attach);
        return 0;
    }
    best_reply_cached(req, res, &hit);
    return 1;
}

/* No result under the kernel's current version, none named: the newest older version of the
 * kernel that has one (catalog_kernel_versions' order), or NULL (err clear). The answer's
 * kernel_hash says which. *others: 1 when the kernel has other versions (whatever they hold). */
static json_t *older_version(api_context *svc, PGconn *c, const target *current, const char *kernel,
                             const char *device, const json_t *problem, const best_query *q,
                             int *others, kt_error *err)
{
    char versions[CATALOG_KERNEL_VERSIONS][KFILES_VERSION_LEN + 1];
    int n = catalog_kernel_versions(svc->cat, kernel, versions, CATALOG_KERNEL_VERSIONS);
    json_t *answer = NULL;
    *others = n > 1 || (n == 1 && strcmp(versions[0], current->key.kernel_hash) != 0);
    for (int i = 0; i < n && !answer; i++) {
        target other;
        kt_error e;
        kt_error_clear(&e);
        if (strcmp(versions[i], current->key.kernel_hash) == 0 ||
            catalog_resolve_version(svc->cat, kernel, versions[i], device, problem, 0, &other, &e) <
                0)
            continue;
        answer = best_store_get_json(c, &other.key, q->from == BEST_FROM_MEASURED, &e);
        if (answer)
            catalog_neural_mark(svc->cat, &other, answer);
        target_release(&other);
        if (!answer && e.code != KT_ERR_NO_BEST) {
            if (err)
                *err = e;
            return NULL;
        }
    }
    kt_error_clear(err);
    return answer;
}

/* One GET /v1/best request as it goes: what it asks, where it is in the answer cache, the targets
 * resolved for it and the answer made. */
typedef struct best_request {
    best_args a;
    best_query q;
    const char *kernel, *device, *version;
    int kind;          /* device parsed once: a kt_device_kind, -1 for none (device_class=) */
    const char *klass; /* device_class= instead of device= (issue 27); NULL with device= */
    char class_key[CATALOG_EXTERNAL_MAX_CLASS + 16];
    char kernel_at[API_MAX_NAME + KFILES_VERSION_LEN + 40];
    int real;                   /* a cpu / cuda device: its kernels have versions */
    const kernel_spec *current; /* real, no version named: the kernel's current one */
    const char *qkey;           /* the request's key in the answer cache; qlen 0: not cached */
    size_t qlen;
    best_cache_ticket ticket;
    json_t *problem;
    target key_only, full; /* have_key, have_full: resolved */
    int have_key, have_full;
    int found;       /* a result (measured or imported) of the key, or of an older version */
    int others;      /* the kernel has other versions (older_version) */
    int got_nearest; /* the answer is the nearest tuned problem's */
    json_t *answer, *queued;
    json_t *weak; /* a weak model refused (no accept=weak): {"model", "confidence"} */
} best_request;

/* The device parameters together: device= or device_class= (issue 27: a host of the fleet asks
 * for the class it runs on; key-only answers, a measurement or a prediction already cached), with
 * the kernel. 0 (r->klass, r->device), or -1 with err naming the parameter. */
static int check_device_args(best_request *r, kt_error *err)
{
    const char *const *opt = r->a.opt;
    if (r->device && opt[OPT_DEVICE_CLASS]) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "query parameter 'device_class' goes with device=external or instead of "
                     "device=");
        kt_error_hint(err, "a catalog device's class comes from the device; leave one out");
        return -1;
    }
    if (!r->device && opt[OPT_DEVICE_CLASS] && opt[OPT_KERNEL_VERSION]) {
        kt_error_set(err, KT_ERR_NOT_IMPLEMENTED,
                     "kernel_version with device_class= is not supported yet");
        kt_error_hint(err, "name the device (device=cpu&kernel_version=...), or leave "
                           "kernel_version out: the class's current version answers");
        return -1;
    }
    r->klass = r->device ? NULL : opt[OPT_DEVICE_CLASS];
    if (r->klass && (opt[OPT_TUNE_ON_MISS] || opt[OPT_FALLBACK])) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "query parameter '%s' needs device=, not device_class=",
                     opt[OPT_TUNE_ON_MISS] ? "tune_on_miss" : "fallback");
        kt_error_hint(err, "name the device to tune on or to check a nearest answer against");
        return -1;
    }
    if (r->klass) {
        snprintf(r->class_key, sizeof r->class_key, "class:%.128s", r->klass);
        r->device = r->class_key; /* the answer cache's key only */
    }
    if (!r->kernel || !r->device) {
        kt_error_set(err, KT_ERR_MISSING_FIELD,
                     "query parameters 'kernel' and 'device' (or 'device_class') are required");
        kt_error_hint(err,
                      "GET /v1/best?kernel=convolution&device=replay:convolution_milo-A4000"
                      "&<problem argument>=<value>...; GET /v1/kernels lists kernels and devices");
        return -1;
    }
    return 0;
}

/* The request's key in the answer cache, into qkey (r->qlen 0: not cached). A cpu / cuda kernel
 * has versions (issue 27): the key names the version asked for, else the current one, so that a
 * new version is a new cached answer. */
static void request_key(const api_context *svc, best_request *r, char *qkey, size_t cap)
{
    r->real = r->kind == KT_DEVICE_CPU || r->kind == KT_DEVICE_CUDA;
    r->current = r->real && !r->version ? catalog_find_kernel(svc->cat, r->kernel) : NULL;
    snprintf(r->kernel_at, sizeof r->kernel_at, "%.256s@%.64s", r->kernel,
             r->version   ? r->version
             : r->current ? r->current->version
                          : "");
    r->qkey = qkey;
    if (svc->best && !r->a.repeated)
        r->qlen = best_request_key(qkey, cap, r->kernel_at, r->device,
                                   (r->q.accept_weak ? "AMP" : "amp")[r->q.from], r->q.nearest,
                                   r->q.k, r->a.param, r->a.count);
}

/* The problem arguments and the key only: a measured lookup never builds the space (a cpu kernel's
 * costs milliseconds). A query parameter that is neither an option nor a problem argument is
 * refused here (bad_problem naming it). 0 (r->key_only, and the answer cache's ticket when the
 * request is cached), or -1 with err. */
static int resolve_key(api_context *svc, best_request *r, kt_error *err)
{
    r->problem = problem_of(&r->a);
    if (!r->problem)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading the problem arguments");
    if ((r->klass ? catalog_resolve_class_key(svc->cat, r->kernel, r->klass, r->problem,
                                              &r->key_only, err)
                  : catalog_resolve_version(svc->cat, r->kernel, r->version, r->device, r->problem,
                                            0, &r->key_only, err)) < 0)
        return -1;
    r->have_key = 1;
    if (r->qlen) /* before the database is read: a change notified from now on drops this fill */
        r->ticket = best_cache_ticket_take(svc->best, &r->key_only.key);
    return 0;
}

/* The result stored for the key, or for an older version of the kernel when the current one has
 * none (a real device, no version named): r->answer (NULL: none), r->found. -1 with err for a
 * database error of the key's own lookup. */
static int stored_result(api_context *svc, PGconn *c, best_request *r, kt_error *err)
{
    /* source=measured: a measurement or a trusted import's result only (issue 26). */
    r->answer = best_store_get_json(c, &r->key_only.key, r->q.from == BEST_FROM_MEASURED, err);
    if (!r->answer && err->code != KT_ERR_NO_BEST)
        return -1;
    if (!r->answer && r->real && !r->version && r->q.from != BEST_FROM_PREDICTED)
        r->answer = older_version(svc, c, &r->key_only, r->kernel, r->device, r->problem, &r->q,
                                  &r->others, err);
    r->found = r->answer != NULL;
    if (r->answer)
        json_object_set(r->answer, "kernel_version", json_object_get(r->answer, "kernel_hash"));
    return 0;
}

/* No result: a prediction (a cached one needs no space: the key first, the space only when a
 * model must run) or, with fallback=nearest, the nearest tuned problem (checked against the
 * space) into r->answer (NULL: none). 0, or -1 with err. */
static int model_or_nearest(api_context *svc, PGconn *c, best_request *r, kt_error *err)
{
    int got =
        predicted(svc, c, &r->key_only, (int)r->q.k, r->q.accept_weak, &r->answer, &r->weak, err);
    if (r->klass && got == MODEL_CACHE_NEEDS_SPACE)
        got = 0; /* by class: no space is built (the device of the name may be another) */
    if (got == MODEL_CACHE_NEEDS_SPACE || (got == 0 && r->q.nearest)) {
        if (catalog_resolve_version(svc->cat, r->kernel, r->version, r->device, r->problem, 1,
                                    &r->full, err) < 0)
            return -1;
        r->have_full = 1;
        if (got == MODEL_CACHE_NEEDS_SPACE)
            got = predicted(svc, c, &r->full, (int)r->q.k, r->q.accept_weak, &r->answer, &r->weak,
                            err);
        if (got == 0 && r->q.nearest) {
            got = nearest(c, &r->full, &r->answer, err);
            r->got_nearest = got > 0;
        }
    }
    return got < 0 ? -1 : 0;
}

/* A miss of the stored results: the job tune_on_miss queues (r->queued), then a prediction or the
 * nearest answer (r->answer, NULL: none). 0, 1 when the reply is made (refused: no scope or over
 * the caller's job cap), or -1 with err. */
static int answer_miss(api_context *svc, const http_request *req, http_response *res, PGconn *c,
                       best_request *r, kt_error *err)
{
    if (!r->found && r->q.tune_on_miss) {
        /* Queueing is a write: it needs scope tune (a hit only read) and counts against the
         * caller's job cap. */
        char who[32];
        if (api_authorize(svc, req, res, API_SCOPE_TUNE) < 0 ||
            api_job_quota(svc, c, req, res, who, sizeof who) < 0)
            return 1;
        if (queue_on_miss(svc, c, &r->key_only, r->q.tune_on_miss, who, &r->queued, err) < 0)
            return -1;
    }
    /* A neural problem (issue 14) is answered by its measurements only: the models learn
     * semantics-preserving configurations of plain problems. */
    if (r->q.from != BEST_FROM_MEASURED && !r->key_only.neural &&
        model_or_nearest(svc, c, r, err) < 0)
        return -1;
    if (r->answer && catalog_neural_mark(svc->cat, &r->key_only, r->answer)) {
        /* Marked ("changes_network" of neural kernels), and never a configuration that changes
         * the network to a caller that did not opt in. */
        json_decref(r->answer);
        r->answer = NULL;
    }
    return 0;
}

/* Keeps the reply made (200 or 404) in the answer cache under the request's key, unless it must
 * not be kept; then its ETag. */
static void keep_reply(api_context *svc, const http_request *req, http_response *res,
                       best_request *r)
{
    int flags = answer_flags(&r->q, r->found && r->q.from != BEST_FROM_PREDICTED, r->got_nearest,
                             r->queued);
    /* Not cached: an answer made while older versions were read (the current version has no
     * result): its entry would hang on the current version's key alone, so an older version's new
     * result would not drop it. Nor one whose version is not the one in the request's key (the
     * catalog's copy moved on between the two). */
    if (r->others || (r->current && strcmp(r->current->version, r->key_only.key.kernel_hash) != 0))
        flags = -1;
    if (r->qlen && flags >= 0 && (res->status == 200 || res->status == 404) && res->body)
        best_cache_put(svc->best, &r->ticket, r->qkey, r->qlen, &r->key_only.key, (unsigned)flags,
                       res->status, res->body, res->body_len, best_prepare(res));
    best_reply_etag(req, res);
}

/* format= (issue 31: the dashboard's export buttons): NULL or "json" the answer as JSON, "header"
 * and "flags" the answer's configuration as `ktune best --format` writes it (the one renderer,
 * space/config_render.h). -1 with err for another. */
static int parse_format(const best_args *a, const char **format, kt_error *err)
{
    const char *f = a->opt[OPT_FORMAT];
    *format = NULL;
    if (!f || strcmp(f, "json") == 0)
        return 0;
    if (strcmp(f, "header") != 0 && strcmp(f, "flags") != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown format '%.40s'", f);
        kt_error_hint(err, "format=json (the default: the answer as JSON), format=header (a C "
                           "header of #defines) or format=flags (-Dname=value compiler flags)");
        return -1;
    }
    *format = f;
    return 0;
}

/* A 200 JSON answer in res rewritten as text in format (header or flags), with a file name to
 * save it under; the renderer's refusal (a parameter that is not a C identifier, a value no macro
 * can hold) is a 400 naming the parameter. Other replies (404, 304, errors) stay as they are. */
static void render_reply(http_response *res, const char *format)
{
    kt_error err;
    kt_error_clear(&err);
    if (res->status != 200 || !res->body)
        return;
    json_t *answer = json_loadb(res->body, res->body_len, 0, NULL);
    char *text = answer ? config_render_best(answer, format, &err) : NULL;
    if (!answer)
        kt_error_set(&err, KT_ERR_INTERNAL, "the answer could not be read back to render it");
    if (!text) {
        kt_error_hint(&err, "format=json gives the configuration as JSON");
        api_fail(res, &err);
    } else {
        char name[160], disposition[200];
        const char *kernel = json_string_value(json_object_get(answer, "kernel"));
        size_t n = 0;
        for (const char *p = kernel ? kernel : "config"; *p && n + 1 < 100; p++)
            name[n++] = (isalnum((unsigned char)*p) || *p == '_' || *p == '-') ? *p : '_';
        name[n] = '\0';
        snprintf(disposition, sizeof disposition, "attachment; filename=\"ktune_%s.%s\"", name,
                 strcmp(format, "header") == 0 ? "h" : "flags");
        http_reply_text(res, 200, "text/plain; charset=utf-8", text);
        http_response_add_header(res, "Content-Disposition", disposition);
    }
    free(text);
    json_decref(answer);
}

/* The external device (issue 27): a harness's results, answered by api/best_external.c. */
static void external_best(api_context *svc, const http_request *req, http_response *res,
                          best_request *r, kt_error *err)
{
    r->problem = problem_of(&r->a);
    if (!r->problem) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading the problem arguments");
        api_fail(res, err);
        return;
    }
    api_best_external(svc, req, res, r->kernel, r->a.opt[OPT_DEVICE_CLASS],
                      r->a.opt[OPT_KERNEL_VERSION], r->a.opt[OPT_SOURCE], r->a.opt[OPT_ACCEPT],
                      r->problem);
}

void api_best_get(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    best_request r = {0};
    PGconn *c = NULL;
    char qkey[BEST_CACHE_KEY_MAX];
    const char *format = NULL;
    int missed;
    if (http_query_each(req, collect_arg, &r.a)) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "at most %d problem arguments are accepted",
                     BEST_MAX_PROBLEM_ARGS);
        goto fail;
    }
    if (parse_format(&r.a, &format, &err) < 0)
        goto fail;
    r.kernel = r.a.opt[OPT_KERNEL];
    r.device = r.a.opt[OPT_DEVICE];
    r.kind = kt_device_kind_of(r.device); /* the request's device, parsed once */
    if (r.kernel && r.kind == KT_DEVICE_EXTERNAL) {
        external_best(svc, req, res, &r, &err);
        if (format)
            render_reply(res, format);
        goto out;
    }
    if (check_device_args(&r, &err) < 0 || parse_options(svc, &r.a, &r.q, &err) < 0)
        goto fail;
    r.version = r.a.opt[OPT_KERNEL_VERSION];
    request_key(svc, &r, qkey, sizeof qkey);
    if (format)
        r.qlen = 0; /* a rendered answer is made each time, never cached (exports are rare) */
    /* From memory: the reply made for the same request, until a NOTIFY says its key changed. */
    if (from_cache(svc, req, res, &r.q, qkey, r.qlen))
        goto out;
    if (resolve_key(svc, &r, &err) < 0)
        goto fail;
    c = api_db_acquire(svc, res);
    if (!c)
        goto out;
    if (stored_result(svc, c, &r, &err) < 0)
        goto fail;
    if (r.found && r.q.from != BEST_FROM_PREDICTED) {
        catalog_neural_mark(svc->cat, &r.key_only, r.answer); /* a plain key: no network change */
        goto reply;                                           /* a measurement always wins */
    }
    json_decref(r.answer);
    r.answer = NULL;
    kt_error_clear(&err);
    missed = answer_miss(svc, req, res, c, &r, &err);
    if (missed > 0) /* the reply is made */
        goto out;
    if (missed < 0)
        goto fail;
    if (!r.answer) {
        no_best(&r.key_only, &r.q, r.queued, r.queued ? NULL : r.weak, &err);
        if (r.weak && !r.queued)
            http_reply_error_with(res, &err, "weak_model", r.weak);
        else
            http_reply_error_with(res, &err, "tune_on_miss", r.queued);
        goto keep;
    }
    if (r.queued)
        json_object_set(r.answer, "tune_on_miss", r.queued);
reply:
    http_reply_json(res, 200, json_incref(r.answer));
    if (format)
        render_reply(res, format);
keep:
    keep_reply(svc, req, res, &r);
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    if (r.have_full)
        target_release(&r.full);
    if (r.have_key)
        target_release(&r.key_only);
    json_decref(r.answer);
    json_decref(r.queued);
    json_decref(r.weak);
    json_decref(r.problem);
}

void api_best_list(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {"kernel", "device_class", "limit", "offset", NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long limit, offset;
    if (api_check_query(req, allowed, &err) < 0 ||
        api_query_ll(req, "limit", 1, BEST_LIST_MAX, BEST_LIST_DEFAULT, &limit, &err) < 0 ||
        api_query_ll(req, "offset", 0, BEST_LIST_MAX_OFFSET, 0, &offset, &err) < 0)
        return api_fail(res, &err);
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    json_t *list = best_store_list_json(c, http_query(req, "kernel"),
                                        http_query(req, "device_class"), (int)limit, offset, &err);
    api_db_release(svc, c);
    if (!list)
        return api_fail(res, &err);
    http_reply_json(res, 200, list);
}
