#include "service.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/log.h"
#include "measure/device.h"
#include "store/catalog_store.h"
#include "store/migrate.h"

#define SERVICE_MAX_DATASET_DIRS 32
#define SERVICE_MAX_KERNEL_DIRS  32

/* With real measurement, reserves the measuring core: the calling (main) thread, and so every
 * thread and process started after it, runs on the other cores. Resolves --cpu-core's automatic
 * default (the last core, when there are 2 or more) into svc->cfg.cpu_core. */
static int pin_service(service *svc, kt_error *err)
{
    cpu_set_t set;
    int core = svc->cfg.cpu_core, n;
    if (!svc->cfg.kernels[0] || core == -1) {
        svc->cfg.cpu_core = -1;
        return 0;
    }
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        if (core == CONFIG_CPU_CORE_AUTO) {
            log_warn("cannot read the CPU affinity (%s); cpu measurements are not pinned",
                     strerror(errno));
            svc->cfg.cpu_core = -1;
            return 0;
        }
        return kt_error_set(err, KT_ERR_CONFIG, "--cpu-core %d: cannot read the CPU affinity: %s",
                            core, strerror(errno));
    }
    n = CPU_COUNT(&set);
    if (core == CONFIG_CPU_CORE_AUTO) {
        core = -1;
        for (int i = CPU_SETSIZE - 1; n >= 2 && i >= 0 && core < 0; i--)
            core = CPU_ISSET(i, &set) ? i : -1;
    } else if (core >= CPU_SETSIZE || !CPU_ISSET(core, &set)) {
        kt_error_set(err, KT_ERR_CONFIG, "--cpu-core %d is not a core this process may run on",
                     core);
        kt_error_hint(err, "this process may use %d cores; -1 disables pinning", n);
        return -1;
    }
    svc->cfg.cpu_core = core;
    if (core < 0) {
        log_info("one core only: cpu measurements share it with the service");
        return 0;
    }
    if (n >= 2) {
        CPU_CLR(core, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            log_warn("cannot keep the service off core %d: %s", core, strerror(errno));
        else
            log_info("cpu measurements run on core %d; the service on the %d others", core, n - 1);
    }
    return 0;
}

/* Splits a comma-separated list in place into at most max entries. */
static int split_dirs(char *buf, const char **dirs, int max, const char *flag, kt_error *err)
{
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!*tok)
            continue;
        if (n == max)
            return kt_error_set(err, KT_ERR_CONFIG, "%s names more than %d folders", flag, max);
        dirs[n++] = tok;
    }
    return n;
}

static int start_database(service *svc, kt_error *err)
{
    const char *conninfo = svc->cfg.database_url;
    if (!conninfo[0]) {
        svc->pg = pg_cluster_start(svc->cfg.data_dir, err);
        if (!svc->pg) {
            kt_error_prefix(err, "starting the embedded database in %s", svc->cfg.data_dir);
            return -1;
        }
        conninfo = pg_cluster_conninfo(svc->pg);
    }
    svc->conninfo = strdup(conninfo);
    /* Every measurement thread, HTTP thread and the runner may hold one connection at once. */
    int pool = svc->cfg.workers + svc->cfg.http_threads + 4;
    svc->db = db_pool_new(svc->conninfo, pool, err);
    if (!svc->db) {
        kt_error_prefix(err, "connecting to the database");
        return -1;
    }
    PGconn *c = db_acquire(svc->db, 10000, err);
    if (!c)
        return -1;
    int count = 0;
    const migration *migs = migrate_builtin(&count);
    int applied = migrate_apply(c, migs, count, err);
    db_release(svc->db, c);
    if (applied < 0)
        return -1;
    log_info("database ready (%s, %d migrations applied now)", svc->pg ? "embedded" : "external",
             applied);
    return 0;
}

static int start_catalog(service *svc, kt_error *err)
{
    char dirs_buf[sizeof svc->cfg.datasets], kdirs_buf[sizeof svc->cfg.kernels];
    char cache[sizeof svc->cfg.cache_dir];
    const char *dirs[SERVICE_MAX_DATASET_DIRS], *kdirs[SERVICE_MAX_KERNEL_DIRS];
    memcpy(dirs_buf, svc->cfg.datasets, sizeof dirs_buf);
    memcpy(kdirs_buf, svc->cfg.kernels, sizeof kdirs_buf);
    int n = split_dirs(dirs_buf, dirs, SERVICE_MAX_DATASET_DIRS, "--datasets", err);
    int nk = split_dirs(kdirs_buf, kdirs, SERVICE_MAX_KERNEL_DIRS, "--kernels", err);
    if (n < 0 || nk < 0)
        return -1;
    if (svc->cfg.cache_dir[0])
        snprintf(cache, sizeof cache, "%s", svc->cfg.cache_dir);
    else if (snprintf(cache, sizeof cache, "%s/cache", svc->cfg.data_dir) >= (int)sizeof cache)
        return kt_error_set(err, KT_ERR_CONFIG, "--data-dir is too long for the cache folder");
    catalog_options opt = {
        .dataset_dirs = dirs, .n_dataset_dirs = n, .replay_speed = svc->cfg.replay_speed};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = nk,
                                 .runner = svc->cfg.runner,
                                 .cache_dir = cache,
                                 .cpu_core = svc->cfg.cpu_core,
                                 .min_repeats = svc->cfg.min_repeats,
                                 .min_seconds = svc->cfg.min_seconds,
                                 .compile_timeout_s = svc->cfg.compile_timeout_s,
                                 .run_timeout_s = svc->cfg.run_timeout_s,
                                 .slow_factor = svc->cfg.slow_factor};
    if (real.min_seconds == 0)
        real.min_seconds = 1e-9; /* 0 in the catalog means "the default" */
    /* The devices are probed (ktune-runner) before the catalog, which takes the records. */
    catalog_device *devs = NULL;
    int n_devs = 0;
    if (device_discover(&real, &devs, &n_devs, err) < 0)
        return -1;
    svc->cat = catalog_new_real(&opt, &real, devs, n_devs, err);
    if (!svc->cat)
        return -1;
    PGconn *c = db_acquire(svc->db, 10000, err);
    if (!c)
        return -1;
    json_t *devices = catalog_devices_json(svc->cat);
    json_t *kernels = catalog_kernels_json(svc->cat);
    int rc = catalog_store_sync(c, devices, kernels, err);
    json_decref(devices);
    json_decref(kernels);
    db_release(svc->db, c);
    if (rc == 0)
        log_info("catalog: %d devices", catalog_num_devices(svc->cat));
    return rc;
}

int service_start(service *svc, const kt_config *cfg, kt_error *err)
{
    memset(svc, 0, sizeof *svc);
    svc->cfg = *cfg;
    /* Before any thread or child process exists, so that all of them inherit the affinity. */
    if (pin_service(svc, err) < 0)
        goto fail;
    /* ktune-runner reads its user from the environment (runner/privileges.h): started by a root
     * ktuned, it switches to this user before it compiles or runs a kernel. Set before any thread
     * exists (setenv is not thread-safe). */
    if (setenv("KTUNE_RUNNER_USER", svc->cfg.runner_user, 1) != 0) {
        kt_error_set(err, KT_ERR_CONFIG, "cannot pass --runner-user to the runners: %s",
                     strerror(errno));
        goto fail;
    }
    if (start_database(svc, err) < 0)
        goto fail;
    /* The listen rule (no token: loopback only) is checked before anything is served. */
    if (!(svc->tokens = api_token_cache_new(&svc->cfg, svc->db, err)) ||
        start_catalog(svc, err) < 0)
        goto fail;
    worker_options wopt = {.db = svc->db,
                           .cat = svc->cat,
                           .measurers = cfg->workers,
                           .max_jobs = cfg->max_jobs,
                           .model_retrain_after = cfg->model_retrain_after,
                           .model_train_delay_s = cfg->model_train_delay_s};
    /* Before the workers: their job drivers ask it for the predictor's top-k of a warm start. */
    svc->models = model_cache_new(svc->cat);
    if (!svc->models) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory creating the model cache");
        goto fail;
    }
    wopt.models = svc->models;
    svc->workers = worker_system_start(&wopt, err);
    if (!svc->workers)
        goto fail;
    http_server_options hopt = {
        .listen = svc->cfg.listen, .web_root = svc->cfg.web_dir, .threads = cfg->http_threads};
    svc->api =
        (api_context){&svc->cfg, svc->db, svc->cat, svc->workers, NULL, svc->models, svc->tokens};
    svc->http = http_server_new(api_routes(), &svc->api, &hopt, err);
    svc->api.http = svc->http;
    if (!svc->http || http_server_start(svc->http, err) < 0)
        goto fail;
    return 0;
fail:
    service_stop(svc);
    return -1;
}

void service_stop(service *svc)
{
    if (svc->http) {
        http_server_stop(svc->http);
        http_server_free(svc->http);
    }
    worker_system_stop(svc->workers);
    model_cache_free(svc->models); /* after HTTP and the workers: no caller is left */
    api_token_cache_free(svc->tokens);
    catalog_free(svc->cat);
    db_pool_free(svc->db);
    pg_cluster_stop(svc->pg);
    free(svc->conninfo);
    memset(svc, 0, sizeof *svc);
}
