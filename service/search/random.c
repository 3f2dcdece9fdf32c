/* search/random — uniform sampling without replacement. A Fisher–Yates shuffle of [0, count) done
 * lazily: only the positions a swap has touched are stored, in a search_map (search_set.h), so
 * memory grows with the proposals made (not with the space) and a seed fixes the whole sequence. */
#include "search/search_set.h"

#include <stdlib.h>

typedef struct random_state {
    kt_rng rng;
    uint64_t count;   /* size of the space */
    uint64_t next;    /* positions [0, next) of the shuffle are final (already proposed) */
    search_map moved; /* position -> value, for the positions a swap has touched */
} random_state;

/* Value currently at position pos of the virtual permutation (identity where untouched). */
static uint64_t value_at(const random_state *st, uint64_t pos)
{
    uint64_t v;
    return search_map_get(&st->moved, pos, &v) ? v : pos;
}

static void *random_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    (void)options;
    random_state *st = calloc(1, sizeof *st);
    if (!st) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    kt_rng_seed(&st->rng, seed);
    st->count = space_count(sp);
    return st;
}

static int random_ask(void *state, config_id *out, int max)
{
    random_state *st = state;
    int n = 0;
    while (n < max && st->next < st->count) {
        /* Room first, before the draw, so running out of memory never consumes randomness and the
         * sequence stays reproducible. */
        if (search_map_reserve(&st->moved) < 0)
            break;
        uint64_t i = st->next;
        uint64_t j = i + kt_rng_below(&st->rng, st->count - i);
        uint64_t vj = value_at(st, j);
        /* Position i is final after this step and never read again, so only j needs storing. */
        if (j != i)
            search_map_put(&st->moved, j, value_at(st, i));
        out[n++] = vj;
        st->next++;
    }
    return n;
}

static void random_destroy(void *state)
{
    random_state *st = state;
    if (!st)
        return;
    search_map_free(&st->moved);
    free(st);
}

const searcher_vtable searcher_random_vtable = {
    .name = "random",
    .summary = "uniform random sampling of valid configurations without replacement",
    .options = NULL,
    .n_options = 0,
    .create = random_create,
    .ask = random_ask,
    .tell = NULL, /* results do not steer it */
    .destroy = random_destroy,
};
