/* search/auto_impl — internal to search/: the state of the `auto` strategy (search/auto.c) and its
 * surrogate (search/auto_model.c): ridge regression of clipped log times on one-hot parameter
 * values, the observations it is fitted on, and the lies of outstanding batch proposals. The state
 * owns every array in it (auto.c's destroy frees them). */
#ifndef KT_SEARCH_AUTO_IMPL_H
#define KT_SEARCH_AUTO_IMPL_H

#include "search/search_set.h"
#include "search/auto_prior.h"
#include "search/gp.h"

enum {
    MAX_FEATURES = 256, /* one-hot columns of the surrogate */
    TOP_K = 3,          /* best configurations whose neighbours join the pool */
    FILL_CANDIDATES = 16,
};
/* The expected-improvement pick (search/auto_gp.c, option `model` "ei"). */
enum {
    AUTO_GP_TRAIN = 128, /* told results the GP is fitted on at most */
    AUTO_GP_VAR = 24,    /* candidates, by GP mean and by ridge prediction, whose EI is computed */
    AUTO_GP_LIES = 256,  /* outstanding proposals the GP is conditioned on at most */
};
#define RESID 0.7 /* share of a configuration's residual its neighbours inherit */
/* History (searcher_set_history): the prior's coefficient in the surrogate is pulled towards its
 * a-priori value with this many observations' worth of weight. */
#define PRIOR_BETA_WEIGHT 2.0
/* Log times above this quantile of the successes are fitted as equal to it (once CLIP_MIN_OK
 * succeeded): the surrogate then ranks the good part of the space instead of modelling how slow
 * the slow part is (search/README.md, auto). */
#define CLIP_QUANTILE 0.5
enum { CLIP_MIN_OK = 4 };

typedef struct obs {
    config_id id;
    double t; /* search_score */
    double y; /* log t for a success, INFINITY for a failure */
} obs;

typedef struct auto_state {
    const space *sp;
    kt_rng rng;
    search_set visited;
    int initial;
    double explore;
    int stall;       /* results without a new best before the local walk takes over */
    int pool_random; /* random samples in the pool per proposal */
    int long_stall;  /* ... after which the walk is random and a used-up neighbourhood restarts */
    int model_ei;    /* option model "ei": the pool's pick by the GP's expected improvement */
    int walk_ei;     /* option walk "ei" (with model ei): the local walk's pick by it too */
    int np;          /* parameters */
    int nf;          /* features */
    int *nv;         /* values per parameter */
    int *nb;         /* buckets per parameter */
    int *off;        /* first feature of each parameter */
    int *idx;        /* decode scratch */
    int *fidx;       /* the observations' features, np per observation */
    obs *o;          /* told results (and, during an ask, lies after them) */
    int n, cap;      /* told results; capacity of o, fidx, resid, pp and ok_y */
    int proposed;    /* proposals made */
    int dirty;       /* results told since the last fit */
    double *xtx;     /* nf * nf, accumulated */
    double *a;       /* nf * nf, factorised */
    double *w;       /* nf weights */
    double mean;     /* intercept */
    double *resid;   /* per observation: y - prediction at the last fit */
    int fitted;
    config_id *scratch;
    int scratch_cap;
    int *fill; /* value indices of the space-filling proposals, np each */
    int n_fill;
    int best_i; /* observation with the best score, -1 none */
    int cur_i;  /* the local search's current configuration, -1 none */
    int has_pending;
    config_id pending; /* a restart: becomes current once told */
    int since_imp;     /* results told since the best last improved */
    /* Batches (constant liar): proposals not told yet are fitted as if they had failed while the
     * next proposals are chosen, so a batch spreads out instead of
     * crowding where the model is best. The lies sit at o[n .. n + n_lie) during an ask only. */
    double clip;       /* clip level of the log-time targets (INFINITY: none yet) */
    int n_lie;         /* lies appended after the n told results */
    config_id *out_id; /* outstanding proposals: asked, not told yet */
    int n_out, out_cap;
    /* History: a prior fitted on related targets' per-source-normalised log times. */
    auto_prior prior;
    int has_prior; /* prior.usable */
    int prior_on;  /* the last fit used the prior (auto_prior_trusted then) */
    double beta;   /* fitted coefficient of the prior, pbar its mean over the observations
                      (both used only while prior_on) */
    double pbar;
    double *pp;   /* per observation: its prior value */
    double *ok_y; /* the successes' log times, ascending (n_ok of them; capacity cap) */
    int n_ok;
    double worst; /* the failures' target at the last fit */
    /* The expected-improvement pick (model_ei; search/auto_gp.c). */
    gp *g;
    int gp_ok;         /* fitted for this ask */
    int gp_tried;      /* auto_gp_fit was called in this ask */
    int gp_next_hyper; /* told results at which the hyper-parameters are re-chosen */
    double gp_best;    /* the best (clipped) target */
    int *gx;           /* training rows (value indices), AUTO_GP_TRAIN + 1 of them */
    double *gy;
    unsigned char *gorder; /* per told result: in the training set */
    config_id *cid; /* this proposal's candidates: ids, value-index rows, ridge predictions */
    int *crow;
    double *cpred, *cmean, *cprior; /* cprior: the prior's part of each mean (prior_on) */
    int nc, ccap;
} auto_state;

/* Features of id into f (np entries): -1 if id does not decode. */
int auto_features(auto_state *st, config_id id, int *f);
/* The prior's value for features f (0 without a prior). */
double auto_prior_f(const auto_state *st, const int *f);
/* The surrogate's prediction (log time) for features f; valid once auto_fit has run. */
double auto_predict(const auto_state *st, const int *f);
/* The fitted target of a told result: its log time clipped, failures st->worst (after auto_fit). */
double auto_target(const auto_state *st, const obs *o);
/* Refits the surrogate on the told results and the lies (sets st->fitted, clip, resid, beta). */
void auto_fit(auto_state *st);
/* Room for one more observation (told result or lie): 0, or -1 out of memory. */
int auto_obs_reserve(auto_state *st);
/* Records a told result (o[n] already holds its id and t, fidx its features): y, resid, pp, the
 * sorted successes and xtx; n grows by one. auto_obs_reserve must have succeeded. */
void auto_obs_add(auto_state *st);
/* Appends a lie for id (an outstanding proposal) after the told results: 1, or 0 when it could
 * not (no memory, id does not decode; the batch is then merely less spread out). */
int auto_lie_push(auto_state *st, config_id id);
/* Removes every lie. */
void auto_lie_pop_all(auto_state *st);

/* The expected-improvement pick (search/auto_gp.c). Call order: auto_gp_init once at create
 * (0 also when the space cannot have a GP: then gp_ok stays 0 and the ridge picks alone; -1 with
 * err), per ask auto_gp_fit after auto_fit (-1: no GP this ask), per proposal auto_gp_offer for
 * each candidate (its value indices in st->idx, as auto_features leaves them) then auto_gp_pick
 * (1 with *out, 0: none, the ridge's pick stands). auto_gp_free at destroy. */
int auto_gp_init(auto_state *st, kt_error *err);
int auto_gp_fit(auto_state *st);
/* pred: the ridge's prediction; prior: the prior's value for the candidate (auto_prior_f). */
void auto_gp_offer(auto_state *st, config_id id, double pred, double prior);
int auto_gp_pick(auto_state *st, config_id *out);
void auto_gp_free(auto_state *st);

#endif
