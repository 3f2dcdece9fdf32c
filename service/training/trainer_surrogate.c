/* training/trainer_surrogate — trains a claimed model of kind "surrogate": samples problems and
 * valid mappings from the device's cost model, trains the MLP on a helper thread, stores it. See
 * trainer_surrogate.h. */
#include "core/device_name.h"
#include "training/trainer_surrogate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/strbuf.h"
#include "training/trainer_internal.h"

/* Sampling may take this share of max_seconds; training gets what is left. */
#define SAMPLE_SHARE 0.5
/* The clock is read once per this many draws while sampling. */
#define CLOCK_EVERY 256

/* What sampling drew. */
typedef struct sample_stats {
    int problems;    /* problems sampled with at least one valid mapping kept */
    int skipped;     /* problems that could not be resolved or had no valid mapping */
    long long draws; /* mappings drawn */
    long long valid; /* of them valid (and kept) */
    int out_of_time; /* sampling stopped at its share of max_seconds */
    double seconds;
} sample_stats;

/* A problem's samples: draws of its space until want valid ones were kept (or the tries ran out,
 * or the deadline passed). 0, or -1 with err (the cost model failed). */
static int sample_problem(const catalog *cat, const target *pt, int index, long long want,
                          kt_rng *rng, uint64_t deadline, surrogate_data **data, sample_stats *st,
                          kt_error *err)
{
    double pf[SURROGATE_MAX_PROBLEM_FEATURES], meta[SURROGATE_MAX_OUTPUTS];
    double w[SURROGATE_MAX_OUTPUTS];
    int n_pf = surrogate_problem_features(pt->problem, pf, SURROGATE_MAX_PROBLEM_FEATURES);
    long long got = 0, tries = want * TRAINER_SURROGATE_TRIES_PER_SAMPLE;
    if (n_pf < 0 || space_count(pt->sp) == 0) {
        st->skipped++;
        return 0;
    }
    for (long long k = 0; k < tries && got < want; k++) {
        if (k % CLOCK_EVERY == CLOCK_EVERY - 1 && kt_clock_ns() >= deadline) {
            st->out_of_time = 1;
            break;
        }
        config_id id = space_sample(pt->sp, rng);
        int n_meta = 0;
        st->draws++;
        int valid = catalog_accel_meta(cat, pt, id, meta, SURROGATE_MAX_OUTPUTS, w, &n_meta, err);
        if (valid < 0)
            return -1;
        if (valid == 0)
            continue;
        if (!*data && !(*data = surrogate_data_new(n_meta, w, err)))
            return -1;
        if (surrogate_data_add(*data, pf, n_pf, pt->sp, id, meta, index, err) < 0)
            return -1;
        got++;
    }
    st->valid += got;
    if (got > 0)
        st->problems++;
    else
        st->skipped++;
    return 0;
}

/* Draws the training data of model m (kernel on tt's device) as plan says. 1 done (*data may be
 * NULL when nothing valid was drawn), 0 the trainer is stopping (abandon), -1 with err. */
static int sample(trainer *t, const model_claim *m, const trainer_target *tt,
                  const trainer_surrogate_plan *plan, surrogate_data **data, sample_stats *st,
                  kt_error *err)
{
    const catalog *cat = trainer_opts(t)->cat;
    uint64_t t0 = kt_clock_ns();
    uint64_t deadline = t0 + (uint64_t)(plan->max_seconds * SAMPLE_SHARE * 1e9);
    long long per = (plan->samples + plan->problems - 1) / plan->problems;
    kt_rng rng;
    kt_rng_seed(&rng, plan->train.seed ^ 0x5A3D1E5ULL);
    memset(st, 0, sizeof *st);
    *data = NULL;
    int rc = 1;
    for (int i = 0; i < plan->problems && st->valid < plan->samples; i++) {
        if (trainer_stopping(t)) {
            rc = 0;
            break;
        }
        if (kt_clock_ns() >= deadline) {
            st->out_of_time = 1;
            break;
        }
        json_t *problem = catalog_sample_problem(cat, m->kernel, tt->device, &rng, err);
        if (!problem) {
            kt_error_prefix(err, "sampling problem %d of kernel %s", i + 1, m->kernel);
            rc = -1;
            break;
        }
        target pt;
        kt_error why;
        kt_error_clear(&why);
        if (catalog_resolve(cat, m->kernel, tt->device, problem, &pt, &why) < 0) {
            log_warn("model %lld: a sampled problem of %s does not resolve, skipped: %s", m->id,
                     m->kernel, why.message);
            st->skipped++;
            json_decref(problem);
            continue;
        }
        json_decref(problem);
        long long left = plan->samples - st->valid;
        int got =
            sample_problem(cat, &pt, i, per < left ? per : left, &rng, deadline, data, st, err);
        target_release(&pt);
        if (got < 0) {
            kt_error_prefix(err, "sampling mappings of %s", m->kernel);
            rc = -1;
            break;
        }
    }
    st->seconds = (double)kt_clock_since_ns(t0) / 1e9;
    if (rc <= 0) {
        surrogate_data_free(*data);
        *data = NULL;
    }
    return rc;
}

/* ---- the training, on a helper thread ---- */

typedef struct surrogate_task {
    surrogate_data *data;
    surrogate_options opt;
} surrogate_task;

typedef struct surrogate_result {
    surrogate *s;
    json_t *metrics;
} surrogate_result;

static void surrogate_result_free(void *result)
{
    surrogate_result *r = result;
    if (!r)
        return;
    surrogate_free(r->s);
    json_decref(r->metrics);
    free(r);
}

static void *surrogate_task_run(void *arg, kt_error *err)
{
    surrogate_task *task = arg;
    surrogate_result *r = calloc(1, sizeof *r);
    if (!r) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory training a surrogate");
        return NULL;
    }
    r->s = surrogate_train(task->data, &task->opt, &r->metrics, err);
    if (!r->s) {
        surrogate_result_free(r);
        return NULL;
    }
    return r;
}

static void surrogate_task_free(void *arg)
{
    surrogate_task *task = arg;
    if (!task)
        return;
    surrogate_data_free(task->data);
    free(task);
}

/* Trains on a helper thread; takes data. NULL with err, or with *abandoned. */
static surrogate_result *train_on_helper(trainer *t, surrogate_data *data,
                                         const surrogate_options *opt, int *abandoned,
                                         double *seconds, kt_error *err)
{
    surrogate_task *task = calloc(1, sizeof *task);
    *abandoned = 0;
    if (!task) {
        surrogate_data_free(data);
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory starting a training");
        return NULL;
    }
    task->data = data;
    task->opt = *opt;
    trainer_task tt = {.run = surrogate_task_run,
                       .free_arg = surrogate_task_free,
                       .free_result = surrogate_result_free,
                       .arg = task};
    return trainer_run_on_helper(t, &tt, abandoned, seconds, err);
}

static int store(trainer *t, const model_claim *m, const surrogate_result *r,
                 const json_t *training, const json_t *hyper, kt_error *err)
{
    const trainer_options *o = trainer_opts(t);
    int rc = -1;
    PGconn *c = NULL;
    strbuf bytes;
    strbuf_init(&bytes, MODEL_MAX_BYTES);
    if (surrogate_save(r->s, &bytes, err) < 0)
        goto out;
    c = db_acquire(o->db, 10000, err);
    if (!c)
        goto out;
    rc = model_store_finish(c, o->me, m->id, (const unsigned char *)strbuf_str(&bytes), bytes.len,
                            TRAINER_SURROGATE_FORMAT, r->metrics, training, hyper, err);
    if (rc == 0)
        log_info("model %lld ready: surrogate of %s on %s, version %d, %zu bytes", m->id, m->kernel,
                 m->device_class, m->version, bytes.len);
out:
    if (c)
        db_release(o->db, c);
    strbuf_release(&bytes);
    return rc;
}

void trainer_surrogate_train(trainer *t, const model_claim *m)
{
    kt_error err;
    kt_error_clear(&err);
    trainer_target tt;
    trainer_surrogate_plan plan;
    surrogate_data *data = NULL;
    surrogate_result *r = NULL;
    json_t *training = NULL, *hyper = NULL;
    sample_stats st;
    const char *reason = "target_unavailable";
    int abandoned = 0;
    uint64_t t0 = kt_clock_ns();
    log_info("model %lld: training a surrogate of %s on %s (version %d, attempt %d, %s)", m->id,
             m->kernel, m->device_class, m->version, m->attempts, m->reason);
    if (trainer_open_target(trainer_opts(t)->cat, m, &tt, &reason, &err) < 0) {
        trainer_fail_model(t, m, &err, reason, NULL);
        return;
    }
    if (kt_device_kind_of(tt.device) != KT_DEVICE_ACCEL) {
        reason = "no_cost_model";
        kt_error_set(&err, KT_ERR_BAD_REQUEST,
                     "device class %s has no cost model for a surrogate to learn", m->device_class);
        kt_error_hint(&err, "surrogates learn an accel device's cost model (GET /v1/devices: "
                            "kind accel)");
        goto fail;
    }
    reason = "bad_hyper";
    if (strcmp(m->algorithm, TRAINER_SURROGATE_ALGORITHM) != 0) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "a surrogate's algorithm is %s, not %s",
                     TRAINER_SURROGATE_ALGORITHM, m->algorithm);
        goto fail;
    }
    if (trainer_surrogate_plan_parse(m->hyper, &plan, &err) < 0)
        goto fail;
    if (!plan.has_seed) {
        plan.train.seed =
            ((uint64_t)m->id * 0x9E3779B97F4A7C15ULL ^ (uint64_t)m->version) & (uint64_t)INT64_MAX;
        plan.has_seed = 1;
    }
    hyper = trainer_surrogate_plan_json(&plan);
    reason = "no_data";
    int sampled = sample(t, m, &tt, &plan, &data, &st, &err);
    if (sampled == 0) {
        log_info("model %lld: sampling abandoned (stopping); the next trainer starts it again",
                 m->id);
        goto out;
    }
    training =
        json_pack("{s:i, s:I, s:f, s:I, s:i, s:i, s:b, s:f}", "problems", st.problems, "samples",
                  (json_int_t)st.valid, "valid_fraction",
                  st.draws > 0 ? (double)st.valid / (double)st.draws : 0.0, "draws",
                  (json_int_t)st.draws, "problems_skipped", st.skipped, "attempt", m->attempts,
                  "sampling_out_of_time", st.out_of_time, "sample_seconds", st.seconds);
    if (sampled < 0)
        goto fail;
    if (!data || st.valid < TRAINER_SURROGATE_MIN_SAMPLES || st.problems < 2) {
        kt_error_set(&err, KT_ERR_BAD_REQUEST,
                     "%lld valid mappings of %d problems were drawn (of %lld draws): too few to "
                     "train on",
                     st.valid, st.problems, st.draws);
        kt_error_hint(&err,
                      "at least %d samples of 2 problems: raise hyper max_seconds, or "
                      "check the device's limits (most mappings invalid?)",
                      TRAINER_SURROGATE_MIN_SAMPLES);
        goto fail;
    }
    reason = "train_failed";
    double left = plan.max_seconds - (double)kt_clock_since_ns(t0) / 1e9;
    plan.train.max_seconds = left > 1 ? left : 1;
    double train_s = 0;
    r = train_on_helper(t, data, &plan.train, &abandoned, &train_s, &err);
    data = NULL; /* taken */
    if (abandoned) {
        log_info("model %lld: training abandoned (stopping); the next trainer starts it again",
                 m->id);
        goto out;
    }
    if (!r)
        goto fail;
    json_object_set_new(training, "train_seconds", json_real(train_s));
    json_object_set_new(training, "seconds", json_real((double)kt_clock_since_ns(t0) / 1e9));
    if (store(t, m, r, training, hyper, &err) == 0)
        goto out;
    if (err.code == KT_ERR_CONFLICT) {
        log_warn("model %lld: %s", m->id, err.message); /* not ours any more: leave it be */
        goto out;
    }
    reason = "store_failed";
fail:
    trainer_fail_model(t, m, &err, reason, training);
out:
    surrogate_result_free(r);
    surrogate_data_free(data);
    json_decref(training);
    json_decref(hyper);
    trainer_target_release(&tt);
}
