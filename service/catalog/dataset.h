/* catalog/dataset — one replay dataset: a Kernel Tuner cache file (plain or gzipped JSON) loaded
 * into its space and a table of recorded results, one record per recorded configuration valid in
 * the space, in config id order. The catalog holds one per `replay:<space>` device
 * (catalog_find_replay); `ktune bench` loads files directly. Read-only after dataset_load, so
 * shared by all threads; the dataset owns its space and records.
 *
 * Lifecycle: dataset_load -> dataset_* accessors (any thread) -> dataset_free (by whoever loaded
 * it; the catalog frees its own in catalog_free). */
#ifndef KT_CATALOG_DATASET_H
#define KT_CATALOG_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "core/trial.h"
#include "space/space.h"

#define REPLAY_MAX_NAME 128 /* dataset (space) name length */

/* One cache record, reduced to what a trial needs. */
typedef struct replay_record {
    config_id id;
    uint64_t seq; /* position in the file, to keep the first of duplicate configurations */
    trial_status status;
    int repeats;
    double time_ms, compile_ms, measure_ms, noise_cv;
    int time_kind;   /* REPLAY_TIME_* : how "time" was recorded */
    char *time_text; /* the failure string (capped), when time_kind == REPLAY_TIME_STRING */
} replay_record;

enum { REPLAY_TIME_ABSENT = 0, REPLAY_TIME_NUMBER, REPLAY_TIME_STRING, REPLAY_TIME_OTHER };

typedef struct replay_dataset replay_dataset;

/* Loads one Kernel Tuner cache file. fallback_name names the dataset when the file has no `space`
 * key. Returns NULL with a reason in why (for the log) when the file cannot be used. */
replay_dataset *dataset_load(const char *path, const char *fallback_name, char *why,
                             size_t why_cap);
void dataset_free(replay_dataset *ds);

/* "convolution_milo-A4000": the `space` key or the file name. */
const char *dataset_name(const replay_dataset *ds);
/* "replay:convolution_milo-A4000". */
const char *dataset_device(const replay_dataset *ds);
/* The dataset's space (owned by the dataset). */
const space *dataset_space(const replay_dataset *ds);
/* Records kept: the recorded configurations valid in the space. */
uint64_t dataset_num_records(const replay_dataset *ds);
/* The i-th record in config id order (i < dataset_num_records), or NULL. */
const replay_record *dataset_record_at(const replay_dataset *ds, uint64_t i);
/* The record of id, or NULL when the configuration was not recorded. */
const replay_record *dataset_record(const replay_dataset *ds, config_id id);

#endif
