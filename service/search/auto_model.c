/* search/auto_model — the surrogate of `auto` (search/auto_impl.h): one-hot features, ridge
 * regression of log times clipped at the median success (with a warm-start prior as one more
 * column), and the observations it is fitted on: told results and the lies of outstanding batch
 * proposals. */
#include "search/auto_impl.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

static int bucket(const auto_state *st, int p, int v)
{
    if (st->nb[p] == st->nv[p])
        return v;
    return (int)((long long)v * st->nb[p] / st->nv[p]);
}

int auto_features(auto_state *st, config_id id, int *f)
{
    if (space_decode(st->sp, id, st->idx) < 0)
        return -1;
    for (int p = 0; p < st->np; p++)
        f[p] = st->off[p] + bucket(st, p, st->idx[p]);
    return 0;
}

double auto_prior_f(const auto_state *st, const int *f)
{
    return st->has_prior ? auto_prior_value(&st->prior, f, st->np) : 0;
}

double auto_predict(const auto_state *st, const int *f)
{
    double s = st->mean;
    for (int p = 0; p < st->np; p++)
        s += st->w[f[p]];
    if (st->prior_on)
        s += st->beta * (auto_prior_f(st, f) - st->pbar);
    return s;
}

/* The fitted target of observation o: its log time clipped at st->clip; failures worst. */
static double target(const auto_state *st, const obs *o, double worst)
{
    if (o->t >= SEARCH_BAD_SCORE)
        return worst;
    return o->y < st->clip ? o->y : st->clip;
}

double auto_target(const auto_state *st, const obs *o)
{
    return target(st, o, st->worst);
}

/* st->clip: the CLIP_QUANTILE of the successes' log times (INFINITY below CLIP_MIN_OK of them). */
static void fit_clip(auto_state *st)
{
    st->clip = st->n_ok >= CLIP_MIN_OK ? st->ok_y[(int)(CLIP_QUANTILE * (st->n_ok - 1))] : INFINITY;
}

/* The surrogate: ridge regression of log time on the one-hot features and, with a prior the told
 * results confirm (auto_prior_trusted), on the prior's (centred) value, whose coefficient is
 * pulled towards beta0 rather than 0. Until they confirm it, and whenever they stop doing so, the
 * fit is exactly the cold one: a prior's coefficient fitted freely does not protect against a
 * misleading one (issue 29: an inverted history then lost 0.05 at 100 evaluations). */
void auto_fit(auto_state *st)
{
    /* The prior's weight (auto_prior_weight: its agreement with the told results so far) scales
     * the value its coefficient is pulled towards. */
    st->prior_on = st->has_prior && auto_prior_trusted(&st->prior);
    double prior_w = st->prior_on ? auto_prior_weight(&st->prior) : 0;
    int nf = st->nf, np = st->np, m = st->prior_on ? nf + 1 : nf;
    double worst = -INFINITY, best = INFINITY;
    int n_ok = 0;
    for (int i = 0; i < st->n; i++) {
        if (st->o[i].t < SEARCH_BAD_SCORE) {
            double y = st->o[i].y;
            worst = y > worst ? y : worst;
            best = y < best ? y : best;
            n_ok++;
        }
    }
    st->fitted = 0;
    if (n_ok == 0) {
        /* Nothing succeeded yet: a trusted prior alone ranks the candidates. */
        st->mean = 0;
        st->pbar = 0;
        st->beta = 1;
        memset(st->w, 0, (size_t)nf * sizeof *st->w);
        st->fitted = st->prior_on;
        return;
    }
    fit_clip(st);
    if (isfinite(st->clip))
        worst = st->clip;
    worst += 0.5 * (worst - best) + 0.5;
    st->worst = worst;
    /* The lies (outstanding proposals of a batch) are fitted as failures: constant liar at the
     * most pessimistic level, which pushes the rest of the batch furthest from them. */
    double lie = worst;
    int tot = st->n + st->n_lie;
    double mean = 0, pbar = 0;
    for (int i = 0; i < tot; i++) {
        mean += i < st->n ? target(st, &st->o[i], worst) : lie;
        pbar += st->prior_on ? st->pp[i] : 0;
    }
    mean /= tot;
    pbar /= tot;
    st->mean = mean;
    st->pbar = pbar;
    memset(st->w, 0, (size_t)m * sizeof *st->w);
    memset(st->a, 0, (size_t)m * m * sizeof *st->a);
    for (int i = 0; i < tot; i++) {
        double y = (i < st->n ? target(st, &st->o[i], worst) : lie) - mean;
        const int *f = st->fidx + (size_t)i * np;
        for (int p = 0; p < np; p++)
            st->w[f[p]] += y;
        if (m > nf) {
            double pc = st->pp[i] - pbar;
            st->w[nf] += y * pc;
            for (int p = 0; p < np; p++) {
                st->a[(size_t)nf * m + f[p]] += pc;
                st->a[(size_t)f[p] * m + nf] += pc;
            }
            st->a[(size_t)nf * m + nf] += pc * pc;
        }
    }
    double lambda = 1.0;
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < nf; j++)
            st->a[(size_t)i * m + j] = st->xtx[(size_t)i * nf + j];
    for (int i = 0; i < nf; i++)
        st->a[(size_t)i * m + i] += lambda;
    if (m > nf) {
        st->a[(size_t)nf * m + nf] += PRIOR_BETA_WEIGHT;
        st->w[nf] += PRIOR_BETA_WEIGHT * st->prior.beta0 * prior_w;
    }
    auto_solve_spd(st->a, st->w, m);
    st->beta = m > nf ? st->w[nf] : 0;
    for (int i = 0; i < st->n; i++)
        st->resid[i] = target(st, &st->o[i], worst) - auto_predict(st, st->fidx + (size_t)i * np);
    st->fitted = 1;
}

int auto_obs_reserve(auto_state *st)
{
    int need = st->n + st->n_lie + 1;
    if (need <= st->cap)
        return 0;
    /* Five arrays share one capacity: it is stored only once all five have grown. */
    size_t cap = kt_array_next_cap((size_t)st->cap, (size_t)need, INT_MAX);
    size_t row = (size_t)(st->np > 0 ? st->np : 1) * sizeof *st->fidx;
    if (cap == 0 || kt_array_resize((void **)&st->o, cap, sizeof *st->o) != 0 ||
        kt_array_resize((void **)&st->fidx, cap, row) != 0 ||
        kt_array_resize((void **)&st->resid, cap, sizeof *st->resid) != 0 ||
        kt_array_resize((void **)&st->pp, cap, sizeof *st->pp) != 0 ||
        kt_array_resize((void **)&st->ok_y, cap, sizeof *st->ok_y) != 0)
        return -1;
    st->cap = (int)cap;
    return 0;
}

static void xtx_add(auto_state *st, const int *f, double d)
{
    for (int p = 0; p < st->np; p++)
        for (int q = 0; q < st->np; q++)
            st->xtx[(size_t)f[p] * st->nf + f[q]] += d;
}

int auto_lie_push(auto_state *st, config_id id)
{
    if (st->np > 256 || auto_obs_reserve(st) < 0)
        return 0;
    int i = st->n + st->n_lie;
    int *f = st->fidx + (size_t)i * st->np;
    if (auto_features(st, id, f) < 0)
        return 0;
    st->o[i].id = id;
    st->o[i].t = SEARCH_BAD_SCORE; /* unused: fit gives lies the lie value */
    st->resid[i] = 0;
    st->pp[i] = auto_prior_f(st, f);
    xtx_add(st, f, 1);
    st->n_lie++;
    return 1;
}

void auto_lie_pop_all(auto_state *st)
{
    for (int i = st->n; i < st->n + st->n_lie; i++)
        xtx_add(st, st->fidx + (size_t)i * st->np, -1);
    st->n_lie = 0;
}

void auto_obs_add(auto_state *st)
{
    obs *o = &st->o[st->n];
    const int *f = st->fidx + (size_t)st->n * st->np;
    o->y = o->t < SEARCH_BAD_SCORE ? log(o->t > 1e-12 ? o->t : 1e-12) : INFINITY;
    st->resid[st->n] = 0;
    st->pp[st->n] = auto_prior_f(st, f);
    /* the history's agreement with the measurements (auto_prior_weight) */
    auto_prior_observe(&st->prior, o->id, st->pp[st->n], o->y);
    if (o->t < SEARCH_BAD_SCORE) {
        int k = st->n_ok++;
        while (k > 0 && st->ok_y[k - 1] > o->y) {
            st->ok_y[k] = st->ok_y[k - 1];
            k--;
        }
        st->ok_y[k] = o->y;
    }
    xtx_add(st, f, 1);
    st->n++;
}
