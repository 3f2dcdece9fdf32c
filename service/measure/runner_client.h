/* measure/runner_client — one ktune-runner child process (service/runner/PROTOCOL.md): spawned with
 * pipes in its own process group (its stderr is ktuned's, every other descriptor closed, killed by
 * the kernel if the thread that started it ends), one JSON request written and its reply awaited
 * with a deadline; a runner that overruns is killed, one that dies is reaped, and the next call
 * starts a fresh one. While it waits the client asks a stop check (runner_client_set_stop) every
 * RUNNER_STOP_POLL_MS: when it says stop (the trial's job was cancelled) the runner's process group
 * is killed at once.
 *
 * Lifecycle: runner_client_new -> runner_client_call* -> runner_client_free (stops the process).
 * One client per thread; the thread that starts the runner must outlive it. */
#ifndef KT_MEASURE_RUNNER_CLIENT_H
#define KT_MEASURE_RUNNER_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/error.h"

#define RUNNER_MAX_LINE (4 << 20) /* longest reply line accepted */

typedef struct runner_client runner_client;

typedef struct runner_spawn {
    const char *path;          /* the ktune-runner binary */
    const char *device;        /* "cpu", "cuda:0" */
    const char *cache_dir;     /* --cache-dir */
    int cpu_core;              /* --cpu-core, or -1 for none */
    long long cache_max_bytes; /* --cache-max-bytes: 0 the runner's default, -1 unbounded */
} runner_spawn;

typedef enum { RUNNER_REPLY = 0, RUNNER_DEADLINE, RUNNER_DIED, RUNNER_STOPPED } runner_outcome;

/* How often a waiting call asks the stop check. */
#define RUNNER_STOP_POLL_MS 100

/* A stop check: returns non-zero when the call under way should be given up (its result is no
 * longer wanted). Called on the calling thread only, while waiting, at most every
 * RUNNER_STOP_POLL_MS; it must be quick (it may do one cheap query now and then). */
typedef int (*runner_stop_fn)(void *arg);

/* How a call ended. */
typedef struct runner_end {
    double waited_s; /* from the start of the call to the reply, the deadline or the death */
    int signal;      /* RUNNER_DIED: the signal that ended the runner, else 0 */
    int exit_code;   /* RUNNER_DIED: its exit code when it exited, else -1 */
} runner_end;

/* Copies the options; starts nothing. */
runner_client *runner_client_new(const runner_spawn *opt, kt_error *err);
int runner_client_running(const runner_client *r);
/* The kernel version whose own uid the runner takes (--version-uid: a submitted kernel, issue 27),
 * or NULL for the shared runner user; a runner running with another one is stopped first, so the
 * next call starts one as this uid. Copies version (at most 64 characters). */
void runner_client_set_version_uid(runner_client *r, const char *version);
/* Starts the process if it is not running. Errors: KT_ERR_MEASURE (cannot be executed). */
int runner_client_start(runner_client *r, kt_error *err);
/* A runner ready for the next call: one that ended while idle is reaped and a new one started, as
 * runner_client_call does first. Its pid (its process group), or -1 with err as
 * runner_client_start. (issue 32: the pid the measuring core's reservation moves while the runner
 * compiles apart.) */
pid_t runner_client_ready(runner_client *r, kt_error *err);
/* Sets (or, with fn NULL, clears) the stop check of the following calls; arg is borrowed and must
 * stay valid while calls use it. */
void runner_client_set_stop(runner_client *r, runner_stop_fn fn, void *arg);
/* Starts the runner if needed, sets request's "id", writes it and waits at most timeout_s for the
 * reply with that id. Returns the outcome: RUNNER_REPLY with *reply set (new reference);
 * RUNNER_DEADLINE (the runner was killed) or RUNNER_DIED (it ended; reaped) with end filled, after
 * which the next call starts a new runner; RUNNER_STOPPED when the stop check said stop (asked once
 * before the request is written, then while waiting): a runner working on the request had its
 * process group killed and was reaped (one asked before the request stays), end->waited_s is
 * filled. -1 with err set when the runner cannot be started or broke the protocol (it is then
 * killed). */
int runner_client_call(runner_client *r, json_t *request, double timeout_s, json_t **reply,
                       runner_end *end, kt_error *err);
/* SIGKILL to the runner's process group, and reap; nothing when not running. */
void runner_client_kill(runner_client *r);
/* Closes the runner's stdin, waits up to grace_s for it to exit, then kills it. */
void runner_client_stop(runner_client *r, double grace_s);
void runner_client_free(runner_client *r);

/* "SIGSEGV" for 11; "SIG<n>" for signals without a name here. */
const char *runner_signal_name(int sig, char *buf, size_t cap);

#endif
