/* search/greedy_ils — iterated local search. First improvement: the unvisited neighbours of the
 * current configuration are proposed one by one (ADJACENT in random order, then HAMMING; PAIR_SCALE
 * only when both are empty), and the first told result faster than the current one becomes the new
 * current. When the neighbourhood is used up (a local optimum), it perturbs: `perturbation` random
 * HAMMING moves from the best configuration so far (or, with probability `restart_probability`, a
 * random configuration), and the local search continues from there once its result is told.
 * Option `start`: "random" (the default) is the first random proposal, drawn exactly as before the
 * option existed; any other start is the first proposal, and the local search begins there once its
 * result is told. */
#include "search/search_set.h"

#include <math.h>
#include <stdlib.h>

enum { OPT_PERTURBATION, OPT_RESTART_PROBABILITY, OPT_START, N_OPTS };

static const searcher_option ils_options[N_OPTS] = {
    {"perturbation", SEARCHER_OPT_INTEGER, "3", 1, 64, NULL,
     "random hamming moves from the best configuration when the local search is stuck"},
    {"restart_probability", SEARCHER_OPT_NUMBER, "0.05", 0, 1, NULL,
     "probability that a perturbation is a random configuration instead"},
    {"start", SEARCHER_OPT_START, "\"random\"", 0, 0, "random|default|paper",
     "where the local search begins (the first proposal): random, paper (the space's last "
     "configuration), default (the kernel's default configuration) or a configuration object "
     "{\"param\": value, ...}"},
};

typedef struct ils_state {
    search_base b; /* first: its ask is the vtable's; b.nb: neighbours of cur still to try,
                      nb[pos..len) */
    int perturbation;
    double restart_p;
    int has_cur, has_pending;
    config_id cur, pending;
    double cur_t;
    search_best best;
    int pos, len;
    config_id *scratch;
    int scratch_cap;
} ils_state;

static void ils_destroy(void *state)
{
    ils_state *st = state;
    if (!st)
        return;
    search_base_free(&st->b);
    free(st->scratch);
    free(st);
}

static void shuffle(kt_rng *rng, config_id *ids, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)kt_rng_below(rng, (uint64_t)i + 1);
        config_id t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
}

/* Makes id the current configuration and lists its neighbours to try. */
static void ils_move_to(ils_state *st, config_id id, double t)
{
    st->has_cur = 1;
    st->cur = id;
    st->cur_t = t;
    int a = space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_ADJACENT, st->b.nb, st->b.nb_cap);
    shuffle(&st->b.rng, st->b.nb, a);
    int h =
        space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_HAMMING, st->b.nb + a, st->b.nb_cap - a);
    shuffle(&st->b.rng, st->b.nb + a, h);
    if (a + h == 0) {
        h = space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_PAIR_SCALE, st->b.nb, st->b.nb_cap);
        shuffle(&st->b.rng, st->b.nb, h);
    }
    st->pos = 0;
    st->len = a + h; /* ADJACENT ones recur in HAMMING: the visited set skips them */
}

/* A perturbation of the best configuration: 1 with *out proposed, 0 none found, -1 no memory. */
static int ils_perturb(ils_state *st, config_id *out)
{
    if (!st->best.known || kt_rng_uniform(&st->b.rng) < st->restart_p)
        return 0;
    for (int attempt = 0; attempt < 8; attempt++) {
        config_id p = st->best.id;
        for (int k = 0; k < st->perturbation; k++) {
            int m = space_neighbours(st->b.sp, p, SPACE_NEIGHBOURS_HAMMING, st->scratch,
                                     st->scratch_cap);
            if (m == 0)
                m = space_neighbours(st->b.sp, p, SPACE_NEIGHBOURS_PAIR_SCALE, st->scratch,
                                     st->scratch_cap);
            if (m == 0)
                break;
            p = st->scratch[kt_rng_below(&st->b.rng, (uint64_t)m)];
        }
        if (!search_set_has(&st->b.visited, p)) {
            if (search_set_add(&st->b.visited, p) < 0)
                return -1;
            *out = p;
            return 1;
        }
    }
    return 0;
}

/* A proposal the local search jumps to once its result is told (it becomes current whatever
 * it scores): rc passed through. */
static int ils_jump(ils_state *st, int rc, const config_id *slot)
{
    if (rc > 0) {
        st->has_pending = 1;
        st->pending = *slot;
    }
    return rc;
}

/* The next proposal: the start (a jump), then the current configuration's next unvisited
 * neighbour, then (a local optimum, or its results are pending) a perturbation or a random
 * configuration (a jump). */
static int ils_pick(void *state, config_id *slot)
{
    ils_state *st = state;
    int rc = search_start_take(&st->b.start, &st->b.visited, slot);
    if (rc != 0)
        return ils_jump(st, rc, slot);
    while (st->has_cur && st->pos < st->len && rc == 0) {
        config_id id = st->b.nb[st->pos++];
        if (!search_set_has(&st->b.visited, id)) {
            rc = search_set_add(&st->b.visited, id) < 0 ? -1 : 1;
            *slot = id;
        }
    }
    if (rc != 0 || !st->has_cur)
        return rc;
    rc = ils_perturb(st, slot);
    if (rc == 0)
        rc = search_random_unvisited(st->b.sp, &st->b.visited, &st->b.rng, slot);
    return ils_jump(st, rc, slot);
}

static int ils_told(void *state, config_id id, double t)
{
    ils_state *st = state;
    search_best_offer(&st->best, id, t);
    int jump = st->has_pending && id == st->pending;
    if (!st->has_cur || t < st->cur_t || jump) {
        st->has_pending = 0;
        ils_move_to(st, id, t);
    }
    return 0;
}

static void *ils_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    /* a random start is the first random proposal: stream kept */
    static const search_hooks hooks = {"greedy_ils", &ils_options[OPT_START], ils_pick, ils_told};
    ils_state *st = search_base_new(sizeof *st, &hooks, sp, options, seed, err);
    if (!st)
        return NULL;
    st->perturbation = (int)searcher_option_number(&ils_options[OPT_PERTURBATION], options);
    st->restart_p = searcher_option_number(&ils_options[OPT_RESTART_PROBABILITY], options);
    int ham = space_max_neighbours(sp, SPACE_NEIGHBOURS_HAMMING);
    int pair = space_max_neighbours(sp, SPACE_NEIGHBOURS_PAIR_SCALE);
    st->scratch_cap = (ham > pair ? ham : pair) + 1;
    st->scratch = malloc((size_t)st->scratch_cap * sizeof *st->scratch);
    if (!st->scratch)
        goto oom;
    return st;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    ils_destroy(st);
    return NULL;
}

const searcher_vtable searcher_greedy_ils_vtable = {
    .name = "greedy_ils",
    .summary = "iterated local search: first-improvement over neighbours, random hamming "
               "perturbations of the best when stuck",
    .options = ils_options,
    .n_options = N_OPTS,
    .create = ils_create,
    .ask = search_base_ask,
    .tell = search_base_tell,
    .destroy = ils_destroy,
};
