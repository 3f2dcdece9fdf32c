/* Unit tests of the accel backend (measure/accel_backend.c): opening by device name, every sampled
 * configuration measured as ok (time_ms = EDP over the minimum's, >= 1, the model's statistics and
 * meta-statistics in extras) or invalid with the reason, the same answer twice, backend_quick_check
 * agreeing with the status, and targets that are not the backend's refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_model.h"
#include "catalog/catalog.h"
#include "core/log.h"
#include "measure/backend.h"

#define DEVICES_FILE KT_SOURCE_DIR "/accel/devices.json"
#define DATASETS     KT_SOURCE_DIR "/datasets"
#define MINDMAP      "accel:mindmap"
#define SMALL        "accel:mindmap-small"

static catalog *open_ok(void)
{
    const char *dirs[] = {DATASETS};
    catalog_options opt = {
        .dataset_dirs = dirs, .n_dataset_dirs = 1, .accel_devices_path = DEVICES_FILE};
    kt_error err;
    catalog *c = catalog_new(&opt, &err);
    if (!c)
        fail_msg("catalog: %s", err.message);
    return c;
}

static void resolve_preset(const catalog *c, const char *kernel, const char *device,
                           const char *preset, target *t)
{
    kt_error err;
    json_t *p = json_pack("{s:s}", "preset", preset);
    if (catalog_resolve(c, kernel, device, p, t, &err) != 0)
        fail_msg("resolve %s %s on %s: %s", kernel, preset, device, err.message);
    json_decref(p);
}

static double number(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* Measures n sampled configurations of t and checks every result; counts ok and invalid. */
static void measure_sampled(const catalog *c, backend *b, const target *t, int n, uint64_t seed,
                            int *ok, int *invalid, double *best)
{
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    *ok = *invalid = 0;
    *best = INFINITY;
    for (int i = 0; i < n; i++) {
        config_id id = space_sample(t->sp, &rng);
        trial_result r, again;
        kt_error err;
        assert_int_equal(backend_measure(b, t, id, &r, &err), 0);
        assert_int_equal(r.compile_ms, 0);
        assert_true(r.measure_ms >= 0 && r.measure_ms < 1000);
        assert_int_equal(r.noise_cv, 0);
        assert_non_null(r.extras);
        int check = backend_quick_check(c, t, id);
        if (r.status == TRIAL_INVALID) {
            (*invalid)++;
            assert_int_equal(check, 0);
            const char *why = json_string_value(json_object_get(r.extras, "reason"));
            assert_non_null(why);
            assert_true(strlen(why) > 0);
            trial_result_release(&r);
            continue;
        }
        assert_int_equal(r.status, TRIAL_OK);
        assert_int_equal(check, 1);
        (*ok)++;
        assert_true(r.time_ms >= 1.0);
        assert_int_equal(r.repeats, 1);
        if (r.time_ms < *best)
            *best = r.time_ms;
        /* The objective is the model's EDP over the minimum's, and the meta's weighted sum. */
        assert_true(fabs(number(r.extras, "edp_over_min") - r.time_ms) <= 1e-9 * r.time_ms);
        assert_true(number(r.extras, "edp") > 0);
        json_t *meta = json_object_get(r.extras, "meta");
        json_t *w = json_object_get(r.extras, "meta_objective");
        json_t *names = json_object_get(r.extras, "meta_names");
        assert_int_equal(json_array_size(meta), json_array_size(w));
        assert_int_equal(json_array_size(meta), json_array_size(names));
        assert_true(json_array_size(meta) >= 12);
        double sum = 0;
        for (size_t j = 0; j < json_array_size(meta); j++)
            sum += json_number_value(json_array_get(w, j)) *
                   json_number_value(json_array_get(meta, j));
        assert_true(fabs(sum - log(r.time_ms)) < 1e-6 * (1 + fabs(sum)));
        /* ... the same as catalog_accel_meta's (what surrogate training reads). */
        double cm[CATALOG_ACCEL_META_MAX];
        int cn = 0;
        assert_int_equal(catalog_accel_meta(c, t, id, cm, CATALOG_ACCEL_META_MAX, NULL, &cn, &err),
                         1);
        assert_int_equal((size_t)cn, json_array_size(meta));
        for (int j = 0; j < cn; j++)
            assert_true(fabs(cm[j] - json_number_value(json_array_get(meta, j))) < 1e-12);
        /* Deterministic: the same configuration costs the same. */
        assert_int_equal(backend_measure(b, t, id, &again, &err), 0);
        assert_int_equal(again.status, TRIAL_OK);
        assert_true(again.time_ms == r.time_ms);
        trial_result_release(&again);
        trial_result_release(&r);
    }
}

static void accel_measures_sampled_mappings(void **state)
{
    (void)state;
    catalog *c = open_ok();
    kt_error err;
    backend *b = backend_open(c, MINDMAP, &err);
    backend *bs = backend_open(c, SMALL, &err);
    assert_non_null(b);
    assert_non_null(bs);
    target t, ts, tm;
    resolve_preset(c, "cnn_layer", MINDMAP, "resnet_conv3", &t);
    resolve_preset(c, "cnn_layer", SMALL, "resnet_conv3", &ts);
    resolve_preset(c, "mttkrp", MINDMAP, "mttkrp_0", &tm);
    int ok, invalid, ok_s, invalid_s, ok_m, invalid_m;
    double best, best_s, best_m;
    measure_sampled(c, b, &t, 300, 3, &ok, &invalid, &best);
    measure_sampled(c, bs, &ts, 300, 3, &ok_s, &invalid_s, &best_s);
    measure_sampled(c, b, &tm, 200, 4, &ok_m, &invalid_m, &best_m);
    print_message("resnet_conv3: mindmap %d ok %d invalid (best %.3f), mindmap-small %d ok %d "
                  "invalid (best %.3f); mttkrp_0 %d ok %d invalid (best %.3f)\n",
                  ok, invalid, best, ok_s, invalid_s, best_s, ok_m, invalid_m, best_m);
    assert_true(ok > 0 && ok_s > 0 && ok_m > 0);
    assert_true(invalid + invalid_s > 0);

    /* A target of another device, an id outside the space: the backend's own failure. */
    trial_result r;
    assert_int_equal(backend_measure(b, &ts, 0, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    assert_int_equal(backend_measure(b, &t, space_count(t.sp), &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    assert_int_equal(backend_quick_check(c, &t, space_count(t.sp)), -1);
    target_release(&t);
    target_release(&ts);
    target_release(&tm);
    backend_close(b);
    backend_close(bs);
    catalog_free(c);
}

static void open_errors_and_other_devices(void **state)
{
    (void)state;
    catalog *c = open_ok();
    kt_error err;
    assert_null(backend_open(c, "accel:nope", &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.hint, MINDMAP));
    /* A replay target has no cheap check. */
    target r;
    assert_int_equal(catalog_resolve(c, "pnpoly", "replay:pnpoly_kt-RTX_3090", NULL, &r, &err), 0);
    assert_int_equal(backend_quick_check(c, &r, 0), -1);
    assert_int_equal(backend_quick_check(c, NULL, 0), -1);
    target_release(&r);
    catalog_free(c);
}

int main(void)
{
    kt_log_init(KT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accel_measures_sampled_mappings),
        cmocka_unit_test(open_errors_and_other_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
