/* search/search_set — the visited set, random unvisited proposals and result scoring shared by
 * the result-driven strategies. */
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

static int set_grow(search_set *s)
{
    uint64_t ncap = s->cap ? s->cap * 2 : 64;
    config_id *ns = malloc(ncap * sizeof *ns);
    if (!ns)
        return -1;
    for (uint64_t i = 0; i < ncap; i++)
        ns[i] = SET_EMPTY;
    for (uint64_t i = 0; i < s->cap; i++) {
        if (s->slots[i] != SET_EMPTY)
            *set_find(ns, ncap, s->slots[i]) = s->slots[i];
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
    return 0;
}

int search_set_add(search_set *s, config_id id)
{
    if ((s->used + 1) * 2 > s->cap && set_grow(s) < 0)
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
