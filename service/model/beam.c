/* model/beam — the beam search of beam.h: per step, every surviving prefix is scored once, its
 * extensions (filtered by feasibility in constrained mode) are ranked together, and the best ones
 * become the next step's prefixes. */
#include "model/beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct beam_cand {
    double score;
    int beam, value; /* the prefix it extends, and the value appended */
} beam_cand;

/* Best first; ties: earlier beam, then lower value (candidates are generated in that order). */
static int cand_cmp(const void *pa, const void *pb)
{
    const beam_cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->beam != b->beam)
        return a->beam < b->beam ? -1 : 1;
    return (a->value > b->value) - (a->value < b->value);
}

static int args_ok(int n_params, const int *n_values, beam_scorer scorer, beam_mode mode, int width,
                   const space *sp, int k, const int *out)
{
    if (n_params < 1 || n_params > BEAM_MAX_PARAMS || !n_values || !scorer || !out || k < 1 ||
        k > BEAM_MAX_WIDTH)
        return 0;
    if (mode != BEAM_GREEDY && mode != BEAM_FREE && mode != BEAM_CONSTRAINED)
        return 0;
    if (mode != BEAM_GREEDY && (width < 1 || width > BEAM_MAX_WIDTH))
        return 0;
    for (int p = 0; p < n_params; p++)
        if (n_values[p] < 1 || n_values[p] > BEAM_MAX_VALUES)
            return 0;
    if (mode == BEAM_CONSTRAINED) {
        if (!sp || space_num_params(sp) != n_params)
            return 0;
        for (int p = 0; p < n_params; p++)
            if (space_param_num_values(sp, p) != n_values[p])
                return 0;
    }
    return 1;
}

int beam_search(int n_params, const int *n_values, beam_scorer scorer, void *ctx, beam_mode mode,
                int width, const space *sp, int k, int *out, double *score)
{
    int ret = -1;
    int *cur = NULL, *next = NULL, *seq = NULL;
    double *cur_score = NULL, *next_score = NULL, *logp = NULL;
    beam_cand *cand = NULL;

    if (!args_ok(n_params, n_values, scorer, mode, width, sp, k, out))
        goto out;
    if (mode == BEAM_GREEDY)
        width = 1;
    int max_v = 0;
    for (int p = 0; p < n_params; p++)
        max_v = n_values[p] > max_v ? n_values[p] : max_v;
    size_t rows = (size_t)(width > k ? width : k), P = (size_t)n_params;
    cur = malloc(rows * P * sizeof *cur);
    next = malloc(rows * P * sizeof *next);
    seq = malloc(P * sizeof *seq);
    cur_score = malloc(rows * sizeof *cur_score);
    next_score = malloc(rows * sizeof *next_score);
    logp = malloc((size_t)max_v * sizeof *logp);
    cand = malloc(rows * (size_t)max_v * sizeof *cand);
    if (!cur || !next || !seq || !cur_score || !next_score || !logp || !cand)
        goto out;

    int n_beams = 1; /* the empty prefix */
    cur_score[0] = 0.0;
    if (mode == BEAM_CONSTRAINED && !space_prefix_feasible(sp, NULL, 0))
        n_beams = 0;
    for (int len = 0; len < n_params && n_beams > 0; len++) {
        size_t n_cand = 0;
        for (int b = 0; b < n_beams; b++) {
            const int *prefix = cur + (size_t)b * P;
            if (scorer(ctx, prefix, len, logp) < 0)
                goto out;
            memcpy(seq, prefix, (size_t)len * sizeof *seq);
            for (int v = 0; v < n_values[len]; v++) {
                if (!isfinite(logp[v]))
                    continue;
                if (mode == BEAM_CONSTRAINED) {
                    seq[len] = v;
                    if (!space_prefix_feasible(sp, seq, len + 1))
                        continue;
                }
                cand[n_cand++] = (beam_cand){cur_score[b] + logp[v], b, v};
            }
        }
        qsort(cand, n_cand, sizeof *cand, cand_cmp);
        size_t keep = (size_t)(len == n_params - 1 ? (int)rows : width);
        if (n_cand < keep)
            keep = n_cand;
        for (size_t i = 0; i < keep; i++) {
            int *row = next + i * P;
            memcpy(row, cur + (size_t)cand[i].beam * P, (size_t)len * sizeof *row);
            row[len] = cand[i].value;
            next_score[i] = cand[i].score;
        }
        int *ti = cur;
        cur = next;
        next = ti;
        double *td = cur_score;
        cur_score = next_score;
        next_score = td;
        n_beams = (int)keep;
    }
    int n_out = n_beams < k ? n_beams : k;
    memcpy(out, cur, (size_t)n_out * P * sizeof *out);
    if (score)
        memcpy(score, cur_score, (size_t)n_out * sizeof *score);
    ret = n_out;
out:
    free(cand);
    free(logp);
    free(next_score);
    free(cur_score);
    free(seq);
    free(next);
    free(cur);
    return ret;
}
