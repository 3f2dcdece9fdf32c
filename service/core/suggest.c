/* core/suggest — "did you mean". See suggest.h. */
#include "core/suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int lower(char c)
{
    return tolower((unsigned char)c);
}

int kt_edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    /* Three rows of the dynamic programme: two rows back (swaps), the last one, this one. */
    int rows[3][KT_SUGGEST_LEN + 1];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    if (la > KT_SUGGEST_LEN || lb > KT_SUGGEST_LEN)
        return -1;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = lower(a[i - 1]) != lower(b[j - 1]);
            int d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (prev[j - 1] + cost < d)
                d = prev[j - 1] + cost;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]) && prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        int *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

void kt_suggest_init(kt_suggest *s, const char *word)
{
    memset(s, 0, sizeof *s);
    s->word = word ? word : "";
    s->best = -2; /* nothing kept */
}

static void keep(kt_suggest *s, const char *c, size_t len)
{
    if (s->n == KT_SUGGEST_MAX)
        return;
    memcpy(s->names[s->n], c, len);
    s->names[s->n][len] = '\0';
    s->n++;
}

void kt_suggest_add(kt_suggest *s, const char *candidate, size_t len)
{
    size_t lw = strlen(s->word);
    if (!candidate)
        return;
    if (len == (size_t)-1)
        len = strlen(candidate);
    if (len == 0 || len > KT_SUGGEST_LEN || lw == 0 || lw > KT_SUGGEST_LEN)
        return;
    if (len == lw && strncmp(candidate, s->word, len) == 0)
        return; /* the word itself: nothing to suggest */
    if (lw >= 2 && lw < len && strncmp(candidate, s->word, lw) == 0) {
        if (s->best != -1) { /* a prefix match outranks any distance */
            s->n = 0;
            s->best = -1;
        }
        keep(s, candidate, len);
        return;
    }
    if (s->best == -1)
        return;
    int d = kt_edit_distance(s->word, lw, candidate, len);
    int limit = (int)(lw / 3) > 1 ? (int)(lw / 3) : 1;
    if (d < 0 || d > limit || (s->best >= 0 && d >= s->best))
        return;
    s->n = 0;
    s->best = d;
    keep(s, candidate, len);
}

void kt_suggest_add_list(kt_suggest *s, const char *list)
{
    const char *p = list;
    while (p && *p) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t len = strcspn(p, ", ");
        if (len)
            kt_suggest_add(s, p, len);
        p += len;
    }
}

size_t kt_suggest_text(const kt_suggest *s, char *buf, size_t cap)
{
    size_t used = 0;
    if (cap)
        buf[0] = '\0';
    for (int i = 0; i < s->n && used < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s'%s'",
                         i == 0          ? ""
                         : i == s->n - 1 ? " or "
                                         : ", ",
                         s->names[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    return used < cap ? used : (cap ? cap - 1 : 0);
}

void kt_suggest_hint(const kt_suggest *s, kt_error *err)
{
    char text[KT_SUGGEST_MAX * (KT_SUGGEST_LEN + 8)];
    if (!err || kt_suggest_text(s, text, sizeof text) == 0)
        return;
    char old[KT_ERROR_HINT_MAX];
    snprintf(old, sizeof old, "%s", err->hint);
    kt_error_hint(err, "did you mean %s?%s%s", text, old[0] ? " " : "", old);
}
