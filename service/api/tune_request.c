#include "core/device_name.h"
#include "api/tune_request.h"

#include <math.h>
#include <ctype.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "search/searcher.h"
#include "worker/final_pick.h"
#include "core/clock.h"
#include "api/api_internal.h"

static int parse_budget(const kt_config *cfg, const json_t *budget, tune_request *t, kt_error *err)
{
    static const char *const fields[] = {"evaluations", "seconds", NULL};
    t->evaluations = 0;
    t->seconds = 0;
    if (!budget || json_is_null(budget)) {
        t->evaluations = TUNE_DEFAULT_EVALUATIONS;
        return 0;
    }
    if (!json_is_object(budget))
        return kt_error_set(
            err, KT_ERR_WRONG_TYPE,
            "field 'budget' must be an object like {\"evaluations\": 100, \"seconds\": 600}");
    if (api_check_fields(budget, fields, "budget", err) < 0)
        return -1;
    json_t *ev = json_object_get(budget, "evaluations");
    json_t *sec = json_object_get(budget, "seconds");
    if (ev && !json_is_null(ev)) {
        if (!json_is_integer(ev))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "budget.evaluations must be an integer");
        t->evaluations = json_integer_value(ev);
        if (t->evaluations < 1)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                "budget.evaluations must be at least 1, not %lld", t->evaluations);
        if (t->evaluations > cfg->max_evaluations) {
            kt_error_set(err, KT_ERR_BUDGET_TOO_LARGE,
                         "budget.evaluations %lld exceeds the maximum of %lld", t->evaluations,
                         cfg->max_evaluations);
            kt_error_hint(
                err,
                "ask for at most %lld evaluations, or start ktuned with a larger --max-evaluations",
                cfg->max_evaluations);
            return -1;
        }
    }
    if (sec && !json_is_null(sec)) {
        if (!json_is_number(sec))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "budget.seconds must be a number");
        t->seconds = json_number_value(sec);
        if (!isfinite(t->seconds) || !(t->seconds >= TUNE_MIN_SECONDS)) {
            kt_error_set(err, KT_ERR_OUT_OF_RANGE, "budget.seconds must be at least %g, not %g",
                         TUNE_MIN_SECONDS, t->seconds);
            kt_error_hint(err, "a time budget is given in seconds, e.g. 600 for ten minutes");
            return -1;
        }
        if (t->seconds > cfg->max_seconds) {
            kt_error_set(err, KT_ERR_BUDGET_TOO_LARGE,
                         "budget.seconds %g exceeds the maximum of %g", t->seconds,
                         cfg->max_seconds);
            kt_error_hint(err,
                          "ask for at most %g seconds, or start ktuned with a larger --max-seconds",
                          cfg->max_seconds);
            return -1;
        }
    }
    if (t->evaluations == 0 && t->seconds == 0)
        return kt_error_set(err, KT_ERR_MISSING_FIELD,
                            "budget needs 'evaluations' or 'seconds' (or both)");
    return 0;
}

/* An optional integer field name of body in lo..hi into *out; -1 when absent or null. */
static int parse_count(const json_t *body, const char *name, int lo, int hi, int *out,
                       const char *hint, kt_error *err)
{
    json_t *v = json_object_get(body, name);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field '%s' must be an integer", name);
    if (json_integer_value(v) < lo || json_integer_value(v) > hi) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field '%s' must be %d to %d, not %lld", name, lo,
                     hi, (long long)json_integer_value(v));
        kt_error_hint(err, "%s", hint);
        return -1;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

static uint64_t fresh_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) {
        struct timespec ts = kt_clock_wall();
        seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec;
    }
    return seed & 0x7fffffffffffffffULL; /* stored as a non-negative bigint */
}

json_t *tune_request_problem(const tune_request *t, int *oom)
{
    *oom = 0;
    if (!t->neural)
        return t->problem ? json_incref((json_t *)t->problem) : NULL;
    json_t *p = t->problem ? json_copy((json_t *)t->problem) : json_object();
    if (!p || json_object_set(p, "neural", (json_t *)t->neural) < 0) {
        json_decref(p);
        *oom = 1;
        return NULL;
    }
    return p;
}

/* A kernel version: 1-64 of [A-Za-z0-9._:-]. */
static int valid_version(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._:-", s[i]))
            return 0;
    return 1;
}

/* The names: kernel, device, strategy, history, kernel_version, and the external device's
 * device_class and space (refused with any other device). */
static int parse_names(const json_t *body, tune_request *t, kt_error *err)
{
    if (api_get_string(body, "kernel", 1, API_MAX_NAME, &t->kernel, err) < 0 ||
        api_get_string(body, "device", 1, API_MAX_NAME, &t->device, err) < 0 ||
        api_get_string(body, "strategy", 0, API_MAX_NAME, &t->strategy, err) < 0 ||
        api_get_string(body, "history", 0, API_MAX_NAME, &t->history, err) < 0 ||
        api_get_string(body, "kernel_version", 0, 64, &t->kernel_version, err) < 0)
        return -1;
    if (t->kernel_version && !valid_version(t->kernel_version)) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "kernel_version: 1 to 64 characters of letters, digits, '.', '_', ':', '-'");
        kt_error_hint(err, "GET /v1/kernels/%.64s lists the versions", t->kernel);
        return -1;
    }
    if (api_get_string(body, "device_class", 0, API_MAX_NAME, &t->device_class, err) < 0)
        return -1;
    t->space = json_object_get(body, "space");
    if (t->space && json_is_null(t->space))
        t->space = NULL;
    t->device_kind = kt_device_kind_of(t->device); /* the request's device, parsed once */
    if (t->device_kind != KT_DEVICE_EXTERNAL && (t->device_class || t->space)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "field '%s' is only for device external (a harness measures through "
                     "ask/tell)",
                     t->space ? "space" : "device_class");
        kt_error_hint(err, "leave it out for device %s, or send \"device\": \"external\"",
                      t->device);
        return -1;
    }
    return 0;
}

/* The history ("auto" when absent) and the strategy (TUNE_DEFAULT_STRATEGY when absent). */
static int check_history_strategy(tune_request *t, kt_error *err)
{
    if (!t->history)
        t->history = TUNE_DEFAULT_HISTORY;
    if (strcmp(t->history, "auto") != 0 && strcmp(t->history, "none") != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "field 'history' must be \"auto\" or \"none\", not '%s'", t->history);
        kt_error_hint(err, "\"auto\" (the default) first measures what results of the same kernel "
                           "on other devices and problems suggest; \"none\" starts cold");
        return -1;
    }
    if (!t->strategy)
        t->strategy = TUNE_DEFAULT_STRATEGY;
    if (!searcher_exists(t->strategy)) {
        kt_error_set(err, KT_ERR_UNKNOWN_STRATEGY, "no strategy named '%s'", t->strategy);
        kt_error_hint(err, "valid strategies: %s", searcher_names());
        return -1;
    }
    return 0;
}

/* The member name of body when it is neither absent nor null, else NULL. */
static const json_t *present(const json_t *body, const char *name)
{
    const json_t *v = json_object_get(body, name);
    return v && !json_is_null(v) ? v : NULL;
}

/* The objects: problem, neural (given once) and strategy_options. */
static int parse_objects(const json_t *body, tune_request *t, kt_error *err)
{
    t->problem = present(body, "problem");
    if (t->problem && !json_is_object(t->problem))
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "field 'problem' must be an object of problem arguments");
    t->neural = present(body, "neural");
    if (t->neural && !json_is_object(t->neural)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'neural' must be an object");
        kt_error_hint(err, "{\"allow\": [\"group\"], \"network\": \"vgg_fm\", \"layer\": "
                           "\"conv2\"}: transformations that change the network, judged by Fisher "
                           "Potential (GET /v1/networks lists the networks)");
        return -1;
    }
    if (t->neural && t->problem && json_object_get(t->problem, "neural"))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "give 'neural' once: as a field of the request or of its problem");
    t->options = present(body, "strategy_options");
    if (t->options && !json_is_object(t->options))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'strategy_options' must be an object");
    return 0;
}

/* How a batch runs: parallel, final_remeasure and final_rounds. */
static int parse_batch(const json_t *body, tune_request *t, kt_error *err)
{
    const json_t *par = present(body, "parallel");
    if (par) {
        if (!json_is_integer(par))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'parallel' must be an integer");
        if (json_integer_value(par) < 1 || json_integer_value(par) > TUNE_MAX_PARALLEL) {
            kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'parallel' must be 1 to %d, not %lld",
                         TUNE_MAX_PARALLEL, (long long)json_integer_value(par));
            kt_error_hint(err, "parallel is how many configurations are measured at once, by as "
                               "many workers of the device class");
            return -1;
        }
        t->parallel = (int)json_integer_value(par);
    }
    if (parse_count(body, "final_remeasure", 0, FINAL_PICK_MAX_COUNT, &t->final_remeasure,
                    "final_remeasure is how many of the fastest configurations are measured again "
                    "once the budget is spent, the winner taken by their median (0 = none)",
                    err) < 0 ||
        parse_count(body, "final_rounds", 1, FINAL_PICK_MAX_ROUNDS, &t->final_rounds,
                    "final_rounds is how many times each of them is measured again, interleaved",
                    err) < 0)
        return -1;
    return 0;
}

/* "seed": an integer, or its decimal text (what GET /v1/jobs/{id} answers: a JSON number above
 * 2^53 is rounded by clients that read doubles), 0 .. 2^63-1; absent or null: a fresh one. */
static int parse_seed(const json_t *seed, uint64_t *out, kt_error *err)
{
    if (!seed) {
        *out = fresh_seed();
        return 0;
    }
    if (json_is_integer(seed) && json_integer_value(seed) >= 0) {
        *out = (uint64_t)json_integer_value(seed);
        return 0;
    }
    const char *s = json_string_value(seed);
    size_t len = s ? strlen(s) : 0;
    uint64_t v = 0;
    int ok = len > 0 && len <= 19;
    for (size_t i = 0; ok && i < len; i++) {
        ok = s[i] >= '0' && s[i] <= '9' && v <= (INT64_MAX - (uint64_t)(s[i] - '0')) / 10;
        v = ok ? v * 10 + (uint64_t)(s[i] - '0') : v;
    }
    if (!ok) {
        kt_error_set(err, KT_ERR_WRONG_TYPE,
                     "field 'seed' must be a non-negative integer or its decimal text");
        kt_error_hint(err,
                      "0 .. 9223372036854775807, as 42 or \"42\"; leave it out for a fresh seed");
        return -1;
    }
    *out = v;
    return 0;
}

int tune_request_parse(const kt_config *cfg, const json_t *body, tune_request *t, kt_error *err)
{
    static const char *const fields[] = {
        "kernel",       "device", "problem",        "strategy",     "strategy_options",
        "budget",       "seed",   "history",        "parallel",     "final_remeasure",
        "final_rounds", "neural", "kernel_version", "device_class", "space",
        "objective",    NULL};
    memset(t, 0, sizeof *t);
    if (api_check_fields(body, fields, "the tune request", err) < 0 ||
        parse_names(body, t, err) < 0 || check_history_strategy(t, err) < 0 ||
        parse_objects(body, t, err) < 0 ||
        parse_budget(cfg, json_object_get(body, "budget"), t, err) < 0 ||
        kt_objective_parse(json_object_get(body, "objective"), &t->objective, err) < 0 ||
        parse_batch(body, t, err) < 0)
        return -1;
    return parse_seed(present(body, "seed"), &t->seed, err);
}

void tune_request_budgeted(const target_key *key, const json_t *problem, long long evaluations,
                           tune_request *t)
{
    memset(t, 0, sizeof *t);
    t->kernel = key->kernel;
    t->device = key->device;
    t->device_kind = (int)key->dev.kind;
    t->problem = problem;
    t->strategy = TUNE_DEFAULT_STRATEGY;
    t->history = TUNE_DEFAULT_HISTORY;
    t->evaluations = evaluations;
    t->seed = fresh_seed();
    t->final_remeasure = -1;
    t->final_rounds = -1;
}

int tune_device_deterministic(int kind)
{
    return kind == KT_DEVICE_REPLAY || kind == KT_DEVICE_ACCEL;
}
