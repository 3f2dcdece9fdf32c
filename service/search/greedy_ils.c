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
    const space *sp;
    kt_rng rng;
    search_set visited;
    int perturbation;
    double restart_p;
    int has_cur, has_best, has_pending;
    int start_pending; /* a non-random start not proposed yet */
    config_id start;
    config_id cur, best, pending;
    double cur_t, best_t;
    config_id *nb; /* neighbours of cur still to try: nb[pos..len) */
    int pos, len, nb_cap;
    config_id *scratch;
    int scratch_cap;
} ils_state;

static void ils_destroy(void *state)
{
    ils_state *st = state;
    if (!st)
        return;
    search_set_free(&st->visited);
    free(st->nb);
    free(st->scratch);
    free(st);
}

static void *ils_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    ils_state *st = calloc(1, sizeof *st);
    if (!st)
        goto oom;
    st->sp = sp;
    kt_rng_seed(&st->rng, seed);
    st->perturbation = (int)searcher_option_number(&ils_options[OPT_PERTURBATION], options);
    st->restart_p = searcher_option_number(&ils_options[OPT_RESTART_PROBABILITY], options);
    int adj = space_max_neighbours(sp, SPACE_NEIGHBOURS_ADJACENT);
    int ham = space_max_neighbours(sp, SPACE_NEIGHBOURS_HAMMING);
    int pair = space_max_neighbours(sp, SPACE_NEIGHBOURS_PAIR_SCALE);
    st->nb_cap = adj + (ham > pair ? ham : pair) + 1;
    st->scratch_cap = (ham > pair ? ham : pair) + 1;
    st->nb = malloc((size_t)st->nb_cap * sizeof *st->nb);
    st->scratch = malloc((size_t)st->scratch_cap * sizeof *st->scratch);
    if (!st->nb || !st->scratch)
        goto oom;
    if (space_count(sp) > 0) {    /* an empty space has no start: ask returns 0 */
        kt_rng scratch = st->rng; /* a random start is the first random proposal: stream kept */
        int is_random;
        if (searcher_start_id("greedy_ils", &ils_options[OPT_START], options, sp, &scratch,
                              &st->start, &is_random, err) < 0)
            goto fail;
        st->start_pending = !is_random;
    }
    return st;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
fail:
    ils_destroy(st);
    return NULL;
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
    int a = space_neighbours(st->sp, id, SPACE_NEIGHBOURS_ADJACENT, st->nb, st->nb_cap);
    shuffle(&st->rng, st->nb, a);
    int h = space_neighbours(st->sp, id, SPACE_NEIGHBOURS_HAMMING, st->nb + a, st->nb_cap - a);
    shuffle(&st->rng, st->nb + a, h);
    if (a + h == 0) {
        h = space_neighbours(st->sp, id, SPACE_NEIGHBOURS_PAIR_SCALE, st->nb, st->nb_cap);
        shuffle(&st->rng, st->nb, h);
    }
    st->pos = 0;
    st->len = a + h; /* ADJACENT ones recur in HAMMING: the visited set skips them */
}

/* A perturbation of the best configuration: 1 with *out proposed, 0 none found, -1 no memory. */
static int ils_perturb(ils_state *st, config_id *out)
{
    if (!st->has_best || kt_rng_uniform(&st->rng) < st->restart_p)
        return 0;
    for (int attempt = 0; attempt < 8; attempt++) {
        config_id p = st->best;
        for (int k = 0; k < st->perturbation; k++) {
            int m =
                space_neighbours(st->sp, p, SPACE_NEIGHBOURS_HAMMING, st->scratch, st->scratch_cap);
            if (m == 0)
                m = space_neighbours(st->sp, p, SPACE_NEIGHBOURS_PAIR_SCALE, st->scratch,
                                     st->scratch_cap);
            if (m == 0)
                break;
            p = st->scratch[kt_rng_below(&st->rng, (uint64_t)m)];
        }
        if (!search_set_has(&st->visited, p)) {
            if (search_set_add(&st->visited, p) < 0)
                return -1;
            *out = p;
            return 1;
        }
    }
    return 0;
}

static int ils_ask(void *state, config_id *out, int max)
{
    ils_state *st = state;
    int n = 0, rc = 0;
    while (n < max) {
        rc = 0;
        if (st->start_pending) { /* told, it becomes current as a jump does */
            st->start_pending = 0;
            rc = search_set_add(&st->visited, st->start);
            if (rc < 0)
                break;
            if (rc > 0) {
                st->has_pending = 1;
                st->pending = st->start;
                out[n++] = st->start;
            }
            continue;
        }
        while (st->has_cur && st->pos < st->len && rc == 0) {
            config_id id = st->nb[st->pos++];
            if (!search_set_has(&st->visited, id)) {
                rc = search_set_add(&st->visited, id) < 0 ? -1 : 1;
                out[n] = id;
            }
        }
        if (rc == 0 && st->has_cur) { /* a local optimum (or its results are pending) */
            rc = ils_perturb(st, &out[n]);
            if (rc == 0)
                rc = search_random_unvisited(st->sp, &st->visited, &st->rng, &out[n]);
            if (rc > 0) {
                st->has_pending = 1;
                st->pending = out[n];
            }
        } else if (rc == 0) {
            rc = search_random_unvisited(st->sp, &st->visited, &st->rng, &out[n]);
        }
        if (rc <= 0)
            break;
        n++;
    }
    return n;
}

static void ils_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    ils_state *st = state;
    for (int i = 0; i < n; i++) {
        double t = search_score(&r[i]);
        if (!st->has_best || t < st->best_t) {
            st->has_best = 1;
            st->best = ids[i];
            st->best_t = t;
        }
        int jump = st->has_pending && ids[i] == st->pending;
        if (!st->has_cur || t < st->cur_t || jump) {
            st->has_pending = 0;
            ils_move_to(st, ids[i], t);
        }
    }
}

const searcher_vtable searcher_greedy_ils_vtable = {
    .name = "greedy_ils",
    .summary = "iterated local search: first-improvement over neighbours, random hamming "
               "perturbations of the best when stuck",
    .options = ils_options,
    .n_options = N_OPTS,
    .create = ils_create,
    .ask = ils_ask,
    .tell = ils_tell,
    .destroy = ils_destroy,
};
