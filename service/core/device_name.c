/* core/device_name — see device_name.h. One table of kinds: its word and what follows the ':'. */
#include "core/device_name.h"

#include <stdio.h>
#include <string.h>

#define TEXT_(x) #x
#define TEXT(x)  TEXT_(x)

typedef enum { TAIL_NONE, TAIL_ORDINAL, TAIL_NAME } tail_form;

typedef struct {
    const char *word;
    tail_form tail;
} kind_row;

/* Indexed by kt_device_kind. */
static const kind_row kinds[KT_DEVICE_KINDS] = {
    [KT_DEVICE_CPU] = {"cpu", TAIL_NONE},           [KT_DEVICE_CUDA] = {"cuda", TAIL_ORDINAL},
    [KT_DEVICE_REPLAY] = {"replay", TAIL_NAME},     [KT_DEVICE_ACCEL] = {"accel", TAIL_NAME},
    [KT_DEVICE_EXTERNAL] = {"external", TAIL_NONE}, [KT_DEVICE_HIP] = {"hip", TAIL_ORDINAL},
    [KT_DEVICE_OPENCL] = {"opencl", TAIL_ORDINAL},
};

const char *kt_device_kind_name(kt_device_kind kind)
{
    return (unsigned)kind < KT_DEVICE_KINDS ? kinds[kind].word : "unknown";
}

int kt_device_kind_from_name(const char *word, kt_device_kind *out)
{
    for (int i = 0; word && i < KT_DEVICE_KINDS; i++) {
        if (strcmp(kinds[i].word, word) == 0) {
            *out = (kt_device_kind)i;
            return 0;
        }
    }
    return -1;
}

/* Digits only, no leading zero, at most KT_DEVICE_ORDINAL_MAX: "cuda:01" is not "cuda:1". */
static int parse_ordinal(const char *s, int *out)
{
    long v = 0;
    size_t n = strlen(s);
    if (n < 1 || n > 4 || (n > 1 && s[0] == '0'))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > KT_DEVICE_ORDINAL_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

/* 1 to KT_DEVICE_NAME_MAX printable ASCII characters other than space. */
static int check_name(const char *s, const char **why)
{
    size_t n = strlen(s);
    if (n < 1 || n > KT_DEVICE_NAME_MAX) {
        *why = "the name after ':' must be 1 to " TEXT(KT_DEVICE_NAME_MAX) " characters";
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch <= 0x20 || ch > 0x7e) {
            *why = "the name after ':' has a space or a character that is not printable ASCII";
            return -1;
        }
    }
    return 0;
}

int kt_device_parse(const char *text, kt_device *out, kt_error *err)
{
    const char *why = NULL;
    size_t len = 0;
    while (text && text[len] && len <= KT_DEVICE_TEXT_MAX)
        len++;
    memset(out, 0, sizeof *out);
    if (len > KT_DEVICE_TEXT_MAX)
        return kt_error_set(err, KT_ERR_UNKNOWN_DEVICE,
                            "field 'device' is longer than %d characters", KT_DEVICE_TEXT_MAX);
    const char *colon = text ? strchr(text, ':') : NULL;
    size_t word_len = colon ? (size_t)(colon - text) : len;
    for (int i = 0; text && i < KT_DEVICE_KINDS; i++) {
        const kind_row *k = &kinds[i];
        if (strlen(k->word) != word_len || strncmp(k->word, text, word_len) != 0)
            continue;
        if (k->tail == TAIL_NONE && colon) {
            why = i == KT_DEVICE_CPU ? "the machine's processor is the device named cpu"
                                     : "this device takes nothing after its name";
            break;
        }
        if (k->tail != TAIL_NONE && !colon) {
            why = k->tail == TAIL_ORDINAL ? "a number follows ':' (e.g. \"cuda:0\")"
                                          : "a name follows ':' (e.g. \"replay:<dataset>\")";
            break;
        }
        out->kind = (kt_device_kind)i;
        if (k->tail == TAIL_ORDINAL && parse_ordinal(colon + 1, &out->ordinal) < 0) {
            why = "the number after ':' must be a decimal 0 to " TEXT(
                KT_DEVICE_ORDINAL_MAX) " without sign or leading zero";
            break;
        }
        if (k->tail == TAIL_NAME) {
            if (check_name(colon + 1, &why) < 0)
                break;
            memcpy(out->name, colon + 1, strlen(colon + 1) + 1);
        }
        return 0;
    }
    memset(out, 0, sizeof *out);
    if (why)
        return kt_error_set(err, KT_ERR_UNKNOWN_DEVICE,
                            "field 'device': '%.200s' is not a device "
                            "name: %s",
                            text, why);
    return kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "unknown device '%.200s'", text ? text : "");
}

int kt_device_kind_of(const char *text)
{
    kt_device d;
    return kt_device_parse(text, &d, NULL) < 0 ? -1 : (int)d.kind;
}

int kt_device_format(const kt_device *d, char *buf, size_t cap)
{
    const char *word = kt_device_kind_name(d->kind);
    tail_form tail = (unsigned)d->kind < KT_DEVICE_KINDS ? kinds[d->kind].tail : TAIL_NONE;
    if (tail == TAIL_ORDINAL)
        return snprintf(buf, cap, "%s:%d", word, d->ordinal);
    if (tail == TAIL_NAME)
        return snprintf(buf, cap, "%s:%s", word, d->name);
    return snprintf(buf, cap, "%s", word);
}
