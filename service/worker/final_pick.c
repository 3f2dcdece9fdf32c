#include "worker/final_pick.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a before b: faster search time, then the earlier trial. */
static int ranks_before(double a_ms, int a_seq, double b_ms, int b_seq)
{
    return a_ms < b_ms || (a_ms == b_ms && a_seq < b_seq);
}

int final_pick_candidates(const final_trial *rows, int n, int max, final_candidate *out)
{
    int k = 0;
    if (max > FINAL_PICK_MAX_COUNT)
        max = FINAL_PICK_MAX_COUNT;
    for (int i = 0; i < n && max > 0; i++) {
        const final_trial *t = &rows[i];
        if (t->status != TRIAL_OK || !isfinite(t->time_ms))
            continue;
        /* Insertion into the sorted top max: at most 8 entries. */
        int at = k;
        while (at > 0 &&
               ranks_before(t->time_ms, t->seq, out[at - 1].search_ms, out[at - 1].search_seq))
            at--;
        if (at >= max)
            continue;
        int last = k < max ? k : max - 1;
        for (int j = last; j > at; j--)
            out[j] = out[j - 1];
        out[at] = (final_candidate){.search_trial_id = t->trial_id,
                                    .search_seq = t->seq,
                                    .cid = t->cid,
                                    .search_ms = t->time_ms};
        if (k < max)
            k++;
    }
    return k;
}

void final_pick_order(int n_cand, int rounds, int *order_cand, int *order_round)
{
    int k = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n_cand; i++, k++) {
            order_cand[k] = (r + i) % n_cand;
            order_round[k] = r + 1;
        }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Scores candidate c from the samples. */
static void score(int c, const final_sample *samples, int n_s, int rounds, final_score *s)
{
    double times[FINAL_PICK_MAX_ROUNDS];
    memset(s, 0, sizeof *s);
    s->median_ms = s->min_ms = s->max_ms = NAN;
    for (int i = 0; i < n_s; i++) {
        const final_sample *x = &samples[i];
        if (x->candidate != c || !trial_status_is_final(x->status))
            continue;
        s->measured++;
        if (x->status == TRIAL_OK && isfinite(x->time_ms) && s->ok < FINAL_PICK_MAX_ROUNDS)
            times[s->ok++] = x->time_ms;
    }
    s->qualified = rounds > 0 && s->ok == rounds && s->measured == rounds;
    if (s->ok == 0)
        return;
    qsort(times, (size_t)s->ok, sizeof *times, cmp_double);
    s->min_ms = times[0];
    s->max_ms = times[s->ok - 1];
    s->median_ms = times[(s->ok - 1) / 2]; /* the lower median: a measured time */
    /* The trial of that time (the earliest round on equal times). */
    int best_round = 0;
    for (int i = 0; i < n_s; i++) {
        const final_sample *x = &samples[i];
        if (x->candidate == c && x->status == TRIAL_OK && x->time_ms == s->median_ms &&
            (best_round == 0 || x->round < best_round)) {
            best_round = x->round;
            s->median_trial_id = x->trial_id;
        }
    }
}

int final_pick_choose(const final_candidate *cands, int n_cand, const final_sample *samples,
                      int n_s, int rounds, final_outcome *out)
{
    memset(out, 0, sizeof *out);
    out->winner = -1;
    if (n_cand > FINAL_PICK_MAX_COUNT)
        n_cand = FINAL_PICK_MAX_COUNT;
    for (int c = 0; c < n_cand; c++) {
        score(c, samples, n_s, rounds, &out->scores[c]);
        if (!out->scores[c].qualified)
            continue;
        int w = out->winner;
        /* Candidates come fastest-first from the search: on equal medians the earlier index
         * (the better search rank) stays. */
        if (w < 0 || out->scores[c].median_ms < out->scores[w].median_ms ||
            (out->scores[c].median_ms == out->scores[w].median_ms &&
             ranks_before(cands[c].search_ms, cands[c].search_seq, cands[w].search_ms,
                          cands[w].search_seq)))
            out->winner = c;
    }
    return out->winner;
}

static json_t *number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *final_pick_json(const final_candidate *cands, int n_cand, const final_sample *samples,
                        int n_s, int rounds, const final_outcome *o)
{
    json_t *list = json_array();
    if (!list)
        return NULL;
    for (int c = 0; c < n_cand && c < FINAL_PICK_MAX_COUNT; c++) {
        const final_score *s = &o->scores[c];
        json_t *times = json_array(), *statuses = json_array();
        for (int r = 1; r <= rounds && times && statuses; r++) {
            const final_sample *x = NULL;
            for (int i = 0; i < n_s && !x; i++)
                if (samples[i].candidate == c && samples[i].round == r)
                    x = &samples[i];
            json_array_append_new(times, x && x->status == TRIAL_OK ? number_or_null(x->time_ms)
                                                                    : json_null());
            json_array_append_new(statuses,
                                  x ? json_string(trial_status_name(x->status)) : json_null());
        }
        double spread =
            s->ok > 0 && s->median_ms > 0 ? (s->max_ms - s->min_ms) / s->median_ms : NAN;
        json_t *one = json_pack(
            "{s:I,s:I,s:o,s:o*,s:o*,s:i,s:o,s:o,s:o,s:o,s:b}", "config_id",
            (json_int_t)cands[c].cid, "search_trial_id", (json_int_t)cands[c].search_trial_id,
            "search_ms", number_or_null(cands[c].search_ms), "times_ms", times, "statuses",
            statuses, "ok", s->ok, "median_ms", number_or_null(s->median_ms), "min_ms",
            number_or_null(s->min_ms), "max_ms", number_or_null(s->max_ms), "spread",
            number_or_null(spread), "qualified", s->qualified);
        if (!one || json_array_append_new(list, one) < 0) {
            json_decref(list);
            return NULL;
        }
    }
    int w = o->winner;
    return json_pack("{s:i,s:o,s:o,s:o,s:o}", "rounds", rounds, "candidates", list, "winner",
                     w >= 0 ? json_integer(w) : json_null(), "winner_trial_id",
                     w >= 0 ? json_integer((json_int_t)o->scores[w].median_trial_id) : json_null(),
                     "winner_config_id",
                     w >= 0 ? json_integer((json_int_t)cands[w].cid) : json_null());
}
