/* store/history_store — the history queries of warm starts (see history_store.h). */
#include "store/history_store.h"

#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store_util.h"

void history_sources_release(history_sources *s)
{
    for (int i = 0; s->s && i < s->n; i++) {
        free(s->s[i].device_class);
        free(s->s[i].problem_key);
        json_decref(s->s[i].problem);
    }
    free(s->s);
    memset(s, 0, sizeof *s);
}

void history_trials_release(history_trials *t)
{
    for (int i = 0; t->t && i < t->n; i++)
        json_decref(t->t[i].config);
    free(t->t);
    memset(t, 0, sizeof *t);
}

int history_store_sources(PGconn *c, const char *kernel, const char *device_class,
                          const char *problem_key, history_sources *out, kt_error *err)
{
    int rc = -1;
    store_num lim;
    const char *p[] = {kernel, device_class, problem_key,
                       store_ll(&lim, HISTORY_MAX_SOURCES_LISTED)};
    memset(out, 0, sizeof *out);
    PGresult *r =
        db_exec(c,
                "SELECT j.device_class, j.problem_key, min(j.problem::text) FROM jobs j"
                " WHERE j.kernel = $1 AND NOT (j.device_class = $2 AND j.problem_key = $3)"
                " AND " STORE_MEASURED_JOB("j") /* an untrusted import seeds nothing */
                " AND EXISTS (SELECT 1 FROM trials t WHERE t.job_id = j.id AND t.status = 'ok'"
                " AND t.time_ms > 0) GROUP BY j.device_class, j.problem_key"
                " ORDER BY j.device_class, j.problem_key LIMIT $4",
                4, p, err);
    if (!r)
        goto out;
    int rows = PQntuples(r);
    out->s = calloc((size_t)rows + 1, sizeof *out->s);
    if (!out->s) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading the history of %s", kernel);
        goto out;
    }
    for (; out->n < rows; out->n++) {
        history_source *s = &out->s[out->n];
        s->device_class = strdup(PQgetvalue(r, out->n, 0));
        s->problem_key = strdup(PQgetvalue(r, out->n, 1));
        s->problem = store_get_json(r, out->n, 2);
        if (!s->device_class || !s->problem_key || !s->problem) {
            out->n++; /* released below with the others */
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading the history of %s", kernel);
            goto out;
        }
    }
    rc = 0;
out:
    if (rc < 0)
        history_sources_release(out);
    PQclear(r);
    return rc;
}

int history_store_source_trials(PGconn *c, const char *kernel, const char *device_class,
                                const char *problem_key, int limit, history_trials *out,
                                kt_error *err)
{
    int rc = -1;
    store_num lim;
    memset(out, 0, sizeof *out);
    if (limit < 1 || limit > HISTORY_MAX_TRIALS)
        return kt_error_set(err, KT_ERR_INTERNAL, "history limit %d is not in 1-%d", limit,
                            HISTORY_MAX_TRIALS);
    const char *p[] = {kernel, device_class, problem_key, store_ll(&lim, limit)};
    PGresult *r = db_exec(
        c,
        "SELECT t.config::text, min(t.time_ms) AS best FROM trials t JOIN jobs j ON j.id = t.job_id"
        " WHERE j.kernel = $1 AND j.device_class = $2 AND j.problem_key = $3 AND t.status = 'ok'"
        " AND t.time_ms > 0 AND " STORE_MEASURED_JOB(
            "j") " GROUP BY t.config::text ORDER BY best, t.config::text LIMIT $4",
        4, p, err);
    if (!r)
        goto out;
    int rows = PQntuples(r);
    out->t = calloc((size_t)rows + 1, sizeof *out->t);
    if (!out->t) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading the history of %s", kernel);
        goto out;
    }
    for (int i = 0; i < rows; i++) {
        json_t *cfg = store_get_json(r, i, 0);
        if (!json_is_object(cfg)) { /* stored configurations are objects: skip anything else */
            json_decref(cfg);
            continue;
        }
        out->t[out->n].config = cfg;
        out->t[out->n].time_ms = store_get_double(r, i, 1);
        out->n++;
    }
    rc = 0;
out:
    if (rc < 0)
        history_trials_release(out);
    PQclear(r);
    return rc;
}
