/* search/search_set — the visited set (and the id map random.c shuffles with), random unvisited
 * proposals, the state and ask of the one-at-a-time strategies, the start state, the best so far
 * and result scoring shared by the result-driven strategies. */
#include "search/search_set.h"

#include <math.h>
#include <stdlib.h>

#define SET_EMPTY UINT64_MAX /* ids are < count <= UINT64_MAX */

static uint64_t set_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static config_id *set_find(config_id *slots, uint64_t cap, config_id id)
{
    uint64_t i = set_mix(id) & (cap - 1);
    while (slots[i] != SET_EMPTY && slots[i] != id)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* Doubles the table (64 slots first), moving the values along with their keys when vals is set. */
static int set_grow(config_id **slots, uint64_t **vals, uint64_t *cap)
{
    int rc = -1;
    uint64_t ncap = *cap ? *cap * 2 : 64;
    config_id *ns = malloc(ncap * sizeof *ns);
    uint64_t *nv = vals ? malloc(ncap * sizeof *nv) : NULL;
    if (!ns || (vals && !nv))
        goto out;
    for (uint64_t i = 0; i < ncap; i++)
        ns[i] = SET_EMPTY;
    for (uint64_t i = 0; i < *cap; i++) {
        if ((*slots)[i] == SET_EMPTY)
            continue;
        config_id *dst = set_find(ns, ncap, (*slots)[i]);
        *dst = (*slots)[i];
        if (vals)
            nv[dst - ns] = (*vals)[i];
    }
    free(*slots);
    *slots = ns;
    ns = NULL;
    if (vals) {
        free(*vals);
        *vals = nv;
        nv = NULL;
    }
    *cap = ncap;
    rc = 0;
out:
    free(ns);
    free(nv);
    return rc;
}

static int set_reserve(search_set *s, uint64_t **vals)
{
    return (s->used + 1) * 2 > s->cap ? set_grow(&s->slots, vals, &s->cap) : 0;
}

int search_set_add(search_set *s, config_id id)
{
    if (set_reserve(s, NULL) < 0)
        return -1;
    config_id *slot = set_find(s->slots, s->cap, id);
    if (*slot == id)
        return 0;
    *slot = id;
    s->used++;
    return 1;
}

int search_set_has(const search_set *s, config_id id)
{
    return s->cap && *set_find(s->slots, s->cap, id) == id;
}

void search_set_free(search_set *s)
{
    free(s->slots);
    s->slots = NULL;
    s->cap = s->used = 0;
}

int search_map_reserve(search_map *m)
{
    return set_reserve(&m->keys, &m->vals);
}

void search_map_put(search_map *m, config_id key, uint64_t val)
{
    config_id *slot = set_find(m->keys.slots, m->keys.cap, key);
    if (*slot != key) {
        *slot = key;
        m->keys.used++;
    }
    m->vals[slot - m->keys.slots] = val;
}

int search_map_get(const search_map *m, config_id key, uint64_t *val)
{
    if (!m->keys.cap)
        return 0;
    config_id *slot = set_find(m->keys.slots, m->keys.cap, key);
    if (*slot != key)
        return 0;
    *val = m->vals[slot - m->keys.slots];
    return 1;
}

void search_map_free(search_map *m)
{
    search_set_free(&m->keys);
    free(m->vals);
    m->vals = NULL;
}

int search_random_unvisited(const space *sp, search_set *visited, kt_rng *rng, config_id *out)
{
    uint64_t count = space_count(sp);
    config_id id = 0;
    int found = 0;

    if (visited->used >= count)
        return 0;
    for (int tries = 0; tries < 64 && !found; tries++) {
        id = space_sample(sp, rng);
        found = !search_set_has(visited, id);
    }
    if (!found) { /* nearly exhausted: the next unvisited id after a random start */
        id = kt_rng_below(rng, count);
        for (uint64_t k = 0; k < count && !found; k++) {
            found = !search_set_has(visited, id);
            if (!found)
                id = id + 1 == count ? 0 : id + 1;
        }
    }
    if (!found || search_set_add(visited, id) < 0)
        return found ? -1 : 0;
    *out = id;
    return 1;
}

int search_pick_unvisited(search_set *visited, kt_rng *rng, config_id *ids, int n, config_id *out)
{
    for (int i = 0; i < n; i++) {
        int j = i + (int)kt_rng_below(rng, (uint64_t)(n - i));
        config_id t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
        if (!search_set_has(visited, ids[i])) {
            if (search_set_add(visited, ids[i]) < 0)
                return -1;
            *out = ids[i];
            return 1;
        }
    }
    return 0;
}

double search_score(const trial_result *r)
{
    if (r->status != TRIAL_OK || !isfinite(r->time_ms) || r->time_ms < 0)
        return SEARCH_BAD_SCORE;
    return r->time_ms;
}

void *search_base_new(size_t size, const search_hooks *h, const space *sp, const json_t *options,
                      uint64_t seed, kt_error *err)
{
    int adj = space_max_neighbours(sp, SPACE_NEIGHBOURS_ADJACENT);
    int ham = space_max_neighbours(sp, SPACE_NEIGHBOURS_HAMMING);
    int pair = space_max_neighbours(sp, SPACE_NEIGHBOURS_PAIR_SCALE);
    search_base *b = calloc(1, size);
    if (!b)
        goto oom;
    b->sp = sp;
    kt_rng_seed(&b->rng, seed);
    b->h = h;
    b->nb_cap = adj + (ham > pair ? ham : pair) + 1;
    b->nb = malloc((size_t)b->nb_cap * sizeof *b->nb);
    if (!b->nb)
        goto oom;
    if (h->start && search_start_init(&b->start, h->name, h->start, options, sp, &b->rng, err) < 0)
        goto fail;
    return b;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
fail:
    if (b)
        search_base_free(b);
    free(b);
    return NULL;
}

void search_base_free(search_base *b)
{
    search_set_free(&b->visited);
    free(b->nb);
    b->nb = NULL;
}

int search_base_ask(void *state, config_id *out, int max)
{
    search_base *b = state;
    int n = 0;
    while (n < max) {
        int rc = b->h->pick(state, &out[n]);
        if (rc == 0)
            rc = search_random_unvisited(b->sp, &b->visited, &b->rng, &out[n]);
        if (rc <= 0)
            break;
        n++;
    }
    return n;
}

void search_base_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    search_base *b = state;
    for (int i = 0; i < n; i++) {
        if (b->h->told(state, ids[i], search_score(&r[i])) < 0)
            break;
    }
}

int search_start_init(search_start *s, const char *strategy, const searcher_option *o,
                      const json_t *options, const space *sp, const kt_rng *rng, kt_error *err)
{
    s->pending = 0;
    if (space_count(sp) == 0) /* an empty space has no start: ask returns 0 */
        return 0;
    kt_rng scratch = *rng;
    int is_random;
    if (searcher_start_id(strategy, o, options, sp, &scratch, &s->id, &is_random, err) < 0)
        return -1;
    s->pending = !is_random;
    return 0;
}

int search_start_take(search_start *s, search_set *visited, config_id *out)
{
    if (!s->pending)
        return 0;
    s->pending = 0;
    int rc = search_set_add(visited, s->id);
    if (rc > 0)
        *out = s->id;
    return rc;
}

int search_best_offer(search_best *b, config_id id, double t)
{
    if (b->known && !(t < b->t))
        return 0;
    b->known = 1;
    b->id = id;
    b->t = t;
    return 1;
}
