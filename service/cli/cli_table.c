#include "cli/cli_table.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define TABLE_PAGE     1000      /* GET /v1/best/entries answers at most 1000 a request */
#define TABLE_MAX_ROW  (1 << 20) /* an entry's line, at most (the server's JSON is far smaller) */
#define TABLE_MAX_PATH 2048

static const char *const text_columns[] = {"kernel", "device_class", "kernel_hash", "toolchain",
                                           "origin"};

static int plain_text(const char *s)
{
    return s && !strpbrk(s, "\t\r\n");
}

int cli_table_row(const json_t *entry, strbuf *out, kt_error *err)
{
    char *problem = NULL, *config = NULL;
    int rc = -1;
    for (size_t i = 0; i < sizeof text_columns / sizeof *text_columns; i++) {
        const char *s = json_string_value(json_object_get(entry, text_columns[i]));
        if (!plain_text(s)) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "a best entry's %s is missing or holds a tab or line break",
                         text_columns[i]);
            goto done;
        }
    }
    const json_t *time_ms = json_object_get(entry, "time_ms");
    const char *at = json_string_value(json_object_get(entry, "measured_at"));
    if (!json_is_number(time_ms) || !json_is_object(json_object_get(entry, "problem")) ||
        !json_is_object(json_object_get(entry, "config")) || (at && !plain_text(at))) {
        kt_error_set(
            err, KT_ERR_BAD_REQUEST,
            "a best entry lacks time_ms, problem or config, or its measured_at holds a tab");
        goto done;
    }
    size_t flags = JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17);
    problem = json_dumps(json_object_get(entry, "problem"), flags);
    config = json_dumps(json_object_get(entry, "config"), flags);
    if (!problem || !config) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory writing the table");
        goto done;
    }
    for (size_t i = 0; i < sizeof text_columns / sizeof *text_columns; i++)
        strbuf_appendf(out, "%s\t", json_string_value(json_object_get(entry, text_columns[i])));
    strbuf_appendf(out, "%.17g\t%s\t%s\t%s\n", json_number_value(time_ms), problem, config,
                   at ? at : "");
    if (out->failed) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "the table does not fit in memory");
        goto done;
    }
    rc = 0;
done:
    free(problem);
    free(config);
    return rc;
}

static int add_param(char *q, size_t cap, const char *key, const char *value)
{
    char esc[1024];
    size_t len = strlen(q);
    if (cli_url_escape(value, esc, sizeof esc) < 0)
        return -1;
    int n = snprintf(q + len, cap - len, "&%s=%s", key, esc);
    return n < 0 || (size_t)n >= cap - len ? -1 : 0;
}

/* The key of an entry: kernel, class, hash, toolchain and problem (sorted JSON); malloc'd. */
static char *entry_key(const json_t *e)
{
    char *problem = json_dumps(json_object_get(e, "problem"), JSON_COMPACT | JSON_SORT_KEYS);
    strbuf b;
    strbuf_init(&b, TABLE_MAX_ROW);
    for (size_t i = 0; i < 4; i++) {
        const char *s = json_string_value(json_object_get(e, text_columns[i]));
        strbuf_appendf(&b, "%s\t", s ? s : "");
    }
    strbuf_puts(&b, problem ? problem : "");
    free(problem);
    return strbuf_take(&b);
}

int cli_table_write(cli_client *cl, const char *kernel, const char *device_class, FILE *f,
                    long long *rows)
{
    json_t *seen = json_object(), *page = NULL;
    strbuf text;
    kt_error err;
    kt_error_clear(&err);
    strbuf_init(&text, (size_t)1 << 30);
    int rc = CLI_EXIT_FAILURE;
    long long offset = 0;
    *rows = 0;
    strbuf_puts(&text, CLI_TABLE_FORMAT_LINE "\n" CLI_TABLE_COLUMNS "\n");
    for (;;) {
        char path[TABLE_MAX_PATH];
        snprintf(path, sizeof path, "/v1/best/entries?limit=%d&offset=%lld", TABLE_PAGE, offset);
        if ((kernel && add_param(path, sizeof path, "kernel", kernel) < 0) ||
            (device_class && add_param(path, sizeof path, "device_class", device_class) < 0)) {
            fprintf(stderr, "ktune best: --kernel or --device-class is too long\n");
            rc = CLI_EXIT_USAGE;
            goto done;
        }
        json_decref(page);
        page = NULL;
        if ((rc = cli_client_call(cl, "GET", path, NULL, &page, NULL)) != 0)
            goto done;
        rc = CLI_EXIT_FAILURE;
        const json_t *list = json_object_get(page, "best");
        if (!json_is_array(list)) {
            fprintf(stderr, "ktune best: GET /v1/best/entries answered without a \"best\" list\n");
            goto done;
        }
        size_t i;
        const json_t *e;
        json_array_foreach(list, i, e)
        {
            char *key = entry_key(e);
            if (!key) {
                fprintf(stderr, "ktune best: out of memory\n");
                goto done;
            }
            int dup = json_object_get(seen, key) != NULL;
            if (!dup)
                json_object_set_new(seen, key, json_true());
            free(key);
            if (dup)
                continue;
            if (cli_table_row(e, &text, &err) < 0) {
                fprintf(stderr, "ktune best: %s\n", err.message);
                goto done;
            }
            (*rows)++;
        }
        if (json_array_size(list) < TABLE_PAGE)
            break;
        offset += (long long)json_array_size(list);
    }
    /* Written only once every page has come: a failure leaves no half table on stdout. */
    if (fwrite(strbuf_str(&text), 1, text.len, f) != text.len || fflush(f) != 0) {
        fprintf(stderr, "ktune best: cannot write the table\n");
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    json_decref(page);
    json_decref(seen);
    strbuf_release(&text);
    return rc;
}
