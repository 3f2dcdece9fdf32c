/* cli/cli_bench_remote — `ktune bench` with remote searchers: ktuned's, through ask/tell (see
 * cli_bench_remote.h). */
#include "cli/cli_bench_remote.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/trial.h"
#include "search/searcher.h"
#include "space/space.h"
#include "bench/bench_main.h"
#include "bench/offline/bench_args.h"
#include "cli/cli.h"
#include "cli/cli_client.h"

/* The device class of the bench's external jobs: their results stay apart from real hosts'. */
#define REMOTE_DEVICE_CLASS "ktune-bench"
/* An ask waits up to this long for the driver's proposals (the API allows 30), then asks again. */
#define REMOTE_WAIT_S 10.0
/* An ask that got nothing for this long (or the request timeout, when longer) fails the run. */
#define REMOTE_GIVE_UP_S 60.0

/* The maker's state: one connection for every run, and the first failure of a searcher. */
typedef struct remote_ctx {
    cli_conn conn;
    cli_conn *conn_p; /* &conn, for CLI_CONN_OPTIONS */
    cli_client *cl;
    int failed, unreachable; /* unreachable: no answer came (cancels are not tried then) */
    kt_error why;
} remote_ctx;

/* One remote searcher: its external job and the trials leased and not told yet. */
typedef struct remote_searcher {
    remote_ctx *x;
    const space *sp;
    char name[64]; /* the strategy, searcher_name's answer */
    long long job;
    int budget, batch, told, done;
    int n_open;     /* leased by the last ask, not told yet */
    config_id *cid; /* [batch]: their configurations */
    long long *tid; /* [batch]: their trial ids */
    json_t *stash;  /* the trials a tell's "ask" leased, for the next ask (NULL: none) */
} remote_searcher;

/* The first failure is kept (the rest follow from it): what failed, and how (call_rc: the exit
 * code of cli_client_call, 0 for a reply that is not what ktune expects; status: its HTTP status).
 * Returns -1. */
static int remote_fail_http(remote_ctx *x, kt_code code, const char *what, int call_rc, long status)
{
    if (x->failed)
        return -1;
    x->failed = 1;
    x->unreachable = call_rc == CLI_EXIT_UNREACHABLE;
    if (call_rc == CLI_EXIT_UNREACHABLE)
        kt_error_set(&x->why, code, "%s: no answer from ktuned (see above)", what);
    else if (call_rc)
        kt_error_set(&x->why, code, "%s: ktuned answered HTTP %ld (its message above)", what,
                     status);
    else
        kt_error_set(&x->why, code, "%s: ktuned's reply is not what ktune expects", what);
    return -1;
}

static int remote_fail(remote_ctx *x, kt_code code, const char *what, int call_rc)
{
    return remote_fail_http(x, code, what, call_rc, 0);
}

/* method path with body (NULL: none) into *reply; 0, or -1 after remote_fail. */
static int remote_call(remote_ctx *x, const char *method, const char *path, const json_t *body,
                       json_t **reply)
{
    long status = 0;
    int rc = cli_client_call(x->cl, method, path, body, reply, &status);
    if (rc == CLI_EXIT_OK)
        return 0;
    char what[160];
    snprintf(what, sizeof what, "%s %s at %s", method, path, cli_client_server(x->cl));
    return remote_fail_http(x,
                            status >= 400 && status < 500 ? KT_ERR_BAD_REQUEST : KT_ERR_UNAVAILABLE,
                            what, rc, status);
}

/* The space as the external device takes it inline: its parameters and, as an explicit list in
 * id order, its configurations (the replay space is explicit: the same list gives the same ids). */
static json_t *remote_space_json(const space *sp)
{
    int np = space_num_params(sp), ok = 1;
    int *idx = calloc((size_t)(np > 0 ? np : 1), sizeof *idx);
    json_t *params = json_array(), *configs = json_array(), *res = NULL;
    for (int p = 0; ok && params && p < np; p++) {
        json_t *vals = json_array();
        for (int v = 0; vals && v < space_param_num_values(sp, p); v++)
            ok &= json_array_append_new(vals, space_param_value_json(sp, p, v)) == 0;
        ok &= vals &&
              json_array_append_new(params, json_pack("{s:s, s:o}", "name", space_param_name(sp, p),
                                                      "values", vals)) == 0;
    }
    for (config_id id = 0; ok && idx && configs && id < space_count(sp); id++) {
        json_t *row = json_array();
        ok &= row && space_decode(sp, id, idx) == 0;
        for (int p = 0; ok && p < np; p++)
            ok &= json_array_append_new(row, space_param_value_json(sp, p, idx[p])) == 0;
        ok &= json_array_append_new(configs, row) == 0;
    }
    if (ok && idx && params && configs)
        res = json_pack("{s:O, s:O}", "parameters", params, "configurations", configs);
    free(idx);
    json_decref(params);
    json_decref(configs);
    return res;
}

/* The trials of an ask's reply (or a tell's "ask") into the open list and out; the count, or -1
 * after remote_fail. */
static int remote_take(remote_searcher *r, const json_t *trials, config_id *out, int max)
{
    size_t i;
    const json_t *t;
    if ((int)json_array_size(trials) > max || (int)json_array_size(trials) > r->batch)
        return remote_fail(r->x, KT_ERR_INTERNAL, "an ask", 0);
    json_array_foreach(trials, i, t)
    {
        kt_error why;
        json_t *id = json_object_get(t, "id");
        if (!json_is_integer(id) ||
            space_config_from_json(r->sp, json_object_get(t, "config"), &out[i], &why) < 0)
            return remote_fail(r->x, KT_ERR_INTERNAL, "a leased trial", 0);
        r->cid[i] = out[i];
        r->tid[i] = json_integer_value(id);
    }
    r->n_open = (int)i;
    return r->n_open;
}

/* searcher_ask: the stash a tell's "ask" leased, else asks (again while the reply is empty and
 * the job is not over). */
static int remote_ask(void *state, config_id *out, int max)
{
    remote_searcher *r = state;
    remote_ctx *x = r->x;
    char path[64];
    double t0 = kt_clock_s(), limit = x->conn.timeout_s > REMOTE_GIVE_UP_S
                                          ? (double)x->conn.timeout_s
                                          : REMOTE_GIVE_UP_S;
    int n = 0;
    if (r->n_open > 0) /* the bench tells every round before it asks again */
        remote_fail(x, KT_ERR_INTERNAL, "an ask before the tell", 0);
    if (x->failed)
        return 0;
    snprintf(path, sizeof path, "/v1/jobs/%lld/ask", r->job);
    while (!r->done) {
        json_t *reply = r->stash;
        r->stash = NULL;
        if (!reply) {
            double wait =
                x->conn.timeout_s > 2 * REMOTE_WAIT_S ? REMOTE_WAIT_S : x->conn.timeout_s / 2.0;
            json_t *body = json_pack("{s:i, s:f}", "n", max, "wait_s", wait);
            int rc = body ? remote_call(x, "POST", path, body, &reply) : -1;
            json_decref(body);
            if (rc < 0)
                return 0;
        }
        const json_t *trials = json_object_get(reply, "trials");
        r->done = json_is_true(json_object_get(reply, "done"));
        n = json_is_array(trials) ? remote_take(r, trials, out, max)
                                  : remote_fail(x, KT_ERR_INTERNAL, path, 0);
        json_decref(reply);
        if (n != 0)
            return n > 0 ? n : 0;
        if (!r->done && kt_clock_s() - t0 > limit) {
            remote_fail(x, KT_ERR_UNAVAILABLE, path, 0);
            kt_error_set(&x->why, KT_ERR_UNAVAILABLE,
                         "job %lld proposed nothing in %.0f s (is a worker of ktuned free?)",
                         r->job, limit);
            return 0;
        }
    }
    return 0;
}

/* One told trial as the tell takes it. */
static json_t *remote_told(long long tid, const trial_result *res)
{
    json_t *o =
        json_pack("{s:I, s:s}", "id", (json_int_t)tid, "status", trial_status_name(res->status));
    if (o && res->status == TRIAL_OK && isfinite(res->time_ms) && res->time_ms > 0)
        json_object_set_new(o, "time_ms", json_real(res->time_ms));
    if (o && isfinite(res->compile_ms) && res->compile_ms >= 0)
        json_object_set_new(o, "compile_ms", json_real(res->compile_ms));
    return o;
}

/* searcher_tell: the round's results in one tell, which also asks for the next round (its
 * leases wait in the stash: one round trip a round). */
static void remote_tell(void *state, const config_id *ids, const trial_result *res, int n)
{
    remote_searcher *r = state;
    remote_ctx *x = r->x;
    json_t *trials = json_array(), *body = NULL, *reply = NULL;
    char path[64];
    if (x->failed || !trials)
        goto out;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < r->n_open && r->cid[k] != ids[i])
            k++;
        if (k == r->n_open) {
            remote_fail(x, KT_ERR_INTERNAL, "a tell of a configuration no ask leased", 0);
            goto out;
        }
        if (json_array_append_new(trials, remote_told(r->tid[k], &res[i])) < 0) {
            remote_fail(x, KT_ERR_NO_MEMORY, "a tell", 0);
            goto out;
        }
        r->cid[k] = r->cid[--r->n_open]; /* told: out of the open list */
        r->tid[k] = r->tid[r->n_open];
    }
    r->told += n;
    body = json_pack("{s:O}", "trials", trials);
    if (body && r->told < r->budget)
        json_object_set_new(body, "ask",
                            json_pack("{s:i, s:f}", "n", r->batch, "wait_s", REMOTE_WAIT_S));
    snprintf(path, sizeof path, "/v1/jobs/%lld/tell", r->job);
    if (!body || remote_call(x, "POST", path, body, &reply) < 0)
        goto out;
    r->stash = json_incref(json_object_get(reply, "ask"));
out:
    json_decref(trials);
    json_decref(body);
    json_decref(reply);
}

/* searcher_free: the job cancelled when it may still be running (the run stopped before its
 * budget), then the state freed. */
static void remote_destroy(void *state)
{
    remote_searcher *r = state;
    if (!r)
        return;
    if (r->job > 0 && !r->done && r->told < r->budget && !r->x->unreachable) {
        char path[64];
        json_t *reply = NULL;
        snprintf(path, sizeof path, "/v1/jobs/%lld", r->job);
        if (cli_client_call(r->x->cl, "DELETE", path, NULL, &reply, NULL) == CLI_EXIT_UNREACHABLE)
            r->x->unreachable = 1;
        json_decref(reply);
    }
    json_decref(r->stash);
    free(r->cid);
    free(r->tid);
    free(r);
}

/* bench_searcher_maker's make: an external job of the run, and the searcher that drives it. */
static searcher *remote_make(void *ctx, const space *sp, const char *space_name,
                             const char *strategy, uint64_t seed, int budget, int batch,
                             kt_error *err)
{
    remote_ctx *x = ctx;
    remote_searcher *r = calloc(1, sizeof *r);
    json_t *sj = sp ? remote_space_json(sp) : NULL, *body = NULL, *reply = NULL;
    searcher *s = NULL;
    if (!r || !sj || !(r->cid = calloc((size_t)batch, sizeof *r->cid)) ||
        !(r->tid = calloc((size_t)batch, sizeof *r->tid)) ||
        !(body = json_pack("{s:s, s:s, s:s, s:O, s:s, s:I, s:s, s:i, s:{s:i}}", "kernel",
                           space_name, "device", "external", "device_class", REMOTE_DEVICE_CLASS,
                           "space", sj, "strategy", strategy, "seed", (json_int_t)seed, "history",
                           "none", "parallel", batch, "budget", "evaluations", budget))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    r->x = x;
    r->sp = sp;
    r->budget = budget;
    r->batch = batch;
    snprintf(r->name, sizeof r->name, "%s", strategy);
    x->failed = 0;
    if (remote_call(x, "POST", "/v1/tune", body, &reply) < 0 ||
        !json_is_integer(json_object_get(reply, "id"))) {
        remote_fail(x, KT_ERR_INTERNAL, "POST /v1/tune", 0);
        *err = x->why;
        x->failed = 0;
        goto out;
    }
    r->job = json_integer_value(json_object_get(reply, "id"));
    searcher_ops ops = {r->name, remote_ask, remote_tell, remote_destroy};
    if ((s = searcher_new_ops(&ops, r, sp, err)))
        r = NULL; /* the searcher's now */
out:
    remote_destroy(r);
    json_decref(sj);
    json_decref(body);
    json_decref(reply);
    return s;
}

static int remote_failed(void *ctx, kt_error *err)
{
    remote_ctx *x = ctx;
    if (!x->failed)
        return 0;
    *err = x->why;
    x->failed = 0;
    return -1;
}

/* bench_searcher_maker's open: the connection (environment, then the options as given, read by
 * the other commands' callback), and ktuned reached once before any run. */
static int remote_open(void *ctx, const bench_options *opt)
{
    static const char *const names[] = {"--server", "--token", "--timeout"};
    const char *given[] = {opt->server, opt->token, opt->timeout};
    remote_ctx *x = ctx;
    json_t *reply = NULL;
    char msg[512];
    int rc;
    if (cli_conn_init(&x->conn) < 0)
        return CLI_EXIT_USAGE;
    x->conn_p = &x->conn;
    for (int k = 0; k < 3; k++) {
        /* The callback the other commands' tables use, told the option by its name. */
        kt_option row = {.name = names[k], .offset = offsetof(remote_ctx, conn_p)};
        if (given[k] && cli_conn_option_cb(x, &row, given[k], msg, sizeof msg) < 0) {
            fprintf(stderr, "ktune bench: %s\n", msg);
            return CLI_EXIT_USAGE;
        }
    }
    if (!(x->cl = cli_client_new(&x->conn))) {
        fprintf(stderr, "ktune bench: libcurl cannot start\n");
        return CLI_EXIT_FAILURE;
    }
    rc = cli_client_call(x->cl, "GET", "/healthz", NULL, &reply, NULL);
    json_decref(reply);
    if (rc != CLI_EXIT_OK)
        fprintf(stderr, "ktune bench: --remote needs ktuned at %s\n", x->conn.server);
    return rc;
}

int cli_bench_main(int argc, char **argv, const char *exe_dir)
{
    remote_ctx x;
    memset(&x, 0, sizeof x);
    bench_searcher_maker maker = {remote_open, remote_make, remote_failed, &x};
    int rc = bench_main_with(argc, argv, exe_dir, &maker);
    cli_client_free(x.cl);
    return rc;
}
