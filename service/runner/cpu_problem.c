/* Per (kernel, problem) state of the CPU runner: buffers (64-byte aligned), inputs filled with
 * deterministic pseudo-random values in [-1, 1) seeded by kernel and buffer name, and the reference
 * outputs computed once (OpenBLAS sgemm single-threaded, or the kernel's C reference). The state
 * stays in r->problem until a request with another key arrives, then among the few kept in
 * r->kept (bounded in count and memory), from which a request with its key brings it back. Inputs
 * are read-only for kernels: each keeps a checksum so that a kernel writing to one is caught and
 * the buffer restored. Each kernel buffer ends (rounded up to 64 bytes) at a PROT_NONE guard page.
 */
#include "core/hash.h"
#include "runner/runner.h"

#include <cblas.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

#include "core/rng.h"

static int same_key(const cpu_problem *p, const runner_measure_req *q, const char *ref_binary)
{
    if (strcmp(p->kernel, q->kernel) != 0 || p->n_problem != q->n_problem ||
        p->n_buffers != q->n_buffers || p->ref_kind != q->ref_kind)
        return 0;
    if (memcmp(p->problem, q->problem, sizeof *p->problem * (size_t)q->n_problem) != 0)
        return 0;
    for (int i = 0; i < q->n_buffers; i++) {
        const runner_buffer *a = &p->buffers[i], *b = &q->buffers[i];
        if (strcmp(a->name, b->name) != 0 || a->elements != b->elements || a->output != b->output)
            return 0;
    }
    return q->ref_kind != RUNNER_REF_C || strcmp(p->ref_binary, ref_binary) == 0;
}

void cpu_problem_free(cpu_problem *p)
{
    if (!p)
        return;
    for (int i = 0; i < RUNNER_MAX_BUFFERS; i++) {
        if (p->map[i])
            munmap(p->map[i], p->map_bytes[i]);
        free(p->expected[i]);
    }
    free(p);
}

void cpu_problem_release_all(runner *r)
{
    cpu_problem_free(r->problem);
    r->problem = NULL;
    for (int i = 0; i < RUNNER_KEPT_PROBLEMS; i++) {
        cpu_problem_free(r->kept[i]);
        r->kept[i] = NULL;
    }
}

/* Memory a state holds: its mappings and reference copies. */
static unsigned long long state_bytes(const cpu_problem *p)
{
    unsigned long long n = 0;
    for (int i = 0; i < p->n_buffers; i++)
        n +=
            p->map_bytes[i] + (p->expected[i] ? (unsigned long long)p->buffers[i].elements * 4 : 0);
    return n;
}

/* Puts p (may be NULL) first among the kept states; the least recent beyond the count or the
 * memory bound are freed. */
static void keep_state(runner *r, cpu_problem *p)
{
    if (!p)
        return;
    cpu_problem_free(r->kept[RUNNER_KEPT_PROBLEMS - 1]);
    memmove(&r->kept[1], &r->kept[0], sizeof r->kept[0] * (RUNNER_KEPT_PROBLEMS - 1));
    r->kept[0] = p;
    unsigned long long total = 0;
    for (int i = 0; i < RUNNER_KEPT_PROBLEMS && r->kept[i]; i++) {
        total += state_bytes(r->kept[i]);
        if (total > RUNNER_KEPT_BYTES) {
            for (int j = i; j < RUNNER_KEPT_PROBLEMS; j++) {
                cpu_problem_free(r->kept[j]);
                r->kept[j] = NULL;
            }
            break;
        }
    }
}

static float *alloc_floats(long long n)
{
    size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

/* A kernel buffer whose end (rounded up to 64 bytes) touches a PROT_NONE page, so that a kernel
 * writing past its buffer dies in its own trial instead of corrupting the runner for later ones. */
static int alloc_guarded(cpu_problem *p, int i, long long n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
    size_t len = ((body + page - 1) / page) * page + page;
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return -1;
    p->map[i] = base;
    p->map_bytes[i] = len;
    if (mprotect(base + len - page, page, PROT_NONE) < 0)
        return -1;
    p->data[i] = (float *)(base + len - page - body);
    return 0;
}

static void fill_input(float *x, long long n, const char *kernel, const char *buffer)
{
    uint64_t h = kt_fnv1a(KT_FNV1A_OFFSET, kernel, strlen(kernel));
    h = kt_fnv1a(h, "/", 1);
    h = kt_fnv1a(h, buffer, strlen(buffer));
    kt_rng rng;
    kt_rng_seed(&rng, h);
    for (long long i = 0; i < n; i++)
        x[i] = (float)((double)(kt_rng_next(&rng) >> 40) * (2.0 / 16777216.0) - 1.0);
}

/* Four independent lanes keep the multiply chains short: about 1 ms for 8 MiB. */
static uint64_t checksum(const float *x, long long n)
{
    const uint32_t *w = (const uint32_t *)x;
    uint64_t h[4] = {1, 2, 3, 4};
    long long i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++)
            h[k] = (h[k] ^ w[i + k]) * 0x100000001b3ULL;
    for (; i < n; i++)
        h[0] = (h[0] ^ w[i]) * 0x100000001b3ULL;
    return h[0] ^ (h[1] << 1) ^ (h[2] << 2) ^ (h[3] << 3);
}

void cpu_problem_poison_outputs(cpu_problem *p)
{
    for (int i = 0; i < p->n_buffers; i++) {
        if (!p->buffers[i].output)
            continue;
        float *x = p->data[i];
        for (long long k = 0; k < p->buffers[i].elements; k++)
            x[k] = NAN;
    }
}

int cpu_problem_check_inputs(cpu_problem *p)
{
    int bad = -1;
    for (int i = 0; i < p->n_buffers; i++) {
        const runner_buffer *b = &p->buffers[i];
        if (b->output || checksum(p->data[i], b->elements) == p->checksum[i])
            continue;
        fill_input(p->data[i], b->elements, p->kernel, b->name);
        if (bad < 0)
            bad = i;
    }
    return bad;
}

static int check_sgemm_shape(const runner_measure_req *q, kt_error *err)
{
    if (q->n_problem < 3 || q->n_buffers < 3)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "reference openblas_sgemm needs problem [M, N, K] and buffers A, B, C "
                            "(got %d problem arguments, %d buffers)",
                            q->n_problem, q->n_buffers);
    for (int i = 0; i < 3; i++)
        if (q->problem[i] < 1 || q->problem[i] > INT_MAX)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "reference openblas_sgemm needs M, N, K in [1, %d] (problem[%d] is "
                                "%lld)",
                                INT_MAX, i, q->problem[i]);
    long long m = q->problem[0], n = q->problem[1], k = q->problem[2];
    const long long need[3] = {m * k, k * n, m * n};
    const int output[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++) {
        if (q->buffers[i].elements < need[i] || q->buffers[i].output != output[i])
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "reference openblas_sgemm needs buffer %d ('%s') to be an %s of at "
                                "least %lld elements",
                                i, q->buffers[i].name, output[i] ? "output" : "input", need[i]);
    }
    return 0;
}

/* Computes the reference into the output buffers. Returns 0, 1 with reason. */
static int run_reference(cpu_problem *p, const char *ref_binary, char *reason, size_t reason_cap)
{
    if (p->ref_kind == RUNNER_REF_OPENBLAS_SGEMM) {
        int m = (int)p->problem[0], n = (int)p->problem[1], k = (int)p->problem[2];
        memset(p->data[2], 0, (size_t)p->buffers[2].elements * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, p->data[0], k,
                    p->data[1], n, 0.0f, p->data[2], n);
        return 0;
    }
    void *fn = NULL;
    char log[512];
    void *h = cpu_load(ref_binary, "ktune_reference", &fn, log, sizeof log);
    if (!h) {
        snprintf(reason, reason_cap, "reference: %s", log);
        return 1;
    }
    cpu_kernel_fn ref = (cpu_kernel_fn)fn;
    cpu_problem_poison_outputs(p);
    int rc = ref(p->data, p->problem);
    dlclose(h);
    if (rc != 0) {
        snprintf(reason, reason_cap, "the reference returned %d for this problem", rc);
        return 1;
    }
    return 0;
}

int cpu_problem_prepare(runner *r, const runner_measure_req *q, const char *ref_binary, int *reused,
                        char *reason, size_t reason_cap, kt_error *err)
{
    int rc = -1;
    cpu_problem *p = NULL;
    *reused = 0;
    if (r->problem && same_key(r->problem, q, ref_binary)) {
        *reused = 1;
        return 0;
    }
    for (int i = 0; i < RUNNER_KEPT_PROBLEMS && r->kept[i]; i++) {
        if (!same_key(r->kept[i], q, ref_binary))
            continue;
        p = r->kept[i];
        memmove(&r->kept[i], &r->kept[i + 1],
                sizeof r->kept[0] * (size_t)(RUNNER_KEPT_PROBLEMS - 1 - i));
        r->kept[RUNNER_KEPT_PROBLEMS - 1] = NULL;
        keep_state(r, r->problem);
        p->setup_ms = 0;
        r->problem = p;
        return 0;
    }
    keep_state(r, r->problem); /* before allocating the next one: memory is bounded per state */
    r->problem = NULL;
    if (q->ref_kind == RUNNER_REF_OPENBLAS_SGEMM && check_sgemm_shape(q, err) < 0)
        goto out;
    unsigned long long bytes = 0;
    for (int i = 0; i < q->n_buffers; i++)
        bytes += (unsigned long long)q->buffers[i].elements * sizeof(float) *
                 (q->buffers[i].output ? 2 : 1);
    if (bytes > RUNNER_MAX_MEMORY_BYTES) {
        snprintf(reason, reason_cap,
                 "the buffers and reference outputs need %.2f GiB, more than the runner's %.0f GiB",
                 (double)bytes / (1 << 30), (double)RUNNER_MAX_MEMORY_BYTES / (1 << 30));
        rc = 1;
        goto out;
    }
    double t0 = kt_clock_ms();
    p = calloc(1, sizeof *p);
    if (!p) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot allocate the problem state");
        goto out;
    }
    memcpy(p->kernel, q->kernel, sizeof p->kernel);
    p->n_problem = q->n_problem;
    memcpy(p->problem, q->problem, sizeof p->problem);
    p->n_buffers = q->n_buffers;
    memcpy(p->buffers, q->buffers, sizeof p->buffers);
    p->ref_kind = q->ref_kind;
    if (ref_binary)
        snprintf(p->ref_binary, sizeof p->ref_binary, "%s", ref_binary);
    for (int i = 0; i < q->n_buffers; i++) {
        const runner_buffer *b = &q->buffers[i];
        int mapped = alloc_guarded(p, i, b->elements);
        if (b->output)
            p->expected[i] = alloc_floats(b->elements);
        if (mapped < 0 || (b->output && !p->expected[i])) {
            snprintf(reason, reason_cap, "out of memory allocating %.2f GiB of buffers",
                     (double)bytes / (1 << 30));
            rc = 1;
            goto out;
        }
        if (!b->output) {
            fill_input(p->data[i], b->elements, q->kernel, b->name);
            p->checksum[i] = checksum(p->data[i], b->elements);
        }
    }
    if (run_reference(p, ref_binary, reason, reason_cap) != 0) {
        rc = 1;
        goto out;
    }
    if (cpu_problem_check_inputs(p) >= 0) {
        snprintf(reason, reason_cap, "the reference wrote to an input buffer");
        rc = 1;
        goto out;
    }
    for (int i = 0; i < q->n_buffers; i++)
        if (q->buffers[i].output)
            memcpy(p->expected[i], p->data[i], (size_t)q->buffers[i].elements * sizeof(float));
    p->setup_ms = kt_clock_ms() - t0;
    r->problem = p;
    p = NULL;
    rc = 0;
out:
    cpu_problem_free(p);
    return rc;
}
