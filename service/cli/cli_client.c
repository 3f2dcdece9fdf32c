#include "cli/cli_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_hint.h"
#include "core/error.h"
#include "core/number.h"
#include "core/strbuf.h"

struct cli_client {
    cli_conn conn;
    CURL *curl;
};

/* url, without its trailing '/', into c->server: 0, or -1 with the reason in msg (from names the
 * option or the variable). */
static int set_server(cli_conn *c, const char *url, const char *from, char *msg, size_t cap)
{
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    if ((strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) || n < 8 ||
        n >= sizeof c->server) {
        snprintf(msg, cap,
                 "%s '%.200s' is not a server address like http://127.0.0.1:8080 "
                 "(at most %zu characters)",
                 from, url, sizeof c->server - 1);
        return -1;
    }
    memcpy(c->server, url, n);
    c->server[n] = '\0';
    return 0;
}

static int set_token(cli_conn *c, const char *token, const char *from, char *msg, size_t cap)
{
    if (strlen(token) >= sizeof c->token || strpbrk(token, "\r\n")) {
        snprintf(msg, cap, "%s must be one line of at most %zu characters", from,
                 sizeof c->token - 1);
        return -1;
    }
    snprintf(c->token, sizeof c->token, "%s", token);
    return 0;
}

static int set_timeout(cli_conn *c, const char *s, const char *from, char *msg, size_t cap)
{
    long long v;
    if (kt_parse_ll(s, 1, 3600, &v) < 0) {
        snprintf(msg, cap, "%s must be whole seconds from 1 to 3600, not '%.40s'", from, s);
        return -1;
    }
    c->timeout_s = (long)v;
    return 0;
}

int cli_conn_init(cli_conn *c)
{
    static const char *const vars[] = {"KTUNE_SERVER", "KTUNE_TOKEN", "KTUNE_TIMEOUT"};
    int (*const set[])(cli_conn *, const char *, const char *, char *,
                       size_t) = {set_server, set_token, set_timeout};
    char msg[512];
    memset(c, 0, sizeof *c);
    snprintf(c->server, sizeof c->server, "%s", CLI_DEFAULT_SERVER);
    c->timeout_s = CLI_DEFAULT_TIMEOUT;
    for (int k = 0; k < 3; k++) {
        const char *s = getenv(vars[k]);
        if (s && *s && set[k](c, s, vars[k], msg, sizeof msg) < 0) {
            fprintf(stderr, "ktune: %s\n", msg);
            return -1;
        }
    }
    return 0;
}

int cli_conn_option_cb(void *opts, const kt_option *o, const char *value, char *msg, size_t cap)
{
    cli_conn *c = *(cli_conn **)((char *)opts + o->offset);
    if (strcmp(o->name, "--server") == 0)
        return set_server(c, value, o->name, msg, cap);
    if (strcmp(o->name, "--token") == 0)
        return set_token(c, value, o->name, msg, cap);
    return set_timeout(c, value, o->name, msg, cap);
}

cli_client *cli_client_new(const cli_conn *c)
{
    cli_client *cl = calloc(1, sizeof *cl);
    if (!cl)
        return NULL;
    /* Reference counted by libcurl since 7.84; paired with the cleanup in cli_client_free. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(cl);
        return NULL;
    }
    cl->conn = *c;
    cl->curl = curl_easy_init();
    if (!cl->curl) {
        cli_client_free(cl);
        return NULL;
    }
    return cl;
}

void cli_client_free(cli_client *cl)
{
    if (!cl)
        return;
    if (cl->curl)
        curl_easy_cleanup(cl->curl);
    curl_global_cleanup();
    free(cl);
}

const char *cli_client_server(const cli_client *cl)
{
    return cl->conn.server;
}

/* curl's write callback: the reply body grows in a strbuf capped at CLI_MAX_REPLY. */
static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    strbuf *b = userdata;
    size_t n = size * nmemb;
    return strbuf_append(b, ptr, n) == 0 ? n : 0; /* 0 aborts the transfer */
}

int cli_exit_for_status(long status)
{
    if (status >= 200 && status < 300)
        return CLI_EXIT_OK;
    if (status == 401 || status == 403)
        return CLI_EXIT_UNAUTHORIZED;
    if (status == 404)
        return CLI_EXIT_NOT_FOUND;
    if (status >= 400 && status < 500)
        return CLI_EXIT_REJECTED;
    if (status >= 500 && status < 600)
        return CLI_EXIT_SERVER_ERROR;
    return CLI_EXIT_UNREACHABLE; /* 1xx, 3xx or nonsense: not the API speaking */
}

void cli_print_api_error(FILE *f, long status, const char *body, size_t len)
{
    json_t *root = body ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *e = json_object_get(root, "error");
    const char *message = json_string_value(json_object_get(e, "message"));
    const char *hint = json_string_value(json_object_get(e, "hint"));
    if (message) {
        fprintf(f, "ktune: %s\n", message);
        if (hint && *hint) {
            /* The hint as ktune commands (issue 31: POST /v1/tune {...} -> ktune tune ...). */
            char cli[KT_ERROR_HINT_MAX * 2];
            cli_hint_translate(hint, cli, sizeof cli);
            fprintf(f, "  hint: %s\n", cli);
        }
    } else {
        fprintf(f, "ktune: the server answered HTTP %ld without an API error body\n", status);
    }
    json_decref(root);
}

int cli_url_escape(const char *s, char *buf, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        if (o + (plain ? 1 : 3) >= cap)
            return -1;
        if (plain) {
            buf[o++] = (char)*p;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[*p >> 4];
            buf[o++] = hex[*p & 15];
        }
    }
    if (o >= cap)
        return -1;
    buf[o] = '\0';
    return (int)o;
}

int cli_client_call(cli_client *cl, const char *method, const char *path, const json_t *body,
                    json_t **out, long *status_out)
{
    int rc = CLI_EXIT_UNREACHABLE;
    char url[4096], auth[CLI_MAX_TOKEN_LEN + 32], errbuf[CURL_ERROR_SIZE] = "";
    char *payload = NULL;
    struct curl_slist *headers = NULL;
    strbuf b;
    strbuf_init(&b, CLI_MAX_REPLY);
    long status = 0;
    CURL *h = cl->curl;
    *out = NULL;
    if (status_out)
        *status_out = 0;
    if ((size_t)snprintf(url, sizeof url, "%s%s", cl->conn.server, path) >= sizeof url) {
        fprintf(stderr, "ktune: request path too long (%zu characters)\n", strlen(path));
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    curl_easy_reset(h);
    headers = curl_slist_append(headers, "Accept: application/json");
    if (cl->conn.token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", cl->conn.token);
        headers = curl_slist_append(headers, auth);
    }
    if (body) {
        payload = json_dumps(body, JSON_COMPACT);
        if (!payload) {
            fprintf(stderr, "ktune: out of memory encoding the request\n");
            rc = CLI_EXIT_FAILURE;
            goto done;
        }
        headers = curl_slist_append(headers, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(payload));
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "GET") == 0)
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "ktune-cli");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, cl->conn.timeout_s < 10 ? cl->conn.timeout_s : 10L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, cl->conn.timeout_s);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        if (b.failed == STRBUF_TOO_LONG)
            fprintf(stderr, "ktune: the reply from %s is larger than %d MiB\n", cl->conn.server,
                    CLI_MAX_REPLY >> 20);
        else
            fprintf(stderr, "ktune: cannot reach ktuned at %s: %s\n", cl->conn.server,
                    errbuf[0] ? errbuf : curl_easy_strerror(cc));
        fprintf(stderr, "  hint: is ktuned running there? Set --server or KTUNE_SERVER\n");
        goto done;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status_out)
        *status_out = status;
    rc = cli_exit_for_status(status);
    if (rc != CLI_EXIT_OK) {
        cli_print_api_error(stderr, status, b.data, b.len);
        goto done;
    }
    if (b.len == 0) {
        *out = json_null();
        goto done;
    }
    json_error_t je;
    *out = json_loadb(b.data, b.len, 0, &je);
    if (!*out) {
        fprintf(stderr, "ktune: the reply from %s%s is not JSON (%s)\n", cl->conn.server, path,
                je.text);
        rc = CLI_EXIT_UNREACHABLE;
    }
done:
    curl_slist_free_all(headers);
    free(payload);
    strbuf_release(&b);
    return rc;
}
