/* search/genetic — a generational genetic algorithm. The first `population` proposals are random;
 * after that each proposal is a child of two parents picked by tournament (3 individuals) from the
 * current generation: uniform crossover then per-parameter mutation, built in value-index form and
 * kept only if space_encode accepts it and it was never proposed (bounded retries, else a HAMMING
 * neighbour of a parent, else a random configuration). Told children fill the next generation,
 * which replaces the current one once full; the best individual survives (elitism 1). */
#include "search/search_set.h"

#include <stdlib.h>

enum { OPT_POPULATION, OPT_MUTATION_RATE, N_OPTS };

static const searcher_option ga_options[N_OPTS] = {
    {"population", SEARCHER_OPT_INTEGER, "20", 2, 1000, NULL, "individuals per generation"},
    {"mutation_rate", SEARCHER_OPT_NUMBER, "0.1", 0, 1, NULL,
     "probability that a child's parameter is mutated"},
};

#define GA_TOURNAMENT  3
#define GA_CHILD_TRIES 32
#define GA_MAX_PARAMS  256 /* space_limits caps parameters at 256 */

typedef struct ga_indiv {
    config_id id;
    double t;
} ga_indiv;

typedef struct ga_state {
    search_base b; /* first: its ask is the vtable's */
    int pop_size, n_params;
    double mutation_rate;
    ga_indiv *pop, *next; /* current generation (npop) and the one being told (nnext) */
    int npop, nnext;
    int *pa, *pb, *child; /* value indices */
} ga_state;

static void ga_destroy(void *state)
{
    ga_state *st = state;
    if (!st)
        return;
    search_base_free(&st->b);
    free(st->pop);
    free(st->next);
    free(st->pa);
    free(st->pb);
    free(st->child);
    free(st);
}

static const ga_indiv *ga_tournament(ga_state *st)
{
    const ga_indiv *best = NULL;
    for (int k = 0; k < GA_TOURNAMENT; k++) {
        const ga_indiv *c = &st->pop[kt_rng_below(&st->b.rng, (uint64_t)st->npop)];
        if (!best || c->t < best->t)
            best = c;
    }
    return best;
}

/* A valid, unvisited child of the current generation: 1, 0 none found, -1 out of memory. */
static int ga_breed(ga_state *st, config_id *out)
{
    const ga_indiv *a = NULL;
    for (int attempt = 0; attempt < GA_CHILD_TRIES; attempt++) {
        a = ga_tournament(st);
        const ga_indiv *b = ga_tournament(st);
        if (space_decode(st->b.sp, a->id, st->pa) < 0 || space_decode(st->b.sp, b->id, st->pb) < 0)
            return 0;
        for (int p = 0; p < st->n_params; p++) {
            st->child[p] = kt_rng_below(&st->b.rng, 2) ? st->pa[p] : st->pb[p];
            int nv = space_param_num_values(st->b.sp, p);
            if (nv > 1 && kt_rng_uniform(&st->b.rng) < st->mutation_rate) {
                int v = (int)kt_rng_below(&st->b.rng, (uint64_t)nv - 1);
                st->child[p] = v >= st->child[p] ? v + 1 : v; /* any other value */
            }
        }
        config_id id;
        if (space_encode(st->b.sp, st->child, &id) == 0 && !search_set_has(&st->b.visited, id)) {
            if (search_set_add(&st->b.visited, id) < 0)
                return -1;
            *out = id;
            return 1;
        }
    }
    /* Crossover keeps missing (tight restrictions, or a converged generation): a neighbour. */
    int m = space_neighbours(st->b.sp, a->id, SPACE_NEIGHBOURS_HAMMING, st->b.nb, st->b.nb_cap);
    return search_pick_unvisited(&st->b.visited, &st->b.rng, st->b.nb, m, out);
}

/* A child once the current generation has two individuals; 0 before (a random configuration). */
static int ga_pick(void *state, config_id *slot)
{
    ga_state *st = state;
    return st->npop >= 2 && st->n_params <= GA_MAX_PARAMS ? ga_breed(st, slot) : 0;
}

static int ga_cmp(const void *x, const void *y)
{
    const ga_indiv *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id; /* total order: qsort stays deterministic */
}

static int ga_told(void *state, config_id id, double t)
{
    ga_state *st = state;
    st->next[st->nnext].id = id;
    st->next[st->nnext].t = t;
    st->nnext++;
    int elite = st->npop > 0 ? 1 : 0;
    if (st->nnext + elite < st->pop_size)
        return 0;
    /* Generation complete: the old best survives, the told children fill the rest. */
    if (elite) {
        qsort(st->pop, (size_t)st->npop, sizeof *st->pop, ga_cmp);
        st->next[st->nnext++] = st->pop[0];
    }
    ga_indiv *swap = st->pop;
    st->pop = st->next;
    st->next = swap;
    st->npop = st->nnext;
    st->nnext = 0;
    return 0;
}

static void *ga_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    static const search_hooks hooks = {"genetic", NULL, ga_pick, ga_told};
    ga_state *st = search_base_new(sizeof *st, &hooks, sp, options, seed, err);
    if (!st)
        return NULL;
    st->pop_size = (int)searcher_option_number(&ga_options[OPT_POPULATION], options);
    st->mutation_rate = searcher_option_number(&ga_options[OPT_MUTATION_RATE], options);
    st->n_params = space_num_params(sp);
    size_t np = (size_t)(st->n_params > 0 ? st->n_params : 1);
    st->pop = malloc((size_t)st->pop_size * sizeof *st->pop);
    st->next = malloc((size_t)st->pop_size * sizeof *st->next);
    st->pa = malloc(np * sizeof *st->pa);
    st->pb = malloc(np * sizeof *st->pb);
    st->child = malloc(np * sizeof *st->child);
    if (!st->pop || !st->next || !st->pa || !st->pb || !st->child)
        goto oom;
    return st;
oom:
    ga_destroy(st);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

const searcher_vtable searcher_genetic_vtable = {
    .name = "genetic",
    .summary = "genetic algorithm: tournament selection, uniform crossover and mutation into "
               "valid configurations, elitism 1",
    .options = ga_options,
    .n_options = N_OPTS,
    .create = ga_create,
    .ask = search_base_ask,
    .tell = search_base_tell,
    .destroy = ga_destroy,
};
