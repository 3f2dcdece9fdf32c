/* search/xgb_anneal — the model optimizer of the xgb strategy, as AutoTVM's
 * SimulatedAnnealingOptimizer (n_iter 500, temp (1, 0) linear, persistent, parallel_size 128,
 * early_stop 50) with its random_walk: min(sa_points, count) walkers, random distinct
 * configurations at the first plan and where the previous plan's walk stopped afterwards, each step
 * one random knob change per walker, accepted with probability exp(min((new - old) / (t + 1e-5),
 * 1)) on the model's scores, the best plan_size unvisited configurations seen kept in a heap.
 *
 * A knob is an independent parameter group of the space (space.h): a move sets one group to a
 * uniformly random other valid sub-configuration, as random_walk sets one knob to a random other
 * value; on the GEMM tiling space the groups are the m, k and n factorisations. A space that is one
 * group of several parameters (Kernel Tuner's explicit replay spaces) would make that a random
 * restart, so there a move changes one parameter to a random other value and keeps it if the
 * result is valid (8 tries), else takes a uniformly random valid one-parameter neighbour, else
 * stays (AutoTVM's random_walk with its later validity filter, without compounding the changes). */
#include "search/xgb_impl.h"

#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PARAM_TRIES = 8 };

void xgb_walk_init(xgb_state *st)
{
    int ng = space_num_groups(st->b.sp);
    st->n_movable = 0;
    for (int g = 0; g < ng; g++)
        st->n_movable += space_group_size(st->b.sp, g) > 1;
    st->move = ng == 1 && st->np > 1 ? XGB_MOVE_PARAM : XGB_MOVE_GROUP;
}

/* random_walk: draw (knob, value) pairs until the value differs from the knob's current one, so a
 * knob with n_g sub-configurations is chosen with probability proportional to (n_g - 1) / n_g. */
static config_id walk_group(xgb_state *st, config_id id)
{
    int ng = space_num_groups(st->b.sp);
    for (;;) {
        int g = (int)kt_rng_below(&st->b.rng, (uint64_t)ng);
        uint64_t pos, to = kt_rng_below(&st->b.rng, space_group_size(st->b.sp, g));
        config_id out;
        if (space_group_position(st->b.sp, id, g, &pos) < 0)
            return id;
        if (to != pos && space_with_group_position(st->b.sp, id, g, to, &out) == 0)
            return out;
    }
}

static config_id walk_param(xgb_state *st, config_id id)
{
    int *idx = st->knobs.idx;
    config_id out;
    if (space_decode(st->b.sp, id, idx) < 0)
        return id;
    for (int k = 0; k < PARAM_TRIES; k++) {
        int p, nv;
        do {
            p = (int)kt_rng_below(&st->b.rng, (uint64_t)st->np);
            nv = space_param_num_values(st->b.sp, p);
        } while (nv < 2);
        if (xgb_param_move(st->b.sp, idx, p, &st->b.rng, &out))
            return out;
    }
    int m = space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_HAMMING, st->b.nb, st->b.nb_cap);
    return m > 0 ? st->b.nb[kt_rng_below(&st->b.rng, (uint64_t)m)] : id;
}

config_id xgb_walk(xgb_state *st, config_id id)
{
    if (st->n_movable == 0)
        return id;
    return st->move == XGB_MOVE_GROUP ? walk_group(st, id) : walk_param(st, id);
}

/* AutoTVM's heap of plan_size entries, initially placeholders scoring -inf: a candidate enters if
 * it scores above the worst entry and is neither visited nor already in. An entry once pushed out
 * scores at most the heap's minimum from then on, so it can never re-enter. 1 if it entered. */
static int heap_offer(xgb_state *st, config_id id, float score)
{
    xgb_cand c = {score, id};
    if (st->n_heap == st->plan_size && !(score > st->heap[0].score))
        return 0;
    if (search_set_has(&st->b.visited, id))
        return 0;
    for (int i = 0; i < st->n_heap; i++)
        if (st->heap[i].id == id)
            return 0;
    if (st->n_heap < st->plan_size)
        xgb_cand_push(st->heap, &st->n_heap, c);
    else
        xgb_cand_replace_worst(st->heap, st->n_heap, c);
    return 1;
}

/* sample_ints: n_points distinct uniform configurations (n_points <= count). */
static void initial_points(xgb_state *st)
{
    for (int i = 0; i < st->n_points; i++) {
        int dup;
        do {
            st->w.pts[i] = space_sample(st->b.sp, &st->b.rng);
            dup = 0;
            for (int j = 0; j < i && !dup; j++)
                dup = st->w.pts[j] == st->w.pts[i];
        } while (dup);
    }
    st->have_points = 1;
}

int xgb_find_maximums(xgb_state *st, BoosterHandle b)
{
    int P = st->n_points;
    st->n_heap = 0;
    st->plan_len = st->plan_pt = 0;
    st->last_sa_iters = st->last_dropped = 0;
    if (!st->have_points)
        initial_points(st);
    if (xgb_predict(st, b, st->w.pts, P, st->w.sc) < 0)
        return -1;
    for (int i = 0; i < P; i++)
        heap_offer(st, st->w.pts[i], st->w.sc[i]);
    double t = 1.0, cool = 1.0 / (st->sa_iter + 1);
    int k = 0, k_last_modify = 0;
    while (k < st->sa_iter && k < k_last_modify + st->sa_early_stop) {
        for (int i = 0; i < P; i++)
            st->w.newp[i] = xgb_walk(st, st->w.pts[i]);
        if (xgb_predict(st, b, st->w.newp, P, st->w.newsc) < 0)
            return -1;
        for (int i = 0; i < P; i++) {
            double d = ((double)st->w.newsc[i] - st->w.sc[i]) / (t + 1e-5);
            if (kt_rng_uniform(&st->b.rng) < exp(d < 1 ? d : 1)) {
                st->w.pts[i] = st->w.newp[i];
                st->w.sc[i] = st->w.newsc[i];
            }
        }
        for (int i = 0; i < P; i++) {
            if (heap_offer(st, st->w.newp[i], st->w.newsc[i]))
                k_last_modify = k;
        }
        k++;
        t -= cool;
    }
    st->last_sa_iters = k;
    /* AutoTVM keeps only the entries scoring >= 0 (meant to drop its -inf placeholders, it drops
     * negative model scores too); the walkers stay where they are for the next plan. */
    qsort(st->heap, (size_t)st->n_heap, sizeof *st->heap, xgb_cand_cmp_desc);
    for (int i = 0; i < st->n_heap; i++) {
        if (st->heap[i].score >= 0)
            st->plan[st->plan_len++] = st->heap[i].id;
        else
            st->last_dropped++;
    }
    return 0;
}
