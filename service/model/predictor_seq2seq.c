/* model/predictor_seq2seq — seed 001's predictor behind the facade (predictor_impl.h): the
 * problem as a token sequence (problem_tokens.h: one token per argument), the seq2seq model
 * (model/seq2seq.h: GRU encoder, GRU decoder with dot attention, one parameter value per step),
 * trained on each problem's `top` fastest configurations (the i-th weighted next_weight^i; a
 * weight of 0 leaves the row out), and decoded with beam_search (model/beam.h) whose scorer is
 * seq2seq_next_logp: greedy, free or constrained by the space (predictor_predict's, so that every
 * candidate is valid). Serialised with seq2seq_save after the facade's meta line. */
#include "model/predictor_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/beam.h"
#include "model/problem_tokens.h"
#include "model/seq2seq.h"

typedef struct s2s_state {
    seq2seq *m;
    int dim;
    double tokens[PRED_MAX_FEATS *
                  (PRED_MAX_FEATS + PROBLEM_TOKEN_FEATURES)]; /* the decoded problem */
} s2s_state;

static void s2s_destroy(predictor *p)
{
    s2s_state *st = p->state;
    if (st) {
        seq2seq_free(st->m);
        free(st);
    }
    p->state = NULL;
}

static int s2s_train(predictor *p, const training_set *ts, uint64_t seed, kt_error *err)
{
    int *prob = NULL, *rank = NULL, n = pred_training_rows(p, ts, &prob, &rank), rc = -1, m = 0;
    int np_sets = training_set_num_problems(ts), dim = problem_tokens_dim(p->nf);
    double *tok =
        malloc((size_t)(np_sets ? np_sets : 1) * (size_t)p->nf * (size_t)dim * sizeof *tok);
    seq2seq_example *ex = malloc((size_t)(n > 0 ? n : 1) * sizeof *ex);
    s2s_state *st = calloc(1, sizeof *st);
    if (n < 0 || !tok || !ex || !st) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    st->dim = dim;
    for (int i = 0; i < np_sets; i++)
        problem_tokens(training_set_problem_args(ts, i), p->nf,
                       tok + (size_t)i * (size_t)p->nf * (size_t)dim);
    for (int i = 0; i < n; i++) {
        double w = pow(p->next_weight, rank[i]);
        if (!(w > 0))
            continue;
        ex[m].tokens = tok + (size_t)prob[i] * (size_t)p->nf * (size_t)dim;
        ex[m].n_tokens = p->nf;
        ex[m].target = training_set_trial(ts, prob[i], rank[i], NULL);
        ex[m++].weight = w;
    }
    seq2seq_hyper h = {.hidden = p->hidden, .epochs = p->epochs, .lr = p->lr};
    if (!(st->m = seq2seq_new(dim, p->np, p->nv, &h, seed, err)) ||
        seq2seq_train(st->m, ex, m, err) < 0)
        goto out;
    p->state = st;
    st = NULL;
    rc = 0;
out:
    if (st) {
        seq2seq_free(st->m);
        free(st);
    }
    free(prob);
    free(rank);
    free(tok);
    free(ex);
    return rc;
}

static int s2s_scorer(void *ctx, const int *prefix, int len, double *logp)
{
    predictor *p = ctx;
    s2s_state *st = p->state;
    return seq2seq_next_logp(st->m, st->tokens, p->nf, prefix, len, logp);
}

static int s2s_decode(predictor *p, const double *args, const space *sp, predict_mode mode,
                      int width, int k, int *rows, double *score, kt_error *err)
{
    s2s_state *st = p->state;
    problem_tokens(args, p->nf, st->tokens);
    beam_mode bm = mode == PREDICT_GREEDY ? BEAM_GREEDY
                   : mode == PREDICT_FREE ? BEAM_FREE
                                          : BEAM_CONSTRAINED;
    int n = beam_search(p->np, p->nv, s2s_scorer, p, bm, width, bm == BEAM_CONSTRAINED ? sp : NULL,
                        k, rows, score);
    if (n < 0)
        kt_error_set(err, KT_ERR_INTERNAL,
                     "seq2seq: beam search failed (out of memory or the "
                     "model refused a prefix)");
    return n;
}

static int s2s_save(const predictor *p, json_t *meta, strbuf *bin, kt_error *err)
{
    const s2s_state *st = p->state;
    if (json_object_set_new(meta, "token_dim", json_integer(st->dim)) != 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return seq2seq_save(st->m, bin, err);
}

static int s2s_load(predictor *p, const json_t *meta, const unsigned char *bin, size_t len,
                    kt_error *err)
{
    size_t pos = 0;
    s2s_state *st = calloc(1, sizeof *st);
    if (!st)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    p->state = st;
    st->dim = problem_tokens_dim(p->nf);
    if (json_integer_value(json_object_get(meta, "token_dim")) != st->dim)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq model: another token layout");
    if (!(st->m = seq2seq_load(bin, len, &pos, err)))
        return -1;
    if (seq2seq_token_dim(st->m) != st->dim || seq2seq_num_params(st->m) != p->np)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq model: sizes differ from its meta");
    return 0;
}

const pred_ops pred_seq2seq_ops = {"seq2seq", s2s_train, s2s_decode,
                                   s2s_save,  s2s_load,  s2s_destroy};
