/* space_neighbours — local moves for searchers. A move changes one or two parameters, so only their
 * groups are re-encoded (binary search in the group's rows); the new id is the old one adjusted by
 * (new position - old position) * stride for each changed group. */
#include "space/space_internal.h"

#include <string.h>

typedef struct walk {
    const space *sp;
    config_id id;
    int idx[SPACE_HARD_MAX_PARAMS];
    uint64_t pos[SPACE_HARD_MAX_PARAMS]; /* position of the config in each group's rows */
    config_id *out;
    int n, max;
} walk;

/* Position in group g of the current config with parameter p set to value v (and q to w if q >= 0);
 * -1 if that sub-configuration is not valid. */
static int64_t group_pos(const walk *w, int g, int p, int v, int q, int wv)
{
    const space_group *grp = &w->sp->groups[g];
    uint16_t row[SPACE_HARD_MAX_PARAMS];
    for (int c = 0; c < grp->k; c++) {
        int par = grp->params[c];
        row[c] = (uint16_t)(par == p ? v : par == q ? wv : w->idx[par]);
    }
    return space_group_find(grp, row);
}

/* Emits the config with p = v (and q = wv if q >= 0) if it is valid. Returns 1 when out is full. */
static int try_move(walk *w, int p, int v, int q, int wv)
{
    const space *sp = w->sp;
    int gp = sp->params[p].group, gq = q >= 0 ? sp->params[q].group : -1;
    config_id id = w->id;
    int64_t np = group_pos(w, gp, p, v, q, wv);
    if (np < 0)
        return 0;
    /* Unsigned wrap-around is intended: the final id is in range. */
    id += ((uint64_t)np - w->pos[gp]) * sp->groups[gp].stride;
    if (gq >= 0 && gq != gp) {
        int64_t nq = group_pos(w, gq, p, v, q, wv);
        if (nq < 0)
            return 0;
        id += ((uint64_t)nq - w->pos[gq]) * sp->groups[gq].stride;
    }
    w->out[w->n++] = id;
    return w->n >= w->max;
}

int space_neighbours(const space *sp, config_id id, space_neighbour_kind kind, config_id *out,
                     int max)
{
    walk w;
    if (max <= 0 || space_decode(sp, id, w.idx) < 0)
        return 0;
    w.sp = sp;
    w.id = id;
    w.out = out;
    w.n = 0;
    w.max = max;
    for (int g = 0; g < sp->n_groups; g++)
        w.pos[g] = (id / sp->groups[g].stride) % sp->groups[g].n;
    int P = sp->n_params;
    switch (kind) {
    case SPACE_NEIGHBOURS_ADJACENT:
        for (int p = 0; p < P; p++) {
            if (w.idx[p] > 0 && try_move(&w, p, w.idx[p] - 1, -1, 0))
                return w.n;
            if (w.idx[p] + 1 < sp->params[p].n && try_move(&w, p, w.idx[p] + 1, -1, 0))
                return w.n;
        }
        break;
    case SPACE_NEIGHBOURS_HAMMING:
        for (int p = 0; p < P; p++)
            for (int v = 0; v < sp->params[p].n; v++)
                if (v != w.idx[p] && try_move(&w, p, v, -1, 0))
                    return w.n;
        break;
    case SPACE_NEIGHBOURS_PAIR_SCALE:
        /* p doubles while q halves; zero never moves, so no move returns to id or repeats another.
         */
        for (int p = 0; p < P; p++) {
            if (!sp->params[p].numeric || sp->params[p].twice[w.idx[p]] < 0)
                continue;
            for (int q = 0; q < P; q++) {
                if (q == p || !sp->params[q].numeric || sp->params[q].half[w.idx[q]] < 0)
                    continue;
                if (try_move(&w, p, sp->params[p].twice[w.idx[p]], q, sp->params[q].half[w.idx[q]]))
                    return w.n;
            }
        }
        break;
    }
    return w.n;
}

int space_max_neighbours(const space *sp, space_neighbour_kind kind)
{
    int n = 0, numeric = 0;
    for (int p = 0; p < sp->n_params; p++) {
        n += sp->params[p].n - 1;
        numeric += sp->params[p].numeric;
    }
    switch (kind) {
    case SPACE_NEIGHBOURS_ADJACENT:
        return 2 * sp->n_params;
    case SPACE_NEIGHBOURS_HAMMING:
        return n;
    case SPACE_NEIGHBOURS_PAIR_SCALE:
        return numeric * (numeric - 1);
    }
    return 0;
}
