/* training/trainer_surrogate_plan — a surrogate model's hyper-parameters, parsed and checked (see
 * trainer_surrogate.h for the keys, defaults and ranges). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "store/model_store.h"
#include "training/trainer_surrogate.h"

#define PLAN_DEFAULT_SAMPLES     60000
#define PLAN_DEFAULT_PROBLEMS    200
#define PLAN_DEFAULT_EPOCHS      40
#define PLAN_DEFAULT_BATCH       128
#define PLAN_DEFAULT_LR          1e-3
#define PLAN_DEFAULT_MAX_SECONDS 600
#define PLAN_MAX_BATCH           65536
/* Weights between hidden layers: 4 Mi doubles, 32 MiB, half of what a stored model may be. */
#define PLAN_MAX_HIDDEN_WEIGHTS (4 << 20)
#define PLAN_KEYS               "samples, problems, epochs, hidden, batch, lr, seed, max_seconds"

static const int plan_default_hidden[] = {256, 256, 128};

/* An integer member in [lo, hi] into *out (absent: untouched). */
static int get_int(const json_t *hyper, const char *key, long long lo, long long hi, long long *out,
                   kt_error *err)
{
    const json_t *v = json_object_get(hyper, key);
    if (!v)
        return 0;
    if (!json_is_integer(v)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE, "hyper.%s must be an integer", key);
        kt_error_hint(err, "hyper.%s: an integer from %lld to %lld", key, lo, hi);
        return -1;
    }
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "hyper.%s is %lld, out of range", key, (long long)x);
        kt_error_hint(err, "hyper.%s: an integer from %lld to %lld", key, lo, hi);
        return -1;
    }
    *out = (long long)x;
    return 0;
}

/* A number member in (lo, hi] (lo_open) or [lo, hi] into *out (absent: untouched). */
static int get_number(const json_t *hyper, const char *key, double lo, int lo_open, double hi,
                      double *out, kt_error *err)
{
    const json_t *v = json_object_get(hyper, key);
    if (!v)
        return 0;
    if (!json_is_number(v)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE, "hyper.%s must be a number", key);
        kt_error_hint(err, "hyper.%s: a number in %s%g, %g]", key, lo_open ? "(" : "[", lo, hi);
        return -1;
    }
    double x = json_number_value(v);
    if (!isfinite(x) || x > hi || x < lo || (lo_open && x == lo)) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "hyper.%s is %g, out of range", key, x);
        kt_error_hint(err, "hyper.%s: a number in %s%g, %g]", key, lo_open ? "(" : "[", lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int get_hidden(const json_t *hyper, trainer_surrogate_plan *p, kt_error *err)
{
    const json_t *v = json_object_get(hyper, "hidden");
    if (!v)
        return 0;
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n < 1 || n > TRAINER_SURROGATE_MAX_LAYERS) {
        kt_error_set(err, json_is_array(v) ? KT_ERR_OUT_OF_RANGE : KT_ERR_WRONG_TYPE,
                     "hyper.hidden must be an array of 1 to %d layer widths",
                     TRAINER_SURROGATE_MAX_LAYERS);
        kt_error_hint(err, "e.g. \"hidden\": [256, 256, 128] (widths from 1 to %d)",
                      TRAINER_SURROGATE_MAX_WIDTH);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *w = json_array_get(v, i);
        json_int_t x = json_is_integer(w) ? json_integer_value(w) : 0;
        if (x < 1 || x > TRAINER_SURROGATE_MAX_WIDTH) {
            kt_error_set(err, json_is_integer(w) ? KT_ERR_OUT_OF_RANGE : KT_ERR_WRONG_TYPE,
                         "hyper.hidden[%zu] must be an integer from 1 to %d", i,
                         TRAINER_SURROGATE_MAX_WIDTH);
            kt_error_hint(err, "e.g. \"hidden\": [256, 256, 128]");
            return -1;
        }
        p->train.hidden[i] = (int)x;
    }
    long long weights = 0;
    for (size_t i = 0; i + 1 < n; i++)
        weights += (long long)p->train.hidden[i] * p->train.hidden[i + 1];
    if (weights > PLAN_MAX_HIDDEN_WEIGHTS) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "hyper.hidden has %lld weights between its layers, more than %d", weights,
                     PLAN_MAX_HIDDEN_WEIGHTS);
        kt_error_hint(err, "fewer or narrower layers: a model is stored whole (at most %u MiB)",
                      MODEL_MAX_BYTES >> 20);
        return -1;
    }
    p->train.n_hidden = (int)n;
    return 0;
}

int trainer_surrogate_plan_parse(const json_t *hyper, trainer_surrogate_plan *out, kt_error *err)
{
    static const char *const keys[] = {"samples", "problems", "epochs",      "hidden",
                                       "batch",   "lr",       "max_seconds", "seed"};
    trainer_surrogate_plan p;
    memset(&p, 0, sizeof p);
    p.samples = PLAN_DEFAULT_SAMPLES;
    p.problems = PLAN_DEFAULT_PROBLEMS;
    p.max_seconds = PLAN_DEFAULT_MAX_SECONDS;
    p.train.epochs = PLAN_DEFAULT_EPOCHS;
    p.train.batch = PLAN_DEFAULT_BATCH;
    p.train.lr = PLAN_DEFAULT_LR;
    p.train.n_hidden = (int)(sizeof plan_default_hidden / sizeof plan_default_hidden[0]);
    memcpy(p.train.hidden, plan_default_hidden, sizeof plan_default_hidden);
    if (hyper && !json_is_null(hyper) && !json_is_object(hyper)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE, "the surrogate's hyper must be an object");
        kt_error_hint(err, "e.g. {\"samples\": 60000, \"problems\": 200, \"epochs\": 40}");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)hyper, key, v)
    {
        int known = 0;
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            known |= strcmp(key, keys[i]) == 0;
        if (!known) {
            kt_error_set(err, KT_ERR_BAD_OPTION, "unknown surrogate hyper-parameter '%.64s'", key);
            kt_error_hint(err, "a surrogate's hyper-parameters: " PLAN_KEYS);
            return -1;
        }
    }
    long long samples = p.samples, problems = p.problems, epochs = p.train.epochs;
    long long batch = p.train.batch, seed = -1;
    double max_seconds = p.max_seconds, lr = p.train.lr;
    if (get_int(hyper, "samples", TRAINER_SURROGATE_MIN_SAMPLES, TRAINER_SURROGATE_MAX_SAMPLES,
                &samples, err) < 0 ||
        get_int(hyper, "problems", 2, TRAINER_SURROGATE_MAX_PROBLEMS, &problems, err) < 0 ||
        get_int(hyper, "epochs", 1, TRAINER_SURROGATE_MAX_EPOCHS, &epochs, err) < 0 ||
        get_int(hyper, "batch", 1, PLAN_MAX_BATCH, &batch, err) < 0 ||
        get_int(hyper, "seed", 0, LLONG_MAX, &seed, err) < 0 ||
        get_number(hyper, "lr", 0, 1, 1, &lr, err) < 0 ||
        get_number(hyper, "max_seconds", 1, 0, TRAINER_SURROGATE_MAX_SECONDS, &max_seconds, err) <
            0 ||
        get_hidden(hyper, &p, err) < 0)
        return -1;
    if (problems > samples) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "hyper.problems (%lld) is more than hyper.samples (%lld)", problems, samples);
        kt_error_hint(err, "every problem needs one sample at least: fewer problems or more "
                           "samples");
        return -1;
    }
    p.samples = samples;
    p.problems = (int)problems;
    p.train.epochs = (int)epochs;
    p.train.batch = (int)batch;
    p.train.lr = lr;
    p.max_seconds = max_seconds;
    p.has_seed = seed >= 0;
    p.train.seed = seed >= 0 ? (uint64_t)seed : 0;
    *out = p;
    return 0;
}

json_t *trainer_surrogate_plan_json(const trainer_surrogate_plan *p)
{
    json_t *hidden = json_array();
    for (int i = 0; hidden && i < p->train.n_hidden; i++)
        json_array_append_new(hidden, json_integer(p->train.hidden[i]));
    json_t *out =
        json_pack("{s:I, s:i, s:i, s:o, s:i, s:f, s:f}", "samples", (json_int_t)p->samples,
                  "problems", p->problems, "epochs", p->train.epochs, "hidden", hidden, "batch",
                  p->train.batch, "lr", p->train.lr, "max_seconds", p->max_seconds);
    if (out && p->has_seed)
        json_object_set_new(out, "seed", json_integer((json_int_t)(p->train.seed & INT64_MAX)));
    return out;
}
