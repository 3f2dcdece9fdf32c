/* cli/cli_args — command-line pieces shared by the subcommands: `--name value` / `--name=value`
 * options, numbers with bounds, problem arguments (`--problem M=1024,N=512`) and scalar values
 * (whole files, gzipped or not, or stdin: core/file.h kt_file_read_gz). Pure; JSON results are
 * new references the caller owns. */
#ifndef KT_CLI_ARGS_H
#define KT_CLI_ARGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "core/options.h"

/* Matches argv[*i] against name ("--kernel"): sets *value from the next argument (advancing *i)
 * or from after '='. Returns 1 matched, 0 not this option, -1 (printed) when the value is
 * missing. */
int cli_opt(int argc, char **argv, int *i, const char *name, const char **value);

/* "42" -> 42, "0.5" -> 0.5, "true"/"false" -> booleans, JSON text starting with '[' or '{' -> that
 * value, anything else -> the string itself. NULL only when out of memory or bad JSON text. */
json_t *cli_parse_value(const char *s);

/* Adds "name=value[,name=value...]" to the object problem. A comma-separated piece without '='
 * continues the previous argument as a list ("problem_size=4096,4096" -> [4096, 4096]). Text
 * starting with '{' is a JSON object whose members are added. Errors (KT_ERR_BAD_REQUEST) name the
 * piece. */
int cli_parse_problem(const char *text, json_t *problem, kt_error *err);
/* Consumes --problem at argv[*i] (as cli_opt) into *problem, created when NULL. Returns 1 when
 * consumed, 0 when argv[*i] is not --problem, -1 after printing a missing or bad value. */
int cli_problem_option(int argc, char **argv, int *i, json_t **problem);
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
