/* core/number — the one strict parser of numbers written as text (command-line flags, environment
 * variables, option values, path parameters). Strict: the whole text is one decimal number — no
 * leading space, no trailing character, no overflow, no NaN or infinity — within [min, max].
 * Pure functions, nothing to free; each returns 0 and writes *out, or -1 and leaves *out alone
 * (the caller words the error: it knows the flag or field's name). */
#ifndef KT_CORE_NUMBER_H
#define KT_CORE_NUMBER_H

/* A decimal integer (an optional '-') in [min, max]. */
int kt_parse_ll(const char *s, long long min, long long max, long long *out);
/* The same for an int. */
int kt_parse_int(const char *s, int min, int max, int *out);
/* A non-negative decimal integer up to 2^64 - 1 (seeds): digits only, no sign. */
int kt_parse_u64(const char *s, unsigned long long *out);
/* A finite number (strtod's forms: "2.5", "1e-3", not "0x1p3") in [min, max]. */
int kt_parse_double(const char *s, double min, double max, double *out);

#endif
