/* search/auto_prior — auto's warm-start prior (see auto_prior.h). */
#include "search/auto_prior.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AUTO_PRIOR_LAMBDA 1.0 /* ridge penalty of the prior's fit */

typedef struct prior_row {
    double z; /* standardised log time */
    config_id id;
} prior_row;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_prior_row(const void *a, const void *b)
{
    const prior_row *x = a, *y = b;
    if (x->z != y->z)
        return x->z < y->z ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Median and scale (1.4826 x the median absolute deviation) of source src's log times into *med,
 * *scale (0 and 1 for a source without observations); buf has room for every prior observation.
 * Returns how many observations the source has. */
static int source_scale(const searcher_history *h, int src, double *buf, double *med, double *scale)
{
    int n = 0;
    for (int i = 0; i < h->n_prior; i++)
        if (h->prior_source[i] == src)
            buf[n++] = log(h->prior_ms[i]);
    *med = 0;
    *scale = 1;
    if (n == 0)
        return 0;
    qsort(buf, (size_t)n, sizeof *buf, cmp_double);
    *med = n % 2 ? buf[n / 2] : 0.5 * (buf[n / 2 - 1] + buf[n / 2]);
    for (int i = 0; i < n; i++)
        buf[i] = fabs(buf[i] - *med);
    qsort(buf, (size_t)n, sizeof *buf, cmp_double);
    double mad = n % 2 ? buf[n / 2] : 0.5 * (buf[n / 2 - 1] + buf[n / 2]);
    *scale = mad > 1e-9 ? 1.4826 * mad : 1;
    return n;
}

double auto_prior_value(const auto_prior *pr, const int *f, int np)
{
    double s = 0;
    for (int p = 0; pr->pw && p < np; p++)
        s += pr->pw[f[p]];
    return s;
}

/* The sign of a - b for log times (INFINITY, a failure, ties with INFINITY). */
static int y_sign(double a, double b)
{
    if (a == b)
        return 0;
    return a > b ? 1 : -1;
}

void auto_prior_observe(auto_prior *pr, config_id id, double p, double y)
{
    if ((!pr->usable && pr->n_sugg == 0) || pr->n_seen >= AUTO_PRIOR_AGREE_MAX || isnan(p) ||
        isnan(y))
        return;
    if (!pr->usable) {
        p = 0;
        for (int k = 0; k < pr->n_sugg && p == 0; k++)
            p = pr->sugg[k] == id ? -1 : 0;
    }
    for (int i = 0; i < pr->n_seen; i++) {
        int sp = p > pr->seen_p[i] ? 1 : p < pr->seen_p[i] ? -1 : 0;
        pr->concord += sp * y_sign(y, pr->seen_y[i]);
    }
    pr->seen_p[pr->n_seen] = p;
    pr->seen_y[pr->n_seen] = y;
    pr->n_seen++;
}

double auto_prior_tau(const auto_prior *pr)
{
    double n = pr->n_seen;
    return n >= 2 ? pr->concord / (0.5 * n * (n - 1)) : 0;
}

/* The variance of Kendall's tau over n results under no association. */
static double tau_variance(double n)
{
    return 2 * (2 * n + 5) / (9 * n * (n - 1));
}

int auto_prior_trusted(const auto_prior *pr)
{
    if (!pr->usable || pr->n_seen < AUTO_PRIOR_TEST_MIN)
        return 0;
    double tau = auto_prior_tau(pr);
    return tau > 0.5 * AUTO_PRIOR_TAU && tau > AUTO_PRIOR_TEST_Z * sqrt(tau_variance(pr->n_seen));
}

double auto_prior_weight(const auto_prior *pr)
{
    if (!pr->usable && pr->n_sugg == 0)
        return 0;
    double n = pr->n_seen, logodds = pr->usable ? log(AUTO_PRIOR_ODDS) : 0;
    if (n >= 2) {
        /* log N(tau; T, v) - log N(tau; 0, v) = (tau T - T^2 / 2) / v */
        double v = tau_variance(n);
        double t = AUTO_PRIOR_TAU;
        logodds += (auto_prior_tau(pr) * t - 0.5 * t * t) / v;
    }
    if (logodds > 40)
        return 1;
    return logodds < -40 ? 0 : 1 / (1 + exp(-logodds));
}

int auto_prior_suggest(auto_prior *pr, const config_id *first, int n, kt_error *err)
{
    free(pr->sugg);
    pr->n_sugg = 0;
    pr->sugg = malloc((size_t)(n + pr->n_top + 1) * sizeof *pr->sugg);
    if (!pr->sugg)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int i = 0; i < n + pr->n_top; i++) {
        config_id id = i < n ? first[i] : pr->top[i - n];
        int dup = 0;
        for (int k = 0; k < pr->n_sugg && !dup; k++)
            dup = pr->sugg[k] == id;
        if (!dup)
            pr->sugg[pr->n_sugg++] = id;
    }
    return 0;
}

void auto_prior_free(auto_prior *pr)
{
    free(pr->pw);
    free(pr->sugg);
    memset(pr, 0, sizeof *pr);
}

int auto_prior_fit(auto_prior *pr, const searcher_history *h, int np, int nf,
                   auto_prior_features features, void *ctx, kt_error *err)
{
    int rc = -1, n_src = 0, n = 0, used_src = 0, f[256];
    double *buf = NULL, *med = NULL, *scale = NULL, *a = NULL, *b = NULL, scale_sum = 0;
    prior_row *rows = NULL;

    memset(pr, 0, sizeof *pr);
    if (h->n_prior == 0 || np > 256 || np < 1 || nf < 1) {
        rc = 0;
        goto out;
    }
    for (int i = 0; i < h->n_prior; i++)
        n_src = h->prior_source[i] + 1 > n_src ? h->prior_source[i] + 1 : n_src;
    buf = malloc((size_t)h->n_prior * sizeof *buf);
    med = calloc((size_t)n_src, sizeof *med);
    scale = calloc((size_t)n_src, sizeof *scale);
    a = calloc((size_t)nf * nf, sizeof *a);
    b = calloc((size_t)nf, sizeof *b);
    rows = malloc((size_t)h->n_prior * sizeof *rows);
    pr->pw = calloc((size_t)nf, sizeof *pr->pw);
    if (!buf || !med || !scale || !a || !b || !rows || !pr->pw) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        auto_prior_free(pr);
        goto out;
    }
    for (int s = 0; s < n_src; s++) {
        if (source_scale(h, s, buf, &med[s], &scale[s]) > 0) {
            scale_sum += scale[s];
            used_src++;
        }
    }
    for (int i = 0; i < h->n_prior; i++) {
        if (features(ctx, h->prior_id[i], f) < 0)
            continue;
        double z = (log(h->prior_ms[i]) - med[h->prior_source[i]]) / scale[h->prior_source[i]];
        rows[n].z = z;
        rows[n].id = h->prior_id[i];
        n++;
        for (int p = 0; p < np; p++) {
            b[f[p]] += z;
            for (int q = 0; q < np; q++)
                a[(size_t)f[p] * nf + f[q]] += 1;
        }
    }
    int dof = -np; /* one-hot columns seen, less one per parameter (for the adjusted R^2) */
    for (int i = 0; i < nf; i++) {
        dof += a[(size_t)i * nf + i] > 0;
        a[(size_t)i * nf + i] += AUTO_PRIOR_LAMBDA;
    }
    double zz = 0, zmean = 0, rss = 0;
    for (int i = 0; i < n; i++)
        zmean += rows[i].z / n;
    for (int i = 0; i < n; i++)
        zz += (rows[i].z - zmean) * (rows[i].z - zmean);
    auto_solve_spd(a, b, nf);
    memcpy(pr->pw, b, (size_t)nf * sizeof *b);
    for (int i = 0; i < n; i++) { /* how much of the sources' spread the additive prior explains */
        features(ctx, rows[i].id, f);
        double e = rows[i].z - auto_prior_value(pr, f, np);
        rss += e * e;
    }
    /* Adjusted R^2 (degrees of freedom: the one-hot columns seen, less one per parameter), so
     * that a small history cannot look informative by fitting its own noise. */
    double r2 = zz > 0 ? 1 - rss / zz : 0;
    r2 = n - 1 - dof > 0 ? 1 - (1 - r2) * (n - 1) / (n - 1 - dof) : 0;
    pr->r2 = r2 > 0 ? r2 : 0;
    pr->beta0 = (used_src ? scale_sum / used_src : 1) * pr->r2;
    pr->usable = n > 0 && pr->r2 >= AUTO_PRIOR_MIN_R2;
    qsort(rows, (size_t)n, sizeof *rows, cmp_prior_row);
    for (int i = 0; pr->usable && i < n && pr->n_top < AUTO_PRIOR_TOP; i++) {
        int dup = 0;
        for (int k = 0; k < pr->n_top && !dup; k++)
            dup = pr->top[k] == rows[i].id;
        if (!dup)
            pr->top[pr->n_top++] = rows[i].id;
    }
    rc = 0;
out:
    free(buf);
    free(med);
    free(scale);
    free(a);
    free(b);
    free(rows);
    return rc;
}

void auto_solve_spd(double *a, double *b, int m)
{
    for (int j = 0; j < m; j++) {
        double *aj = a + (size_t)j * m;
        double d = aj[j];
        for (int k = 0; k < j; k++)
            d -= aj[k] * aj[k];
        d = d > 1e-12 ? sqrt(d) : 1e-6;
        aj[j] = d;
        for (int i = j + 1; i < m; i++) {
            double *ai = a + (size_t)i * m;
            double s = ai[j];
            for (int k = 0; k < j; k++)
                s -= ai[k] * aj[k];
            ai[j] = s / d;
        }
    }
    for (int i = 0; i < m; i++) { /* L z = b */
        const double *ai = a + (size_t)i * m;
        double s = b[i];
        for (int k = 0; k < i; k++)
            s -= ai[k] * b[k];
        b[i] = s / ai[i];
    }
    for (int i = m - 1; i >= 0; i--) { /* L^T x = z */
        double s = b[i];
        for (int k = i + 1; k < m; k++)
            s -= a[(size_t)k * m + i] * b[k];
        b[i] = s / a[(size_t)i * m + i];
    }
}
