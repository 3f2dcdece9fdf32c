/* bench/bench_loop — the one ask/tell loop of `ktune bench` (see bench_loop.h). */
#include "bench/bench_loop.h"

#include <stdlib.h>

#include "core/clock.h"
#include "search/search_set.h"

/* One round's proposals checked: inside the space, never proposed before. 0, or -1 with err. */
static int loop_check(bench_loop *l, search_set *seen, config_id id, kt_error *err)
{
    if (!l->space_n)
        return 0;
    if (id >= l->space_n || search_set_has(seen, id)) {
        kt_error_set(err, KT_ERR_INTERNAL, "%s: configuration %llu %s at evaluation %d", l->what,
                     (unsigned long long)id,
                     id >= l->space_n ? "is outside the space" : "proposed twice", l->evals + 1);
        return -1;
    }
    if (search_set_add(seen, id) < 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return 0;
}

int bench_loop_run(bench_loop *l, kt_error *err)
{
    config_id *ids = malloc((size_t)l->batch * sizeof *ids);
    trial_result *res = malloc((size_t)l->batch * sizeof *res);
    search_set seen = {0};
    int rc = -1, n = 0;

    if (!ids || !res) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    while (l->evals < l->budget && !l->stop) {
        int want = l->batch < l->budget - l->evals ? l->batch : l->budget - l->evals;
        int before = l->evals;
        double t0 = kt_clock_s(), ask_s, tell_s;
        n = searcher_ask(l->s, ids, want);
        ask_s = kt_clock_s() - t0;
        l->overhead_s += ask_s;
        if (n <= 0) {
            l->stopped_early = 1;
            n = 0;
            break;
        }
        if (n > want) {
            kt_error_set(err, KT_ERR_INTERNAL, "%s: %d proposals for an ask of %d", l->what, n,
                         want);
            n = 0;
            goto out;
        }
        l->searcher_s += ask_s;
        l->proposals += n;
        for (int i = 0; i < n; i++)
            trial_result_init(&res[i]);
        for (int i = 0; i < n && !l->stop; i++) {
            int counted;
            if (loop_check(l, &seen, ids[i], err) < 0 ||
                (counted = l->evaluate(l, ids[i], &res[i], err)) < 0)
                goto out;
            l->evals += counted == 0;
        }
        if (!l->stop) {
            t0 = kt_clock_s();
            searcher_tell(l->s, ids, res, n);
            tell_s = kt_clock_s() - t0;
            l->overhead_s += tell_s;
            l->searcher_s += tell_s;
            l->rounds++;
            if (l->after_tell)
                l->after_tell(l, ids, res, n, ask_s, tell_s, before);
        }
        for (int i = 0; i < n; i++)
            trial_result_release(&res[i]);
        n = 0;
    }
    rc = 0;
out:
    for (int i = 0; i < n; i++)
        trial_result_release(&res[i]);
    search_set_free(&seen);
    free(ids);
    free(res);
    return rc;
}
