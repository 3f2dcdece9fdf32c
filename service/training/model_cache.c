/* training/model_cache — loaded models and cached predictions. See model_cache.h. */
#include "training/model_cache.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "model/predictor.h"
#include "store/model_store.h"
#include "training/model_confidence.h"

#define MODEL_CACHE_BUCKETS 1024
/* The key's toolchain (merged with i10-toolchain: core/target_key.h has it). */
#define TARGET_TOOLCHAIN(t) ((t)->key.toolchain)

/* A loaded model. users: callers between lookup and the end of their predict (never freed while
 * above 0); lock: held around predictor_predict. */
typedef struct loaded_model {
    long long id;
    char algorithm[32];
    int version;
    predictor *p;
    json_t *confidence; /* model_confidence_json of its row (issue 31) */
    json_t *trained_on; /* its row's training.trained_on (an array; empty for older models) */
    pthread_mutex_t lock;
    int users;
    unsigned long long last_used;
} loaded_model;

/* A cached prediction: key "<model id>|<k>|<problem key>"; answer NULL = the model gave none. */
typedef struct prediction {
    char *key;
    json_t *answer;
    struct prediction *next;
} prediction;

struct model_cache {
    const catalog *cat;
    model_minimum min; /* below it a model is weak (model_cache_set_minimum) */
    pthread_mutex_t lock;
    loaded_model *models[MODEL_CACHE_MODELS];
    unsigned long long tick;
    prediction *buckets[MODEL_CACHE_BUCKETS];
    int n_predictions;
    model_cache_stats stats;
};

model_cache *model_cache_new(const catalog *cat)
{
    model_cache *mc = calloc(1, sizeof *mc);
    if (!mc)
        return NULL;
    mc->cat = cat;
    mc->min = (model_minimum){MODEL_MIN_PROBLEMS_DEFAULT, MODEL_MIN_ACCURACY_DEFAULT};
    pthread_mutex_init(&mc->lock, NULL);
    return mc;
}

static void free_model(loaded_model *m)
{
    if (!m)
        return;
    predictor_free(m->p);
    json_decref(m->confidence);
    json_decref(m->trained_on);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* Drops every cached prediction; mc->lock held. */
static void clear_predictions(model_cache *mc)
{
    for (int b = 0; b < MODEL_CACHE_BUCKETS; b++) {
        while (mc->buckets[b]) {
            prediction *e = mc->buckets[b];
            mc->buckets[b] = e->next;
            free(e->key);
            json_decref(e->answer);
            free(e);
        }
    }
    mc->n_predictions = 0;
}

void model_cache_free(model_cache *mc)
{
    if (!mc)
        return;
    clear_predictions(mc);
    for (int i = 0; i < MODEL_CACHE_MODELS; i++)
        free_model(mc->models[i]);
    pthread_mutex_destroy(&mc->lock);
    free(mc);
}

void model_cache_set_minimum(model_cache *mc, const model_minimum *min)
{
    pthread_mutex_lock(&mc->lock);
    mc->min = *min;
    clear_predictions(mc); /* each carries its model's weak flag */
    pthread_mutex_unlock(&mc->lock);
}

void model_cache_stats_get(model_cache *mc, model_cache_stats *out)
{
    pthread_mutex_lock(&mc->lock);
    *out = mc->stats;
    pthread_mutex_unlock(&mc->lock);
}

static unsigned bucket_of(const char *key)
{
    return (unsigned)(kt_fnv1a(KT_FNV1A_OFFSET, key, strlen(key)) % MODEL_CACHE_BUCKETS);
}

/* The cached prediction of key (mc->lock held), or NULL. */
static prediction *find_prediction(model_cache *mc, const char *key)
{
    for (prediction *e = mc->buckets[bucket_of(key)]; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

/* Keeps answer (a reference is taken; NULL: no candidate) under key; mc->lock held. */
static void put_prediction(model_cache *mc, const char *key, json_t *answer)
{
    if (find_prediction(mc, key))
        return; /* another thread computed it meanwhile */
    if (mc->n_predictions >= MODEL_CACHE_PREDICTIONS)
        clear_predictions(mc);
    prediction *e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key))) {
        free(e); /* not cached: computed again next time */
        return;
    }
    e->answer = json_incref(answer);
    unsigned b = bucket_of(key);
    e->next = mc->buckets[b];
    mc->buckets[b] = e;
    mc->n_predictions++;
}

/* The loaded model id, counted as a user (mc->lock held), or NULL. */
static loaded_model *use_model(model_cache *mc, long long id)
{
    for (int i = 0; i < MODEL_CACHE_MODELS; i++) {
        loaded_model *m = mc->models[i];
        if (m && m->id == id) {
            m->users++;
            m->last_used = ++mc->tick;
            return m;
        }
    }
    return NULL;
}

static void unuse_model(model_cache *mc, loaded_model *m)
{
    pthread_mutex_lock(&mc->lock);
    m->users--;
    pthread_mutex_unlock(&mc->lock);
}

/* Loads the newest ready model of t's key from its bytes and adds it (a user counted). NULL with
 * err (or err KT_OK: the model went away since, e.g. superseded and none ready). */
static loaded_model *load_model(model_cache *mc, PGconn *c, const target *t, kt_error *err)
{
    model_ready r;
    loaded_model *m = NULL;
    int found =
        model_store_latest_ready(c, MODEL_KIND_PREDICTOR, t->key.kernel, t->key.device_class,
                                 t->key.kernel_hash, TARGET_TOOLCHAIN(t), 1, &r, err);
    if (found <= 0)
        return NULL;
    predictor *p = r.bytes ? predictor_load(r.bytes, r.len, err) : NULL;
    json_t *row = NULL, *confidence = NULL, *trained_on = NULL;
    if (!p) {
        if (!r.bytes)
            kt_error_set(err, KT_ERR_INTERNAL, "ready model %lld has no bytes", r.id);
        kt_error_prefix(err, "loading model %lld", r.id);
        goto out;
    }
    /* Its confidence facts (issue 31), read once per load: the row's training and metrics. */
    row = model_store_get_json(c, r.id, err);
    if (!row) {
        if (err && err->code == KT_ERR_NOT_FOUND)
            kt_error_clear(err); /* deleted meanwhile: no model */
        goto out;
    }
    pthread_mutex_lock(&mc->lock);
    confidence = model_confidence_json(json_object_get(row, "training"),
                                       json_object_get(row, "metrics"), &mc->min);
    pthread_mutex_unlock(&mc->lock);
    trained_on = json_object_get(json_object_get(row, "training"), "trained_on");
    trained_on = json_is_array(trained_on) ? json_incref(trained_on) : json_array();
    if (!confidence || !trained_on) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory loading model %lld", r.id);
        goto out;
    }
    pthread_mutex_lock(&mc->lock);
    m = use_model(mc, r.id);
    if (m) {
        pthread_mutex_unlock(&mc->lock); /* another thread loaded it meanwhile */
        goto out;
    }
    int slot = -1;
    for (int i = 0; i < MODEL_CACHE_MODELS; i++) {
        loaded_model *o = mc->models[i];
        if (!o) {
            slot = i;
            break;
        }
        if (o->users == 0 && (slot < 0 || o->last_used < mc->models[slot]->last_used))
            slot = i;
    }
    if (slot >= 0 && (m = calloc(1, sizeof *m))) {
        free_model(mc->models[slot]);
        m->id = r.id;
        snprintf(m->algorithm, sizeof m->algorithm, "%s", r.algorithm);
        m->version = r.version;
        m->p = p;
        p = NULL;
        m->confidence = confidence;
        m->trained_on = trained_on;
        confidence = trained_on = NULL;
        pthread_mutex_init(&m->lock, NULL);
        m->users = 1;
        m->last_used = ++mc->tick;
        mc->models[slot] = m;
        mc->stats.loads++;
    } else {
        kt_error_set(err, slot < 0 ? KT_ERR_UNAVAILABLE : KT_ERR_NO_MEMORY,
                     "no room to load model %lld: %d models are predicting", r.id,
                     MODEL_CACHE_MODELS);
        kt_error_hint(err, "retry in a moment");
    }
    pthread_mutex_unlock(&mc->lock);
out:
    predictor_free(p);
    json_decref(row);
    json_decref(confidence);
    json_decref(trained_on);
    model_ready_release(&r);
    return m;
}

/* A score as JSON: null when not finite (JSON has no infinities). */
static json_t *score_json(double score)
{
    return isfinite(score) ? json_real(score) : json_null();
}

/* The answer JSON of n candidates of model m for problem; NULL when out of memory. Its
 * "confidence": the model's facts and how far problem is from the nearest trained one. */
static json_t *answer_json(const loaded_model *m, const json_t *problem, predictor_candidate *cands,
                           int n)
{
    json_t *confidence = json_deep_copy(m->confidence);
    if (!confidence || json_object_set_new(confidence, "nearest_trained",
                                           model_confidence_nearest(m->trained_on, problem)) < 0) {
        json_decref(confidence);
        return NULL;
    }
    json_t *list = json_array();
    for (int i = 0; list && i < n; i++)
        json_array_append_new(list, json_pack("{s:O, s:o}", "config", cands[i].config, "score",
                                              score_json(cands[i].score)));
    return json_pack("{s:{s:I, s:s, s:i}, s:O, s:o, s:o, s:o}", "model", "id", (json_int_t)m->id,
                     "algorithm", m->algorithm, "version", m->version, "config", cands[0].config,
                     "score", score_json(cands[0].score), "candidates", list, "confidence",
                     confidence);
}

int model_cache_predict(model_cache *mc, PGconn *c, const target *t, int k, json_t **out,
                        kt_error *err)
{
    int rc = -1, n = 0;
    char *key = NULL;
    loaded_model *m = NULL;
    json_t *answer = NULL;
    model_ready latest;
    predictor_candidate cands[MODEL_CACHE_MAX_K];
    *out = NULL;
    if (k < 1 || k > MODEL_CACHE_MAX_K || !t) {
        kt_error_set(err, k < 1 || k > MODEL_CACHE_MAX_K ? KT_ERR_OUT_OF_RANGE : KT_ERR_INTERNAL,
                     "a prediction needs k from 1 to %d and a target", MODEL_CACHE_MAX_K);
        goto out;
    }
    /* The newest ready model of the target's own key: a model of another kernel hash never
     * matches. One indexed query per call, no bytes. */
    int found =
        model_store_latest_ready(c, MODEL_KIND_PREDICTOR, t->key.kernel, t->key.device_class,
                                 t->key.kernel_hash, TARGET_TOOLCHAIN(t), 0, &latest, err);
    if (found <= 0) {
        rc = found;
        goto out;
    }
    size_t len = strlen(t->key.problem_key) + 64;
    key = malloc(len);
    if (!key) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory predicting");
        goto out;
    }
    snprintf(key, len, "%lld|%d|%s", latest.id, k, t->key.problem_key);
    pthread_mutex_lock(&mc->lock);
    prediction *hit = find_prediction(mc, key);
    if (hit) {
        mc->stats.hits++;
        *out = hit->answer ? json_deep_copy(hit->answer) : NULL;
        rc = hit->answer ? (*out ? 1 : -1) : 0;
        if (rc < 0)
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory copying a prediction");
        pthread_mutex_unlock(&mc->lock);
        goto out;
    }
    if (!t->sp) {
        /* Not cached, and the model needs the space to decode: the caller resolves it. */
        pthread_mutex_unlock(&mc->lock);
        rc = MODEL_CACHE_NEEDS_SPACE;
        goto out;
    }
    m = use_model(mc, latest.id);
    pthread_mutex_unlock(&mc->lock);
    if (!m) {
        kt_error_clear(err);
        m = load_model(mc, c, t, err);
        if (!m) {
            rc = err && err->code != KT_OK ? -1 : 0;
            goto out;
        }
        /* A newer model may have become ready between the two queries: key by the loaded one. */
        snprintf(key, len, "%lld|%d|%s", m->id, k, t->key.problem_key);
    }
    pthread_mutex_lock(&m->lock);
    n = predictor_predict(m->p, t->problem, t->sp, k, cands, err);
    pthread_mutex_unlock(&m->lock);
    if (n < 0) {
        kt_error_prefix(err, "model %lld", m->id);
        goto out;
    }
    if (n > 0 && !(answer = answer_json(m, t->problem, cands, n))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory predicting");
        goto out;
    }
    pthread_mutex_lock(&mc->lock);
    mc->stats.misses++;
    put_prediction(mc, key, answer);
    pthread_mutex_unlock(&mc->lock);
    if (answer && !(*out = json_deep_copy(answer))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory copying a prediction");
        goto out;
    }
    rc = answer ? 1 : 0;
out:
    if (n > 0)
        predictor_candidates_release(cands, n);
    if (m)
        unuse_model(mc, m);
    json_decref(answer);
    free(key);
    return rc;
}
