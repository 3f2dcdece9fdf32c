/* store/best_store — the best table: the best known configuration per (kernel, device class, kernel
 * hash, toolchain, problem). Offers are made inside the transaction that records a trial, so the
 * best table never names a trial that does not exist. */
#ifndef KT_STORE_BEST_STORE_H
#define KT_STORE_BEST_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"
#include "core/target_key.h"

typedef struct best_offer {
    target_key key; /* the best table's key is (kernel, device_class, kernel_hash, toolchain,
                     * problem_key) */
    const char *problem_json, *config_json;
    double time_ms;
    long long job_id, trial_id;
    int imported;         /* from POST /v1/imports: the entry's origin is 'imported' (sql/008) */
    int replace_measured; /* imported and allowed to replace a measured entry (admin asked) */
    int trusted;          /* imported by a trusted import job (import_store.h; implied by
                           * replace_measured): it ranks above an untrusted import */
} best_offer;

/* The columns a statement returns, in this order, for best_offer_of_job_row. */
#define BEST_JOB_KEY_COLUMNS                                                                       \
    "kernel, device_class, kernel_hash, problem_key, problem, device, toolchain"

/* The offer of trial trial_id of job job_id (time_ms, config_json: borrowed) keyed by the job's
 * row: its key and problem_json point into r's row (columns 0-6 as BEST_JOB_KEY_COLUMNS, owned by
 * r); imported and replace_measured are 0 (the caller sets them for imports). */
best_offer best_offer_of_job_row(const PGresult *r, int row, long long job_id, long long trial_id,
                                 double time_ms, const char *config_json);

/* Inserts, or replaces the entry: a measured offer replaces an imported entry always, and a
 * measured one when ktune_improves_best(time_ms, the entry's time_ms): strictly lower (sql/003; the
 * same condition as the job's own best, job_store_offer_best). An imported offer replaces a
 * measured entry only with replace_measured (and when it improves on it); between imports a
 * trusted one replaces an untrusted one always and never the reverse, and within the same trust
 * the offer must improve on the entry. So the entry of a key is its best measurement, else its
 * best trusted import, else its best untrusted import (unless an admin's replace_measured said
 * otherwise). A measured trial's completion makes the measured offer in SQL with the same rule
 * (sql/020's ktune_complete_trial): change them together. */
int best_store_offer(PGconn *c, const best_offer *o, kt_error *err);
/* Removes the entries naming job job_id and puts back, for each of their keys, the best remaining
 * trial of another job of that key (a measured one before any imported one, then the fastest,
 * the earliest on ties), if there is one. Call inside the transaction that removes the job's
 * trials, after removing them. */
int best_store_forget_job(PGconn *c, long long job_id, long long *removed, long long *restored,
                          kt_error *err);
/* {"kernel","device","device_class","kernel_hash","toolchain","problem","config","time_ms","job_id",
 * "trial_id","measured_at","source":"measured"|"imported","origin" (the
 * same),"provenance":{"repeats", "noise_cv","job_id","trial_id","measured_at"}} (the best trial
 * joined: repeats and noise_cv are null for imports that did not record them); KT_ERR_NO_BEST when
 * nothing is known for the whole key (its toolchain included: an entry measured under another
 * toolchain is not this key's), or, with measured_only (GET /v1/best?source=measured), when the
 * entry is an untrusted import's. */
json_t *best_store_get_json(PGconn *c, const target_key *key, int measured_only, kt_error *err);
/* The newest kernel_hash (version) with a best entry for (kernel, device_class, toolchain,
 * problem_key): the one whose newest job is the latest made (issue 27: GET /v1/best of an
 * external kernel that names no kernel_version); measured_only: only entries that are
 * measurements or a trusted import's. 1 with out (cap bytes) filled, 0 when none. */
int best_store_newest_version(PGconn *c, const char *kernel, const char *device_class,
                              const char *toolchain, const char *problem_key, int measured_only,
                              char *out, size_t cap, kt_error *err);
/* {"best":[...]} newest first (ties in key order, so pages are stable), optionally filtered by
 * kernel and/or device class; at most limit, after skipping offset entries (the paging of
 * GET /v1/best/entries and of `ktune best --all`). */
json_t *best_store_list_json(PGconn *c, const char *kernel, const char *device_class, int limit,
                             long long offset, kt_error *err);
/* {"problems":[{"problem","config","time_ms","job_id","trial_id","measured_at","origin"}...]}:
 * every problem of key's (kernel, device class, kernel hash, toolchain) — key.problem_key is
 * ignored — whose entry is a measurement or a trusted import's (origin "measured" | "imported"; an
 * untrusted import is no neighbour), by problem key, at most limit (the nearest-problem fallback of
 * GET /v1/best reads them). */
json_t *best_store_problems_json(PGconn *c, const target_key *key, int limit, kt_error *err);

#endif
