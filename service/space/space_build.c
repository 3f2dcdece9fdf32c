/* space_build — splits the parameters into independent groups (connected by shared restrictions)
 * and enumerates each group's valid sub-configurations by backtracking, checking every restriction
 * as soon as its last parameter is bound. Rows end up sorted in raw-grid order for binary-search
 * encoding. */
#include "space/space_internal.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

#define SPACE_FIRST_ROWS 1024

static int uf_find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* "a, b, c" (cut short) for messages about group g. */
static void group_names(const space *sp, const space_group *g, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < g->k && used + 8 < cap; c++) {
        int n =
            snprintf(buf + used, cap - used, "%s%s", c ? ", " : "", sp->params[g->params[c]].name);
        if (n < 0 || (size_t)n >= cap - used) {
            snprintf(buf + (cap > 4 ? cap - 4 : 0), cap > 4 ? 4 : cap, "...");
            return;
        }
        used += (size_t)n;
    }
}

static double group_raw(const space *sp, const space_group *g)
{
    double raw = 1.0;
    for (int c = 0; c < g->k; c++)
        raw *= sp->params[g->params[c]].n;
    return raw;
}

/* KT_ERR_SPACE_TOO_LARGE: group g <verb> more than limit <what> (with the limit's hint); -1. */
static int group_too_large(const space *sp, const space_group *g, const char *verb,
                           unsigned long long limit, const char *what, const char *hint,
                           kt_error *err)
{
    char names[256];
    group_names(sp, g, names, sizeof names);
    kt_error_set(err, KT_ERR_SPACE_TOO_LARGE,
                 "parameter group (%s) of raw size %.0f %s more than %llu %s", names,
                 group_raw(sp, g), verb, limit, what);
    kt_error_hint(err, "%s", hint);
    return -1;
}

/* Stable LSD radix sort of g's rows by column, last column first: lexicographic (raw-grid) order.
 */
static int sort_rows(const space *sp, space_group *g, kt_error *err)
{
    int rc = -1;
    size_t k = (size_t)g->k, n = (size_t)g->n;
    uint16_t *tmp = malloc((n ? n : 1) * k * sizeof *tmp);
    size_t *counts = malloc(((size_t)SPACE_HARD_MAX_VALUES + 2) * sizeof *counts);
    if (!tmp || !counts) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory sorting a parameter group");
        goto out;
    }
    for (size_t c = k; c-- > 0;) {
        size_t nv = (size_t)sp->params[g->params[c]].n;
        memset(counts, 0, (nv + 1) * sizeof *counts);
        for (size_t i = 0; i < n; i++)
            counts[g->rows[i * k + c] + 1]++;
        for (size_t v = 1; v <= nv; v++)
            counts[v] += counts[v - 1];
        for (size_t i = 0; i < n; i++) {
            size_t dst = counts[g->rows[i * k + c]]++;
            memcpy(tmp + dst * k, g->rows + i * k, k * sizeof *tmp);
        }
        uint16_t *swap = g->rows;
        g->rows = tmp;
        tmp = swap;
    }
    rc = 0;
out:
    free(tmp);
    free(counts);
    return rc;
}

/* Appends row to g, growing the array; enforces max_group_valid. */
static int append_row(const space *sp, space_group *g, uint64_t *cap, const uint16_t *row,
                      kt_error *err)
{
    size_t k = (size_t)g->k;
    if (g->n >= sp->lim.max_group_valid) {
        return group_too_large(sp, g, "has", sp->lim.max_group_valid, "valid sub-configurations",
                               "raise max_group_valid, or add restrictions", err);
    }
    if (g->n == *cap) {
        size_t row_bytes = (k ? k : 1) * sizeof *g->rows, ncap = (size_t)*cap;
        if (g->n + 1 > SIZE_MAX / row_bytes)
            return kt_error_set(err, KT_ERR_SPACE_TOO_LARGE, "parameter group too large to store");
        /* 1024 rows first: most groups hold thousands, and each early realloc moves them all. */
        size_t need = g->n + 1 < SPACE_FIRST_ROWS ? SPACE_FIRST_ROWS : (size_t)g->n + 1;
        if (kt_array_grow((void **)&g->rows, &ncap, need, row_bytes, SIZE_MAX) != 0)
            return kt_error_set(err, KT_ERR_NO_MEMORY,
                                "out of memory enumerating a parameter group");
        *cap = ncap;
    }
    memcpy(g->rows + g->n * k, row, k * sizeof *row);
    g->n++;
    return 0;
}

/* Enumeration order: greedily the column that completes the most restrictions, then the one most
 * connected to bound columns, then the smallest domain, so that pruning starts as early as
 * possible. */
static void choose_order(const space *sp, const space_group *g, const int *rids, int nr, int *order,
                         int *check_start, int *checks)
{
    int k = g->k, n_checks = 0;
    unsigned char bound[SPACE_HARD_MAX_PARAMS] = {0};
    for (int d = 0; d < k; d++) {
        int best = -1, best_complete = -1, best_touch = -1, best_n = 0;
        for (int c = 0; c < k; c++) {
            if (bound[c])
                continue;
            int complete = 0, touch = 0;
            for (int i = 0; i < nr; i++) {
                const expr *e = sp->restr[rids[i]];
                const int *vars = expr_vars(e);
                int uses = 0, unbound_others = 0, bound_others = 0;
                for (int j = 0; j < expr_num_vars(e); j++) {
                    int col = sp->params[vars[j]].col;
                    if (col == c)
                        uses = 1;
                    else if (bound[col])
                        bound_others++;
                    else
                        unbound_others++;
                }
                if (!uses)
                    continue;
                complete += unbound_others == 0;
                touch += bound_others > 0;
            }
            int nv = sp->params[g->params[c]].n;
            if (best < 0 || complete > best_complete ||
                (complete == best_complete &&
                 (touch > best_touch || (touch == best_touch && nv < best_n)))) {
                best = c;
                best_complete = complete;
                best_touch = touch;
                best_n = nv;
            }
        }
        order[d] = best;
        bound[best] = 1;
        /* Restrictions whose last parameter is bound at depth d are checked there. */
        check_start[d] = n_checks;
        for (int i = 0; i < nr; i++) {
            const expr *e = sp->restr[rids[i]];
            const int *vars = expr_vars(e);
            int all = 1, uses = 0;
            for (int j = 0; j < expr_num_vars(e); j++) {
                int col = sp->params[vars[j]].col;
                all &= bound[col];
                uses |= col == best;
            }
            if (all && uses)
                checks[n_checks++] = rids[i];
        }
    }
    check_start[k] = n_checks;
}

static int enumerate_group(space *sp, space_group *g, const int *rids, int nr, kt_error *err)
{
    int rc = -1, k = g->k;
    uint64_t cap = 0, nodes = 0;
    int order[SPACE_HARD_MAX_PARAMS], cur[SPACE_HARD_MAX_PARAMS],
        check_start[SPACE_HARD_MAX_PARAMS + 1];
    uint16_t row[SPACE_HARD_MAX_PARAMS];
    int *checks = malloc(((size_t)nr + 1) * sizeof *checks);
    expr_value *slots = calloc((size_t)sp->n_params, sizeof *slots);
    if (!checks || !slots) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    choose_order(sp, g, rids, nr, order, check_start, checks);
    int d = 0;
    cur[0] = -1;
    while (d >= 0) {
        int p = g->params[order[d]];
        const space_param *par = &sp->params[p];
        if (++cur[d] >= par->n) {
            d--;
            continue;
        }
        if (++nodes > sp->lim.max_group_nodes) {
            group_too_large(sp, g, "needs", sp->lim.max_group_nodes, "enumeration steps",
                            "raise max_group_nodes, or write restrictions on fewer parameters so "
                            "that pruning starts earlier",
                            err);
            goto out;
        }
        slots[p] = par->vals[cur[d]];
        int ok = 1;
        /* An evaluation error (division by zero, ...) makes the configuration invalid. */
        for (int i = check_start[d]; ok && i < check_start[d + 1]; i++)
            ok = expr_test(sp->restr[checks[i]], slots) == 1;
        if (!ok)
            continue;
        if (d + 1 < k) {
            cur[++d] = -1;
            continue;
        }
        for (int dd = 0; dd < k; dd++)
            row[order[dd]] = (uint16_t)cur[dd];
        if (append_row(sp, g, &cap, row, err) < 0)
            goto out;
    }
    int identity = 1;
    for (int i = 0; i < k; i++)
        identity &= order[i] == i;
    if (!identity && sort_rows(sp, g, err) < 0)
        goto out;
    rc = 0;
out:
    free(checks);
    free(slots);
    return rc;
}

/* Sets count and strides; KT_ERR_SPACE_TOO_LARGE when the product exceeds SPACE_MAX_COUNT. */
static int finish(space *sp, kt_error *err)
{
    uint64_t count = 1;
    int empty = sp->false_restriction >= 0;
    for (int g = 0; g < sp->n_groups; g++)
        empty |= sp->groups[g].n == 0;
    for (int g = 0; !empty && g < sp->n_groups; g++) {
        /* Ids are stored as bigint and written as JSON integers (signed 64-bit): a count above
         * that once became a negative space_size and negative config ids. */
        if (__builtin_mul_overflow(count, sp->groups[g].n, &count) || count > SPACE_MAX_COUNT) {
            kt_error_set(err, KT_ERR_SPACE_TOO_LARGE,
                         "the space has more than 2^63 - 1 valid configurations");
            kt_error_hint(err, "a configuration id must fit a signed 64-bit integer: smaller "
                               "problem sizes, fewer parameter values or more restrictions");
            return -1;
        }
    }
    sp->count = empty ? 0 : count;
    uint64_t stride = 1;
    for (int g = sp->n_groups; g-- > 0;) {
        sp->groups[g].stride = stride;
        stride *= sp->groups[g].n; /* wraps only when empty, and then no id is ever decoded */
    }
    return 0;
}

int space_build_groups(space *sp, kt_error *err)
{
    int rc = -1, P = sp->n_params;
    int *parent = malloc((size_t)P * sizeof *parent);
    int *gid = malloc((size_t)P * sizeof *gid);
    int *rids = malloc(((size_t)sp->n_restr + 1) * sizeof *rids);
    if (!parent || !gid || !rids) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    for (int p = 0; p < P; p++) {
        parent[p] = p;
        gid[p] = -1;
    }
    for (int r = 0; r < sp->n_restr; r++) {
        const int *vars = expr_vars(sp->restr[r]);
        int nv = expr_num_vars(sp->restr[r]);
        if (nv == 0) {
            /* Checked once: a false (or failing) parameter-free restriction empties the space. */
            if (sp->false_restriction < 0 && expr_test(sp->restr[r], NULL) != 1)
                sp->false_restriction = r;
            continue;
        }
        for (int j = 1; j < nv; j++)
            parent[uf_find(parent, vars[j])] = uf_find(parent, vars[0]);
    }
    /* Groups numbered by their first parameter, parameters ascending within a group. */
    for (int p = 0; p < P; p++) {
        int root = uf_find(parent, p);
        if (gid[root] < 0)
            gid[root] = sp->n_groups++;
    }
    sp->groups = calloc((size_t)sp->n_groups, sizeof *sp->groups);
    if (!sp->groups) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    for (int p = 0; p < P; p++)
        sp->groups[gid[uf_find(parent, p)]].k++;
    for (int g = 0; g < sp->n_groups; g++) {
        if (!(sp->groups[g].params = malloc((size_t)sp->groups[g].k * sizeof(int)))) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
            goto out;
        }
        sp->groups[g].k = 0;
    }
    for (int p = 0; p < P; p++) {
        space_group *g = &sp->groups[gid[uf_find(parent, p)]];
        sp->params[p].group = (int)(g - sp->groups);
        sp->params[p].col = g->k;
        g->params[g->k++] = p;
    }
    for (int g = 0; g < sp->n_groups && sp->false_restriction < 0; g++) {
        int nr = 0;
        for (int r = 0; r < sp->n_restr; r++)
            if (expr_num_vars(sp->restr[r]) > 0 &&
                sp->params[expr_vars(sp->restr[r])[0]].group == g)
                rids[nr++] = r;
        if (enumerate_group(sp, &sp->groups[g], rids, nr, err) < 0)
            goto out;
    }
    rc = finish(sp, err);
out:
    free(parent);
    free(gid);
    free(rids);
    return rc;
}

int space_build_explicit(space *sp, uint16_t *rows, uint64_t n, kt_error *err)
{
    int P = sp->n_params;
    sp->groups = calloc(1, sizeof *sp->groups);
    if (!sp->groups) {
        free(rows);
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    }
    sp->n_groups = 1;
    space_group *g = &sp->groups[0];
    g->rows = rows;
    g->n = n;
    g->k = P;
    if (!(g->params = malloc((size_t)P * sizeof *g->params)))
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    for (int p = 0; p < P; p++) {
        g->params[p] = p;
        sp->params[p].group = 0;
        sp->params[p].col = p;
    }
    if (sort_rows(sp, g, err) < 0)
        return -1;
    /* Duplicates are adjacent once sorted. */
    uint64_t kept = 0;
    size_t row_bytes = (size_t)P * sizeof *rows;
    for (uint64_t i = 0; i < g->n; i++) {
        if (kept > 0 && memcmp(g->rows + (kept - 1) * P, g->rows + i * P, row_bytes) == 0)
            continue;
        if (kept != i)
            memmove(g->rows + kept * P, g->rows + i * P, row_bytes);
        kept++;
    }
    g->n = kept;
    return finish(sp, err);
}
