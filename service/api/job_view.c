/* api/job_view — see job_view.h. */
#include "core/device_name.h"
#include "api/job_view.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A double column as PostgreSQL wrote it into JSON, as jansson read it back: integral values below
 * 1e15 have no decimal point (an integer), the rest are reals; NAN (SQL NULL) is null. */
static json_t *pg_double(double v)
{
    if (!isfinite(v))
        return json_null();
    if (v == floor(v) && fabs(v) < 1e15)
        return json_integer((json_int_t)v);
    return json_real(v);
}

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *json_or_null(const json_t *v)
{
    return v ? json_deep_copy(v) : json_null();
}

/* How far the job is, 0..1: 1 once it succeeded, else the largest share of a budget or of the
 * space used so far. */
static double progress_fraction(const job_info *j)
{
    if (strcmp(j->status, "succeeded") == 0)
        return 1.0;
    double trials = (double)j->trials_done;
    double of_evaluations = j->budget_evaluations > 0 ? trials / (double)j->budget_evaluations : 0;
    double of_space = j->space_size != 0 ? fmin(trials / (double)j->space_size, 1.0) : 0;
    double of_seconds = j->budget_seconds > 0 ? j->clock_seconds / j->budget_seconds : 0;
    return fmin(1.0, fmax(of_evaluations, fmax(of_space, of_seconds)));
}

/* "history": the mode asked for and, once the driver recorded it, what was seeded: the sources,
 * how many configurations were proposed first ("seeded") and how many of them were measured, and
 * how many trials of other devices formed the prior. */
static json_t *history_view(const job_info *j)
{
    const json_t *u = j->history_used;
    json_t *sources = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(u, "sources"), i, s)
    {
        json_array_append_new(sources, json_pack("{s:O*, s:O*, s:O*, s:O*}", "device_class",
                                                 json_object_get(s, "device_class"), "problem_key",
                                                 json_object_get(s, "problem_key"), "relation",
                                                 json_object_get(s, "relation"), "configurations",
                                                 json_object_get(s, "configurations")));
    }
    const json_t *model = json_object_get(u, "model");
    return json_pack("{s:s, s:b, s:I, s:I, s:I, s:o, s:O}", "mode",
                     j->history ? j->history : "none", "recorded", u != NULL, "seeded",
                     (json_int_t)json_integer_value(json_object_get(u, "seeded")),
                     "seeded_measured", (json_int_t)j->seeded_measured, "prior_trials",
                     (json_int_t)json_integer_value(json_object_get(u, "prior_trials")), "sources",
                     sources, "model", json_is_object(model) ? model : json_null());
}

/* "final_pick": null when the job re-measures nothing; else the count and rounds asked for, and
 * either the recorded pick (worker/final_pick.h: candidates with their re-measured times, median
 * and spread, the winner) with "state": "picked", or "measuring" / "pending" with how many
 * re-measurements are done. */
static json_t *final_pick_view(const job_info *j)
{
    if (j->final_remeasure <= 0)
        return json_null();
    json_t *v = j->final_pick ? json_deep_copy(j->final_pick) : json_object();
    int open = strcmp(j->status, "queued") == 0 || strcmp(j->status, "running") == 0;
    const char *state = j->final_pick                   ? "picked"
                        : open && j->final_measured > 0 ? "measuring"
                        : open                          ? "pending"
                                                        : "not_made";
    if (v &&
        (json_object_set_new(v, "state", json_string(state)) < 0 ||
         json_object_set_new(v, "count", json_integer(j->final_remeasure)) < 0 ||
         json_object_set_new(v, "rounds", json_integer(j->final_rounds)) < 0 ||
         (!j->final_pick &&
          json_object_set_new(v, "measured", json_integer((json_int_t)j->final_measured)) < 0))) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

/* "harness" of an external job (issue 27; null otherwise): "active" while a trial is leased or an
 * ask came within JOB_VIEW_HARNESS_ACTIVE_S (an ask that waits asks the database again every
 * quarter second, so a waiting ask keeps it fresh), "waiting" while the open job has none (its
 * harness went away or has not come yet: the job waits for it, it never fails for that), "ended"
 * once the job is over; the last ask and the trials leased now. */
#define JOB_VIEW_HARNESS_ACTIVE_S 5.0
static json_t *harness_view(const job_info *j)
{
    if (j->target.key.dev.kind != KT_DEVICE_EXTERNAL)
        return json_null();
    int open = strcmp(j->status, "queued") == 0 || strcmp(j->status, "running") == 0;
    int recent = j->since_ask_s >= 0 && j->since_ask_s < JOB_VIEW_HARNESS_ACTIVE_S;
    const char *state = !open ? "ended" : j->harness_leased > 0 || recent ? "active" : "waiting";
    return json_pack("{s:s, s:o, s:I, s:o}", "state", state, "last_ask_at",
                     string_or_null(j->last_ask_at), "leased", (json_int_t)j->harness_leased,
                     "seconds_since_ask",
                     j->since_ask_s >= 0 ? json_real(j->since_ask_s) : json_null());
}

double job_view_idle_share(const job_info *j)
{
    if (!isfinite(j->device_busy_ms) || !(j->device_busy_ms > 0) || !isfinite(j->elapsed_seconds) ||
        !(j->elapsed_seconds > 0))
        return NAN;
    double idle = 1.0 - j->device_busy_ms / 1000.0 / j->elapsed_seconds;
    return idle < 0 ? 0 : idle > 1 ? 1 : idle;
}

/* timings' "device_busy_seconds" and "device_idle_share" (sql/027, issue 32): null unless the job
 * measured on a real device. 0, or -1 when out of memory. */
static int device_timings(const job_info *j, json_t *out)
{
    json_t *timings = json_object_get(out, "timings");
    double idle = job_view_idle_share(j);
    int busy = isfinite(j->device_busy_ms) && j->device_busy_ms > 0;
    return json_object_set_new(timings, "device_busy_seconds",
                               busy ? json_real(j->device_busy_ms / 1000.0) : json_null()) < 0 ||
                   json_object_set_new(timings, "device_idle_share",
                                       isfinite(idle) ? json_real(idle) : json_null()) < 0
               ? -1
               : 0;
}

json_t *job_view_json(const job_info *j, kt_error *err)
{
    char self[64], trials[80], seed[24];
    /* "seed" as decimal text: fresh seeds take 63 bits, and a JSON number above 2^53 reaches a
     * JavaScript (or any double-reading) client rounded (issue 31). */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)j->seed);
    snprintf(self, sizeof self, "/v1/jobs/%lld", j->id);
    snprintf(trials, sizeof trials, "/v1/jobs/%lld/trials", j->id);
    /* "value": the best's value of the job's objective (its time, or its metric's value). */
    int by_time = kt_objective_is_time(&j->objective);
    json_t *best =
        j->has_best
            ? json_pack("{s:o,s:o,s:I,s:o}", "time_ms", pg_double(j->best_time_ms), "config",
                        json_or_null(j->best_config), "trial_id", (json_int_t)j->best_trial_id,
                        "value", pg_double(by_time ? j->best_time_ms : j->best_value))
            : json_null();
    json_t *out = json_pack(
        "{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:s,s:o,s:s,"
        "s:{s:o,s:o},s:{s:I,s:I,s:o,s:o},s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o},s:{s:s,s:s}}",
        "id", (json_int_t)j->id, "status", j->status, "kernel", j->target.key.kernel, "device",
        j->target.key.device, "device_class", j->target.key.device_class, "kernel_hash",
        j->target.key.kernel_hash, "toolchain",
        j->target.key.toolchain ? j->target.key.toolchain : "", "problem",
        json_or_null(j->target.problem), "strategy", j->strategy, "strategy_options",
        json_or_null(j->options), "seed", seed, "budget", "evaluations",
        j->budget_evaluations > 0 ? json_integer((json_int_t)j->budget_evaluations) : json_null(),
        "seconds", j->budget_seconds > 0 ? pg_double(j->budget_seconds) : json_null(), "progress",
        "trials", (json_int_t)j->trials_done, "space_size", (json_int_t)j->space_size,
        "clock_seconds", pg_double(j->clock_seconds), "fraction", pg_double(progress_fraction(j)),
        "best", best, "stop_reason", string_or_null(j->stop_reason), "error",
        json_or_null(j->error), "timings", "created_at", string_or_null(j->created_at),
        "started_at", string_or_null(j->started_at), "finished_at", string_or_null(j->finished_at),
        "elapsed_seconds",
        /* PostgreSQL's EXTRACT gives numeric, always written with decimals: a real. */
        isfinite(j->elapsed_seconds) ? json_real(j->elapsed_seconds) : json_null(), "links", "self",
        self, "trials", trials);
    /* "parallel" (sql/009): configurations measured at once; null for older jobs and imports. */
    if (out && json_object_set_new(out, "parallel",
                                   j->parallel > 0 ? json_integer(j->parallel) : json_null()) < 0) {
        json_decref(out);
        out = NULL;
    }
    json_t *pick = out ? final_pick_view(j) : NULL;
    if (out && (!pick || json_object_set_new(out, "final_pick", pick) < 0)) {
        json_decref(out);
        out = NULL;
    }
    /* "objective" (sql/022): what the job optimises, {"metric", "goal"}; time_ms/min by default. */
    if (out &&
        (json_object_set_new(out, "objective", kt_objective_json(&j->objective)) < 0 ||
         json_object_set_new(out, "history", history_view(j)) < 0 ||
         json_object_set_new(out, "harness", harness_view(j)) < 0 || device_timings(j, out) < 0)) {
        json_decref(out);
        out = NULL;
    }
    if (!out)
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory building job %lld", j->id);
    return out;
}

json_t *job_view_page_json(const job_page *p, kt_error *err)
{
    json_t *jobs = json_array(), *out = NULL;
    if (!jobs)
        goto out;
    for (int i = 0; i < p->n; i++) {
        json_t *one = job_view_json(&p->jobs[i], err);
        if (!one || json_array_append_new(jobs, one) < 0)
            goto out;
    }
    out = json_pack("{s:O,s:o}", "jobs", jobs, "next_before",
                    p->next_before > 0 ? json_integer((json_int_t)p->next_before) : json_null());
out:
    if (!out)
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory building a page of jobs");
    json_decref(jobs);
    return out;
}

json_t *job_view_get(PGconn *c, long long id, kt_error *err)
{
    job_info j;
    json_t *out = NULL;
    if (job_store_get(c, id, &j, err) == 0)
        out = job_view_json(&j, err);
    job_info_release(&j);
    return out;
}
