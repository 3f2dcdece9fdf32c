/* search/gp — a Gaussian-process surrogate for discrete tuning spaces (product of per-parameter
 * Matern-5/2 kernels on value indices, profile marginal likelihood, blocked Cholesky on OpenBLAS).
 * See gp.h. */
#include "search/gp.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    LIE_ROOM = 64, /* capacity kept beyond a fit for gp_add */
    BLOCK = 48,    /* Cholesky block size */
    CHUNK = 128,   /* candidates predicted at a time */
};
#define ETA_MIN  1e-6
#define ARD_GAIN 0.5 /* log-likelihood gain a per-parameter change must bring */

static const double grid_ls[] = {0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2};
static const double grid_eta[] = {1e-4, 1e-2, 0.1, 0.4};
static const double ard_mult[] = {0.35, 2.8, INFINITY};
#define N_GRID_LS  ((int)(sizeof grid_ls / sizeof grid_ls[0]))
#define N_GRID_ETA ((int)(sizeof grid_eta / sizeof grid_eta[0]))
#define N_ARD      ((int)(sizeof ard_mult / sizeof ard_mult[0]))

struct gp {
    int np;
    int *nv;
    gp_kind *kind;
    int *toff;   /* np: first entry of each parameter's table in tab */
    double *tab; /* per parameter: correlation at index distance 0..nv-1 */
    int ntab;
    double *ls; /* np length-scales (INFINITY: the parameter does not matter) */
    double eta; /* nugget relative to s2 */
    double ym, ysd, s2;
    double loglik;
    int n, cap;
    int *x;        /* cap * np */
    int *xt;       /* np * cap: the same, parameter-major (vectorisable kernel rows) */
    double *ys;    /* cap standardised targets */
    double *L;     /* cap * cap, lower triangle, row-major, leading dimension cap */
    double *alpha; /* (R + eta I)^-1 ys */
    double *buf;   /* CHUNK * cap prediction scratch */
    /* Hyper-parameter search scratch (GP_HYPER_MAX points). */
    double *hk, *hy, *hw, *htab, *hls;
    unsigned short *hd; /* per pair j < i (row i at i (i - 1) / 2) and parameter: table index */
};

void gp_free(gp *g)
{
    if (!g)
        return;
    free(g->nv);
    free(g->kind);
    free(g->toff);
    free(g->tab);
    free(g->ls);
    free(g->x);
    free(g->xt);
    free(g->ys);
    free(g->L);
    free(g->alpha);
    free(g->buf);
    free(g->hk);
    free(g->hy);
    free(g->hw);
    free(g->htab);
    free(g->hls);
    free(g->hd);
    free(g);
}

static double m52(double r)
{
    if (isinf(r))
        return 0;
    double s = sqrt(5.0) * r;
    return (1 + s + s * s / 3) * exp(-s);
}

/* Correlation tables of length-scales ls into tab. */
static void fill_tables(const gp *g, const double *ls, double *tab)
{
    for (int p = 0; p < g->np; p++) {
        double *t = tab + g->toff[p];
        int nv = g->nv[p];
        for (int d = 0; d < nv; d++) {
            double dist =
                g->kind[p] == GP_CATEGORICAL ? (d > 0) : (nv > 1 ? (double)d / (nv - 1) : 0);
            t[d] = isinf(ls[p]) || d == 0 ? 1.0 : m52(dist / ls[p]);
        }
    }
}

gp *gp_new(int np, const int *nv, const gp_kind *kind, kt_error *err)
{
    gp *g = NULL;
    if (np < 1 || np > GP_MAX_PARAMS || !nv || !kind) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "gp: parameter count %d outside 1..%d", np,
                     GP_MAX_PARAMS);
        return NULL;
    }
    for (int p = 0; p < np; p++) {
        if (nv[p] < 1 || nv[p] > GP_MAX_VALUES ||
            (kind[p] != GP_ORDINAL && kind[p] != GP_CATEGORICAL)) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "gp: parameter %d has %d values (1..%d) or a bad kind", p, nv[p],
                         GP_MAX_VALUES);
            return NULL;
        }
    }
    g = calloc(1, sizeof *g);
    if (!g)
        goto oom;
    g->np = np;
    g->nv = malloc((size_t)np * sizeof *g->nv);
    g->kind = malloc((size_t)np * sizeof *g->kind);
    g->toff = malloc((size_t)np * sizeof *g->toff);
    g->ls = malloc((size_t)np * sizeof *g->ls);
    g->hls = malloc((size_t)np * sizeof *g->hls);
    if (!g->nv || !g->kind || !g->toff || !g->ls || !g->hls)
        goto oom;
    memcpy(g->nv, nv, (size_t)np * sizeof *nv);
    memcpy(g->kind, kind, (size_t)np * sizeof *kind);
    for (int p = 0; p < np; p++) {
        g->toff[p] = g->ntab;
        g->ntab += nv[p];
        g->ls[p] = 0.5;
    }
    g->tab = malloc((size_t)g->ntab * sizeof *g->tab);
    g->htab = malloc((size_t)g->ntab * sizeof *g->htab);
    if (!g->tab || !g->htab)
        goto oom;
    g->eta = 0.01;
    g->ym = 0;
    g->ysd = 1;
    g->s2 = 1;
    g->loglik = NAN;
    fill_tables(g, g->ls, g->tab);
    return g;
oom:
    gp_free(g);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

int gp_count(const gp *g)
{
    return g->n;
}

double gp_lengthscale(const gp *g, int p)
{
    return p >= 0 && p < g->np ? g->ls[p] : NAN;
}

double gp_eta(const gp *g)
{
    return g->eta;
}

double gp_loglik(const gp *g)
{
    return g->loglik;
}

/* r[j] = correlation of row a with stored point j, j < n (parameter-major: vectorisable). */
static void corr_row(const gp *g, const int *a, int n, double *restrict r)
{
    for (int j = 0; j < n; j++)
        r[j] = 1;
    for (int p = 0; p < g->np; p++) {
        const double *t = g->tab + g->toff[p];
        const int *restrict xp = g->xt + (size_t)p * g->cap;
        int v = a[p];
        if (g->nv[p] < 2)
            continue;
        for (int j = 0; j < n; j++) {
            int d = v - xp[j];
            r[j] *= t[d < 0 ? -d : d];
        }
    }
}

/* In-place Cholesky of the lower triangle of the n x n row-major a (leading dimension lda):
 * unblocked diagonal blocks, dtrsm panels, dsyrk trailing updates. -1 if not positive definite. */
static int cholesky(double *a, int n, int lda)
{
    for (int k0 = 0; k0 < n; k0 += BLOCK) {
        int kb = n - k0 < BLOCK ? n - k0 : BLOCK;
        for (int j = k0; j < k0 + kb; j++) {
            double *aj = a + (size_t)j * lda;
            double d = aj[j];
            for (int k = k0; k < j; k++)
                d -= aj[k] * aj[k];
            if (!(d > 0))
                return -1;
            d = sqrt(d);
            aj[j] = d;
            for (int i = j + 1; i < k0 + kb; i++) {
                double *ai = a + (size_t)i * lda;
                double s = ai[j];
                for (int k = k0; k < j; k++)
                    s -= ai[k] * aj[k];
                ai[j] = s / d;
            }
        }
        int rest = n - k0 - kb;
        if (rest <= 0)
            break;
        double *diag = a + (size_t)k0 * lda + k0;
        double *panel = a + (size_t)(k0 + kb) * lda + k0;
        cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, rest, kb, 1.0,
                    diag, lda, panel, lda);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, rest, kb, -1.0, panel, lda, 1.0,
                    a + (size_t)(k0 + kb) * lda + k0 + kb, lda);
    }
    return 0;
}

/* w = (L L^T)^-1 y for the leading n x n factor. */
static void chol_solve(const double *L, int n, int lda, const double *y, double *w)
{
    memcpy(w, y, (size_t)n * sizeof *w);
    cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, L, lda, w, 1);
    cblas_dtrsv(CblasRowMajor, CblasLower, CblasTrans, CblasNonUnit, n, L, lda, w, 1);
}

/* Profile log marginal likelihood of the m hyper-search points under length-scales ls and eta:
 * -m/2 log s2 - sum log diag L (constants dropped). -INFINITY if the factorisation fails. */
static double hyper_loglik(gp *g, int m, const double *ls, double eta)
{
    fill_tables(g, ls, g->htab);
    int np = g->np;
    for (int i = 0; i < m; i++) {
        double *ki = g->hk + (size_t)i * m;
        for (int j = 0; j < i; j++) {
            const unsigned short *d = g->hd + ((size_t)i * (i - 1) / 2 + j) * np;
            double r = 1;
            for (int p = 0; p < np; p++)
                r *= g->htab[g->toff[p] + d[p]];
            ki[j] = r;
        }
        ki[i] = 1 + eta;
    }
    if (cholesky(g->hk, m, m) < 0)
        return -INFINITY;
    chol_solve(g->hk, m, m, g->hy, g->hw);
    double q = 0, logdet = 0;
    for (int i = 0; i < m; i++) {
        q += g->hy[i] * g->hw[i];
        logdet += log(g->hk[(size_t)i * m + i]);
    }
    double s2 = q / m > 1e-300 ? q / m : 1e-300;
    return -0.5 * m * log(s2) - logdet;
}

/* Chooses ls and eta on at most GP_HYPER_MAX points evenly spaced over the n rows. */
static int hyper_search(gp *g, int n)
{
    int m = n < GP_HYPER_MAX ? n : GP_HYPER_MAX, np = g->np;
    if (m < 3)
        return 0;
    if (!g->hk) {
        size_t h = GP_HYPER_MAX;
        g->hk = malloc(h * h * sizeof *g->hk);
        g->hy = malloc(h * sizeof *g->hy);
        g->hw = malloc(h * sizeof *g->hw);
        g->hd = malloc(h * (h - 1) / 2 * (size_t)np * sizeof *g->hd);
        if (!g->hk || !g->hy || !g->hw || !g->hd)
            return -1;
    }
    double mean = 0, var = 0;
    for (int i = 0; i < m; i++) {
        int r = (int)((long long)i * n / m);
        mean += g->ys[r];
    }
    mean /= m;
    for (int i = 0; i < m; i++) {
        double d = g->ys[(long long)i * n / m] - mean;
        var += d * d;
    }
    double sd = var > 0 ? sqrt(var / m) : 1;
    for (int i = 0; i < m; i++) {
        const int *a = g->x + (size_t)((long long)i * n / m) * np;
        g->hy[i] = (g->ys[(long long)i * n / m] - mean) / sd;
        for (int j = 0; j < i; j++) {
            const int *b = g->x + (size_t)((long long)j * n / m) * np;
            unsigned short *d = g->hd + ((size_t)i * (i - 1) / 2 + j) * np;
            for (int p = 0; p < np; p++) {
                int e = a[p] - b[p];
                d[p] = (unsigned short)(e < 0 ? -e : e);
            }
        }
    }
    double best = -INFINITY, best_ls = g->ls[0], best_eta = g->eta;
    for (int a = 0; a < N_GRID_LS; a++) {
        for (int b = 0; b < N_GRID_ETA; b++) {
            for (int p = 0; p < np; p++)
                g->hls[p] = grid_ls[a];
            double l = hyper_loglik(g, m, g->hls, grid_eta[b]);
            if (l > best) {
                best = l;
                best_ls = grid_ls[a];
                best_eta = grid_eta[b];
            }
        }
    }
    if (!isfinite(best))
        return 0; /* keep the current hyper-parameters */
    double *ls = g->ls;
    for (int p = 0; p < np; p++)
        ls[p] = best_ls;
    g->eta = best_eta;
    /* ARD: one pass over the parameters, each tried at a few multiples of its length-scale. */
    for (int p = 0; p < np; p++) {
        if (g->nv[p] < 2)
            continue;
        double keep = ls[p], choice = keep, gain = best + ARD_GAIN;
        for (int k = 0; k < N_ARD; k++) {
            memcpy(g->hls, ls, (size_t)np * sizeof *ls);
            g->hls[p] = keep * ard_mult[k];
            double l = hyper_loglik(g, m, g->hls, g->eta);
            if (l > gain) {
                gain = l;
                choice = g->hls[p];
            }
        }
        if (choice != keep) {
            ls[p] = choice;
            best = gain - ARD_GAIN;
        }
    }
    for (int b = 0; b < N_GRID_ETA; b++) {
        double l = hyper_loglik(g, m, ls, grid_eta[b]);
        if (l > best) {
            best = l;
            g->eta = grid_eta[b];
        }
    }
    return 0;
}

/* Capacity for want points (L keeps its leading dimension = cap: rows are moved on growth). */
static int reserve(gp *g, int want)
{
    if (want <= g->cap)
        return 0;
    int cap = want + LIE_ROOM;
    if (cap > GP_MAX_TRAIN)
        cap = GP_MAX_TRAIN;
    if (cap < want)
        return -1;
    size_t c = (size_t)cap;
    int *x = realloc(g->x, c * (size_t)g->np * sizeof *x);
    if (!x)
        return -1;
    g->x = x;
    int *xt = malloc(c * (size_t)g->np * sizeof *xt);
    if (!xt)
        return -1;
    for (int p = 0; g->n > 0 && p < g->np; p++) /* nothing to keep before the first fit */
        memcpy(xt + (size_t)p * c, g->xt + (size_t)p * g->cap, (size_t)g->n * sizeof *xt);
    free(g->xt);
    g->xt = xt;
    double *ys = realloc(g->ys, c * sizeof *ys);
    if (!ys)
        return -1;
    g->ys = ys;
    double *alpha = realloc(g->alpha, c * sizeof *alpha);
    if (!alpha)
        return -1;
    g->alpha = alpha;
    double *buf = realloc(g->buf, (size_t)CHUNK * c * sizeof *buf);
    if (!buf)
        return -1;
    g->buf = buf;
    double *L = malloc(c * c * sizeof *L);
    if (!L)
        return -1;
    for (int i = 0; i < g->n; i++)
        memcpy(L + (size_t)i * c, g->L + (size_t)i * g->cap, (size_t)(i + 1) * sizeof *L);
    free(g->L);
    g->L = L;
    g->cap = cap;
    return 0;
}

/* Factorises R + eta I of the n stored points (raising eta if it is not positive definite). */
static int factor(gp *g)
{
    int n = g->n, lda = g->cap;
    for (int attempt = 0; attempt < 6; attempt++) {
        for (int i = 0; i < n; i++) {
            double *li = g->L + (size_t)i * lda;
            corr_row(g, g->x + (size_t)i * g->np, i, li);
            li[i] = 1 + g->eta;
        }
        if (cholesky(g->L, n, lda) == 0)
            return 0;
        g->eta = g->eta * 10 > ETA_MIN ? g->eta * 10 : ETA_MIN;
    }
    return -1;
}

int gp_fit(gp *g, const int *x, const double *y, int n, unsigned flags, kt_error *err)
{
    if (n < 1 || n > GP_MAX_TRAIN || !x || !y)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "gp: %d points outside 1..%d", n,
                            GP_MAX_TRAIN);
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i]))
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "gp: target %d is not finite", i);
        for (int p = 0; p < g->np; p++) {
            int v = x[(size_t)i * g->np + p];
            if (v < 0 || v >= g->nv[p])
                return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                    "gp: point %d has value index %d for parameter %d (0..%d)", i,
                                    v, p, g->nv[p] - 1);
        }
    }
    g->n = 0;
    if (reserve(g, n) < 0)
        goto oom;
    memcpy(g->x, x, (size_t)n * (size_t)g->np * sizeof *x);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < g->np; p++)
            g->xt[(size_t)p * g->cap + i] = x[(size_t)i * g->np + p];
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += y[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (y[i] - mean) * (y[i] - mean);
    g->ym = mean;
    g->ysd = var > 0 ? sqrt(var / n) : 1;
    for (int i = 0; i < n; i++)
        g->ys[i] = (y[i] - mean) / g->ysd;
    if ((flags & GP_FIT_HYPER) && hyper_search(g, n) < 0)
        goto oom;
    fill_tables(g, g->ls, g->tab);
    g->n = n;
    if (factor(g) < 0) {
        g->n = 0;
        return kt_error_set(err, KT_ERR_INTERNAL, "gp: the kernel matrix is not positive definite");
    }
    chol_solve(g->L, n, g->cap, g->ys, g->alpha);
    double q = 0, logdet = 0;
    for (int i = 0; i < n; i++) {
        q += g->ys[i] * g->alpha[i];
        logdet += log(g->L[(size_t)i * g->cap + i]);
    }
    g->s2 = q / n > 1e-12 ? q / n : 1e-12;
    g->loglik = (-0.5 * n * log(g->s2) - logdet - 0.5 * n) / n;
    return 0;
oom:
    g->n = 0;
    return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
}

int gp_add(gp *g, const int *x, double y)
{
    int n = g->n;
    if (n < 1 || n >= GP_MAX_TRAIN || !isfinite(y) || reserve(g, n + 1) < 0)
        return -1;
    for (int p = 0; p < g->np; p++)
        if (x[p] < 0 || x[p] >= g->nv[p])
            return -1;
    int lda = g->cap;
    double *row = g->L + (size_t)n * lda;
    corr_row(g, x, n, row);
    cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, g->L, lda, row, 1);
    double d2 = 1 + g->eta - cblas_ddot(n, row, 1, row, 1);
    double floor_ = g->eta * 1e-3 + 1e-12;
    row[n] = sqrt(d2 > floor_ ? d2 : floor_);
    memcpy(g->x + (size_t)n * g->np, x, (size_t)g->np * sizeof *x);
    for (int p = 0; p < g->np; p++)
        g->xt[(size_t)p * lda + n] = x[p];
    g->ys[n] = (y - g->ym) / g->ysd;
    g->n = n + 1;
    chol_solve(g->L, g->n, lda, g->ys, g->alpha);
    return 0;
}

void gp_truncate(gp *g, int n)
{
    if (n < 0 || n >= g->n)
        return;
    g->n = n;
    if (n > 0)
        chol_solve(g->L, n, g->cap, g->ys, g->alpha);
}

int gp_predict(gp *g, const int *x, int m, double *mean, double *var)
{
    int n = g->n, np = g->np;
    if (n == 0) {
        for (int i = 0; i < m; i++) {
            mean[i] = 0;
            if (var)
                var[i] = 1;
        }
        return 0;
    }
    for (int c0 = 0; c0 < m; c0 += CHUNK) {
        int mc = m - c0 < CHUNK ? m - c0 : CHUNK;
        for (int i = 0; i < mc; i++) {
            double *ri = g->buf + (size_t)i * n;
            corr_row(g, x + (size_t)(c0 + i) * np, n, ri);
            mean[c0 + i] = g->ym + g->ysd * cblas_ddot(n, ri, 1, g->alpha, 1);
        }
        if (!var)
            continue;
        cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, mc, n, 1.0,
                    g->L, g->cap, g->buf, n);
        for (int i = 0; i < mc; i++) {
            const double *vi = g->buf + (size_t)i * n;
            double v = 1 - cblas_ddot(n, vi, 1, vi, 1);
            v = v > 1e-12 ? v : 1e-12;
            var[c0 + i] = g->ysd * g->ysd * g->s2 * v;
        }
    }
    return 0;
}

double gp_ei(double mean, double var, double best)
{
    double sd = var > 0 ? sqrt(var) : 0;
    double imp = best - mean;
    if (sd < 1e-12)
        return imp > 0 ? imp : 0;
    double z = imp / sd;
    double cdf = 0.5 * erfc(-z / sqrt(2.0));
    double pdf = exp(-0.5 * z * z) / sqrt(2 * M_PI);
    double ei = imp * cdf + sd * pdf;
    return ei > 0 ? ei : 0;
}
