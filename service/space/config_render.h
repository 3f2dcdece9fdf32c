/* space/config_render — how a best configuration is written for build systems: JSON, compiler
 * flags (-Dname=value ...) or a C header (include guard, one #define KTUNE_<NAME> value per
 * parameter), and a value as Kernel Tuner's cache keys write it. One renderer for `ktune best
 * --format` (cli/) and `GET /v1/best?format=` (api/best.c, the dashboard's export buttons), so
 * that the two never drift (issue 31). Pure; returned text is malloc'd and freed by the caller. */
#ifndef KT_CONFIG_RENDER_H
#define KT_CONFIG_RENDER_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

/* best: a GET /v1/best reply ({"kernel", "device", "problem", "config", "source", "time_ms",
 * "job_id", ...}). format: "json" (the config object on one line), "flags" (one line of
 * -Dname=value, a value with shell-special characters single-quoted), "header". An answer whose
 * "source" is "predicted" or "nearest" is marked: flags end with -DKTUNE_PREDICTED=1 /
 * -DKTUNE_NEAREST=1, the header's comment says NOT MEASURED and how it was made and the header
 * defines KTUNE_PREDICTED / KTUNE_NEAREST 1; a measured answer (or one without "source") is written
 * as before. Errors (KT_ERR_BAD_REQUEST): an unknown
 * format, no config, a parameter name that is not a C identifier (flags), a value that is not a
 * number, boolean or one-line string. */
char *config_render_best(const json_t *best, const char *format, kt_error *err);

/* One line saying where best came from: "measured 1.5 ms (job 3, trial 9, 7 repeats, noise 1.2%)",
 * "predicted by model 4 (seq2seq, version 2), score -0.31", "nearest tuned problem {...} (distance
 * 0.69, 2.1 ms there)". Returns its length, -1 when it does not fit in cap. */
int config_render_source_text(const json_t *best, char *buf, size_t cap);

/* The text of a scalar parameter value. c_syntax: booleans as 1 / 0 (for macros); else as Python
 * writes them (True / False, for Kernel Tuner cache keys). Reals as Python's repr, integers as
 * %lld, strings as they are. Returns the length, or -1 for another type, a string with a line
 * break, or when it does not fit in cap. */
int config_value_text(const json_t *v, int c_syntax, char *buf, size_t cap);

#endif
