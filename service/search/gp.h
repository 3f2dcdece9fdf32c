/* search/gp — a Gaussian-process surrogate for discrete tuning spaces: configurations are rows of
 * value indices (one per parameter, as space_decode writes them), targets are reals to minimise
 * (the strategies pass log times). Used by `bo` (search/bo.c); written to be reusable by any
 * strategy of search/.
 *
 * Kernel: a product of per-parameter kernels, k(a, b) = s2 * prod_p m52(d_p(a_p, b_p) / l_p), with
 * m52 the Matern-5/2 correlation, d_p = |i - j| / (values - 1) for an ordinal parameter (numbers:
 * the list order) and d_p = [i != j] for a categorical one (strings), so a categorical parameter is
 * an exponentiated Hamming distance. Each parameter's correlation depends only on |i - j| (or i !=
 * j), so it is a table of at most `values` entries: a kernel evaluation is np table reads and
 * multiplications, no exp.
 *
 * Targets are standardised (mean, deviation) inside; s2 is the profile-likelihood estimate; a
 * relative nugget eta (noise variance / s2) keeps the Cholesky factor well conditioned and lets
 * the fit smooth rough surfaces. Hyper-parameters (the length-scales l_p and eta) are chosen by
 * the profile marginal likelihood: a grid over one shared length-scale and eta, then one pass per
 * parameter over a few multiples of its own length-scale (ARD; "infinite" = the parameter does not
 * matter). The search runs on at most GP_HYPER_MAX points (evenly spaced over the rows).
 *
 * Cost: a fit is O(n^3 / 3) (blocked Cholesky on OpenBLAS), a hyper-parameter search about 40
 * likelihood evaluations on <= GP_HYPER_MAX points, gp_add O(n^2), gp_predict O(m n np + m n^2).
 *
 * Lifecycle: gp_new -> (gp_fit, gp_add / gp_truncate, gp_predict)* -> gp_free. Not thread-safe
 * (gp_predict uses scratch inside the gp); deterministic (no randomness). The gp owns everything
 * it allocates; every input array is copied or only read during the call. */
#ifndef KT_SEARCH_GP_H
#define KT_SEARCH_GP_H

#include "core/error.h"

typedef enum {
    GP_ORDINAL = 0, /* values in a meaningful order (numbers): distance by index */
    GP_CATEGORICAL, /* unordered values (strings): distance 0 or 1 */
} gp_kind;

enum {
    GP_MAX_PARAMS = 256,
    GP_MAX_VALUES = 65535,
    GP_MAX_TRAIN = 2048, /* points in a fit, lies (gp_add) included */
    GP_HYPER_MAX = 120,  /* points the hyper-parameter search uses at most */
};

/* gp_fit flags */
#define GP_FIT_HYPER 1u /* re-select the hyper-parameters first (else keep the current ones) */

typedef struct gp gp;

/* np parameters (1..GP_MAX_PARAMS), nv[p] values each (1..GP_MAX_VALUES), kind[p]. The arrays are
 * copied. NULL with err: KT_ERR_BAD_REQUEST for a size out of range, KT_ERR_NO_MEMORY. Starts with
 * length-scale 0.5 for every parameter and eta 0.01 (used until a fit with GP_FIT_HYPER). */
gp *gp_new(int np, const int *nv, const gp_kind *kind, kt_error *err);
void gp_free(gp *g);

/* Conditions on n observations: x holds n rows of np value indices (each within its list), y n
 * finite targets. n is 1..GP_MAX_TRAIN. Replaces what was fitted before (lies included). Returns 0,
 * or -1 with err: KT_ERR_BAD_REQUEST (n, an index or a target out of range: the gp is unchanged),
 * KT_ERR_NO_MEMORY (the gp is empty after it: gp_count 0). */
int gp_fit(gp *g, const int *x, const double *y, int n, unsigned flags, kt_error *err);
/* Conditions on one more point (a constant liar / kriging believer for batches) with the current
 * hyper-parameters and standardisation: O(n^2). Returns 0, or -1 when the gp holds no fit, is full
 * (GP_MAX_TRAIN) or out of memory (the gp is unchanged). */
int gp_add(gp *g, const int *x, double y);
/* Forgets the points after the first n (undoes gp_add calls); n >= gp_count is a no-op. */
void gp_truncate(gp *g, int n);
/* Points conditioned on (0 before the first fit). */
int gp_count(const gp *g);

/* Posterior mean and variance of the latent function (noise excluded) at m rows of x, in target
 * units; var may be NULL (mean only: O(m n np)). Without a fit: mean 0, variance 1. Returns 0, or
 * -1 when out of memory (mean and var unset). */
int gp_predict(gp *g, const int *x, int m, double *mean, double *var);

/* Expected improvement below best of a normal(mean, var) prediction (>= 0). */
double gp_ei(double mean, double var, double best);

/* The fitted hyper-parameters, for reports and tests: the length-scale of parameter p (INFINITY
 * when the parameter was found not to matter), eta, and the log marginal likelihood per point of
 * the last fit (NAN before one). */
double gp_lengthscale(const gp *g, int p);
double gp_eta(const gp *g);
double gp_loglik(const gp *g);

#endif
