/* Unit tests of measure/: the catalog over datasets/ (devices, kernels, resolve and its errors),
 * the replay backend (recorded times and failures, every id of a space, virtual costs, replay
 * speed, threads), plain caches without restrictions, bad files and folders, and every shared
 * gpu-spaces file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "measure/backend.h"
#include "core/log.h"
#include "measure/catalog.h"

#define DATASETS   KT_SOURCE_DIR "/datasets"
#define GPU_SPACES KT_SHARED_DATA_DIR "/gpu-spaces"
#define CONV       "replay:convolution_milo-A4000"
#define PNPOLY     "replay:pnpoly_kt-RTX_3090"

static catalog *open_catalog(const char *dir, double speed)
{
    const char *dirs[] = {dir};
    catalog_options opt = {dirs, 1, speed};
    kt_error err;
    catalog *c = catalog_new(&opt, &err);
    if (!c)
        fail_msg("catalog_new(%s): %s", dir, err.message);
    return c;
}

static void resolve_ok(const catalog *c, const char *kernel, const char *device, tune_target *t)
{
    kt_error err;
    if (catalog_resolve(c, kernel, device, NULL, t, &err) != 0)
        fail_msg("resolve %s on %s: %s", kernel, device, err.message);
}

static config_id id_of(const space *sp, const char *config_json)
{
    json_t *o = json_loads(config_json, 0, NULL);
    config_id id = 0;
    kt_error err;
    assert_non_null(o);
    if (space_config_from_json(sp, o, &id, &err) != 0)
        fail_msg("config %s: %s", config_json, err.message);
    json_decref(o);
    return id;
}

static void measure_ok(backend *b, const tune_target *t, config_id id, trial_result *r)
{
    kt_error err;
    if (backend_measure(b, t, id, r, &err) != 0)
        fail_msg("measure %llu: %s", (unsigned long long)id, err.message);
}

static json_t *find_by(json_t *arr, const char *key, const char *value)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *v = json_string_value(json_object_get(json_array_get(arr, i), key));
        if (v && strcmp(v, value) == 0)
            return json_array_get(arr, i);
    }
    return NULL;
}

static void catalog_finds_three_devices(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    assert_int_equal(catalog_num_devices(c), 3);
    json_t *devs = catalog_devices_json(c);
    const char *names[] = {CONV, "replay:gemm_clblast-RTX_2080_Ti", PNPOLY};
    const char *kernels[] = {"convolution", "gemm", "pnpoly"};
    for (int i = 0; i < 3; i++) {
        json_t *d = find_by(devs, "name", names[i]);
        assert_non_null(d);
        assert_string_equal(json_string_value(json_object_get(d, "kind")), "replay");
        assert_string_equal(json_string_value(json_object_get(d, "class")), names[i]);
        assert_true(json_is_true(json_object_get(d, "available")));
        assert_string_equal(json_string_value(json_array_get(json_object_get(d, "kernels"), 0)),
                            kernels[i]);
    }
    json_t *desc = json_object_get(find_by(devs, "name", CONV), "description");
    assert_string_equal(json_string_value(json_object_get(desc, "gpu")), "NVIDIA RTX A4000");
    assert_string_equal(json_string_value(json_object_get(desc, "recorded_kernel")),
                        "convolution_kernel");
    assert_int_equal(json_integer_value(json_object_get(desc, "configurations")), 4362);
    assert_int_equal(json_integer_value(json_object_get(desc, "valid")), 4201);
    assert_non_null(strstr(json_string_value(json_object_get(desc, "file")), ".json.gz"));
    json_decref(devs);

    json_t *ks = catalog_kernels_json(c);
    assert_int_equal(json_array_size(ks), 3);
    json_t *conv =
        json_array_get(json_object_get(find_by(ks, "name", "convolution"), "devices"), 0);
    assert_string_equal(json_string_value(json_object_get(conv, "device")), CONV);
    char *p = json_dumps(json_object_get(conv, "problem"), JSON_COMPACT);
    assert_string_equal(p, "{\"problem_size\":[4096,4096]}");
    free(p);
    json_t *params = json_object_get(conv, "parameters");
    assert_int_equal(json_array_size(params), 10);
    assert_string_equal(json_string_value(json_object_get(json_array_get(params, 0), "name")),
                        "block_size_x");
    assert_int_equal(json_array_size(json_object_get(json_array_get(params, 0), "values")), 16);
    assert_int_equal(json_array_size(json_object_get(conv, "restrictions")), 4);
    assert_int_equal(json_integer_value(json_object_get(conv, "configurations")), 4362);
    json_t *gemm = json_array_get(json_object_get(find_by(ks, "name", "gemm"), "devices"), 0);
    assert_int_equal(json_integer_value(json_object_get(gemm, "configurations")), 17956);
    json_decref(ks);
    catalog_free(c);
}

static void resolve_canonicalises_the_problem(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    const char *given[] = {NULL, "{}", "{\"problem_size\": [4096, 4096]}",
                           "{\"problem_size\": [4096.0, 4096]}"};
    for (int i = 0; i < 4; i++) {
        json_t *p = given[i] ? json_loads(given[i], 0, NULL) : NULL;
        tune_target t;
        kt_error err;
        assert_int_equal(catalog_resolve(c, "convolution", CONV, p, &t, &err), 0);
        assert_string_equal(t.problem_key, "{\"problem_size\":[4096,4096]}");
        assert_string_equal(t.kernel, "convolution");
        assert_string_equal(t.device, CONV);
        assert_string_equal(t.device_class, CONV);
        assert_int_equal(strlen(t.kernel_hash), 16);
        assert_int_equal(space_count(t.sp), 4362);
        assert_true(json_is_array(json_object_get(t.problem, "problem_size")));
        tune_target_release(&t);
        json_decref(p);
    }
    tune_target t;
    json_t *p = json_pack("{s:f}", "problem_size", 2e7);
    assert_int_equal(catalog_resolve(c, "pnpoly", PNPOLY, p, &t, NULL), 0);
    assert_string_equal(t.problem_key, "{\"problem_size\":20000000}");
    tune_target_release(&t);
    json_decref(p);
    catalog_free(c);
}

static void resolve_reports_each_error(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    tune_target t;
    kt_error err;
    assert_int_equal(catalog_resolve(c, "convolution", "replay:nope", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.message, "replay:nope"));
    assert_non_null(strstr(err.hint, PNPOLY));
    assert_int_equal(catalog_resolve(c, "gemm", CONV, NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);
    assert_string_equal(err.hint, "device " CONV " offers: convolution");

    json_t *p = json_loads("{\"problem_size\": [1024, 1024]}", 0, NULL);
    assert_int_equal(catalog_resolve(c, "convolution", CONV, p, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_string_equal(
        err.message,
        "dataset convolution_milo-A4000 was recorded at problem_size [4096, 4096] only");
    json_decref(p);
    p = json_loads("{\"x\": 1}", 0, NULL);
    assert_int_equal(catalog_resolve(c, "convolution", CONV, p, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_string_equal(err.message, "unknown problem argument 'x'; accepted: problem_size");
    json_decref(p);
    p = json_loads("[4096, 4096]", 0, NULL);
    assert_int_equal(catalog_resolve(c, "convolution", CONV, p, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    json_decref(p);
    catalog_free(c);
}

static void replay_returns_recorded_results(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    tune_target t, other;
    kt_error err;
    trial_result r;
    resolve_ok(c, "convolution", CONV, &t);
    resolve_ok(c, "pnpoly", PNPOLY, &other);
    backend *b = backend_open(c, CONV, &err);
    assert_non_null(b);

    /* "16,1,1,1,0,0,0,1,15,15" in the file: 5.900493 ms, compiled in 892.914007 ms. */
    measure_ok(b, &t,
               id_of(t.sp, "{\"block_size_x\":16,\"block_size_y\":1,\"tile_size_x\":1,"
                           "\"tile_size_y\":1,\"read_only\":0,\"use_padding\":0,\"use_shmem\":0,"
                           "\"use_cmem\":1,\"filter_height\":15,\"filter_width\":15}"),
               &r);
    assert_int_equal(r.status, TRIAL_OK);
    assert_true(fabs(r.time_ms - 5.900493) < 1e-9);
    assert_true(fabs(r.compile_ms - 892.914007) < 1e-9);
    assert_true(fabs(r.measure_ms - 190.53155) < 1e-9);
    assert_int_equal(r.repeats, 1);
    assert_true(json_is_true(json_object_get(r.extras, "replay")));
    assert_true(fabs(json_number_value(json_object_get(r.extras, "recorded_time")) - 5.900493) <
                1e-9);
    trial_result_release(&r);

    /* "80,8,3,4,0,1,1,1,15,15": CompilationFailedConfig after 7309.165561 ms. */
    measure_ok(b, &t,
               id_of(t.sp, "{\"block_size_x\":80,\"block_size_y\":8,\"tile_size_x\":3,"
                           "\"tile_size_y\":4,\"read_only\":0,\"use_padding\":1,\"use_shmem\":1,"
                           "\"use_cmem\":1,\"filter_height\":15,\"filter_width\":15}"),
               &r);
    assert_int_equal(r.status, TRIAL_COMPILE_ERROR);
    assert_true(fabs(r.compile_ms - 7309.165561) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(r.extras, "recorded_time")),
                        "CompilationFailedConfig");
    trial_result_release(&r);

    /* "32,16,3,4,1,0,0,1,15,15": RuntimeFailedConfig, benchmark_time 0.530805 ms. */
    measure_ok(b, &t,
               id_of(t.sp, "{\"block_size_x\":32,\"block_size_y\":16,\"tile_size_x\":3,"
                           "\"tile_size_y\":4,\"read_only\":1,\"use_padding\":0,\"use_shmem\":0,"
                           "\"use_cmem\":1,\"filter_height\":15,\"filter_width\":15}"),
               &r);
    assert_int_equal(r.status, TRIAL_RUNTIME_ERROR);
    assert_true(fabs(r.measure_ms - 0.530805) < 1e-9);
    trial_result_release(&r);

    assert_int_equal(backend_measure(b, &t, space_count(t.sp), &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    trial_result_release(&r);
    assert_int_equal(backend_measure(b, &other, 0, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    trial_result_release(&r);
    backend_close(b);
    tune_target_release(&t);
    tune_target_release(&other);
    catalog_free(c);
}

static void backend_open_errors(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    kt_error err;
    assert_null(backend_open(c, "replay:nope", &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.hint, CONV));
    assert_null(backend_open(c, "cuda:0", &err));
    assert_int_equal(err.code, KT_ERR_NOT_IMPLEMENTED);
    assert_non_null(strstr(err.message, "cuda backend is not implemented yet"));
    assert_null(backend_open(c, "cpu", &err));
    assert_int_equal(err.code, KT_ERR_NOT_IMPLEMENTED);
    assert_null(backend_open(c, NULL, &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    catalog_free(c);
}

/* Measures every id; returns the number of ok trials and sums the charged seconds. */
static uint64_t measure_all(const catalog *c, const char *kernel, const char *device,
                            double *seconds)
{
    tune_target t;
    trial_result r;
    uint64_t ok = 0;
    resolve_ok(c, kernel, device, &t);
    backend *b = backend_open(c, device, NULL);
    assert_non_null(b);
    *seconds = 0;
    for (config_id id = 0; id < space_count(t.sp); id++) {
        measure_ok(b, &t, id, &r);
        assert_true(trial_status_is_final(r.status));
        ok += r.status == TRIAL_OK;
        *seconds += (r.compile_ms + r.measure_ms) / 1000.0;
        trial_result_release(&r);
    }
    backend_close(b);
    tune_target_release(&t);
    return ok;
}

static void replay_measures_every_id(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    double s;
    assert_int_equal(measure_all(c, "pnpoly", PNPOLY, &s), 3774);
    assert_true(fabs(s - 1071.584226) < 1e-3); /* the recorded compile+verify+benchmark seconds */
    assert_int_equal(measure_all(c, "convolution", CONV, &s), 4201);
    assert_int_equal(measure_all(c, "gemm", "replay:gemm_clblast-RTX_2080_Ti", &s), 17956);
    catalog_free(c);
}

typedef struct thread_arg {
    const catalog *c;
    uint64_t ok;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    double s;
    a->ok = measure_all(a->c, "convolution", CONV, &s);
    return NULL;
}

static void replay_backends_run_in_parallel(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    pthread_t th[4];
    thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg){c, 0};
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].ok, 4201);
    }
    catalog_free(c);
}

/* Temporary folder with files; removed by rm_dir. */
static void make_dir(char *tmpl)
{
    assert_non_null(mkdtemp(tmpl));
}

static void write_file(const char *dir, const char *name, const char *text, int gz)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(gzwrite(f, text, (unsigned)strlen(text)), (int)strlen(text));
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(text, 1, strlen(text), f);
        fclose(f);
    }
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* A plain cache: no `space`, no `restrictions`, no problem_size; one record has a value outside
 * tune_params (ignored). */
static const char plain_cache[] =
    "{\"tune_params_keys\": [\"a\", \"b\"], \"tune_params\": {\"a\": [1, 2, 3], \"b\": [\"x\", "
    "\"y\"]},"
    " \"cache\": {"
    "  \"1,x\": {\"a\": 1, \"b\": \"x\", \"time\": 2.5, \"compile_time\": 10, \"benchmark_time\": "
    "5,"
    "           \"times\": [2.0, 3.0]},"
    "  \"2,y\": {\"a\": 2, \"b\": \"y\", \"time\": \"InvalidConfig\"},"
    "  \"3,x\": {\"a\": 3, \"b\": \"x\", \"time\": 1.5},"
    "  \"4,x\": {\"a\": 4, \"b\": \"x\", \"time\": 1.0}}}";

static void plain_cache_gives_explicit_space(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "tiny_plain.json", plain_cache, 0);
    write_file(dir, "zipped_plain.json.gz", plain_cache, 1);
    catalog *c = open_catalog(dir, 0);
    assert_int_equal(catalog_num_devices(c), 2);
    const char *devices[] = {"replay:tiny_plain", "replay:zipped_plain"};
    const char *kernels[] = {"tiny", "zipped"};
    for (int i = 0; i < 2; i++) {
        tune_target t;
        kt_error err;
        trial_result r;
        resolve_ok(c, kernels[i], devices[i], &t);
        assert_int_equal(space_count(t.sp), 3);
        assert_string_equal(t.problem_key, "{}");
        json_t *p = json_pack("{s:i}", "problem_size", 1);
        tune_target bad;
        assert_int_equal(catalog_resolve(c, kernels[i], devices[i], p, &bad, &err), -1);
        assert_string_equal(err.message, "unknown problem argument 'problem_size'; accepted: none");
        json_decref(p);
        backend *b = backend_open(c, devices[i], NULL);
        measure_ok(b, &t, id_of(t.sp, "{\"a\": 1, \"b\": \"x\"}"), &r);
        assert_int_equal(r.status, TRIAL_OK);
        assert_true(r.time_ms == 2.5 && r.compile_ms == 10 && r.measure_ms == 5);
        assert_int_equal(r.repeats, 2);
        assert_true(fabs(r.noise_cv - 0.2) < 1e-12);
        trial_result_release(&r);
        measure_ok(b, &t, id_of(t.sp, "{\"a\": 2, \"b\": \"y\"}"), &r);
        assert_int_equal(r.status, TRIAL_INVALID);
        assert_true(r.compile_ms == 0 && r.measure_ms == 0);
        trial_result_release(&r);
        backend_close(b);
        tune_target_release(&t);
    }
    catalog_free(c);
    rm_dir(dir);
}

static void unrecorded_config_is_invalid(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "partial.json",
               "{\"space\": \"part_ial\", \"problem_size\": 7, \"tune_params_keys\": [\"a\"],"
               " \"tune_params\": {\"a\": [1, 2, 3]}, \"restrictions\": [\"a >= 1\"],"
               " \"cache\": {\"1\": {\"a\": 1, \"time\": 1.0}, \"2\": {\"a\": 2, \"time\": 2.0}}}",
               0);
    catalog *c = open_catalog(dir, 0);
    tune_target t;
    trial_result r;
    resolve_ok(c, "part", "replay:part_ial", &t);
    assert_string_equal(t.problem_key, "{\"problem_size\":7}");
    assert_int_equal(space_count(t.sp), 3);
    backend *b = backend_open(c, "replay:part_ial", NULL);
    measure_ok(b, &t, id_of(t.sp, "{\"a\": 3}"), &r);
    assert_int_equal(r.status, TRIAL_INVALID);
    assert_string_equal(json_string_value(json_object_get(r.extras, "reason")), "not recorded");
    trial_result_release(&r);
    backend_close(b);
    tune_target_release(&t);
    catalog_free(c);
    rm_dir(dir);
}

static void bad_files_are_skipped(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "good.json", plain_cache, 0);
    write_file(dir, "broken.json", "{\"tune_params\": {", 0);
    write_file(dir, "nocache.json", "{\"tune_params\": {\"a\": [1]}}", 0);
    write_file(dir, "truncated.json.gz", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56", 0);
    write_file(dir, "badexpr.json",
               "{\"tune_params\": {\"a\": [1]}, \"restrictions\": [\"a >\"], \"cache\": {}}", 0);
    write_file(dir, "notes.txt", "not a dataset", 0);
    catalog *c = open_catalog(dir, 0);
    assert_int_equal(catalog_num_devices(c), 1);
    json_t *devs = catalog_devices_json(c);
    assert_non_null(find_by(devs, "name", "replay:good"));
    json_decref(devs);
    catalog_free(c);
    rm_dir(dir);
}

static void missing_folder_is_config_error(void **state)
{
    (void)state;
    const char *dirs[] = {DATASETS, "/nonexistent/kt_datasets"};
    catalog_options opt = {dirs, 2, 0};
    kt_error err;
    assert_null(catalog_new(&opt, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "/nonexistent/kt_datasets"));
    opt.n_dataset_dirs = 1;
    opt.replay_speed = -1;
    assert_null(catalog_new(&opt, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void replay_speed_sleeps(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "slow_one.json",
               "{\"tune_params\": {\"a\": [1]}, \"cache\": {\"1\": {\"a\": 1, \"time\": 1.0,"
               " \"compile_time\": 120, \"verification_time\": 30, \"benchmark_time\": 50}}}",
               0);
    catalog *c = open_catalog(dir, 0.5); /* 200 recorded ms -> 100 ms of sleep */
    tune_target t;
    trial_result r;
    resolve_ok(c, "slow", "replay:slow_one", &t);
    backend *b = backend_open(c, "replay:slow_one", NULL);
    double t0 = now_s();
    measure_ok(b, &t, 0, &r);
    double dt = now_s() - t0;
    assert_int_equal(r.status, TRIAL_OK);
    assert_true(dt >= 0.095 && dt < 5.0);
    trial_result_release(&r);
    backend_close(b);
    tune_target_release(&t);
    catalog_free(c);
    rm_dir(dir);
}

static void both_folders_keep_first_of_duplicates(void **state)
{
    (void)state;
    if (access(GPU_SPACES, R_OK) != 0)
        skip();
    const char *dirs[] = {DATASETS, GPU_SPACES};
    catalog_options opt = {dirs, 2, 0};
    catalog *c = catalog_new(&opt, NULL);
    assert_non_null(c);
    assert_int_equal(catalog_num_devices(c), 8);
    json_t *devs = catalog_devices_json(c);
    const char *file = json_string_value(
        json_object_get(json_object_get(find_by(devs, "name", CONV), "description"), "file"));
    assert_non_null(strstr(file, "/datasets/"));
    json_decref(devs);
    catalog_free(c);
}

/* Counts the cache keys of a dataset file independently of the catalog. */
static size_t count_cache_keys(const char *path)
{
    gzFile f = gzopen(path, "rb");
    size_t len = 0, cap = 1 << 20;
    char *buf = malloc(cap);
    int n;
    assert_non_null(f);
    while ((n = gzread(f, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)n;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    gzclose(f);
    json_t *root = json_loadb(buf, len, 0, NULL);
    free(buf);
    assert_non_null(root);
    size_t keys = json_object_size(json_object_get(root, "cache"));
    json_decref(root);
    return keys;
}

static void every_shared_space_loads(void **state)
{
    (void)state;
    DIR *d = opendir(GPU_SPACES);
    if (!d)
        skip();
    catalog *c = open_catalog(GPU_SPACES, 0);
    assert_int_equal(catalog_num_devices(c), 8);
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 9 || strcmp(e->d_name + n - 8, ".json.gz") != 0)
            continue;
        char path[512], device[256], kernel[64];
        snprintf(path, sizeof path, "%s/%s", GPU_SPACES, e->d_name);
        snprintf(device, sizeof device, "replay:%.*s", (int)(n - 8), e->d_name);
        snprintf(kernel, sizeof kernel, "%.*s", (int)strcspn(e->d_name, "_"), e->d_name);
        tune_target t;
        resolve_ok(c, kernel, device, &t);
        assert_int_equal(space_count(t.sp), count_cache_keys(path));
        tune_target_release(&t);
        seen++;
    }
    closedir(d);
    assert_int_equal(seen, 8);
    catalog_free(c);
}

int main(void)
{
    kt_log_init(KT_LOG_WARN); /* the skipped-file warnings stay visible */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_finds_three_devices),
        cmocka_unit_test(resolve_canonicalises_the_problem),
        cmocka_unit_test(resolve_reports_each_error),
        cmocka_unit_test(replay_returns_recorded_results),
        cmocka_unit_test(backend_open_errors),
        cmocka_unit_test(replay_measures_every_id),
        cmocka_unit_test(replay_backends_run_in_parallel),
        cmocka_unit_test(plain_cache_gives_explicit_space),
        cmocka_unit_test(unrecorded_config_is_invalid),
        cmocka_unit_test(bad_files_are_skipped),
        cmocka_unit_test(missing_folder_is_config_error),
        cmocka_unit_test(replay_speed_sleeps),
        cmocka_unit_test(both_folders_keep_first_of_duplicates),
        cmocka_unit_test(every_shared_space_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
