/* Unit tests of api/job_view: a job_info row becomes the documented job JSON, with its links and
 * the number types the replies have always had. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "api/job_view.h"

static job_info queued_job(void)
{
    job_info j;
    memset(&j, 0, sizeof j);
    j.id = 42;
    j.status = "queued";
    j.target.key =
        (target_key){.kernel = "convolution",
                     .device = "replay:convolution_milo-A4000",
                     .device_class = "replay:convolution_milo-A4000",
                     .kernel_hash = "abc",
                     .problem_key = "{}",
                     .toolchain = "recorded",
                     .dev = {.kind = KT_DEVICE_REPLAY, .name = "convolution_milo-A4000"}};
    j.strategy = "random";
    j.target.problem = json_object();
    j.options = json_object();
    j.seed = 7;
    j.budget_seconds = 30;
    j.space_size = 4362;
    j.clock_seconds = 12.5;
    j.trials_done = 5;
    j.created_at = "2024-01-01T00:00:00+00:00";
    j.elapsed_seconds = NAN;
    j.best_time_ms = NAN;
    return j;
}

static void job_document_has_links_and_null_best(void **state)
{
    (void)state;
    job_info j = queued_job();
    kt_error err;
    kt_error_clear(&err);
    json_t *doc = job_view_json(&j, &err);
    assert_non_null(doc);
    json_t *links = json_object_get(doc, "links");
    assert_string_equal(json_string_value(json_object_get(links, "self")), "/v1/jobs/42");
    assert_string_equal(json_string_value(json_object_get(links, "trials")), "/v1/jobs/42/trials");
    assert_true(json_is_null(json_object_get(doc, "best")));
    assert_true(json_is_null(json_object_get(doc, "stop_reason")));
    /* The seed as decimal text (issue 31), also above 2^53 where a double would round it. */
    assert_string_equal(json_string_value(json_object_get(doc, "seed")), "7");
    json_decref(doc);
    j.seed = (1ULL << 53) + 1;
    doc = job_view_json(&j, &err);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "seed")), "9007199254740993");
    /* The whole key is shown, the toolchain included. */
    assert_string_equal(json_string_value(json_object_get(doc, "kernel_hash")), "abc");
    assert_string_equal(json_string_value(json_object_get(doc, "toolchain")), "recorded");
    json_t *budget = json_object_get(doc, "budget");
    assert_true(json_is_null(json_object_get(budget, "evaluations")));
    /* 30.0 was written 30 by PostgreSQL: an integer; 12.5 a real. */
    assert_true(json_is_integer(json_object_get(budget, "seconds")));
    json_t *progress = json_object_get(doc, "progress");
    assert_true(json_is_real(json_object_get(progress, "clock_seconds")));
    assert_true(json_real_value(json_object_get(progress, "fraction")) == 12.5 / 30);
    json_t *timings = json_object_get(doc, "timings");
    assert_true(json_is_null(json_object_get(timings, "started_at")));
    assert_true(json_is_null(json_object_get(timings, "elapsed_seconds")));
    /* "harness" is an external job's only: the key's parsed device says which (the name is not
     * parsed again). */
    assert_true(json_is_null(json_object_get(doc, "harness")));
    json_decref(doc);
    j.target.key.dev = (kt_device){.kind = KT_DEVICE_EXTERNAL};
    j.since_ask_s = -1; /* no ask yet */
    doc = job_view_json(&j, &err);
    assert_non_null(doc);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(doc, "harness"), "state")), "waiting");
    json_decref(doc);
    json_decref(j.target.problem);
    json_decref(j.options);
}

static void succeeded_job_is_whole_and_shows_best(void **state)
{
    (void)state;
    job_info j = queued_job();
    j.status = "succeeded";
    j.has_best = 1;
    j.best_time_ms = 3.25;
    j.best_trial_id = 9;
    j.best_config = json_pack("{s:i}", "block_size_x", 32);
    j.elapsed_seconds = 2.0;
    kt_error err;
    kt_error_clear(&err);
    json_t *doc = job_view_json(&j, &err);
    assert_non_null(doc);
    json_t *fraction = json_object_get(json_object_get(doc, "progress"), "fraction");
    assert_true(json_is_integer(fraction) && json_integer_value(fraction) == 1);
    json_t *best = json_object_get(doc, "best");
    assert_int_equal(json_integer_value(json_object_get(best, "trial_id")), 9);
    assert_true(json_real_value(json_object_get(best, "time_ms")) == 3.25);
    assert_true(json_real_value(json_object_get(best, "value")) == 3.25); /* the time's */
    json_t *objective = json_object_get(doc, "objective");
    assert_string_equal(json_string_value(json_object_get(objective, "metric")), "time_ms");
    assert_string_equal(json_string_value(json_object_get(objective, "goal")), "min");
    assert_true(json_is_real(json_object_get(json_object_get(doc, "timings"), "elapsed_seconds")));
    /* no device busy time recorded (a replay job): no idle share */
    assert_true(
        json_is_null(json_object_get(json_object_get(doc, "timings"), "device_idle_share")));
    assert_true(isnan(job_view_idle_share(&j)));
    json_decref(doc);
    /* issue 32: 0.5 s of its 2 s measuring: idle 75% of the time; more busy than wall time (two
     * hosts measuring) is idle 0, not negative */
    j.device_busy_ms = 500;
    doc = job_view_json(&j, &err);
    assert_non_null(doc);
    json_t *timings = json_object_get(doc, "timings");
    assert_true(json_real_value(json_object_get(timings, "device_busy_seconds")) == 0.5);
    assert_true(json_real_value(json_object_get(timings, "device_idle_share")) == 0.75);
    json_decref(doc);
    j.device_busy_ms = 2500;
    assert_true(job_view_idle_share(&j) == 0.0);
    j.elapsed_seconds = NAN; /* not started */
    assert_true(isnan(job_view_idle_share(&j)));
    j.elapsed_seconds = 2.0;
    j.device_busy_ms = NAN;
    /* A metric job (issue 27): its objective, and the best's value is the metric's. */
    kt_objective_set(&j.objective, "gflops", "max");
    j.best_value = 12.5;
    doc = job_view_json(&j, &err);
    assert_non_null(doc);
    objective = json_object_get(doc, "objective");
    assert_string_equal(json_string_value(json_object_get(objective, "metric")), "gflops");
    assert_string_equal(json_string_value(json_object_get(objective, "goal")), "max");
    best = json_object_get(doc, "best");
    assert_true(json_real_value(json_object_get(best, "value")) == 12.5);
    assert_true(json_real_value(json_object_get(best, "time_ms")) == 3.25);
    json_decref(doc);
    json_decref(j.target.problem);
    json_decref(j.options);
    json_decref(j.best_config);
}

static void page_says_where_the_next_begins(void **state)
{
    (void)state;
    job_info j = queued_job();
    job_page p = {.jobs = &j, .n = 1, .next_before = 0};
    kt_error err;
    kt_error_clear(&err);
    json_t *doc = job_view_page_json(&p, &err);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "jobs")), 1);
    assert_true(json_is_null(json_object_get(doc, "next_before")));
    json_decref(doc);
    p.next_before = 42;
    doc = job_view_page_json(&p, &err);
    assert_int_equal(json_integer_value(json_object_get(doc, "next_before")), 42);
    json_decref(doc);
    json_decref(j.target.problem);
    json_decref(j.options);
}

static void history_shows_what_was_seeded(void **state)
{
    (void)state;
    job_info j = queued_job();
    kt_error err;
    kt_error_clear(&err);
    json_t *doc = job_view_json(&j, &err); /* history NULL: an import or an old job */
    json_t *h = json_object_get(doc, "history");
    assert_string_equal(json_string_value(json_object_get(h, "mode")), "none");
    assert_true(json_is_false(json_object_get(h, "recorded")));
    assert_int_equal(json_integer_value(json_object_get(h, "seeded")), 0);
    json_decref(doc);
    j.history = "auto";
    j.history_used = json_loads(
        "{\"seeded\":2,\"prior_trials\":1,"
        "\"sources\":[{\"device_class\":\"replay:x\",\"problem_key\":\"{}\",\"relation\":0,"
        "\"distance\":0,\"configurations\":1},{\"device_class\":\"replay:y\",\"problem_key\":"
        "\"{}\",\"relation\":0,\"distance\":0,\"configurations\":1}]}",
        0, NULL);
    j.seeded_measured = 1;
    doc = job_view_json(&j, &err);
    h = json_object_get(doc, "history");
    assert_string_equal(json_string_value(json_object_get(h, "mode")), "auto");
    assert_true(json_is_true(json_object_get(h, "recorded")));
    assert_int_equal(json_integer_value(json_object_get(h, "seeded")), 2);
    assert_int_equal(json_integer_value(json_object_get(h, "seeded_measured")), 1);
    assert_int_equal(json_integer_value(json_object_get(h, "prior_trials")), 1);
    json_t *src = json_array_get(json_object_get(h, "sources"), 1);
    assert_string_equal(json_string_value(json_object_get(src, "device_class")), "replay:y");
    assert_null(json_object_get(src, "distance")); /* the view lists what the schema documents */
    json_decref(doc);
    json_decref(j.history_used);
    json_decref(j.target.problem);
    json_decref(j.options);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(job_document_has_links_and_null_best),
        cmocka_unit_test(succeeded_job_is_whole_and_shows_best),
        cmocka_unit_test(page_says_where_the_next_begins),
        cmocka_unit_test(history_shows_what_was_seeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
