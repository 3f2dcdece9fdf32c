#include "service.h"

#include <cblas.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "catalog/catalog_fleet.h"
#include "core/clock.h"
#include "core/log.h"
#include "measure/core_reserve.h"
#include "measure/device.h"
#include "store/catalog_store.h"
#include "store/kernel_store.h"
#include "store/migrate.h"

#define SERVICE_MAX_DATASET_DIRS 32
#define SERVICE_MAX_KERNEL_DIRS  32
/* Bytes of cached /v1/best answers at most (keys and bodies); --best-cache-entries bounds the
 * count. */
#define SERVICE_BEST_CACHE_BYTES ((size_t)256 << 20)
#define SERVICE_FLEET_PERIOD_S   2.0  /* the catalog's copy of the fleet's devices is this fresh */
#define SERVICE_FLEET_WAIT_MS    1000 /* a fleet read waits this long for a connection */
/* The embedded cluster may take this long to accept the pool's connections. */
#define SERVICE_DB_START_SECONDS 60

/* --role api: HTTP only; worker: measuring, job driving and training, HTTP for probes only. */
static int measures(const service *svc)
{
    return strcmp(svc->cfg.role, "api") != 0;
}

/* The catalog's fleet source (catalog_fleet.h): the devices workers registered, read from the
 * table with a connection of the pool. */
static int fleet_fetch(void *ctx, json_t **rows, kt_error *err)
{
    service *svc = ctx;
    PGconn *c = db_acquire(svc->db, SERVICE_FLEET_WAIT_MS, err);
    if (!c)
        return -1;
    *rows = catalog_store_fleet_json(c, svc->cfg.lease_s, err);
    db_release(svc->db, c);
    return *rows ? 0 : -1;
}

/* The catalog's source of stored kernels (catalog_kernels_set_source): a name's newest versions. */
static json_t *kernels_fetch(void *ctx, const char *name, kt_error *err)
{
    service *svc = ctx;
    PGconn *c = db_acquire(svc->db, SERVICE_FLEET_WAIT_MS, err);
    if (!c)
        return NULL;
    json_t *rows = kernel_store_fetch(c, name, CATALOG_KERNEL_VERSIONS, err);
    db_release(svc->db, c);
    return rows;
}

/* With real measurement, chooses the measuring core: resolves --cpu-core's automatic default (the
 * last core, when there are 2 or more) into svc->cfg.cpu_core. The service keeps every core
 * between cpu measurements; each one moves it off this core while it runs (reserve_core). */
static int choose_measuring_core(service *svc, kt_error *err)
{
    cpu_set_t set;
    int core = svc->cfg.cpu_core, n;
    if (!svc->cfg.kernels[0] || core == -1 || !measures(svc)) {
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
        log_info("cpu measurements run on core %d; the service on the %d others while one runs, "
                 "on all %d between them",
                 core, n - 1, n);
        /* OpenBLAS sized its thread pool by every core: its threads (the legality check's Fisher
         * Potential, model training) would share the service's cores with each other and spin
         * while a measurement holds one; one per core left then, unless OPENBLAS_NUM_THREADS
         * says. */
        if (!getenv("OPENBLAS_NUM_THREADS"))
            openblas_set_num_threads(n - 1);
    }
    return 0;
}

/* The measuring core's reservation (measure/core_reserve.h), once the embedded cluster runs: its
 * postmaster and backends are moved with the service's threads. */
static int reserve_core(service *svc, kt_error *err)
{
    if (svc->cfg.cpu_core < 0)
        return 0;
    svc->core_reserve =
        core_reserve_new(svc->cfg.cpu_core, svc->pg ? pg_cluster_pgdata(svc->pg) : NULL, err);
    return svc->core_reserve ? 0 : -1;
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

/* The server's limits on ktuned's sessions (libpq reads PGOPTIONS when the connection string sets
 * no options; set before the pool and any thread exist):
 * - a process paused inside a transaction (SIGSTOP, a frozen VM, a network partition) would hold
 *   its row locks for ever, and every other process's reaper would wait on them: the lease would
 *   never run out, so the server ends such a session after the lease;
 * - a statement ends after DB_STATEMENT_TIMEOUT_MS, and a session whose client gave up on it (db.c
 *   drops a connection whose statement is not answered in time) ends within DB_CLIENT_CHECK_MS. */
static void limit_sessions(const service *svc)
{
    char opt[192];
    if (getenv("PGOPTIONS"))
        return;
    snprintf(opt, sizeof opt,
             "-c idle_in_transaction_session_timeout=%lld -c statement_timeout=%d"
             " -c client_connection_check_interval=%d",
             (long long)(svc->cfg.lease_s * 1000), DB_STATEMENT_TIMEOUT_MS, DB_CLIENT_CHECK_MS);
    if (setenv("PGOPTIONS", opt, 0) != 0)
        log_warn("cannot limit database sessions (idle transactions, statements): %s",
                 strerror(errno));
}

/* Opens the connection pool. The embedded cluster has just answered a ping, so a connection that
 * fails now is a starved machine (its backends forked slowly past libpq's 2 s connect_timeout),
 * not a wrong address or password: retried for up to SERVICE_DB_START_SECONDS. An external database
 * gets one attempt, so that a mistake in --database-url is reported at once. */
static db_pool *open_pool(service *svc, int size, kt_error *err)
{
    double deadline = kt_clock_s() + (svc->pg ? SERVICE_DB_START_SECONDS : 0);
    for (;;) {
        db_pool *db = db_pool_new(svc->conninfo, size, err);
        if (db || kt_clock_s() >= deadline)
            return db;
        log_warn("the embedded database did not take %d connections yet (%s); retrying", size,
                 err->message);
        kt_error_clear(err);
        struct timespec pause = {0, 500 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
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
    limit_sessions(svc);
    /* Every measurement thread, HTTP thread (light and heavy) and the runner may hold one
     * connection at once (an API process has no measurement threads). */
    int pool = (measures(svc) ? svc->cfg.workers : 0) + svc->cfg.http_threads +
               svc->cfg.http_heavy_threads + 4;
    svc->db = open_pool(svc, pool, err);
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
    if (svc->pg) {
        /* /healthz and new jobs watch the cluster's disk; a dead postmaster is restarted. */
        db_pool_watch_dir(svc->db, pg_cluster_pgdata(svc->pg));
        if (!(svc->pg_supervisor = pg_supervisor_start(svc->pg, err)))
            return -1;
    }
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
    /* The accel devices file is config, not probed: every role loads it (an API process resolves
     * accel targets itself; accel devices never go through the fleet). */
    catalog_options opt = {.dataset_dirs = dirs,
                           .n_dataset_dirs = n,
                           .replay_speed = svc->cfg.replay_speed,
                           .accel_devices_path = svc->cfg.accel_devices,
                           .networks_dir = svc->cfg.networks,
                           .neural_check_timeout_s = svc->cfg.neural_check_timeout_s};
    catalog_real_options real = {
        .kernel_dirs = kdirs,
        .n_kernel_dirs = nk,
        .runner = svc->cfg.runner,
        .cache_dir = cache,
        .cpu_core = svc->cfg.cpu_core,
        .core_reserve = svc->core_reserve,
        .min_repeats = svc->cfg.min_repeats,
        .min_seconds = svc->cfg.min_seconds,
        .compile_timeout_s = svc->cfg.compile_timeout_s,
        .run_timeout_s = svc->cfg.run_timeout_s,
        .slow_factor = svc->cfg.slow_factor,
        .early_stop_after = svc->cfg.early_stop_after > 0 ? svc->cfg.early_stop_after : -1,
        .cache_max_mb = svc->cfg.cache_max_mb > 0 ? svc->cfg.cache_max_mb : -1};
    if (real.min_seconds == 0)
        real.min_seconds = 1e-9; /* 0 in the catalog means "the default" */
    /* The devices are probed (ktune-runner) before the catalog, which takes the records. An API
     * process probes none: it knows the devices of the fleet (catalog_fleet.h) and loads the
     * kernel specs and datasets only to validate requests and build spaces. */
    catalog_device *devs = NULL;
    int n_devs = 0;
    if (measures(svc) && device_discover(&real, &devs, &n_devs, err) < 0)
        return -1;
    svc->cat = catalog_new_real(&opt, &real, devs, n_devs, err);
    if (!svc->cat)
        return -1;
    catalog_fleet_set_source(svc->cat, fleet_fetch, svc, SERVICE_FLEET_PERIOD_S);
    catalog_kernels_set_source(svc->cat, kernels_fetch, svc);
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
    /* Before any thread exists: OpenBLAS's thread count is set with the core. */
    if (choose_measuring_core(svc, err) < 0)
        goto fail;
    /* ktune-runner reads its user from the environment (runner/privileges.h): started by a root
     * ktuned, it switches to this user before it compiles or runs a kernel. Set before any thread
     * exists (setenv is not thread-safe). */
    char base[24], uids[24];
    snprintf(base, sizeof base, "%lld", svc->cfg.runner_uid_base);
    snprintf(uids, sizeof uids, "%lld", svc->cfg.runner_uids);
    /* and the uid range of submitted versions' runners (issue 27, runner/privileges.h) */
    if (setenv("KTUNE_RUNNER_USER", svc->cfg.runner_user, 1) != 0 ||
        setenv("KTUNE_RUNNER_UID_BASE", base, 1) != 0 ||
        setenv("KTUNE_RUNNER_UIDS", uids, 1) != 0) {
        kt_error_set(err, KT_ERR_CONFIG, "cannot pass --runner-user to the runners: %s",
                     strerror(errno));
        goto fail;
    }
    if (start_database(svc, err) < 0 || reserve_core(svc, err) < 0)
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
    model_cache_set_minimum(svc->models,
                            &(model_minimum){cfg->model_min_problems, cfg->model_min_accuracy});
    wopt.models = svc->models;
    wopt.lease_s = cfg->lease_s;
    wopt.max_start_attempts = cfg->job_max_start_attempts;
    svc->workers = measures(svc) ? worker_system_start(&wopt, err) : NULL;
    if (measures(svc) && !svc->workers)
        goto fail;
    int api = strcmp(cfg->role, "worker") != 0;
    /* Before HTTP: its first /v1/best may fill the cache, which the listener flushes once it
     * LISTENs (and keeps true from then on). A worker serves no /v1/best. */
    if (api && cfg->best_cache_entries > 0) {
        svc->best = best_cache_new((size_t)cfg->best_cache_entries, SERVICE_BEST_CACHE_BYTES);
        api_best_cache_init(svc->best);
        svc->best_listen = svc->best ? best_listen_start(svc->best, svc->conninfo, err) : NULL;
        if (!svc->best_listen) {
            if (!svc->best)
                kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory creating the /v1/best cache");
            goto fail;
        }
    }
    http_server_options hopt = {.listen = svc->cfg.listen,
                                .web_root = api ? svc->cfg.web_dir : "",
                                .threads = cfg->http_threads,
                                .heavy_threads = cfg->http_heavy_threads,
                                .heavy = api ? api_heavy_routes() : NULL,
                                .blocking = api ? api_blocking_routes() : NULL,
                                .max_connections = cfg->max_connections,
                                .max_connections_per_ip = cfg->max_connections_per_ip,
                                .header_timeout_s = cfg->http_header_timeout_s,
                                .body_timeout_s = cfg->http_body_timeout_s,
                                .body_min_rate = cfg->http_body_min_rate};
    svc->api = (api_context){&svc->cfg, svc->db,     svc->cat,  svc->workers,
                             NULL,      svc->models, svc->best, svc->tokens};
    svc->http = http_server_new(api ? api_routes() : api_probe_routes(), &svc->api, &hopt, err);
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
    best_listen_stop(svc->best_listen); /* after HTTP: no lookup is left */
    if (svc->best) {
        best_cache_stats st;
        best_cache_stats_get(svc->best, &st);
        log_info("lookup: /v1/best cache: %llu hits, %llu misses, %llu fills (%llu dropped), %llu "
                 "invalidated, %llu flushes, %llu evicted",
                 (unsigned long long)st.hits, (unsigned long long)st.misses,
                 (unsigned long long)st.fills, (unsigned long long)st.fills_dropped,
                 (unsigned long long)st.invalidated, (unsigned long long)st.flushes,
                 (unsigned long long)st.evicted);
    }
    best_cache_free(svc->best);
    worker_system_stop(svc->workers);
    model_cache_free(svc->models); /* after HTTP and the workers: no caller is left */
    api_token_cache_free(svc->tokens);
    catalog_free(svc->cat);
    core_reserve_free(svc->core_reserve); /* no measurement left to hold it */
    svc->core_reserve = NULL;
    db_pool_free(svc->db);
    pg_supervisor_stop(svc->pg_supervisor); /* before the server stops: no restart of it */
    pg_cluster_stop(svc->pg);
    free(svc->conninfo);
    memset(svc, 0, sizeof *svc);
}
