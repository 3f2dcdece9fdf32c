/* A kernel's scratch memory, owned by the runner (issue 32): a kernel that exports
 * `long long ktune_scratch_bytes(const long long *problem)` gets that many bytes as
 * buffers[n_buffers], mapped, touched and guarded before the kernel's first call and unmapped after
 * its last, so that no timed call allocates and no timing depends on the allocator's history (a
 * malloc above glibc's dynamic mmap threshold is an mmap + page faults + munmap per call until a
 * larger free raises the threshold). Call order: cpu_scratch_prepare (after the kernel is loaded),
 * cpu_scratch_args per call, cpu_scratch_release. The mapping is made the same way every time:
 * page-aligned, 2 MiB-aligned and advised for huge pages from 2 MiB up, every page touched, a
 * PROT_NONE page after its end. */
#include "runner/runner.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SCRATCH_HUGE ((size_t)2 << 20)

int cpu_scratch_prepare(cpu_scratch *s, void *handle, const long long *problem, char *reason,
                        size_t reason_cap)
{
    memset(s, 0, sizeof *s);
    void *sym = handle ? dlsym(handle, "ktune_scratch_bytes") : NULL;
    if (!sym)
        return 0;
    long long want = ((long long (*)(const long long *))sym)(problem);
    if (want < 0 || (unsigned long long)want > RUNNER_SCRATCH_MAX) {
        snprintf(reason, reason_cap,
                 "ktune_scratch_bytes asked for %lld bytes (0 to %llu allowed; negative: this "
                 "configuration cannot run this problem)",
                 want, (unsigned long long)RUNNER_SCRATCH_MAX);
        return 1;
    }
    s->wanted = 1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = ((size_t)want + page - 1) / page * page;
    if (body == 0)
        body = page;
    size_t align = body >= SCRATCH_HUGE ? SCRATCH_HUGE : page;
    size_t len = body + align + page; /* room to align the start, then the guard page */
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        snprintf(reason, reason_cap, "cannot map %lld bytes of scratch memory", want);
        return 1;
    }
    s->map = base;
    s->map_bytes = len;
    char *start = (char *)(((uintptr_t)base + align - 1) / align * align);
    if (mprotect(start + body, page, PROT_NONE) < 0) {
        snprintf(reason, reason_cap, "cannot guard the scratch memory");
        cpu_scratch_release(s);
        return 1;
    }
    if (align == SCRATCH_HUGE)
        madvise(start, body,
                MADV_HUGEPAGE); /* a hint: refused where THP is off, the same each time */
    memset(start, 0, body);     /* every page faulted in now, not in a timed call */
    s->data = start;
    s->bytes = (size_t)want;
    return 0;
}

void cpu_scratch_args(const cpu_problem *p, const cpu_scratch *s, void **args)
{
    for (int i = 0; i < p->n_buffers; i++)
        args[i] = p->data[i];
    args[p->n_buffers] = s && s->wanted ? s->data : NULL;
}

void cpu_scratch_release(cpu_scratch *s)
{
    if (s->map)
        munmap(s->map, s->map_bytes);
    memset(s, 0, sizeof *s);
}
