/* search/anneal — simulated annealing over neighbouring configurations. One candidate neighbour of
 * the current configuration per proposal; a told candidate replaces the current one if faster, or
 * if slower with probability exp(-(t_new - t_cur) / (T * t_cur)). T starts at t0 and is multiplied
 * by alpha per told result; after restart_after results without a new best the walk restarts from a
 * random configuration with T = t0. A configuration without unvisited neighbours (in the chosen
 * neighbourhood, else in PAIR_SCALE) also restarts the walk. The walk begins at option `start`:
 * "random" (the default) is the first random restart, drawn exactly as before the option existed;
 * any other start is the first proposal and becomes the current configuration when told. */
#include "search/search_set.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_NEIGHBOURHOOD, OPT_T0, OPT_ALPHA, OPT_RESTART_AFTER, OPT_START, N_OPTS };

static const searcher_option anneal_options[N_OPTS] = {
    {"neighbourhood", SEARCHER_OPT_STRING, "\"hamming\"", 0, 0, "hamming|adjacent",
     "moves: hamming (one parameter to any other value) or adjacent (one parameter to the "
     "previous or next value)"},
    {"t0", SEARCHER_OPT_NUMBER, "1.0", 1e-9, 1e9, NULL,
     "initial temperature, relative to the current time"},
    {"alpha", SEARCHER_OPT_NUMBER, "0.995", 0.5, 1.0, NULL,
     "geometric cooling factor applied per told result"},
    {"restart_after", SEARCHER_OPT_INTEGER, "300", 1, 1e9, NULL,
     "told results without a new best before restarting from a random configuration"},
    {"start", SEARCHER_OPT_START, "\"random\"", 0, 0, "random|default|paper",
     "where the walk begins (the first proposal): random, paper (the space's last "
     "configuration), default (the kernel's default configuration) or a configuration object "
     "{\"param\": value, ...}; restarts are random"},
};

typedef struct anneal_state {
    search_base b; /* first: its ask is the vtable's */
    space_neighbour_kind kind;
    double t0, alpha, temp;
    long restart_after, since_best;
    int has_cur;
    int start_wait; /* a non-random start proposed, its result awaited */
    config_id cur;
    double cur_t;
    search_best best;
} anneal_state;

static void anneal_destroy(void *state)
{
    anneal_state *st = state;
    if (!st)
        return;
    search_base_free(&st->b);
    free(st);
}

/* A random unvisited neighbour of the current configuration: 1, 0 if none, -1 out of memory. */
static int anneal_neighbour(anneal_state *st, config_id *out)
{
    int n = space_neighbours(st->b.sp, st->cur, st->kind, st->b.nb, st->b.nb_cap);
    if (n == 0) /* e.g. products fixed by restrictions: single-parameter moves are all invalid */
        n = space_neighbours(st->b.sp, st->cur, SPACE_NEIGHBOURS_PAIR_SCALE, st->b.nb,
                             st->b.nb_cap);
    return search_pick_unvisited(&st->b.visited, &st->b.rng, st->b.nb, n, out);
}

/* The next proposal: the start, then a random unvisited neighbour of the current configuration
 * (0 at a dead end, which restarts the walk from a random configuration). */
static int anneal_pick(void *state, config_id *slot)
{
    anneal_state *st = state;
    int rc = search_start_take(&st->b.start, &st->b.visited, slot);
    if (rc > 0)
        st->start_wait = 1;
    if (rc != 0 || !st->has_cur)
        return rc;
    rc = anneal_neighbour(st, slot);
    if (rc == 0) { /* a dead end: restart from a random configuration */
        st->has_cur = 0;
        st->temp = st->t0;
        st->since_best = 0;
    }
    return rc;
}

static int anneal_told(void *state, config_id id, double t)
{
    anneal_state *st = state;
    if (search_best_offer(&st->best, id, t))
        st->since_best = 0;
    else
        st->since_best++;
    if (!st->has_cur || (st->start_wait && id == st->b.start.id)) {
        st->start_wait &= id != st->b.start.id;
        st->has_cur = 1;
        st->cur = id;
        st->cur_t = t;
        return 0;
    }
    int accept = t <= st->cur_t;
    if (!accept) {
        double rel = (t - st->cur_t) / (st->temp * (st->cur_t > 1e-12 ? st->cur_t : 1e-12));
        accept = kt_rng_uniform(&st->b.rng) < exp(-rel);
    }
    if (accept) {
        st->cur = id;
        st->cur_t = t;
    }
    st->temp *= st->alpha;
    if (st->since_best >= st->restart_after) {
        st->has_cur = 0; /* the next told result (a random proposal, or a pending one) */
        st->temp = st->t0;
        st->since_best = 0;
    }
    return 0;
}

static void *anneal_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    /* a random start is the first restart: the stream stays */
    static const search_hooks hooks = {"anneal", &anneal_options[OPT_START], anneal_pick,
                                       anneal_told};
    char buf[32];
    anneal_state *st = search_base_new(sizeof *st, &hooks, sp, options, seed, err);

    if (!st)
        return NULL;
    const char *nbh =
        searcher_option_string(&anneal_options[OPT_NEIGHBOURHOOD], options, buf, sizeof buf);
    st->kind =
        nbh && strcmp(nbh, "adjacent") == 0 ? SPACE_NEIGHBOURS_ADJACENT : SPACE_NEIGHBOURS_HAMMING;
    st->t0 = searcher_option_number(&anneal_options[OPT_T0], options);
    st->alpha = searcher_option_number(&anneal_options[OPT_ALPHA], options);
    st->restart_after = (long)searcher_option_number(&anneal_options[OPT_RESTART_AFTER], options);
    st->temp = st->t0;
    return st;
}

const searcher_vtable searcher_anneal_vtable = {
    .name = "anneal",
    .summary = "simulated annealing over neighbouring configurations with geometric cooling and "
               "random restarts",
    .options = anneal_options,
    .n_options = N_OPTS,
    .create = anneal_create,
    .ask = search_base_ask,
    .tell = search_base_tell,
    .destroy = anneal_destroy,
};
