/* runner/sandbox — what confines a kernel beyond its user (issue 27: submitted kernels are
 * untrusted code). A root-started runner takes namespaces of its own before it drops root:
 *   - network: only a loopback, down (no network at all);
 *   - ipc: SysV IPC and POSIX message queues of its own;
 *   - mount: a private mount table; for a runner of a submitted version (a uid of its own) a
 *     private tmpfs on /tmp and /dev/shm (the compile cache bound back in when it lies in /tmp),
 *     so that nothing it writes there is seen by another runner;
 *   - pid: the runner serves as pid 2 under an init of its own (pid 1), so every process a kernel
 *     starts, one that left the runner's process group (setsid) included, dies with the runner, and
 *     no other runner of the host is visible (/proc is that namespace's);
 * and, root or not, a CPU runner installs a seccomp filter before any request (runner_seccomp).
 * Every piece the machine refuses is skipped with a note (stderr and the probe reply's
 * "sandbox"), never a failure of the runner.
 *
 * Call order (runner_harden does it): runner_sandbox_network, [root-only steps in privileges.c],
 * runner_sandbox_mounts, runner_sandbox_pid (returns only in the process that serves requests),
 * then the uid switch and rlimits, then runner_seccomp last. */
#ifndef KT_RUNNER_SANDBOX_H
#define KT_RUNNER_SANDBOX_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#define RUNNER_TMP_BYTES (512LL << 20) /* private /tmp of a submitted version's runner */
#define RUNNER_SHM_BYTES (256LL << 20) /* private /dev/shm */

/* What is in force (1) or not (0), filled as the steps run; notes say why something is not. */
typedef struct runner_sandbox {
    int own_uid;          /* a uid of the submitted version's own (--version-uid) */
    long long uid;        /* the uid it runs as */
    int network_ns;       /* a network namespace of its own */
    int mount_ns;         /* a private mount table */
    int ipc_ns;           /* SysV IPC and POSIX message queues of its own */
    int private_tmp;      /* a tmpfs of its own on /tmp and /dev/shm */
    int pid_ns;           /* under an init of its own */
    int seccomp;          /* the syscall filter */
    char interfaces[256]; /* the network interfaces it sees, comma-separated (read before the
                           * filter, which refuses the netlink socket that lists them) */
    char notes[1024];     /* "; "-separated reasons of what is not in force */
} runner_sandbox;

/* Appends a note (and writes it on stderr, "ktune-runner: ..."). */
void runner_sandbox_note(runner_sandbox *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Root: unshare(CLONE_NEWNET). */
void runner_sandbox_network(runner_sandbox *sb);
/* Root: unshare(CLONE_NEWIPC) (no SysV shared memory, semaphore or message queue shared with
 * another runner) and unshare(CLONE_NEWNS), the mount table made private; with private_tmp, tmpfs
 * on /tmp and /dev/shm, the folder cache_dir bound back in when it lies under /tmp. */
void runner_sandbox_mounts(runner_sandbox *sb, int private_tmp, const char *cache_dir);
/* Root: unshare(CLONE_NEWPID) and fork the namespace's init, which mounts the namespace's /proc
 * (when the mount table is private), switches to uid/gid and forks the process that returns. The
 * process that called never returns: it switches to uid/gid too, waits for the init and ends as it
 * ended (the runner's exit status or signal, so that ktuned sees a crash as before). -1 with msg
 * when the fork fails (the runner must then not go on: its next child would be the init). */
int runner_sandbox_pid(runner_sandbox *sb, uid_t uid, gid_t gid, char *msg, size_t size);
/* Installs the syscall filter on every thread (runner/seccomp.c): ptrace (not in a sanitizer
 * build: LeakSanitizer needs it), process_vm_readv/writev, mount and the new mount API,
 * pivot_root, chroot, unshare, setns, clone with a namespace flag, kexec, bpf, perf_event_open,
 * keyctl, add_key, request_key, io_uring, userfaultfd, modules, open_by_handle_at, sockets other
 * than AF_UNIX: EPERM (clone3: ENOSYS, so that libc falls back to clone). Needs
 * PR_SET_NO_NEW_PRIVS first. Not in force: a note. */
void runner_seccomp(runner_sandbox *sb);
/* {"own_uid", "network_namespace", "ipc_namespace", "mount_namespace", "private_tmp",
 * "pid_namespace", "seccomp", "notes": [..]}. New reference. */
json_t *runner_sandbox_json(const runner_sandbox *sb);

#endif
