/* measure/real_backend — the cpu and cuda:N backend: one ktune-runner per backend (per measuring
 * thread and device), started on the first measure. A measure builds the runner request from the
 * kernel spec, the problem and the configuration; on cpu it first has the runner compile it (op
 * "compile": into the binary cache shared by the host's runners, on every core but the measuring
 * one while a measurement holds it: measure/core_reserve.h's guests) without the device's mutex,
 * so that one thread compiles while another measures (issue 32);
 * then it holds the device's mutex (one measurement at a time per device) and waits for the reply
 * with a deadline: compile timeout + a run timeout scaled from the best time seen for the target. A
 * runner that overruns is killed (timeout), one that dies is reaped (runtime_error with the
 * signal); the next measure starts a new one. While it waits the runner client asks the backend's
 * stop check: a measurement whose job was cancelled kills the runner's process group and records
 * nothing (BACKEND_STOPPED). A runner killed with SIGKILL from outside is not blamed on the
 * configuration at once: the measure is repeated once on a new runner. A kernel with neural
 * parameters (kernels/README.md) gets the configuration's values after the problem's arguments,
 * with the buffers and FLOPs they give (kernel_spec_problem_neural). Issue 32: a threshold given by
 * backend_set_early_stop travels as the request's "early_stop" (the runner stops a clearly slower
 * configuration after a few repeats), and every result carries extras.device_busy_ms, the time the
 * measure held the device's lock (the job's device idle share). */
#include "measure/backend_impl.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "core/clock.h"
#include "core/log.h"
#include "space/space.h"
#include "measure/core_reserve.h"
#include "measure/runner_client.h"

#define REAL_SEEN_TARGETS       32  /* targets whose best time a backend remembers */
#define REAL_DEADLINE_SLACK_S   2.0 /* process start, buffer fill, reference */
#define REAL_RUN_FLOOR_S        5.0 /* run timeout bounds once a target has an ok result */
#define REAL_RUN_CEIL_S         60.0
#define REAL_RUN_FACTOR         20.0 /* x best time x (max_repeats + 2) */
#define REAL_CALL_LIMIT_FLOOR_S 0.1  /* slow_factor never gives up on a call shorter than this */
#define REAL_STOP_GRACE_S       2.0
#define REAL_BUILD_FAILED       2 /* compile_apart: the build's failure is the trial's result */
/* A measure after a compile apart finds its binary: its deadline allows for a rebuild (the binary
 * evicted meanwhile) of 3x the compile's time, at least this, at most the compile timeout. */
#define REAL_REBUILD_FLOOR_S 10.0

typedef struct seen_target {
    char *key; /* kernel_hash|problem_key */
    double best_ms;
} seen_target;

typedef struct real_backend {
    const catalog *cat;
    const catalog_device *dev;
    const catalog_real_options *opt;
    runner_client *runner;
    int restart; /* the last reply said the device context is lost */
    /* the "files" of the last kernel version measured (issue 27: the runner compiles these texts;
     * the sources cache is unreadable to its user), kept so that a job's trials share one object */
    json_t *files;
    char files_version[KFILES_VERSION_LEN + 1];
    /* the version the runner last measured, and whether it was submitted over HTTP (untrusted
     * code: its runner serves no other version, see real_measure) */
    char ran_version[KFILES_VERSION_LEN + 1];
    int ran_submitted;
    seen_target seen[REAL_SEEN_TARGETS];
    int next_seen;
    double early_above_ms; /* backend_set_early_stop's, for the next measure only; 0: none */
} real_backend;

void *real_open(const catalog *c, const char *device, kt_error *err)
{
    real_backend *b = NULL;
    const catalog_device *d = catalog_find_real(c, device);
    if (!d || !d->available) {
        kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "device '%.200s' is not available", device);
        goto out;
    }
    if (!(b = calloc(1, sizeof *b))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    b->cat = c;
    b->dev = d;
    b->opt = catalog_measure_options(c);
    runner_spawn sp = {.path = b->opt->runner,
                       .device = d->name,
                       .cache_dir = b->opt->cache_dir,
                       .cpu_core = d->kind == KSPEC_CPU ? b->opt->cpu_core : -1,
                       .cache_max_bytes = b->opt->cache_max_mb > 0   ? b->opt->cache_max_mb << 20
                                          : b->opt->cache_max_mb < 0 ? -1
                                                                     : 0};
    if (!(b->runner = runner_client_new(&sp, err))) {
        free(b);
        b = NULL;
    }
out:
    return b;
}

void real_close(void *impl)
{
    real_backend *b = impl;
    if (!b)
        return;
    runner_client_stop(b->runner, REAL_STOP_GRACE_S);
    runner_client_free(b->runner);
    for (int i = 0; i < REAL_SEEN_TARGETS; i++)
        free(b->seen[i].key);
    json_decref(b->files);
    free(b);
}

/* The remembered entry of a target, created (evicting the oldest) when absent. */
static seen_target *seen_for(real_backend *b, const target *t)
{
    char key[1024];
    snprintf(key, sizeof key, "%s|%s|%s", t->key.kernel, t->key.kernel_hash, t->key.problem_key);
    for (int i = 0; i < REAL_SEEN_TARGETS; i++) {
        if (b->seen[i].key && strcmp(b->seen[i].key, key) == 0)
            return &b->seen[i];
    }
    seen_target *s = &b->seen[b->next_seen];
    b->next_seen = (b->next_seen + 1) % REAL_SEEN_TARGETS;
    free(s->key);
    s->key = strdup(key);
    s->best_ms = 0;
    return s->key ? s : NULL;
}

/* Seconds to wait for a reply: compile timeout + run timeout (+ slack). */
static double deadline_s(const real_backend *b, const seen_target *s)
{
    double run = b->opt->run_timeout_s;
    if (s && s->best_ms > 0) {
        run = REAL_RUN_FACTOR * s->best_ms / 1000.0 * (b->opt->max_repeats + 2);
        run = run < REAL_RUN_FLOOR_S ? REAL_RUN_FLOOR_S : run;
        run = run > REAL_RUN_CEIL_S ? REAL_RUN_CEIL_S : run;
        run += b->opt->max_seconds;
    }
    return b->opt->compile_timeout_s + run + REAL_DEADLINE_SLACK_S;
}

static json_t *number_json(double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

/* A buffer of the measure request: name, elements, role, and where they differ from fp32 with
 * the default fill its dtype and init; an output its tolerance (PROTOCOL.md). */
static json_t *buffer_json(const kernel_spec *k, int i, long long elements)
{
    const kspec_buffer *b = &k->buffers[i];
    const kspec_init *in = &b->init;
    json_t *o = json_pack("{s:s, s:I, s:s}", "name", b->name, "elements", (json_int_t)elements,
                          "role", b->role == KSPEC_OUTPUT ? "output" : "input");
    json_t *init = NULL;
    if (!o)
        return NULL;
    switch (in->kind) {
    case KSPEC_INIT_UNIFORM:
        init = json_pack("{s:s, s:f, s:f}", "kind", "uniform", "min", in->a, "max", in->b);
        break;
    case KSPEC_INIT_NORMAL:
        init = json_pack("{s:s, s:f, s:f}", "kind", "normal", "mean", in->a, "std", in->b);
        break;
    case KSPEC_INIT_CONSTANT:
        init = json_pack("{s:s, s:f}", "kind", "constant", "value", in->a);
        break;
    case KSPEC_INIT_IOTA:
        init = json_pack("{s:s}", "kind", "iota");
        break;
    case KSPEC_INIT_ZEROS:
        init = json_pack("{s:s}", "kind", "zeros");
        break;
    case KSPEC_INIT_FILE:
        /* an uploaded data file goes by its hash (its bytes only when the runner asks: below) */
        init = in->file.sha256[0]
                   ? json_pack("{s:s, s:s}", "kind", "data", "sha256", in->file.sha256)
                   : json_pack("{s:s, s:s}", "kind", "file", "file", in->file.path);
        break;
    default:
        break;
    }
    int bad =
        (in->kind != KSPEC_INIT_DEFAULT && (!init || json_object_set_new(o, "init", init) < 0)) ||
        (b->dtype != KT_F32 &&
         json_object_set_new(o, "dtype", json_string(kt_dtype_name(b->dtype))) < 0) ||
        (b->role == KSPEC_OUTPUT &&
         json_object_set_new(o, "tolerance",
                             json_pack("{s:f, s:f}", "rtol", b->rtol, "atol", b->atol)) < 0);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The kernel interface of issue 27 in a measure request: scalars, verify, the generated call,
 * openmp and the thread count (a parameter's value of this configuration). */
static int interface_fields(const real_backend *b, const kernel_spec *k, const kspec_problem *p,
                            const json_t *defines, json_t *req)
{
    const kspec_variant *v = &k->variants[b->dev->kind];
    if (k->n_scalars > 0) {
        json_t *sc = json_array();
        for (int i = 0; sc && i < k->n_scalars; i++) {
            if (json_array_append_new(sc, json_pack("{s:s, s:s, s:f}", "name", k->scalars[i].name,
                                                    "type", kt_dtype_name(k->scalars[i].type),
                                                    "value", p->scalars[i])) < 0) {
                json_decref(sc);
                sc = NULL;
            }
        }
        if (!sc || json_object_set_new(req, "scalars", sc) < 0)
            return -1;
    }
    json_t *verify = json_pack("{s:s}", "kind", kernel_spec_verify_name(k->verify));
    if (!verify || json_object_set_new(req, "verify", verify) < 0)
        return -1;
    if (k->verify == KSPEC_VERIFY_DEFAULT) {
        json_t *def = json_loads(kernel_spec_default(k, b->dev->kind, &b->dev->limits), 0, NULL);
        if (!def || json_object_set_new(verify, "defines", def) < 0)
            return -1;
    }
    if (k->verify == KSPEC_VERIFY_ANSWER) {
        json_t *files = json_object();
        if (!files || json_object_set_new(verify, "buffers", files) < 0)
            return -1;
        for (int i = 0; i < k->n_buffers; i++) {
            const kspec_datafile *a = &k->buffers[i].answer;
            if (a->path &&
                json_object_set_new(files, k->buffers[i].name,
                                    a->sha256[0] ? json_pack("{s:s}", "sha256", a->sha256)
                                                 : json_string(a->path)) < 0)
                return -1;
        }
    }
    if (b->dev->kind != KSPEC_CPU)
        return 0;
    if (v->n_call_args >= 0) {
        static const char *const kinds[] = {"buffer", "scalar", "problem"};
        json_t *args = json_array();
        json_t *call = args ? json_pack("{s:s, s:o}", "entry", v->entry, "arguments", args) : NULL;
        if (!call || json_object_set_new(req, "call", call) < 0)
            return -1;
        for (int i = 0; i < v->n_call_args; i++)
            if (json_array_append_new(args, json_pack("{s:i}", kinds[v->call_args[i].kind],
                                                      v->call_args[i].index)) < 0)
                return -1;
    }
    if (v->openmp && json_object_set_new(req, "openmp", json_true()) < 0)
        return -1;
    if (v->threads_param >= 0) {
        const json_t *t = json_object_get(defines, v->param_names[v->threads_param]);
        if (json_is_integer(t) && json_integer_value(t) > 0 &&
            json_object_set(req, "threads", (json_t *)t) < 0)
            return -1;
    }
    return 0;
}

/* The compiled files of k ({"name": "text"}, borrowed from b), made once per version. */
static json_t *files_of(real_backend *b, const kernel_spec *k)
{
    if (!b->files || strcmp(b->files_version, k->version) != 0) {
        json_decref(b->files);
        b->files = kernel_files_json(k->files, k->compiled, k->n_compiled);
        snprintf(b->files_version, sizeof b->files_version, "%s", b->files ? k->version : "");
    }
    return b->files;
}

/* The measure request (without "id"). A launch geometry that cannot be computed makes the trial
 * invalid: *invalid_reason is then filled and NULL returned with err clear. */
static json_t *build_request(real_backend *b, const kernel_spec *k, const target *t, config_id id,
                             const kspec_problem *p, char *invalid_reason, size_t cap,
                             kt_error *err)
{
    const kspec_variant *v = &k->variants[b->dev->kind];
    const catalog_real_options *o = b->opt;
    json_t *req = NULL, *problem = json_array(), *names = json_array(), *bufs = json_array();
    json_t *defines = space_config_json(t->sp, id), *ref = NULL;
    char dir[PATH_MAX], src[PATH_MAX + KFILES_MAX_NAME + 2], ref_src[sizeof src];
    int ok = 0;

    /* The runner compiles the version's content-addressed copy: exactly the bytes hashed into
     * the key's kernel_hash, never a kernel folder's file that may have changed since. */
    if (catalog_kernel_sources(b->cat, k, dir, sizeof dir, err) < 0)
        goto out;
    snprintf(src, sizeof src, "%s/%s", dir, v->source);
    snprintf(ref_src, sizeof ref_src, "%s/%s", dir, k->ref_source ? k->ref_source : "");

    if (!defines) {
        kt_error_set(err, KT_ERR_INTERNAL, "configuration id %llu is outside the space",
                     (unsigned long long)id);
        goto out;
    }
    if (!problem || !names || !bufs)
        goto oom;
    for (int i = 0; i < k->n_args; i++) {
        if (json_array_append_new(problem, kernel_spec_arg_json(k, p, i)) < 0 ||
            json_array_append_new(names, json_string(k->args[i].name)) < 0)
            goto oom;
    }
    /* the neural parameters' values follow (kernels/README.md, "neural"): the runner keys its
     * buffers and reference by every argument */
    for (int j = 0; j < p->n_neural; j++) {
        if (json_array_append_new(problem, json_integer(p->neural[j])) < 0 ||
            json_array_append_new(names, json_string(k->neural_names[j])) < 0)
            goto oom;
    }
    for (int i = 0; i < k->n_buffers; i++) {
        json_t *bj = buffer_json(k, i, p->elements[i]);
        if (!bj || json_array_append_new(bufs, bj) < 0)
            goto oom;
    }
    ref = k->ref_kind == KSPEC_REF_C ? json_pack("{s:s, s:s}", "kind", "c", "source", ref_src)
                                     : json_pack("{s:s}", "kind", "openblas_sgemm");
    req =
        json_pack("{s:s, s:s, s:s, s:O, s:O, s:O, s:O, s:{s:f, s:f}, s:o, s:i, s:i, s:f, "
                  "s:f, s:f}",
                  "op", "measure", "kernel", k->name, "source", src, "defines", defines, "problem",
                  problem, "problem_names", names, "buffers", bufs, "tolerance", "rtol",
                  k->has_tolerance ? k->rtol : 1e-4, "atol", k->has_tolerance ? k->atol : 1e-5,
                  "flops", number_json(p->flops), "min_repeats", o->min_repeats, "max_repeats",
                  o->max_repeats, "min_seconds", o->min_seconds, "max_seconds", o->max_seconds,
                  "compile_timeout_s", o->compile_timeout_s);
    if (!req)
        goto oom;
    if (k->ref_kind != KSPEC_REF_NONE && json_object_set(req, "reference", ref) < 0)
        goto oom;
    json_t *files = files_of(b, k);
    if (!files || json_object_set(req, "files", files) < 0)
        goto oom;
    if (interface_fields(b, k, p, defines, req) < 0)
        goto oom;
    if (b->dev->kind == KSPEC_CUDA) {
        long long block[3], grid[3], shared = 0;
        kt_error why;
        kt_error_clear(&why);
        if (kernel_spec_launch(k, t->sp, id, p, block, grid, &shared, &why) < 0) {
            snprintf(invalid_reason, cap, "%s", why.message);
            goto out;
        }
        if (json_object_set_new(req, "entry", json_string(v->entry)) < 0 ||
            json_object_set_new(req, "block",
                                json_pack("[I,I,I]", (json_int_t)block[0], (json_int_t)block[1],
                                          (json_int_t)block[2])) < 0 ||
            json_object_set_new(req, "grid",
                                json_pack("[I,I,I]", (json_int_t)grid[0], (json_int_t)grid[1],
                                          (json_int_t)grid[2])) < 0 ||
            json_object_set_new(req, "shared_bytes", json_integer((json_int_t)shared)) < 0)
            goto oom;
    }
    ok = 1;
    goto out;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory building a runner request");
out:
    json_decref(problem);
    json_decref(names);
    json_decref(bufs);
    json_decref(defines);
    json_decref(ref);
    if (!ok) {
        json_decref(req);
        req = NULL;
    }
    return req;
}

/* The runner's reply {"need_data": ["<sha256>", ...]} (PROTOCOL.md, "data"): it does not hold
 * these uploaded data files yet. The request gets "data" with every one of them the kernel has
 * (base64); 0, or -1 when the reply names one the kernel lacks (or out of memory). */
static int attach_data(const kernel_spec *k, const json_t *need, json_t *req, kt_error *err)
{
    json_t *data = json_object(), *v;
    size_t i;
    if (!data || json_object_set_new(req, "data", data) < 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    json_array_foreach(need, i, v)
    {
        const char *sha = json_string_value(v);
        int found = 0;
        for (int j = 0; sha && j < kernel_data_count(k->data) && !found; j++) {
            if (strcmp(kernel_data_sha256(k->data, j), sha) != 0)
                continue;
            size_t len = 0, n = 0;
            const unsigned char *bytes = kernel_data_bytes(k->data, j, &len);
            char *text = kt_base64_encode(bytes, len, &n);
            if (!text || json_object_set_new(data, sha, json_stringn(text, n)) < 0) {
                free(text);
                return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            }
            free(text);
            found = 1;
        }
        if (!found)
            return kt_error_set(err, KT_ERR_MEASURE,
                                "the runner asked for data %.64s, which kernel %s does not have",
                                sha ? sha : "(not a string)", k->name);
    }
    return 0;
}

static double num_field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    double d = json_is_number(v) ? json_number_value(v) : 0.0;
    return isfinite(d) && d >= 0 ? d : 0.0;
}

/* The runner's reply as a trial result. -1 when the reply is not one (a refused request). */
static int map_reply(real_backend *b, json_t *reply, trial_result *out, kt_error *err)
{
    static const char *const copied[] = {"error", "message", "reason"};
    const char *st = json_string_value(json_object_get(reply, "status"));
    json_t *extras = json_object_get(reply, "extras");
    trial_status s;

    if (!st) {
        const char *why = json_string_value(json_object_get(reply, "error"));
        if (!why)
            why = json_string_value(json_object_get(reply, "reason"));
        return kt_error_set(err, KT_ERR_MEASURE, "the runner refused the measure request: %.300s",
                            why ? why : "no status in its reply");
    }
    if (trial_status_parse(st, &s) < 0 || !trial_status_is_final(s))
        return kt_error_set(err, KT_ERR_MEASURE,
                            "the runner replied with an unknown status '%.64s'", st);
    out->extras = json_is_object(extras) ? json_deep_copy(extras) : json_object();
    for (size_t i = 0; out->extras && i < sizeof copied / sizeof copied[0]; i++) {
        json_t *v = json_object_get(reply, copied[i]);
        if (json_is_string(v) && !json_object_get(out->extras, copied[i]))
            json_object_set(out->extras, copied[i], v);
    }
    if (json_is_true(json_object_get(reply, "context_lost")) ||
        json_is_true(json_object_get(extras, "context_lost")))
        b->restart = 1;
    out->status = s;
    out->compile_ms = num_field(reply, "compile_ms");
    out->measure_ms = num_field(reply, "measure_ms");
    out->noise_cv = num_field(reply, "noise_cv");
    if (s == TRIAL_OK) {
        out->time_ms = num_field(reply, "time_ms");
        const json_t *rep = json_object_get(reply, "repeats");
        out->repeats = json_is_integer(rep) ? (int)json_integer_value(rep) : 0;
        if (!(out->time_ms > 0)) {
            trial_result_release(out);
            trial_result_init(out);
            return kt_error_set(err, KT_ERR_MEASURE, "the runner replied ok without a time");
        }
    }
    return 0;
}

/* One measurement's call to the runner and what came of it. */
typedef struct real_call {
    const kernel_spec *k;
    config_id id;
    seen_target *seen;   /* the target's best time so far, or NULL */
    double timeout;      /* the call's deadline, s */
    double call_limit_s; /* the runner's own limit on one kernel call (slow_factor), 0: none */
    int compiled;        /* built before the lock (op "compile"): compile_ms, cached are its */
    int cached;
    double compile_ms;
    double compile_cpu_ms; /* the compile op's compiler CPU time, and its prelude (runner README) */
    char prelude[16];
    int core_shared; /* the compile op ran as a guest of the measuring core (core_reserve.h) */
    int retried;     /* measured again after a SIGKILL */
    double busy_ms;  /* the device's lock held for the measure (issue 32: the job's idle share) */
    int got;         /* runner_client_call's answer */
    json_t *reply;
    runner_end end;
} real_call;

/* The kernel version of t this backend measures at id: 0 (*k), or -1 with err (internal: the
 * caller passed a target of another device, kernel or space). */
static int check_target(const real_backend *b, const target *t, config_id id, const kernel_spec **k,
                        kt_error *err)
{
    if (!t || !t->key.device || strcmp(t->key.device, b->dev->name) != 0 || !t->sp)
        return kt_error_set(err, KT_ERR_INTERNAL, "target is not a target of device %s",
                            b->dev->name);
    *k = catalog_find_kernel_version(b->cat, t->key.kernel, t->key.kernel_hash);
    if (!*k || !(*k)->variants[b->dev->kind].present ||
        space_num_params(t->sp) != (*k)->variants[b->dev->kind].n_params)
        return kt_error_set(err, KT_ERR_INTERNAL, "kernel %s is not offered on %s",
                            t->key.kernel ? t->key.kernel : "", b->dev->name);
    if (id >= space_count(t->sp))
        return kt_error_set(err, KT_ERR_INTERNAL,
                            "configuration id %llu is outside the space (%llu)",
                            (unsigned long long)id, (unsigned long long)space_count(t->sp));
    return 0;
}

/* On cpu with slow_factor set and a best time known, the runner's limit on one kernel call, s;
 * else 0 (none). */
static double call_limit_s(const real_backend *b, const seen_target *s)
{
    if (!(b->opt->slow_factor > 0) || b->dev->kind != KSPEC_CPU || !s || !(s->best_ms > 0))
        return 0;
    double l = b->opt->slow_factor * s->best_ms / 1000.0;
    return l < REAL_CALL_LIMIT_FLOOR_S ? REAL_CALL_LIMIT_FLOOR_S : l;
}

/* The call's deadline, and the runner's limit on one kernel call when there is one (req
 * "call_limit_s"). 0, or -1 when out of memory. */
static int set_limits(const real_backend *b, real_call *m, json_t *req)
{
    m->timeout = deadline_s(b, m->seen);
    if (m->compiled) {
        double rebuild = 3 * m->compile_ms / 1000.0;
        rebuild = rebuild < REAL_REBUILD_FLOOR_S ? REAL_REBUILD_FLOOR_S : rebuild;
        if (rebuild < b->opt->compile_timeout_s)
            m->timeout -= b->opt->compile_timeout_s - rebuild;
    }
    m->call_limit_s = call_limit_s(b, m->seen);
    if (m->call_limit_s > 0 &&
        json_object_set_new(req, "call_limit_s", json_real(m->call_limit_s)) < 0)
        return -1;
    return 0;
}

/* Before a call, under the device's lock: a new runner after a lost device context, and one per
 * change of version where a submitted kernel is concerned. */
static void prepare_runner(real_backend *b, const kernel_spec *k, const backend_stop *stop)
{
    if (b->restart) {
        log_info("runner %s: restarting after a lost device context", b->dev->name);
        runner_client_stop(b->runner, REAL_STOP_GRACE_S);
        b->restart = 0;
    }
    /* Issue 27: a submitted kernel (no folder: untrusted code) may leave the process that ran it
     * changed (a thread, patched code) and read what it is sent next, so a runner that ran one
     * measures no other version, and a submitted kernel never runs in a runner that holds another
     * version's requests: a new runner at each such change of version (folder kernels, the seed
     * catalog, keep theirs). */
    int submitted = k->dir == NULL;
    if (b->ran_version[0] && strcmp(b->ran_version, k->version) != 0 &&
        (submitted || b->ran_submitted) && runner_client_running(b->runner))
        runner_client_stop(b->runner, REAL_STOP_GRACE_S);
    snprintf(b->ran_version, sizeof b->ran_version, "%s", k->version);
    b->ran_submitted = submitted;
    /* and runs as a uid of its version's own (a root ktuned's runner: runner/privileges.h), with a
     * compile cache folder and a /tmp of its own: it cannot touch another kernel's objects or
     * sources, nor signal another runner */
    runner_client_set_version_uid(b->runner, submitted ? k->version : NULL);
    runner_client_set_stop(b->runner, stop ? stop->fn : NULL, stop ? stop->arg : NULL);
}

/* The call itself, under the device's lock: once more on a new runner after a SIGKILL, and again
 * with the uploaded data the runner asks for. 0 (m->got, m->reply, m->end), or -1 with err when
 * the data it asks for cannot be sent. */
static int call_runner(real_backend *b, real_call *m, json_t *req, const backend_stop *stop,
                       kt_error *err)
{
    int rc = 0;
    pthread_mutex_lock(b->dev->lock);
    /* a cpu measurement has its core to itself: the service moves off it for the call */
    core_reserve *reserve = b->dev->kind == KSPEC_CPU ? b->opt->core_reserve : NULL;
    core_reserve_enter(reserve);
    double locked = kt_clock_ms();
    prepare_runner(b, m->k, stop);
    m->got = runner_client_call(b->runner, req, m->timeout, &m->reply, &m->end, err);
    if (m->got == RUNNER_DIED && m->end.signal == SIGKILL) {
        /* SIGKILL does not come from the kernel's own faults (those are SIGSEGV, SIGBUS, ...): an
         * operator, a kill -9 of the runner, the OOM killer. Measured once more on a new runner
         * before it counts against the configuration; a second SIGKILL is its result. */
        log_warn("%s on %s, configuration %llu: the runner was killed (SIGKILL); measuring again",
                 m->k->name, b->dev->name, (unsigned long long)m->id);
        m->retried = 1;
        m->got = runner_client_call(b->runner, req, m->timeout, &m->reply, &m->end, err);
    }
    const json_t *need = m->got == RUNNER_REPLY ? json_object_get(m->reply, "need_data") : NULL;
    if (json_is_array(need) && json_array_size(need) > 0) {
        /* a runner holds a version's uploaded data once it was sent: the bytes travel only when
         * it asks (a new runner, or one that dropped them), not with every measure */
        if (attach_data(m->k, need, req, err) < 0) {
            rc = -1;
            goto out;
        }
        json_decref(m->reply);
        m->reply = NULL;
        m->got = runner_client_call(b->runner, req, m->timeout, &m->reply, &m->end, err);
    }
out:
    runner_client_set_stop(b->runner, NULL, NULL);
    m->busy_ms = kt_clock_ms() - locked;
    core_reserve_leave(reserve);
    pthread_mutex_unlock(b->dev->lock);
    return rc;
}

/* The runner's reply as the trial's result: its metrics, and the target's best time so far. 0, or
 * -1 with err when the reply is not a result. */
static int replied(real_backend *b, real_call *m, const kspec_problem *p, trial_result *out,
                   kt_error *err)
{
    if (map_reply(b, m->reply, out, err) < 0)
        return -1;
    if (m->retried && out->extras)
        json_object_set_new(out->extras, "retried_after", json_string("SIGKILL"));
    if (m->compiled) {
        /* the build was the compile op's; the measure found it (or, evicted meanwhile, built
         * it again: its compile_ms adds) */
        out->compile_ms += m->compile_ms;
        if (out->extras) {
            json_object_set_new(out->extras, "cached_binary", json_boolean(m->cached));
            json_object_set_new(out->extras, "compiled_apart", json_true());
        }
        if (out->extras && !m->cached && m->core_shared)
            json_object_set_new(out->extras, "compile_core_shared", json_true());
        if (out->extras && !m->cached) {
            /* what the compile cost in CPU (issue 32); a rebuild in the measure adds */
            double cpu = m->compile_cpu_ms + num_field(out->extras, "compile_cpu_ms");
            json_object_set_new(out->extras, "compile_cpu_ms", json_real(cpu));
            if (m->prelude[0] && !json_object_get(out->extras, "prelude"))
                json_object_set_new(out->extras, "prelude", json_string(m->prelude));
        }
    }
    if (out->status == TRIAL_OK && out->extras && m->k->n_metrics > 0) {
        /* the kernel's user metrics of this trial (kernels/README.md, "metrics") */
        json_t *x = kernel_spec_metrics_json(m->k, p, out->time_ms);
        if (x)
            json_object_set_new(out->extras, "metrics", x);
    }
    if (out->status == TRIAL_OK && m->seen &&
        (m->seen->best_ms <= 0 || out->time_ms < m->seen->best_ms))
        m->seen->best_ms = out->time_ms;
    return 0;
}

/* On cpu, before the device's lock: the runner builds the kernel (op "compile", PROTOCOL.md)
 * while another thread may measure, never on the measuring core while a measurement holds it (a
 * guest of the core's reservation, or off that core altogether when it cannot be one). 0: go on
 * measuring (built: m->compiled; or a runner that cannot compile apart, which then builds in the
 * measure as before), REAL_BUILD_FAILED: the build's failure is the trial's result (out),
 * BACKEND_STOPPED, or -1 with err. */
static int compile_apart(real_backend *b, real_call *m, const json_t *req, const backend_stop *stop,
                         trial_result *out, kt_error *err)
{
    json_t *creq = NULL, *reply = NULL;
    runner_end end;
    int rc = 0;
    if (b->dev->kind != KSPEC_CPU)
        return 0;
    if (!(creq = json_copy((json_t *)req)) ||
        json_object_set_new(creq, "op", json_string("compile")) < 0) {
        rc = kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    prepare_runner(b, m->k, stop);
    /* A guest of the measuring core's reservation compiles on every core, the measuring one too
     * while no measurement holds it; otherwise the runner keeps its compile off that core. */
    core_reserve *reserve = b->opt->core_reserve;
    pid_t guest = reserve ? runner_client_ready(b->runner, err) : -1;
    if (guest > 0 && core_reserve_guest_add(reserve, guest) &&
        json_object_set_new(creq, "core_shared", json_true()) < 0) {
        core_reserve_guest_remove(reserve, guest);
        rc = kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    int got = runner_client_call(b->runner, creq, b->opt->compile_timeout_s + REAL_DEADLINE_SLACK_S,
                                 &reply, &end, err);
    runner_client_set_stop(b->runner, NULL, NULL);
    if (guest > 0)
        core_reserve_guest_remove(reserve, guest);
    if (got == RUNNER_STOPPED) {
        rc = BACKEND_STOPPED;
        goto out;
    }
    if (got < 0) {
        rc = -1;
        goto out;
    }
    const char *st =
        got == RUNNER_REPLY ? json_string_value(json_object_get(reply, "status")) : NULL;
    if (!st)
        goto out; /* died (a kill from outside), or refused: the measure builds, as before */
    if (strcmp(st, "ok") != 0) {
        rc = map_reply(b, reply, out, err) < 0 ? -1 : REAL_BUILD_FAILED;
        goto out;
    }
    m->compiled = 1;
    m->compile_ms = num_field(reply, "compile_ms");
    json_t *cx = json_object_get(reply, "extras");
    m->core_shared = json_is_true(json_object_get(cx, "core_shared"));
    m->cached = json_is_true(json_object_get(cx, "cached_binary"));
    m->compile_cpu_ms = num_field(cx, "compile_cpu_ms");
    const char *prelude = json_string_value(json_object_get(cx, "prelude"));
    snprintf(m->prelude, sizeof m->prelude, "%s", prelude ? prelude : "");
out:
    json_decref(creq);
    json_decref(reply);
    return rc;
}

/* The runner died during the call: a runtime error, or a timeout when its own call limit
 * (slow_factor) stopped it. */
static void died(const real_backend *b, const real_call *m, trial_result *out)
{
    char sig[16];
    out->status = TRIAL_RUNTIME_ERROR;
    out->measure_ms = m->end.waited_s * 1000.0;
    if (m->end.signal == SIGALRM && m->call_limit_s > 0) {
        /* the runner's own call limit (slow_factor), not a crash */
        out->status = TRIAL_TIMEOUT;
        out->extras = json_pack("{s:f, s:f, s:s}", "call_limit_s", m->call_limit_s, "slow_factor",
                                b->opt->slow_factor, "reason",
                                "a kernel call took longer than slow_factor x the best time; "
                                "given up on");
        return;
    }
    if (m->end.signal)
        out->extras = json_pack("{s:i, s:s, s:s}", "signal", m->end.signal, "signal_name",
                                runner_signal_name(m->end.signal, sig, sizeof sig), "reason",
                                "the runner died during the measurement");
    else
        out->extras = json_pack("{s:i, s:s}", "exit_code", m->end.exit_code, "reason",
                                "the runner exited during the measurement");
    log_info("%s on %s, configuration %llu: the runner died (%s %d)", m->k->name, b->dev->name,
             (unsigned long long)m->id, m->end.signal ? "signal" : "exit code",
             m->end.signal ? m->end.signal : m->end.exit_code);
}

/* What came of the call: 0 (out), BACKEND_STOPPED, or -1 with err. */
static int result_of_call(real_backend *b, real_call *m, const kspec_problem *p, trial_result *out,
                          kt_error *err)
{
    switch (m->got) {
    case RUNNER_STOPPED:
        log_info("%s on %s, configuration %llu: stopped after %.1f s (no longer wanted)",
                 m->k->name, b->dev->name, (unsigned long long)m->id, m->end.waited_s);
        return BACKEND_STOPPED;
    case RUNNER_REPLY:
        return replied(b, m, p, out, err);
    case RUNNER_DEADLINE:
        out->status = TRIAL_TIMEOUT;
        out->measure_ms = m->end.waited_s * 1000.0;
        out->extras =
            json_pack("{s:f, s:f, s:s}", "seconds", m->end.waited_s, "deadline_s", m->timeout,
                      "reason", "no reply before the deadline; the runner was killed");
        log_info("%s on %s, configuration %llu: no reply within %.1f s; runner killed", m->k->name,
                 b->dev->name, (unsigned long long)m->id, m->timeout);
        return 0;
    case RUNNER_DIED:
        died(b, m, out);
        return 0;
    default:
        return -1;
    }
}

/* The request's "early_stop" (runner/PROTOCOL.md) when the caller gave a threshold and the
 * options allow it; 0, or -1 when out of memory. */
static int early_stop_field(const real_backend *b, double above_ms, json_t *req)
{
    if (!(above_ms > 0) || !isfinite(above_ms) || b->opt->early_stop_after <= 0)
        return 0;
    json_t *e = json_pack("{s:i, s:f}", "after", b->opt->early_stop_after, "above_ms", above_ms);
    return e ? json_object_set_new(req, "early_stop", e) : -1;
}

/* extras.device_busy_ms of a measured result: how long the measure held the device (issue 32:
 * the job's idle share is what its trials' busy time leaves of its wall time). 0, or -1 when out
 * of memory. */
static int busy_extras(const real_call *m, trial_result *out)
{
    if (!(m->busy_ms > 0))
        return 0;
    if (!out->extras && !(out->extras = json_object()))
        return -1;
    return json_object_set_new(out->extras, "device_busy_ms", json_real(m->busy_ms));
}

int real_measure(void *impl, const target *t, config_id id, const backend_stop *stop,
                 trial_result *out, kt_error *err)
{
    real_backend *b = impl;
    real_call m = {.id = id};
    kspec_problem p;
    json_t *req = NULL;
    char reason[KT_ERROR_MESSAGE_MAX];
    int rc = -1;

    double early_above_ms = b->early_above_ms; /* the next measure's only */
    b->early_above_ms = 0;
    trial_result_init(out);
    if (check_target(b, t, id, &m.k, err) < 0 || catalog_target_problem(m.k, t, &p, err) < 0 ||
        kernel_spec_problem_neural(m.k, b->dev->kind, t->sp, id, &p, err) < 0)
        goto out;
    reason[0] = '\0';
    req = build_request(b, m.k, t, id, &p, reason, sizeof reason, err);
    if (!req) {
        if (reason[0]) {
            out->status = TRIAL_INVALID;
            out->extras = json_pack("{s:s}", "reason", reason);
            rc = 0;
        }
        goto out;
    }
    if (early_stop_field(b, early_above_ms, req) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    m.seen = seen_for(b, t);
    int built = compile_apart(b, &m, req, stop, out, err);
    if (built != 0) {
        rc = built == REAL_BUILD_FAILED ? 0 : built;
        goto out;
    }
    if (set_limits(b, &m, req) < 0 || call_runner(b, &m, req, stop, err) < 0)
        goto out;
    rc = result_of_call(b, &m, &p, out, err);
    if (rc == 0 && busy_extras(&m, out) < 0)
        rc = kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    json_decref(req);
    json_decref(m.reply);
    return rc;
}

void real_set_early_stop(void *impl, double above_ms)
{
    real_backend *b = impl;
    b->early_above_ms = isfinite(above_ms) && above_ms > 0 ? above_ms : 0;
}

void real_set_best(void *impl, const target *t, double best_ms)
{
    real_backend *b = impl;
    int mine = t && t->key.device && strcmp(t->key.device, b->dev->name) == 0;
    seen_target *s = mine ? seen_for(b, t) : NULL;
    if (s)
        s->best_ms = isfinite(best_ms) && best_ms > 0 ? best_ms : 0;
}

int real_limits(void *impl, const target *t, double *limit_s, double *deadline)
{
    real_backend *b = impl;
    int mine = t && t->key.device && strcmp(t->key.device, b->dev->name) == 0;
    seen_target *s = mine ? seen_for(b, t) : NULL;
    *limit_s = *deadline = 0;
    if (!s)
        return -1;
    *limit_s = call_limit_s(b, s);
    *deadline = deadline_s(b, s);
    return 0;
}
