/* cli/cli_tune — the pure parts of `ktune tune`: its arguments turned into a POST /v1/tune body,
 * and the progress line --wait draws. cli_tune_main (cli.h) sends the body and polls the job. */
#ifndef KT_CLI_TUNE_H
#define KT_CLI_TUNE_H

#include <jansson.h>
#include <stddef.h>

#include "cli/cli_client.h"

typedef struct cli_tune_args {
    json_t *body; /* the request body (owned; cli_tune_args_release) */
    int wait;     /* --wait */
    int help;     /* --help was asked */
} cli_tune_args;

/* argv[0] is "tune". Fields given as options override those of --json FILE|-. Returns 0, or
 * CLI_EXIT_USAGE / CLI_EXIT_FAILURE (a --json file that cannot be read) after printing why. */
int cli_tune_parse(int argc, char **argv, cli_conn *conn, cli_tune_args *out);
void cli_tune_args_release(cli_tune_args *a);

/* "job 12 running [#####.....] 45/100 evaluations  best 1.2345 ms  3.2 s" from a GET
 * /v1/jobs/{id} reply; without the bar when bar_width is 0. elapsed_s: since submission. */
void cli_progress_line(const json_t *job, double elapsed_s, int bar_width, char *buf, size_t cap);

#endif
