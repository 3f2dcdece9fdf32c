/* catalog/kernel_spec — loads and validates kernels/<name>/spec.json (kernels/README.md): the
 * top level, tolerance, reference, test problem and the variants found (in spec.json or cuda.json),
 * each default configuration checked against the device limits; kernel_spec_free. Field checks are
 * in kernel_spec_fields.c, the problem part in kernel_spec_problem.c, the variants and their spaces
 * in kernel_spec_space.c, the CUDA launch geometry in kernel_spec_launch.c. */
#include "core/file.h"
#include "core/hash.h"
#include "core/strbuf.h"
#include "catalog/kernel_spec_impl.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KSPEC_MAX_SUMMARY 1024

static const char *const cpu_limit_names[] = {"cores", "l1d_bytes", "l2_bytes", "l3_bytes",
                                              "vector_bits"};
static const char *const cuda_limit_names[] = {
    "max_threads_per_block", "max_shared_memory_per_block", "max_registers_per_block", "warp_size",
    "compute_capability"};
/* Plausible limits used to parse restrictions when no device of the kind is known. */
static const kspec_limits typical_limits[KSPEC_N_KINDS] = {
    {{8, 32768, 1048576, 33554432, 256}},
    {{1024, 49152, 65536, 32, 80}},
};

const char *kernel_spec_kind_name(kspec_kind kind)
{
    return kind == KSPEC_CUDA ? "cuda" : "cpu";
}

const char *const *kernel_spec_limit_names(kspec_kind kind, int *n)
{
    if (kind == KSPEC_CUDA) {
        *n = (int)(sizeof cuda_limit_names / sizeof cuda_limit_names[0]);
        return cuda_limit_names;
    }
    *n = (int)(sizeof cpu_limit_names / sizeof cpu_limit_names[0]);
    return cpu_limit_names;
}

static int valid_kernel_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KSPEC_MAX_NAME || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

static int load_tolerance(kspec_loader *L, kernel_spec *k, const json_t *root)
{
    static const char *const fields[] = {"rtol", "atol", NULL};
    const json_t *t = json_object_get(root, "tolerance");
    if (!t)
        return 0; /* each output buffer's own, else its dtype's default (kspec_load_verify) */
    if (!json_is_object(t))
        return kspec_bad(L, "tolerance: must be an object {\"rtol\", \"atol\"}");
    if (kspec_check_fields(L, t, "tolerance", fields) < 0)
        return -1;
    const json_t *rt = kspec_need(L, t, "tolerance", "rtol"),
                 *at = kspec_need(L, t, "tolerance", "atol");
    if (!rt || !at)
        return -1;
    if (!json_is_number(rt) || !isfinite(json_number_value(rt)) || json_number_value(rt) < 0)
        return kspec_bad(L, "tolerance.rtol: must be a number >= 0");
    if (!json_is_number(at) || !isfinite(json_number_value(at)) || json_number_value(at) < 0)
        return kspec_bad(L, "tolerance.atol: must be a number >= 0");
    k->rtol = json_number_value(rt);
    k->atol = json_number_value(at);
    k->has_tolerance = 1;
    return 0;
}

static int load_reference(kspec_loader *L, kernel_spec *k, const json_t *root)
{
    static const char *const blas_fields[] = {"kind", NULL};
    static const char *const c_fields[] = {"kind", "source", NULL};
    static const char *const blas_args[] = {"M", "N", "K"}, *const blas_bufs[] = {"A", "B", "C"};
    const json_t *r = json_object_get(root, "reference");
    k->ref_kind = KSPEC_REF_NONE;
    if (!r)
        return 0; /* verified against the default configuration (kspec_load_verify) */
    if (!json_is_object(r))
        return kspec_bad(L, "reference: must be an object {\"kind\", ...}");
    const json_t *kind = kspec_need(L, r, "reference", "kind");
    if (!kind)
        return -1;
    const char *ks = json_string_value(kind);
    if (ks && strcmp(ks, "openblas_sgemm") == 0) {
        if (kspec_check_fields(L, r, "reference", blas_fields) < 0)
            return -1;
        k->ref_kind = KSPEC_REF_OPENBLAS_SGEMM;
        for (int i = 0; i < 3; i++) {
            if (k->n_args <= i || strcmp(k->args[i].name, blas_args[i]) != 0)
                return kspec_bad(
                    L, "reference.kind: openblas_sgemm needs the problem arguments M, N, K "
                       "first, in that order");
            if (k->n_buffers <= i || strcmp(k->buffers[i].name, blas_bufs[i]) != 0 ||
                k->buffers[i].dtype != KT_F32)
                return kspec_bad(
                    L, "reference.kind: openblas_sgemm needs the f32 buffers A, B, C first, in "
                       "that order");
        }
        return 0;
    }
    if (ks && strcmp(ks, "c") == 0) {
        if (kspec_check_fields(L, r, "reference", c_fields) < 0)
            return -1;
        const json_t *src = kspec_need(L, r, "reference", "source");
        if (!src)
            return -1;
        k->ref_kind = KSPEC_REF_C;
        return kspec_source_file(L, k, src, "reference.source", &k->ref_source);
    }
    return kspec_bad(L, "reference.kind: '%.64s' is not known; accepted: openblas_sgemm, c",
                     ks ? ks : "(not a string)");
}

/* The default configuration for a device with these limits (kernel_spec_default) must be a
 * configuration of the space of the default problem and of the test problem on it. */
static int check_default(kspec_loader *L, const kernel_spec *k, kspec_kind kind,
                         const kspec_limits *lim, const char *where)
{
    kspec_problem p;
    kt_error e;
    space *sp = NULL;
    json_t *def = json_loads(kernel_spec_default(k, kind, lim), 0, NULL), *tp = NULL;
    int rc = -1;

    if (!def) {
        kspec_bad(L, "out of memory");
        goto out;
    }
    for (int which = 0; which < 2; which++) {
        const char *label = which ? "the test problem" : "the default problem";
        if (which) {
            if (!k->test_problem_text)
                break;
            if (!(tp = json_loads(k->test_problem_text, 0, NULL))) {
                kspec_bad(L, "out of memory");
                goto out;
            }
        }
        kt_error_clear(&e);
        if (kernel_spec_problem(k, which ? tp : NULL, &p, &e) < 0) {
            kspec_bad(L, "%s: %s: %s", which ? "test_problem" : "problem", label, e.message);
            goto out;
        }
        space_free(sp);
        config_id id;
        if (!(sp = kernel_spec_space(k, kind, &p, lim, &e)) ||
            space_config_from_json(sp, def, &id, &e) < 0) {
            kspec_bad(L, "%s.default: is not valid for %s: %s", where, label, e.message);
            goto out;
        }
    }
    rc = 0;
out:
    space_free(sp);
    json_decref(def);
    json_decref(tp);
    return rc;
}

static int load_test_problem(kspec_loader *L, kernel_spec *k, const json_t *root)
{
    const json_t *tp = json_object_get(root, "test_problem");
    kspec_problem p;
    kt_error e;
    if (!tp)
        return 0;
    if (!json_is_object(tp))
        return kspec_bad(L, "test_problem: must be an object of argument -> integer");
    kt_error_clear(&e);
    if (kernel_spec_problem(k, tp, &p, &e) < 0)
        return kspec_bad(L, "test_problem: %s", e.message);
    json_t *canon = kernel_spec_problem_json(k, &p);
    k->test_problem_text = canon ? json_dumps(canon, JSON_COMPACT) : NULL;
    json_decref(canon);
    return k->test_problem_text ? 0 : kspec_bad(L, "out of memory");
}

/* The canonical text of a spec file (sorted keys, compact), appended to b: what the version hashes,
 * so that spacing and key order in spec.json are not a new version. */
static void canonical_into(strbuf *b, const char *file, const json_t *root)
{
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    strbuf_appendf(b, "%s %zu\n", file, text ? strlen(text) : 0);
    if (text)
        strbuf_puts(b, text);
    else
        b->failed = STRBUF_NO_MEMORY;
    free(text);
}

/* The compiled closure and the version, once every variant is loaded. */
static int load_version(kspec_loader *L, kernel_spec *k, const json_t *root,
                        const json_t *cuda_root)
{
    const char *roots[KSPEC_N_KINDS + 1];
    int n_roots = 0, rc = -1;
    kt_error e;
    strbuf b;
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++)
        if (k->variants[kind].present)
            roots[n_roots++] = k->variants[kind].source;
    if (k->ref_source)
        roots[n_roots++] = k->ref_source;
    strbuf_init(&b, 4 * (size_t)KFILES_MAX_BYTES);
    canonical_into(&b, "spec.json", root);
    if (cuda_root)
        canonical_into(&b, "cuda.json", cuda_root);
    if (L->data_hash != KT_FNV1A_OFFSET) /* the data files read (inits, answers) */
        strbuf_appendf(&b, "\ndata %016llx", (unsigned long long)L->data_hash);
    if (L->data_sums_len) /* the uploaded data files named, by their SHA-256 */
        strbuf_appendf(&b, "\nuploaded data %zu\n%s", L->data_sums_len, L->data_sums);
    kt_error_clear(&e);
    if (b.failed) {
        kspec_bad(L, "out of memory");
        goto out;
    }
    if ((k->n_compiled = kernel_files_closure(k->files, roots, n_roots, k->compiled, &e)) < 0 ||
        kernel_files_version(k->files, strbuf_str(&b), roots, n_roots, k->version, &e) < 0) {
        kspec_bad(L, "%s", e.message);
        goto out;
    }
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++)
        snprintf(k->variants[kind].hash, sizeof k->variants[kind].hash, "%s", k->version);
    rc = 0;
out:
    strbuf_release(&b);
    return rc;
}

kernel_spec *kernel_spec_load(const char *dir, const kspec_limits *const limits[KSPEC_N_KINDS],
                              char *why, size_t why_cap)
{
    char rdir[PATH_MAX];
    kt_error ferr;
    kernel_files *files = NULL;
    kspec_loader L = {.file = "spec.json", .why = why, .cap = why_cap};
    if (why && why_cap)
        why[0] = '\0';
    if (!realpath(dir, rdir)) {
        kspec_bad(&L, "cannot be read: %s", strerror(errno));
        return NULL;
    }
    if (!(files = kernel_files_from_dir(rdir, &ferr))) {
        kspec_bad(&L, "the folder's files: %s", ferr.message);
        return NULL;
    }
    return kernel_spec_load_files(files, NULL, rdir, limits, why, why_cap);
}

/* file's bytes (from the kernel's files) as a JSON document: NULL after kspec_bad. */
static json_t *parse_file(kspec_loader *L, const char *bytes, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        kspec_bad(L, "not valid JSON: %s at line %d column %d", jerr.text, jerr.line, jerr.column);
    return root;
}

/* The kernel's name and summary, and its folder and spec path when it has a folder (dir). */
static int load_identity(kspec_loader *L, kernel_spec *k, const json_t *root, const char *dir)
{
    if (dir) {
        char spec_path[PATH_MAX];
        snprintf(spec_path, sizeof spec_path, "%.*s/spec.json", PATH_MAX - 16, dir);
        if (!(k->dir = strdup(dir)) || !(k->path = strdup(spec_path)))
            return kspec_bad(L, "out of memory");
    }
    const json_t *name = kspec_need(L, root, "", "name");
    if (!name)
        return -1;
    if (!json_is_string(name) || !valid_kernel_name(json_string_value(name)))
        return kspec_bad(L, "name: must be 1 to %d characters of letters, digits, '_', '-' and '.'",
                         KSPEC_MAX_NAME);
    snprintf(k->name, sizeof k->name, "%s", json_string_value(name));
    const json_t *summary = json_object_get(root, "summary");
    if (summary &&
        (!json_is_string(summary) || strlen(json_string_value(summary)) > KSPEC_MAX_SUMMARY))
        return kspec_bad(L, "summary: must be a string of at most %d characters",
                         KSPEC_MAX_SUMMARY);
    if (!(k->summary = strdup(summary ? json_string_value(summary) : "")))
        return kspec_bad(L, "out of memory");
    return 0;
}

/* What every variant shares: the problem and its expressions, tolerance, reference, verification
 * and test problem; the default problem must fit the data files as the test problem does. */
static int load_problem(kspec_loader *L, kernel_spec *k, const json_t *root)
{
    kspec_problem dp;
    kt_error de;
    const json_t *problem = kspec_need(L, root, "", "problem");
    if (!problem || kspec_load_args(L, k, problem) < 0 || kspec_scan_neural(L, k, root) < 0 ||
        kspec_load_problem_exprs(L, k, root) < 0 || load_tolerance(L, k, root) < 0 ||
        load_reference(L, k, root) < 0 || kspec_load_verify(L, k, root) < 0 ||
        load_test_problem(L, k, root) < 0)
        return -1;
    kt_error_clear(&de);
    if (kernel_spec_problem(k, NULL, &dp, &de) < 0)
        return kspec_bad(L, "problem: the default problem: %s", de.message);
    return 0;
}

/* The variants of spec.json's "variants", or the cuda one of cuda.json (parsed into *cuda_root),
 * each default checked against the device limits when they are known; at least one. */
static int load_variants(kspec_loader *L, kernel_spec *k, const json_t *root,
                         const kspec_limits *const limits[KSPEC_N_KINDS], json_t **cuda_root)
{
    static const char *const variant_kinds[] = {"cpu", "cuda", NULL};
    const char *cuda_bytes;
    size_t cuda_len = 0;
    const json_t *variants = json_object_get(root, "variants");
    if (variants && !json_is_object(variants))
        return kspec_bad(L, "variants: must be an object {\"cpu\": {...}, \"cuda\": {...}}");
    if (variants && kspec_check_fields(L, variants, "variants", variant_kinds) < 0)
        return -1;
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++) {
        const kspec_limits *lim = limits && limits[kind] ? limits[kind] : &typical_limits[kind];
        const json_t *obj = variants ? json_object_get(variants, variant_kinds[kind]) : NULL;
        char where[32];
        snprintf(where, sizeof where, "variants.%s", variant_kinds[kind]);
        if (!obj && kind == KSPEC_CUDA &&
            (cuda_bytes = kernel_files_get(k->files, "cuda.json", &cuda_len))) {
            /* The CUDA variant kept beside spec.json until the two are merged. */
            L->file = "cuda.json";
            if (!(*cuda_root = parse_file(L, cuda_bytes, cuda_len)))
                return -1;
            obj = *cuda_root;
            snprintf(where, sizeof where, "cuda");
        }
        if (!obj)
            continue;
        if (kspec_load_variant(L, k, (kspec_kind)kind, obj, where, lim) < 0)
            return -1;
        if (limits && limits[kind] && check_default(L, k, (kspec_kind)kind, lim, where) < 0)
            return -1;
        L->file = "spec.json";
    }
    if (!k->variants[KSPEC_CPU].present && !k->variants[KSPEC_CUDA].present)
        return kspec_bad(L, "variants: the kernel has neither a cpu nor a cuda variant");
    return 0;
}

kernel_spec *kernel_spec_load_files(kernel_files *files, kernel_data *data, const char *dir,
                                    const kspec_limits *const limits[KSPEC_N_KINDS], char *why,
                                    size_t why_cap)
{
    static const char *const top_fields[] = {
        "name",      "summary",   "problem",  "problem_restrictions", "buffers", "flops",
        "tolerance", "reference", "variants", "test_problem",         "scalars", "metrics",
        "verify",    NULL};
    const char *bytes = NULL;
    size_t len = 0;
    json_t *root = NULL, *cuda_root = NULL;
    kernel_spec *k = NULL;
    /* Messages name the file by its base name: the caller knows the folder (the catalog's log
     * line names it; an API reply names the kernel). */
    kspec_loader L = {
        .file = "spec.json", .why = why, .cap = why_cap, .data_hash = KT_FNV1A_OFFSET};
    int ok = 0;

    if (why && why_cap)
        why[0] = '\0';
    if (!(bytes = kernel_files_get(files, "spec.json", &len))) {
        kspec_bad(&L, "missing: the kernel has no spec.json");
        goto out;
    }
    if (!(root = parse_file(&L, bytes, len)))
        goto out;
    if (!json_is_object(root)) {
        kspec_bad(&L, "the file must hold a JSON object");
        goto out;
    }
    if (!(k = calloc(1, sizeof *k))) {
        kspec_bad(&L, "out of memory");
        goto out;
    }
    k->files = files;
    files = NULL;
    k->data = data;
    data = NULL;
    /* the data files (inits, answers) the problem names are part of what every variant computes:
     * load_version hashes L.data_hash into the version */
    if (kspec_check_fields(&L, root, "", top_fields) < 0 || load_identity(&L, k, root, dir) < 0 ||
        load_problem(&L, k, root) < 0 || load_variants(&L, k, root, limits, &cuda_root) < 0 ||
        load_version(&L, k, root, cuda_root) < 0)
        goto out;
    ok = 1;
out:
    if (!ok) {
        kernel_spec_free(k);
        k = NULL;
    }
    kernel_files_free(files);
    kernel_data_free(data);
    json_decref(root);
    json_decref(cuda_root);
    return k;
}

void kernel_spec_free(kernel_spec *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->n_problem_restrictions; i++)
        kspec_expr_release(&k->problem_restrictions[i]);
    free(k->problem_restrictions);
    for (int i = 0; i < k->n_buffers; i++) {
        kspec_expr_release(&k->buffers[i].elements);
        free(k->buffers[i].init.file.path);
        free(k->buffers[i].answer.path);
    }
    kspec_expr_release(&k->flops);
    for (int i = 0; i < k->n_scalars; i++)
        kspec_expr_release(&k->scalars[i].value);
    for (int i = 0; i < k->n_metrics; i++)
        kspec_expr_release(&k->metrics[i].value);
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++) {
        kspec_variant *v = &k->variants[kind];
        free(v->file);
        free(v->source);
        free(v->params_text);
        free(v->restrictions_text);
        free(v->default_text);
        for (int i = 0; i < v->n_defaults; i++) {
            kspec_expr_release(&v->default_when[i]);
            free(v->default_texts[i]);
        }
        for (int i = 0; i < v->n_trans; i++)
            kspec_expr_release(&v->trans_when[i]);
        for (int i = 0; i < 3; i++) {
            kspec_expr_release(&v->block[i]);
            kspec_expr_release(&v->grid[i]);
        }
        kspec_expr_release(&v->shared_bytes);
    }
    free(k->summary);
    free(k->dir);
    free(k->path);
    free(k->ref_source);
    free(k->test_problem_text);
    kernel_files_free(k->files);
    kernel_data_free(k->data);
    free(k);
}
