/* Devices known from the fleet (catalog/catalog_fleet.h): a catalog with kernel folders and no
 * device of its own (an API process, --role api) lists, validates and resolves the devices workers
 * registered; the pick for a request is the live record most hosts serve; a stored key reopens on
 * the record of its own class and toolchain; a record that changed is added beside the old one so
 * that targets already resolved stay valid; bad records are skipped; the fetch callback is called
 * when the copy is old and, rate-limited, on a miss; readers and an updater run concurrently. */
#include "kspec_test_util.h"

#include <pthread.h>

#include "catalog/catalog.h"
#include "catalog/catalog_fleet.h"
#include "core/log.h"
#include "space/space.h"

/* A cpu record of class cls with the given L1 size (vadd's restriction B*4 <= l1d_bytes). */
static json_t *cpu_row(const char *cls, long long l1d, const char *hosts, int live)
{
    json_error_t e;
    json_t *row = json_pack_ex(
        &e, 0, "{s:{s:s, s:s, s:i, s:s, s:s, s:{s:i, s:I, s:i, s:i, s:i}, s:{s:s}}, s:o, s:b}",
        "record", "name", "cpu", "kind", "cpu", "ordinal", 0, "class", cls, "toolchain",
        "gcc 12.2.0", "limits", "cores", 4, "l1d_bytes", (json_int_t)l1d, "l2_bytes", 1048576,
        "l3_bytes", 8388608, "vector_bits", 256, "description", "model", cls, "hosts",
        json_loads(hosts, 0, NULL), "live", live);
    if (!row)
        fail_msg("json_pack: %s", e.text);
    return row;
}

static catalog *api_catalog(fixture *f)
{
    const char *kdirs[] = {f->kernels};
    catalog_options opt = {.n_dataset_dirs = 0};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = "/nonexistent/ktune-runner",
                                 .cache_dir = f->cache,
                                 .cpu_core = -1};
    kt_error err;
    catalog *c = catalog_new_real(&opt, &real, NULL, 0, &err);
    if (!c)
        fail_msg("catalog_new_real: %s", err.message);
    return c;
}

static void fleet_devices_resolve_and_reopen(void **state)
{
    catalog *c = api_catalog(*state);
    kt_error err;
    target t, a, b;
    /* No fleet yet: the device is unknown. */
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);

    json_t *rows = json_array();
    json_array_append_new(rows, cpu_row("cpu:A", 256, "[\"h1\", \"h2\"]", 1));
    json_array_append_new(rows, cpu_row("cpu:B", 65536, "[\"h3\"]", 1));
    /* Skipped: a missing limit, a cpu kind under another name, a replay record (resolved from
     * this process's own datasets), a record served by no live host. */
    json_t *bad = cpu_row("cpu:C", 256, "[\"h4\"]", 1);
    json_object_del(json_object_get(json_object_get(bad, "record"), "limits"), "l1d_bytes");
    json_array_append_new(rows, bad);
    json_t *renamed = cpu_row("cpu:D", 256, "[\"h5\"]", 1);
    json_object_set_new(json_object_get(renamed, "record"), "name", json_string("cuda:3"));
    json_array_append_new(rows, renamed);
    json_array_append_new(rows, json_pack("{s:{s:s, s:s, s:s, s:s}, s:[s], s:b}", "record", "name",
                                          "replay:x", "kind", "replay", "class", "replay:x",
                                          "toolchain", "recorded", "hosts", "h1", "live", 1));
    json_array_append_new(rows, cpu_row("cpu:E", 256, "[]", 0));
    assert_int_equal(catalog_fleet_update(c, rows, &err), 0);

    /* A request picks the live record most hosts serve; its limits build the space. */
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &a, &err), 0);
    assert_string_equal(a.key.device_class, "cpu:A");
    assert_string_equal(a.key.toolchain, "gcc 12.2.0");
    assert_int_equal(space_count(a.sp), 11);
    /* A stored key of the other class reopens on its own record. */
    target_key stored = a.key;
    stored.device_class = "cpu:B";
    assert_int_equal(catalog_reopen(c, &stored, a.problem, &b, &err), 0);
    assert_string_equal(b.key.device_class, "cpu:B");
    assert_int_equal(space_count(b.sp), 13);
    target_release(&b);
    /* A class no record has is refused as before (the job fails as target_unavailable). */
    stored.device_class = "cpu:Z";
    assert_int_equal(catalog_reopen(c, &stored, a.problem, &b, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_int_equal(catalog_resolve(c, "vadd", "cuda:3", NULL, &b, &err), -1);

    /* The listing: this process has no device, the fleet's live ones follow. */
    json_t *devs = catalog_fleet_devices_json(c);
    assert_int_equal(json_array_size(devs), 1);
    json_t *d0 = json_array_get(devs, 0);
    assert_string_equal(json_string_value(json_object_get(d0, "class")), "cpu:A");
    assert_true(json_is_true(json_object_get(d0, "fleet")));
    assert_int_equal(json_array_size(json_object_get(d0, "hosts")), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(d0, "kernels"), 0)),
                        "vadd");
    json_decref(devs);
    json_t *kernels = catalog_kernels_json(c);
    json_t *kd = json_object_get(json_array_get(kernels, 0), "devices");
    assert_int_equal(json_array_size(kd), 1);
    assert_true(json_is_null(json_object_get(json_array_get(kd, 0), "configurations")));
    json_decref(kernels);
    char hint[512];
    catalog_device_hint(c, hint, sizeof hint);
    assert_string_equal(hint, "devices: cpu");

    /* Class A's hosts change their L1 (a new record); B is served by more hosts now. Target a,
     * resolved on the old record, stays valid (its strings are kept). */
    json_decref(rows);
    rows = json_array();
    json_array_append_new(rows, cpu_row("cpu:A", 512, "[\"h1\"]", 1));
    json_array_append_new(rows, cpu_row("cpu:B", 65536, "[\"h3\", \"h6\"]", 1));
    assert_int_equal(catalog_fleet_update(c, rows, &err), 0);
    assert_string_equal(a.key.device_class, "cpu:A");
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &b, &err), 0);
    assert_string_equal(b.key.device_class, "cpu:B");
    target_release(&b);
    /* The old A record is gone from the table: a stored key of it reopens on the new A record
     * only when the limits do not matter to the key (they do not: same class and toolchain). */
    stored = a.key;
    assert_int_equal(catalog_reopen(c, &stored, a.problem, &b, &err), 0);
    assert_string_equal(b.key.device_class, "cpu:A");
    target_release(&b);
    target_release(&a);
    /* Every record gone: nothing to resolve on. */
    json_decref(rows);
    rows = json_array();
    assert_int_equal(catalog_fleet_update(c, rows, &err), 0);
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &a, &err), -1);
    json_decref(rows);
    catalog_free(c);
}

typedef struct fetch_state {
    int calls;
    int fail;
} fetch_state;

static int fetch(void *ctx, json_t **rows, kt_error *err)
{
    fetch_state *s = ctx;
    s->calls++;
    if (s->fail)
        return kt_error_set(err, KT_ERR_DATABASE, "database down");
    *rows = json_array();
    json_array_append_new(*rows, cpu_row("cpu:A", 256, "[\"h1\"]", 1));
    return 0;
}

static void fleet_is_fetched_when_old_and_on_a_miss(void **state)
{
    catalog *c = api_catalog(*state);
    fetch_state s = {0, 1};
    kt_error err;
    target t;
    catalog_fleet_set_source(c, fetch, &s, 3600);
    /* The first use fetches; a failing fetch keeps the old (empty) copy. */
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), -1);
    assert_int_equal(s.calls, 1); /* the miss's forced retry is rate-limited */
    s.fail = 0;
    usleep((CATALOG_FLEET_MISS_MS + 50) * 1000);
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    assert_int_equal(s.calls, 2);
    target_release(&t);
    /* Fresh copy, known device: no fetch. Misses fetch at most every CATALOG_FLEET_MISS_MS. */
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    target_release(&t);
    assert_int_equal(s.calls, 2);
    for (int i = 0; i < 20; i++)
        assert_int_equal(catalog_resolve(c, "vadd", "cuda:0", NULL, &t, &err), -1);
    assert_true(s.calls <= 3);
    catalog_free(c);
}

typedef struct race {
    catalog *c;
    int stop;
    int resolved;
} race;

static void *resolver(void *arg)
{
    race *r = arg;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        kt_error err;
        target t;
        if (catalog_resolve_key(r->c, "vadd", "cpu", NULL, &t, &err) == 0) {
            if (strncmp(t.key.device_class, "cpu:", 4) != 0)
                fail_msg("bad class %s", t.key.device_class);
            target_release(&t);
            __atomic_add_fetch(&r->resolved, 1, __ATOMIC_RELAXED);
        }
        json_decref(catalog_fleet_devices_json(r->c));
    }
    return NULL;
}

static void fleet_updates_race_with_readers(void **state)
{
    race r = {.c = api_catalog(*state)};
    pthread_t th[3];
    kt_error err;
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, resolver, &r);
    /* Until the readers resolved a good number of times while records kept changing. */
    for (int i = 0; i < 200000 && (i < 200 || __atomic_load_n(&r.resolved, __ATOMIC_RELAXED) < 200);
         i++) {
        char cls[32];
        snprintf(cls, sizeof cls, "cpu:%d", i % 40);
        json_t *rows = json_array();
        json_array_append_new(rows, cpu_row(cls, 256 + (i % 3) * 256, "[\"h1\"]", 1));
        assert_int_equal(catalog_fleet_update(r.c, rows, &err), 0);
        json_decref(rows);
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    assert_true(r.resolved >= 200);
    catalog_free(r.c);
}

int main(void)
{
    kt_log_init(KT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(fleet_devices_resolve_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(fleet_is_fetched_when_old_and_on_a_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(fleet_updates_race_with_readers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
