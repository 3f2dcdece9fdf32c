/* Unit tests of catalog/catalog_versions (issue 27): a kernel folder whose file changes is a new
 * version without a new catalog, the old one kept for the targets keyed by it (reopened on it, its
 * own content-addressed copy); stored kernels come through the owner's fetch callback,
 * rate-limited, and are picked by status (validating, invalid with its log, ready) and by version;
 * a kernel given as data is checked with field paths, and a file it does not compile is refused;
 * the listings follow the kernel folders as the rescan finds them. No runner starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/file.h"
#include "catalog/catalog.h"
#include "catalog/kernel_spec.h"
#include "kspec_test_util.h"

static const kspec_limits CPU_LIMITS = {{4, 256, 1048576, 8388608, 256}};

static catalog_device *handed_cpu(int *n)
{
    catalog_device *d = calloc(1, sizeof *d);
    assert_non_null(d);
    snprintf(d[0].name, sizeof d[0].name, "cpu");
    d[0].kind = KSPEC_CPU;
    d[0].available = 1;
    d[0].klass = strdup("cpu:Handed_CPU:256");
    d[0].toolchain = strdup("gcc 12.2.0");
    d[0].description_text = strdup("{}");
    d[0].limits = CPU_LIMITS;
    *n = 1;
    return d;
}

static catalog *open_catalog(const fixture *f)
{
    const char *kdirs[] = {f->kernels};
    catalog_options opt = {.n_dataset_dirs = 0};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = "/nonexistent/ktune-runner",
                                 .cache_dir = f->cache,
                                 .cpu_core = -1};
    kt_error err;
    int n = 0;
    catalog_device *devs = handed_cpu(&n);
    catalog *c = catalog_new_real(&opt, &real, devs, n, &err);
    if (!c)
        fail_msg("catalog_new_real: %s", err.message);
    return c;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void folder_edit_is_a_new_version(void **state)
{
    fixture *f = *state;
    catalog *c = open_catalog(f);
    target t1, t2, again;
    kt_error err;
    char h1[KFILES_VERSION_LEN + 1], dir[512];
    if (catalog_resolve(c, "vadd", "cpu", NULL, &t1, &err) < 0)
        fail_msg("%s (%s)", err.message, err.hint);
    snprintf(h1, sizeof h1, "%s", t1.key.kernel_hash);
    assert_int_equal(strlen(h1), KFILES_VERSION_LEN);

    write_file(f->dir, "cpu.c",
               "int ktune_kernel(float *const *b, const long long *p) { return 1; }\n");
    sleep_ms(CATALOG_RESCAN_MS + 100);
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t2, &err), 0);
    assert_string_not_equal(t2.key.kernel_hash, h1); /* a new version, no new catalog */

    /* The old version stays: a target keyed by it reopens on it, with its own bytes on disk. */
    assert_int_equal(catalog_reopen(c, &t1.key, t1.problem, &again, &err), 0);
    assert_string_equal(again.key.kernel_hash, h1);
    const kernel_spec *old = catalog_find_kernel_version(c, "vadd", h1);
    assert_non_null(old);
    assert_int_equal(catalog_kernel_sources(c, old, dir, sizeof dir, &err), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/cpu.c", dir);
    size_t len = 0;
    char *bytes = kt_file_read_all(path, 4096, &len, &err);
    assert_non_null(bytes);
    assert_non_null(strstr(bytes, "return 0;")); /* the old source, not the folder's */
    free(bytes);

    char versions[4][KFILES_VERSION_LEN + 1];
    assert_int_equal(catalog_kernel_versions(c, "vadd", versions, 4), 2);
    assert_string_equal(versions[0], t2.key.kernel_hash); /* newest first */
    assert_string_equal(versions[1], h1);

    /* Back to the first bytes: the first version again, the newest. */
    write_file(f->dir, "cpu.c",
               "int ktune_kernel(float *const *b, const long long *p) { return 0; }\n");
    sleep_ms(CATALOG_RESCAN_MS + 100);
    assert_string_equal(catalog_find_kernel(c, "vadd")->version, h1);
    target_release(&t1);
    target_release(&t2);
    target_release(&again);
    catalog_free(c);
}

/* Paths given relative, as `ktune bench` gives its defaults (build/../kernels, var/cache): the
 * kernel sources handed to the runners are absolute (the runner refuses a relative one), and a
 * rescan through the other spelling of the kernel folder finds no second folder of the same name
 * (it listed "vadd" twice, the second "loaded from ... already"). */
static void relative_paths_are_made_absolute(void **state)
{
    fixture *f = *state;
    char cwd[4096], dir[512];
    kt_error err;
    target t;
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(f->root), 0);
    mkdir("sub", 0755);
    char broken[300];
    snprintf(broken, sizeof broken, "%s/broken", f->kernels);
    mkdir(broken, 0755);
    write_file(broken, "spec.json", "{\"name\": \"broken\"}");
    const char *kdirs[] = {"sub/../kernels"};
    catalog_options opt = {.n_dataset_dirs = 0};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = "/nonexistent/ktune-runner",
                                 .cache_dir = "cache",
                                 .cpu_core = -1};
    int n = 0;
    catalog_device *devs = handed_cpu(&n);
    catalog *c = catalog_new_real(&opt, &real, devs, n, &err);
    if (!c)
        fail_msg("catalog_new_real: %s", err.message);
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    const kernel_spec *k = catalog_find_kernel(c, "vadd");
    assert_non_null(k);
    assert_int_equal(catalog_kernel_sources(c, k, dir, sizeof dir, &err), 0);
    assert_int_equal(dir[0], '/');
    assert_int_equal(strncmp(dir, f->root, strlen(f->root)), 0);

    sleep_ms(CATALOG_RESCAN_MS + 100);
    json_t *ks = catalog_kernels_json(c);
    int seen = 0;
    for (size_t i = 0; i < json_array_size(ks); i++) {
        json_t *e = json_array_get(ks, i);
        if (strcmp(json_string_value(json_object_get(e, "name")), "vadd") != 0)
            continue;
        seen++;
        assert_string_equal(json_string_value(json_object_get(e, "status")), "ready");
    }
    json_decref(ks);
    assert_int_equal(seen, 1);
    /* an invalid folder too: listed once, under the spelling it was loaded by at start */
    ks = catalog_kernels_json(c);
    seen = 0;
    for (size_t i = 0; i < json_array_size(ks); i++) {
        json_t *e = json_array_get(ks, i);
        if (strcmp(json_string_value(json_object_get(e, "name")), "broken") != 0)
            continue;
        seen++;
        assert_string_equal(json_string_value(json_object_get(e, "status")), "invalid");
    }
    json_decref(ks);
    assert_int_equal(seen, 1);
    target_release(&t);
    catalog_free(c);
    assert_int_equal(chdir(cwd), 0);
}

/* The owner's source of stored kernels: one kernel, rows made from its files. */
typedef struct store_fake {
    char version[KFILES_VERSION_LEN + 1];
    const char *status;
    const char *log;
    char *spec_text;
    json_t *files;
    int fetches;
} store_fake;

static json_t *fake_fetch(void *ctx, const char *name, kt_error *err)
{
    store_fake *s = ctx;
    (void)err;
    s->fetches++;
    if (strcmp(name, "vmul") != 0)
        return json_array();
    return json_pack("[{s:s, s:s, s:s?, s:b, s:s, s:O}]", "version", s->version, "status",
                     s->status, "log", s->log, "retired", 0, "spec_text", s->spec_text, "files",
                     s->files);
}

static void stored_kernels_come_through_the_source(void **state)
{
    fixture *f = *state;
    catalog *c = open_catalog(f);
    kt_error err;
    json_t *spec = json_loads(VALID_SPEC, 0, NULL);
    json_object_set_new(spec, "name", json_string("vmul"));
    json_t *files = json_pack(
        "{s:s, s:s}", "cpu.c",
        "int ktune_kernel(float *const *b, const long long *p) { return 0; }\n", "reference.c",
        "int ktune_reference(float *const *b, const long long *p) { return 0; }\n");
    kernel_spec *k = catalog_kernel_parse(c, spec, files, NULL, &err);
    if (!k)
        fail_msg("%s", err.message);
    store_fake s = {.status = "validating", .files = files};
    snprintf(s.version, sizeof s.version, "%s", k->version);
    s.spec_text = strdup(kernel_files_get(k->files, "spec.json", NULL));
    kernel_spec_free(k);
    catalog_kernels_set_source(c, fake_fetch, &s);

    target t;
    assert_int_equal(catalog_resolve(c, "vmul", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_KERNEL_VALIDATING);
    assert_int_equal(s.fetches, 1);
    assert_int_equal(catalog_resolve(c, "vmul", "cpu", NULL, &t, &err), -1);
    assert_int_equal(s.fetches, 2); /* validating: read again, the copy may lag the table */
    s.status = "ready";
    assert_int_equal(catalog_resolve(c, "vmul", "cpu", NULL, &t, &err), 0); /* at once */
    target_release(&t);
    assert_int_equal(s.fetches, 3);
    assert_int_equal(catalog_resolve(c, "vmul", "cpu", NULL, &t, &err), 0);
    target_release(&t);
    assert_int_equal(s.fetches, 3); /* ready: rate-limited */

    s.status = "invalid";
    s.log = "cpu: default configuration: compile_error\ncpu.c:1: error: nope";
    sleep_ms(CATALOG_KERNEL_FETCH_MS + 100);
    assert_int_equal(catalog_resolve(c, "vmul", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_KERNEL_INVALID);
    assert_non_null(strstr(err.message, "error: nope"));

    s.status = "ready";
    s.log = NULL;
    sleep_ms(CATALOG_KERNEL_FETCH_MS + 100);
    assert_int_equal(catalog_resolve(c, "vmul", "cpu", NULL, &t, &err), 0);
    assert_string_equal(t.key.kernel_hash, s.version);
    target_release(&t);
    assert_int_equal(catalog_resolve_version(c, "vmul", s.version, "cpu", NULL, 1, &t, &err), 0);
    target_release(&t);
    assert_int_equal(catalog_resolve_version(c, "vmul", "0123456789abcdef0123456789abcdef", "cpu",
                                             NULL, 0, &t, &err),
                     -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);
    assert_non_null(strstr(err.hint, s.version)); /* the versions there are */
    assert_int_equal(catalog_resolve(c, "nothing", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);

    catalog_free(c);
    free(s.spec_text);
    json_decref(spec);
    json_decref(files);
}

static void parse_names_field_paths(void **state)
{
    fixture *f = *state;
    catalog *c = open_catalog(f);
    kt_error err;
    json_t *spec = json_loads(VALID_SPEC, 0, NULL);
    json_t *files = json_pack("{s:s, s:s}", "cpu.c", "int x;\n", "reference.c", "int y;\n");
    json_t *buffers = json_object_get(spec, "buffers");
    json_object_set_new(json_array_get(buffers, 0), "name", json_string("in"));
    assert_null(catalog_kernel_parse(c, spec, files, NULL, &err));
    assert_int_equal(err.code, KT_ERR_KERNEL_INVALID);
    assert_non_null(strstr(err.message, "spec: buffers[0].name: \"in\" is a Python keyword"));
    json_object_set_new(json_array_get(buffers, 0), "name", json_string("x"));

    json_object_set_new(files, "notes.h", json_string("/* never included */\n"));
    assert_null(catalog_kernel_parse(c, spec, files, NULL, &err));
    assert_non_null(strstr(err.message, "files.notes.h: not compiled"));
    json_object_set_new(files, "cpu.c", json_string("#include \"notes.h\"\nint x;\n"));
    kernel_spec *k = catalog_kernel_parse(c, spec, files, NULL, &err);
    if (!k)
        fail_msg("%s", err.message);
    assert_int_equal(k->n_compiled, 3); /* cpu.c, notes.h, reference.c */
    kernel_spec_free(k);

    json_object_del(files, "reference.c");
    assert_null(catalog_kernel_parse(c, spec, files, NULL, &err));
    assert_non_null(strstr(err.message, "spec: reference.source: 'reference.c': no such file"));
    json_decref(spec);
    json_decref(files);
    catalog_free(c);
}

/* <kernels>/<name>: VALID_SPEC under another name (valid 1), a spec that does not parse (0), or
 * one whose first restriction does not parse (2: "variants.cpu.restrictions[0]: ..."). */
static void make_kernel(const fixture *f, const char *name, int valid, char *dir, size_t cap)
{
    char spec[4096];
    const char *body = VALID_SPEC + strlen("{\"name\": \"vadd\",");
    snprintf(dir, cap, "%s/%s", f->kernels, name);
    mkdir(dir, 0755);
    snprintf(spec, sizeof spec, "{\"name\": \"%s\",%s", name, valid ? body : " \"summary\": ");
    if (valid == 2) {
        const char *at = strstr(body, "\"U*B <= 256\"");
        assert_non_null(at);
        snprintf(spec, sizeof spec, "{\"name\": \"%s\",%.*s\"U*B <= 256 && B > 1\"%s", name,
                 (int)(at - body), body, at + strlen("\"U*B <= 256\""));
    }
    write_file(dir, "spec.json", spec);
    write_file(dir, "cpu.c",
               "int ktune_kernel(float *const *b, const long long *p) { return 0; }\n");
    write_file(dir, "reference.c",
               "int ktune_reference(float *const *b, const long long *p) { return 0; }\n");
}

/* Folders added, fixed or removed under a --kernels folder after start are seen by the rescan:
 * no restart. A removed folder's versions stay for the targets keyed by them. */
static void folders_come_and_go_without_a_restart(void **state)
{
    fixture *f = *state;
    char bad[256], added[256], path[300];
    target t, again;
    kt_error err;
    make_kernel(f, "vbad", 0, bad, sizeof bad);
    catalog *c = open_catalog(f);
    assert_int_equal(catalog_resolve(c, "vbad", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_KERNEL_INVALID);
    assert_int_equal(catalog_resolve(c, "vnew", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);

    /* a new folder, and the invalid one fixed */
    make_kernel(f, "vnew", 1, added, sizeof added);
    make_kernel(f, "vbad", 1, bad, sizeof bad);
    sleep_ms(CATALOG_RESCAN_MS + 100);
    if (catalog_resolve(c, "vnew", "cpu", NULL, &t, &err) < 0)
        fail_msg("vnew: %s (%s)", err.message, err.hint);
    assert_int_equal(catalog_is_folder_kernel(c, "vnew"), 1);
    assert_non_null(catalog_find_kernel(c, "vbad"));
    assert_int_equal(catalog_kernel_invalid(c, "vbad", &err), 0);

    /* removed: unknown to new requests; a target keyed by it still reopens */
    snprintf(path, sizeof path, "%s/spec.json", added);
    assert_int_equal(unlink(path), 0);
    sleep_ms(CATALOG_RESCAN_MS + 100);
    assert_int_equal(catalog_resolve(c, "vnew", "cpu", NULL, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);
    assert_null(catalog_find_kernel(c, "vnew"));
    assert_int_equal(catalog_reopen(c, &t.key, t.problem, &again, &err), 0);
    assert_string_equal(again.key.kernel_hash, t.key.kernel_hash);
    target_release(&again);

    /* back again: the same bytes, the same version */
    make_kernel(f, "vnew", 1, added, sizeof added);
    sleep_ms(CATALOG_RESCAN_MS + 100);
    assert_int_equal(catalog_resolve(c, "vnew", "cpu", NULL, &again, &err), 0);
    assert_string_equal(again.key.kernel_hash, t.key.kernel_hash);
    target_release(&again);
    target_release(&t);
    catalog_free(c);
}

/* The entry of name in catalog_kernels_json, or NULL; the cpu device's kernel names listed by
 * catalog_devices_json hold name (1) or not (0). */
static json_t *listed(const catalog *c, const char *name, int *on_cpu)
{
    json_t *ks = catalog_kernels_json(c), *found = NULL;
    for (size_t i = 0; i < json_array_size(ks) && !found; i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(ks, i), "name")), name) == 0)
            found = json_incref(json_array_get(ks, i));
    json_decref(ks);
    json_t *devs = catalog_devices_json(c);
    json_t *names = json_object_get(json_array_get(devs, 0), "kernels");
    *on_cpu = 0;
    for (size_t i = 0; i < json_array_size(names); i++)
        *on_cpu |= strcmp(json_string_value(json_array_get(names, i)), name) == 0;
    json_decref(devs);
    return found;
}

/* GET /v1/kernels and GET /v1/devices follow the rescan: a folder added after start is listed
 * with its version and space size, one whose files stop loading is listed "invalid" with the
 * loader's message (field path first) and refused with it, not offered (its version still found
 * by exact version), listed again once fixed, and gone once removed. */
static void listings_follow_the_folders(void **state)
{
    fixture *f = *state;
    char dir[256], path[300];
    kt_error err;
    target t;
    int on_cpu = 0;
    catalog *c = open_catalog(f);
    json_t *e = listed(c, "vlist", &on_cpu);
    assert_null(e);
    assert_int_equal(on_cpu, 0);

    make_kernel(f, "vlist", 1, dir, sizeof dir);
    sleep_ms(CATALOG_RESCAN_MS + 100);
    e = listed(c, "vlist", &on_cpu);
    assert_non_null(e);
    assert_int_equal(on_cpu, 1);
    assert_string_equal(json_string_value(json_object_get(e, "status")), "ready");
    const kernel_spec *k = catalog_find_kernel(c, "vlist");
    assert_non_null(k);
    char v1[KFILES_VERSION_LEN + 1];
    snprintf(v1, sizeof v1, "%s", k->version);
    assert_string_equal(json_string_value(json_object_get(e, "version")), v1);
    json_t *d = json_array_get(json_object_get(e, "devices"), 0);
    assert_int_equal(json_integer_value(json_object_get(d, "configurations")), 11);
    json_decref(e);

    /* broken: listed invalid with the message, refused with it, not offered */
    make_kernel(f, "vlist", 2, dir, sizeof dir);
    sleep_ms(CATALOG_RESCAN_MS + 100);
    e = listed(c, "vlist", &on_cpu);
    assert_non_null(e);
    assert_int_equal(on_cpu, 0);
    assert_string_equal(json_string_value(json_object_get(e, "status")), "invalid");
    assert_int_equal(json_array_size(json_object_get(e, "devices")), 0);
    const char *msg = json_string_value(json_object_get(json_object_get(e, "error"), "message"));
    if (!strstr(msg, "kernel vlist cannot be used: spec.json: variants.cpu.restrictions[0]: "))
        fail_msg("%s", msg);
    assert_int_equal(catalog_resolve(c, "vlist", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_KERNEL_INVALID);
    assert_string_equal(err.message, msg);
    json_decref(e);
    assert_null(catalog_find_kernel(c, "vlist"));
    assert_non_null(catalog_find_kernel_version(c, "vlist", v1)); /* jobs keyed by it go on */
    assert_int_equal(catalog_is_folder_kernel(c, "vlist"), 1);

    /* fixed: the same bytes, the same version, listed ready again */
    make_kernel(f, "vlist", 1, dir, sizeof dir);
    sleep_ms(CATALOG_RESCAN_MS + 100);
    e = listed(c, "vlist", &on_cpu);
    assert_non_null(e);
    assert_int_equal(on_cpu, 1);
    assert_string_equal(json_string_value(json_object_get(e, "status")), "ready");
    assert_string_equal(json_string_value(json_object_get(e, "version")), v1);
    json_decref(e);
    assert_int_equal(catalog_resolve(c, "vlist", "cpu", NULL, &t, &err), 0);
    target_release(&t);

    /* removed: not listed */
    snprintf(path, sizeof path, "%s/spec.json", dir);
    assert_int_equal(unlink(path), 0);
    sleep_ms(CATALOG_RESCAN_MS + 100);
    assert_null(listed(c, "vlist", &on_cpu));
    assert_int_equal(on_cpu, 0);
    e = listed(c, "vadd", &on_cpu); /* the start folder's kernel stays */
    assert_non_null(e);
    assert_int_equal(on_cpu, 1);
    json_decref(e);
    catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(folder_edit_is_a_new_version, setup, teardown),
        cmocka_unit_test_setup_teardown(folders_come_and_go_without_a_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(listings_follow_the_folders, setup, teardown),
        cmocka_unit_test_setup_teardown(relative_paths_are_made_absolute, setup, teardown),
        cmocka_unit_test_setup_teardown(stored_kernels_come_through_the_source, setup, teardown),
        cmocka_unit_test_setup_teardown(parse_names_field_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
