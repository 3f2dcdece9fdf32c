/* cli/cli_client — a small HTTP client for ktuned's JSON API over libcurl: base URL and token from
 * the command line or the environment, a timeout per request, replies capped in size, and failures
 * turned into the command's exit codes (cli.h) with the API's message and hint printed on stderr.
 *
 * Call order: cli_conn_init -> the command's option table with CLI_CONN_OPTIONS parsed ->
 * cli_client_new -> cli_client_call* -> cli_client_free. The caller owns the client and every
 * JSON reply. */
#ifndef KT_CLI_CLIENT_H
#define KT_CLI_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "core/options.h"

#define CLI_DEFAULT_SERVER  "http://127.0.0.1:8080" /* ktuned's default --listen */
#define CLI_DEFAULT_TIMEOUT 60
#define CLI_MAX_REPLY       (64 * 1024 * 1024) /* bytes; a larger reply is an error */
#define CLI_MAX_SERVER_LEN  512
#define CLI_MAX_TOKEN_LEN   512

typedef struct cli_conn {
    char server[CLI_MAX_SERVER_LEN]; /* without a trailing '/' */
    char token[CLI_MAX_TOKEN_LEN];   /* "" for none */
    long timeout_s;
} cli_conn;

/* Defaults, then KTUNE_SERVER, KTUNE_TOKEN, KTUNE_TIMEOUT. Returns 0, or -1 after printing what is
 * wrong with the environment. */
int cli_conn_init(cli_conn *c);
/* The option callback of --server, --token and --timeout (core/options.h): the field at the
 * option's offset is a cli_conn *. Returns 0, or -1 with the reason in msg. */
int cli_conn_option_cb(void *opts, const kt_option *o, const char *value, char *msg, size_t cap);
/* The three entries of an option table (core/options.h) for a struct type whose member field is
 * the cli_conn * they set. */
#define CLI_CONN_OPTIONS(type, field)                                                              \
    {.name = "--server",                                                                           \
     .kind = KT_OPT_CALLBACK,                                                                      \
     .offset = offsetof(type, field),                                                              \
     .cb = cli_conn_option_cb},                                                                    \
        {.name = "--token",                                                                        \
         .kind = KT_OPT_CALLBACK,                                                                  \
         .offset = offsetof(type, field),                                                          \
         .cb = cli_conn_option_cb},                                                                \
    {                                                                                              \
        .name = "--timeout", .kind = KT_OPT_CALLBACK, .offset = offsetof(type, field),             \
        .cb = cli_conn_option_cb                                                                   \
    }

typedef struct cli_client cli_client;

cli_client *cli_client_new(const cli_conn *c); /* NULL when libcurl cannot start */
void cli_client_free(cli_client *cl);
const char *cli_client_server(const cli_client *cl);

/* method "GET" / "POST" / "DELETE"; path from the root ("/v1/jobs?limit=5"); body NULL or a JSON
 * value sent as application/json. On a 2xx reply sets *out (new reference; JSON null for an empty
 * body) and returns 0. Otherwise prints the error on stderr and returns its exit code (cli.h); the
 * HTTP status is left in *status when status is not NULL (0 when no reply came). */
int cli_client_call(cli_client *cl, const char *method, const char *path, const json_t *body,
                    json_t **out, long *status);

/* The exit code of an HTTP status (2xx -> 0). Pure. */
int cli_exit_for_status(long status);
/* Prints "ktune: <message>" and "  hint: <hint>" from an error body {"error": {...}}, or a line
 * naming the status when the body is not one. Pure apart from writing to f. */
void cli_print_api_error(FILE *f, long status, const char *body, size_t len);
/* Percent-encodes s (RFC 3986 unreserved characters pass) into buf; -1 when it does not fit. */
int cli_url_escape(const char *s, char *buf, size_t cap);

#endif
