/* measure/legality — the legality step before a measurement of a neural problem (issue 14): a
 * configuration that changes the network is judged by the Fisher Potential check
 * (catalog/catalog_neural.h); an illegal one ends as a trial of status illegal, counted, never
 * measured, and every judged trial carries its verdict in extras:
 *   {"transformation": "group", "fisher_ratio": r, "fisher": f, "fisher_original": f0,
 *    "legality_threshold": th, "legality_seconds": s, "legality_cached": bool,
 *    "network_params": the network's parameters with this layer transformed,
 *    "network_params_original": without}
 * The check runs in the measuring thread and is bounded (issue 26): the backend's stop check ends
 * it between images when the job is cancelled (the trial is then let go, nothing recorded), and
 * past the catalog's time limit it ends as a trial of status timeout, charged the seconds spent:
 *   {"reason": "the legality check (Fisher Potential) ran past its limit of 60 s",
 *    "legality_timeout_s": limit, "legality_seconds": s, "transformation": "group", "error": ...}
 */
#include "measure/backend_impl.h"

#include <stdio.h>

#include "core/log.h"

/* The verdict's members into extras (created when NULL). */
static void put_verdict(const catalog_neural_verdict *v, const target *t, trial_result *out)
{
    if (!out->extras)
        out->extras = json_object();
    if (!out->extras)
        return;
    json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:b, s:I, s:I}", "transformation",
                          v->describe, "fisher_ratio", v->v.ratio, "fisher", v->v.fisher,
                          "fisher_original", v->v.fisher_original, "legality_threshold",
                          t->neural->threshold, "legality_seconds", v->v.seconds, "legality_cached",
                          v->v.cached, "network_params", (json_int_t)v->params,
                          "network_params_original", (json_int_t)v->params_original);
    if (o)
        json_object_update(out->extras, o);
    json_decref(o);
}

int backend_legality(const catalog *c, const target *t, config_id id, const backend_stop *stop,
                     catalog_neural_verdict *v, trial_result *out)
{
    kt_error err;
    kt_error_clear(&err);
    trial_result_init(out);
    if (!t || !t->neural) {
        v->changes = 0;
        return 0;
    }
    int rc =
        catalog_neural_check(c, t, id, stop ? stop->fn : NULL, stop ? stop->arg : NULL, v, &err);
    if (rc == CATALOG_NEURAL_STOPPED) {
        log_info("legality check of configuration %llu stopped after %.2f s: %s",
                 (unsigned long long)id, v->v.seconds, err.message);
        return BACKEND_LEGALITY_STOPPED;
    }
    if (rc == CATALOG_NEURAL_TIMED_OUT) {
        double limit = catalog_neural_check_timeout_s(c);
        char reason[128];
        snprintf(reason, sizeof reason,
                 "the legality check (Fisher Potential) ran past its limit of %g s", limit);
        log_warn("legality check of configuration %llu (%s): %s (%.1f s)", (unsigned long long)id,
                 v->describe, reason, v->v.seconds);
        out->status = TRIAL_TIMEOUT;
        out->measure_ms = v->v.seconds * 1e3; /* what it cost: the job clock counts it */
        out->extras = json_pack("{s:s, s:f, s:f, s:s, s:s}", "reason", reason, "legality_timeout_s",
                                limit, "legality_seconds", v->v.seconds, "transformation",
                                v->describe, "error", err.message);
        return 1;
    }
    if (rc < 0) {
        /* Not the kernel's failure, but no trial may wait forever on a check that cannot run. */
        log_warn("legality check of configuration %llu failed: %s", (unsigned long long)id,
                 err.message);
        out->status = TRIAL_RUNTIME_ERROR;
        out->extras =
            json_pack("{s:s, s:s}", "reason", "the legality check failed", "error", err.message);
        return 1;
    }
    if (!v->changes || v->v.legal)
        return 0;
    out->status = TRIAL_ILLEGAL;
    out->measure_ms = v->v.seconds * 1e3; /* the check's cost: the job clock counts it */
    put_verdict(v, t, out);
    return 1;
}

void backend_legality_extras(const catalog_neural_verdict *v, const target *t, trial_result *out)
{
    put_verdict(v, t, out);
    out->measure_ms += v->v.seconds * 1e3;
}
