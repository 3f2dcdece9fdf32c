/* catalog/kernel_spec — one kernel of the kernel catalog (kernels/<name>/spec.json,
 * kernels/README.md): problem arguments, buffers, FLOPs, tolerance, reference and the cpu / cuda
 * variants, validated and with every expression parsed once. Read-only after kernel_spec_load, so
 * shared by all threads.
 *
 * Lifecycle: kernel_spec_load -> kernel_spec_problem / kernel_spec_space / kernel_spec_launch (any
 * thread) -> kernel_spec_free. The spec owns everything in it. */
#ifndef KT_CATALOG_KERNEL_SPEC_H
#define KT_CATALOG_KERNEL_SPEC_H

#include <jansson.h>
#include <stddef.h>

#include "core/dtype.h"
#include "core/error.h"
#include "catalog/kernel_data.h"
#include "catalog/kernel_files.h"
#include "space/expr.h"
#include "space/space.h"

#define KSPEC_MAX_NAME         64          /* kernel, argument, buffer and parameter names */
#define KSPEC_MAX_ARGS         16          /* problem arguments */
#define KSPEC_MAX_BUFFERS      16          /* buffers */
#define KSPEC_MAX_PARAMS       64          /* parameters of one variant */
#define KSPEC_MAX_RESTRICTIONS 256         /* restrictions of one list */
#define KSPEC_MAX_EXPR_LEN     4096        /* characters of one expression */
#define KSPEC_MAX_FILE_BYTES   (1 << 20)   /* spec.json, cuda.json and every source file */
#define KSPEC_MAX_LIMITS       8           /* device limits of one kind */
#define KSPEC_MAX_DEFAULTS     8           /* entries of a "default" list */
#define KSPEC_MAX_ELEMENTS     (1LL << 34) /* elements of one buffer */
#define KSPEC_MAX_NEURAL       8           /* neural parameters, and transformations, of a kernel */
#define KSPEC_MAX_SCALARS      16          /* scalar arguments */
#define KSPEC_MAX_METRICS      8           /* user metrics */
#define KSPEC_MAX_CALL_ARGS    (KSPEC_MAX_BUFFERS + KSPEC_MAX_SCALARS + KSPEC_MAX_ARGS)
#define KSPEC_MAX_DATA_BYTES   (64LL << 20) /* an init or answer data file */

typedef enum { KSPEC_CPU = 0, KSPEC_CUDA, KSPEC_N_KINDS } kspec_kind;
typedef enum { KSPEC_INPUT = 0, KSPEC_OUTPUT } kspec_role;
typedef enum { KSPEC_REF_OPENBLAS_SGEMM = 0, KSPEC_REF_C, KSPEC_REF_NONE } kspec_ref_kind;
/* How outputs are checked (kernels/README.md, "verify"): against the reference, against the
 * default configuration's output, against known-good data files, or not at all. */
typedef enum {
    KSPEC_VERIFY_REFERENCE = 0,
    KSPEC_VERIFY_DEFAULT,
    KSPEC_VERIFY_ANSWER,
    KSPEC_VERIFY_NONE
} kspec_verify_kind;
/* How a buffer is filled once per problem (inputs; outputs are poisoned before each checked run).
 */
typedef enum {
    KSPEC_INIT_DEFAULT = 0, /* uniform: [-1, 1) for floating dtypes, integers in [-100, 100] */
    KSPEC_INIT_UNIFORM,
    KSPEC_INIT_NORMAL,
    KSPEC_INIT_CONSTANT,
    KSPEC_INIT_IOTA,
    KSPEC_INIT_ZEROS,
    KSPEC_INIT_FILE
} kspec_init_kind;

/* The device limits a variant's restrictions may use, values in kernel_spec_limit_names order. */
typedef struct kspec_limits {
    long long v[KSPEC_MAX_LIMITS];
} kspec_limits;

typedef struct kspec_expr {
    char *text;
    expr *e;
} kspec_expr;

/* A problem argument: an integer (min, max, def), or with "type": "float" a real (fmin, fmax,
 * fdef; min, max, def then unused). */
typedef struct kspec_arg {
    char name[KSPEC_MAX_NAME + 1];
    long long min, max, def;
    int is_float;
    double fmin, fmax, fdef;
} kspec_arg;

/* A data file of the kernel (init "file" / "data", answer): a kernel folder's file by its absolute
 * path; a submitted kernel's uploaded data (kernel_data.h) by its name in path and its SHA-256 in
 * sha256 (empty for a folder's file). bytes: its size. */
typedef struct kspec_datafile {
    char *path;
    long long bytes;
    char sha256[KDATA_SHA_LEN + 1];
} kspec_datafile;

typedef struct kspec_init {
    kspec_init_kind kind;
    double a, b; /* uniform: min, max; normal: mean, std; constant: value */
    kspec_datafile file;
} kspec_init;

typedef struct kspec_buffer {
    char name[KSPEC_MAX_NAME + 1];
    kspec_role role;
    kspec_expr elements; /* slots: the problem arguments, then the neural parameters */
    kt_dtype dtype;
    double rtol, atol; /* the buffer's own "tolerance", else the kernel's, else its dtype's */
    kspec_init init;
    kspec_datafile answer; /* verify "answer": the expected output (outputs only; path NULL) */
} kspec_buffer;

/* A scalar argument: its C type (f32, f64, i32, i64) and its value, an expression of the problem
 * (slots: the problem arguments, then the neural parameters). */
typedef struct kspec_scalar {
    char name[KSPEC_MAX_NAME + 1];
    kt_dtype type;
    kspec_expr value;
} kspec_scalar;

/* A user metric: an expression over the problem arguments, then time_ms (the last slot). */
typedef struct kspec_metric {
    char name[KSPEC_MAX_NAME + 1];
    kspec_expr value;
} kspec_metric;

/* One argument of a generated call (a cpu variant's "arguments"). */
typedef enum { KSPEC_CALL_BUFFER = 0, KSPEC_CALL_SCALAR, KSPEC_CALL_PROBLEM } kspec_call_kind;
typedef struct kspec_call_arg {
    kspec_call_kind kind;
    int index; /* into buffers, scalars or the problem arguments */
} kspec_call_arg;

typedef struct kspec_variant {
    int present;
    char *file;                     /* the JSON file it was read from (spec.json or cuda.json) */
    char *source;                   /* the source's file name among the kernel's files */
    char entry[KSPEC_MAX_NAME + 1]; /* CUDA entry point; cpu: the generated call's, or "" */
    /* cpu "arguments": the generated call entry(args...) (n_call_args -1: no generated call, the
     * variant defines ktune_kernel itself) */
    int n_call_args;
    kspec_call_arg call_args[KSPEC_MAX_CALL_ARGS];
    int openmp;        /* cpu "openmp": compiled with -fopenmp */
    int threads_param; /* cpu "threads": index of the parameter that is the thread count, or -1 */
    int n_params;
    char param_names[KSPEC_MAX_PARAMS][KSPEC_MAX_NAME + 1];
    char *params_text;       /* JSON array [{"name","values"}] for space_new */
    char *restrictions_text; /* JSON array of strings */
    char *default_text;      /* JSON object parameter -> value (of a list: its last entry) */
    /* "default" as a list of {"when": expression over the device limits, "config": {...}}: the
     * entries in order (default_when[i].text NULL: no "when", the last entry only); 0 entries for
     * a plain object. kernel_spec_default picks one for a device. */
    int n_defaults;
    kspec_expr default_when[KSPEC_MAX_DEFAULTS]; /* slots: the device limits, in limit-name order */
    char *default_texts[KSPEC_MAX_DEFAULTS];     /* JSON object parameter -> value */
    kspec_expr block[3], grid[3],
        shared_bytes;                  /* CUDA; slots: parameters, then problem arguments */
    char hash[KFILES_VERSION_LEN + 1]; /* the kernel's version (kernel_spec.version) */
    /* "neural" (kernels/README.md): the kernel's neural parameters (kernel_spec.neural_names) are
     * parameters of this variant, neural_param[j] the index of the j-th; the transformations in
     * order (bit i of a mask = transformation i), each applied when its "when" holds (slots: the
     * variant's parameters). has_neural 0: no such section (n_trans 0). */
    int has_neural;
    int neural_param[KSPEC_MAX_NEURAL];
    int n_trans;
    char trans_names[KSPEC_MAX_NEURAL][KSPEC_MAX_NAME + 1];
    kspec_expr trans_when[KSPEC_MAX_NEURAL];
} kspec_variant;

typedef struct kernel_spec {
    char name[KSPEC_MAX_NAME + 1];
    char *summary;
    char *dir;  /* the kernel's folder (absolute); NULL for a kernel given as data */
    char *path; /* its spec.json; NULL for a kernel given as data */
    /* The kernel's files (spec.json, cuda.json, sources) and what is compiled of them: every
     * variant's source and the reference source with their quoted includes (kernel_files_closure,
     * names borrowed from files). version: kernel_files_version of the canonical spec and those
     * files, the key's kernel_hash; the runner compiles a content-addressed copy of exactly those
     * files (kernel_files_materialise). */
    kernel_files *files;
    int n_compiled;
    const char *compiled[KFILES_MAX_INCLUDES];
    /* the uploaded data files of a kernel given as data (POST /v1/kernels "data"), or NULL; their
     * SHA-256s are part of the version */
    kernel_data *data;
    char version[KFILES_VERSION_LEN + 1];
    int n_args;
    kspec_arg args[KSPEC_MAX_ARGS];
    int n_problem_restrictions;
    kspec_expr *problem_restrictions; /* slots: the problem arguments */
    int n_buffers;
    kspec_buffer buffers[KSPEC_MAX_BUFFERS];
    kspec_expr flops; /* slots: the problem arguments, then the neural parameters */
    /* The neural parameters named by the variants' "neural" sections (the same list in every
     * variant that has one) and their identity values; buffers[].elements and flops see them after
     * the problem arguments. n_neural 0: a kernel without neural transformations. */
    int n_neural;
    char neural_names[KSPEC_MAX_NEURAL][KSPEC_MAX_NAME + 1];
    long long neural_identity[KSPEC_MAX_NEURAL];
    double rtol, atol; /* "tolerance" (has_tolerance 0: none given, each dtype's default) */
    int has_tolerance;
    kspec_ref_kind ref_kind; /* KSPEC_REF_NONE: no "reference" */
    kspec_verify_kind verify;
    int n_scalars;
    kspec_scalar scalars[KSPEC_MAX_SCALARS];
    int n_metrics;
    kspec_metric metrics[KSPEC_MAX_METRICS];
    char *ref_source;        /* file name among the kernel's files (KSPEC_REF_C), else NULL */
    char *test_problem_text; /* compact JSON object, or NULL */
    kspec_variant variants[KSPEC_N_KINDS];
} kernel_spec;

/* A validated problem: every argument (defaults filled), the neural parameters' values (the
 * identity's, or a configuration's: kernel_spec_problem_neural) and what the spec derives from
 * them. A runner gets neural[] after values[] as extra problem arguments. */
typedef struct kspec_problem {
    long long values[KSPEC_MAX_ARGS];  /* integer arguments (a float argument: 0) */
    double fvalues[KSPEC_MAX_ARGS];    /* float arguments ("type": "float"; integers as doubles) */
    double scalars[KSPEC_MAX_SCALARS]; /* the scalars' values (integers exact below 2^53) */
    int n_neural;                      /* = kernel_spec.n_neural */
    long long neural[KSPEC_MAX_NEURAL];
    long long elements[KSPEC_MAX_BUFFERS];
    double flops;
} kspec_problem;

/* "reference", "default", "answer", "none". */
const char *kernel_spec_verify_name(kspec_verify_kind v);
/* Argument i of p as an expression value (EXPR_FLOAT for a float argument, else EXPR_INT). */
expr_value kernel_spec_arg_value(const kernel_spec *k, const kspec_problem *p, int i);
/* Argument i of p as JSON (a real for a float argument; new reference). */
json_t *kernel_spec_arg_json(const kernel_spec *k, const kspec_problem *p, int i);
/* The user metrics of an ok trial of p that took time_ms: {"<name>": value, ...} (new reference;
 * a metric whose value is not a finite number is left out). NULL when the kernel has none. */
json_t *kernel_spec_metrics_json(const kernel_spec *k, const kspec_problem *p, double time_ms);

/* "cpu" / "cuda". */
const char *kernel_spec_kind_name(kspec_kind kind);
/* The names of the device limits of a kind (cpu: cores, l1d_bytes, ...), *n set to their count. */
const char *const *kernel_spec_limit_names(kspec_kind kind, int *n);

/* Loads <dir>/spec.json (with <dir>/cuda.json as the cuda variant when spec.json has none): reads
 * the folder's files (kernel_files_from_dir) and calls kernel_spec_load_files.
 * limits[k] are the limits of a device of kind k, or NULL when none is known: the default
 * configuration must be valid for the default problem and the test problem, fully when limits are
 * given, by value lists only otherwise. Returns NULL with why filled (capped at why_cap) when the
 * kernel cannot be used: "<file>: <JSON path>: <what is wrong>[: what to write]", the file by its
 * base name (spec.json, cuda.json), e.g. "spec.json: variants.cpu.restrictions[1]: unexpected '&'
 * at column 13: write "and" (in '...')" (kernels/README.md, "Errors"). */
kernel_spec *kernel_spec_load(const char *dir, const kspec_limits *const limits[KSPEC_N_KINDS],
                              char *why, size_t why_cap);
/* The same from files given as data: "spec.json" (and "cuda.json") among files, every source named
 * by the spec among them, the data files an init or answer names among data (NULL: none; dir NULL
 * then, a folder's data files are its own). Takes files and data in every case (freed with the
 * spec, or at once on failure). dir: the folder they were read from, or NULL. */
kernel_spec *kernel_spec_load_files(kernel_files *files, kernel_data *data, const char *dir,
                                    const kspec_limits *const limits[KSPEC_N_KINDS], char *why,
                                    size_t why_cap);
void kernel_spec_free(kernel_spec *k);
/* The default configuration (compact JSON object, owned by k) of a variant on a device with these
 * limits: the plain "default" object, or the config of the first entry of a "default" list whose
 * "when" holds for lim (lim NULL, or no "when" holding: the list's last entry, which has none). */
const char *kernel_spec_default(const kernel_spec *k, kspec_kind kind, const kspec_limits *lim);

/* Validates a request's problem (NULL or JSON null: all defaults): an object of argument ->
 * integer, each in its range, every problem restriction holding. Errors: KT_ERR_BAD_PROBLEM naming
 * the argument (and listing the accepted ones) or the restriction violated. */
int kernel_spec_problem(const kernel_spec *k, const json_t *problem, kspec_problem *out,
                        kt_error *err);
/* p with the neural parameters' values of configuration id of sp (a space of the variant: built by
 * kernel_spec_space or kernel_spec_space_neural), and the buffers' elements and FLOPs recomputed
 * for them (p as from kernel_spec_problem; a kernel without neural parameters leaves it as it is).
 * Errors: KT_ERR_INTERNAL (id outside sp), KT_ERR_BAD_PROBLEM (a buffer size or the FLOP count
 * invalid for these values). */
int kernel_spec_problem_neural(const kernel_spec *k, kspec_kind kind, const space *sp, config_id id,
                               kspec_problem *p, kt_error *err);
/* The canonical problem object: every argument in spec order (new reference). */
json_t *kernel_spec_problem_json(const kernel_spec *k, const kspec_problem *p);
/* What the spec derives from a problem, as expressions of its arguments for the predictors'
 * derived features (model/derived.h): [{"name": <buffer>, "expr": <its elements>}, ... in buffer
 * order, then {"name": "flops", "expr": <flops>}] (new reference, NULL: out of memory). The neural
 * parameters in an expression are replaced by their identity values (the features see only the
 * problem arguments). */
json_t *kernel_spec_derived_json(const kernel_spec *k);
/* The space of a variant for a problem on a device: the variant's parameters and restrictions with
 * the problem arguments and the device limits as constants. The caller owns it. For a variant with
 * a "neural" section only its semantics-preserving configurations (the neural parameters at their
 * identity values): kernel_spec_space_neural with allow_mask 0. */
space *kernel_spec_space(const kernel_spec *k, kspec_kind kind, const kspec_problem *p,
                         const kspec_limits *lim, kt_error *err);

/* ---- neural transformations (the variant's "neural" section; kernel_spec_neural.c) ---- */

/* 1 when the variant has a "neural" section. */
int kernel_spec_has_neural(const kernel_spec *k, kspec_kind kind);
/* Number of transformations (0 without a section) and the name of the i-th ("group", ...; NULL
 * when i is out of range). */
int kernel_spec_neural_count(const kernel_spec *k, kspec_kind kind);
const char *kernel_spec_neural_name(const kernel_spec *k, kspec_kind kind, int i);
/* The space like kernel_spec_space, restricted to configurations whose applied transformations are
 * all in allow_mask (bit i = transformation i) and which, when not the identity, apply at least one
 * transformation. allow_mask 0: only semantics-preserving configurations (what kernel_spec_space
 * itself returns for a kernel with a neural section). Bits past the transformations are ignored; a
 * variant without a section gives its plain space whatever the mask. */
space *kernel_spec_space_neural(const kernel_spec *k, kspec_kind kind, const kspec_problem *p,
                                const kspec_limits *lim, unsigned allow_mask, kt_error *err);
/* Bits of the transformations configuration id of sp applies (0: semantics-preserving; always 0
 * for a variant without a section). -1 with err (KT_ERR_INTERNAL: id outside sp, sp not a space
 * of the variant). */
int kernel_spec_neural_applied(const kernel_spec *k, kspec_kind kind, const space *sp, config_id id,
                               unsigned *mask, kt_error *err);
/* The CUDA launch geometry of configuration id of sp (built by kernel_spec_space). Returns 0, or -1
 * with err set when an expression fails or gives a value out of range (block and grid >= 1,
 * shared_bytes >= 0). */
int kernel_spec_launch(const kernel_spec *k, const space *sp, config_id id, const kspec_problem *p,
                       long long block[3], long long grid[3], long long *shared_bytes,
                       kt_error *err);

#endif
