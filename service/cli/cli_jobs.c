/* ktune jobs / job ID / cancel ID — list, read and cancel jobs. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_client.h"
#include "core/number.h"

static void jobs_usage(FILE *f)
{
    fprintf(f, "usage: ktune jobs [--status S] [--limit N] [--json]\n"
               "       ktune job ID [--json]\n"
               "       ktune cancel ID\n"
               "\n"
               "jobs: the newest jobs as a table (S: queued, running, succeeded, failed,\n"
               "cancelled; N: 1-500, default 20). job: one job in full. cancel: stops a queued\n"
               "or running job (a job that already ended is refused: exit 4).\n"
               "\n" CLI_CONN_TEXT "\n" CLI_EXIT_CODES_TEXT);
}

/* The options of jobs, job ID and cancel ID (strings borrowed from argv). */
typedef struct jobs_args {
    cli_conn conn;
    cli_conn *conn_p; /* &conn, for CLI_CONN_OPTIONS */
    int json, help;
    const char *status, *id;
    long long limit;
} jobs_args;

static int jobs_limit_cb(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    jobs_args *a = opts;
    if (kt_parse_ll(v, 1, 500, &a->limit) < 0) {
        snprintf(msg, cap, "%s must be a whole number from 1 to 500", o->name);
        return -1;
    }
    return 0;
}

#define JO(f) offsetof(jobs_args, f)
static const kt_option jobs_options[] =
    {/* ktune jobs */
     CLI_CONN_OPTIONS(jobs_args, conn_p),
     {.name = "--json", .kind = KT_OPT_FLAG, .offset = JO(json)},
     {.name = "--status", .kind = KT_OPT_STRING, .offset = JO(status)},
     {.name = "--limit", .kind = KT_OPT_CALLBACK, .cb = jobs_limit_cb},
     {.kind = KT_OPT_END}};
static const kt_option one_job_options[] = {/* ktune job ID, ktune cancel ID */
                                            CLI_CONN_OPTIONS(jobs_args, conn_p),
                                            {.name = "--json",
                                             .kind = KT_OPT_FLAG,
                                             .offset = JO(json)},
                                            {.kind = KT_OPT_ARG, .offset = JO(id)},
                                            {.kind = KT_OPT_END}};
#undef JO
static const kt_opt_table jobs_opt_table = {.options = jobs_options,
                                            .unknown = "unexpected argument '%s'"};
static const kt_opt_table one_job_opt_table = {.options = one_job_options,
                                               .unknown = "unexpected argument '%s'"};

/* argv into a (want_id: job ID or cancel ID, else jobs): 0, or CLI_EXIT_USAGE after printing why,
 * or 0 with a->help after printing the usage. */
static int jobs_parse(int argc, char **argv, int want_id, jobs_args *a)
{
    memset(a, 0, sizeof *a);
    a->conn_p = &a->conn;
    a->limit = 20;
    if (cli_conn_init(&a->conn) < 0)
        return CLI_EXIT_USAGE;
    int parsed = cli_parse_options(want_id ? &one_job_opt_table : &jobs_opt_table, argc, argv, a,
                                   jobs_usage);
    if (parsed != 0) {
        a->help = parsed == 1;
        return parsed == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    long long id;
    if (want_id && (!a->id || kt_parse_ll(a->id, 1, INT64_MAX, &id) < 0)) {
        fprintf(stderr, "ktune %s: a job id (a positive whole number) is required\n", argv[0]);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

static const char *str_or(const json_t *v, const char *def)
{
    return json_is_string(v) ? json_string_value(v) : def;
}

static void print_json(const json_t *v)
{
    json_dumpf(v, stdout, JSON_INDENT(2));
    fputc('\n', stdout);
}

static void jobs_table(const json_t *page)
{
    size_t i;
    json_t *j;
    printf("%-6s %-10s %-14s %-34s %-11s %8s %12s  %s\n", "ID", "STATUS", "KERNEL", "DEVICE",
           "STRATEGY", "TRIALS", "BEST_MS", "CREATED");
    json_array_foreach(json_object_get(page, "jobs"), i, j)
    {
        const json_t *best = json_object_get(j, "best");
        char best_text[32] = "-", created[20] = "";
        if (json_is_object(best))
            snprintf(best_text, sizeof best_text, "%.6g",
                     json_number_value(json_object_get(best, "time_ms")));
        /* "2024-05-01T12:34:56.789+00:00" -> "2024-05-01 12:34:56" */
        snprintf(created, sizeof created, "%s",
                 str_or(json_object_get(json_object_get(j, "timings"), "created_at"), ""));
        if (strlen(created) > 10 && created[10] == 'T')
            created[10] = ' ';
        printf("%-6lld %-10s %-14s %-34s %-11s %8lld %12s  %s\n",
               (long long)json_integer_value(json_object_get(j, "id")),
               str_or(json_object_get(j, "status"), "?"), str_or(json_object_get(j, "kernel"), "?"),
               str_or(json_object_get(j, "device"), "?"),
               str_or(json_object_get(j, "strategy"), "?"),
               (long long)json_integer_value(
                   json_object_get(json_object_get(j, "progress"), "trials")),
               best_text, created);
    }
    if (json_array_size(json_object_get(page, "jobs")) == 0)
        printf("(no jobs)\n");
}

int cli_jobs_main(int argc, char **argv)
{
    jobs_args a;
    int rc = jobs_parse(argc, argv, 0, &a);
    if (rc != 0 || a.help)
        return rc;
    char path[256], status[128];
    if (a.status && cli_url_escape(a.status, status, sizeof status) < 0) {
        fprintf(stderr, "ktune: --status is too long\n");
        return CLI_EXIT_USAGE;
    }
    snprintf(path, sizeof path, "/v1/jobs?limit=%lld%s%s", a.limit, a.status ? "&status=" : "",
             a.status ? status : "");
    cli_client *cl = cli_client_new(&a.conn);
    json_t *page = NULL;
    if (!cl) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        return CLI_EXIT_FAILURE;
    }
    rc = cli_client_call(cl, "GET", path, NULL, &page, NULL);
    if (rc == CLI_EXIT_OK) {
        if (a.json)
            print_json(page);
        else
            jobs_table(page);
    }
    json_decref(page);
    cli_client_free(cl);
    return rc;
}

static void job_details(const json_t *j)
{
    const json_t *progress = json_object_get(j, "progress");
    const json_t *budget = json_object_get(j, "budget");
    const json_t *best = json_object_get(j, "best");
    const json_t *timings = json_object_get(j, "timings");
    const json_t *error = json_object_get(j, "error");
    char *problem = json_dumps(json_object_get(j, "problem"), JSON_COMPACT | JSON_ENCODE_ANY);
    printf("job       %lld  %s", (long long)json_integer_value(json_object_get(j, "id")),
           str_or(json_object_get(j, "status"), "?"));
    if (json_is_string(json_object_get(j, "stop_reason")))
        printf(" (%s)", json_string_value(json_object_get(j, "stop_reason")));
    printf("\nkernel    %s on %s (class %s, toolchain %s)\n",
           str_or(json_object_get(j, "kernel"), "?"), str_or(json_object_get(j, "device"), "?"),
           str_or(json_object_get(j, "device_class"), "?"),
           str_or(json_object_get(j, "toolchain"), "?"));
    printf("problem   %s\n", problem ? problem : "{}");
    free(problem);
    /* The seed is decimal text since issue 31 (a number from older servers). */
    const json_t *seed = json_object_get(j, "seed");
    printf("strategy  %s, seed ", str_or(json_object_get(j, "strategy"), "?"));
    if (json_is_integer(seed))
        printf("%lld\n", (long long)json_integer_value(seed));
    else
        printf("%s\n", str_or(seed, "?"));
    printf("budget   ");
    if (json_is_integer(json_object_get(budget, "evaluations")))
        printf(" %lld evaluations",
               (long long)json_integer_value(json_object_get(budget, "evaluations")));
    if (json_is_number(json_object_get(budget, "seconds")))
        printf(" %g s", json_number_value(json_object_get(budget, "seconds")));
    printf("\nprogress  %lld trials of a space of %lld, %.1f s measured, %.0f%%\n",
           (long long)json_integer_value(json_object_get(progress, "trials")),
           (long long)json_integer_value(json_object_get(progress, "space_size")),
           json_number_value(json_object_get(progress, "clock_seconds")),
           100 * json_number_value(json_object_get(progress, "fraction")));
    if (json_is_object(best)) {
        char *config = json_dumps(json_object_get(best, "config"), JSON_COMPACT);
        printf("best      %.6g ms (trial %lld) %s\n",
               json_number_value(json_object_get(best, "time_ms")),
               (long long)json_integer_value(json_object_get(best, "trial_id")),
               config ? config : "");
        free(config);
    } else {
        printf("best      -\n");
    }
    printf("created   %s\nstarted   %s\nfinished  %s\n",
           str_or(json_object_get(timings, "created_at"), "-"),
           str_or(json_object_get(timings, "started_at"), "-"),
           str_or(json_object_get(timings, "finished_at"), "-"));
    /* issue 32: how much of the job's wall time its device stood idle (real devices only) */
    if (json_is_number(json_object_get(timings, "device_idle_share")))
        printf("device    %.1f s measuring, idle %.0f%% of the job's %.1f s\n",
               json_number_value(json_object_get(timings, "device_busy_seconds")),
               100 * json_number_value(json_object_get(timings, "device_idle_share")),
               json_number_value(json_object_get(timings, "elapsed_seconds")));
    if (json_is_object(error)) {
        printf("error     %s: %s\n", str_or(json_object_get(error, "code"), "?"),
               str_or(json_object_get(error, "message"), ""));
        if (json_is_string(json_object_get(error, "hint")) &&
            json_string_length(json_object_get(error, "hint")) > 0)
            printf("hint      %s\n", json_string_value(json_object_get(error, "hint")));
    }
}

/* GET or DELETE /v1/jobs/ID. */
static int one_job(int argc, char **argv, const char *method)
{
    jobs_args a;
    int cancel = strcmp(method, "DELETE") == 0;
    int rc = jobs_parse(argc, argv, 1, &a);
    if (rc != 0 || a.help)
        return rc;
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%s", a.id);
    cli_client *cl = cli_client_new(&a.conn);
    json_t *job = NULL;
    if (!cl) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        return CLI_EXIT_FAILURE;
    }
    rc = cli_client_call(cl, method, path, NULL, &job, NULL);
    if (rc == CLI_EXIT_OK) {
        if (a.json)
            print_json(job);
        else if (cancel)
            printf("job %s %s\n", a.id, str_or(json_object_get(job, "status"), "?"));
        else
            job_details(job);
    }
    json_decref(job);
    cli_client_free(cl);
    return rc;
}

int cli_job_main(int argc, char **argv)
{
    return one_job(argc, argv, "GET");
}

int cli_cancel_main(int argc, char **argv)
{
    return one_job(argc, argv, "DELETE");
}
