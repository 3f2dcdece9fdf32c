/* search/random — uniform sampling without replacement. A Fisher–Yates shuffle of [0, count) done
 * lazily: only the positions a swap has touched are stored, in an open-addressing hash map, so
 * memory grows with the proposals made (not with the space) and a seed fixes the whole sequence. */
#include "search/searcher_impl.h"

#include <stdlib.h>

/* Ids are < count <= UINT64_MAX, so UINT64_MAX never occurs as a position. */
#define SLOT_EMPTY UINT64_MAX

typedef struct slot {
    uint64_t pos;
    uint64_t val;
} slot;

typedef struct random_state {
    kt_rng rng;
    uint64_t count; /* size of the space */
    uint64_t next;  /* positions [0, next) of the shuffle are final (already proposed) */
    slot *slots;    /* capacity a power of two, at most half full */
    uint64_t cap, used;
} random_state;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static slot *find_slot(slot *slots, uint64_t cap, uint64_t pos)
{
    uint64_t i = mix(pos) & (cap - 1);
    while (slots[i].pos != SLOT_EMPTY && slots[i].pos != pos)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static int grow(random_state *st)
{
    uint64_t ncap = st->cap ? st->cap * 2 : 64;
    slot *ns = malloc(ncap * sizeof *ns);
    if (!ns)
        return -1;
    for (uint64_t i = 0; i < ncap; i++)
        ns[i].pos = SLOT_EMPTY;
    for (uint64_t i = 0; i < st->cap; i++) {
        if (st->slots[i].pos != SLOT_EMPTY)
            *find_slot(ns, ncap, st->slots[i].pos) = st->slots[i];
    }
    free(st->slots);
    st->slots = ns;
    st->cap = ncap;
    return 0;
}

/* Value currently at position pos of the virtual permutation (identity where untouched). */
static uint64_t value_at(const random_state *st, uint64_t pos)
{
    if (!st->cap)
        return pos;
    const slot *s = find_slot(st->slots, st->cap, pos);
    return s->pos == SLOT_EMPTY ? pos : s->val;
}

/* The caller has made room (reserve), so this cannot fail. */
static void set_value(random_state *st, uint64_t pos, uint64_t val)
{
    slot *s = find_slot(st->slots, st->cap, pos);
    if (s->pos == SLOT_EMPTY) {
        s->pos = pos;
        st->used++;
    }
    s->val = val;
}

static int reserve(random_state *st)
{
    return (st->used + 1) * 2 > st->cap ? grow(st) : 0;
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
        if (reserve(st) < 0)
            break;
        uint64_t i = st->next;
        uint64_t j = i + kt_rng_below(&st->rng, st->count - i);
        uint64_t vj = value_at(st, j);
        /* Position i is final after this step and never read again, so only j needs storing. */
        if (j != i)
            set_value(st, j, value_at(st, i));
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
    free(st->slots);
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
