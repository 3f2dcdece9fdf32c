/* catalog/kernel_spec_impl — internal to the kernel_spec*.c files of catalog/: the loader that
 * validates one spec file (the first error recorded in why as "<file>: <field path>: <what is
 * wrong[: what to write]>", the file named by its base name: spec.json, cuda.json), its field
 * checks (kernel_spec_fields.c) and the loaders of each part of a spec, called by kernel_spec_load
 * in this order: kspec_load_args, kspec_scan_neural (kernel_spec_neural.c),
 * kspec_load_problem_exprs (kernel_spec_problem.c), then per variant kspec_load_variant
 * (kernel_spec_space.c), which calls kspec_load_neural and, for cuda, kspec_load_geometry
 * (kernel_spec_launch.c). Every loader fills the kernel_spec it is given; kernel_spec_free releases
 * what they allocated, also after a failure part-way. */
#ifndef KT_CATALOG_KERNEL_SPEC_IMPL_H
#define KT_CATALOG_KERNEL_SPEC_IMPL_H

#include <stdint.h>

#include "catalog/kernel_spec.h"

#define KSPEC_MAX_VALUES  4096               /* values of one parameter */
#define KSPEC_MAX_INTEXPR 9007199254740992.0 /* 2^53: reals beyond are not exact integers */

typedef struct kspec_loader {
    const char *file; /* the file being validated, named in messages */
    char *why;
    size_t cap;
    int failed;
    uint64_t data_hash; /* the data files read (kspec_data_file): part of every variant's hash */
    /* the uploaded data files named ("<name> <dtype> <sha256>\n" each, in the order read): part
     * of the version (load_version) */
    char data_sums[KDATA_MAX_FILES * 2 * (KFILES_MAX_NAME + KDATA_SHA_LEN + 8)];
    size_t data_sums_len;
} kspec_loader;

/* --- field checks (kernel_spec_fields.c); each returns -1 after kspec_bad on failure ---------- */

/* Records the first error as "<file>: <message>"; returns -1. */
int kspec_bad(kspec_loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 for an identifier of at most KSPEC_MAX_NAME characters that is not a Python keyword. */
int kspec_valid_ident(const char *s);
/* 0 when v is such an identifier, else -1 after "<field>: "<v>" <why and what to write>". */
int kspec_check_ident(kspec_loader *L, const json_t *v, const char *field);
/* Refuses fields of obj not in accepted (NULL-terminated). */
int kspec_check_fields(kspec_loader *L, const json_t *obj, const char *where,
                       const char *const *accepted);
/* obj[key] (borrowed), or NULL after "<where>.<key>: missing". */
const json_t *kspec_need(kspec_loader *L, const json_t *obj, const char *where, const char *key);
/* obj's "kind" (<where>.kind), one of kinds (NULL-terminated): its index, or -1 after kspec_bad
 * ("<where>.kind: must be one of a, b, c"). */
int kspec_kind_of(kspec_loader *L, const json_t *obj, const char *where, const char *const *kinds);
/* Entry i of the array arr of section (a field path: "metrics", "<where>.transformations"): where
 * (cap bytes) gets "<section>[i]"; the entry must be an object ("<where>: must be an
 * object<shape>") holding only fields. Returns it (borrowed from arr), or NULL after kspec_bad. */
const json_t *kspec_entry(kspec_loader *L, const json_t *arr, size_t i, const char *section,
                          const char *shape, const char *const *fields, char *where, size_t cap);
/* The "name" of entry i of arr (where: "<section>[i]"), fetched by the caller: an identifier that
 * no entry before it has ("<where>.name: '<name>' is listed twice"). 0, or -1 after kspec_bad. */
int kspec_entry_name(kspec_loader *L, const json_t *arr, size_t i, const json_t *name,
                     const char *where);
int kspec_get_int(kspec_loader *L, const json_t *v, const char *field, long long *out);
/* Parses an expression field (a string, or an integer taken as its text) into out (owned by out;
 * kspec_expr_release frees it). */
int kspec_parse_expr(kspec_loader *L, kspec_expr *out, const json_t *v, const char *field,
                     const expr_names *names);
void kspec_expr_release(kspec_expr *x);
/* A plain file name of the kernel's files (k->files): the name in *name (malloc'd). The files'
 * bytes go into the version (kernel_files_version, at the end of kernel_spec_load_files). */
int kspec_source_file(kspec_loader *L, const kernel_spec *k, const json_t *v, const char *field,
                      char **name);

/* A data file (a buffer's init "file", an answer) of a buffer of dtype: a kernel folder's file like
 * a source file, at most KSPEC_MAX_DATA_BYTES, hashed into L->data_hash; a kernel given as data
 * names one of its uploaded data (k->data: of the same dtype), its SHA-256 noted in L->data_sums.
 * out->path must be NULL. */
int kspec_data_file(kspec_loader *L, const kernel_spec *k, const json_t *v, const char *field,
                    kt_dtype dtype, kspec_datafile *out);

/* --- the parts of a spec ---------------------------------------------------------------------- */

/* kernel_spec_problem.c: the "problem" arguments; then problem_restrictions, buffers and flops. */
int kspec_load_args(kspec_loader *L, kernel_spec *k, const json_t *arr);
int kspec_load_problem_exprs(kspec_loader *L, kernel_spec *k, const json_t *root);
/* An integral value: ints and bools, and reals that are whole and exact. 0, or -1 when not. */
int kspec_value_to_ll(const expr_value *v, long long *out);
/* kernel_spec_data.c (the kernel interface of issue 27): a buffer's dtype, tolerance and init
 * (while the buffers load), then after flops the scalars and metrics (kspec_load_scalars), after
 * the reference the tolerances' defaults and "verify" (kspec_load_verify), and per cpu variant the
 * generated call, openmp and threads (kspec_load_call, after its parameters). */
int kspec_load_buffer_data(kspec_loader *L, kernel_spec *k, kspec_buffer *buf, const json_t *b,
                           const char *where);
int kspec_load_scalars(kspec_loader *L, kernel_spec *k, const json_t *root);
int kspec_load_verify(kspec_loader *L, kernel_spec *k, const json_t *root);
int kspec_load_call(kspec_loader *L, const kernel_spec *k, kspec_variant *v, const json_t *obj,
                    const char *where);
/* The names buffers, flops and scalars see: the problem arguments, then the neural parameters. */
int kspec_arg_names(const kernel_spec *k, const char **names);
/* kernel_spec_neural.c: the neural parameters and identity of the variants' "neural" sections in
 * spec.json (before the buffers and flops, which see them), then per variant its section (after
 * its parameters; obj NULL: none). */
int kspec_scan_neural(kspec_loader *L, kernel_spec *k, const json_t *root);
int kspec_load_neural(kspec_loader *L, kernel_spec *k, kspec_kind kind, kspec_variant *v,
                      const json_t *obj, const char *where);
/* Appends to restr (a JSON array of expressions) what keeps a variant's space to the configurations
 * whose transformations are in allow_mask (kernel_spec_space_neural); nothing without a section. 0,
 * -1 when out of memory. */
int kspec_neural_restrict(const kernel_spec *k, kspec_kind kind, unsigned allow_mask,
                          json_t *restr);
/* text with every neural parameter name replaced by its identity value (malloc'd; NULL: out of
 * memory). */
char *kspec_neural_identity_text(const kernel_spec *k, const char *text);
/* kernel_spec_space.c: one variant (where: "variants.cpu", "cuda"). */
int kspec_load_variant(kspec_loader *L, kernel_spec *k, kspec_kind kind, const json_t *obj,
                       const char *where, const kspec_limits *lim);
/* kernel_spec_launch.c: block, grid and shared_bytes of a cuda variant. */
int kspec_load_geometry(kspec_loader *L, const kernel_spec *k, kspec_variant *v, const json_t *obj,
                        const char *where);

#endif
