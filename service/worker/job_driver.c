#include "worker/job_driver.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "measure/backend.h"
#include "space/space.h"
#include "store/model_store.h"
#include "store/pick_store.h"
#include "store/trial_store.h"
#include "worker/warm_start.h"

static int end_job(job_driver *d, PGconn *c, const char *status, const char *reason,
                   const kt_error *why, kt_error *err)
{
    if (job_store_finish(c, d->me, d->row.id, status, reason, why, err) < 0)
        return -1;
    d->ended = 1;
    if (why)
        log_warn("job %lld %s: %s", d->row.id, status, why->message);
    else
        log_info("job %lld %s (%s) after %lld trials", d->row.id, status, reason, d->told);
    return JOB_DRIVER_ENDED;
}

static int final_start(job_driver *d, PGconn *c, const char *reason, kt_error *err);

/* The end of a job whose search is over (reason: why it stopped): succeeded when a trial ran
 * correctly (after the final pick when the job asked for one); when none is ok the job has no
 * best, and it fails saying what became of its trials. */
static int end_search(job_driver *d, PGconn *c, const char *reason, kt_error *err)
{
    /* The bounds are the table's CHECKs (sql/012); the pick's arrays are sized by them. */
    if (d->told_by_status[TRIAL_OK] > 0 && d->row.final_remeasure > 0 &&
        d->row.final_remeasure <= FINAL_PICK_MAX_COUNT && d->row.final_rounds > 0 &&
        d->row.final_rounds <= FINAL_PICK_MAX_ROUNDS)
        return final_start(d, c, reason, err);
    /* A metric objective: success needs a trial with the metric's value (the job's best). */
    int by_time = kt_objective_is_time(&d->row.objective);
    if (by_time ? d->told_by_status[TRIAL_OK] > 0 : d->told_valued > 0)
        return end_job(d, c, "succeeded", reason, NULL, err);
    kt_error why;
    char counts[KT_ERROR_MESSAGE_MAX] = "";
    size_t len = 0;
    if (!by_time && d->told_by_status[TRIAL_OK] > 0) {
        kt_error_set(&why, KT_ERR_MEASURE,
                     "no trial reported metric '%s', the objective: %lld ok trial%s without it "
                     "(%lld trial%s, stopped by %s)",
                     d->row.objective.metric, d->told_unvalued, d->told_unvalued == 1 ? "" : "s",
                     d->told, d->told == 1 ? "" : "s", reason);
        kt_error_hint(&why,
                      "an objective value is a number > 0 in an ok trial's extras.metrics (GET "
                      "/v1/jobs/%lld/trials); an ask/tell harness tells it in \"metrics\"",
                      d->row.id);
        return end_job(d, c, "failed", "no_ok_trial", &why, err);
    }
    for (int s = 0; s < TRIAL__STATUS_COUNT && len < sizeof counts; s++) {
        if (d->told_by_status[s] > 0)
            len += (size_t)snprintf(counts + len, sizeof counts - len, "%s%lld %s", len ? ", " : "",
                                    d->told_by_status[s], trial_status_name((trial_status)s));
    }
    kt_error_set(&why, KT_ERR_MEASURE,
                 "no configuration ran correctly: %s (%lld trial%s, stopped by %s)",
                 d->told ? counts : "none was measured", d->told, d->told == 1 ? "" : "s", reason);
    kt_error_hint(&why,
                  "each trial's extras say why it failed (GET /v1/jobs/%lld/trials); check "
                  "the kernel, the problem and the device",
                  d->row.id);
    return end_job(d, c, "failed", "no_ok_trial", &why, err);
}

/* How many configurations the next batch may hold under the budget; 0 when the budget is spent. */
static int next_batch_size(const job_driver *d, const char **reason)
{
    long long k = d->row.batch_size;
    if (d->row.budget_evaluations > 0) {
        long long left = d->row.budget_evaluations - d->told;
        if (left <= 0) {
            *reason = "budget_evaluations";
            return 0;
        }
        if (left < k)
            k = left;
    }
    if (d->row.budget_seconds > 0 && d->clock_seconds >= d->row.budget_seconds) {
        *reason = "budget_seconds";
        return 0;
    }
    return (int)k;
}

static int insert_batch(job_driver *d, PGconn *c, kt_error *err)
{
    int rc = -1;
    json_t **configs = calloc((size_t)d->batch_n, sizeof *configs);
    if (!configs)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory for a batch of %d", d->batch_n);
    for (int i = 0; i < d->batch_n; i++) {
        configs[i] = space_config_json(d->target->sp, d->batch[i]);
        if (!configs[i]) {
            kt_error_set(err, KT_ERR_INTERNAL, "searcher proposed id %llu outside the space",
                         (unsigned long long)d->batch[i]);
            goto out;
        }
    }
    rc = trial_store_insert_batch(c, d->row.id, d->row.target.key.device, (int)d->told + 1,
                                  d->batch, configs, d->batch_n, err);
out:
    for (int i = 0; i < d->batch_n; i++)
        json_decref(configs[i]);
    free(configs);
    return rc;
}

/* rows: the stored trials with seq > told, in seq order. Tells every complete batch they hold
 * (asking the searcher for each batch first, as the original run did), then queues the next batch.
 */
static int advance(job_driver *d, PGconn *c, const trial_row *rows, int n_rows, kt_error *err)
{
    int pos = 0;
    for (;;) {
        if (d->batch_n == 0) {
            const char *reason = NULL;
            int k = next_batch_size(d, &reason);
            if (k == 0 || !(d->batch_n = searcher_ask(d->search, d->batch, k))) {
                if (pos < n_rows) {
                    kt_error why;
                    kt_error_set(&why, KT_ERR_INTERNAL,
                                 "resume diverged: %d stored trials past the end", n_rows - pos);
                    return end_job(d, c, "failed", "resume_diverged", &why, err);
                }
                int exhausted = (uint64_t)d->told >= space_count(d->target->sp);
                return end_search(d, c,
                                  k == 0      ? reason
                                  : exhausted ? "space_exhausted"
                                              : "strategy_finished",
                                  err);
            }
            d->batch_inserted = 0;
        }
        int present = 0, final = 0;
        for (int i = 0; i < d->batch_n && pos + i < n_rows; i++) {
            const trial_row *t = &rows[pos + i];
            if (t->seq != d->told + 1 + i || t->cid != d->batch[i]) {
                kt_error why;
                kt_error_set(
                    &why, KT_ERR_INTERNAL,
                    "resume diverged at trial %d: stored config %llu, searcher proposed %llu",
                    t->seq, (unsigned long long)t->cid, (unsigned long long)d->batch[i]);
                return end_job(d, c, "failed", "resume_diverged", &why, err);
            }
            present++;
            final += trial_status_is_final(t->result.status);
        }
        if (present == d->batch_n && final == d->batch_n) {
            trial_result *results = malloc((size_t)d->batch_n * sizeof *results);
            if (!results)
                return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory telling a batch");
            for (int i = 0; i < d->batch_n; i++) {
                /* The searcher sees the objective's cost (core/objective.h): the time, or a
                 * metric's value (min) or its reciprocal (max); an ok trial without the metric
                 * as a failure. The counts keep the stored statuses. */
                int unvalued =
                    kt_objective_told(&d->row.objective, &rows[pos + i].result, &results[i]);
                d->told_unvalued += unvalued;
                d->told_valued += rows[pos + i].result.status == TRIAL_OK && !unvalued;
                /* The charge as stored with the trial: the driver reads the clock, it does not
                 * price trials itself. */
                d->clock_seconds += rows[pos + i].charged_seconds;
                if (rows[pos + i].result.status < TRIAL__STATUS_COUNT)
                    d->told_by_status[rows[pos + i].result.status]++;
            }
            searcher_tell(d->search, d->batch, results, d->batch_n);
            free(results);
            d->told += d->batch_n;
            pos += d->batch_n;
            d->batch_n = 0;
            continue;
        }
        if (present > 0)
            d->batch_inserted = 1;
        if (!d->batch_inserted) {
            if (insert_batch(d, c, err) < 0)
                return -1;
            d->batch_inserted = 1;
            return JOB_DRIVER_QUEUED;
        }
        return JOB_DRIVER_WAITING;
    }
}

/* ---- the final pick (worker/final_pick.h) ---- */

static int diverged(job_driver *d, PGconn *c, const char *what, int seq, kt_error *err)
{
    kt_error why;
    kt_error_set(&why, KT_ERR_INTERNAL, "resume diverged at re-measurement trial %d: %s", seq,
                 what);
    return end_job(d, c, "failed", "resume_diverged", &why, err);
}

/* Inserts the re-measurements as pending trials, seqs told+1 ... in final_pick_order's order
 * (rows already stored are kept: pick_store_insert). */
static int final_queue(job_driver *d, PGconn *c, kt_error *err)
{
    int rc = -1, rounds = d->row.final_rounds, n = d->n_cand * rounds;
    int order_cand[FINAL_PICK_MAX_COUNT * FINAL_PICK_MAX_ROUNDS];
    int order_round[FINAL_PICK_MAX_COUNT * FINAL_PICK_MAX_ROUNDS];
    config_id cids[FINAL_PICK_MAX_COUNT * FINAL_PICK_MAX_ROUNDS];
    json_t *configs[FINAL_PICK_MAX_COUNT * FINAL_PICK_MAX_ROUNDS] = {0};
    final_pick_order(d->n_cand, rounds, order_cand, order_round);
    for (int i = 0; i < n; i++) {
        cids[i] = d->cands[order_cand[i]].cid;
        configs[i] = space_config_json(d->target->sp, cids[i]);
        if (!configs[i]) {
            kt_error_set(err, KT_ERR_INTERNAL, "final pick candidate %llu is outside the space",
                         (unsigned long long)cids[i]);
            goto out;
        }
    }
    rc = pick_store_insert(c, d->row.id, d->row.target.key.device, (int)d->told + 1, cids,
                           order_round, configs, n, err);
out:
    for (int i = 0; i < n; i++)
        json_decref(configs[i]);
    return rc;
}

/* One look at the re-measurements: waiting while some are unfinished; when all are final the
 * winner is recorded and the job ends with the search's stop reason. */
static int final_step(job_driver *d, PGconn *c, kt_error *err)
{
    int rc = -1, rounds = d->row.final_rounds, n = d->n_cand * rounds, n_rows = 0;
    pick_trial *rows = NULL;
    json_t *pick = NULL;
    int order_cand[FINAL_PICK_MAX_COUNT * FINAL_PICK_MAX_ROUNDS];
    int order_round[FINAL_PICK_MAX_COUNT * FINAL_PICK_MAX_ROUNDS];
    final_sample samples[FINAL_PICK_MAX_COUNT * FINAL_PICK_MAX_ROUNDS];
    final_pick_order(d->n_cand, rounds, order_cand, order_round);
    if (pick_store_load(c, d->row.id, 1, &rows, &n_rows, err) < 0)
        goto out;
    int final = 0;
    for (int i = 0; i < n_rows; i++) {
        const pick_trial *t = &rows[i];
        if (i >= n || t->seq != d->told + 1 + i || t->cid != d->cands[order_cand[i]].cid ||
            t->round != order_round[i]) {
            rc = diverged(d, c,
                          i >= n ? "more re-measurements stored than the pick makes"
                                 : "it does not re-measure the candidate of that place",
                          t->seq, err);
            goto out;
        }
        samples[i] = (final_sample){.candidate = order_cand[i],
                                    .round = t->round,
                                    .trial_id = t->id,
                                    .status = t->status,
                                    .time_ms = t->time_ms};
        final += trial_status_is_final(t->status);
    }
    if (n_rows < n) { /* a crash between the end of the search and the insert */
        rc = final_queue(d, c, err) < 0 ? -1 : JOB_DRIVER_QUEUED;
        goto out;
    }
    if (final < n) {
        rc = JOB_DRIVER_WAITING;
        goto out;
    }
    final_outcome o;
    int w = final_pick_choose(d->cands, d->n_cand, samples, n, rounds, &o);
    pick = final_pick_json(d->cands, d->n_cand, samples, n, rounds, &o);
    if (!pick) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory recording the pick of job %lld",
                     d->row.id);
        goto out;
    }
    int recorded =
        pick_store_record(c, d->me, d->row.id, w >= 0 ? o.scores[w].median_trial_id : 0, pick, err);
    if (recorded < 0)
        goto out;
    if (recorded == 0) { /* cancelled, or handed on: whoever has it decides */
        d->ended = 1;
        rc = JOB_DRIVER_ENDED;
        goto out;
    }
    if (w >= 0)
        log_info("job %lld: final pick config %llu, median %.6g ms of %d re-measurements",
                 d->row.id, (unsigned long long)d->cands[w].cid, o.scores[w].median_ms, rounds);
    else
        log_warn("job %lld: no candidate of the final pick measured ok in all %d rounds; the "
                 "search's best stays",
                 d->row.id, rounds);
    rc = end_job(d, c, "succeeded", d->final_reason, NULL, err);
out:
    json_decref(pick);
    free(rows);
    return rc;
}

/* The search is over (reason) with an ok trial: choose the candidates from the stored search
 * trials (the told ones: seqs 1..told), queue their re-measurements, and go on in final_step. */
static int final_start(job_driver *d, PGconn *c, const char *reason, kt_error *err)
{
    int rc = -1, n_rows = 0;
    pick_trial *rows = NULL;
    final_trial *trials = NULL;
    if (pick_store_load(c, d->row.id, 0, &rows, &n_rows, err) < 0)
        goto out;
    trials = calloc(n_rows > 0 ? (size_t)n_rows : 1, sizeof *trials);
    if (!trials) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory choosing the final pick of job %lld",
                     d->row.id);
        goto out;
    }
    int n = 0;
    for (int i = 0; i < n_rows; i++)
        if (rows[i].seq <= d->told)
            trials[n++] = (final_trial){.trial_id = rows[i].id,
                                        .seq = rows[i].seq,
                                        .cid = rows[i].cid,
                                        .status = rows[i].status,
                                        .time_ms = rows[i].time_ms};
    d->n_cand = final_pick_candidates(trials, n, d->row.final_remeasure, d->cands);
    d->final_phase = 1;
    d->final_reason = reason;
    log_info("job %lld: search over (%s), re-measuring %d configurations %d times", d->row.id,
             reason, d->n_cand, d->row.final_rounds);
    rc = final_step(d, c, err);
out:
    free(trials);
    free(rows);
    return rc;
}

/* searcher_oracle_fn: the device's quick validity check of a configuration of the job's space. */
static int oracle_check(void *arg, config_id id)
{
    const job_oracle *o = arg;
    return backend_quick_check(o->cat, o->target, id);
}

/* Gives d's searcher the job's surrogate when its strategy needs one: 0 (done, or not needed),
 * JOB_DRIVER_ENDED (the job failed: no model, or one that does not load or fit), -1 with err
 * (database). */
static int open_surrogate(job_driver *d, PGconn *c, kt_error *err)
{
    int rc = -1;
    model_ready ready;
    kt_error why;
    kt_error_clear(&why);
    const target_key *k = &d->row.target.key;
    if (!searcher_needs_surrogate(d->row.strategy))
        return 0;
    int found = model_store_job_model(c, d->row.id, MODEL_KIND_SURROGATE, k->kernel,
                                      k->device_class, k->kernel_hash, k->toolchain, &ready, err);
    if (found < 0)
        return -1;
    if (found == 0) {
        kt_error_set(&why, KT_ERR_NO_MODEL, "strategy %s needs a trained surrogate for %s on %s",
                     d->row.strategy, k->kernel, k->device);
        kt_error_hint(&why,
                      "train one: POST /v1/models {\"kind\": \"surrogate\", \"kernel\": "
                      "\"%s\", \"device\": \"%s\"}, then submit the job again",
                      k->kernel, k->device);
        return end_job(d, c, "failed", "no_model", &why, err);
    }
    double pf[SURROGATE_MAX_PROBLEM_FEATURES];
    int n_pf = surrogate_problem_features(d->target->problem, pf, SURROGATE_MAX_PROBLEM_FEATURES);
    d->surrogate = surrogate_load(ready.bytes, ready.len, &why);
    if (d->surrogate && n_pf < 0)
        kt_error_set(&why, KT_ERR_BAD_PROBLEM, "the problem of job %lld has a non-numeric argument",
                     d->row.id);
    if (!d->surrogate || n_pf < 0 ||
        searcher_set_surrogate(d->search, d->surrogate, pf, n_pf, &why) < 0) {
        kt_error_prefix(&why, "surrogate model %lld", ready.id);
        rc = end_job(d, c, "failed", "strategy_refused", &why, err);
        goto out;
    }
    d->surrogate_id = ready.id;
    log_info("job %lld: searching through surrogate model %lld (version %d)", d->row.id, ready.id,
             ready.version);
    rc = 0;
out:
    model_ready_release(&ready);
    return rc;
}

int job_driver_open(job_driver *d, job_row *row, const catalog *cat, target_cache *targets,
                    model_cache *models, const runner_identity *me, PGconn *c, kt_error *err)
{
    int rc = -1;
    trial_row *rows = NULL;
    int n_rows = 0;
    kt_error why;
    warm_start ws;
    json_t *def_config = NULL, *options = NULL;
    memset(&ws, 0, sizeof ws);
    kt_error_clear(&why);
    memset(d, 0, sizeof *d);
    d->row = *row;
    memset(row, 0, sizeof *row);
    d->me = me;
    d->batch = calloc((size_t)d->row.batch_size, sizeof *d->batch);
    if (!d->batch) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory for job %lld", d->row.id);
        goto out;
    }
    d->targets = targets;
    d->target = target_cache_open(targets, d->row.id, &d->row.target.key, d->row.target.problem,
                                  d->row.target.space, &why);
    if (!d->target) {
        kt_error_prefix(&why, "cannot resume job %lld", d->row.id);
        /* The catalog gives another kernel hash: the space the stored trials index is gone; another
         * toolchain: the stored trials were measured under another compiler or driver. */
        rc = end_job(d, c, "failed",
                     why.code == KT_ERR_CONFLICT            ? "kernel_changed"
                     : why.code == KT_ERR_TOOLCHAIN_CHANGED ? "toolchain_changed"
                                                            : "target_unavailable",
                     &why, err);
        goto out;
    }
    /* "start": "default" is the kernel's default configuration, resolved each time a searcher is
     * made (the job keeps its options as sent), so a resumed job resolves it the same way. */
    def_config = catalog_default_config(cat, d->target);
    options = searcher_options_resolve_start(d->row.options, def_config, &why);
    if (options || !d->row.options) /* NULL from options: no default configuration */
        d->search = searcher_new(d->row.strategy, d->target->sp, options, d->row.seed, &why);
    if (!d->search) {
        rc = end_job(d, c, "failed", "strategy_refused", &why, err);
        goto out;
    }
    d->oracle = malloc(sizeof *d->oracle);
    if (!d->oracle) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory for job %lld", d->row.id);
        goto out;
    }
    *d->oracle = (job_oracle){.cat = cat, .target = d->target};
    searcher_set_oracle(d->search, oracle_check, d->oracle);
    rc = open_surrogate(d, c, err);
    if (rc != 0)
        goto out;
    rc = -1;
    /* Warm start: the recorded history (gathered and recorded on the first open), before the
     * replay, so that a resumed searcher sees exactly what the first one saw. */
    if (warm_start_prepare(c, &d->row, d->target, models, &ws, err) < 0)
        goto out;
    /* The prior is times of other targets: a cost of another objective, so a metric job's
     * searcher gets none (its first configurations are still proposed first). The same rule on
     * every open keeps the replay exact. */
    if (!kt_objective_is_time(&d->row.objective))
        ws.h.n_prior = 0;
    if (searcher_set_history(d->search, &ws.h, err) < 0)
        goto out;
    if (trial_store_load(c, d->row.id, 0, &rows, &n_rows, err) < 0)
        goto out;
    if (n_rows > 0)
        log_info("job %lld: resuming from %d stored trials", d->row.id, n_rows);
    rc = advance(d, c, rows, n_rows, err);
out:
    for (int i = 0; i < n_rows; i++)
        trial_row_release(&rows[i]);
    free(rows);
    warm_start_release(&ws);
    json_decref(def_config);
    json_decref(options);
    return rc;
}

int job_driver_step(job_driver *d, PGconn *c, kt_error *err)
{
    if (d->ended)
        return JOB_DRIVER_ENDED;
    char status[32];
    int mine = 0, rc;
    trial_row *rows = NULL;
    int n_rows = 0;
    /* Whether the job is still this driver's, and its trials since the last step, in one round
     * trip (the final phase reads none of them). */
    if (trial_store_load_driving(c, d->row.id, d->me->id, (int)d->told, status, sizeof status,
                                 &mine, &rows, &n_rows, err) < 0) {
        rc = err && err->code == KT_ERR_NOT_FOUND ? (d->ended = 1, JOB_DRIVER_ENDED) : -1;
    } else if (strcmp(status, "running") != 0) {
        log_info("job %lld is %s: no longer driven", d->row.id, status);
        d->ended = 1;
        rc = JOB_DRIVER_ENDED;
    } else if (!mine) {
        /* A pause longer than the lease (--lease-s) let the reaper of another process release
         * the job: whoever claims it resumes it by replay; this driver lets go. */
        log_warn("job %lld: this process's lease ran out, the job was handed on", d->row.id);
        d->ended = 1;
        rc = JOB_DRIVER_ENDED;
    } else {
        rc = d->final_phase ? final_step(d, c, err) : advance(d, c, rows, n_rows, err);
    }
    for (int i = 0; i < n_rows; i++)
        trial_row_release(&rows[i]);
    free(rows);
    return rc;
}

void job_driver_close(job_driver *d)
{
    searcher_free(d->search);
    surrogate_free(d->surrogate); /* after the searcher that borrowed it */
    free(d->oracle);
    if (d->target) {
        target_cache_release(d->targets, d->target);
        target_cache_forget(d->targets, d->row.id);
    }
    free(d->batch);
    job_row_release(&d->row);
    memset(d, 0, sizeof *d);
}
