/* runner/runner — internal types and functions of ktune-runner (PROTOCOL.md), shared by its files
 * and the CUDA half. Call order: runner_read_line -> runner_parse_line -> runner_parse_header ->
 * runner_parse_measure -> cpu_measure / cpu_probe_json (or cuda.h) -> runner_write_reply. main.c
 * owns the one `runner`; every json_t returned is a new reference owned by the caller. */
#ifndef KT_RUNNER_RUNNER_H
#define KT_RUNNER_RUNNER_H

#include <fenv.h>
#include <jansson.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/dtype.h"
#include "core/error.h"
#include "runner/cuda.h"

#define RUNNER_LINE_MAX         (4 << 20) /* bytes per request line, newline excluded */
#define RUNNER_NAME_MAX         128       /* kernel, buffer and define names, NUL included */
#define RUNNER_PATH_MAX         4096      /* source paths, NUL included */
#define RUNNER_MAX_DEFINES      64
#define RUNNER_MAX_PROBLEM      24 /* a kernel's arguments, then its neural parameters */
#define RUNNER_MAX_BUFFERS      32
#define RUNNER_LOG_MAX          4096         /* compiler output kept (the last bytes) */
#define RUNNER_MAX_MEMORY_BYTES (8ULL << 30) /* buffers + reference copies per problem */
#define RUNNER_KEPT_PROBLEMS    8            /* earlier problem states kept (cpu_problem_prepare) */
#define RUNNER_KEPT_BYTES       (512ULL << 20) /* ... holding at most this much memory together */
#define RUNNER_MAX_ELEMENTS     (1LL << 40)    /* per buffer, before the memory bound */
#define RUNNER_MAX_SOURCE_BYTES (4 << 20)      /* a kernel or reference source file */
#define RUNNER_MAX_FILES        32             /* a request's "files" */
#define RUNNER_REPEATS_CAP      1000000        /* max_repeats accepted */
#define RUNNER_SECONDS_CAP      3600.0         /* max_seconds, compile_timeout_s accepted */
#define RUNNER_TEXT_MAX         256            /* probe strings (model, compiler line) */
#define RUNNER_MAX_CACHES       16             /* cache descriptions read by the probe */
#define RUNNER_ISA_MAX          512            /* the space-separated isa list */
#define RUNNER_MAX_SCALARS      16
#define RUNNER_MAX_CALL_ARGS    (RUNNER_MAX_BUFFERS + RUNNER_MAX_SCALARS + RUNNER_MAX_PROBLEM)
#define RUNNER_MAX_DATA_BYTES   (64LL << 20) /* an init or answer data file */
#define RUNNER_MAX_THREADS      1024         /* "threads" accepted */
#define RUNNER_DATA_FILES       32           /* uploaded data files held (data.c) */
#define RUNNER_DATA_HELD_BYTES  (64LL << 20) /* ... holding at most this much memory together */
#define RUNNER_DATA_SHA_LEN     64           /* hex digits of a data file's SHA-256 */
#define RUNNER_SCRATCH_MAX      (2ULL << 30) /* a kernel's ktune_scratch_bytes (cpu_scratch.c) */
/* The allocator's fixed state (main.c, issue 32): glibc's mmap threshold pinned (no dynamic
 * rise: a block below it always comes from the heap, one above always from mmap) and freed heap
 * memory kept, so a kernel's malloc costs the same in a fresh runner and after others. */
#define RUNNER_MMAP_THRESHOLD    (32 << 20)  /* glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX) */
#define RUNNER_TRIM_THRESHOLD    (512 << 20) /* free heap memory kept before it is given back */
#define RUNNER_CACHE_MAX_DEFAULT (2LL << 30) /* --cache-max-bytes: the binary cache's bound */

typedef enum { RUNNER_REF_OPENBLAS_SGEMM = 0, RUNNER_REF_C } runner_ref_kind;
/* What the outputs are compared with (PROTOCOL.md "verify"). */
typedef enum {
    RUNNER_VERIFY_REFERENCE = 0,
    RUNNER_VERIFY_DEFAULT,
    RUNNER_VERIFY_ANSWER,
    RUNNER_VERIFY_NONE
} runner_verify_kind;
/* A buffer's fill (PROTOCOL.md "init"); DEFAULT: [-1, 1) for floating dtypes, integers in
 * [-100, 100] (clamped to the dtype). */
typedef enum {
    RUNNER_INIT_DEFAULT = 0,
    RUNNER_INIT_UNIFORM,
    RUNNER_INIT_NORMAL,
    RUNNER_INIT_CONSTANT,
    RUNNER_INIT_IOTA,
    RUNNER_INIT_ZEROS,
    RUNNER_INIT_FILE,
    RUNNER_INIT_DATA /* an uploaded data file held by the runner (data.c), by its SHA-256 */
} runner_init_kind;

typedef struct runner_define {
    char name[RUNNER_NAME_MAX];
    long long value;
} runner_define;

typedef struct runner_buffer {
    char name[RUNNER_NAME_MAX];
    long long elements;
    int output; /* 0: input (read-only for kernels), 1: output (NaN before the checked run) */
    kt_dtype dtype;
    runner_init_kind init;
    double init_a, init_b;           /* uniform min, max; normal mean, std; constant value */
    char init_file[RUNNER_PATH_MAX]; /* RUNNER_INIT_FILE; RUNNER_INIT_DATA: the SHA-256 */
    double rtol, atol;               /* < 0: the request's "tolerance" (integers: exact) */
    char answer[RUNNER_PATH_MAX];    /* verify "answer": the expected output's file, else "" */
    int answer_data;                 /* 1: answer is the SHA-256 of an uploaded data file */
} runner_buffer;

/* The uploaded data files a runner holds (data.c, PROTOCOL.md "data"): a request names them by
 * SHA-256 and carries their bytes only when the runner asked for them (need_data). */
typedef struct runner_datum {
    char sha[RUNNER_DATA_SHA_LEN + 1];
    unsigned char *bytes;
    size_t len;
} runner_datum;
typedef struct runner_data {
    runner_datum d[RUNNER_DATA_FILES];
    int n;
    size_t total;
} runner_data;

/* A scalar argument: its C type (f32, f64, i32, i64) and value. */
typedef struct runner_scalar {
    char name[RUNNER_NAME_MAX];
    kt_dtype type;
    double value;
} runner_scalar;

/* One argument of the generated call: a buffer, a scalar or a problem argument by index. */
typedef enum { RUNNER_ARG_BUFFER = 0, RUNNER_ARG_SCALAR, RUNNER_ARG_PROBLEM } runner_arg_kind;
typedef struct runner_call_arg {
    runner_arg_kind kind;
    int index;
} runner_call_arg;

/* A validated CPU measure request; defines are sorted by name. */
typedef struct runner_measure_req {
    char kernel[RUNNER_NAME_MAX];
    char source[RUNNER_PATH_MAX];
    const json_t *files; /* "files": name -> text (borrowed from the request), or NULL */
    int n_defines;
    runner_define defines[RUNNER_MAX_DEFINES];
    int n_problem;
    /* the ABI's words (PROTOCOL.md): an integer argument's value, a float argument's double bits
     * (problem_float[i] 1), then the scalars' (integers as values, f32/f64 as double bits) */
    long long problem[RUNNER_MAX_PROBLEM + RUNNER_MAX_SCALARS];
    unsigned char problem_float[RUNNER_MAX_PROBLEM];
    int n_scalars;
    runner_scalar scalars[RUNNER_MAX_SCALARS];
    int n_buffers;
    runner_buffer buffers[RUNNER_MAX_BUFFERS];
    int has_reference;
    runner_ref_kind ref_kind;
    char ref_source[RUNNER_PATH_MAX]; /* RUNNER_REF_C only */
    runner_verify_kind verify;
    int n_verify_defines; /* verify "default": the default configuration */
    runner_define verify_defines[RUNNER_MAX_DEFINES];
    /* "call": the generated ktune_kernel calls entry(args...) (n_call_args -1: no call) */
    char call_entry[RUNNER_NAME_MAX];
    int n_call_args;
    runner_call_arg call_args[RUNNER_MAX_CALL_ARGS];
    int openmp;         /* compile with -fopenmp */
    int threads;        /* > 0: omp_set_num_threads before the calls */
    uint64_t setup_key; /* FNV-1a of everything that shapes the problem state */
    double rtol, atol;
    double flops; /* 0: unknown (no gflops) */
    int min_repeats, max_repeats;
    double min_seconds, max_seconds;
    double compile_timeout_s;
    double call_limit_s; /* > 0: one kernel call longer than this ends the runner by SIGALRM */
    /* "early_stop" (issue 32): after early_after repeats, stop once the fastest is above
     * early_above_ms (core/early_stop.h); 0: time the full count */
    int early_after;
    double early_above_ms;
    /* "core_shared" (op compile, issue 32): ktuned moves this runner and its compilers off the
     * measuring core while a measurement holds it, so the compile keeps the cores it is given */
    int core_shared;
} runner_measure_req;

typedef struct cpu_cache_desc {
    int level;
    char type[16]; /* "Data", "Instruction", "Unified" */
    long long bytes;
} cpu_cache_desc;

/* What the CPU probe reports; read once at start-up (cpu_info_read). */
typedef struct cpu_info {
    char model[RUNNER_TEXT_MAX];
    int cores;
    char isa[RUNNER_ISA_MAX]; /* flags of interest, space-separated, in a fixed order */
    int vector_bits;
    long long l1d_bytes, l2_bytes, l3_bytes; /* 0: unknown (the probe says null) */
    char cache_source[32]; /* what told the sizes: "sysfs", "sysconf", "cpuid" (joined by '+'),
                              or "unknown" */
    int n_caches;
    cpu_cache_desc caches[RUNNER_MAX_CACHES];
    char compiler[RUNNER_TEXT_MAX];  /* `cc --version` first line; empty when cc did not run */
    char toolchain[RUNNER_TEXT_MAX]; /* "gcc 12.2.0" (runner_cpu_toolchain); "unknown" without cc */
    int physical_cores;              /* cores, not hardware threads (sysfs topology); 0: unknown */
    double max_mhz; /* cpufreq's cpuinfo_max_freq of cpu0; 0: unknown (no cpufreq) */
} cpu_info;

/* Per (kernel, problem, buffers) state: buffers, their inputs filled, reference outputs computed.
 * The problem holds every argument a request sends, a kernel's neural parameters included. */
typedef struct cpu_problem {
    /* the key: a request with the same values reuses this state */
    char kernel[RUNNER_NAME_MAX];
    int n_problem; /* the ABI words: problem arguments, then scalars */
    long long problem[RUNNER_MAX_PROBLEM + RUNNER_MAX_SCALARS];
    int n_buffers;
    runner_buffer buffers[RUNNER_MAX_BUFFERS];
    uint64_t setup_key;
    runner_verify_kind verify;
    runner_ref_kind ref_kind;
    char ref_binary[RUNNER_PATH_MAX]; /* the reference's (or default configuration's) .so */
    const runner_data *store;         /* the runner's uploaded data (RUNNER_INIT_DATA, answers) */
    /* the state */
    void *data[RUNNER_MAX_BUFFERS]; /* 64-byte aligned, elements of the buffer's dtype, ending
                                       at a guard page (an access past the end faults) */
    void *map[RUNNER_MAX_BUFFERS];  /* the mappings behind data (cpu_problem_free) */
    size_t map_bytes[RUNNER_MAX_BUFFERS];
    void *expected[RUNNER_MAX_BUFFERS];    /* outputs only: the answer (NULL for verify none) */
    uint64_t checksum[RUNNER_MAX_BUFFERS]; /* inputs only: checksum of the filled values */
    double setup_ms;                       /* allocation, fill and reference */
} cpu_problem;

/* A request's source texts (sources.c): its "files" (borrowed from the request), and the transient
 * folder they were written to for a compile ("" when none). */
typedef struct runner_sources {
    const json_t *files;
    char dir[RUNNER_PATH_MAX];
} runner_sources;

typedef struct runner {
    int cuda_ordinal; /* -1: the CPU device */
    int cpu_core;     /* -1: not pinned */
    /* the cores the runner may use beyond its pin (what it was started with, and its core): an
     * "openmp" request runs on them (cpu_measure), then the pin is restored */
    cpu_set_t wide;
    int have_wide;
    char cache_dir[RUNNER_PATH_MAX];
    long long cache_max_bytes; /* the binary cache's bound (cpu_compile.c); 0: unbounded */
    int no_pch; /* --no-pch: kernels compile without their precompiled prelude (cpu_prelude.c) */
    /* the floating-point environment at start, restored before each kernel's first call */
    fenv_t fenv;
    int have_fenv;
    cpu_info cpu;         /* CPU device only */
    cpu_problem *problem; /* CPU device only; NULL until the first measure */
    /* earlier states (most recent first, NULL-padded), so that requests alternating between a
     * few keys (a kernel's neural parameters: one reference per value) do not refill and recompute
     * each time */
    cpu_problem *kept[RUNNER_KEPT_PROBLEMS];
    cuda_device *cuda; /* CUDA device only; NULL when it could not be opened */
    char cuda_reason[256];
    /* the current request's source texts (main.c owns it; NULL: sources are read from their
     * paths, as unit tests do) */
    runner_sources *sources;
    runner_data data; /* uploaded data files held (data.c) */
    /* what confines the runner (runner/sandbox.h; main.c owns it), for the probe reply */
    const struct runner_sandbox *sandbox;
} runner;

/* ---- data.c (uploaded data files, PROTOCOL.md "data") ---- */

/* Takes a measure request's "data" ({"<sha256>": "<base64>"}: decoded, its hash checked, held),
 * then lists the SHA-256s its buffers' inits and verify answers name that the runner does not
 * hold: *missing a new array of them, or NULL when it holds every one. 0, or -1 with err (a
 * malformed "data": a name that is not a SHA-256, text that is not base64, bytes of another
 * hash, more than RUNNER_DATA_HELD_BYTES). */
int runner_data_take(runner_data *s, const json_t *req, json_t **missing, kt_error *err);
/* 1 when s is a SHA-256 as data files are named: 64 lowercase hex digits. */
int runner_data_is_sha(const char *s);
/* The held file of that SHA-256, or NULL. */
const runner_datum *runner_data_find(const runner_data *s, const char *sha);
void runner_data_release(runner_data *s);

/* ---- sources.c (a request's "files") ---- */

/* Takes a request's "files" (NULL: none), after runner_sources_done of the previous request's. */
void runner_sources_begin(runner_sources *s, const json_t *files);
/* The bytes of path (NUL-terminated, *len their count; caller frees): the text of its base name in
 * the request's files, else (no files) the file read from disk. NULL with err (a name not among
 * the files, larger than max, unreadable). */
char *runner_sources_read(const runner_sources *s, const char *path, size_t max, size_t *len,
                          kt_error *err);
/* The file the compiler reads for path: with files, its copy in the transient folder under
 * cache_dir (every file of the request written there, 0700 folder, 0400 files, on first call);
 * without, path itself. 0, or -1 with err. */
int runner_sources_compile_path(runner_sources *s, const char *cache_dir, const char *path,
                                char *out, size_t cap, kt_error *err);
/* Removes the transient folder (called once the request's builds are done, before its kernel
 * runs, and at the end of every request). */
void runner_sources_done(runner_sources *s);
/* A request's "files" (optional; protocol.c's parsers call it): {"<plain name>": "<text>"},
 * RUNNER_MAX_FILES of them, RUNNER_MAX_SOURCE_BYTES together, holding the base name of each path
 * in need[0..n_need) (empty paths skipped). *out borrowed from req (NULL without "files"). */
int runner_sources_parse(const json_t *req, const char *const *need, int n_need, const json_t **out,
                         kt_error *err);

/* ---- protocol.c (requests) and protocol_reply.c (replies) ---- */

/* Reads one line (without its newline) into buf (cap bytes, NUL-terminated). Returns 1 with *len
 * set, 0 at end of input with nothing read, -1 when the line did not fit (the rest of it is
 * consumed). */
int runner_read_line(FILE *in, char *buf, size_t cap, size_t *len);
/* Parses a request line into a JSON object; NULL with err (KT_ERR_BAD_JSON, KT_ERR_WRONG_TYPE). */
json_t *runner_parse_line(const char *line, size_t len, kt_error *err);
/* The request's id as a new reference: the integer, or JSON null when absent or not an integer. */
json_t *runner_request_id(const json_t *req);
/* Checks id and op (and that every field of req is one the op accepts); *op points into req. */
int runner_parse_header(const json_t *req, const char **op, kt_error *err);
/* Validates a CPU measure request field by field. Returns 0, or -1 with err naming the field. */
int runner_parse_measure(const json_t *req, runner_measure_req *out, kt_error *err);
/* Validates a compile_check request (PROTOCOL.md): source (an absolute path, RUNNER_PATH_MAX
 * bytes), defines and files (optional objects, borrowed from req; files holds the source's base
 * name), compile_timeout_s (default 60). 0, or -1
 * with err naming the field. */
int runner_parse_compile_check(const json_t *req, char *source, const json_t **defines,
                               const json_t **files, double *timeout_s, kt_error *err);
/* {"ok": false, "error": message} (new reference). */
json_t *runner_error_reply(const kt_error *err);
/* A measure reply with every field present: status, time_ms 0, repeats 0, noise_cv 0, compile_ms,
 * measure_ms 0 and an empty extras object. */
json_t *runner_status_reply(const char *status, double compile_ms);
/* Sets "id" (borrowed) on reply, writes it as one line and flushes. Returns 0, -1 on a write error.
 */
int runner_write_reply(FILE *out, json_t *id, json_t *reply);
/* A JSON number for a finite double, else the string "nan", "inf" or "-inf". */
json_t *runner_json_real(double v);
/* A JSON string from bytes that may hold invalid UTF-8 or NULs (replaced by '?'). */
json_t *runner_json_text(const char *s, size_t n);
/* 1 if s is a C identifier of at most RUNNER_NAME_MAX-1 characters. */
int runner_is_identifier(const char *s);

/* ---- cpu_probe.c ---- */

/* Fills info from /proc/cpuinfo, sysconf, the cache sizes (cpu_caches_read) and `cc --version`.
 * Never fails: what cannot be read stays empty or 0. */
void cpu_info_read(cpu_info *info);
#define CPU_SYSFS_CACHE_DIR "/sys/devices/system/cpu/cpu0/cache"
/* The cache sizes: the sysfs folder's descriptions (cpu_caches_from_sysfs; the caches list), then
 * for each of L1d, L2, L3 still unknown CPUID's cache leaves (x86), then sysconf; what none tells
 * stays 0 (unknown), and info->cache_source names who told ("sysfs", "sysfs+cpuid", ...). */
void cpu_caches_read(cpu_info *info, const char *sysfs_dir);
void cpu_caches_from_sysfs(cpu_info *info, const char *dir);
#define CPU_SYSFS_DIR "/sys/devices/system/cpu"
/* The physical cores (the CPUs cpuN of dir that come first in their topology/thread_siblings_list)
 * and cpu0's cpufreq/cpuinfo_max_freq (kHz) as MHz: what a peak rate needs
 * (catalog/catalog_peak.h); each stays 0 where dir does not tell (a VM without cpufreq: no
 * frequency, never a guess). */
void cpu_topology_read(cpu_info *info, const char *dir);
/* The probe reply's "device" object. */
json_t *cpu_probe_json(const runner *r);
/* The toolchain results are keyed by, from the whole output of `cc --version`: "<family>
 * <version>" ("gcc 12.2.0", "clang 14.0.6"; family from the text: "clang" when it names clang,
 * "gcc" when it names gcc/GCC or the Free Software Foundation), else the first line as it is (at
 * most TARGET_TOOLCHAIN_MAX characters, bytes outside printable ASCII as '?'); "unknown" for empty
 * output. Writes at most cap bytes (NUL included, cap > 0). */
void runner_cpu_toolchain(const char *version_output, char *out, size_t cap);

/* ---- cpu_compile.c ---- */

typedef enum { CPU_BUILD_OK = 0, CPU_BUILD_FAILED, CPU_BUILD_TIMEOUT } cpu_build_status;

/* ---- cpu_prelude.c (a kernel's leading system includes, precompiled once) ---- */

typedef enum {
    CPU_PRELUDE_NONE = 0, /* no prelude (or --no-pch): a plain compile */
    CPU_PRELUDE_NOTED,    /* first sight: its header written, this compile plain */
    CPU_PRELUDE_MADE,     /* precompiled now, this compile uses it */
    CPU_PRELUDE_USED,     /* precompiled before, this compile uses it */
    CPU_PRELUDE_REFUSED   /* passed, but GCC did not use the .gch (it read the header's text) */
} cpu_prelude_state;

typedef struct cpu_prelude {
    cpu_prelude_state state;
    char header[RUNNER_PATH_MAX]; /* <cache-dir>/pch-<hash>.h, -include'd when MADE or USED */
    char name[48];                /* pch-<hash>.h.gch: what the cache bound keeps */
    double ms, cpu_ms;            /* the precompile's wall and CPU time (MADE) */
} cpu_prelude;

/* bytes of a prelude's text; a longer one is cut where it last balanced */
#define CPU_PRELUDE_MAX 4096

/* The prelude of a source: its leading lines up to the first that is not blank, a comment, an
 * `#include <...>` or a conditional (#if, #ifdef, #ifndef, #elif, #else, #endif) testing only
 * compiler-predefined macros (`__AVX2__`, `defined(__FMA__)`; not __LINE__ and the like), cut
 * after the last line where the conditionals balance. Writes its directive lines (each ending in
 * a newline, comments and blanks left out) to out and returns their length (< cap), or 0 when
 * that holds no #include. Pure. */
size_t cpu_prelude_text(const char *src, size_t len, char *out, size_t cap);
/* Before a kernel compile of src with flags (the kernel's, -shared left out): finds the prelude's
 * precompiled header in r's cache (USED), makes it when the prelude was seen before (MADE, under
 * timeout_s), else writes the header for next time (NOTED). Never fails the build: whatever goes
 * wrong leaves a plain compile (NONE, logged). */
void cpu_prelude_prepare(const runner *r, const char *src, size_t len, char *const *flags,
                         int n_flags, double timeout_s, cpu_prelude *out);
/* "none", "noted", "made", "used", "refused": the reply's extras.prelude. */
const char *cpu_prelude_state_name(cpu_prelude_state s);

typedef struct cpu_binary {
    char path[RUNNER_PATH_MAX]; /* <cache-dir>/<hash>.so */
    char name[32];              /* <hash>.so */
    int cached;                 /* 1: found in the cache, not compiled */
    double compile_ms;          /* 0 when cached; a prelude's precompile included */
    double compile_cpu_ms;      /* the compiler processes' user + system CPU time, the same */
    cpu_build_status status;
    cpu_prelude prelude;      /* a kernel compile's precompiled prelude (NONE for references) */
    char log[RUNNER_LOG_MAX]; /* compiler output (its last bytes) or why loading failed */
} cpu_binary;

/* Compiles source (a kernel with defines, -O3 -march=native; or a reference: -O2, no defines) into
 * the cache unless present. Returns 0 with out->status telling the outcome, -1 with err when the
 * source cannot be read or the cache cannot be written. */
int cpu_build(const runner *r, const char *source, const runner_define *defines, int n_defines,
              int reference, double timeout_s, cpu_binary *out, kt_error *err);
/* A kernel build as the request asks: its "call" (a generated ktune_kernel, cpu_call_wrapper, in
 * a file of the cache that includes source) and "openmp" (-fopenmp), with these defines. */
int cpu_build_kernel(const runner *r, const runner_measure_req *q, const runner_define *defines,
                     int n_defines, cpu_binary *out, kt_error *err);
/* The C text of the generated call of q (cpu_call.c): includes source, then defines
 * int ktune_kernel(float *const *, const long long *) calling q->call_entry with the arguments
 * typed. Returns the length written (< cap), -1 when it does not fit. */
int cpu_call_wrapper(const runner_measure_req *q, const char *source, char *out, size_t cap);
/* ---- cpu_cache.c (the binary cache's bound) ---- */

/* Marks a cached binary as used now (its mtime: what eviction orders by). */
void cpu_cache_touch(const char *path);
/* When the binaries of dir (`*.so`, `cuda-*`, precompiled preludes `*.gch`) exceed max_bytes (> 0),
 * removes the least recently used, never one named in keep[0..n_keep) (file names; NULLs skipped),
 * until 90% of it is left. Returns how many went. */
int cpu_cache_bound(const char *dir, long long max_bytes, const char *const *keep, int n_keep);

/* dlopen (RTLD_NOW | RTLD_LOCAL) and dlsym. Returns the handle with *fn set, or NULL with log
 * filled. */
void *cpu_load(const char *path, const char *symbol, void **fn, char *log, size_t log_cap);
/* Runs argv (PATH lookup, no shell) with stdin from /dev/null, stdout and stderr captured: the last
 * tail_cap-1 bytes go to tail. Returns 0 when it ran (*wstatus as from waitpid), 1 when it overran
 * timeout_s and was killed with its process group, -1 with err when it could not be started.
 * *cpu_ms (NULL: not wanted): the user + system CPU time of the command and the processes it
 * waited for (a compiler driver's cc1, as, ld), from wait4. */
int cpu_run_command(char *const argv[], double timeout_s, char *tail, size_t tail_cap, int *wstatus,
                    double *cpu_ms, kt_error *err);
/* Writes text to path through a temporary file renamed into place (runners share the cache). */
int cpu_write_file(const char *path, const char *text, kt_error *err);
/* FNV-1a 64 over what makes a compiler's output for this host: tag, the compiler's version line,
 * the CPU (model, isa: -march=native depends on them) and the flags in order. The binaries' and
 * the preludes' cache keys both start with it (cpu_compile.c, cpu_prelude.c). */
uint64_t cpu_toolchain_hash(const runner *r, const char *tag, const char *const *flags,
                            size_t n_flags);

/* ---- cpu_problem.c ---- */

typedef int (*cpu_kernel_fn)(float *const *buffers, const long long *problem);

/* ---- cpu_scratch.c (a kernel's scratch memory, kernels/README.md "Scratch") ---- */

typedef struct cpu_scratch {
    int wanted; /* the kernel exports ktune_scratch_bytes */
    void *data; /* its block (aligned, touched, guarded), passed as buffers[n_buffers] */
    size_t bytes;
    void *map; /* the mapping behind data */
    size_t map_bytes;
} cpu_scratch;

/* Asks the loaded kernel (handle) for its scratch size for problem and maps it. 0 (s->wanted 0
 * when the kernel exports no ktune_scratch_bytes), or 1 with reason (a size out of range, a
 * mapping refused: the configuration cannot run). */
int cpu_scratch_prepare(cpu_scratch *s, void *handle, const long long *problem, char *reason,
                        size_t reason_cap);
/* The call's buffers: p's, then the scratch block (NULL without). args holds n_buffers + 1. */
void cpu_scratch_args(const cpu_problem *p, const cpu_scratch *s, void **args);
void cpu_scratch_release(cpu_scratch *s);

/* Makes r->problem hold the state for q (reused when the key matches: *reused = 1). A state with
 * another key moves to r->kept (RUNNER_KEPT_PROBLEMS, RUNNER_KEPT_BYTES: the least recent go),
 * and one kept for q's key comes back (*reused = 0, its setup_ms 0: nothing was set up). ref_binary
 * is the reference .so for RUNNER_REF_C (NULL for openblas_sgemm). Returns 0; 1 when the problem
 * cannot run (reason filled: memory bound, reference failure) ; -1 with err on request errors. */
int cpu_problem_prepare(runner *r, const runner_measure_req *q, const char *ref_binary, int *reused,
                        char *reason, size_t reason_cap, kt_error *err);
/* Fills buffer i of p as its init says (deterministic: seeded by kernel and buffer name). Returns
 * 0, or 1 with reason (an init file that cannot be read or has the wrong size). */
int cpu_problem_fill(cpu_problem *p, int i, char *reason, size_t reason_cap);
void cpu_problem_free(cpu_problem *p);
/* Frees r->problem and every kept state. */
void cpu_problem_release_all(runner *r);
/* Sets every output buffer to NaN (integer dtypes: to 0xA5 bytes). */
void cpu_problem_poison_outputs(cpu_problem *p);
/* Index of the first input buffer whose checksum changed (that buffer is refilled), or -1. */
int cpu_problem_check_inputs(cpu_problem *p);

/* ---- cpu_verify.c ---- */

typedef struct cpu_verify_result {
    double max_abs_err; /* NaN when an output or expected element is NaN */
    long long bad;      /* elements out of tolerance */
    int first_buffer;   /* -1 when every element passed */
    long long first_index;
    double first_value, first_expected;
} cpu_verify_result;

/* Every element of every output buffer of p (data) against expected, with its buffer's dtype and
 * tolerance (runner_buffer.rtol, atol as prepared): |o - e| <= atol + rtol*|e|. */
void cpu_problem_verify(const cpu_problem *p, cpu_verify_result *v);
/* Puts v into a reply's extras: max_abs_err, and for bad elements bad_elements, first_bad_buffer,
 * first_bad_index, first_bad_value, first_bad_expected. */
void cpu_verify_extras(const cpu_problem *p, const cpu_verify_result *v, json_t *extras);

/* ---- cpu_measure.c ---- */

/* Handles a validated CPU measure request: the reply object without "id", or NULL with err (a
 * request that cannot be served: unreadable source, cache not writable). */
json_t *cpu_measure(runner *r, const runner_measure_req *q, kt_error *err);
/* The op "compile" (PROTOCOL.md): builds q's kernel (and reference) into the cache and runs
 * nothing, on the runner's cores other than its measuring core when it has any (runner_compile_
 * cores), so that a compile never disturbs another runner's measurement there. The reply: status
 * ok, compile_error or timeout, compile_ms, extras.cached_binary and binary; NULL with err as
 * cpu_measure. */
json_t *cpu_compile_only(runner *r, const runner_measure_req *q, kt_error *err);
/* The cores a pinned runner compiles on: those it was started with but its measuring core. 1 with
 * set filled, 0 when there are none (not pinned, or one core only). */
int runner_compile_cores(const runner *r, cpu_set_t *set);

#endif
