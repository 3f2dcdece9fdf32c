/* search/auto_prior — internal to search/: the prior the `auto` strategy fits on a warm-start
 * history (searcher_set_history's prior; search/README.md, warm starts), and the small dense
 * solver that fit and auto's surrogate share.
 *
 * The prior: each source's log times standardised on their own (median, 1.4826 x MAD: another
 * GPU's times differ in scale), one ridge fit of them on auto's one-hot features (all sources
 * together), its adjusted R^2 on those sources, and the sources' best configurations. auto_prior
 * owns pw and the suggestions (auto_prior_free).
 *
 * The prior's weight (the measurements overrule it): every told result is passed to
 * auto_prior_observe with the prior's value for it; the agreement is Kendall's tau between the
 * prior values and the measured log times of the results so far (failures slowest). The weight
 * is the posterior probability that the prior transfers: prior odds AUTO_PRIOR_ODDS against a
 * prior that does not, the likelihood of tau under "it transfers" (tau ~ N(AUTO_PRIOR_TAU, v))
 * against "it does not" (tau ~ N(0, v)), v tau's variance under no association. A prior that the
 * results contradict (tau < 0) loses its weight within ~10 results, an unrelated one (tau ~ 0)
 * within a few tens; one they confirm (tau >= AUTO_PRIOR_TAU / 2) keeps it. Only the first
 * AUTO_PRIOR_AGREE_MAX results count: the weight is settled long before, and no memory is
 * allocated per result.
 *
 * Tested before it is used (issue 29, warm starts that never hurt): auto_prior_trusted is 1 only
 * once the results so far show the prior's ranking significantly right: at least
 * AUTO_PRIOR_TEST_MIN of them, tau above AUTO_PRIOR_TAU / 2 (the evidence favours "it transfers":
 * the weight above its starting value) and above AUTO_PRIOR_TEST_Z standard deviations of tau
 * under no association. Until then auto uses nothing of the prior (it searches exactly as cold),
 * so a history the first measurements contradict costs nothing. Call order: auto_prior_fit,
 * auto_prior_suggest, then auto_prior_observe per told result, auto_prior_weight and
 * auto_prior_trusted whenever the searcher needs them; auto_prior_free. */
#ifndef KT_SEARCH_AUTO_PRIOR_H
#define KT_SEARCH_AUTO_PRIOR_H

#include "search/searcher.h"

#define AUTO_PRIOR_TOP       32
#define AUTO_PRIOR_MIN_R2    0.05 /* below: the prior explains nothing of its sources, unused */
#define AUTO_PRIOR_AGREE_MAX 256  /* told results the agreement is measured on */
#define AUTO_PRIOR_TAU       0.35 /* Kendall's tau expected of a prior that transfers */
#define AUTO_PRIOR_ODDS      2.0  /* prior odds that a usable prior transfers (weight 2/3) */
#define AUTO_PRIOR_TRUST     0.5  /* weight above which suggestions alone are proposed */
#define AUTO_PRIOR_TEST_MIN  4    /* results before a prior can be trusted */
#define AUTO_PRIOR_TEST_Z    1.0  /* tau above this many standard deviations to trust a prior */
#define AUTO_PRIOR_CONFIRMED 0.9  /* weight above which the start proposes suggestions only */

/* Writes the np feature indices (each < nf) of id into f; -1 when id does not decode. */
typedef int (*auto_prior_features)(void *ctx, config_id id, int *f);

typedef struct auto_prior {
    double *pw;   /* nf weights: prior(x) = the sum of pw over x's features */
    double r2;    /* adjusted R^2 of the fit on its own sources (0 when it explains nothing) */
    double beta0; /* a-priori coefficient of the prior in log-time units: r2 x the mean scale */
    config_id top[AUTO_PRIOR_TOP]; /* the sources' best observed configurations, best first */
    int n_top;
    int usable; /* r2 >= AUTO_PRIOR_MIN_R2 (n_top is 0 otherwise) */
    /* Agreement with the told results (auto_prior_observe): their prior values and log times
     * (INFINITY: failed), and the sum of the concordance signs over their pairs. */
    double seen_p[AUTO_PRIOR_AGREE_MAX], seen_y[AUTO_PRIOR_AGREE_MAX];
    int n_seen;
    double concord;
    /* The warm start's suggestions (auto_prior_suggest): the history's first ids, then top (not
     * repeated); owned. */
    config_id *sugg;
    int n_sugg;
} auto_prior;

/* Fits pr (zeroed first) on h's prior; np parameters (at most 256), nf features. 0, or -1 with
 * err (out of memory; pr left empty). */
int auto_prior_fit(auto_prior *pr, const searcher_history *h, int np, int nf,
                   auto_prior_features features, void *ctx, kt_error *err);
void auto_prior_free(auto_prior *pr);
/* After auto_prior_fit (or alone, for a history of first ids only): the suggestions, first's n ids
 * then the prior's top. 0, or -1 with err (out of memory). */
int auto_prior_suggest(auto_prior *pr, const config_id *first, int n, kt_error *err);
/* prior(x) for x's features f (np of them); 0 when pr has no weights. */
double auto_prior_value(const auto_prior *pr, const int *f, int np);
/* One told result: id, p its prior value, y its log time (INFINITY for a failure). Without a
 * usable prior, a history of suggestions only is judged by them: p is -1 for a suggested id, 0
 * for any other. O(results + suggestions). */
void auto_prior_observe(auto_prior *pr, config_id id, double p, double y);
/* Kendall's tau (tau-a) of the observed results; 0 below 2 of them. */
double auto_prior_tau(const auto_prior *pr);
/* The prior's weight in [0, 1] (see above): AUTO_PRIOR_ODDS / (1 + AUTO_PRIOR_ODDS) before any
 * result; for suggestions without a usable prior, even odds (1/2: the suggestions must earn their
 * trust); 0 without a usable prior or suggestions. */
double auto_prior_weight(const auto_prior *pr);
/* 1 when the results so far confirm a usable prior (see above), else 0. */
int auto_prior_trusted(const auto_prior *pr);

/* Solves a x = b in place (b becomes x) for the symmetric positive definite m x m matrix a (row
 * stride m; its lower triangle is overwritten by the Cholesky factor; a pivot <= 1e-12 becomes
 * 1e-6). */
void auto_solve_spd(double *a, double *b, int m);

#endif
