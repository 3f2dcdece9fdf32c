/* training/model_cache against a real embedded PostgreSQL and a real predictor, and the trainer's
 * catalog helpers (training/trainer_internal.h): a ready model is loaded from its stored bytes
 * (also by a fresh cache, as after a restart), its prediction is cached per (model, problem, k) and
 * replaced when a newer model is ready, a target of another kernel hash never gets it (the lookup
 * is by the target's own key), and the trainer refuses a model whose kernel changed. */
#include "pg_test_util.h"
#include "replay_test_util.h"

#include "core/strbuf.h"
#include "model/predictor.h"
#include "store/model_store.h"
#include "training/model_cache.h"
#include "training/trainer_internal.h"

static const runner_identity ME = {"hostA:1:100", "hostA", 1};

/* A training set of the pnpoly dataset's one problem: its first 12 valid configurations. */
static training_set *conv_set(const target *t)
{
    kt_error err;
    json_t *names = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(t->problem, key, v) json_array_append_new(names, json_string(key));
    training_set *ts = training_set_new_from_space(t->sp, names, &err);
    json_decref(names);
    assert_non_null(ts);
    int p = training_set_add_problem(ts, t->problem, &err);
    assert_int_equal(p, 0);
    for (config_id id = 0; id < 12; id++) {
        json_t *config = space_config_json(t->sp, id);
        assert_int_equal(training_set_add_trial(ts, p, config, 10.0 + (double)id), 1);
        json_decref(config);
    }
    return ts;
}

/* Trains `kind` on t's set and stores it as the key's newest ready model; returns its id. */
static long long store_ready_model(PGconn *c, const target *t, const char *kind)
{
    kt_error err;
    training_set *ts = conv_set(t);
    predictor *p = predictor_train(kind, ts, NULL, 1, &err);
    assert_non_null(p);
    strbuf bytes;
    strbuf_init(&bytes, MODEL_MAX_BYTES);
    assert_int_equal(predictor_save(p, &bytes, &err), 0);
    model_key k = {"predictor",     kind, t->key.kernel, t->key.device_class, t->key.kernel_hash,
                   t->key.toolchain};
    long long id = 0;
    model_claim m;
    assert_int_equal(model_store_create(c, &k, NULL, "requested", &id, &err), 0);
    assert_int_equal(model_store_claim(c, &ME, 30, &m, &err), 1);
    assert_int_equal(m.id, id);
    json_t *metrics = json_object();
    assert_int_equal(model_store_finish(c, &ME, id, (const unsigned char *)strbuf_str(&bytes),
                                        bytes.len, PREDICTOR_FORMAT_VERSION, metrics, NULL, NULL,
                                        &err),
                     0);
    json_decref(metrics);
    model_claim_release(&m);
    strbuf_release(&bytes);
    predictor_free(p);
    training_set_free(ts);
    return id;
}

static void predictions_come_from_the_stored_model_and_are_cached(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    catalog *cat = open_catalog(DATASETS, 0);
    target t;
    resolve_ok(cat, "pnpoly", PNPOLY, &t);
    model_cache *mc = model_cache_new(cat);
    model_cache_stats st;
    json_t *out = NULL;
    /* No ready model: 0, and nothing loaded. */
    assert_int_equal(model_cache_predict(mc, f->c, &t, 3, &out, &err), 0);
    assert_null(out);

    long long v1 = store_ready_model(f->c, &t, "nearest");
    assert_int_equal(model_cache_predict(mc, f->c, &t, 3, &out, &err), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "model"), "id")), v1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(out, "model"), "algorithm")), "nearest");
    json_t *candidates = json_object_get(out, "candidates");
    assert_int_equal(json_array_size(candidates), 3);
    /* The fastest measured configuration first, valid in the space. */
    json_t *best = space_config_json(t.sp, 0);
    assert_true(json_equal(json_object_get(out, "config"), best));
    config_id id;
    assert_int_equal(space_config_from_json(t.sp, json_object_get(out, "config"), &id, &err), 0);
    json_decref(best);
    json_decref(out);
    /* Asked again: answered from the cache, the model not run nor loaded again. */
    assert_int_equal(model_cache_predict(mc, f->c, &t, 3, &out, &err), 1);
    json_decref(out);
    model_cache_stats_get(mc, &st);
    assert_int_equal(st.loads, 1);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.hits, 1);
    /* A key-only target (no space): the cached answer still comes; an uncached k needs it. */
    target key_only = t;
    key_only.sp = NULL;
    assert_int_equal(model_cache_predict(mc, f->c, &key_only, 3, &out, &err), 1);
    assert_non_null(json_object_get(out, "config"));
    json_decref(out);
    out = NULL;
    assert_int_equal(model_cache_predict(mc, f->c, &key_only, 2, &out, &err),
                     MODEL_CACHE_NEEDS_SPACE);
    assert_null(out);
    model_cache_stats_get(mc, &st);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 1);

    /* Another kernel hash (the kernel changed since the model was trained): never this model. */
    target changed = t;
    changed.key.kernel_hash = "ffffffffffffffff";
    assert_int_equal(model_cache_predict(mc, f->c, &changed, 3, &out, &err), 0);
    assert_null(out);

    /* A newer ready model: the next answer is its own. */
    long long v2 = store_ready_model(f->c, &t, "common");
    assert_int_equal(model_cache_predict(mc, f->c, &t, 3, &out, &err), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "model"), "id")), v2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "model"), "version")),
                     2);
    json_decref(out);
    assert_int_equal(model_cache_predict(mc, f->c, &t, 0, &out, &err), -1);
    assert_int_equal(err.code, KT_ERR_OUT_OF_RANGE);
    model_cache_free(mc);

    /* A fresh cache (a restarted ktuned) loads the stored bytes again. */
    mc = model_cache_new(cat);
    assert_int_equal(model_cache_predict(mc, f->c, &t, 1, &out, &err), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "model"), "id")), v2);
    json_decref(out);
    model_cache_stats_get(mc, &st);
    assert_int_equal(st.loads, 1);
    /* Bytes that do not load are an error, not a crash. */
    sql(f->c, "UPDATE models SET model = '\\x00010203' WHERE status = 'ready'");
    model_cache_free(mc);
    mc = model_cache_new(cat);
    assert_int_equal(model_cache_predict(mc, f->c, &t, 1, &out, &err), -1);
    assert_non_null(strstr(err.message, "loading model"));
    model_cache_free(mc);
    target_release(&t);
    catalog_free(cat);
    sql(f->c, "DELETE FROM models");
}

static void trainer_refuses_a_changed_kernel_and_an_unserved_class(void **state)
{
    (void)state;
    kt_error err;
    catalog *cat = open_catalog(DATASETS, 0);
    target t;
    resolve_ok(cat, "pnpoly", PNPOLY, &t);
    model_claim m = {.id = 1,
                     .kernel = "pnpoly",
                     .device_class = (char *)t.key.device_class,
                     .kernel_hash = (char *)t.key.kernel_hash,
                     .toolchain = (char *)t.key.toolchain};
    trainer_target tt;
    const char *reason = NULL;
    assert_int_equal(trainer_open_target(cat, &m, &tt, &reason, &err), 0);
    assert_string_equal(tt.device, PNPOLY);
    assert_non_null(tt.def.sp);
    /* The held-out spaces come from the catalog; a problem it refuses is skipped, not an error. */
    kt_error_clear(&err);
    assert_non_null(trainer_space_for(&tt, t.problem, &err));
    json_t *bad = json_pack("{s:i}", "no_such_argument", 3);
    assert_null(trainer_space_for(&tt, bad, &err));
    assert_int_equal(err.code, KT_OK);
    json_decref(bad);
    trainer_target_release(&tt);

    m.kernel_hash = "0000000000000000";
    assert_int_equal(trainer_open_target(cat, &m, &tt, &reason, &err), -1);
    assert_string_equal(reason, "kernel_changed");
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    m.kernel_hash = (char *)t.key.kernel_hash;
    m.device_class = "cuda:NoSuchGPU:sm_90";
    assert_int_equal(trainer_open_target(cat, &m, &tt, &reason, &err), -1);
    assert_string_equal(reason, "target_unavailable");
    m.device_class = (char *)t.key.device_class;
    m.kernel = "convolution"; /* not offered on the pnpoly device */
    assert_int_equal(trainer_open_target(cat, &m, &tt, &reason, &err), -1);
    assert_string_equal(reason, "target_unavailable");
    target_release(&t);
    catalog_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(predictions_come_from_the_stored_model_and_are_cached),
        cmocka_unit_test(trainer_refuses_a_changed_kernel_and_an_unserved_class),
    };
    return cmocka_run_group_tests(tests, pg_group_setup, pg_group_teardown);
}
