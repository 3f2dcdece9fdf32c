/* runner/seccomp — the runner's syscall filter (runner_seccomp in sandbox.h): a classic BPF
 * program over seccomp_data, built here without libseccomp. Denied calls fail with EPERM (clone3
 * with ENOSYS), so that a kernel sees an error, not a death, and the runner goes on; a syscall of
 * another architecture (x32, i386 on x86_64) kills the process, as those bypass the numbers below.
 * The compiler the runner starts inherits the filter: none of what cc needs is in the list. */
#include "runner/sandbox.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define RUNNER_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define RUNNER_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#if defined(__SANITIZE_ADDRESS__)
#define RUNNER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUNNER_SANITIZER 1
#endif
#endif

#define RUNNER_FILTER_MAX 128

#ifdef RUNNER_AUDIT_ARCH
/* Denied outright (EPERM). Each name only where this architecture has it. */
static const long denied[] = {
#if !defined(RUNNER_SANITIZER)
    SYS_ptrace, /* LeakSanitizer stops the world with it */
#endif
    SYS_process_vm_readv,
    SYS_process_vm_writev,
    SYS_mount,
    SYS_umount2,
    SYS_pivot_root,
    SYS_chroot,
    SYS_unshare,
    SYS_setns,
    SYS_kexec_load,
    SYS_bpf,
    SYS_perf_event_open,
    SYS_keyctl,
    SYS_add_key,
    SYS_request_key,
    SYS_userfaultfd,
    SYS_init_module,
    SYS_finit_module,
    SYS_delete_module,
    SYS_open_by_handle_at,
    SYS_name_to_handle_at,
#ifdef SYS_kexec_file_load
    SYS_kexec_file_load,
#endif
#ifdef SYS_io_uring_setup
    SYS_io_uring_setup,
    SYS_io_uring_enter,
    SYS_io_uring_register, /* sockets without socket() */
#endif
#ifdef SYS_fsopen
    SYS_fsopen,
    SYS_fsconfig,
    SYS_fsmount,
    SYS_move_mount,
    SYS_open_tree,
    SYS_fspick,
#endif
#ifdef SYS_mount_setattr
    SYS_mount_setattr,
#endif
};

#define ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))
#define ALLOW    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define LOAD(f)  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, f))
/* Low 32 bits of argument 0 (little-endian). */
#define LOAD_ARG0 BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, args))

/* The program into f; its length. */
static unsigned short build(struct sock_filter *f)
{
    unsigned short n = 0;
    const unsigned namespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
    f[n++] = (struct sock_filter)LOAD(arch);
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RUNNER_AUDIT_ARCH, 1, 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f[n++] = (struct sock_filter)LOAD(nr);
#if defined(__x86_64__)
    /* x32 numbers reach the same calls under other numbers */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    f[n++] = (struct sock_filter)ERRNO(EPERM);
#endif
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)denied[i], 0, 1);
        f[n++] = (struct sock_filter)ERRNO(EPERM);
    }
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)SYS_clone3, 0, 1);
    f[n++] = (struct sock_filter)ERRNO(ENOSYS);
    /* clone: no new namespace (a user namespace would give the kernel root inside it) */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)SYS_clone, 0, 4);
    f[n++] = (struct sock_filter)LOAD_ARG0;
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, namespaces, 0, 1);
    f[n++] = (struct sock_filter)ERRNO(EPERM);
    f[n++] = (struct sock_filter)ALLOW;
    /* socket: AF_UNIX only (no network of any kind, no netlink); the last test, so that a
     * call that is not socket() jumps straight to the final ALLOW */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)SYS_socket, 0, 3);
    f[n++] = (struct sock_filter)LOAD_ARG0;
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0);
    f[n++] = (struct sock_filter)ERRNO(EPERM);
    f[n++] = (struct sock_filter)ALLOW;
    return n;
}
#endif

void runner_seccomp(runner_sandbox *sb)
{
#ifdef RUNNER_AUDIT_ARCH
    struct sock_filter f[RUNNER_FILTER_MAX];
    struct sock_fprog prog = {.len = build(f), .filter = f};
    /* TSYNC: every thread (OpenBLAS's pool starts before main) gets it, not only this one. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0 &&
        (errno != ENOSYS || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)) {
        runner_sandbox_note(sb, "no seccomp filter (%s)", strerror(errno));
        return;
    }
    sb->seccomp = 1;
#else
    runner_sandbox_note(sb, "no seccomp filter: not built for this architecture");
#endif
}
