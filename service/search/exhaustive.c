/* search/exhaustive — every valid configuration in id order (0, 1, 2, ...), then nothing. */
#include "search/searcher_impl.h"

#include <stdlib.h>

typedef struct exhaustive_state {
    uint64_t count;
    uint64_t next;
} exhaustive_state;

static void *exhaustive_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    (void)options;
    (void)seed; /* the order is fixed; the seed has nothing to choose */
    exhaustive_state *st = calloc(1, sizeof *st);
    if (!st) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    st->count = space_count(sp);
    return st;
}

static int exhaustive_ask(void *state, config_id *out, int max)
{
    exhaustive_state *st = state;
    int n = 0;
    while (n < max && st->next < st->count)
        out[n++] = st->next++;
    return n;
}

static void exhaustive_destroy(void *state)
{
    free(state);
}

const searcher_vtable searcher_exhaustive_vtable = {
    .name = "exhaustive",
    .summary = "every valid configuration once, in configuration-id order",
    .options = NULL,
    .n_options = 0,
    .create = exhaustive_create,
    .ask = exhaustive_ask,
    .tell = NULL, /* results do not steer it */
    .destroy = exhaustive_destroy,
};
