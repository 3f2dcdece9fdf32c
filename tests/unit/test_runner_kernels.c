/* Verifies the kernel catalog on the CPU: for every kernels/<name>/spec.json with a cpu variant,
 * the default configuration and 5 random valid ones (space_new over the variant's parameters and
 * restrictions, constants = the problem arguments and the probed CPU limits) must measure `ok`
 * through ktune-runner on the spec's test_problem (else the defaults). The same check runs on the
 * good test kernels (tests/kernels/scale, naive_gemm) so that the harness itself is always
 * exercised. A kernel with a "neural" section (kernels/README.md) gets each configuration's
 * neural values after the problem's arguments, and its buffers sized for them; for
 * kernels/conv2d_neural every transformation kind is verified against its reference, and the
 * reference itself against a naive loop written here from neural/nn_transform.h's formulas.
 * Needs kt_space linked next to kt_runner. */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/rng.h"
#include "space/expr.h"
#include "space/space.h"

#ifdef __SANITIZE_ADDRESS__
#define RUNNER_KERNELS_ASAN 1
#else
#define RUNNER_KERNELS_ASAN 0
#endif

#define REPLY_MAX       (256 * 1024)
#define RANDOM_CONFIGS  5
#define CALL_TIMEOUT_MS 300000
#define MAX_ARGS        24
#define NEURAL_PICKS    1 /* configurations verified per transformation kind */

typedef struct runner_proc {
    pid_t pid;
    int to, from;
    char buf[REPLY_MAX];
    size_t len;
    int status; /* wait status once finished */
    char cache[256];
    json_t *constants; /* CPU limits from the probe */
} runner_proc;

/* ---- a minimal client: one request, one reply ---- */

static void proc_start(runner_proc *p)
{
    int in[2], out[2];
    snprintf(p->cache, sizeof p->cache, "/tmp/ktune-runner-kernels-XXXXXX");
    assert_non_null(mkdtemp(p->cache));
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        execl(KT_RUNNER_PATH, "ktune-runner", "--device", "cpu", "--cache-dir", p->cache,
              "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->to = in[1];
    p->from = out[0];
    p->len = 0;
    p->status = 0;
}

static json_t *proc_call(runner_proc *p, json_t *req)
{
    char *line = json_dumps(req, JSON_COMPACT);
    assert_non_null(line);
    size_t n = strlen(line), off = 0;
    while (off < n) {
        ssize_t w = write(p->to, line + off, n - off);
        if (w <= 0)
            fail_msg("cannot write to the runner: %s", strerror(errno));
        off += (size_t)w;
    }
    assert_int_equal(write(p->to, "\n", 1), 1);
    double deadline = kt_clock_ms() + CALL_TIMEOUT_MS;
    json_t *reply = NULL;
    for (;;) {
        char *nl = memchr(p->buf, '\n', p->len);
        if (nl) {
            reply = json_loadb(p->buf, (size_t)(nl - p->buf), 0, NULL);
            size_t used = (size_t)(nl - p->buf) + 1;
            memmove(p->buf, p->buf + used, p->len - used);
            p->len -= used;
            break;
        }
        int left = (int)(deadline - kt_clock_ms());
        if (left <= 0)
            fail_msg("no reply within %d s to %.300s", CALL_TIMEOUT_MS / 1000, line);
        struct pollfd pfd = {.fd = p->from, .events = POLLIN};
        if (poll(&pfd, 1, left) <= 0)
            continue;
        assert_true(p->len < sizeof p->buf);
        ssize_t got = read(p->from, p->buf + p->len, sizeof p->buf - p->len);
        if (got <= 0)
            fail_msg("the runner exited (crashed?) while measuring %.300s", line);
        p->len += (size_t)got;
    }
    free(line);
    assert_non_null(reply);
    return reply;
}

/* Closes the runner's stdin and waits for it; returns its wait status. Idempotent. */
static int proc_finish(runner_proc *p)
{
    if (p->to >= 0) {
        close(p->to);
        p->to = -1;
        waitpid(p->pid, &p->status, 0);
    }
    return p->status;
}

/* Ends the runner whatever state it is in, removes the cache; never fails (runs in teardown). */
static void proc_cleanup(runner_proc *p)
{
    if (p->to >= 0) {
        kill(p->pid, SIGKILL);
        proc_finish(p);
    }
    if (p->from >= 0)
        close(p->from);
    p->from = -1;
    DIR *d = opendir(p->cache);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", p->cache, e->d_name);
            if (e->d_name[0] != '.')
                unlink(path);
        }
        closedir(d);
    }
    rmdir(p->cache);
    json_decref(p->constants);
}

static int setup(void **state)
{
    runner_proc *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->to = p->from = -1;
    proc_start(p);
    json_t *probe = json_pack("{s:i, s:s}", "id", 1, "op", "probe");
    json_t *r = proc_call(p, probe);
    json_decref(probe);
    json_t *d = json_object_get(r, "device");
    assert_non_null(d);
    p->constants = json_object();
    static const char *const limits[] = {"cores", "l1d_bytes", "l2_bytes", "l3_bytes",
                                         "vector_bits"};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        json_t *v = json_object_get(d, limits[i]);
        assert_true(json_is_integer(v));
        json_object_set(p->constants, limits[i], v);
    }
    json_decref(r);
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    runner_proc *p = *state;
    proc_cleanup(p);
    free(p);
    return 0;
}

/* ---- spec handling ---- */

typedef struct problem_args {
    int n;
    const char *names[MAX_ARGS];
    expr_value values[MAX_ARGS];
} problem_args;

/* An integer field, or an expression over the problem arguments ("M*K"). */
static double eval_size(const json_t *v, const problem_args *a, const char *what)
{
    if (json_is_number(v))
        return json_number_value(v);
    if (!json_is_string(v))
        fail_msg("%s must be a number or an expression", what);
    expr_names names = {.n_params = 0,
                        .params = NULL,
                        .n_consts = a->n,
                        .const_names = a->names,
                        .const_values = a->values};
    kt_error err;
    kt_error_clear(&err);
    expr *e = expr_parse(json_string_value(v), &names, 4096, &err);
    if (!e)
        fail_msg("%s '%s': %s", what, json_string_value(v), err.message);
    expr_value out;
    int rc = expr_eval(e, NULL, &out);
    expr_free(e);
    if (rc < 0 || (out.type != EXPR_INT && out.type != EXPR_FLOAT))
        fail_msg("%s '%s' does not evaluate to a number", what, json_string_value(v));
    return out.type == EXPR_INT ? (double)out.u.i : out.u.f;
}

/* The problem: defaults, overridden by test_problem. Fills args and the constants for restrictions.
 */
static void read_problem(const json_t *spec, problem_args *a, json_t *problem, json_t *names,
                         json_t *constants)
{
    const json_t *test = json_object_get(spec, "test_problem");
    size_t i;
    json_t *arg;
    a->n = 0;
    json_array_foreach(json_object_get(spec, "problem"), i, arg)
    {
        assert_true(a->n < MAX_ARGS);
        const char *name = json_string_value(json_object_get(arg, "name"));
        assert_non_null(name);
        json_t *v = json_object_get(test, name);
        if (!v)
            v = json_object_get(arg, "default");
        assert_true(json_is_integer(v));
        a->names[a->n] = name;
        a->values[a->n] = (expr_value){.type = EXPR_INT, .u.i = json_integer_value(v)};
        a->n++;
        json_array_append(problem, v);
        json_array_append_new(names, json_string(name));
        json_object_set(constants, name, v);
    }
}

/* Everything of a measure request but the defines. */
static json_t *base_request(const json_t *spec, const char *dir, const problem_args *a,
                            json_t *problem, json_t *names)
{
    const json_t *cpu = json_object_get(json_object_get(spec, "variants"), "cpu");
    char src[1600], ref[1600];
    snprintf(src, sizeof src, "%s/%s", dir, json_string_value(json_object_get(cpu, "source")));
    json_t *buffers = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(spec, "buffers"), i, b)
    {
        double el = eval_size(json_object_get(b, "elements"), a, "buffer elements");
        json_array_append_new(
            buffers, json_pack("{s:O, s:I, s:O}", "name", json_object_get(b, "name"), "elements",
                               (json_int_t)el, "role", json_object_get(b, "role")));
    }
    json_t *jref = json_object_get(spec, "reference");
    json_t *reference;
    if (strcmp(json_string_value(json_object_get(jref, "kind")), "c") == 0) {
        snprintf(ref, sizeof ref, "%s/%s", dir, json_string_value(json_object_get(jref, "source")));
        reference = json_pack("{s:s, s:s}", "kind", "c", "source", ref);
    } else {
        reference = json_deep_copy(jref);
    }
    json_t *flops = json_object_get(spec, "flops");
    json_t *req =
        json_pack("{s:s, s:s, s:s, s:O, s:O, s:o, s:o, s:O, s:f, s:i, s:i, s:f, s:f, s:f}", "op",
                  "measure", "kernel", json_string_value(json_object_get(spec, "name")), "source",
                  src, "problem", problem, "problem_names", names, "buffers", buffers, "reference",
                  reference, "tolerance", json_object_get(spec, "tolerance"), "flops",
                  flops ? eval_size(flops, a, "flops") : 0.0, "min_repeats", 1, "max_repeats", 3,
                  "min_seconds", 0.0, "max_seconds", 1.0, "compile_timeout_s", 120.0);
    assert_non_null(req);
    return req;
}

/* The variant's default configuration on this CPU (borrowed): the "default" object, or of a list
 * (kernels/README.md) the config of the first entry whose "when" holds on the probed limits. */
static const json_t *default_config(const json_t *cpu, const json_t *limits)
{
    const json_t *def = json_object_get(cpu, "default");
    if (!json_is_array(def))
        return def;
    const char *names[8];
    expr_value values[8];
    int n = 0;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)limits, key, val)
    {
        assert_true(n < 8);
        names[n] = key;
        values[n++] = (expr_value){.type = EXPR_INT, .u.i = json_integer_value(val)};
    }
    expr_names en = {.n_consts = n, .const_names = names, .const_values = values};
    size_t i;
    json_t *e;
    json_array_foreach(def, i, e)
    {
        const json_t *when = json_object_get(e, "when");
        if (!when)
            return json_object_get(e, "config");
        kt_error err;
        kt_error_clear(&err);
        expr *x = expr_parse(json_string_value(when), &en, 4096, &err);
        if (!x)
            fail_msg("default[%zu].when: %s", i, err.message);
        int holds = expr_test(x, NULL);
        expr_free(x);
        if (holds == 1)
            return json_object_get(e, "config");
    }
    fail_msg("the default list has no entry for this CPU");
    return NULL;
}

/* Measures configuration id of sp and expects ok: a kernel with a "neural" section gets the
 * configuration's neural values after the problem's arguments (buffers and flops see them). */
static void measure_ok(runner_proc *p, const char *dir, const json_t *spec, const problem_args *a0,
                       const json_t *problem0, const json_t *names0, const space *sp, config_id id,
                       int req_id, const char *note)
{
    const char *name = json_string_value(json_object_get(spec, "name"));
    const json_t *neural =
        json_object_get(json_object_get(json_object_get(spec, "variants"), "cpu"), "neural");
    json_t *defines = space_config_json(sp, id);
    json_t *problem = json_deep_copy(problem0), *names = json_deep_copy(names0);
    problem_args a = *a0;
    size_t i;
    json_t *pn;
    json_array_foreach(json_object_get(neural, "parameters"), i, pn)
    {
        assert_true(a.n < MAX_ARGS);
        json_t *v = json_object_get(defines, json_string_value(pn));
        assert_true(json_is_integer(v));
        a.names[a.n] = json_string_value(pn);
        a.values[a.n++] = (expr_value){.type = EXPR_INT, .u.i = json_integer_value(v)};
        json_array_append(problem, v);
        json_array_append(names, pn);
    }
    json_t *req = base_request(spec, dir, &a, problem, names);
    char *problem_text = json_dumps(problem, JSON_COMPACT);
    char *def_text = json_dumps(defines, JSON_COMPACT);
    json_object_set_new(req, "id", json_integer(req_id));
    json_object_set_new(req, "defines", defines);
    json_t *r = proc_call(p, req);
    const char *status = json_string_value(json_object_get(r, "status"));
    if (!status || strcmp(status, "ok") != 0) {
        char *t = json_dumps(r, JSON_COMPACT);
        fail_msg("%s %s %s: %s", name, problem_text, def_text, t ? t : "?");
    }
    json_t *gf = json_object_get(json_object_get(r, "extras"), "gflops");
    /* issue 32: the catalog's kernels take their working memory from the runner's scratch block,
     * mapped and touched before timing (gemm, whose recorded fixtures name its version, still
     * mallocs per call: at its small test problem that block stays in the runner's heap): no timed
     * call faults */
    json_t *ex = json_object_get(r, "extras");
    if (strstr(dir, "/tests/kernels/") == NULL) {
        if (strcmp(name, "gemm") != 0 && !json_is_integer(json_object_get(ex, "scratch_bytes")))
            fail_msg("%s %s: no scratch_bytes: the kernel allocates itself", name, def_text);
        /* The sanitizer build's runner serves a kernel's malloc from its own allocator (fresh
         * pages, a quarantine): there only kernels on the runner's scratch are held to it. */
        if (json_integer_value(json_object_get(ex, "timed_page_faults")) > 16 &&
            (!RUNNER_KERNELS_ASAN || strcmp(name, "gemm") != 0))
            fail_msg("%s %s %s: %lld page faults while timing", name, problem_text, def_text,
                     (long long)json_integer_value(json_object_get(ex, "timed_page_faults")));
    }
    printf("  %-12s %s %-48s ok  %9.4f ms  %7.2f GFLOP/s%s\n", name, problem_text, def_text,
           json_number_value(json_object_get(r, "time_ms")), json_number_value(gf), note);
    free(def_text);
    free(problem_text);
    json_decref(r);
    json_decref(req);
    json_decref(problem);
    json_decref(names);
}

/* Measures the default and RANDOM_CONFIGS random valid configurations; returns how many. */
static int check_kernel(runner_proc *p, const char *dir, const json_t *spec)
{
    const char *name = json_string_value(json_object_get(spec, "name"));
    const json_t *cpu = json_object_get(json_object_get(spec, "variants"), "cpu");
    problem_args a;
    json_t *problem = json_array(), *names = json_array();
    json_t *constants = json_deep_copy(p->constants);
    read_problem(spec, &a, problem, names, constants);
    kt_error err;
    kt_error_clear(&err);
    json_t *restrictions = json_object_get(cpu, "restrictions");
    space *sp = space_new(json_object_get(cpu, "parameters"),
                          json_is_array(restrictions) ? restrictions : NULL, constants, NULL, &err);
    if (!sp)
        fail_msg("%s: cannot build the cpu space: %s", name, err.message);
    if (space_count(sp) == 0)
        fail_msg("%s: the cpu space has no valid configuration on this CPU", name);
    config_id ids[1 + RANDOM_CONFIGS];
    int n = 0;
    if (space_config_from_json(sp, default_config(cpu, p->constants), &ids[n++], &err) < 0)
        fail_msg("%s: the default configuration is not valid here: %s", name, err.message);
    kt_rng rng;
    kt_rng_seed(&rng, 20240611);
    uint64_t want = space_count(sp) - 1 < RANDOM_CONFIGS ? space_count(sp) - 1 : RANDOM_CONFIGS;
    for (int tries = 0; (uint64_t)(n - 1) < want && tries < 1000; tries++) {
        config_id id = space_sample(sp, &rng);
        int seen = 0;
        for (int k = 0; k < n; k++)
            seen |= ids[k] == id;
        if (!seen)
            ids[n++] = id;
    }
    for (int k = 0; k < n; k++)
        measure_ok(p, dir, spec, &a, problem, names, sp, ids[k], k + 1,
                   k == 0 ? "  (default)" : "");
    printf("%s: %d configuration(s) of %llu valid verified ok\n", name, n,
           (unsigned long long)space_count(sp));
    json_decref(problem);
    json_decref(names);
    json_decref(constants);
    space_free(sp);
    return n;
}

/* Checks the kernel in dir when its spec has a cpu variant. Returns 1 if it was checked. */
static int check_dir(runner_proc *p, const char *dir)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/spec.json", dir);
    json_error_t jerr;
    json_t *spec = json_load_file(path, 0, &jerr);
    if (!spec) {
        if (access(path, F_OK) != 0)
            return 0;
        fail_msg("%s: %s (line %d)", path, jerr.text, jerr.line);
    }
    int checked = 0;
    if (json_object_get(json_object_get(spec, "variants"), "cpu")) {
        check_kernel(p, dir, spec);
        checked = 1;
    }
    json_decref(spec);
    return checked;
}

static int dir_filter(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

static void catalog_kernels_verify(void **state)
{
    runner_proc *p = *state;
    char root[1024];
    snprintf(root, sizeof root, "%s/kernels", KT_SOURCE_DIR);
    struct dirent **list = NULL;
    int n = scandir(root, &list, dir_filter, alphasort);
    assert_true(n >= 0);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        char dir[1024 + 320];
        snprintf(dir, sizeof dir, "%s/%s", root, list[i]->d_name);
        checked += check_dir(p, dir);
        free(list[i]);
    }
    free(list);
    /* the repository's own kernels have cpu variants (gemm, conv2d): none found is a break */
    if (checked == 0)
        fail_msg("no kernels/*/spec.json with a cpu variant in %s: nothing verified", root);
    printf("%d catalog kernel(s) verified on the CPU\n", checked);
    int st = proc_finish(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void good_test_kernels_verify(void **state)
{
    runner_proc *p = *state;
    static const char *const good[] = {"scale", "naive_gemm"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/tests/kernels/%s", KT_SOURCE_DIR, good[i]);
        assert_int_equal(check_dir(p, dir), 1);
    }
    int st = proc_finish(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- kernels/conv2d_neural: every transformation kind, and its reference ---- */

static json_t *load_spec(const char *dir)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/spec.json", dir);
    json_error_t jerr;
    json_t *spec = json_load_file(path, 0, &jerr);
    if (!spec)
        fail_msg("%s: %s (line %d)", path, jerr.text, jerr.line);
    return spec;
}

/* For every transformation of conv2d_neural's "neural" section, NEURAL_PICKS random configurations
 * applying it (and group + bottleneck together) measure ok against the reference of what they
 * compute. */
static void neural_transformations_verify(void **state)
{
    runner_proc *p = *state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/kernels/conv2d_neural", KT_SOURCE_DIR);
    json_t *spec = load_spec(dir);
    const json_t *cpu = json_object_get(json_object_get(spec, "variants"), "cpu");
    const json_t *neural = json_object_get(cpu, "neural");
    const json_t *trans = json_object_get(neural, "transformations");
    problem_args a;
    json_t *problem = json_array(), *names = json_array();
    json_t *constants = json_deep_copy(p->constants);
    read_problem(spec, &a, problem, names, constants);
    kt_error err;
    kt_error_clear(&err);
    space *sp = space_new(json_object_get(cpu, "parameters"), json_object_get(cpu, "restrictions"),
                          constants, NULL, &err);
    if (!sp)
        fail_msg("conv2d_neural: %s", err.message);
    /* the transformations' "when" over the neural parameters */
    const char *pnames[8];
    int np = 0, pidx[8];
    size_t i;
    json_t *pn;
    json_array_foreach(json_object_get(neural, "parameters"), i, pn)
    {
        pnames[np] = json_string_value(pn);
        pidx[np] = space_param_index(sp, pnames[np]);
        assert_true(pidx[np] >= 0);
        np++;
    }
    expr_names en = {.n_params = np, .params = pnames};
    size_t nt = json_array_size(trans);
    assert_true(nt >= 5 && nt <= 8);
    expr *when[8];
    int picked[9] = {0};
    for (size_t t = 0; t < nt; t++) {
        when[t] = expr_parse(json_string_value(json_object_get(json_array_get(trans, t), "when")),
                             &en, 4096, &err);
        assert_non_null(when[t]);
    }
    kt_rng rng;
    kt_rng_seed(&rng, 20261127);
    int measured = 0, req_id = 100;
    for (int tries = 0; tries < 20000; tries++) {
        config_id id = space_sample(sp, &rng);
        int idx[64];
        assert_int_equal(space_decode(sp, id, idx), 0);
        expr_value slots[8];
        for (int j = 0; j < np; j++)
            slots[j] =
                (expr_value){.type = EXPR_INT,
                             .u.i = (int64_t)space_param_value_number(sp, pidx[j], idx[pidx[j]])};
        unsigned mask = 0;
        for (size_t t = 0; t < nt; t++)
            if (expr_test(when[t], slots) == 1)
                mask |= 1u << t;
        /* one slot per transformation applied alone, one for group + bottleneck (bits 0, 1) */
        int slot = mask == 3u ? 8 : -1;
        for (size_t t = 0; t < nt && slot < 0; t++)
            slot = mask == 1u << t ? (int)t : -1;
        if (slot < 0 || picked[slot] >= NEURAL_PICKS)
            continue;
        picked[slot]++;
        char note[96];
        snprintf(note, sizeof note, "  (%s)",
                 slot == 8
                     ? "group+bottleneck"
                     : json_string_value(json_object_get(json_array_get(trans, slot), "name")));
        measure_ok(p, dir, spec, &a, problem, names, sp, id, req_id++, note);
        measured++;
        if (measured == NEURAL_PICKS * ((int)nt + 1))
            break;
    }
    for (size_t t = 0; t < nt; t++)
        if (picked[t] < NEURAL_PICKS)
            fail_msg("transformation %zu: only %d configuration(s) found", t, picked[t]);
    assert_int_equal(picked[8], NEURAL_PICKS);
    printf("conv2d_neural: %d configurations verified, %d per transformation kind\n", measured,
           NEURAL_PICKS);
    for (size_t t = 0; t < nt; t++)
        expr_free(when[t]);
    space_free(sp);
    json_decref(problem);
    json_decref(names);
    json_decref(constants);
    json_decref(spec);
    int st = proc_finish(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* neural/nn_transform.h, written out here as its header states it (independently of reference.c):
 * the input channel range of output element (k, y) and the offset of weight row k. */
static void nn_inputs(long g, long b, long seq, long C, long K, long P, long k, long y, long *first,
                      long *count)
{
    long Kp = K / b;
    if (seq == 0) {
        *count = C / g;
        *first = (k / (Kp / g)) * *count;
    } else if (seq == 1) {
        *count = C / g;
        *first = (y * g / P) * *count;
    } else if (seq == 2) {
        *count = C / g;
        *first = ((k % 16) / (16 / g)) * *count;
    } else if (k < Kp / 2) {
        *count = C / g;
        *first = (k / ((Kp / 2) / g)) * *count;
    } else {
        *count = C / (2 * g);
        *first = ((k - Kp / 2) / ((Kp / 2) / (2 * g))) * *count;
    }
}

static long nn_weight_offset(long g, long b, long seq, long C, long K, long RS, long k)
{
    long Kp = K / b;
    if (seq != 3 || k < Kp / 2)
        return k * (C / g) * RS;
    return (Kp / 2) * (C / g) * RS + (k - Kp / 2) * (C / (2 * g)) * RS;
}

/* kernels/conv2d_neural/reference.c, compiled here, against a naive loop built on nn_inputs and
 * nn_weight_offset, for every SEQ with groups and bottlenecks, on random inputs. */
static void neural_reference_matches_naive(void **state)
{
    runner_proc *p = *state;
    char src[1024], so[512], tail[256];
    snprintf(src, sizeof src, "%s/kernels/conv2d_neural/reference.c", KT_SOURCE_DIR);
    snprintf(so, sizeof so, "%s/neural_reference.so", p->cache);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cc -std=gnu11 -O2 -fPIC -shared -o '%s' '%s' 2>&1", so, src);
    FILE *cc = popen(cmd, "r");
    assert_non_null(cc);
    tail[0] = '\0';
    while (fgets(tail, sizeof tail, cc))
        ;
    if (pclose(cc) != 0)
        fail_msg("cc reference.c: %s", tail);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    typedef int (*ref_fn)(float *const *, const long long *);
    ref_fn ref = (ref_fn)dlsym(h, "ktune_reference");
    assert_non_null(ref);
    static const long cases[][3] = {{1, 1, 0}, {2, 1, 0}, {4, 2, 0}, {1, 4, 0}, {2, 1, 1},
                                    {5, 1, 1}, {2, 1, 2}, {8, 2, 2}, {1, 1, 3}, {2, 2, 3}};
    const long N = 2, C = 40, K = 64, H = 9, W = 7, R = 3, S = 2, P = H - R + 1, Q = W - S + 1;
    kt_rng rng;
    kt_rng_seed(&rng, 14);
    float *in = malloc(sizeof(float) * (size_t)(N * C * H * W));
    float *w = malloc(sizeof(float) * (size_t)(K * C * R * S));
    float *out = malloc(sizeof(float) * (size_t)(N * K * P * Q));
    assert_true(in && w && out);
    for (long i = 0; i < N * C * H * W; i++)
        in[i] = (float)((double)(kt_rng_next(&rng) >> 40) / 8388608.0 - 1.0);
    for (long i = 0; i < K * C * R * S; i++)
        w[i] = (float)((double)(kt_rng_next(&rng) >> 40) / 8388608.0 - 1.0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        long g = cases[c][0], b = cases[c][1], seq = cases[c][2], Kp = K / b;
        long long prob[10] = {N, C, K, H, W, R, S, g, b, seq};
        for (long i = 0; i < N * Kp * P * Q; i++)
            out[i] = NAN;
        float *bufs[3] = {in, w, out};
        assert_int_equal(ref(bufs, prob), 0);
        double worst = 0;
        for (long n = 0; n < N; n++)
            for (long k = 0; k < Kp; k++)
                for (long y = 0; y < P; y++)
                    for (long x = 0; x < Q; x++) {
                        long first, count;
                        nn_inputs(g, b, seq, C, K, P, k, y, &first, &count);
                        const float *wk = w + nn_weight_offset(g, b, seq, C, K, R * S, k);
                        double sum = 0;
                        for (long ci = 0; ci < count; ci++)
                            for (long r = 0; r < R; r++)
                                for (long s = 0; s < S; s++)
                                    sum +=
                                        (double)in[((n * C + first + ci) * H + y + r) * W + x + s] *
                                        wk[(ci * R + r) * S + s];
                        double got = out[((n * Kp + k) * P + y) * Q + x];
                        double e = fabs(got - sum);
                        if (!(e <= 1e-5 + 1e-5 * fabs(sum)))
                            fail_msg("g %ld b %ld seq %ld: out[%ld][%ld][%ld][%ld] = %g, naive %g",
                                     g, b, seq, n, k, y, x, got, sum);
                        worst = e > worst ? e : worst;
                    }
        printf("  reference g %ld b %ld seq %ld: max |ref - naive| %.2g\n", g, b, seq, worst);
    }
    /* a transformation that does not apply is refused */
    long long bad[10] = {N, C, K, H, W, R, S, 3, 1, 0}; /* C % 3 != 0 */
    float *bufs[3] = {in, w, out};
    assert_int_not_equal(ref(bufs, bad), 0);
    dlclose(h);
    free(in);
    free(w);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(good_test_kernels_verify, setup, teardown),
        cmocka_unit_test_setup_teardown(catalog_kernels_verify, setup, teardown),
        cmocka_unit_test_setup_teardown(neural_transformations_verify, setup, teardown),
        cmocka_unit_test_setup_teardown(neural_reference_matches_naive, setup, teardown),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
