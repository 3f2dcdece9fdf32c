/* cli/cli_hint — the API's hints as ktune commands. See cli_hint.h. */
#include "cli/cli_hint.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "core/strbuf.h"

/* A plain text swap: the REST form and the command's. Longer forms first where one starts
 * another. */
static const struct {
    const char *rest, *cli;
} swaps[] = {
    {"?tune_on_miss=N", "--tune-on-miss N"}, {"?fallback=nearest", "--fallback nearest"},
    {"accept=weak", "--accept weak"},        {"?source=measured", "--source measured"},
    {"GET /v1/jobs/{id}", "ktune job ID"},   {"GET /v1/jobs", "ktune jobs"},
    {"GET /v1/models", "ktune models"},
};

/* A problem value as --problem writes it: numbers, strings, lists of them comma-separated. -1 for
 * anything else (an object: the REST form stays). */
static int value_text(strbuf *b, const json_t *v)
{
    if (json_is_integer(v))
        return strbuf_appendf(b, "%lld", (long long)json_integer_value(v));
    if (json_is_real(v))
        return strbuf_appendf(b, "%.17g", json_real_value(v));
    if (json_is_string(v) && !strpbrk(json_string_value(v), ", ='\"\\$`"))
        return strbuf_appendf(b, "%s", json_string_value(v));
    if (json_is_boolean(v))
        return strbuf_appendf(b, "%s", json_is_true(v) ? "true" : "false");
    if (json_is_array(v) && json_array_size(v) > 0) {
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)v, i, e)
        {
            if ((i && strbuf_appendf(b, ",") < 0) || json_is_array(e) || value_text(b, e) < 0)
                return -1;
        }
        return 0;
    }
    return -1;
}

/* "ktune tune ..." / "ktune train ..." for the body of POST /v1/tune or /v1/models; -1 when the
 * body holds something the command line cannot say here. */
static int command_text(strbuf *b, const char *verb, const json_t *body)
{
    const char *kernel = json_string_value(json_object_get(body, "kernel"));
    const char *device = json_string_value(json_object_get(body, "device"));
    const json_t *problem = json_object_get(body, "problem");
    const char *key;
    const json_t *v;
    if (!kernel || !device || strpbrk(kernel, " '\"$`") || strpbrk(device, " '\"$`"))
        return -1;
    json_object_foreach((json_t *)body, key, v)
    {
        if (strcmp(key, "kernel") != 0 && strcmp(key, "device") != 0 && strcmp(key, "problem") != 0)
            return -1; /* a field with no flag here: keep the REST form */
    }
    if (strbuf_appendf(b, "ktune %s --kernel %s --device %s", verb, kernel, device) < 0)
        return -1;
    if (json_object_size(problem) > 0) {
        int first = 1;
        if (strbuf_appendf(b, " --problem ") < 0)
            return -1;
        json_object_foreach((json_t *)problem, key, v)
        {
            if ((!first && strbuf_appendf(b, ",") < 0) || strbuf_appendf(b, "%s=", key) < 0 ||
                value_text(b, v) < 0)
                return -1;
            first = 0;
        }
    } else if (problem && !json_is_object(problem)) {
        return -1;
    }
    return strbuf_appendf(b, " --wait");
}

int cli_hint_translate(const char *hint, char *out, size_t cap)
{
    static const struct {
        const char *rest, *verb;
    } calls[] = {{"POST /v1/tune ", "tune"}, {"POST /v1/models ", "train"}};
    strbuf b;
    int n = 0;
    strbuf_init(&b, 8192);
    const char *p = hint ? hint : "";
    while (*p) {
        int done = 0;
        for (size_t c = 0; c < sizeof calls / sizeof calls[0] && !done; c++) {
            size_t len = strlen(calls[c].rest);
            if (strncmp(p, calls[c].rest, len) != 0 || p[len] != '{')
                continue;
            json_error_t je;
            json_t *body = json_loads(p + len, JSON_DISABLE_EOF_CHECK, &je);
            size_t mark = b.len;
            if (body && command_text(&b, calls[c].verb, body) == 0) {
                p += len + je.position;
                n++;
                done = 1;
            } else if (b.data) {
                b.len = mark; /* the body could not be said as a command: as it was */
                b.data[mark] = '\0';
            }
            json_decref(body);
        }
        for (size_t s = 0; s < sizeof swaps / sizeof swaps[0] && !done; s++) {
            size_t len = strlen(swaps[s].rest);
            if (strncmp(p, swaps[s].rest, len) == 0) {
                strbuf_appendf(&b, "%s", swaps[s].cli);
                p += len;
                n++;
                done = 1;
            }
        }
        if (!done)
            strbuf_append(&b, p++, 1);
    }
    int ok = b.failed == STRBUF_OK;
    if (cap)
        snprintf(out, cap, "%s", ok ? strbuf_str(&b) : (hint ? hint : ""));
    strbuf_release(&b);
    return ok ? n : 0;
}
