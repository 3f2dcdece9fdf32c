/* core/device_name — a device name parsed once into a value (ggml's ggml-backend.h is the model):
 * its kind, its ordinal and its name. The names: "cpu", "cuda:N", "hip:N", "opencl:N" (N a decimal
 * 0..KT_DEVICE_ORDINAL_MAX, no sign, no leading zero), "replay:<dataset>", "accel:<name>" (name 1
 * to KT_DEVICE_NAME_MAX printable characters, no space) and "external". Code that asks what a
 * device is switches on its kind; nothing else tests a name's prefix. Which devices exist is the
 * catalog's to say (catalog_find_device): a name that parses may still be unknown there.
 * Pure functions on plain values; nothing to free. */
#ifndef KT_CORE_DEVICE_NAME_H
#define KT_CORE_DEVICE_NAME_H

#include <stddef.h>

#include "core/error.h"

#define KT_DEVICE_TEXT_MAX    256  /* a whole device name, as the API bounds its fields */
#define KT_DEVICE_NAME_MAX    200  /* the <dataset> / <name> part */
#define KT_DEVICE_ORDINAL_MAX 1023 /* cuda:N, hip:N, opencl:N */

typedef enum {
    KT_DEVICE_CPU,      /* "cpu": this machine's processor */
    KT_DEVICE_CUDA,     /* "cuda:N" */
    KT_DEVICE_REPLAY,   /* "replay:<dataset>": recorded times */
    KT_DEVICE_ACCEL,    /* "accel:<name>": an analytical cost model */
    KT_DEVICE_EXTERNAL, /* "external": the caller's own harness measures (ask/tell) */
    KT_DEVICE_HIP,      /* "hip:N": planned, answers not_implemented */
    KT_DEVICE_OPENCL,   /* "opencl:N": planned, answers not_implemented */
} kt_device_kind;

#define KT_DEVICE_KINDS 7

typedef struct kt_device {
    kt_device_kind kind;
    int ordinal;                       /* cuda, hip, opencl: N; otherwise 0 */
    char name[KT_DEVICE_NAME_MAX + 1]; /* replay: the dataset; accel: the name; otherwise "" */
} kt_device;

/* Parses text into *out. 0, or -1 with err KT_ERR_UNKNOWN_DEVICE (400) whose message names the
 * field 'device' and what is wrong (an unknown prefix keeps the message "unknown device '...'");
 * *out is then zeroed. text NULL or "" is an unknown device. */
int kt_device_parse(const char *text, kt_device *out, kt_error *err);

/* The kind of text, or -1 when it does not parse: for a caller that only asks "is this a replay
 * device?" and has no error to report. */
int kt_device_kind_of(const char *text);

/* Writes d's canonical name into buf (cap > 0, NUL-terminated, truncated to fit); returns the
 * length it needed (snprintf's rule). kt_device_format(parse(t)) == t for every t that parses. */
int kt_device_format(const kt_device *d, char *buf, size_t cap);

/* The kind's word: "cpu", "cuda", "replay", "accel", "external", "hip", "opencl". */
const char *kt_device_kind_name(kt_device_kind kind);

/* The kind a word names (the "kind" of a device record), 0; or -1 for another word. */
int kt_device_kind_from_name(const char *word, kt_device_kind *out);

#endif
