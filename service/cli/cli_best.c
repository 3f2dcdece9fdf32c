/* ktune best — the best known configuration of a kernel on a device for a problem, as JSON,
 * compiler flags or a C header (space/config_render.h), and where it came from (measured, predicted
 * by a model, or the nearest tuned problem) on stderr. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_client.h"
#include "space/config_render.h"
#include "cli/cli_table.h"
#include "core/device_name.h"
#include "core/number.h"

#define BEST_MAX_QUERY 4096

static void best_usage(FILE *f)
{
    fprintf(
        f,
        "usage: ktune best --kernel K --device D [--problem NAME=V[,NAME=V...]]\n"
        "                  [--format json|flags|header] [--source measured|predicted]\n"
        "                  [--fallback nearest] [--accept weak] [--k N]\n"
        "                  [--tune-on-miss EVALUATIONS] [--verbose]\n"
        "       ktune best --kernel K --device external --device-class C [--problem ...]\n"
        "       ktune best --all [--format table] [--kernel K] [--device-class C]\n"
        "\n"
        "Prints the best known configuration (GET /v1/best): json (default) the\n"
        "configuration object; flags one line of -Dname=value for a compiler; header a\n"
        "C header with an include guard and one '#define KTUNE_<NAME> value' per\n"
        "parameter. stderr says where it came from: measured (job, trial, repeats,\n"
        "noise), predicted by a model (a problem never tuned; flags end with\n"
        "-DKTUNE_PREDICTED=1 and the header defines KTUNE_PREDICTED), or with\n"
        "--fallback nearest the nearest tuned problem (KTUNE_NEAREST). --source\n"
        "measured refuses anything but a measurement; --source predicted asks the\n"
        "model even for a tuned problem. A weak model (trained on too few problems, or a\n"
        "low or unknown held-out accuracy: ktuned's --model-min-problems and\n"
        "--model-min-accuracy) answers only with --accept weak. --verbose (with --format json) "
        "prints the whole\n"
        "reply; --k: candidates of a prediction there (1-20). --tune-on-miss N queues a job of N\n"
        "evaluations for a problem never measured (once; needs the token when set).\n"
        "When nothing is known yet the exit code is 5, with the server's message and\n"
        "hint.\n"
        "\n"
        "--all writes the deploy table instead: every entry of the best table (of\n"
        "kernel K and device class C when given), one tab-separated line each, that\n"
        "clients/c/ktune_table.h and the Python client's ktune.Table look up without a\n"
        "server (format: clients/README.md).\n"
        "\n" CLI_CONN_TEXT "\n" CLI_EXIT_CODES_TEXT);
}

/* Appends "&key=value" (value escaped; a list as comma-separated values). */
static int add_query(char *q, size_t cap, const char *key, const json_t *value)
{
    char text[512], esc_key[256], esc[1600];
    size_t used = 0;
    text[0] = '\0';
    if (json_is_array(value)) {
        size_t i;
        json_t *v;
        json_array_foreach(value, i, v)
        {
            int n = config_value_text(v, 0, text + used, sizeof text - used - 1);
            if (n < 0)
                return -1;
            used += (size_t)n;
            if (i + 1 < json_array_size(value))
                text[used++] = ',';
            text[used] = '\0';
        }
    } else if (config_value_text(value, 0, text, sizeof text) < 0) {
        return -1;
    }
    if (cli_url_escape(key, esc_key, sizeof esc_key) < 0 ||
        cli_url_escape(text, esc, sizeof esc) < 0)
        return -1;
    size_t len = strlen(q);
    int n = snprintf(q + len, cap - len, "%s%s=%s", len ? "&" : "", esc_key, esc);
    return n < 0 || (size_t)n >= cap - len ? -1 : 0;
}

/* ktune best --all: the deploy table on stdout (cli_table.h). */
static int best_all(const cli_conn *conn, const char *kernel, const char *device_class,
                    const char *format, int other_options)
{
    if (format && strcmp(format, "table") != 0) {
        fprintf(stderr, "ktune best: --all writes --format table, not '%s'\n", format);
        return CLI_EXIT_USAGE;
    }
    if (other_options) {
        fprintf(stderr,
                "ktune best: --all takes only --format table, --kernel and --device-class\n");
        return CLI_EXIT_USAGE;
    }
    cli_client *cl = cli_client_new(conn);
    if (!cl) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        return CLI_EXIT_FAILURE;
    }
    long long rows = 0;
    int rc = cli_table_write(cl, kernel, device_class, stdout, &rows);
    if (rc == CLI_EXIT_OK)
        fprintf(stderr, "ktune best: %lld entries in the table\n", rows);
    cli_client_free(cl);
    return rc;
}

/* The options of one `ktune best` call (strings borrowed from argv; problem owned). */
typedef struct best_args {
    cli_conn *conn;
    const char *kernel, *device, *format, *source, *fallback, *k, *tune_on_miss, *device_class;
    const char *accept;
    int verbose, all;
    json_t *problem;
} best_args;

#define BO(f) offsetof(best_args, f)
static const kt_option best_options[] = {
    CLI_CONN_OPTIONS(best_args, conn),
    {.name = "--problem", .kind = KT_OPT_CALLBACK, .offset = BO(problem), .cb = cli_problem_cb},
    {.name = "--kernel", .kind = KT_OPT_STRING, .offset = BO(kernel)},
    {.name = "--device", .kind = KT_OPT_STRING, .offset = BO(device)},
    {.name = "--device-class", .kind = KT_OPT_STRING, .offset = BO(device_class)},
    {.name = "--format", .kind = KT_OPT_STRING, .offset = BO(format)},
    {.name = "--source", .kind = KT_OPT_STRING, .offset = BO(source)},
    {.name = "--fallback", .kind = KT_OPT_STRING, .offset = BO(fallback)},
    {.name = "--accept", .kind = KT_OPT_STRING, .offset = BO(accept)},
    {.name = "--k", .kind = KT_OPT_STRING, .offset = BO(k)},
    {.name = "--tune-on-miss", .kind = KT_OPT_STRING, .offset = BO(tune_on_miss)},
    {.name = "--verbose", .kind = KT_OPT_FLAG, .offset = BO(verbose)},
    {.name = "--all", .kind = KT_OPT_FLAG, .offset = BO(all)},
    {.kind = KT_OPT_END}};
#undef BO
static const kt_opt_table best_table = {.options = best_options,
                                        .unknown = "unknown argument '%s'"};

/* The checks of a single lookup's options (not --all): 0, or -1 with the reason printed. */
static int best_check(best_args *a)
{
    long long n;
    /* The device external (issue 27) has no class of its own: the caller names it. */
    if (a->device_class && !(a->device && kt_device_kind_of(a->device) == KT_DEVICE_EXTERNAL)) {
        fprintf(stderr, "ktune best: --device-class goes with --all or --device external\n");
        return -1;
    }
    if (!a->format)
        a->format = "json";
    if (!a->kernel || !a->device) {
        fprintf(stderr, "ktune best: --kernel and --device are required (ktune best --help)\n");
        return -1;
    }
    if (strcmp(a->format, "json") != 0 && strcmp(a->format, "flags") != 0 &&
        strcmp(a->format, "header") != 0) {
        fprintf(stderr,
                "ktune best: --format must be json, flags or header (table with --all), not '%s'\n",
                a->format);
        return -1;
    }
    if (a->source && strcmp(a->source, "measured") != 0 && strcmp(a->source, "predicted") != 0) {
        fprintf(stderr, "ktune best: --source must be measured or predicted, not '%s'\n",
                a->source);
        return -1;
    }
    if (a->accept && strcmp(a->accept, "weak") != 0) {
        fprintf(stderr, "ktune best: --accept must be weak, not '%s'\n", a->accept);
        return -1;
    }
    if (a->fallback && strcmp(a->fallback, "nearest") != 0 && strcmp(a->fallback, "none") != 0) {
        fprintf(stderr, "ktune best: --fallback must be nearest or none, not '%s'\n", a->fallback);
        return -1;
    }
    if (a->k && kt_parse_ll(a->k, 1, 20, &n) < 0) {
        fprintf(stderr, "ktune best: --k must be a whole number from 1 to 20\n");
        return -1;
    }
    if (a->tune_on_miss && kt_parse_ll(a->tune_on_miss, 1, 1000000000, &n) < 0) {
        fprintf(stderr, "ktune best: --tune-on-miss must be a positive whole number\n");
        return -1;
    }
    return 0;
}

/* "/v1/best?..." of a lookup into path: 0, or -1 with the reason printed. */
static int best_path(const best_args *a, char *path, size_t cap)
{
    char query[BEST_MAX_QUERY] = "";
    const char *names[] = {"kernel", "device",       "source",       "fallback",
                           "k",      "tune_on_miss", "device_class", "accept"};
    const char *values[] = {a->kernel, a->device,       a->source,       a->fallback,
                            a->k,      a->tune_on_miss, a->device_class, a->accept};
    int bad = 0;
    for (size_t o = 0; o < sizeof names / sizeof names[0]; o++) {
        if (!values[o])
            continue;
        json_t *v = json_string(values[o]);
        bad |= add_query(query, sizeof query, names[o], v) < 0;
        json_decref(v);
    }
    const char *key;
    json_t *value;
    json_object_foreach(a->problem, key, value) bad |=
        add_query(query, sizeof query, key, value) < 0;
    if (bad) {
        fprintf(stderr, "ktune best: the query is too long or a problem value is not a number, "
                        "boolean, string or list of them\n");
        return -1;
    }
    snprintf(path, cap, "/v1/best?%s", query);
    return 0;
}

/* The answer: where it came from on stderr, the configuration on stdout in the format asked. */
static int best_print(const json_t *best, const best_args *a)
{
    kt_error err;
    kt_error_clear(&err);
    char how[1024];
    if (config_render_source_text(best, how, sizeof how) >= 0)
        fprintf(stderr, "ktune best: %s\n", how);
    const json_t *tom = json_object_get(best, "tune_on_miss");
    if (json_is_object(tom))
        fprintf(stderr, "ktune best: tune_on_miss: job %lld %s\n",
                (long long)json_integer_value(json_object_get(tom, "job_id")),
                json_is_true(json_object_get(tom, "queued")) ? "queued"
                                                             : "was already queued or running");
    if (a->verbose && strcmp(a->format, "json") == 0) {
        /* The whole reply: source, provenance, model and candidates. */
        json_dumpf(best, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        return CLI_EXIT_OK;
    }
    char *text = config_render_best(best, a->format, &err);
    if (!text) {
        fprintf(stderr, "ktune: %s\n", err.message);
        return CLI_EXIT_FAILURE;
    }
    fputs(text, stdout);
    free(text);
    return CLI_EXIT_OK;
}

int cli_best_main(int argc, char **argv)
{
    cli_conn conn;
    best_args a = {.conn = &conn, .problem = json_object()};
    json_t *best = NULL;
    cli_client *cl = NULL;
    char path[BEST_MAX_QUERY + 16];
    int rc = CLI_EXIT_USAGE;
    if (cli_conn_init(&conn) < 0)
        goto done;
    int parsed = cli_parse_options(&best_table, argc, argv, &a, best_usage);
    if (parsed != 0) {
        rc = parsed == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        goto done;
    }
    if (a.all) {
        rc = best_all(&conn, a.kernel, a.device_class, a.format,
                      a.device || a.source || a.fallback || a.accept || a.k || a.tune_on_miss ||
                          a.verbose || json_object_size(a.problem) > 0);
        goto done;
    }
    if (best_check(&a) < 0 || best_path(&a, path, sizeof path) < 0)
        goto done;
    if (!(cl = cli_client_new(&conn))) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    if ((rc = cli_client_call(cl, "GET", path, NULL, &best, NULL)) != 0)
        goto done;
    rc = best_print(best, &a);
done:
    json_decref(best);
    json_decref(a.problem);
    cli_client_free(cl);
    return rc;
}
