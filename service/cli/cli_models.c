/* ktune models / models ID / train — list the models of the server, read one (its training set and
 * held-out metrics), and queue the training of one (optionally following it until it is ready). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_client.h"
#include "core/device_name.h"
#include "core/number.h"

#define TRAIN_POLL_MS 500

static void models_usage(FILE *f)
{
    fprintf(f, "usage: ktune models [--kernel K] [--device-class C] [--status S] [--limit N]\n"
               "                    [--json]\n"
               "       ktune models ID [--json]\n"
               "\n"
               "models: the newest models as a table (S: training, ready, failed, superseded;\n"
               "N: 1-500, default 20). models ID: one model in full: its key, training set,\n"
               "hyper-parameters and held-out metrics.\n"
               "\n" CLI_CONN_TEXT "\n" CLI_EXIT_CODES_TEXT);
}

static void train_usage(FILE *f)
{
    fprintf(f, "usage: ktune train --kernel K (--device D | --device-class C |\n"
               "                   --device external --device-class C [--kernel-version V])\n"
               "                   [--kind predictor|surrogate] [--algorithm A]\n"
               "                   [--hyper NAME=V[,NAME=V...]] [--wait] [--json]\n"
               "\n"
               "Queues the training of a predictor for the kernel on the device's class\n"
               "(POST /v1/models), from every problem tuned there. A: seq2seq, nearest, common,\n"
               "xgb (the server's default when left out). --kind surrogate trains an accel\n"
               "device's cost model for the mindmap strategy instead (algorithm mlp; --hyper\n"
               "samples=N,problems=N,epochs=N,max_seconds=S or JSON: '{\"hidden\": [64, 64]}').\n"
               "--wait polls until the model is ready (exit 0) or failed (exit 8) and prints it.\n"
               "A model of the same key that is already training is refused (exit 4).\n"
               "--device external: a kernel measured through ask/tell or imported from a\n"
               "Kernel Tuner cache, of the class C (and version V, else the newest).\n"
               "\n" CLI_CONN_TEXT "\n" CLI_EXIT_CODES_TEXT);
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

/* "2024-05-01T12:34:56.789+00:00" -> "2024-05-01 12:34:56"; "-" when absent. */
static void short_time(const json_t *v, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", str_or(v, "-"));
    if (strlen(buf) > 10 && buf[10] == 'T')
        buf[10] = ' ';
    if (strlen(buf) > 19)
        buf[19] = '\0';
}

static void models_table(const json_t *page)
{
    size_t i;
    json_t *m;
    printf("%-5s %-10s %-9s %3s %-10s %-34s %8s %7s  %-19s  %s\n", "ID", "STATUS", "ALGORITHM",
           "VER", "KERNEL", "DEVICE_CLASS", "PROBLEMS", "TRIALS", "CREATED", "FINISHED");
    json_array_foreach(json_object_get(page, "models"), i, m)
    {
        const json_t *tr = json_object_get(m, "training");
        char created[32], finished[32];
        short_time(json_object_get(m, "created_at"), created, sizeof created);
        short_time(json_object_get(m, "finished_at"), finished, sizeof finished);
        printf("%-5lld %-10s %-9s %3lld %-10s %-34s %8lld %7lld  %-19s  %s\n",
               (long long)json_integer_value(json_object_get(m, "id")),
               str_or(json_object_get(m, "status"), "?"),
               str_or(json_object_get(m, "algorithm"), "?"),
               (long long)json_integer_value(json_object_get(m, "version")),
               str_or(json_object_get(m, "kernel"), "?"),
               str_or(json_object_get(m, "device_class"), "?"),
               (long long)json_integer_value(json_object_get(tr, "problems")),
               (long long)json_integer_value(json_object_get(tr, "trials")), created, finished);
    }
    if (json_array_size(json_object_get(page, "models")) == 0)
        printf("(no models)\n");
}

static void print_number(const char *label, const json_t *v, const char *unit)
{
    if (json_is_number(v))
        printf("%-19s %.4g%s\n", label, json_number_value(v), unit);
}

static void model_details(const json_t *m)
{
    const json_t *tr = json_object_get(m, "training");
    const json_t *metrics = json_object_get(m, "metrics");
    const json_t *error = json_object_get(m, "error");
    char *hyper = json_dumps(json_object_get(m, "hyper"), JSON_COMPACT | JSON_ENCODE_ANY);
    printf("model              %lld  %s\n", (long long)json_integer_value(json_object_get(m, "id")),
           str_or(json_object_get(m, "status"), "?"));
    printf("algorithm          %s %s, version %lld\n", str_or(json_object_get(m, "kind"), "?"),
           str_or(json_object_get(m, "algorithm"), "?"),
           (long long)json_integer_value(json_object_get(m, "version")));
    printf("key                %s on %s (kernel hash %s, toolchain '%s')\n",
           str_or(json_object_get(m, "kernel"), "?"),
           str_or(json_object_get(m, "device_class"), "?"),
           str_or(json_object_get(m, "kernel_hash"), "?"),
           str_or(json_object_get(m, "toolchain"), ""));
    printf("hyper              %s\n", hyper ? hyper : "{}");
    free(hyper);
    int surrogate = strcmp(str_or(json_object_get(m, "kind"), ""), "surrogate") == 0;
    if (surrogate && json_is_object(tr) && json_object_size(tr) > 0)
        printf("training set       %lld sampled problems, %lld valid mappings (%.1f%% of those "
               "drawn)\n",
               (long long)json_integer_value(json_object_get(tr, "problems")),
               (long long)json_integer_value(json_object_get(tr, "samples")),
               100 * json_number_value(json_object_get(tr, "valid_fraction")));
    else if (json_is_object(tr) && json_object_size(tr) > 0)
        printf("training set       %lld problems, %lld trials (%s .. %s)\n",
               (long long)json_integer_value(json_object_get(tr, "problems")),
               (long long)json_integer_value(json_object_get(tr, "trials")),
               str_or(json_object_get(tr, "from"), "-"), str_or(json_object_get(tr, "to"), "-"));
    if (json_is_integer(json_object_get(m, "size_bytes")))
        printf("size               %lld bytes (format %lld)\n",
               (long long)json_integer_value(json_object_get(m, "size_bytes")),
               (long long)json_integer_value(json_object_get(m, "format_version")));
    if (surrogate && json_is_object(metrics)) {
        print_number("held-out spearman", json_object_get(metrics, "test_objective_spearman"), "");
        print_number("held-out rmse", json_object_get(metrics, "test_objective_rmse"), " (ln)");
        print_number("training seconds", json_object_get(metrics, "seconds"), " s");
    } else if (json_is_object(metrics)) {
        printf("held-out problems  %lld (%lld with the predicted configuration measured)\n",
               (long long)json_integer_value(json_object_get(metrics, "problems")),
               (long long)json_integer_value(json_object_get(metrics, "measured")));
        print_number("param accuracy", json_object_get(metrics, "param_accuracy"), "");
        print_number("perfect", json_object_get(metrics, "perfect"), "");
        print_number("top-1 / best median", json_object_get(metrics, "top1_ratio_median"), "");
        print_number("top-1 within 1.10x", json_object_get(metrics, "top1_within_1_10"), "");
        print_number("training seconds", json_object_get(metrics, "train_seconds"), " s");
    }
    printf("created            %s\nstarted            %s\nfinished           %s\n",
           str_or(json_object_get(m, "created_at"), "-"),
           str_or(json_object_get(m, "started_at"), "-"),
           str_or(json_object_get(m, "finished_at"), "-"));
    if (json_is_object(error)) {
        printf("error              %s: %s\n", str_or(json_object_get(error, "code"), "?"),
               str_or(json_object_get(error, "message"), ""));
        if (json_is_string(json_object_get(error, "hint")))
            printf("hint               %s\n", json_string_value(json_object_get(error, "hint")));
    }
}

/* Appends "&key=value" (escaped) to path when value is set; -1 when it does not fit. */
static int add_filter(char *path, size_t cap, const char *key, const char *value)
{
    char esc[512];
    if (!value)
        return 0;
    if (cli_url_escape(value, esc, sizeof esc) < 0)
        return -1;
    size_t len = strlen(path);
    int n = snprintf(path + len, cap - len, "&%s=%s", key, esc);
    return n < 0 || (size_t)n >= cap - len ? -1 : 0;
}

/* The options of `ktune models [ID]` (strings borrowed from argv). */
typedef struct models_args {
    cli_conn *conn;
    const char *kernel, *device_class, *status, *limit_text, *id;
    int json;
} models_args;

#define MO(f) offsetof(models_args, f)
static const kt_option models_options[] = {
    CLI_CONN_OPTIONS(models_args, conn),
    {.name = "--kernel", .kind = KT_OPT_STRING, .offset = MO(kernel)},
    {.name = "--device-class", .kind = KT_OPT_STRING, .offset = MO(device_class)},
    {.name = "--status", .kind = KT_OPT_STRING, .offset = MO(status)},
    {.name = "--limit", .kind = KT_OPT_STRING, .offset = MO(limit_text)},
    {.name = "--json", .kind = KT_OPT_FLAG, .offset = MO(json)},
    {.kind = KT_OPT_ARG, .offset = MO(id)},
    {.kind = KT_OPT_END}};
#undef MO
static const kt_opt_table models_opt_table = {.options = models_options,
                                              .unknown = "unexpected argument '%s'"};

int cli_models_main(int argc, char **argv)
{
    cli_conn conn;
    models_args a = {.conn = &conn};
    int rc = CLI_EXIT_USAGE;
    long long limit = 20, id_value;
    char path[2048];
    json_t *reply = NULL;
    cli_client *cl = NULL;
    if (cli_conn_init(&conn) < 0)
        goto done;
    int parsed = cli_parse_options(&models_opt_table, argc, argv, &a, models_usage);
    if (parsed != 0) {
        rc = parsed == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        goto done;
    }
    if (a.limit_text && kt_parse_ll(a.limit_text, 1, 500, &limit) < 0) {
        fprintf(stderr, "ktune models: --limit must be a whole number from 1 to 500\n");
        goto done;
    }
    if (a.id) {
        if (kt_parse_ll(a.id, 1, INT64_MAX, &id_value) < 0) {
            fprintf(stderr, "ktune models: a model id is a positive whole number, not '%s'\n",
                    a.id);
            goto done;
        }
        if (a.kernel || a.device_class || a.status || a.limit_text) {
            fprintf(stderr, "ktune models: filters apply to the list, not to one model\n");
            goto done;
        }
        snprintf(path, sizeof path, "/v1/models/%lld", id_value);
    } else {
        snprintf(path, sizeof path, "/v1/models?limit=%lld", limit);
        if (add_filter(path, sizeof path, "kernel", a.kernel) < 0 ||
            add_filter(path, sizeof path, "device_class", a.device_class) < 0 ||
            add_filter(path, sizeof path, "status", a.status) < 0) {
            fprintf(stderr, "ktune models: a filter is too long\n");
            goto done;
        }
    }
    if (!(cl = cli_client_new(&conn))) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    if ((rc = cli_client_call(cl, "GET", path, NULL, &reply, NULL)) != 0)
        goto done;
    if (a.json)
        print_json(reply);
    else if (a.id)
        model_details(reply);
    else
        models_table(reply);
done:
    json_decref(reply);
    cli_client_free(cl);
    return rc;
}

/* Polls GET /v1/models/{id} until the model is no longer training; *model gets the last reply. */
static int wait_model(cli_client *cl, long long id, json_t **model)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/models/%lld", id);
    for (;;) {
        json_decref(*model);
        *model = NULL;
        int rc = cli_client_call(cl, "GET", path, NULL, model, NULL);
        if (rc != 0)
            return rc;
        if (strcmp(str_or(json_object_get(*model, "status"), "training"), "training") != 0)
            return 0;
        struct timespec ts = {0, TRAIN_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The options of `ktune train` (strings borrowed from argv). */
typedef struct train_args {
    cli_conn *conn;
    const char *kernel, *device, *device_class, *algorithm, *hyper_text, *kind, *kernel_version;
    int wait, json;
} train_args;

#define TA(f) offsetof(train_args, f)
static const kt_option train_options[] = {
    CLI_CONN_OPTIONS(train_args, conn),
    {.name = "--kernel", .kind = KT_OPT_STRING, .offset = TA(kernel)},
    {.name = "--device", .kind = KT_OPT_STRING, .offset = TA(device)},
    {.name = "--device-class", .kind = KT_OPT_STRING, .offset = TA(device_class)},
    {.name = "--algorithm", .kind = KT_OPT_STRING, .offset = TA(algorithm)},
    {.name = "--kind", .kind = KT_OPT_STRING, .offset = TA(kind)},
    {.name = "--hyper", .kind = KT_OPT_STRING, .offset = TA(hyper_text)},
    {.name = "--kernel-version", .kind = KT_OPT_STRING, .offset = TA(kernel_version)},
    {.name = "--wait", .kind = KT_OPT_FLAG, .offset = TA(wait)},
    {.name = "--json", .kind = KT_OPT_FLAG, .offset = TA(json)},
    {.kind = KT_OPT_END}};
#undef TA
static const kt_opt_table train_table = {.options = train_options,
                                         .unknown = "unexpected argument '%s'"};

int cli_train_main(int argc, char **argv)
{
    cli_conn conn;
    train_args a = {.conn = &conn, .kind = "predictor"};
    int rc = CLI_EXIT_USAGE;
    json_t *body = NULL, *model = NULL;
    cli_client *cl = NULL;
    kt_error err;
    kt_error_clear(&err);
    if (cli_conn_init(&conn) < 0)
        goto done;
    int parsed = cli_parse_options(&train_table, argc, argv, &a, train_usage);
    if (parsed != 0) {
        rc = parsed == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        goto done;
    }
    /* The device external names its class too (issue 27). */
    int external = a.device && kt_device_kind_of(a.device) == KT_DEVICE_EXTERNAL;
    if (!a.kernel || (external ? !a.device_class : !a.device == !a.device_class) ||
        (a.kernel_version && !external)) {
        fprintf(stderr, "ktune train: --kernel and one of --device and --device-class are "
                        "required (both with --device external, which alone takes "
                        "--kernel-version; ktune train --help)\n");
        goto done;
    }
    body = json_pack("{s:s, s:s}", "kernel", a.kernel, "kind", a.kind);
    if (a.device)
        json_object_set_new(body, "device", json_string(a.device));
    if (a.device_class)
        json_object_set_new(body, "device_class", json_string(a.device_class));
    if (a.kernel_version)
        json_object_set_new(body, "kernel_version", json_string(a.kernel_version));
    if (a.algorithm)
        json_object_set_new(body, "algorithm", json_string(a.algorithm));
    if (a.hyper_text) {
        json_t *hyper = json_object();
        json_object_set_new(body, "hyper", hyper);
        if (cli_parse_problem(a.hyper_text, hyper, &err) < 0) {
            fprintf(stderr, "ktune train: --hyper: %s\n", err.message);
            goto done;
        }
    }
    if (!(cl = cli_client_new(&conn))) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    if ((rc = cli_client_call(cl, "POST", "/v1/models", body, &model, NULL)) != 0)
        goto done;
    long long id = json_integer_value(json_object_get(model, "id"));
    if (!a.wait) {
        if (a.json)
            print_json(model);
        else
            printf("model %lld queued (%s %s on %s, version %lld)\n", id,
                   str_or(json_object_get(model, "algorithm"), "?"), a.kernel,
                   str_or(json_object_get(model, "device_class"), "?"),
                   (long long)json_integer_value(json_object_get(model, "version")));
        goto done;
    }
    if (!a.json)
        fprintf(stderr, "ktune train: model %lld training...\n", id);
    if ((rc = wait_model(cl, id, &model)) != 0)
        goto done;
    if (a.json)
        print_json(model);
    else
        model_details(model);
    rc = strcmp(str_or(json_object_get(model, "status"), "?"), "failed") == 0 ? CLI_EXIT_JOB_FAILED
                                                                              : CLI_EXIT_OK;
done:
    json_decref(model);
    json_decref(body);
    cli_client_free(cl);
    return rc;
}
