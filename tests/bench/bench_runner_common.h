/* What the runner benches (bench_runner_gemm.c, bench_runner_conv2d.c) share: the one-core FMA
 * peak, a ktune-runner child spoken to over its stdin/stdout (one JSON line a request, one a
 * reply), one measure request's round trip, and the set-up of main (pinning, the evaluation count
 * from the environment, the CPU line). Linked into each tests/bench/bench_runner_*.c executable
 * (CMakeLists.txt); not a bench program itself.
 *
 * Call order: core = brc_pin_core(); evals = brc_env_evals(...); brc_print_cpu(...);
 * brc_fma_peak(...) (once to warm the clock up, then for the figure); brc_runner_open(&p, core,
 * kernel); then any number of brc_measure_call / brc_runner_call; brc_runner_close(&p, 0) at the
 * end. The runner_proc owns its child and its reply buffer: brc_runner_close frees both (also after
 * a failed brc_runner_open, which leaves nothing to free). Nothing here is thread-safe. */
#ifndef KT_BENCH_RUNNER_COMMON_H
#define KT_BENCH_RUNNER_COMMON_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "runner/runner.h"
#include "search/searcher.h"

#define BRC_REPLY_MAX (1 << 20) /* the longest reply line the runner may send */

/* A ktune-runner child: pid, the pipe ends (to = -1 while none runs), the reply buffer (owned,
 * BRC_REPLY_MAX bytes, len of it filled), the core it is pinned to and its kernel cache folder. */
typedef struct runner_proc {
    pid_t pid;
    int to, from;
    char *buf;
    size_t len;
    int core;
    char cache[512];
} runner_proc;

/* The repeat and time limits of one measure request. */
typedef struct measure_opts {
    int min_repeats, max_repeats;
    double min_seconds, max_seconds;
} measure_opts;

/* GFLOP/s of a register-only FMA loop at the widest vector width this CPU has, the best of several
 * ~0.3 s runs; *what names the path (a static string). */
double brc_fma_peak(const char **what);

/* qsort comparator of doubles, ascending. */
int brc_cmp_double(const void *a, const void *b);

/* n floats in [-1, 1) from the LCG state (64-byte aligned; the caller frees); NULL without memory.
 */
float *brc_random_floats(long n, unsigned *state);

/* Pins this process to core 1 (0 on a one-core machine), printing a line when it cannot; returns
 * the core. */
int brc_pin_core(void);

/* The integer in environment variable name, in 1..max; def when unset, or when not such an integer
 * (then a line "name=value is not <what> (using def)" is printed). */
int brc_env_evals(const char *name, int def, long max, const char *what);

/* Prints the "CPU: ..." line (model, core, vector bits, caches). */
void brc_print_cpu(const cpu_info *ci, int core);

/* Fills *p for kernel's cache folder ($TMPDIR/ktune-bench-runner-<kernel>, created) and starts the
 * runner on core; 0, or -1 (a line printed, nothing left to free) when it cannot start. */
int brc_runner_open(runner_proc *p, int core, const char *kernel);

/* Stops the runner (force: SIGKILL first) and frees the reply buffer. */
void brc_runner_close(runner_proc *p, int force);

/* (Re)starts the runner child; 0 or -1. */
int brc_runner_start(runner_proc *p);

/* Closes the pipes and reaps the child (force: SIGKILL first); nothing when none runs. */
void brc_runner_stop(runner_proc *p, int force);

/* Sends req (borrowed; one line) and returns the reply object (the caller's), or NULL when the
 * runner died or did not answer within timeout_s (it is then killed; the caller restarts it). */
json_t *brc_runner_call(runner_proc *p, json_t *req, double timeout_s);

/* Sends the measure request req (stolen; NULL allowed: then 0) of a kernel doing flops per run,
 * starting the runner when none runs; returns GFLOP/s, 0 when not ok, with the reply's status (or
 * error, or "no reply") in status. A runner that did not answer is restarted for the next call. */
double brc_measure_call(runner_proc *p, json_t *req, double flops, double timeout_s, char *status,
                        size_t status_cap);

/* Fills *res (initialised here; the caller releases it) with one measurement of cfg for the
 * searcher: ok at flops / gf when gf > 0, else the status parsed (a runtime error when it is no
 * trial status), printing "  <cfg>: <status>". Returns 1 when ok, 0 when not. */
int brc_trial_result(trial_result *res, double gf, double flops, const char *status,
                     const json_t *cfg);

#endif
