/* search/gbfs — Greedy Best-First Search, Algorithm 1 of Zhang et al., "Compiler-level matrix
 * multiplication optimization for deep learning" (G-BFS). An open priority queue Q of measured
 * configurations ordered by time, and a visited set S_v. Each iteration pops the fastest open
 * configuration s, samples rho of its neighbours g(s) at random, and proposes those not in S_v;
 * every one that is measured successfully enters Q. A popped configuration is never expanded again.
 *
 * How the ask/tell interface maps onto the loop: the sampled batch B_test is proposed one by one
 * (it is tested as a batch in the paper, so results told meanwhile do not reorder it); Q is popped
 * only when B_test is used up. The start s_0 (option `start`, searcher_start_id) is the first
 * proposal: by default the paper's [[m,1,1,1],[k,1],[n,1,1,1]] (the space's last configuration),
 * measured and enqueued like any other; "random" keeps the earlier behaviour exactly (s_0 is the
 * first random restart below, drawn from the same rng stream). Whenever Q and B_test are both empty
 * (results still pending, s_0 failed, or every open configuration has been expanded) the search
 * restarts from a random unvisited configuration, so asks never stall. A failed measurement is an
 * illegitimate state (J = false in the paper): visited, never enqueued.
 *
 * Neighbourhood g(s): `pair_scale` is the paper's action space (one tile factor x2, another /2);
 * `auto` takes the ADJACENT and PAIR_SCALE neighbours together, which is the paper's on spaces
 * whose products are fixed by restrictions (the GEMM tiling space: no single-parameter move is
 * valid there) and adds the one-step moves on Kernel Tuner spaces; when a configuration has
 * neither, its HAMMING neighbours stand in. */
#include "search/search_set.h"

#include <stdlib.h>
#include <string.h>

#include "core/array.h"

enum { OPT_RHO, OPT_NEIGHBOURHOOD, OPT_START, N_OPTS };

static const searcher_option gbfs_options[N_OPTS] = {
    {"rho", SEARCHER_OPT_INTEGER, "5", 1, 100000, NULL,
     "neighbours sampled at random from each expanded configuration (the paper's rho; at least "
     "the neighbourhood's size expands every neighbour)"},
    {"neighbourhood", SEARCHER_OPT_STRING, "\"auto\"", 0, 0, "auto|adjacent|hamming|pair_scale",
     "g(s): auto (adjacent and pair_scale together, hamming where both are empty), adjacent "
     "(one parameter to the previous or next value), hamming (one parameter to any other value) "
     "or pair_scale (one parameter x2 and another /2, the paper's action space)"},
    {"start", SEARCHER_OPT_START, "\"paper\"", 0, 0, "random|default|paper",
     "s_0, the first proposal: paper (the space's last configuration; on gemm_tiled the paper's "
     "[[m,1,1,1],[k,1],[n,1,1,1]], no tiling), default (the kernel's default configuration), "
     "random, or a configuration object {\"param\": value, ...}"},
};

enum { NB_AUTO = -1 };

typedef struct gbfs_node {
    double t;     /* measured time (search_score) */
    uint64_t seq; /* told order: earlier wins ties, so the order is deterministic */
    config_id id;
} gbfs_node;

typedef struct gbfs_state {
    search_base b; /* first: its ask is the vtable's; b.visited is S_v, plus everything proposed
                      and not yet told; b.nb is g(s) of the last expanded configuration */
    int rho;
    int kind;        /* a space_neighbour_kind or NB_AUTO */
    gbfs_node *heap; /* Q: binary min-heap on (t, seq) */
    size_t n_heap, heap_cap;
    uint64_t seq;
    config_id *batch; /* B_test still to propose: batch[pos..len) */
    int pos, len;
} gbfs_state;

static void gbfs_destroy(void *state)
{
    gbfs_state *st = state;
    if (!st)
        return;
    search_base_free(&st->b);
    free(st->heap);
    free(st->batch);
    free(st);
}

static int node_less(const gbfs_node *a, const gbfs_node *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(gbfs_state *st, gbfs_node nd)
{
    if (KT_ARRAY_GROW(st->heap, st->heap_cap, st->n_heap + 1, SIZE_MAX) != 0)
        return -1;
    size_t i = st->n_heap++;
    while (i > 0 && node_less(&nd, &st->heap[(i - 1) / 2])) {
        st->heap[i] = st->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    st->heap[i] = nd;
    return 0;
}

static gbfs_node heap_pop(gbfs_state *st)
{
    gbfs_node top = st->heap[0], last = st->heap[--st->n_heap];
    size_t i = 0, n = st->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && node_less(&st->heap[c + 1], &st->heap[c]))
            c++;
        if (!node_less(&st->heap[c], &last))
            break;
        st->heap[i] = st->heap[c];
        i = c;
    }
    if (n > 0)
        st->heap[i] = last;
    return top;
}

/* g(s) into st->b.nb; returns its size. */
static int gbfs_neighbours(gbfs_state *st, config_id id)
{
    if (st->kind != NB_AUTO)
        return space_neighbours(st->b.sp, id, (space_neighbour_kind)st->kind, st->b.nb,
                                st->b.nb_cap);
    int a = space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_ADJACENT, st->b.nb, st->b.nb_cap);
    a +=
        space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_PAIR_SCALE, st->b.nb + a, st->b.nb_cap - a);
    if (a == 0) /* ADJACENT and PAIR_SCALE moves are disjoint: no duplicates above */
        a = space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_HAMMING, st->b.nb, st->b.nb_cap);
    return a;
}

/* Lines 5-10 of Algorithm 1 for the popped s: B_test = rho neighbours sampled at random from g(s);
 * the unvisited ones become the batch to propose (and visited). Returns -1 out of memory. */
static int gbfs_expand(gbfs_state *st, config_id s)
{
    int m = gbfs_neighbours(st, s);
    int take = st->rho < m ? st->rho : m;
    st->pos = st->len = 0;
    for (int i = 0; i < take; i++) { /* partial Fisher-Yates: a uniform sample, random order */
        int j = i + (int)kt_rng_below(&st->b.rng, (uint64_t)(m - i));
        config_id c = st->b.nb[j];
        st->b.nb[j] = st->b.nb[i];
        st->b.nb[i] = c;
        int added = search_set_add(&st->b.visited, c);
        if (added < 0)
            return -1;
        if (added)
            st->batch[st->len++] = c;
    }
    return 0;
}

/* The next proposal: s_0 (measured, then enqueued by tell: Algorithm 1, lines 1-3), then B_test,
 * refilled by expanding the fastest open configuration; 0 when Q is empty (a random s_0, or a
 * restart from a random unvisited configuration). */
static int gbfs_pick(void *state, config_id *slot)
{
    gbfs_state *st = state;
    int rc = search_start_take(&st->b.start, &st->b.visited, slot);
    if (rc != 0)
        return rc;
    while (st->pos >= st->len) {
        if (st->n_heap == 0)
            return 0;
        if (gbfs_expand(st, heap_pop(st).id) < 0)
            return -1;
    }
    *slot = st->batch[st->pos++];
    return 1;
}

static int gbfs_told(void *state, config_id id, double t)
{
    gbfs_state *st = state;
    if (t >= SEARCH_BAD_SCORE)
        return 0; /* not a legitimate state: never expanded */
    gbfs_node nd = {t, st->seq++, id};
    if (heap_push(st, nd) < 0)
        return -1; /* out of memory: the rest stay unexpanded; asks go on by restarts */
    return 0;
}

static void *gbfs_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    /* a random start is drawn by the first restart, as before the option */
    static const search_hooks hooks = {"gbfs", &gbfs_options[OPT_START], gbfs_pick, gbfs_told};
    char buf[32];
    gbfs_state *st = search_base_new(sizeof *st, &hooks, sp, options, seed, err);
    if (!st)
        return NULL;
    st->rho = (int)searcher_option_number(&gbfs_options[OPT_RHO], options);
    const char *nbh =
        searcher_option_string(&gbfs_options[OPT_NEIGHBOURHOOD], options, buf, sizeof buf);
    st->kind = NB_AUTO;
    if (nbh && strcmp(nbh, "adjacent") == 0)
        st->kind = SPACE_NEIGHBOURS_ADJACENT;
    else if (nbh && strcmp(nbh, "hamming") == 0)
        st->kind = SPACE_NEIGHBOURS_HAMMING;
    else if (nbh && strcmp(nbh, "pair_scale") == 0)
        st->kind = SPACE_NEIGHBOURS_PAIR_SCALE;
    st->batch = malloc((size_t)st->b.nb_cap * sizeof *st->batch);
    if (!st->batch)
        goto oom;
    return st;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    gbfs_destroy(st);
    return NULL;
}

const searcher_vtable searcher_gbfs_vtable = {
    .name = "gbfs",
    .summary = "greedy best-first search (G-BFS): expands the fastest measured configuration by "
               "rho random neighbours, restarts at random when none is left; pick it when "
               "proposals must cost next to nothing (about 1 us each)",
    .options = gbfs_options,
    .n_options = N_OPTS,
    .create = gbfs_create,
    .ask = search_base_ask,
    .tell = search_base_tell,
    .destroy = gbfs_destroy,
};
