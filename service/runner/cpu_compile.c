/* Compiling CPU kernels and references into the binary cache: `<cache-dir>/<hash>.so`, the hash
 * (FNV-1a 64) over a kind tag, the compiler's version line, the host CPU (model and isa:
 * -march=native depends on it), the flags, the sorted defines and the source bytes. A kernel
 * compile includes its source's precompiled prelude where there is one (cpu_prelude.c): the same
 * object, parsed faster, so not in the key. A binary is
 * compiled to a temporary name and renamed into place, so runners sharing a cache never see a
 * partial file; a hit touches the binary (LRU: the request that stored one then keeps the folder
 * within its bound, cpu_cache.c). The compiler runs with fork/execvp (no shell) under a deadline
 * that kills its whole process group, and dies with the runner (PR_SET_PDEATHSIG): a runner killed
 * by ktuned (a cancel, a deadline) leaves no compiler behind. */
#include "core/hash.h"
#include "runner/runner.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/file.h"

#define CPU_COMPILER "cc"

/* the compile flags; -shared (the link) follows them in the command and in the binary's key */
static const char *const kernel_flags[] = {"-std=gnu11", "-O3", "-march=native", "-fPIC"};
static const char *const reference_flags[] = {"-std=gnu11", "-O2", "-fPIC"};
static const char *const link_flag = "-shared";
static const char *const openmp_flag = "-fopenmp";
/* with a precompiled prelude: GCC says in the log when it does not use the .gch (no effect on
 * the object; not in the key) */
static const char *const pch_warning = "-Winvalid-pch";
#define CPU_WRAPPER_MAX 16384 /* the generated call's C text */

/* Keeps the last `keep` bytes seen in acc. */
static void tail_append(char *acc, size_t *len, size_t keep, const char *data, size_t n)
{
    if (keep == 0)
        return;
    if (n >= keep) {
        memcpy(acc, data + n - keep, keep);
        *len = keep;
        return;
    }
    if (*len + n > keep) {
        size_t drop = *len + n - keep;
        memmove(acc, acc + drop, *len - drop);
        *len -= drop;
    }
    memcpy(acc + *len, data, n);
    *len += n;
}

/* In the child between fork and exec: async-signal-safe calls only. */
static void child_exec(char *const argv[], int devnull, int out_fd, pid_t parent)
{
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    signal(SIGPIPE, SIG_DFL);
    if (dup2(devnull, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        dup2(out_fd, STDERR_FILENO) < 0)
        _exit(127);
    execvp(argv[0], argv);
    static const char msg[] = "ktune-runner: cannot execute ";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    w = write(STDERR_FILENO, argv[0], strlen(argv[0]));
    w = write(STDERR_FILENO, "\n", 1);
    (void)w;
    _exit(127);
}

static double rusage_ms(const struct rusage *ru)
{
    return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000.0 +
           (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000.0;
}

int cpu_run_command(char *const argv[], double timeout_s, char *tail, size_t tail_cap, int *wstatus,
                    double *cpu_ms, kt_error *err)
{
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    int rc = -1, timed_out = 0, reaped = 0;
    int fds[2] = {-1, -1}, devnull = -1;
    size_t keep = tail_cap > 0 ? tail_cap - 1 : 0, len = 0;
    char chunk[4096];
    pid_t pid = -1;
    *wstatus = 0;
    if (tail_cap > 0)
        tail[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) < 0 || (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        kt_error_set(err, KT_ERR_IO, "cannot run %s: %s", argv[0], strerror(errno));
        goto out;
    }
    pid_t parent = getpid();
    pid = fork();
    if (pid < 0) {
        kt_error_set(err, KT_ERR_IO, "cannot run %s: fork: %s", argv[0], strerror(errno));
        goto out;
    }
    if (pid == 0)
        child_exec(argv, devnull, fds[1], parent);
    setpgid(pid, pid); /* also done by the child: whichever runs first wins the race */
    close(fds[1]);
    fds[1] = -1;
    double deadline = kt_clock_s() + timeout_s;
    for (;;) {
        double left = deadline - kt_clock_s();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(left * 1000.0) + 1);
        if (pr <= 0)
            continue; /* timeout or EINTR: the deadline check decides */
        ssize_t n = read(fds[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* end of output: the command is exiting */
        tail_append(tail, &len, keep, chunk, (size_t)n);
    }
    while (!timed_out) {
        pid_t w = wait4(pid, wstatus, WNOHANG, &ru);
        if (w == pid) {
            reaped = 1;
            break;
        }
        if (w < 0 && errno != EINTR)
            break;
        if (kt_clock_s() >= deadline) {
            timed_out = 1;
            break;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (!reaped) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (wait4(pid, wstatus, 0, &ru) < 0 && errno == EINTR)
            ;
    }
    if (tail_cap > 0)
        tail[len] = '\0';
    if (cpu_ms)
        *cpu_ms = rusage_ms(&ru);
    rc = timed_out ? 1 : 0;
out:
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    if (devnull >= 0)
        close(devnull);
    return rc;
}

/* extra: what a kernel build adds to the source (the generated call's text, "openmp"); NULL for
 * a plain build. */
typedef struct build_extra {
    const char *wrapper; /* the file compiled in place of the source (it includes it), or NULL */
    const char *wrapper_text;
    int openmp;
} build_extra;

uint64_t cpu_toolchain_hash(const runner *r, const char *tag, const char *const *flags,
                            size_t n_flags)
{
    uint64_t h = kt_fnv1a_field(KT_FNV1A_OFFSET, tag, strlen(tag));
    h = kt_fnv1a_field(h, r->cpu.compiler, strlen(r->cpu.compiler));
    h = kt_fnv1a_field(h, r->cpu.model, strlen(r->cpu.model));
    h = kt_fnv1a_field(h, r->cpu.isa, strlen(r->cpu.isa));
    for (size_t i = 0; i < n_flags; i++)
        h = kt_fnv1a_field(h, flags[i], strlen(flags[i]));
    return h;
}

static uint64_t binary_hash(const runner *r, const char *src, size_t src_len,
                            const runner_define *defines, int n_defines, int reference,
                            const build_extra *x)
{
    const char *tag = reference ? "ktune-cpu-reference-v1" : "ktune-cpu-kernel-v1";
    const char *const *flags = reference ? reference_flags : kernel_flags;
    size_t n_flags = reference ? sizeof reference_flags / sizeof *reference_flags
                               : sizeof kernel_flags / sizeof *kernel_flags;
    uint64_t h = cpu_toolchain_hash(r, tag, flags, n_flags);
    h = kt_fnv1a_field(h, link_flag, strlen(link_flag));
    for (int i = 0; i < n_defines; i++) {
        char def[RUNNER_NAME_MAX + 32];
        int n = snprintf(def, sizeof def, "%s=%lld", defines[i].name, defines[i].value);
        h = kt_fnv1a_field(h, def, (size_t)n);
    }
    if (x && x->wrapper_text)
        h = kt_fnv1a_field(h, x->wrapper_text, strlen(x->wrapper_text));
    if (x && x->openmp)
        h = kt_fnv1a_field(h, openmp_flag, strlen(openmp_flag));
    return kt_fnv1a_field(h, src, src_len);
}

/* Runs the compiler into a temporary file and renames it into out->path. */
static int compile_into_cache(const char *source, const runner_define *defines, int n_defines,
                              int reference, const build_extra *x, double timeout_s,
                              cpu_binary *out, kt_error *err)
{
    int rc = -1;
    char tmp[RUNNER_PATH_MAX + 64];
    char defs[RUNNER_MAX_DEFINES][RUNNER_NAME_MAX + 32];
    char *argv[16 + RUNNER_MAX_DEFINES];
    int argc = 0, ws = 0;
    struct timespec ts = kt_clock_wall();
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%ld", out->path, (long)getpid(), (long)ts.tv_nsec);
    argv[argc++] = (char *)CPU_COMPILER;
    const char *const *flags = reference ? reference_flags : kernel_flags;
    size_t n_flags = reference ? sizeof reference_flags / sizeof *reference_flags
                               : sizeof kernel_flags / sizeof *kernel_flags;
    for (size_t i = 0; i < n_flags; i++)
        argv[argc++] = (char *)flags[i];
    argv[argc++] = (char *)link_flag;
    if (x && x->openmp)
        argv[argc++] = (char *)openmp_flag;
    int pch = out->prelude.state == CPU_PRELUDE_MADE || out->prelude.state == CPU_PRELUDE_USED;
    if (pch) {
        argv[argc++] = (char *)pch_warning;
        argv[argc++] = (char *)"-include";
        argv[argc++] = out->prelude.header;
    }
    for (int i = 0; i < n_defines; i++) {
        snprintf(defs[i], sizeof defs[i], "-D%s=%lld", defines[i].name, defines[i].value);
        argv[argc++] = defs[i];
    }
    argv[argc++] = (char *)"-o";
    argv[argc++] = tmp;
    argv[argc++] = (char *)(x && x->wrapper ? x->wrapper : source);
    argv[argc] = NULL;
    double t0 = kt_clock_s(), cpu_ms = 0;
    int run = cpu_run_command(argv, timeout_s, out->log, sizeof out->log, &ws, &cpu_ms, err);
    /* the prelude's precompile, when this compile made it, is part of its cost */
    out->compile_ms = (kt_clock_s() - t0) * 1000.0 + out->prelude.ms;
    out->compile_cpu_ms = cpu_ms + out->prelude.cpu_ms;
    if (pch && strstr(out->log, "[-Winvalid-pch]"))
        out->prelude.state = CPU_PRELUDE_REFUSED;
    if (run < 0)
        goto out;
    if (run == 1) {
        out->status = CPU_BUILD_TIMEOUT;
        rc = 0;
        goto out;
    }
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        out->status = CPU_BUILD_FAILED;
        if (out->log[0] == '\0')
            snprintf(out->log, sizeof out->log, "%.512s: the compiler failed without output",
                     source);
        rc = 0;
        goto out;
    }
    if (rename(tmp, out->path) < 0) {
        kt_error_set(err, KT_ERR_IO, "cannot store %s in the cache: %s", out->path,
                     strerror(errno));
        goto out;
    }
    out->status = CPU_BUILD_OK;
    rc = 0;
out:
    unlink(tmp); /* gone after a successful rename; a leftover otherwise */
    return rc;
}

int cpu_write_file(const char *path, const char *text, kt_error *err)
{
    char tmp[RUNNER_PATH_MAX + 64];
    struct timespec ts = kt_clock_wall();
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%ld", path, (long)getpid(), (long)ts.tv_nsec);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return kt_error_set(err, KT_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    int ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return kt_error_set(err, KT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

static int build(const runner *r, const char *source, const runner_define *defines, int n_defines,
                 int reference, build_extra *x, double timeout_s, cpu_binary *out, kt_error *err)
{
    int rc = -1;
    char *src = NULL;
    size_t src_len = 0;
    char wrapper[RUNNER_PATH_MAX], file[RUNNER_PATH_MAX];
    memset(out, 0, sizeof *out);
    src = runner_sources_read(r->sources, source, RUNNER_MAX_SOURCE_BYTES, &src_len, err);
    if (!src) {
        kt_error_prefix(err, "kernel source");
        goto out;
    }
    uint64_t h = binary_hash(r, src, src_len, reference ? NULL : defines, reference ? 0 : n_defines,
                             reference, x);
    /* The path too: ktuned sends a content-addressed folder per kernel version (issue 27), so a
     * header the source includes, which these bytes do not show, is part of the key. */
    h = kt_fnv1a_field(h, source, strlen(source));
    snprintf(out->name, sizeof out->name, "%016llx.so", (unsigned long long)h);
    int n = snprintf(out->path, sizeof out->path, "%s/%s", r->cache_dir, out->name);
    if (n < 0 || (size_t)n >= sizeof out->path) {
        kt_error_set(err, KT_ERR_IO, "cache path for %s is too long", source);
        goto out;
    }
    if (access(out->path, R_OK) == 0) {
        cpu_cache_touch(out->path);
        out->cached = 1;
        out->status = CPU_BUILD_OK;
        rc = 0;
        goto out;
    }
    /* the file the compiler reads: the request's text in a transient folder (sources.c) */
    if (runner_sources_compile_path(r->sources, r->cache_dir, source, file, sizeof file, err) < 0)
        goto out;
    if (x && x->wrapper_text) {
        /* the generated call, <hash>.call.c beside the binary (beside the sources when the
         * request carries them: it includes the source by its base name), includes the source */
        const char *dir = r->sources && r->sources->files ? r->sources->dir : r->cache_dir;
        n = snprintf(wrapper, sizeof wrapper, "%s/%016llx.call.c", dir, (unsigned long long)h);
        if (n < 0 || (size_t)n >= sizeof wrapper) {
            kt_error_set(err, KT_ERR_IO, "cache path for %s is too long", source);
            goto out;
        }
        if (cpu_write_file(wrapper, x->wrapper_text, err) < 0)
            goto out;
        x->wrapper = wrapper;
    }
    if (!reference) {
        /* the kernel's leading system includes, precompiled once for every configuration
         * (cpu_prelude.c); the precompile's time comes out of this compile's timeout */
        char *pflags[sizeof kernel_flags / sizeof *kernel_flags + 1];
        int np = 0;
        for (size_t i = 0; i < sizeof kernel_flags / sizeof *kernel_flags; i++)
            pflags[np++] = (char *)kernel_flags[i];
        if (x && x->openmp)
            pflags[np++] = (char *)openmp_flag;
        cpu_prelude_prepare(r, src, src_len, pflags, np, timeout_s, &out->prelude);
        timeout_s -= out->prelude.ms / 1000.0;
    }
    rc = compile_into_cache(file, defines, reference ? 0 : n_defines, reference, x, timeout_s, out,
                            err);
    if (x && x->wrapper)
        unlink(x->wrapper);
out:
    free(src);
    return rc;
}

int cpu_build(const runner *r, const char *source, const runner_define *defines, int n_defines,
              int reference, double timeout_s, cpu_binary *out, kt_error *err)
{
    return build(r, source, defines, n_defines, reference, NULL, timeout_s, out, err);
}

int cpu_build_kernel(const runner *r, const runner_measure_req *q, const runner_define *defines,
                     int n_defines, cpu_binary *out, kt_error *err)
{
    char *text = NULL;
    build_extra x = {.openmp = q->openmp};
    if (q->n_call_args >= 0) {
        if (!(text = malloc(CPU_WRAPPER_MAX)))
            return kt_error_set(err, KT_ERR_NO_MEMORY, "cannot allocate the generated call");
        /* with the request's files the source sits beside the generated call: included by its
         * base name, so the text (part of the key) is the same in every runner */
        const char *base = strrchr(q->source, '/');
        const char *inc = r->sources && r->sources->files && base ? base + 1 : q->source;
        if (cpu_call_wrapper(q, inc, text, CPU_WRAPPER_MAX) < 0) {
            free(text);
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "the generated call is too long");
        }
        x.wrapper_text = text;
    }
    int rc = build(r, q->source, defines, n_defines, 0, &x, q->compile_timeout_s, out, err);
    free(text);
    return rc;
}

void *cpu_load(const char *path, const char *symbol, void **fn, char *log, size_t log_cap)
{
    *fn = NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(log, log_cap, "cannot load %s: %s", path, e ? e : "unknown error");
        return NULL;
    }
    dlerror();
    *fn = dlsym(h, symbol);
    if (!*fn) {
        snprintf(log, log_cap,
                 "the compiled source does not define '%s' (int %s(float *const *buffers, const "
                 "long long *problem))",
                 symbol, symbol);
        dlclose(h);
        return NULL;
    }
    return h;
}
