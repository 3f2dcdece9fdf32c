#include "space/config_render.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/expr.h"

#define RENDER_VALUE_MAX 512

int config_value_text(const json_t *v, int c_syntax, char *buf, size_t cap)
{
    int n = -1;
    if (json_is_integer(v)) {
        n = snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        n = expr_format_float(json_real_value(v), buf, cap);
    } else if (json_is_boolean(v)) {
        n = snprintf(buf, cap, "%s",
                     c_syntax ? (json_is_true(v) ? "1" : "0")
                              : (json_is_true(v) ? "True" : "False"));
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (strpbrk(s, "\r\n") || strlen(s) != json_string_length(v))
            return -1;
        n = snprintf(buf, cap, "%s", s);
    }
    if (n < 0 || (size_t)n >= cap)
        return -1;
    return n;
}

static const char *best_source(const json_t *best)
{
    const char *s = json_string_value(json_object_get(best, "source"));
    return s ? s : "measured"; /* servers before sources answered measurements only */
}

int config_render_source_text(const json_t *best, char *buf, size_t cap)
{
    const char *source = best_source(best);
    int n;
    if (strcmp(source, "predicted") == 0) {
        const json_t *m = json_object_get(best, "model");
        n = snprintf(buf, cap, "predicted by model %lld (%s, version %lld), score %.4g",
                     (long long)json_integer_value(json_object_get(m, "id")),
                     json_is_string(json_object_get(m, "algorithm"))
                         ? json_string_value(json_object_get(m, "algorithm"))
                         : "?",
                     (long long)json_integer_value(json_object_get(m, "version")),
                     json_number_value(json_object_get(best, "score")));
        /* Its confidence (issue 31): how many problems the model learnt from, and how far this
         * one is from the nearest of them. */
        const json_t *conf = json_object_get(best, "confidence");
        const json_t *near = json_object_get(conf, "nearest_trained");
        if (n >= 0 && (size_t)n < cap && json_is_object(conf))
            n += snprintf(buf + n, cap - (size_t)n, "; %smodel trained on %lld problems%s",
                          json_is_true(json_object_get(conf, "weak")) ? "a weak " : "",
                          (long long)json_integer_value(json_object_get(conf, "train_problems")),
                          json_is_object(near) ? ", nearest trained problem at log-distance " : "");
        if (n >= 0 && (size_t)n < cap && json_is_object(near))
            n += snprintf(buf + n, cap - (size_t)n, "%.3g",
                          json_number_value(json_object_get(near, "distance")));
    } else if (strcmp(source, "nearest") == 0) {
        const json_t *nb = json_object_get(best, "nearest");
        char *problem = json_dumps(json_object_get(nb, "problem"),
                                   JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        n = snprintf(buf, cap, "nearest tuned problem %s (distance %.3g, %g ms there)",
                     problem ? problem : "?", json_number_value(json_object_get(nb, "distance")),
                     json_number_value(json_object_get(nb, "time_ms")));
        free(problem);
    } else {
        const json_t *pv = json_object_get(best, "provenance");
        char noise[48] = "";
        if (json_is_number(json_object_get(pv, "noise_cv")))
            snprintf(noise, sizeof noise, ", noise %.2g%%",
                     100 * json_number_value(json_object_get(pv, "noise_cv")));
        /* "measured" here, or "imported" (POST /v1/imports: measured elsewhere, issue #11). */
        n = snprintf(buf, cap, "%s %g ms (job %lld, trial %lld, %lld repeats%s)",
                     strcmp(source, "imported") == 0 ? "imported" : "measured",
                     json_number_value(json_object_get(best, "time_ms")),
                     (long long)json_integer_value(json_object_get(best, "job_id")),
                     (long long)json_integer_value(json_object_get(best, "trial_id")),
                     (long long)json_integer_value(json_object_get(pv, "repeats")), noise);
    }
    if (n < 0 || (size_t)n >= cap)
        return -1;
    return n;
}

static int is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (const char *p = s; *p; p++) {
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return 0;
    }
    return 1;
}

/* Characters a shell leaves alone in a word. */
static int shell_plain(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (!(isalnum((unsigned char)*p) || strchr("_-.,+/:=@%", *p)))
            return 0;
    }
    return 1;
}

/* KTUNE_ followed by name in upper case, anything but letters and digits as '_'. */
static void macro_name(const char *name, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "KTUNE_");
    for (const char *p = name; *p && (size_t)n + 1 < cap; p++)
        buf[n++] = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
    buf[n] = '\0';
}

/* Writes s into a C comment without ending it early. */
static void comment_text(FILE *f, const char *s)
{
    for (const char *p = s; *p; p++) {
        fputc(*p == '\n' ? ' ' : *p, f);
        if (p[0] == '*' && p[1] == '/')
            fputc(' ', f);
    }
}

static int render_flags(FILE *f, const json_t *best, const json_t *config, kt_error *err)
{
    const char *name;
    json_t *v;
    char text[RENDER_VALUE_MAX];
    int first = 1;
    json_object_foreach((json_t *)config, name, v)
    {
        if (!is_identifier(name))
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "parameter '%.80s' is not a C identifier; use the json format",
                                name);
        if (config_value_text(v, 1, text, sizeof text) < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "the value of parameter %s cannot be written as a macro", name);
        int plain = shell_plain(text) && !strchr(text, '\'');
        if (plain)
            fprintf(f, "%s-D%s=%s", first ? "" : " ", name, text);
        else if (!strchr(text, '\''))
            fprintf(f, "%s'-D%s=%s'", first ? "" : " ", name, text);
        else
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "the value of parameter %s holds a quote; use the header format",
                                name);
        first = 0;
    }
    /* An answer that was not measured says so, so a build can refuse or log it. */
    if (strcmp(best_source(best), "predicted") == 0)
        fprintf(f, "%s-DKTUNE_PREDICTED=1", first ? "" : " ");
    else if (strcmp(best_source(best), "nearest") == 0)
        fprintf(f, "%s-DKTUNE_NEAREST=1", first ? "" : " ");
    fputc('\n', f);
    return 0;
}

static int render_header(FILE *f, const json_t *best, const json_t *config, kt_error *err)
{
    const char *kernel = json_string_value(json_object_get(best, "kernel"));
    const char *device = json_string_value(json_object_get(best, "device"));
    char guard[320], macro[300], text[RENDER_VALUE_MAX];
    char *problem = json_dumps(json_object_get(best, "problem"),
                               JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    macro_name(kernel ? kernel : "config", macro, sizeof macro);
    snprintf(guard, sizeof guard, "%s_H", macro);
    fprintf(f, "/* Generated by ktune (ktune best, GET /v1/best?format=header): kernel ");
    comment_text(f, kernel ? kernel : "?");
    fprintf(f, " on ");
    comment_text(f, device ? device : "?");
    fprintf(f, ", problem ");
    comment_text(f, problem ? problem : "{}");
    free(problem);
    const char *source = best_source(best);
    if (strcmp(source, "measured") == 0 || strcmp(source, "imported") == 0) {
        fprintf(f, ";\n * %s%g ms (job %lld, trial %lld). */\n",
                strcmp(source, "imported") == 0 ? "imported (measured elsewhere): " : "",
                json_number_value(json_object_get(best, "time_ms")),
                (long long)json_integer_value(json_object_get(best, "job_id")),
                (long long)json_integer_value(json_object_get(best, "trial_id")));
    } else {
        char how[512];
        if (config_render_source_text(best, how, sizeof how) < 0)
            snprintf(how, sizeof how, "%s", source);
        fprintf(f, ";\n * NOT MEASURED: ");
        comment_text(f, how);
        fprintf(f, ". */\n");
    }
    fprintf(f, "#ifndef %s\n#define %s\n\n", guard, guard);
    if (strcmp(source, "predicted") == 0)
        fprintf(f, "#define KTUNE_PREDICTED 1\n");
    else if (strcmp(source, "nearest") == 0)
        fprintf(f, "#define KTUNE_NEAREST 1\n");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)config, name, v)
    {
        if (config_value_text(v, 1, text, sizeof text) < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "the value of parameter %.80s cannot be written as a macro", name);
        macro_name(name, macro, sizeof macro);
        fprintf(f, "#define %s %s\n", macro, text);
    }
    fprintf(f, "\n#endif /* %s */\n", guard);
    return 0;
}

char *config_render_best(const json_t *best, const char *format, kt_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = -1;
    const json_t *config = json_object_get(best, "config");
    FILE *f = NULL;
    if (!json_is_object(config)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the reply holds no configuration");
        goto done;
    }
    if (strcmp(format, "json") != 0 && strcmp(format, "flags") != 0 &&
        strcmp(format, "header") != 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "unknown format '%.40s' (json, flags or header)",
                     format);
        goto done;
    }
    f = open_memstream(&text, &len);
    if (!f) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory rendering the configuration");
        goto done;
    }
    if (strcmp(format, "json") == 0) {
        rc = json_dumpf(config, f, JSON_COMPACT) == 0 ? 0 : -1;
        fputc('\n', f);
    } else if (strcmp(format, "flags") == 0) {
        rc = render_flags(f, best, config, err);
    } else {
        rc = render_header(f, best, config, err);
    }
done:
    if (f)
        fclose(f);
    if (rc < 0) {
        free(text);
        text = NULL;
    }
    return text;
}
