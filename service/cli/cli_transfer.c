/* ktune export / import — a job's trials to a Kernel Tuner cache or T4 results file, and such a
 * file (from ktune or from the tools people already use) into the server as an import job
 * (POST /v1/imports, several requests when the file is larger than one body may be). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/device_name.h"
#include "core/file.h"
#include "core/number.h"

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_client.h"
#include "cli/cli_formats.h"
#include "space/tuner_export.h"

#define TRANSFER_MAX_FILE  (512u * 1024 * 1024) /* bytes of an import file, uncompressed */
#define TRANSFER_PAGE      10000                /* trials per GET, the server's maximum */
#define TRANSFER_MAX_CHUNK 900000               /* bytes of trials per POST (limit: 1 MiB) */

static void transfer_usage(FILE *f)
{
    fprintf(f, "usage: ktune export JOB --format kerneltuner|t4 [-o FILE]\n"
               "       ktune import FILE [--kernel K --device D] [--problem NAME=V,...] "
               "[--trusted]\n"
               "                   [--device-class C] [--kernel-version V]\n"
               "\n"
               "export writes the finished trials of job JOB as a Kernel Tuner cache file or a\n"
               "T4 results file (stdout unless -o). import reads either format (gzipped or not;\n"
               "'-' for stdin) and records its results on the server as a finished job with\n"
               "strategy 'import', which updates the best known configurations. The kernel,\n"
               "device and problem come from the options, else from the file (ktune's exports\n"
               "name them; a Kernel Tuner cache with a \"space\" name maps to replay:<space>).\n"
               "A genuine Kernel Tuner cache (neither) imports under its kernel_name on the\n"
               "device external: its device class made from device_name (--device-class C\n"
               "overrides; either, or --device external, asks for this with any file), its\n"
               "space from tune_params and restrictions (else the recorded configurations),\n"
               "its problem {\"problem_size\": ...}, its version the space's hash unless\n"
               "--kernel-version V.\n"
               "Imported results answer only a plain ktune best, as imported: never --source\n"
               "measured, the nearest fallback, models or warm starts, unless --trusted (an\n"
               "admin token) says they count as measurements.\n"
               "\n" CLI_CONN_TEXT "\n" CLI_EXIT_CODES_TEXT);
}

/* Every finished trial of the job, in finishing order. */
static int all_trials(cli_client *cl, long long id, json_t **out)
{
    long long after = 0;
    json_t *trials = json_array();
    for (;;) {
        char path[128];
        json_t *page = NULL;
        snprintf(path, sizeof path, "/v1/jobs/%lld/trials?after=%lld&limit=%d", id, after,
                 TRANSFER_PAGE);
        int rc = cli_client_call(cl, "GET", path, NULL, &page, NULL);
        if (rc != CLI_EXIT_OK) {
            json_decref(trials);
            return rc;
        }
        json_t *list = json_object_get(page, "trials");
        size_t n = json_array_size(list);
        json_array_extend(trials, list);
        after = (long long)json_integer_value(json_object_get(page, "next_after"));
        json_decref(page);
        if (n == 0)
            break;
    }
    *out = trials;
    return CLI_EXIT_OK;
}

/* Writes doc to path ("-" or NULL: stdout) through a temporary file renamed into place. */
static int write_json(const json_t *doc, const char *path)
{
    if (!path || strcmp(path, "-") == 0) {
        int bad = json_dumpf(doc, stdout, JSON_COMPACT) < 0;
        fputc('\n', stdout);
        return bad || fflush(stdout) != 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= sizeof tmp) {
        fprintf(stderr, "ktune: output path too long\n");
        return CLI_EXIT_FAILURE;
    }
    /* mkstemp: a fresh file of our own (O_EXCL), never a symlink planted in a shared folder */
    int fd = mkstemp(tmp);
    if (fd >= 0)
        fchmod(fd, 0644); /* mkstemp makes 0600; an export is an ordinary file */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    int bad = !f || json_dumpf(doc, f, JSON_COMPACT) < 0 || fputc('\n', f) == EOF;
    if (f && fclose(f) != 0)
        bad = 1;
    if (bad || rename(tmp, path) != 0) {
        perror("ktune: cannot write the output file");
        if (fd >= 0)
            unlink(tmp);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

/* The options of one `ktune export` call (strings borrowed from argv). */
typedef struct export_args {
    cli_conn *conn;
    const char *id, *format, *output;
} export_args;

#define EO(f) offsetof(export_args, f)
static const kt_option export_options[] = {
    CLI_CONN_OPTIONS(export_args, conn),
    {.name = "--format", .kind = KT_OPT_STRING, .offset = EO(format)},
    {.name = "-o", .kind = KT_OPT_STRING, .offset = EO(output)},
    {.name = "--output", .kind = KT_OPT_STRING, .offset = EO(output)},
    {.kind = KT_OPT_ARG, .offset = EO(id)},
    {.kind = KT_OPT_END}};
#undef EO
static const kt_opt_table export_table = {.options = export_options,
                                          .unknown = "unexpected argument '%s'"};

int cli_export_main(int argc, char **argv)
{
    cli_conn conn;
    long long id = 0;
    cli_client *cl = NULL;
    json_t *job = NULL, *kernels = NULL, *trials = NULL, *doc = NULL, *devices = NULL;
    kt_error err;
    kt_error_clear(&err);
    int rc = CLI_EXIT_USAGE;
    export_args x = {.conn = &conn};
    if (cli_conn_init(&conn) < 0)
        goto done;
    int parsed = cli_parse_options(&export_table, argc, argv, &x, transfer_usage);
    if (parsed != 0) {
        rc = parsed == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        goto done;
    }
    if (!x.id || kt_parse_ll(x.id, 1, INT64_MAX, &id) < 0) {
        fprintf(stderr, "ktune export: a job id (a positive whole number) is required\n");
        goto done;
    }
    if (!x.format || (strcmp(x.format, "kerneltuner") != 0 && strcmp(x.format, "t4") != 0)) {
        fprintf(stderr, "ktune export: --format kerneltuner or --format t4 is required\n");
        goto done;
    }
    if (!(cl = cli_client_new(&conn))) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
    if ((rc = cli_client_call(cl, "GET", path, NULL, &job, NULL)) != 0 ||
        (rc = all_trials(cl, id, &trials)) != 0)
        goto done;
    const char *status = json_string_value(json_object_get(job, "status"));
    if (status && (strcmp(status, "queued") == 0 || strcmp(status, "running") == 0))
        fprintf(stderr, "ktune: job %lld is %s; exporting the %zu trials finished so far\n", id,
                status, json_array_size(trials));
    if (strcmp(x.format, "kerneltuner") == 0 &&
        ((rc = cli_client_call(cl, "GET", "/v1/kernels", NULL, &kernels, NULL)) != 0 ||
         (rc = cli_client_call(cl, "GET", "/v1/devices", NULL, &devices, NULL)) != 0))
        goto done;
    /* the exporter GET /v1/jobs/{id}/export uses too (space/tuner_export.h) */
    doc = tuner_export_job(x.format, job, trials, kernels, devices, &err);
    if (!doc) {
        fprintf(stderr, "ktune: %s\n", err.message);
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    rc = write_json(doc, x.output);
    if (rc == CLI_EXIT_OK && x.output && strcmp(x.output, "-") != 0) {
        /* What the file holds (issue 31: a 12-entry cache was announced as 27 trials): a Kernel
         * Tuner cache has one entry per configuration (a configuration measured again, by a final
         * pick's rounds, is one entry), T4 one result per trial. */
        const json_t *cache = json_object_get(doc, "cache");
        size_t entries = json_is_object(cache) ? json_object_size(cache)
                                               : json_array_size(json_object_get(doc, "results"));
        size_t n = json_array_size(trials);
        if (entries == n)
            fprintf(stderr, "ktune: wrote %zu trials of job %lld to %s\n", n, id, x.output);
        else
            fprintf(stderr,
                    "ktune: wrote %zu %s of job %lld to %s (from %zu trials: a configuration "
                    "measured more than once is one entry)\n",
                    entries, json_is_object(cache) ? "configurations" : "results", id, x.output, n);
    }
done:
    json_decref(doc);
    json_decref(devices);
    json_decref(kernels);
    json_decref(trials);
    json_decref(job);
    cli_client_free(cl);
    return rc;
}

/* The first request's fields for the device external: device_class, space, kernel_version. */
static void external_fields(json_t *body, const cli_import *im, const char *version)
{
    json_object_set_new(body, "device_class", json_string(im->device_class));
    json_object_set(body, "space", im->space);
    if (version)
        json_object_set_new(body, "kernel_version", json_string(version));
}

/* Bytes of trials the first request may carry: less the inline space it also sends. */
static size_t first_chunk_bytes(const cli_import *im)
{
    char *text = im->space ? json_dumps(im->space, JSON_COMPACT) : NULL;
    size_t n = text ? strlen(text) : 0;
    free(text);
    return n + 4096 < TRANSFER_MAX_CHUNK ? TRANSFER_MAX_CHUNK - n - 4096 : 1;
}

/* Where an external import went and how to look it up (stderr). */
static void external_summary(const cli_import *im, const char *kernel, const json_t *problem,
                             const json_t *job)
{
    const char *version = json_string_value(json_object_get(job, "kernel_hash"));
    char sizes[256] = "";
    const json_t *ps = json_object_get(problem, "problem_size"), *v;
    size_t i, used = 0;
    json_t *list = json_is_array(ps) ? json_incref((json_t *)ps) : json_pack("[O]", ps);
    json_array_foreach(list, i, v)
    {
        int n = snprintf(sizes + used, sizeof sizes - used, "%s%.17g", i ? "," : "",
                         json_number_value(v));
        if (n < 0 || (size_t)n >= sizeof sizes - used)
            break;
        used += (size_t)n;
    }
    json_decref(list);
    fprintf(stderr,
            "ktune: kernel %s on device external, class %s, version %s; space: %s\n"
            "ktune: look it up with: ktune best --kernel %s --device external --device-class "
            "'%s'%s%s\n",
            kernel, im->device_class, version ? version : "?", im->space_note, kernel,
            im->device_class, ps ? " --problem problem_size=" : "", ps ? sizes : "");
}

/* Sends the trials in chunks; the first request creates the job. */
static int send_import(cli_client *cl, const cli_import *im, const char *kernel, const char *device,
                       const json_t *problem, int trusted, const char *version)
{
    size_t pos = 0, total = json_array_size(im->trials);
    long long id = 0, inserted = 0, duplicates = 0;
    json_t *chunk, *job = NULL;
    int rc = CLI_EXIT_OK;
    while ((chunk = cli_import_chunk(
                im->trials, &pos, id == 0 ? first_chunk_bytes(im) : TRANSFER_MAX_CHUNK)) != NULL) {
        json_t *body = id == 0 ? json_pack("{s:s,s:s,s:s}", "kernel", kernel, "device", device,
                                           "source", im->format)
                               : json_pack("{s:I}", "job", (json_int_t)id);
        if (id == 0 && im->space)
            external_fields(body, im, version);
        if (id == 0 && problem)
            json_object_set(body, "problem", (json_t *)problem);
        if (id == 0 && trusted) /* the job's trust is set when it is created */
            json_object_set_new(body, "trusted", json_true());
        json_object_set_new(body, "trials", chunk);
        json_decref(job);
        job = NULL;
        rc = cli_client_call(cl, "POST", "/v1/imports", body, &job, NULL);
        json_decref(body);
        if (rc != CLI_EXIT_OK) {
            if (id)
                fprintf(stderr,
                        "ktune: the import stopped: job %lld holds %lld of the %zu trials\n", id,
                        inserted, total);
            goto done;
        }
        id = (long long)json_integer_value(json_object_get(json_object_get(job, "job"), "id"));
        inserted += (long long)json_integer_value(json_object_get(job, "inserted"));
        duplicates += (long long)json_integer_value(json_object_get(job, "duplicates"));
    }
    printf("%lld\n", id);
    const json_t *best = json_object_get(json_object_get(job, "job"), "best");
    fprintf(stderr, "ktune: imported %lld trials (%s file", inserted, im->format);
    if (duplicates)
        fprintf(stderr, ", %lld repeated configurations skipped", duplicates);
    fprintf(stderr, ") as job %lld", id);
    if (json_is_object(best))
        fprintf(stderr, "; best %.6g ms", json_number_value(json_object_get(best, "time_ms")));
    fputc('\n', stderr);
    if (im->space)
        external_summary(im, kernel, problem, json_object_get(job, "job"));
done:
    json_decref(job);
    return rc;
}

/* The options of one `ktune import` call (strings borrowed from argv or from own_*; problem
 * owned). */
typedef struct import_args {
    cli_conn *conn;
    const char *file, *kernel, *device, *klass, *version;
    int trusted;
    json_t *problem;
    char own_class[sizeof((cli_import *)0)->device_class];
    char own_version[sizeof((cli_import *)0)->kernel_version];
} import_args;

#define IO(f) offsetof(import_args, f)
static const kt_option import_options[] = {
    CLI_CONN_OPTIONS(import_args, conn),
    {.name = "--problem", .kind = KT_OPT_CALLBACK, .offset = IO(problem), .cb = cli_problem_cb},
    {.name = "--kernel", .kind = KT_OPT_STRING, .offset = IO(kernel)},
    {.name = "--device", .kind = KT_OPT_STRING, .offset = IO(device)},
    {.name = "--device-class", .kind = KT_OPT_STRING, .offset = IO(klass)},
    {.name = "--kernel-version", .kind = KT_OPT_STRING, .offset = IO(version)},
    {.name = "--trusted", .kind = KT_OPT_FLAG, .offset = IO(trusted)},
    {.kind = KT_OPT_ARG, .offset = IO(file), .flags = KT_OPT_DASH},
    {.kind = KT_OPT_END}};
#undef IO
static const kt_opt_table import_table = {.options = import_options,
                                          .unknown = "unexpected argument '%s'"};

/* argv into a: 0, or -1 with *rc (a usage error printed, or --help's exit). */
static int import_parse(int argc, char **argv, import_args *a, int *rc)
{
    int parsed = cli_parse_options(&import_table, argc, argv, a, transfer_usage);
    if (parsed != 0) {
        *rc = parsed == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        return -1;
    }
    if (!a->file) {
        fprintf(stderr, "ktune import: a file is required (ktune import --help)\n");
        return -1;
    }
    return 0;
}

/* The file read (plain or gzip) and parsed into *root and im: 0, or -1 with the reason printed. */
static int import_load(const char *file, json_t **root, cli_import *im)
{
    kt_error err;
    size_t len = 0;
    json_error_t je;
    int rc = -1;
    kt_error_clear(&err);
    char *data = kt_file_read_gz(file, TRANSFER_MAX_FILE, &len, &err);
    if (!data) {
        fprintf(stderr, "ktune: %s\n", err.message);
        goto out;
    }
    *root = json_loadb(data, len, 0, &je);
    if (!json_is_object(*root)) {
        fprintf(stderr, "ktune: %s is not a JSON object (%s, line %d)\n", file,
                *root ? "another type" : je.text, je.line);
        goto out;
    }
    if (cli_import_parse(*root, im, &err) < 0) {
        fprintf(stderr, "ktune: %s: %s\n", file, err.message);
        if (err.hint[0])
            fprintf(stderr, "  hint: %s\n", err.hint);
        goto out;
    }
    rc = 0;
out:
    free(data);
    return rc;
}

/* Which kernel, device, class and version the import goes to: the options, else what the file
 * says. 0, or an exit status with the reason printed. */
static int import_target(const json_t *root, cli_import *im, import_args *a)
{
    kt_error err;
    kt_error_clear(&err);
    /* A genuine Kernel Tuner cache names no target ktune knows: its own kernel on the device
     * external. --device-class or --device external asks for that with any cache. An external
     * job's export names its class and version (unless another device is asked). */
    snprintf(a->own_class, sizeof a->own_class, "%s", im->device_class);
    snprintf(a->own_version, sizeof a->own_version, "%s", im->kernel_version);
    int to_external = !a->device || kt_device_kind_of(a->device) == KT_DEVICE_EXTERNAL;
    if (to_external && !a->klass && a->own_class[0])
        a->klass = a->own_class;
    if (to_external && !a->version && a->own_version[0])
        a->version = a->own_version;
    if (strcmp(im->format, "kerneltuner") == 0 &&
        (a->klass || (a->device && kt_device_kind_of(a->device) == KT_DEVICE_EXTERNAL) ||
         (!a->device && !im->device[0]))) {
        if (a->device && kt_device_kind_of(a->device) != KT_DEVICE_EXTERNAL) {
            fprintf(stderr, "ktune import: --device-class is for --device external\n");
            return CLI_EXIT_USAGE;
        }
        if (cli_import_external(root, a->kernel, a->klass, im, &err) < 0) {
            fprintf(stderr, "ktune: %s: %s\n", a->file, err.message);
            if (err.hint[0])
                fprintf(stderr, "  hint: %s\n", err.hint);
            return CLI_EXIT_FAILURE;
        }
        if (a->problem) { /* --problem replaces the file's problem_size */
            json_decref(im->problem);
            im->problem = NULL;
        }
        a->device = im->device;
    } else if (a->klass || a->version) {
        fprintf(stderr, "ktune import: --device-class and --kernel-version are for a Kernel Tuner "
                        "cache imported on the device external\n");
        return CLI_EXIT_USAGE;
    }
    if (!a->kernel)
        a->kernel = im->kernel[0] ? im->kernel : NULL;
    if (!a->device)
        a->device = im->device[0] ? im->device : NULL;
    if (!a->problem && im->problem)
        a->problem = json_incref(im->problem);
    if (!a->kernel || !a->device) {
        fprintf(stderr,
                "ktune import: %s does not say which kernel and device it measured; "
                "give --kernel and --device\n",
                a->file);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

int cli_import_main(int argc, char **argv)
{
    cli_conn conn;
    import_args a;
    json_t *root = NULL;
    cli_client *cl = NULL;
    cli_import im;
    memset(&a, 0, sizeof a);
    memset(&im, 0, sizeof im);
    a.conn = &conn;
    int rc = CLI_EXIT_USAGE;
    if (cli_conn_init(&conn) < 0 || import_parse(argc, argv, &a, &rc) < 0)
        goto done;
    rc = CLI_EXIT_FAILURE;
    if (import_load(a.file, &root, &im) < 0 || (rc = import_target(root, &im, &a)) != 0)
        goto done;
    rc = CLI_EXIT_FAILURE;
    if (!(cl = cli_client_new(&conn))) {
        fprintf(stderr, "ktune: cannot start libcurl\n");
        goto done;
    }
    rc = send_import(cl, &im, a.kernel, a.device, a.problem, a.trusted, a.version);
done:
    cli_import_release(&im);
    json_decref(root);
    json_decref(a.problem);
    cli_client_free(cl);
    return rc;
}
