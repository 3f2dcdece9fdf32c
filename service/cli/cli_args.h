/* cli/cli_args — command-line pieces shared by the subcommands: their option tables parsed
 * (core/options.h: `--name value` / `--name=value`) with the messages they print, problem arguments
 * (`--problem M=1024,N=512`) and scalar values (whole files, gzipped or not, or stdin: core/file.h
 * kt_file_read_gz). Pure; JSON results are new references the caller owns. */
#ifndef KT_CLI_ARGS_H
#define KT_CLI_ARGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "core/options.h"

/* "42" -> 42, "0.5" -> 0.5, "true"/"false" -> booleans, JSON text starting with '[' or '{' -> that
 * value, anything else -> the string itself. NULL only when out of memory or bad JSON text. */
json_t *cli_parse_value(const char *s);

/* Adds "name=value[,name=value...]" to the object problem. A comma-separated piece without '='
 * continues the previous argument as a list ("problem_size=4096,4096" -> [4096, 4096]). Text
 * starting with '{' is a JSON object whose members are added. Errors (KT_ERR_BAD_REQUEST) name the
 * piece. */
int cli_parse_problem(const char *text, json_t *problem, kt_error *err);
/* "key=value" (one pair; value as cli_parse_value) added to obj. */
int cli_parse_pair(const char *text, json_t *obj, kt_error *err);

/* Option callbacks (core/options.h) whose field is a json_t * (created on first use, the caller
 * decrefs it): --problem (cli_parse_problem; repeated uses merge) and a NAME=V pair
 * (cli_parse_pair; the message names the option). 0, or -1 with the reason in msg. */
int cli_problem_cb(void *opts, const kt_option *o, const char *value, char *msg, size_t cap);
int cli_pair_cb(void *opts, const kt_option *o, const char *value, char *msg, size_t cap);

/* The command's arguments (argv[0] its name) parsed against table t into opts. Returns 0; 1 after
 * printing usage on stdout for --help or -h; -1 after printing a usage error on stderr:
 * "ktune: MESSAGE", or for an argument no option takes "ktune CMD: UNKNOWN (ktune CMD --help)"
 * with UNKNOWN the table's unknown message ("unknown argument '%s'"). */
int cli_parse_options(const kt_opt_table *t, int argc, char **argv, void *opts,
                      void (*usage)(FILE *));

#endif
