/* bench/offline/bench_space — the replay spaces of the offline harness: which cache files a list of
 * files and folders names, and one cache loaded as an explicit space with time and cost per id.
 *
 * Lifecycle: bench_space_load fills a bench_space (freeing it itself on failure) ->
 * bench_space_free. */
#ifndef KT_BENCH_SPACE_H
#define KT_BENCH_SPACE_H

#include <jansson.h>
#include <stdint.h>

#include "catalog/dataset.h"
#include "core/error.h"
#include "space/space.h"
#include "bench/bench_parse.h"

/* One replay space as the harness uses it: an explicit space and, per id, time and cost. */
typedef struct bench_space {
    char name[REPLAY_MAX_NAME + 1];
    char file[BENCH_MAX_PATH];
    space *sp;
    uint64_t n;     /* configurations in sp */
    uint64_t valid; /* with a numeric time */
    double *time;   /* ms, NAN for a failed configuration */
    double *cost_s; /* recorded compile + verification + benchmark seconds */
    double optimum;
} bench_space;

/* Expands files and folders (spaces[0..n_spaces-1]) into a JSON array of file paths (a folder: its
 * *.json and *.json.gz, sorted), at most BENCH_MAX_SPACES. New reference, NULL with err. */
json_t *bench_space_paths(const char *const *spaces, int n_spaces, kt_error *err);
/* Loads a cache and builds the explicit space of its valid (or, include_failed, all recorded)
 * configurations, with time and cost per id. 0, or -1 with err (bs freed). */
int bench_space_load(const char *path, int include_failed, bench_space *bs, kt_error *err);
void bench_space_free(bench_space *bs);

#endif
