/* core/options — command-line options declared in a table and parsed by one parser (git's
 * parse-options.h is the model). A table lists each option once: its name, its kind (flag, int,
 * double, seed, string, a list of values, or a callback), its bounds, the offset of the field it
 * sets in the caller's options struct, and its line of help; kt_opt_parse reads argv against it
 * and kt_opt_usage prints the help from it, so the two cannot drift apart.
 *
 * Call order: fill the struct's defaults -> kt_opt_parse -> the caller's own cross-option checks
 * (required options, exclusions). Values of kind STRING, STRINGS and PATHS point into argv (the
 * struct borrows them; nothing to free). An option with a value is read as "--name value" or
 * "--name=value"; a flag only as "--name". */
#ifndef KT_CORE_OPTIONS_H
#define KT_CORE_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
    KT_OPT_END = 0,  /* ends a table */
    KT_OPT_TEXT,     /* no option: help is a line of the help as it is */
    KT_OPT_FLAG,     /* no value: sets the int field to 1 (KT_OPT_IGNORED: sets nothing) */
    KT_OPT_INT,      /* an int in [lo, hi] */
    KT_OPT_DOUBLE,   /* a finite double in [lo, hi] (KT_OPT_OPEN_LO / _HI: that bound excluded) */
    KT_OPT_SEED,     /* a uint64_t: digits only, up to 2^64 - 1 */
    KT_OPT_STRING,   /* a const char * into argv; max_len: longest accepted (0: any) */
    KT_OPT_STRINGS,  /* one value per use appended to const char *[hi], count at count_offset */
    KT_OPT_PATHS,    /* every following argument not starting with "--" appended, as STRINGS;
                      * at least lo per use; each shorter than max_len */
    KT_OPT_CALLBACK, /* cb(opts, option, value, msg, cap) parses the value */
    KT_OPT_ARG,      /* name NULL: a positional argument (one not starting with '-'; "-" too with
                      * KT_OPT_DASH), set as STRING at offset once; with cb set, cb takes every
                      * one instead */
} kt_opt_kind;

#define KT_OPT_NONEMPTY 1  /* a value, of any kind but FLAG, may not be "" */
#define KT_OPT_OPEN_LO  2  /* DOUBLE: lo itself refused */
#define KT_OPT_OPEN_HI  4  /* DOUBLE: hi itself refused */
#define KT_OPT_IGNORED  8  /* FLAG: accepted, sets nothing (a mode's own selector) */
#define KT_OPT_DASH     16 /* ARG: "-" (standard input) is an argument too */
#define KT_OPT_OPTIONAL                                                                            \
    32 /* CALLBACK: the value is optional: "--name" alone calls cb with value                      \
        * NULL, "--name=v" with v; the next argument is never its value */

struct kt_option;
/* A callback parses value for option o (its name, its offsets and bounds are the callback's to
 * use) into opts: 0, or -1 with a message in msg naming the option. */
typedef int (*kt_opt_cb)(void *opts, const struct kt_option *o, const char *value, char *msg,
                         size_t cap);

typedef struct kt_option {
    const char *name; /* "--budget"; NULL with KT_OPT_TEXT */
    kt_opt_kind kind;
    size_t offset;       /* the field in the options struct */
    size_t count_offset; /* STRINGS, PATHS: the int count of the array at offset */
    double lo, hi;       /* INT, DOUBLE: bounds; STRINGS, PATHS: lo per use (PATHS), hi capacity */
    size_t max_len;      /* STRING, PATHS: characters at most (STRING) / fewer than (PATHS) */
    int flags;    /* KT_OPT_NONEMPTY, KT_OPT_OPEN_LO, KT_OPT_OPEN_HI, KT_OPT_IGNORED, KT_OPT_DASH,
                   * KT_OPT_OPTIONAL */
    kt_opt_cb cb; /* CALLBACK */
    const char *arg;  /* the help's first column ("--budget N"); NULL: name */
    const char *help; /* the help text, '\n' before each continuation line; NULL: no line */
    const char *(*help_arg)(void); /* when set, help is a format with one %s this fills */
} kt_option;

typedef struct kt_opt_table {
    const kt_option *options; /* ended by an entry of kind KT_OPT_END */
    /* Unknown arguments: "unknown argument 'X'", plus " (not an option of MODE)" when set. */
    const char *mode;
    const char *usage;  /* printed before the option lines (synopsis, what it does) */
    const char *footer; /* printed after them, or NULL */
    int width;          /* the first column's width [20] */
    /* When set, the whole message of an argument no option takes, a format with one %s (the
     * argument), instead of "unknown argument 'X'" (and mode). */
    const char *unknown;
    /* When set, the message of an option given no value, a format with one %s (the option),
     * instead of "X needs a value". */
    const char *missing;
    /* When set, --help and -h do not end the parse: the arguments after them are read too (their
     * errors returned), then 1. */
    int help_reads_on;
} kt_opt_table;

/* A table row per kind (git's OPT_INTEGER, OPT_STRING, ... are the model), so that a row is a
 * line or two: n the name, off the field's offset, fl the KT_OPT_* flags, a the help's first
 * column (NULL: the name), h the help (NULL: no line). KT_OPT_ROW sets every field but help_arg. */
#define KT_OPT_ROW(k, n, off, cnt, lo_, hi_, len, fl, fn, a, h)                                    \
    {                                                                                              \
        .name = (n), .kind = (k), .offset = (off), .count_offset = (cnt), .lo = (lo_),             \
        .hi = (hi_), .max_len = (len), .flags = (fl), .cb = (fn), .arg = (a), .help = (h)          \
    }
#define KT_OPT_ROW_FLAG(n, off, h) KT_OPT_ROW(KT_OPT_FLAG, n, off, 0, 0, 0, 0, 0, NULL, NULL, h)
#define KT_OPT_ROW_INT(n, off, lo, hi, fl, a, h)                                                   \
    KT_OPT_ROW(KT_OPT_INT, n, off, 0, lo, hi, 0, fl, NULL, a, h)
#define KT_OPT_ROW_DOUBLE(n, off, lo, hi, fl, a, h)                                                \
    KT_OPT_ROW(KT_OPT_DOUBLE, n, off, 0, lo, hi, 0, fl, NULL, a, h)
#define KT_OPT_ROW_SEED(n, off, a, h) KT_OPT_ROW(KT_OPT_SEED, n, off, 0, 0, 0, 0, 0, NULL, a, h)
/* len: the longest value accepted (0: any) */
#define KT_OPT_ROW_STRING(n, off, len, fl, a, h)                                                   \
    KT_OPT_ROW(KT_OPT_STRING, n, off, 0, 0, 0, len, fl, NULL, a, h)
/* off, cnt: what the callback fn is given in its option (0 when it uses neither) */
#define KT_OPT_ROW_CALLBACK(n, off, cnt, fl, fn, a, h)                                             \
    KT_OPT_ROW(KT_OPT_CALLBACK, n, off, cnt, 0, 0, 0, fl, fn, a, h)
#define KT_OPT_ROW_PATHS(n, off, cnt, lo, hi, len, a, h)                                           \
    KT_OPT_ROW(KT_OPT_PATHS, n, off, cnt, lo, hi, len, 0, NULL, a, h)

/* Reads argv[1..argc-1] into opts (argv[0] is the command). Returns 0; 1 when --help or -h was
 * given (nothing printed: the caller prints kt_opt_usage, perhaps with more); -1 with a message in
 * msg: "unknown argument 'X'" (KT_OPT_UNKNOWN (-2) with the table's unknown message when the table
 * sets one, so that a caller can print it otherwise), "X needs a value" (or the table's missing
 * message), "X needs a non-empty
 * value", "X: 'v' is not an integer in lo-hi", "X: 'v' is not a number in [lo, hi]", "X: 'v' is not
 * a non-negative integer", "X: at most N characters", "X: at most N values", "X: at most N paths of
 * < L characters", "X needs at least one file or folder", or the callback's. */
#define KT_OPT_UNKNOWN (-2)
int kt_opt_parse(const kt_opt_table *table, int argc, char **argv, void *opts, char *msg,
                 size_t cap);
/* The help: usage, then per option "  ARG  help" (continuation lines indented to the help
 * column), then footer. */
void kt_opt_usage(const kt_opt_table *table, FILE *out);

#endif
