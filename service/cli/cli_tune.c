/* ktune tune — submits a tuning job; with --wait follows it to the end with a progress bar. */
#include "cli/cli_tune.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/file.h"
#include "core/number.h"

#include "cli/cli.h"
#include "cli/cli_args.h"

#define TUNE_MAX_JSON    (1024 * 1024) /* the server's body limit */
#define TUNE_POLL_MS     250
#define TUNE_PLAIN_EVERY 2.0 /* seconds between plain progress lines */
#define TUNE_BAR_WIDTH   24

static void tune_usage(FILE *f)
{
    fprintf(f, "usage: ktune tune --kernel K --device D [--problem NAME=V[,NAME=V...]]\n"
               "                  [--strategy S] [--budget-evaluations N] [--budget-seconds S]\n"
               "                  [--option NAME=V]... [--seed N] [--history auto|none]\n"
               "                  [--parallel N] [--objective max|min:METRIC] [--json FILE|-]\n"
               "                  [--wait]\n"
               "\n"
               "Submits a tuning job (POST /v1/tune) and prints its id on stdout. --json reads\n"
               "a request body to start from; options override its fields. A problem value with\n"
               "commas is a list (--problem problem_size=4096,4096). --wait follows the job:\n"
               "a progress bar on stderr (plain lines when stderr is not a terminal), then a\n"
               "summary; the exit code says how the job ended (Ctrl-C leaves it running).\n"
               "--history none starts the search cold (default auto: first measure what\n"
               "results of the same kernel on other devices and problems suggest).\n"
               "--parallel N (1..64): configurations measured at once, by as many workers\n"
               "of the device class on any hosts (default: the server's --workers).\n"
               "--objective max:gflops (or min:NAME) optimises a metric the kernel declares\n"
               "instead of the time (its best is the job's; GET /v1/best stays time-only).\n"
               "\n" CLI_CONN_TEXT "\n" CLI_EXIT_CODES_TEXT);
}

void cli_tune_args_release(cli_tune_args *a)
{
    json_decref(a->body);
    memset(a, 0, sizeof *a);
}

static int read_body(const char *path, json_t **body)
{
    char *data = NULL;
    size_t len = 0;
    kt_error err;
    kt_error_clear(&err);
    if (!(data = kt_file_read_gz(path, TUNE_MAX_JSON, &len, &err))) {
        fprintf(stderr, "ktune: %s\n", err.message);
        return CLI_EXIT_FAILURE;
    }
    json_error_t je;
    json_t *root = json_loadb(data, len, 0, &je);
    free(data);
    if (!json_is_object(root)) {
        fprintf(stderr, "ktune: --json %s: not a JSON object (%s, line %d)\n", path,
                root ? "another type" : je.text, je.line);
        json_decref(root);
        return CLI_EXIT_FAILURE;
    }
    json_decref(*body);
    *body = root;
    return 0;
}

/* An object member of body, created when absent. */
static json_t *member(json_t *body, const char *key)
{
    json_t *o = json_object_get(body, key);
    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(body, key, o);
    }
    return o;
}

/* What the options gave, applied over the --json body once all are read. */
typedef struct tune_opts {
    cli_conn *conn;
    json_t *flags; /* body fields given as options */
    json_t *problem, *options, *budget;
    const char *json_path;
    int wait;
} tune_opts;

/* --kernel, --device, --strategy, --history: the body field of the same name (the server
 * validates the values). */
static int tune_string_cb(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    (void)msg;
    (void)cap;
    tune_opts *t = opts;
    return json_object_set_new(t->flags, o->name + 2, json_string(v));
}

/* --objective max:METRIC | min:METRIC into flags' "objective" (the server checks the name). */
static int tune_objective_cb(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    (void)o;
    tune_opts *t = opts;
    const char *colon = strchr(v, ':');
    size_t goal_len = colon ? (size_t)(colon - v) : 0;
    if (!colon || !colon[1] ||
        !((goal_len == 3 && strncmp(v, "max", 3) == 0) ||
          (goal_len == 3 && strncmp(v, "min", 3) == 0))) {
        snprintf(msg, cap,
                 "--objective must be max:METRIC or min:METRIC (a metric the kernel declares), "
                 "not '%s'",
                 v);
        return -1;
    }
    return json_object_set_new(
        t->flags, "objective",
        json_pack("{s:s, s:s#}", "metric", colon + 1, "goal", v, (int)goal_len));
}

/* The options with a checked number: --budget-evaluations and --budget-seconds (into budget, made
 * on first use), --seed and --parallel (into flags); each with its own message. */
static int tune_number_cb(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    tune_opts *t = opts;
    long long n;
    double d;
    if (strcmp(o->name, "--budget-seconds") == 0) {
        if (kt_parse_double(v, 1e-9, 1e12, &d) < 0) {
            snprintf(msg, cap, "--budget-seconds must be a number > 0");
            return -1;
        }
        if (!t->budget)
            t->budget = json_object();
        return json_object_set_new(t->budget, "seconds", json_real(d));
    }
    if (strcmp(o->name, "--budget-evaluations") == 0) {
        if (kt_parse_ll(v, 1, 1000000000LL, &n) < 0) {
            snprintf(msg, cap, "--budget-evaluations must be a whole number >= 1");
            return -1;
        }
        if (!t->budget)
            t->budget = json_object();
        return json_object_set_new(t->budget, "evaluations", json_integer(n));
    }
    if (strcmp(o->name, "--seed") == 0) {
        if (kt_parse_ll(v, 0, INT64_MAX, &n) < 0) {
            snprintf(msg, cap, "--seed must be a whole number >= 0");
            return -1;
        }
        return json_object_set_new(t->flags, "seed", json_integer(n));
    }
    if (kt_parse_ll(v, 1, 64, &n) < 0) {
        snprintf(msg, cap, "--parallel must be a whole number from 1 to 64");
        return -1;
    }
    return json_object_set_new(t->flags, "parallel", json_integer(n));
}

#define TO(f) offsetof(tune_opts, f)
static const kt_option tune_options[] = {
    CLI_CONN_OPTIONS(tune_opts, conn),
    {.name = "--problem", .kind = KT_OPT_CALLBACK, .offset = TO(problem), .cb = cli_problem_cb},
    {.name = "--kernel", .kind = KT_OPT_CALLBACK, .cb = tune_string_cb},
    {.name = "--device", .kind = KT_OPT_CALLBACK, .cb = tune_string_cb},
    {.name = "--strategy", .kind = KT_OPT_CALLBACK, .cb = tune_string_cb},
    {.name = "--history", .kind = KT_OPT_CALLBACK, .cb = tune_string_cb},
    {.name = "--wait", .kind = KT_OPT_FLAG, .offset = TO(wait)},
    {.name = "--option", .kind = KT_OPT_CALLBACK, .offset = TO(options), .cb = cli_pair_cb},
    {.name = "--budget-evaluations", .kind = KT_OPT_CALLBACK, .cb = tune_number_cb},
    {.name = "--budget-seconds", .kind = KT_OPT_CALLBACK, .cb = tune_number_cb},
    {.name = "--seed", .kind = KT_OPT_CALLBACK, .cb = tune_number_cb},
    {.name = "--parallel", .kind = KT_OPT_CALLBACK, .cb = tune_number_cb},
    {.name = "--objective", .kind = KT_OPT_CALLBACK, .cb = tune_objective_cb},
    {.name = "--json", .kind = KT_OPT_STRING, .offset = TO(json_path)},
    {.kind = KT_OPT_END}};
#undef TO
static const kt_opt_table tune_table = {.options = tune_options,
                                        .unknown = "unknown argument '%s'"};

int cli_tune_parse(int argc, char **argv, cli_conn *conn, cli_tune_args *out)
{
    int rc = CLI_EXIT_USAGE;
    tune_opts t = {.conn = conn, .flags = json_object()};
    memset(out, 0, sizeof *out);
    out->body = json_object();
    int parsed = cli_parse_options(&tune_table, argc, argv, &t, tune_usage);
    if (parsed != 0) {
        out->help = parsed == 1;
        rc = parsed == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        goto done;
    }
    out->wait = t.wait;
    if (t.json_path && (rc = read_body(t.json_path, &out->body)) != 0)
        goto done;
    rc = CLI_EXIT_USAGE;
    json_object_update(out->body, t.flags);
    if (t.problem)
        json_object_update(member(out->body, "problem"), t.problem);
    if (t.options)
        json_object_update(member(out->body, "strategy_options"), t.options);
    if (t.budget)
        json_object_update(member(out->body, "budget"), t.budget);
    if (!json_is_string(json_object_get(out->body, "kernel")) ||
        !json_is_string(json_object_get(out->body, "device"))) {
        fprintf(stderr, "ktune tune: --kernel and --device are required (ktune tune --help)\n");
        goto done;
    }
    rc = 0;
done:
    json_decref(t.flags);
    json_decref(t.problem);
    json_decref(t.options);
    json_decref(t.budget);
    return rc;
}

void cli_progress_line(const json_t *job, double elapsed_s, int bar_width, char *buf, size_t cap)
{
    const json_t *progress = json_object_get(job, "progress");
    const json_t *budget = json_object_get(job, "budget");
    const json_t *best = json_object_get(job, "best");
    const char *status = json_string_value(json_object_get(job, "status"));
    long long trials = (long long)json_integer_value(json_object_get(progress, "trials"));
    double fraction = json_number_value(json_object_get(progress, "fraction"));
    double clock = json_number_value(json_object_get(progress, "clock_seconds"));
    json_t *evals = json_object_get(budget, "evaluations");
    json_t *secs = json_object_get(budget, "seconds");
    size_t used = 0;
    int n =
        snprintf(buf, cap, "job %lld %s", (long long)json_integer_value(json_object_get(job, "id")),
                 status ? status : "?");
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (n >= 0 && (size_t)n < cap - used)                                                      \
            used += (size_t)n;                                                                     \
        else                                                                                       \
            used = cap - 1;                                                                        \
        n = snprintf(buf + used, cap - used, __VA_ARGS__);                                         \
    } while (0)
    if (bar_width > 0) {
        char bar[128];
        int w = bar_width < (int)sizeof bar - 1 ? bar_width : (int)sizeof bar - 1;
        int filled = (int)lround((fraction < 0 ? 0 : fraction > 1 ? 1 : fraction) * w);
        for (int i = 0; i < w; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[w] = '\0';
        ADD(" [%s]", bar);
    }
    if (json_is_integer(evals))
        ADD(" %lld/%lld evaluations", trials, (long long)json_integer_value(evals));
    else
        ADD(" %lld trials", trials);
    if (json_is_number(secs))
        ADD("  %.1f/%g s measured", clock, json_number_value(secs));
    if (json_is_object(best))
        ADD("  best %.6g ms", json_number_value(json_object_get(best, "time_ms")));
    else
        ADD("  best -");
    ADD("  %.1f s", elapsed_s);
    ADD("%s", "");
#undef ADD
}

static int is_final(const char *status)
{
    return status && (strcmp(status, "succeeded") == 0 || strcmp(status, "failed") == 0 ||
                      strcmp(status, "cancelled") == 0);
}

/* Prints how the job ended and returns its exit code. */
static int job_outcome(const json_t *job)
{
    const char *status = json_string_value(json_object_get(job, "status"));
    const char *reason = json_string_value(json_object_get(job, "stop_reason"));
    long long id = (long long)json_integer_value(json_object_get(job, "id"));
    long long trials =
        (long long)json_integer_value(json_object_get(json_object_get(job, "progress"), "trials"));
    const json_t *best = json_object_get(job, "best");
    if (strcmp(status, "succeeded") == 0) {
        fprintf(stderr, "ktune: job %lld succeeded (%s): %lld trials", id, reason ? reason : "-",
                trials);
        if (json_is_object(best))
            fprintf(stderr, ", best %.6g ms", json_number_value(json_object_get(best, "time_ms")));
        fputc('\n', stderr);
        return CLI_EXIT_OK;
    }
    if (strcmp(status, "cancelled") == 0) {
        fprintf(stderr, "ktune: job %lld was cancelled after %lld trials\n", id, trials);
        return CLI_EXIT_JOB_CANCELLED;
    }
    const json_t *e = json_object_get(job, "error");
    const char *message = json_string_value(json_object_get(e, "message"));
    const char *hint = json_string_value(json_object_get(e, "hint"));
    fprintf(stderr, "ktune: job %lld failed: %s\n", id, message ? message : "no reason recorded");
    if (hint && *hint)
        fprintf(stderr, "  hint: %s\n", hint);
    return CLI_EXIT_JOB_FAILED;
}

static int follow(cli_client *cl, long long id)
{
    int tty = isatty(2);
    double start = kt_clock_s(), last_print = -1e9;
    long long last_trials = -1;
    char path[64], line[512];
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
    for (;;) {
        json_t *job = NULL;
        int rc = cli_client_call(cl, "GET", path, NULL, &job, NULL);
        if (rc != CLI_EXIT_OK) {
            if (tty)
                fputc('\n', stderr);
            return rc;
        }
        const char *status = json_string_value(json_object_get(job, "status"));
        long long trials = (long long)json_integer_value(
            json_object_get(json_object_get(job, "progress"), "trials"));
        double t = kt_clock_s();
        int final = is_final(status);
        if (tty) {
            cli_progress_line(job, t - start, TUNE_BAR_WIDTH, line, sizeof line);
            fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
        } else if (final || (trials != last_trials && t - last_print >= TUNE_PLAIN_EVERY)) {
            cli_progress_line(job, t - start, 0, line, sizeof line);
            fprintf(stderr, "%s\n", line);
            last_print = t;
            last_trials = trials;
        }
        fflush(stderr);
        if (final) {
            rc = job_outcome(job);
            json_decref(job);
            return rc;
        }
        json_decref(job);
        struct timespec ts = {0, TUNE_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int cli_tune_main(int argc, char **argv)
{
    cli_conn conn;
    cli_tune_args a;
    cli_client *cl = NULL;
    json_t *job = NULL;
    int rc = CLI_EXIT_USAGE;
    memset(&a, 0, sizeof a);
    if (cli_conn_init(&conn) < 0)
        goto done;
    if ((rc = cli_tune_parse(argc, argv, &conn, &a)) != 0 || a.help)
        goto done;
    if (!(cl = cli_client_new(&conn))) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    if ((rc = cli_client_call(cl, "POST", "/v1/tune", a.body, &job, NULL)) != 0)
        goto done;
    long long id = (long long)json_integer_value(json_object_get(job, "id"));
    printf("%lld\n", id);
    fflush(stdout);
    if (a.wait)
        rc = follow(cl, id);
done:
    json_decref(job);
    cli_client_free(cl);
    cli_tune_args_release(&a);
    return rc;
}
