/* Per (kernel, problem) state of the CPU runner: buffers of their dtypes (64-byte aligned), inputs
 * filled by their init (by default deterministic pseudo-random values in [-1, 1) seeded by kernel
 * and buffer name), and the expected outputs computed once (OpenBLAS sgemm single-threaded, the
 * kernel's C reference, the default configuration's own run, or answer files; none for verify
 * "none"). The state
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
#include "core/file.h"
#include "core/rng.h"

/* Words of the ABI's problem array: the problem arguments, then the scalars. */
static int abi_words(const runner_measure_req *q)
{
    return q->n_problem + q->n_scalars;
}

static int same_key(const cpu_problem *p, const runner_measure_req *q, const char *ref_binary)
{
    if (strcmp(p->kernel, q->kernel) != 0 || p->n_problem != abi_words(q) ||
        p->n_buffers != q->n_buffers || p->ref_kind != q->ref_kind ||
        p->setup_key != q->setup_key || p->verify != q->verify)
        return 0;
    if (memcmp(p->problem, q->problem, sizeof *p->problem * (size_t)abi_words(q)) != 0)
        return 0;
    for (int i = 0; i < q->n_buffers; i++) {
        const runner_buffer *a = &p->buffers[i], *b = &q->buffers[i];
        if (strcmp(a->name, b->name) != 0 || a->elements != b->elements || a->output != b->output ||
            a->dtype != b->dtype)
            return 0;
    }
    return !ref_binary || strcmp(p->ref_binary, ref_binary) == 0;
}

static size_t buffer_bytes(const runner_buffer *b)
{
    return (size_t)b->elements * kt_dtype_size(b->dtype);
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
        n += p->map_bytes[i] + (p->expected[i] ? buffer_bytes(&p->buffers[i]) : 0);
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

static void *alloc_bytes(size_t n)
{
    return aligned_alloc(64, (n + 63) & ~(size_t)63);
}

/* A kernel buffer whose end (rounded up to 64 bytes) touches a PROT_NONE page, so that a kernel
 * writing past its buffer dies in its own trial instead of corrupting the runner for later ones. */
static int alloc_guarded(cpu_problem *p, int i, size_t n_bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (n_bytes + 63) & ~(size_t)63;
    size_t len = ((body + page - 1) / page) * page + page;
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return -1;
    p->map[i] = base;
    p->map_bytes[i] = len;
    if (mprotect(base + len - page, page, PROT_NONE) < 0)
        return -1;
    p->data[i] = base + len - page - body;
    return 0;
}

/* The rng of a buffer: seeded by kernel and buffer name, so every runner fills the same values. */
static void buffer_rng(kt_rng *rng, const char *kernel, const char *buffer)
{
    uint64_t h = kt_fnv1a(KT_FNV1A_OFFSET, kernel, strlen(kernel));
    h = kt_fnv1a(h, "/", 1);
    h = kt_fnv1a(h, buffer, strlen(buffer));
    kt_rng_seed(rng, h);
}

/* An uploaded data file (data.c) into dst: exactly n bytes. Returns 0, 1 with reason. */
static int copy_data(const runner_data *store, const runner_buffer *b, const char *sha,
                     const char *what, void *dst, char *reason, size_t cap)
{
    const runner_datum *d = runner_data_find(store, sha);
    if (!d) {
        snprintf(reason, cap, "buffer %s: %s data %.64s is not held by the runner", b->name, what,
                 sha);
        return 1;
    }
    if (d->len != buffer_bytes(b)) {
        snprintf(reason, cap,
                 "buffer %s: %s data has %zu bytes (%zu %s elements), the buffer %zu (%lld)",
                 b->name, what, d->len, d->len / kt_dtype_size(b->dtype), kt_dtype_name(b->dtype),
                 buffer_bytes(b), b->elements);
        return 1;
    }
    memcpy(dst, d->bytes, d->len);
    return 0;
}

/* Raw little-endian elements of b's dtype from its init file: exactly the buffer's bytes. */
static int fill_from_file(void *x, const runner_buffer *b, char *reason, size_t cap)
{
    kt_error e;
    size_t len = 0;
    char *bytes = kt_file_read_all(b->init_file, (size_t)RUNNER_MAX_DATA_BYTES, &len, &e);
    if (!bytes) {
        snprintf(reason, cap, "buffer %s: init file: %s", b->name, e.message);
        return 1;
    }
    int rc = 0;
    if (len != buffer_bytes(b)) {
        snprintf(reason, cap, "buffer %s: init file %s has %zu bytes, the buffer %zu (%lld %s)",
                 b->name, b->init_file, len, buffer_bytes(b), b->elements, kt_dtype_name(b->dtype));
        rc = 1;
    } else {
        memcpy(x, bytes, len);
    }
    free(bytes);
    return rc;
}

int cpu_problem_fill(cpu_problem *p, int i, char *reason, size_t reason_cap)
{
    const runner_buffer *b = &p->buffers[i];
    void *x = p->data[i];
    kt_rng rng;
    int is_float = kt_dtype_is_float(b->dtype);
    double lo = -1.0, hi = 1.0;
    buffer_rng(&rng, p->kernel, b->name);
    switch (b->init) {
    case RUNNER_INIT_FILE:
        return fill_from_file(x, b, reason, reason_cap);
    case RUNNER_INIT_DATA:
        return copy_data(p->store, b, b->init_file, "init", x, reason, reason_cap);
    case RUNNER_INIT_ZEROS:
        memset(x, 0, buffer_bytes(b));
        return 0;
    case RUNNER_INIT_CONSTANT:
        for (long long k = 0; k < b->elements; k++)
            kt_dtype_set(b->dtype, x, k, b->init_a);
        return 0;
    case RUNNER_INIT_IOTA:
        for (long long k = 0; k < b->elements; k++)
            kt_dtype_set(b->dtype, x, k, (double)k);
        return 0;
    case RUNNER_INIT_NORMAL:
        for (long long k = 0; k < b->elements; k++)
            kt_dtype_set(b->dtype, x, k, b->init_a + b->init_b * kt_rng_normal(&rng));
        return 0;
    case RUNNER_INIT_UNIFORM:
        lo = b->init_a, hi = b->init_b;
        break;
    default:
        if (!is_float)
            lo = -100.0, hi = 100.0;
        break;
    }
    if (b->dtype == KT_F32 && b->init == RUNNER_INIT_DEFAULT) {
        /* the values every fp32 kernel has always had */
        float *f = x;
        for (long long k = 0; k < b->elements; k++)
            f[k] = (float)((double)(kt_rng_next(&rng) >> 40) * (2.0 / 16777216.0) - 1.0);
        return 0;
    }
    if (!is_float) { /* integers in [ceil(lo), floor(hi)], clamped to the dtype */
        double tlo, thi;
        kt_dtype_int_range(b->dtype, &tlo, &thi);
        lo = fmax(ceil(lo), tlo), hi = fmin(floor(hi), thi);
        double span = hi - lo + 1;
        for (long long k = 0; k < b->elements; k++)
            kt_dtype_set(b->dtype, x, k, span >= 1 ? lo + floor(kt_rng_uniform(&rng) * span) : lo);
        return 0;
    }
    for (long long k = 0; k < b->elements; k++)
        kt_dtype_set(b->dtype, x, k, lo + (hi - lo) * kt_rng_uniform(&rng));
    return 0;
}

/* Four independent lanes keep the multiply chains short: about 1 ms for 8 MiB. */
static uint64_t checksum(const void *x, size_t bytes)
{
    const unsigned char *c = x;
    uint64_t h[4] = {1, 2, 3, 4};
    size_t i = 0;
    for (; i + 16 <= bytes; i += 16) {
        uint32_t w[4];
        memcpy(w, c + i, sizeof w);
        for (int k = 0; k < 4; k++)
            h[k] = (h[k] ^ w[k]) * 0x100000001b3ULL;
    }
    for (; i < bytes; i++)
        h[0] = (h[0] ^ c[i]) * 0x100000001b3ULL;
    return h[0] ^ (h[1] << 1) ^ (h[2] << 2) ^ (h[3] << 3);
}

void cpu_problem_poison_outputs(cpu_problem *p)
{
    for (int i = 0; i < p->n_buffers; i++) {
        const runner_buffer *b = &p->buffers[i];
        if (!b->output)
            continue;
        if (b->dtype == KT_F32) {
            float *x = p->data[i];
            for (long long k = 0; k < b->elements; k++)
                x[k] = NAN;
        } else if (kt_dtype_is_float(b->dtype)) {
            for (long long k = 0; k < b->elements; k++)
                kt_dtype_set(b->dtype, p->data[i], k, NAN);
        } else {
            memset(p->data[i], 0xa5, buffer_bytes(b)); /* no NaN: a pattern unlikely to be right */
        }
    }
}

int cpu_problem_check_inputs(cpu_problem *p)
{
    int bad = -1;
    for (int i = 0; i < p->n_buffers; i++) {
        const runner_buffer *b = &p->buffers[i];
        char why[8];
        if (b->output || checksum(p->data[i], buffer_bytes(b)) == p->checksum[i])
            continue;
        cpu_problem_fill(p, i, why, sizeof why); /* it was read once: it reads again */
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
        if (q->buffers[i].elements < need[i] || q->buffers[i].output != output[i] ||
            q->buffers[i].dtype != KT_F32)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "reference openblas_sgemm needs buffer %d ('%s') to be an f32 %s "
                                "of at least %lld elements",
                                i, q->buffers[i].name, output[i] ? "output" : "input", need[i]);
    }
    return 0;
}

/* An answer file (or uploaded data) into b's expected values. Returns 0, 1 with reason. */
static int read_answer(const runner_data *store, const runner_buffer *b, void *expected,
                       char *reason, size_t cap)
{
    kt_error e;
    size_t len = 0;
    if (b->answer_data)
        return copy_data(store, b, b->answer, "answer", expected, reason, cap);
    char *bytes = kt_file_read_all(b->answer, (size_t)RUNNER_MAX_DATA_BYTES, &len, &e);
    if (!bytes) {
        snprintf(reason, cap, "buffer %s: answer file: %s", b->name, e.message);
        return 1;
    }
    int rc = len == buffer_bytes(b) ? 0 : 1;
    if (rc)
        snprintf(reason, cap, "buffer %s: answer file %s has %zu bytes, the buffer %zu", b->name,
                 b->answer, len, buffer_bytes(b));
    else
        memcpy(expected, bytes, len);
    free(bytes);
    return rc;
}

/* Computes the expected outputs into the output buffers: the reference (OpenBLAS, or
 * ktune_reference of ref_binary) or the default configuration's ktune_kernel (ref_binary).
 * Returns 0, 1 with reason. */
static int run_reference(cpu_problem *p, const char *ref_binary, char *reason, size_t reason_cap)
{
    if (p->verify == RUNNER_VERIFY_REFERENCE && p->ref_kind == RUNNER_REF_OPENBLAS_SGEMM) {
        int m = (int)p->problem[0], n = (int)p->problem[1], k = (int)p->problem[2];
        memset(p->data[2], 0, buffer_bytes(&p->buffers[2]));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, p->data[0], k,
                    p->data[1], n, 0.0f, p->data[2], n);
        return 0;
    }
    int is_default = p->verify == RUNNER_VERIFY_DEFAULT;
    void *fn = NULL;
    char log[512];
    void *h =
        cpu_load(ref_binary, is_default ? "ktune_kernel" : "ktune_reference", &fn, log, sizeof log);
    if (!h) {
        snprintf(reason, reason_cap, "%s: %s",
                 is_default ? "the default configuration" : "reference", log);
        return 1;
    }
    cpu_kernel_fn ref = (cpu_kernel_fn)fn;
    /* the default configuration gets its scratch as in a measure (cpu_scratch.c) */
    cpu_scratch scratch;
    void *args[RUNNER_MAX_BUFFERS + 1];
    if (cpu_scratch_prepare(&scratch, is_default ? h : NULL, p->problem, reason, reason_cap) > 0) {
        dlclose(h);
        return 1;
    }
    cpu_scratch_args(p, &scratch, args);
    cpu_problem_poison_outputs(p);
    int rc = ref((float *const *)args, p->problem);
    cpu_scratch_release(&scratch);
    dlclose(h);
    if (rc != 0) {
        snprintf(reason, reason_cap, "the %s returned %d for this problem",
                 is_default ? "default configuration" : "reference", rc);
        return 1;
    }
    return 0;
}

/* The current state when it has q's key (*reused), or a kept one made current: 1, else 0. */
static int reuse_state(runner *r, const runner_measure_req *q, const char *ref_binary, int *reused)
{
    if (r->problem && same_key(r->problem, q, ref_binary)) {
        *reused = 1;
        return 1;
    }
    for (int i = 0; i < RUNNER_KEPT_PROBLEMS && r->kept[i]; i++) {
        if (!same_key(r->kept[i], q, ref_binary))
            continue;
        cpu_problem *p = r->kept[i];
        memmove(&r->kept[i], &r->kept[i + 1],
                sizeof r->kept[0] * (size_t)(RUNNER_KEPT_PROBLEMS - 1 - i));
        r->kept[RUNNER_KEPT_PROBLEMS - 1] = NULL;
        keep_state(r, r->problem);
        p->setup_ms = 0;
        r->problem = p;
        return 1;
    }
    return 0;
}

/* A new state of q's key, its buffers not allocated yet; NULL with err when out of memory. */
static cpu_problem *state_new(runner *r, const runner_measure_req *q, const char *ref_binary,
                              kt_error *err)
{
    cpu_problem *p = calloc(1, sizeof *p);
    if (!p) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot allocate the problem state");
        return NULL;
    }
    memcpy(p->kernel, q->kernel, sizeof p->kernel);
    p->n_problem = abi_words(q);
    memcpy(p->problem, q->problem, sizeof p->problem);
    p->n_buffers = q->n_buffers;
    memcpy(p->buffers, q->buffers, sizeof p->buffers);
    p->ref_kind = q->ref_kind;
    p->verify = q->verify;
    p->setup_key = q->setup_key;
    p->store = &r->data;
    if (ref_binary)
        snprintf(p->ref_binary, sizeof p->ref_binary, "%s", ref_binary);
    return p;
}

/* Allocates every buffer (and the expected copy of each compared output) and fills the inputs,
 * keeping their checksums. 0, or 1 with reason (bytes: the total, for the message). */
static int alloc_buffers(cpu_problem *p, const runner_measure_req *q, unsigned long long bytes,
                         char *reason, size_t reason_cap)
{
    for (int i = 0; i < q->n_buffers; i++) {
        const runner_buffer *b = &q->buffers[i];
        int mapped = alloc_guarded(p, i, buffer_bytes(b));
        int compared = b->output && q->verify != RUNNER_VERIFY_NONE;
        if (compared)
            p->expected[i] = alloc_bytes(buffer_bytes(b));
        if (mapped < 0 || (compared && !p->expected[i])) {
            snprintf(reason, reason_cap, "out of memory allocating %.2f GiB of buffers",
                     (double)bytes / (1 << 30));
            return 1;
        }
        if (!b->output) {
            if (cpu_problem_fill(p, i, reason, reason_cap) != 0)
                return 1;
            p->checksum[i] = checksum(p->data[i], buffer_bytes(b));
        }
    }
    return 0;
}

/* The expected outputs, by q's way of verifying: the uploaded answer files, none, or what the
 * reference wrote (which must leave the inputs as they were). 0, or 1 with reason. */
static int expected_outputs(cpu_problem *p, const runner_measure_req *q, const char *ref_binary,
                            char *reason, size_t reason_cap)
{
    if (q->verify == RUNNER_VERIFY_ANSWER) {
        for (int i = 0; i < q->n_buffers; i++)
            if (q->buffers[i].output &&
                read_answer(p->store, &q->buffers[i], p->expected[i], reason, reason_cap) != 0)
                return 1;
        return 0;
    }
    if (q->verify == RUNNER_VERIFY_NONE)
        return 0;
    if (run_reference(p, ref_binary, reason, reason_cap) != 0)
        return 1;
    if (cpu_problem_check_inputs(p) >= 0) {
        snprintf(reason, reason_cap, "the reference wrote to an input buffer");
        return 1;
    }
    for (int i = 0; i < q->n_buffers; i++)
        if (q->buffers[i].output)
            memcpy(p->expected[i], p->data[i], buffer_bytes(&q->buffers[i]));
    return 0;
}

int cpu_problem_prepare(runner *r, const runner_measure_req *q, const char *ref_binary, int *reused,
                        char *reason, size_t reason_cap, kt_error *err)
{
    int rc = -1;
    cpu_problem *p = NULL;
    *reused = 0;
    if (reuse_state(r, q, ref_binary, reused))
        return 0;
    keep_state(r, r->problem); /* before allocating the next one: memory is bounded per state */
    r->problem = NULL;
    if (q->verify == RUNNER_VERIFY_REFERENCE && q->ref_kind == RUNNER_REF_OPENBLAS_SGEMM &&
        check_sgemm_shape(q, err) < 0)
        goto out;
    unsigned long long bytes = 0;
    for (int i = 0; i < q->n_buffers; i++)
        bytes += (unsigned long long)buffer_bytes(&q->buffers[i]) * (q->buffers[i].output ? 2 : 1);
    if (bytes > RUNNER_MAX_MEMORY_BYTES) {
        snprintf(reason, reason_cap,
                 "the buffers and reference outputs need %.2f GiB, more than the runner's %.0f GiB",
                 (double)bytes / (1 << 30), (double)RUNNER_MAX_MEMORY_BYTES / (1 << 30));
        rc = 1;
        goto out;
    }
    double t0 = kt_clock_ms();
    if (!(p = state_new(r, q, ref_binary, err)))
        goto out;
    if (alloc_buffers(p, q, bytes, reason, reason_cap) != 0 ||
        expected_outputs(p, q, ref_binary, reason, reason_cap) != 0) {
        rc = 1;
        goto out;
    }
    p->setup_ms = kt_clock_ms() - t0;
    r->problem = p;
    p = NULL;
    rc = 0;
out:
    cpu_problem_free(p);
    return rc;
}
