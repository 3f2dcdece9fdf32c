/* runner/privileges — what a kernel may do (issue #11): ktune-runner never runs kernels as root.
 * At start, runner_harden moves a root runner into a network namespace of its own (no network:
 * only a loopback that is down) and switches it to an unprivileged user (KTUNE_RUNNER_USER or
 * --user, default `nobody`, a process cap for that user), after handing it the compile cache
 * folder, and in every case sets
 * PR_SET_NO_NEW_PRIVS and the resource limits below; before each measure, runner_cpu_budget bounds
 * the CPU time the request may use. runner_process_json reports all of it (in the probe reply), so
 * that ktuned and the tests can check it. */
#ifndef KT_RUNNER_PRIVILEGES_H
#define KT_RUNNER_PRIVILEGES_H

#include <jansson.h>
#include <stddef.h>

#define RUNNER_DEFAULT_USER "nobody"
#define RUNNER_NOFILE       1024        /* open files */
#define RUNNER_FSIZE_BYTES  (1LL << 30) /* largest file a kernel or the compiler writes */
/* Processes and threads of the runner's user (root-started runners), all its runners together:
 * 64 per CPU (BLAS and driver threads of every runner count), at least this. */
#define RUNNER_NPROC_MIN 1024
/* CPU device: RLIMIT_AS = the address space held at start + the RAM, at least this much. */
#define RUNNER_AS_MIN_BYTES  (4LL << 30)
#define RUNNER_CPU_DEFAULT_S 600 /* CPU seconds per request without its timeouts */

/* user: NULL or "" = RUNNER_DEFAULT_USER; only used when the effective uid is 0. cuda: the device
 * is a GPU (no address-space limit: the CUDA driver reserves far more than it uses). Returns 0, or
 * -1 with why in msg (the runner then exits: it must not measure as root). */
int runner_harden(const char *user, const char *cache_dir, int cuda, char *msg, size_t size);
/* RLIMIT_CPU's soft limit = CPU time used so far + seconds (SIGXCPU ends the runner past it; the
 * backend records the trial and starts another runner). */
void runner_cpu_budget(double seconds);
/* {"uid","gid","euid","groups","no_new_privs","network_interfaces":[names],
 *  "rlimits":{"cpu","as","nofile","fsize","core","nproc"}}: limits as soft values, -1 for
 * unlimited. New reference. */
json_t *runner_process_json(void);

#endif
