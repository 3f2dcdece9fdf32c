#include "service.h"

#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/log.h"
#include "store/catalog_store.h"
#include "store/migrate.h"

#define SERVICE_MAX_DATASET_DIRS 32

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
    char dirs_buf[sizeof svc->cfg.datasets];
    const char *dirs[SERVICE_MAX_DATASET_DIRS];
    int n = 0;
    memcpy(dirs_buf, svc->cfg.datasets, sizeof dirs_buf);
    char *save = NULL;
    for (char *tok = strtok_r(dirs_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!*tok)
            continue;
        if (n == SERVICE_MAX_DATASET_DIRS)
            return kt_error_set(err, KT_ERR_CONFIG, "--datasets names more than %d folders",
                                SERVICE_MAX_DATASET_DIRS);
        dirs[n++] = tok;
    }
    catalog_options opt = {
        .dataset_dirs = dirs, .n_dataset_dirs = n, .replay_speed = svc->cfg.replay_speed};
    svc->cat = catalog_new(&opt, err);
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
    if (start_database(svc, err) < 0 || start_catalog(svc, err) < 0)
        goto fail;
    worker_options wopt = {
        .db = svc->db, .cat = svc->cat, .measurers = cfg->workers, .max_jobs = cfg->max_jobs};
    svc->workers = worker_system_start(&wopt, err);
    if (!svc->workers)
        goto fail;
    http_server_options hopt = {
        .listen = svc->cfg.listen, .web_root = svc->cfg.web_dir, .threads = cfg->http_threads};
    svc->http = http_server_new(api_routes(), svc, &hopt, err);
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
    catalog_free(svc->cat);
    db_pool_free(svc->db);
    pg_cluster_stop(svc->pg);
    free(svc->conninfo);
    memset(svc, 0, sizeof *svc);
}
