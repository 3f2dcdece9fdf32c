/* store/ask_store — leases and results of external jobs' trials (store/ask_store.h). */
#include "store/ask_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store_util.h"
#include "store/trial_store.h"

json_t *ask_store_lease(PGconn *c, long long job_id, int n, int lease_s, kt_error *err)
{
    store_num jid, lim, secs;
    const char *p[] = {store_ll(&jid, job_id), store_ll(&lim, n), store_ll(&secs, lease_s),
                       ASK_STORE_WORKER};
    /* One statement (sql/020's ktune_ask, planned once per session): the ask is recorded, and the
     * open trials (pending, or running past their lease: a lease that ran out is offered again
     * here, without waiting for any reaper) are leased in proposal order. Trials another ask is
     * leasing are skipped, never handed twice. */
    return store_result_json(
        db_exec_prepared(c, DB_PREPARED_ASK, "SELECT ktune_ask($1, $2, $3, $4)", 4, p, err),
        "no such job", err);
}

/* A number member of a told trial, left out when not finite (SQL NULL in ktune_tell). */
static void set_number(json_t *o, const char *name, double v)
{
    if (isfinite(v))
        json_object_set_new(o, name, json_real(v));
}

json_t *ask_store_tell(PGconn *c, long long job_id, const long long *ids, const trial_result *res,
                       int n, kt_error *err)
{
    json_t *out = NULL, *told = json_array();
    char *told_text = NULL;
    for (int i = 0; told && i < n; i++) {
        const trial_result *r = &res[i];
        int ok = r->status == TRIAL_OK && isfinite(r->time_ms);
        json_t *o = json_pack("{s:I, s:s, s:i, s:f, s:f, s:f}", "id", (json_int_t)ids[i], "status",
                              trial_status_name(r->status), "repeats", r->repeats, "compile_ms",
                              isfinite(r->compile_ms) ? r->compile_ms : 0.0, "measure_ms",
                              isfinite(r->measure_ms) ? r->measure_ms : 0.0, "charged",
                              trial_cost_seconds(r));
        if (!o || json_array_append_new(told, o) < 0) {
            json_decref(told);
            told = NULL;
            break;
        }
        if (ok)
            set_number(o, "time_ms", r->time_ms);
        set_number(o, "noise_cv", r->noise_cv);
        if (r->extras)
            json_object_set(o, "extras", r->extras);
    }
    if (!told || !(told_text = store_json_text(told))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    store_num jid;
    const char *p[] = {store_ll(&jid, job_id), ASK_STORE_WORKER, told_text};
    /* One round trip and one transaction for the whole tell (sql/020): the check, then every
     * trial's completion as trial_store_complete records a measured one. */
    out = store_result_json(
        db_exec_prepared(c, DB_PREPARED_TELL, "SELECT ktune_tell($1, $2, $3::jsonb)", 3, p, err),
        "no such job", err);
out:
    free(told_text);
    json_decref(told);
    return out;
}
