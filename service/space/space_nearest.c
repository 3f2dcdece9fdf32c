/* space_nearest — space_nearest_valid: per-(parameter, value) costs tabulated once, then each
 * independent group's valid rows scanned for the lowest sum of its columns' costs; the id is the
 * mixed-radix sum of the chosen positions. */
#include "space/space_internal.h"

#include <math.h>
#include <stdlib.h>

/* Position in g of its cheapest row (scanning every `stride`-th row, and the row of per-column
 * minima when valid). */
static uint64_t group_best(const space_group *g, const double *const *tab, const space *sp,
                           uint64_t stride)
{
    uint64_t best = 0;
    double best_cost = INFINITY;
    for (uint64_t r = 0; r < g->n; r += stride) {
        const uint16_t *row = g->rows + r * (uint64_t)g->k;
        double c = 0;
        for (int k = 0; k < g->k; k++)
            c += tab[g->params[k]][row[k]];
        if (c < best_cost) {
            best_cost = c;
            best = r;
        }
    }
    if (stride > 1) {
        uint16_t row[SPACE_HARD_MAX_PARAMS];
        double c = 0;
        for (int k = 0; k < g->k; k++) {
            int p = g->params[k], arg = 0;
            for (int v = 1; v < sp->params[p].n; v++)
                arg = tab[p][v] < tab[p][arg] ? v : arg;
            row[k] = (uint16_t)arg;
            c += tab[p][arg];
        }
        int64_t pos = space_group_find(g, row);
        if (pos >= 0 && c < best_cost)
            best = (uint64_t)pos;
    }
    return best;
}

int space_nearest_valid(const space *sp, double (*cost)(void *arg, int p, int v), void *arg,
                        uint64_t max_rows, config_id *out)
{
    double *tab[SPACE_HARD_MAX_PARAMS];
    double *flat = NULL;
    size_t total = 0;
    int rc = -1;
    if (!sp || !cost || !out || sp->count == 0)
        goto done;
    for (int p = 0; p < sp->n_params; p++)
        total += (size_t)sp->params[p].n;
    flat = malloc(total * sizeof *flat);
    if (!flat)
        goto done;
    total = 0;
    for (int p = 0; p < sp->n_params; p++) {
        tab[p] = flat + total;
        for (int v = 0; v < sp->params[p].n; v++)
            tab[p][v] = cost(arg, p, v);
        total += (size_t)sp->params[p].n;
    }
    config_id id = 0;
    rc = 1;
    for (int g = 0; g < sp->n_groups; g++) {
        const space_group *grp = &sp->groups[g];
        uint64_t stride = max_rows > 0 && grp->n > max_rows ? grp->n / max_rows : 1;
        if (stride > 1)
            rc = 0;
        id += group_best(grp, (const double *const *)tab, sp, stride) * grp->stride;
    }
    *out = id;
done:
    free(flat);
    return rc;
}
