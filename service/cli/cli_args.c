#include "cli/cli_args.h"

#include "cli/cli.h"

#include "core/number.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_PIECE 256 /* characters of one problem value */

json_t *cli_parse_value(const char *s)
{
    long long i;
    double d;
    if (s[0] == '[' || s[0] == '{')
        return json_loads(s, JSON_DECODE_ANY, NULL);
    if (kt_parse_ll(s, LLONG_MIN, LLONG_MAX, &i) == 0)
        return json_integer(i);
    if (kt_parse_double(s, -HUGE_VAL, HUGE_VAL, &d) == 0 && !strchr(s, 'x') && !strchr(s, 'X'))
        return json_real(d);
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
        return json_boolean(s[0] == 't');
    return json_string(s);
}

/* Appends value to the list held by key (turning a scalar into a list first). */
static int extend_list(json_t *obj, const char *key, json_t *value)
{
    json_t *cur = json_object_get(obj, key);
    if (!json_is_array(cur)) {
        json_t *arr = json_array();
        json_array_append(arr, cur);
        json_object_set_new(obj, key, arr);
        cur = arr;
    }
    return json_array_append_new(cur, value);
}

int cli_parse_problem(const char *text, json_t *problem, kt_error *err)
{
    int rc = -1;
    char key[CLI_MAX_PIECE] = "", piece[CLI_MAX_PIECE];
    if (text[0] == '{') {
        json_error_t je;
        json_t *obj = json_loads(text, 0, &je);
        if (!json_is_object(obj)) {
            json_decref(obj);
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "--problem '%.80s' is not a JSON object",
                                text);
        }
        json_object_update(problem, obj);
        json_decref(obj);
        return 0;
    }
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof piece) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "--problem '%.80s': empty or over-long piece (write name=value,...)",
                         text);
            goto done;
        }
        memcpy(piece, p, len);
        piece[len] = '\0';
        char *eq = strchr(piece, '=');
        if (eq) {
            *eq = '\0';
            if (eq == piece) {
                kt_error_set(err, KT_ERR_BAD_REQUEST,
                             "--problem '%.80s': a name is missing before '='", text);
                goto done;
            }
            snprintf(key, sizeof key, "%s", piece);
            json_t *v = cli_parse_value(eq + 1);
            if (!v || json_object_set_new(problem, key, v) < 0) {
                kt_error_set(err, KT_ERR_BAD_REQUEST, "--problem '%.80s': bad value for %s", text,
                             key);
                goto done;
            }
        } else if (key[0]) {
            json_t *v = cli_parse_value(piece);
            if (!v || extend_list(problem, key, v) < 0) {
                kt_error_set(err, KT_ERR_BAD_REQUEST, "--problem '%.80s': bad value '%s'", text,
                             piece);
                goto done;
            }
        } else {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "--problem '%.80s': '%s' has no name (write name=value,...)", text, piece);
            goto done;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    rc = 0;
done:
    return rc;
}

int cli_parse_pair(const char *text, json_t *obj, kt_error *err)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || eq - text >= CLI_MAX_PIECE)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "'%.80s' is not name=value", text);
    char key[CLI_MAX_PIECE];
    memcpy(key, text, (size_t)(eq - text));
    key[eq - text] = '\0';
    json_t *v = cli_parse_value(eq + 1);
    if (!v)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "'%.80s': the value is not valid JSON", text);
    json_object_set_new(obj, key, v);
    return 0;
}

int cli_problem_cb(void *opts, const kt_option *o, const char *value, char *msg, size_t cap)
{
    json_t **problem = (json_t **)((char *)opts + o->offset);
    kt_error err;
    kt_error_clear(&err);
    if (!*problem)
        *problem = json_object();
    if (cli_parse_problem(value, *problem, &err) < 0) {
        snprintf(msg, cap, "%s", err.message);
        return -1;
    }
    return 0;
}

int cli_pair_cb(void *opts, const kt_option *o, const char *value, char *msg, size_t cap)
{
    json_t **obj = (json_t **)((char *)opts + o->offset);
    kt_error err;
    kt_error_clear(&err);
    if (!*obj)
        *obj = json_object();
    if (cli_parse_pair(value, *obj, &err) < 0) {
        snprintf(msg, cap, "%s %s", o->name, err.message);
        return -1;
    }
    return 0;
}

int cli_parse_options(const kt_opt_table *t, int argc, char **argv, void *opts,
                      void (*usage)(FILE *))
{
    char msg[1024];
    int rc = kt_opt_parse(t, argc, argv, opts, msg, sizeof msg);
    if (rc == 1) {
        usage(stdout);
        return 1;
    }
    if (rc == KT_OPT_UNKNOWN)
        fprintf(stderr, "ktune %s: %s (ktune %s --help)\n", argv[0], msg, argv[0]);
    else if (rc < 0)
        fprintf(stderr, "ktune: %s\n", msg);
    return rc < 0 ? -1 : 0;
}
