/* store/history_store — what the database knows about a kernel that a new job can start from
 * (warm starts, issue #10 section 4): the (device class, problem) pairs the kernel was tuned on,
 * and per pair its fastest distinct ok configurations. History is matched by kernel name only
 * (not the kernel hash: a changed source still has related results); the caller maps
 * configurations into its space by parameter names and values (worker/warm_start.c). Only trials
 * that count as measurements are history: a tuning job's and a trusted import's, never an
 * untrusted import's (STORE_MEASURED_JOB in store_util.h; issue 26).
 *
 * Call order: history_store_sources, then history_store_source_trials for the pairs chosen.
 * Both return -1 with err on failure; results are owned by the caller (history_*_release). */
#ifndef KT_STORE_HISTORY_STORE_H
#define KT_STORE_HISTORY_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"

#define HISTORY_MAX_SOURCES_LISTED 256  /* pairs history_store_sources returns at most */
#define HISTORY_MAX_TRIALS         5000 /* rows history_store_source_trials returns at most */

typedef struct history_source {
    char *device_class, *problem_key;
    json_t *problem;
} history_source;

typedef struct history_sources {
    history_source *s;
    int n;
} history_sources;

typedef struct history_trial {
    json_t *config; /* {"param": value}, as stored with the trial */
    double time_ms; /* the lowest ok time of that configuration in the pair */
} history_trial;

typedef struct history_trials {
    history_trial *t;
    int n;
} history_trials;

/* The (device class, problem) pairs with at least one ok trial of kernel, except (device_class,
 * problem_key) itself, in (device class, problem key) order, at most HISTORY_MAX_SOURCES_LISTED. */
int history_store_sources(PGconn *c, const char *kernel, const char *device_class,
                          const char *problem_key, history_sources *out, kt_error *err);
void history_sources_release(history_sources *s);

/* The distinct ok configurations of kernel measured on (device_class, problem_key), fastest first
 * (ties by configuration text), at most limit (1..HISTORY_MAX_TRIALS). */
int history_store_source_trials(PGconn *c, const char *kernel, const char *device_class,
                                const char *problem_key, int limit, history_trials *out,
                                kt_error *err);
void history_trials_release(history_trials *t);

#endif
