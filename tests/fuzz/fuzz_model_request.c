/* libFuzzer target: a POST /v1/models body through model_request_parse (fields, kind, algorithm,
 * a predictor's hyper through predictor_hyper_check, a surrogate's through
 * trainer_surrogate_plan_parse). Nothing may crash, leak or misbehave (ASan, UBSan); refusals are
 * fine. And what it accepts must come back: the hyper of an accepted body is stored as jsonb, which
 * writes every number in plain decimal (1e300 as a 301-digit integer); that text, parsed as
 * ktune reads the row (jansson), must parse and pass the same check again, or the stored model
 * could break GET /v1/models or its own training (issue 26). A failure aborts, which libFuzzer
 * reports with the input. */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_request.h"
#include "core/log.h"
#include "core/strbuf.h"
#include "model/predictor.h"
#include "training/trainer_surrogate.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    kt_log_init(KT_LOG_ERROR);
    return 0;
}

/* Appends the number token s[0..len) as PostgreSQL's numeric writes it back (numeric_in, then
 * numeric_out): no exponent, as many fraction digits as the input's scale (fraction digits less
 * the exponent, at least 0). "1e+300" -> 1 and 300 zeros; "1e-05" -> "0.00001"; "2.0" -> "2.0". */
static void numeric_text(const char *s, size_t len, strbuf *out)
{
    char digits[1100];
    size_t nd = 0, i = 0;
    long n_int = 0, frac = 0, exp = 0;
    int neg = 0;
    if (i < len && s[i] == '-')
        neg = 1, i++;
    for (; i < len && isdigit((unsigned char)s[i]) && nd < 400; i++, n_int++)
        digits[nd++] = s[i];
    if (i < len && s[i] == '.')
        for (i++; i < len && isdigit((unsigned char)s[i]) && nd < 400; i++, frac++)
            digits[nd++] = s[i];
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0;
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        for (; i < len && isdigit((unsigned char)s[i]) && exp < 100000; i++)
            exp = exp * 10 + (s[i] - '0');
        exp = eneg ? -exp : exp;
    }
    long point = n_int + exp; /* digits before the decimal point */
    long scale = frac - exp > 0 ? frac - exp : 0;
    if (point > 700 || point < -700) { /* numeric's own range: the insert would fail, not store */
        strbuf_puts(out, "0");
        return;
    }
    char text[4096]; /* sign, <= 700 integer digits, point, <= 1500 fraction digits */
    size_t t = 0;
    if (neg)
        text[t++] = '-';
    size_t int_start = t;
    for (long k = 0; k < point; k++)
        text[t++] = k < (long)nd ? digits[k] : '0';
    while (t > int_start + 1 && text[int_start] == '0') { /* leading zeros go */
        memmove(text + int_start, text + int_start + 1, t - int_start - 1);
        t--;
    }
    if (t == int_start)
        text[t++] = '0';
    if (scale > 0) {
        text[t++] = '.';
        for (long k = 0; k < scale; k++) {
            long at = point + k;
            text[t++] = at >= 0 && at < (long)nd ? digits[at] : '0';
        }
    }
    strbuf_append(out, text, t);
}

/* hyper's compact JSON with every number as jsonb writes it. */
static int stored_text(const json_t *hyper, strbuf *out)
{
    char *dump = json_dumps(hyper, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!dump)
        return -1;
    for (size_t i = 0; dump[i];) {
        if (dump[i] == '"') { /* a string: copied as is, escapes included */
            size_t j = i + 1;
            while (dump[j] && dump[j] != '"')
                j += dump[j] == '\\' && dump[j + 1] ? 2 : 1;
            strbuf_append(out, dump + i, j + 1 - i);
            i = j + (dump[j] ? 1 : 0);
        } else if (dump[i] == '-' || isdigit((unsigned char)dump[i])) {
            size_t j = i + 1;
            while (dump[j] && strchr("0123456789.eE+-", dump[j]))
                j++;
            numeric_text(dump + i, j - i, out);
            i = j;
        } else {
            strbuf_append(out, dump + i, 1);
            i++;
        }
    }
    free(dump);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *body =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!body)
        return 0;
    model_request r;
    kt_error err;
    kt_error_clear(&err);
    if (model_request_parse(body, &r, &err) == 0 && r.hyper) {
        strbuf text;
        strbuf_init(&text, 1 << 20);
        if (stored_text(r.hyper, &text) < 0)
            abort();
        json_t *back = json_loads(strbuf_str(&text), 0, &je);
        if (!back) {
            fprintf(stderr, "accepted hyper does not read back from jsonb: %s (%s)\n",
                    strbuf_str(&text), je.text);
            abort();
        }
        kt_error again;
        kt_error_clear(&again);
        trainer_surrogate_plan plan;
        int ok = r.surrogate ? trainer_surrogate_plan_parse(back, &plan, &again)
                             : predictor_hyper_check(r.algorithm, back, &again);
        if (ok < 0) {
            fprintf(stderr, "accepted hyper is refused as stored (%s): %s\n", strbuf_str(&text),
                    again.message);
            abort();
        }
        json_decref(back);
        strbuf_release(&text);
    }
    json_decref(body);
    return 0;
}
