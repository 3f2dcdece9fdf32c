/* runner/privileges — what a kernel may do (issue #11): ktune-runner never runs kernels as root.
 * At start, runner_harden puts a root runner into namespaces of its own (runner/sandbox.h: no
 * network, a private mount table, a pid namespace under an init of its own) and switches it to an
 * unprivileged user, a process cap for that user: the shared runner user (KTUNE_RUNNER_USER or
 * --user, default `nobody`), after handing it the compile cache folder, or for a submitted
 * version's runner (--version-uid) a uid of that version's own with a cache folder of its own and
 * a private /tmp. In every case it sets PR_SET_NO_NEW_PRIVS, not dumpable, the resource limits
 * below and (CPU runners) the seccomp filter; before each measure, runner_cpu_budget bounds the CPU
 * time the request may use. runner_process_json reports all of it (in the probe reply), so that
 * ktuned and the tests can check it. */
#ifndef KT_RUNNER_PRIVILEGES_H
#define KT_RUNNER_PRIVILEGES_H

#include <jansson.h>
#include <stddef.h>

#include "runner/sandbox.h"

#define RUNNER_DEFAULT_USER "nobody"
#define RUNNER_NOFILE       1024        /* open files */
#define RUNNER_FSIZE_BYTES  (1LL << 30) /* largest file a kernel or the compiler writes */
/* Processes and threads of the runner's user (root-started runners), all its runners together:
 * 64 per CPU (BLAS and driver threads of every runner count), at least this. */
#define RUNNER_NPROC_MIN 1024
/* CPU device: RLIMIT_AS = the address space held at start + the RAM, at least this much. */
#define RUNNER_AS_MIN_BYTES  (4LL << 30)
#define RUNNER_CPU_DEFAULT_S 600 /* CPU seconds per request without its timeouts */
/* A submitted version's uid: KTUNE_RUNNER_UID_BASE + FNV-1a(version) mod KTUNE_RUNNER_UIDS
 * (ktuned's --runner-uid-base, --runner-uids). Unnamed uids (no /etc/passwd entry needed) below
 * 2^31, above the ranges systems give users and containers' subordinate ids usually take. */
#define RUNNER_UID_BASE 2000000000ULL
#define RUNNER_UIDS     100000000ULL

/* user: NULL or "" = RUNNER_DEFAULT_USER; version: NULL, or a submitted version (its own uid);
 * both only used when the effective uid is 0. cache_dir (cap bytes) becomes the version's own
 * folder <cache_dir>-users/<uid>/ then. cuda: the device is a GPU (no address-space limit: the
 * CUDA driver reserves far more than it uses; no seccomp filter). sb: what is in force. Root: this
 * returns only in the process that serves requests (runner_sandbox_pid). Returns 0, or -1 with why
 * in msg (the runner then exits: it must not measure as root). */
int runner_harden(const char *user, const char *version, char *cache_dir, size_t cap, int cuda,
                  runner_sandbox *sb, char *msg, size_t size);
/* RLIMIT_CPU's soft limit = CPU time used so far + seconds (SIGXCPU ends the runner past it; the
 * backend records the trial and starts another runner). */
void runner_cpu_budget(double seconds);
/* {"uid","gid","euid","groups","no_new_privs","dumpable","network_interfaces":[names],
 *  "rlimits":{"cpu","as","nofile","fsize","core","nproc"}, "sandbox": runner_sandbox_json}: limits
 * as soft values, -1 for unlimited. New reference. */
json_t *runner_process_json(const runner_sandbox *sb);

#endif
