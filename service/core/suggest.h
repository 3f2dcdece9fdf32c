/* core/suggest — "did you mean": the names closest to a mistyped one (issue 31), one rule for
 * kernels, devices, strategies, strategy options, ktuned's and ktune's flags and ktune's commands.
 *
 * Close means: the word is a prefix of a candidate ("--budget" of "--budget-evaluations" and
 * "--budget-seconds": every such candidate, up to KT_SUGGEST_MAX), else the smallest edit distance
 * (insertions, deletions, substitutions and swaps of neighbours, ignoring case) of at most
 * max(1, length / 3) ("gem" -> "gemm"; ties: the first candidate). Names longer than
 * KT_SUGGEST_LEN are never suggested nor matched.
 *
 * Call order: kt_suggest_init -> kt_suggest_add per candidate (or kt_suggest_add_list for a text
 * list "a, b, c") -> kt_suggest_text (the suggestion as "'a'" or "'a' or 'b'") or
 * kt_suggest_hint (prefixes "did you mean ...? " to an error's hint). Plain values: nothing to
 * free; the word is borrowed until the last call. */
#ifndef KT_CORE_SUGGEST_H
#define KT_CORE_SUGGEST_H

#include <stddef.h>

#include "core/error.h"

#define KT_SUGGEST_LEN 96
#define KT_SUGGEST_MAX 3

typedef struct kt_suggest {
    const char *word;
    int prefixed; /* candidates the word is a prefix of (kept first) */
    int n;        /* names kept */
    int best;     /* the kept names' edit distance (prefixed: -1) */
    char names[KT_SUGGEST_MAX][KT_SUGGEST_LEN + 1];
} kt_suggest;

void kt_suggest_init(kt_suggest *s, const char *word);
/* Considers candidate (its first len characters; len (size_t)-1: the whole string). */
void kt_suggest_add(kt_suggest *s, const char *candidate, size_t len);
/* Considers every name of a text list separated by commas and spaces ("random, anneal"). */
void kt_suggest_add_list(kt_suggest *s, const char *list);
/* The suggestion into buf ("'gemm'", "'--budget-evaluations' or '--budget-seconds'"): its length,
 * or 0 when no candidate is close (buf ""). */
size_t kt_suggest_text(const kt_suggest *s, char *buf, size_t cap);
/* When a candidate is close: the hint of err becomes "did you mean X? <hint as it was>". */
void kt_suggest_hint(const kt_suggest *s, kt_error *err);

/* The edit distance of a and b (optimal string alignment, ignoring ASCII case); -1 when either is
 * longer than KT_SUGGEST_LEN. */
int kt_edit_distance(const char *a, size_t la, const char *b, size_t lb);

#endif
