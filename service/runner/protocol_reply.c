/* Replies of ktune-runner: the error and status reply shapes, writing one reply per line, and
 * JSON values that must always encode (non-finite numbers, compiler output that is not UTF-8). */
#include "runner/runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

json_t *runner_error_reply(const kt_error *err)
{
    return json_pack("{s:b, s:s, s:s}", "ok", 0, "error", err->message, "code",
                     kt_error_code_name(err->code));
}

json_t *runner_status_reply(const char *status, double compile_ms)
{
    return json_pack("{s:b, s:s, s:f, s:i, s:f, s:f, s:f, s:{}}", "ok", 1, "status", status,
                     "time_ms", 0.0, "repeats", 0, "noise_cv", 0.0, "compile_ms", compile_ms,
                     "measure_ms", 0.0, "extras");
}

int runner_write_reply(FILE *out, json_t *id, json_t *reply)
{
    int rc = -1;
    char *text = NULL;
    json_t *line = json_object();
    if (!line)
        goto out;
    json_object_set(line, "id", id);
    if (reply)
        json_object_update(line, reply);
    else
        json_object_set_new(line, "ok", json_false());
    text = json_dumps(line, JSON_COMPACT);
    if (!text) {
        /* only when out of memory: a reply that needs no allocation */
        fputs("{\"ok\":false,\"error\":\"the reply could not be encoded\"}\n", out);
    } else {
        fputs(text, out);
        fputc('\n', out);
    }
    rc = fflush(out) == 0 && !ferror(out) ? 0 : -1;
out:
    free(text);
    json_decref(line);
    return rc;
}

json_t *runner_json_real(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c >= 0x01 && c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    unsigned cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

json_t *runner_json_text(const char *s, size_t n)
{
    char *buf = malloc(n + 1);
    if (!buf)
        return json_string("");
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t len = utf8_seq(u + i, n - i);
        if (len == 0) {
            buf[i++] = '?';
        } else {
            memcpy(buf + i, s + i, len);
            i += len;
        }
    }
    buf[n] = '\0';
    json_t *j = json_stringn(buf, n);
    free(buf);
    return j ? j : json_string("");
}
