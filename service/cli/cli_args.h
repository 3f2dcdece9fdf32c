/* cli/cli_args — command-line pieces shared by the subcommands: `--name value` / `--name=value`
 * options, numbers with bounds, problem arguments (`--problem M=1024,N=512`) and scalar values
 * (whole files, gzipped or not, or stdin: core/file.h kt_file_read_gz). Pure; JSON results are
 * new references the caller owns. */
#ifndef KT_CLI_ARGS_H
#define KT_CLI_ARGS_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

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

#endif
