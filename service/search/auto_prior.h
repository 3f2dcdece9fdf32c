/* search/auto_prior — internal to search/: the prior the `auto` strategy fits on a warm-start
 * history (searcher_set_history's prior; search/README.md, warm starts), and the small dense
 * solver that fit and auto's surrogate share.
 *
 * The prior: each source's log times standardised on their own (median, 1.4826 x MAD: another
 * GPU's times differ in scale), one ridge fit of them on auto's one-hot features (all sources
 * together), its adjusted R^2 on those sources, and the sources' best configurations. auto_prior
 * owns pw (auto_prior_free). */
#ifndef KT_SEARCH_AUTO_PRIOR_H
#define KT_SEARCH_AUTO_PRIOR_H

#include "search/searcher.h"

#define AUTO_PRIOR_TOP    32
#define AUTO_PRIOR_MIN_R2 0.05 /* below: the prior explains nothing of its sources, unused */

/* Writes the np feature indices (each < nf) of id into f; -1 when id does not decode. */
typedef int (*auto_prior_features)(void *ctx, config_id id, int *f);

typedef struct auto_prior {
    double *pw;   /* nf weights: prior(x) = the sum of pw over x's features */
    double r2;    /* adjusted R^2 of the fit on its own sources (0 when it explains nothing) */
    double beta0; /* a-priori coefficient of the prior in log-time units: r2 x the mean scale */
    config_id top[AUTO_PRIOR_TOP]; /* the sources' best observed configurations, best first */
    int n_top;
    int usable; /* r2 >= AUTO_PRIOR_MIN_R2 (n_top is 0 otherwise) */
} auto_prior;

/* Fits pr (zeroed first) on h's prior; np parameters (at most 256), nf features. 0, or -1 with
 * err (out of memory; pr left empty). */
int auto_prior_fit(auto_prior *pr, const searcher_history *h, int np, int nf,
                   auto_prior_features features, void *ctx, kt_error *err);
void auto_prior_free(auto_prior *pr);
/* prior(x) for x's features f (np of them); 0 when pr has no weights. */
double auto_prior_value(const auto_prior *pr, const int *f, int np);

/* Solves a x = b in place (b becomes x) for the symmetric positive definite m x m matrix a (row
 * stride m; its lower triangle is overwritten by the Cholesky factor; a pivot <= 1e-12 becomes
 * 1e-6). */
void auto_solve_spd(double *a, double *b, int m);

#endif
