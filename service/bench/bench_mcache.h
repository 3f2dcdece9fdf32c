/* bench/bench_mcache — the measurement cache of `ktune bench --device`: every configuration
 * measured on a real device, kept so that other strategies and seeds (which often propose the same
 * configurations) replay it instead of measuring it again, and so that a killed experiment resumes
 * where it stopped. In memory always; with a file, also a JSON-lines file appended and flushed
 * (fsync) after every measurement:
 *
 *   {"ktune_measure_cache":1,"kernel","kernel_hash","device","device_class","problem":{...},
 *    "measure":{...},"host","created"}                              <- the header, first line
 *   {"config":{...},"status","time_ms","repeats","noise_cv","compile_ms","measure_ms","extras",
 *    "measured_at"}                                                  <- one line per configuration
 *
 * What a line keeps is what the measurement found, not a verdict of the run that made it (issue 30,
 * bench_cutoff.h): a completed measurement's time, or a cut-off with the limit it was cut at
 * (extras.call_limit_s / deadline_s). bench_mcache_get_for judges an entry by the asking run's own
 * limits and answers "measure it again" for an entry cut off below them; bench_mcache_put then
 * appends the new result, which replaces the cut-off entry (a completed measurement, or a cut-off
 * at a larger limit), and a file read back keeps the same entry (later lines supersede on the same
 * rule). Otherwise the first measurement of a configuration stays.
 *
 * The header's identity (every field of the identity object given to bench_mcache_open: kernel,
 * its source hash, device, device class (the CPU model) and problem) must match, so a file from
 * another problem, kernel version or machine is refused; a different "measure" object (repeats,
 * timeouts) only warns. A torn last line (a process killed mid-write) is cut off; other lines that
 * do not parse are skipped and counted. The file is locked (flock) while open: one bench per file.
 *
 * Lifecycle: bench_mcache_open -> bench_mcache_get / bench_mcache_put -> bench_mcache_free. The
 * space must outlive the cache; results filled by get are the caller's (trial_result_release). */
#ifndef KT_BENCH_MCACHE_H
#define KT_BENCH_MCACHE_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"
#include "core/trial.h"
#include "space/space.h"
#include "bench/bench_cutoff.h"

#define BENCH_MCACHE_MAX_LINE    (1 << 20) /* longest line read back */
#define BENCH_MCACHE_MAX_ENTRIES 10000000  /* entries one file may hold */

typedef struct bench_mcache bench_mcache;

typedef struct bench_mcache_stats {
    long long loaded;     /* entries read from the file at open */
    long long skipped;    /* lines that did not parse or name no configuration of the space */
    long long hits;       /* gets answered */
    long long stored;     /* puts that added or replaced an entry */
    long long renewed;    /* of the loaded and stored, entries that replaced a cut-off entry */
    long long cut_by_run; /* gets answered with a timeout that the run's own limit gave */
} bench_mcache_stats;

/* path: the file (created with the header when missing or empty), or NULL for memory only.
 * identity: object of the fields that must match (copied into a new file's header); measure:
 * object recorded in the header and compared with a warning only. Errors: KT_ERR_CONFLICT (another
 * identity: the message names the field and both values; or the file is locked by another
 * process), KT_ERR_CONFIG (not a measure cache), KT_ERR_IO. */
bench_mcache *bench_mcache_open(const char *path, const space *sp, const json_t *identity,
                                const json_t *measure, kt_error *err);
/* 1 with out filled (a copy of the entry as kept) when id was measured, else 0 (out untouched). */
int bench_mcache_get(bench_mcache *m, config_id id, trial_result *out);
/* The entry of id as a run with the limits *run sees it (bench_cutoff_verdict): 1 with out filled
 * (the caller releases it), 0 (out untouched) when id was not measured or was cut off below the
 * run's limits: the run measures it and puts the result. */
int bench_mcache_get_for(bench_mcache *m, config_id id, const bench_cutoff *run, trial_result *out);
/* Records a final result of id when id has no entry, or its entry was cut off and r supersedes it
 * (bench_cutoff_supersedes; else the first measurement stays), and then, with a file, appends it
 * and flushes it to disk. Returns 0, or -1 with err set (KT_ERR_IO, KT_ERR_NO_MEMORY). */
int bench_mcache_put(bench_mcache *m, config_id id, const trial_result *r, kt_error *err);
bench_mcache_stats bench_mcache_get_stats(const bench_mcache *m);
void bench_mcache_free(bench_mcache *m);

#endif
