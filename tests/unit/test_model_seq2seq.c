/* Unit tests of model/seq2seq: the gradient of the whole model (encoder, attention, decoder,
 * masked output) against central differences on a tiny instance; learning a toy mapping (the best
 * values are a function of one token's feature) to >= 95% held-out accuracy; determinism for a
 * seed; serialisation round trip (identical log-probabilities) and refusal of bad buffers; the
 * bounds; and learning at the sizes (gemm: 8 parameters, 40 problems x 8 examples, hidden
 * 64, default epochs): the training loss falls and the decoded best configurations beat the
 * most-frequent-value baseline (the training time is printed, never asserted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/rng.h"
#include "model/beam.h"
#include "model/seq2seq.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rel_err(double a, double b)
{
    double den = fmax(fabs(a), fabs(b));
    return den < 1e-6 ? fabs(a - b) : fabs(a - b) / den;
}

static void gradient_matches_finite_differences(void **state)
{
    (void)state;
    enum { D = 3, P = 3, MAXT = 4 };
    const int nv[P] = {2, 3, 4};
    seq2seq_hyper h = {.hidden = 5};
    kt_error err;
    seq2seq *m = seq2seq_new(D, P, nv, &h, 17, &err);
    assert_non_null(m);
    kt_rng rng;
    kt_rng_seed(&rng, 5);
    /* Larger weights than the initialisation, so every path carries gradient. */
    size_t n_w = seq2seq_num_weights(m);
    for (size_t i = 0; i < n_w; i++)
        *seq2seq_weight(m, i) = 0.5 * kt_rng_normal(&rng);
    double tokens[3][MAXT * D];
    int targets[3][P] = {{1, 2, 3}, {0, 0, 1}, {1, 1, 0}};
    const int n_tok[3] = {1, 2, 4};
    const double weights[3] = {1.0, 0.5, 0.25};
    seq2seq_example ex[3];
    for (int e = 0; e < 3; e++) {
        for (int i = 0; i < MAXT * D; i++)
            tokens[e][i] = kt_rng_normal(&rng);
        ex[e] = (seq2seq_example){tokens[e], n_tok[e], targets[e], weights[e]};
    }
    double *grad = malloc(n_w * sizeof *grad), loss;
    assert_non_null(grad);
    assert_int_equal(seq2seq_loss(m, ex, 3, &loss, grad, &err), 0);
    assert_true(loss > 0);
    const double eps = 1e-5;
    double worst = 0;
    size_t nonzero = 0;
    for (size_t i = 0; i < n_w; i++) {
        double *w = seq2seq_weight(m, i), keep = *w, lp, lm;
        *w = keep + eps;
        assert_int_equal(seq2seq_loss(m, ex, 3, &lp, NULL, &err), 0);
        *w = keep - eps;
        assert_int_equal(seq2seq_loss(m, ex, 3, &lm, NULL, &err), 0);
        *w = keep;
        double num = (lp - lm) / (2 * eps), e = rel_err(grad[i], num);
        if (e >= 1e-4)
            fail_msg("weight %zu of %zu: backprop %.10g, finite differences %.10g", i, n_w, grad[i],
                     num);
        worst = e > worst ? e : worst;
        nonzero += fabs(num) > 1e-8;
    }
    printf("seq2seq gradient check: %zu weights (%zu with gradient), worst relative error %.2e\n",
           n_w, nonzero, worst);
    assert_true(nonzero > n_w / 2);
    free(grad);
    seq2seq_free(m);
}

/* Toy problems: 3 tokens [is0, is1, is2, level/3] with levels 0..3; the best values are
 * p0 = level of token 1, p1 = (level of token 1 + level of token 2) % 3. */
typedef struct toy {
    double tokens[3 * 4];
    int target[2];
} toy;

static void toy_make(toy *t, int l0, int l1, int l2)
{
    const int lv[3] = {l0, l1, l2};
    memset(t->tokens, 0, sizeof t->tokens);
    for (int i = 0; i < 3; i++) {
        t->tokens[i * 4 + i] = 1.0;
        t->tokens[i * 4 + 3] = lv[i] / 3.0;
    }
    t->target[0] = l1;
    t->target[1] = (l1 + l2) % 3;
}

static int toy_held_out(int c)
{
    return (c / 16 + (c / 4) % 4 + c % 4) % 4 == 0;
}

static int argmax(const double *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        best = v[i] > v[best] ? i : best;
    return best;
}

/* The beam's scorer over a model and one problem's tokens. */
typedef struct problem_ctx {
    seq2seq *m;
    const double *tokens;
    int n_tokens;
} problem_ctx;

static int model_scorer(void *ctx, const int *prefix, int len, double *logp)
{
    problem_ctx *p = ctx;
    return seq2seq_next_logp(p->m, p->tokens, p->n_tokens, prefix, len, logp);
}

static void learns_a_toy_mapping(void **state)
{
    (void)state;
    const int nv[2] = {4, 3};
    toy all[64];
    for (int c = 0; c < 64; c++)
        toy_make(&all[c], c / 16, (c / 4) % 4, c % 4);
    /* Train on 48 combinations, hold out the 16 with l0 + l1 + l2 = 0 mod 4 (every pair of
     * levels of tokens 1 and 2 is still seen in training, with other distractors l0). */
    seq2seq_example train[48];
    int n_train = 0;
    for (int c = 0; c < 64; c++)
        if (!toy_held_out(c))
            train[n_train++] = (seq2seq_example){all[c].tokens, 3, all[c].target, 1.0};
    seq2seq_hyper h = {.hidden = 16, .epochs = 150, .lr = 0.01, .batch = 8};
    kt_error err;
    seq2seq *m = seq2seq_new(4, 2, nv, &h, 3, &err);
    assert_non_null(m);
    double t0 = kt_clock_s();
    assert_int_equal(seq2seq_train(m, train, n_train, &err), 0);
    double secs = kt_clock_s() - t0;
    int correct = 0, total = 0, perfect = 0;
    double logp[4];
    for (int c = 0; c < 64; c++) {
        if (!toy_held_out(c))
            continue;
        int pred[2];
        assert_int_equal(seq2seq_next_logp(m, all[c].tokens, 3, NULL, 0, logp), 0);
        pred[0] = argmax(logp, 4);
        assert_int_equal(seq2seq_next_logp(m, all[c].tokens, 3, pred, 1, logp), 0);
        pred[1] = argmax(logp, 3);
        correct += (pred[0] == all[c].target[0]) + (pred[1] == all[c].target[1]);
        perfect += pred[0] == all[c].target[0] && pred[1] == all[c].target[1];
        total += 2;
    }
    double acc = (double)correct / total;
    printf("toy mapping: held-out per-parameter accuracy %.3f, perfect %d/16, trained in %.2f s\n",
           acc, perfect, secs);
    assert_true(acc >= 0.95);

    /* The constrained beam over the trained model: a restriction that forbids some of the best
     * answers (p1 != 0 when p0 is 2 or 3), so every result is valid and the top one is the best
     * valid answer (width 4 keeps every p0, so the beam is exhaustive here); the model is
     * confident, so where greedy's answer is valid it is that best one. */
    json_error_t je;
    json_t *params = json_loads("[{\"name\":\"p0\",\"values\":[0,1,2,3]},"
                                "{\"name\":\"p1\",\"values\":[0,1,2]}]",
                                0, &je);
    json_t *restr = json_loads("[\"p0 < 2 or p1 != 0\"]", 0, &je);
    space *sp = space_new(params, restr, NULL, NULL, &err);
    assert_non_null(sp);
    int blocked = 0;
    for (int c = 0; c < 64; c++) {
        problem_ctx pc = {m, all[c].tokens, 3};
        int out[5 * 2], greedy[2];
        double score[5];
        int n = beam_search(2, nv, model_scorer, &pc, BEAM_CONSTRAINED, 4, sp, 5, out, score);
        assert_int_equal(n, 5);
        for (int i = 0; i < n; i++) {
            config_id id;
            assert_int_equal(space_encode(sp, out + 2 * i, &id), 0);
        }
        assert_int_equal(
            beam_search(2, nv, model_scorer, &pc, BEAM_GREEDY, 1, NULL, 1, greedy, NULL), 1);
        config_id id;
        if (space_encode(sp, greedy, &id) == 0)
            assert_memory_equal(out, greedy, sizeof greedy);
        else
            blocked++;
    }
    printf("constrained beam on the toy model: %d of 64 greedy answers invalid, every beam result "
           "valid\n",
           blocked);
    assert_true(blocked > 0);
    space_free(sp);
    json_decref(params);
    json_decref(restr);
    seq2seq_free(m);
}

static void deterministic_for_a_seed(void **state)
{
    (void)state;
    const int nv[2] = {4, 3};
    toy all[8];
    seq2seq_example ex[8];
    for (int c = 0; c < 8; c++) {
        toy_make(&all[c], c % 4, c / 2, (c * 3) % 4);
        ex[c] = (seq2seq_example){all[c].tokens, 3, all[c].target, c == 0 ? 1.0 : 0.5};
    }
    seq2seq_hyper h = {.hidden = 8, .epochs = 5, .batch = 3};
    kt_error err;
    seq2seq *a = seq2seq_new(4, 2, nv, &h, 9, &err), *b = seq2seq_new(4, 2, nv, &h, 9, &err);
    seq2seq *c = seq2seq_new(4, 2, nv, &h, 10, &err);
    assert_true(a && b && c);
    assert_int_equal(seq2seq_train(a, ex, 8, &err), 0);
    assert_int_equal(seq2seq_train(b, ex, 8, &err), 0);
    assert_int_equal(seq2seq_train(c, ex, 8, &err), 0);
    size_t n_w = seq2seq_num_weights(a), differ = 0;
    for (size_t i = 0; i < n_w; i++) {
        assert_true(*seq2seq_weight(a, i) == *seq2seq_weight(b, i));
        differ += *seq2seq_weight(a, i) != *seq2seq_weight(c, i);
    }
    assert_true(differ > n_w / 2);
    seq2seq_free(a);
    seq2seq_free(b);
    seq2seq_free(c);
}

static void save_load_round_trip(void **state)
{
    (void)state;
    const int nv[3] = {3, 2, 5};
    toy t;
    toy_make(&t, 1, 2, 3);
    int target[3] = {2, 1, 4};
    seq2seq_example ex = {t.tokens, 3, target, 1.0};
    seq2seq_hyper h = {.hidden = 6, .epochs = 3};
    kt_error err;
    seq2seq *m = seq2seq_new(4, 3, nv, &h, 21, &err);
    assert_non_null(m);
    assert_int_equal(seq2seq_train(m, &ex, 1, &err), 0);
    strbuf b;
    strbuf_init(&b, 1 << 24);
    strbuf_append(&b, "xyz", 3); /* a header before the model: load starts at *pos */
    assert_int_equal(seq2seq_save(m, &b, &err), 0);
    assert_int_equal(seq2seq_save(m, &b, &err), 0); /* twice, back to back */
    const unsigned char *buf = (const unsigned char *)b.data;
    size_t pos = 3;
    seq2seq *l = seq2seq_load(buf, b.len, &pos, &err);
    assert_non_null(l);
    size_t one = pos - 3;
    seq2seq *l2 = seq2seq_load(buf, b.len, &pos, &err);
    assert_non_null(l2);
    assert_int_equal(pos, b.len);
    assert_int_equal(pos - 3, 2 * one);
    assert_int_equal(seq2seq_num_weights(l), seq2seq_num_weights(m));
    seq2seq_hyper hl = seq2seq_get_hyper(l);
    assert_int_equal(hl.hidden, 6);
    assert_int_equal(hl.epochs, 3);
    assert_int_equal(hl.batch, 16);
    assert_true(hl.lr == 0.003 && hl.l2 == 1e-5);
    for (int len = 0; len < 3; len++) {
        double a[5], c[5], d[5];
        assert_int_equal(seq2seq_next_logp(m, t.tokens, 3, target, len, a), 0);
        assert_int_equal(seq2seq_next_logp(l, t.tokens, 3, target, len, c), 0);
        assert_int_equal(seq2seq_next_logp(l2, t.tokens, 3, target, len, d), 0);
        assert_memory_equal(a, c, sizeof(double) * (size_t)nv[len]);
        assert_memory_equal(a, d, sizeof(double) * (size_t)nv[len]);
    }
    /* Every truncation is refused, and so are a wrong magic and a corrupted size. */
    for (size_t cut = 3; cut < 3 + one; cut += 1 + cut / 7) {
        pos = 3;
        assert_null(seq2seq_load(buf, cut, &pos, &err));
        assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
        assert_int_equal(pos, 3);
    }
    pos = 0;
    assert_null(seq2seq_load(buf, b.len, &pos, &err));
    unsigned char *copy = malloc(b.len);
    memcpy(copy, buf, b.len);
    copy[3 + 12] ^= 0x40; /* n_params */
    pos = 3;
    assert_null(seq2seq_load(copy, b.len, &pos, &err));
    memcpy(copy, buf, b.len);
    copy[3 + 4] = 9; /* format */
    pos = 3;
    assert_null(seq2seq_load(copy, b.len, &pos, &err));
    assert_non_null(strstr(err.message, "format 9"));
    /* Every single-byte corruption of the first model either loads or is refused cleanly. */
    int refused = 0, loaded = 0;
    for (size_t at = 3; at < 3 + one; at += at < 3 + 128 ? 1 : 97) {
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(copy, buf, b.len);
            copy[at] ^= (unsigned char)(1u << bit);
            pos = 3;
            seq2seq *c = seq2seq_load(copy, 3 + one, &pos, &err);
            if (c) {
                loaded++;
                assert_int_equal(pos, 3 + one);
                seq2seq_free(c);
            } else {
                refused++;
                assert_true(err.code == KT_ERR_BAD_REQUEST || err.code == KT_ERR_NO_MEMORY);
            }
        }
    }
    assert_true(refused > 0 && loaded > 0);
    free(copy);
    strbuf_release(&b);
    seq2seq_free(l2);
    seq2seq_free(l);
    seq2seq_free(m);
}

static void bounds_and_bad_examples(void **state)
{
    (void)state;
    const int nv[2] = {2, 3}, zero[2] = {2, 0};
    kt_error err;
    seq2seq_hyper h = {.hidden = -1};
    assert_null(seq2seq_new(2, 2, nv, &h, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    h = (seq2seq_hyper){.hidden = SEQ2SEQ_MAX_HIDDEN + 1};
    assert_null(seq2seq_new(2, 2, nv, &h, 1, &err));
    h = (seq2seq_hyper){.lr = 2};
    assert_null(seq2seq_new(2, 2, nv, &h, 1, &err));
    h = (seq2seq_hyper){.l2 = NAN};
    assert_null(seq2seq_new(2, 2, nv, &h, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    assert_null(seq2seq_new(0, 2, nv, NULL, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_null(seq2seq_new(2, 0, nv, NULL, 1, &err));
    assert_null(seq2seq_new(2, 2, zero, NULL, 1, &err));
    seq2seq *m = seq2seq_new(2, 2, nv, NULL, 1, &err);
    assert_non_null(m);
    assert_int_equal(seq2seq_get_hyper(m).hidden, 64);
    double tok[4] = {1, 2, 3, 4}, bad_tok[2] = {1, INFINITY}, logp[3];
    int tgt[2] = {1, 2}, bad_tgt[2] = {1, 3};
    seq2seq_example ex = {tok, 2, tgt, 1.0};
    assert_int_equal(seq2seq_train(m, &ex, 0, &err), -1);
    seq2seq_example bad = ex;
    bad.n_tokens = 0;
    assert_int_equal(seq2seq_train(m, &bad, 1, &err), -1);
    bad = ex;
    bad.tokens = bad_tok;
    bad.n_tokens = 1;
    assert_int_equal(seq2seq_train(m, &bad, 1, &err), -1);
    bad = ex;
    bad.target = bad_tgt;
    assert_int_equal(seq2seq_train(m, &bad, 1, &err), -1);
    assert_non_null(strstr(err.message, "parameter 1"));
    bad = ex;
    bad.weight = 0;
    assert_int_equal(seq2seq_train(m, &bad, 1, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_int_equal(seq2seq_next_logp(m, tok, 2, tgt, 2, logp), -1);
    assert_int_equal(seq2seq_next_logp(m, tok, 2, tgt, -1, logp), -1);
    assert_int_equal(seq2seq_next_logp(m, tok, 0, tgt, 0, logp), -1);
    assert_int_equal(seq2seq_next_logp(m, tok, 2, bad_tgt, 1, logp), 0); /* prefix[0] = 1 ok */
    bad_tgt[0] = 2;
    assert_int_equal(seq2seq_next_logp(m, tok, 2, bad_tgt, 1, logp), -1);
    /* Log-probabilities of a slice sum to 1. */
    assert_int_equal(seq2seq_next_logp(m, tok, 2, tgt, 1, logp), 0);
    assert_true(fabs(exp(logp[0]) + exp(logp[1]) + exp(logp[2]) - 1.0) < 1e-12);
    seq2seq_free(m);
    seq2seq_free(NULL);
}

/* The sizes: gemm has 8 parameters of <= 9 values; ~40 problems of up to 8 examples; 3-7
 * problem arguments as tokens. Default hyper-parameters (hidden 64, 300 epochs). The loss is the
 * weighted one seq2seq_train minimises, on the training set before and after. */
static void learns_at_gemm_sizes(void **state)
{
    (void)state;
    enum { P = 8, NPROB = 40, PER = 8, NTOK = 4, D = 8 };
    const int nv[P] = {9, 9, 8, 6, 4, 4, 3, 2};
    static double tokens[NPROB][NTOK * D];
    static int targets[NPROB * PER][P];
    static seq2seq_example ex[NPROB * PER];
    kt_rng rng;
    kt_rng_seed(&rng, 77);
    for (int p = 0; p < NPROB; p++) {
        for (int i = 0; i < NTOK * D; i++)
            tokens[p][i] = (i % D == i / D) ? 1.0 : kt_rng_normal(&rng);
        for (int e = 0; e < PER; e++) {
            int *t = targets[p * PER + e];
            for (int q = 0; q < P; q++) /* the best depends on the problem; next-best ones vary */
                t[q] = e == 0 || kt_rng_uniform(&rng) < 0.7
                           ? (int)(fabs(tokens[p][D + q % D]) * 3.0) % nv[q]
                           : (int)kt_rng_below(&rng, (uint64_t)nv[q]);
            ex[p * PER + e] = (seq2seq_example){tokens[p], NTOK, t, pow(0.5, e)};
        }
    }
    kt_error err;
    /* KT_SEQ2SEQ_EPOCHS caps the epochs (make test: 40; unset: the default 300, as the service
     * trains): the learning checks below hold with a wide margin from 30 (loss 1022 -> 155,
     * accuracy 0.997 against 0.500 here). */
    seq2seq_hyper h = {0};
    const char *cap = getenv("KT_SEQ2SEQ_EPOCHS");
    if (cap && strtol(cap, NULL, 10) > 0)
        h.epochs = (int)strtol(cap, NULL, 10);
    seq2seq *m = seq2seq_new(D, P, nv, &h, 1, &err);
    assert_non_null(m);
    double loss0, loss1;
    assert_int_equal(seq2seq_loss(m, ex, NPROB * PER, &loss0, NULL, &err), 0);
    double t0 = kt_clock_s(), c0 = cpu_s();
    assert_int_equal(seq2seq_train(m, ex, NPROB * PER, &err), 0);
    double secs = kt_clock_s() - t0, cpu = cpu_s() - c0;
    assert_int_equal(seq2seq_loss(m, ex, NPROB * PER, &loss1, NULL, &err), 0);
    /* The baseline: each parameter's most frequent best value, whatever the problem. */
    int baseline = 0;
    for (int q = 0; q < P; q++) {
        int count[9] = {0}, most = 0;
        for (int p = 0; p < NPROB; p++)
            count[targets[p * PER][q]]++;
        for (int v = 0; v < nv[q]; v++)
            most = count[v] > most ? count[v] : most;
        baseline += most;
    }
    /* Training-set fit of the best configurations, greedy. */
    int correct = 0;
    double logp[9];
    for (int p = 0; p < NPROB; p++) {
        int pred[P];
        for (int q = 0; q < P; q++) {
            assert_int_equal(seq2seq_next_logp(m, tokens[p], NTOK, pred, q, logp), 0);
            pred[q] = argmax(logp, nv[q]);
            correct += pred[q] == targets[p * PER][q];
        }
    }
    /* A constrained-free beam of width 32, top 10, for one problem: its cost. */
    problem_ctx pc = {m, tokens[0], NTOK};
    int out[10 * P];
    double score[10];
    double t1 = kt_clock_s();
    assert_int_equal(beam_search(P, nv, model_scorer, &pc, BEAM_FREE, 32, NULL, 10, out, score),
                     10);
    double beam_ms = (kt_clock_s() - t1) * 1e3;
    double acc = (double)correct / (NPROB * P), base = (double)baseline / (NPROB * P);
    printf("gemm sizes (%d examples, hidden 64, at most %d epochs): %d epochs in %.2f s (%.2f s "
           "CPU), loss %.3f -> %.3f, best-config training accuracy %.3f (most frequent value "
           "%.3f); beam width 32 top 10 in %.1f ms\n",
           NPROB * PER, h.epochs ? h.epochs : 300, seq2seq_epochs_run(m), secs, cpu, loss0, loss1,
           acc, base, beam_ms);
    assert_true(seq2seq_epochs_run(m) >= 1 && seq2seq_epochs_run(m) <= 300);
    /* It learns: the loss falls by half at least, and the best configurations it decodes beat
     * the problem-blind baseline clearly. */
    assert_true(loss1 < 0.5 * loss0);
    assert_true(acc > base + 0.2);
    seq2seq_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradient_matches_finite_differences),
        cmocka_unit_test(learns_a_toy_mapping),
        cmocka_unit_test(deterministic_for_a_seed),
        cmocka_unit_test(save_load_round_trip),
        cmocka_unit_test(bounds_and_bad_examples),
        cmocka_unit_test(learns_at_gemm_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
