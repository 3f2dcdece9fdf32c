/* search/xgb_impl — internal to the xgb strategies (xgb.c: options, ask / tell and the plan;
 * xgb_model.c: features, the XGBoost fit with early stopping on a-recall, prediction;
 * xgb_anneal.c: the simulated-annealing model optimizer and its random walk; xgb_local.c: the
 * variant from before issue 15; xgb_common.c: what both share) and to their unit test,
 * which drives searcher_xgb_vtable directly to read the state (fits, rounds, moves). Everything
 * hangs off xgb_state and is freed by the vtable's destroy; a BoosterHandle returned by xgb_fit
 * belongs to the caller (XGBoosterFree). */
#ifndef KT_SEARCH_XGB_IMPL_H
#define KT_SEARCH_XGB_IMPL_H

#include "search/search_set.h"

#include <xgboost/c_api.h>

extern const searcher_vtable searcher_xgb_vtable;
/* search/xgb_local.c: the pre-issue-15 variant (plans of 16, 30 rounds, local moves); its own
 * state, sharing only xgb_common.c's helpers. */
extern const searcher_vtable searcher_xgb_local_vtable;

/* How the annealing walk moves (xgb_walk): AutoTVM's random_walk on knobs. */
typedef enum {
    XGB_MOVE_GROUP =
        0,          /* one independent group ("knob") to a uniformly random other valid
                       sub-configuration: on gemm_tiled a whole new factorisation of m, k or n */
    XGB_MOVE_PARAM, /* the space is one group of several parameters (explicit replay spaces):
                       one parameter to a random other value, kept if valid */
} xgb_move_mode;

typedef struct xgb_rank_item {
    float v;
    int i;
} xgb_rank_item;

typedef struct xgb_cand {
    float score;
    config_id id;
} xgb_cand;

/* The knob features of a space (xgb_common.c): vals[voff[p] + v] for value v of parameter p (see
 * xgb_knob_values) and a decode scratch of one entry per parameter. */
typedef struct xgb_knobs {
    float *vals;
    int *voff;
    int *idx;
} xgb_knobs;

/* The annealing walkers (xgb_common.c): P points and their model scores, each step's moves and
 * theirs, and the feature rows (P x np) their prediction fills. */
typedef struct xgb_walkers {
    config_id *pts, *newp;
    float *sc, *newsc, *fx;
} xgb_walkers;

typedef struct xgb_state {
    search_base b; /* first: its ask is the vtable's; b.visited holds the proposed ids (AutoTVM's
                      `visited`, the optimizer's exclusive set); b.nb the HAMMING neighbours of
                      XGB_MOVE_PARAM's last resort */
    uint64_t seed;
    /* options */
    int plan_size, max_rounds, stop_rounds, sa_iter, sa_early_stop, sa_parallel;
    int random_tail; /* (int)(exploration * plan_size): the plan's last entries taken at random */
    int np;
    xgb_knobs knobs;
    /* told trials, in told order: AutoTVM's xs / ys */
    float *x;      /* np features per trial */
    double *y;     /* 1 / time (proportional to flops), 0 for a failure */
    config_id *id; /* per trial */
    int n, cap;
    double y_max; /* the largest y (0 while nothing succeeded) */
    int train_ct; /* fits so far: the next comes once n >= plan_size * (train_ct + 1) */
    /* the plan: AutoTVM's trials / trial_pt */
    config_id *plan;
    int plan_len, plan_pt;
    /* the annealing walkers, persistent between plans */
    xgb_move_mode move;
    int n_movable; /* groups with more than one valid sub-configuration */
    int n_points;  /* min(sa_parallel, count) */
    int have_points;
    xgb_walkers w;
    xgb_cand *heap; /* min-heap of the best plan_size candidates (worst at 0) */
    int n_heap;
    /* what the last fit and annealing did (tests, logs) */
    int last_rounds; /* boosting rounds trained (the best round + stop_rounds + 1 when stopped) */
    int last_best_round; /* 0-based round of the best training a-recall */
    double last_recall;  /* that a-recall@plan_size */
    int last_sa_iters;   /* annealing steps run */
    int last_dropped;    /* candidates dropped for a negative score */
} xgb_state;

/* xgb_common.c: shared by xgb and xgb_local */
/* Per parameter p, vals[voff[p] + v] = value v as a number where every value of p is a number that
 * fits a float, else v (trees only need the order). Both arrays allocated (the caller frees them);
 * -1 when out of memory. */
int xgb_knob_values(const space *sp, float **vals, int **voff);
/* The knob features of id into f (one per parameter) from that table; idx: decode scratch (one per
 * parameter). An id outside the space reads as every parameter's first value. */
void xgb_knob_features(const space *sp, const float *vals, const int *voff, int *idx, config_id id,
                       float *f);
/* The table and the scratch for sp: 0, or -1 out of memory (xgb_knobs_free frees what was
 * allocated). */
int xgb_knobs_init(xgb_knobs *k, const space *sp);
void xgb_knobs_free(xgb_knobs *k);
/* Room for P walkers of np features: 0, or -1 out of memory (xgb_walkers_free frees what was
 * allocated). */
int xgb_walkers_alloc(xgb_walkers *w, size_t P, size_t np);
void xgb_walkers_free(xgb_walkers *w);
/* Model scores of ids[0..n) (n <= P) into out: their knob features into fx (n x np), then
 * xgb_predict_rows. -1 after a logged failure. */
int xgb_predict_ids(BoosterHandle b, const space *sp, xgb_knobs *k, const config_id *ids, int n,
                    float *fx, float *out, const char *who);
/* rc of a libxgboost call: 0 -> 0; else logs "<who> searcher: <what> failed: <XGBoost's error>"
 * (warn) and returns -1. */
int xgb_lib_check(int rc, const char *who, const char *what);
/* AutoTVM's XGBoostCostModel parameters for loss_type "rank" (max_depth 3, gamma 1e-4,
 * min_child_weight 1, subsample 1, eta 0.3, lambda 1, alpha 0, rank:pairwise), then exact trees,
 * one thread and a seed derived from seed, for determinism. 0, or -1 after a logged failure. */
int xgb_set_params(BoosterHandle b, uint64_t seed, const char *who);
/* The start of a training: a DMatrix of the n x np rows x with labels label (and, when group,
 * one query group of all n rows) and a booster on it with xgb_set_params. 0, or -1 after a logged
 * failure; either way *dm and *b (NULL-initialised by the caller) hold what was created, for
 * xgb_train_end. */
int xgb_train_begin(const float *x, int n, int np, const float *label, int group, uint64_t seed,
                    const char *who, DMatrixHandle *dm, BoosterHandle *b);
/* Its end: frees the DMatrix, and the booster unless ok; returns the booster (NULL unless ok). */
BoosterHandle xgb_train_end(DMatrixHandle dm, BoosterHandle b, int ok, const char *who);
/* Scores of the n rows of fx (n x np, row-major) into out; -1 after a logged failure. */
int xgb_predict_rows(BoosterHandle b, const float *fx, int n, int np, float *out, const char *who);
/* Room for one more told trial in the parallel arrays x (np floats per trial), v and id, holding
 * n of capacity *cap: 0, or -1 out of memory (the arrays keep what they held). */
int xgb_trials_grow(float **x, double **v, config_id **id, int n, int *cap, int np);
/* The walks' one-parameter move: parameter p of idx (value indices of a configuration; p has at
 * least two values) to a uniformly random other value, one draw of rng. 1 with *out that
 * configuration when it is valid, else 0; idx is left as it was. */
int xgb_param_move(const space *sp, int *idx, int p, kt_rng *rng, config_id *out);
/* The heap of best candidates (a min-heap on (score, then the larger id ranks lower), the worst at
 * h[0]): push (the caller checks room), replace the worst, and a qsort comparator, best first. */
int xgb_cand_worse(const xgb_cand *a, const xgb_cand *b);
void xgb_cand_push(xgb_cand *h, int *n, xgb_cand c);
void xgb_cand_replace_worst(xgb_cand *h, int n, xgb_cand c);
int xgb_cand_cmp_desc(const void *a, const void *b);

/* xgb_model.c */
/* The knob features of id into f (np floats): per parameter its value where every value of the
 * parameter is a number, else the value's index. */
void xgb_features(xgb_state *st, config_id id, float *f);
/* AutoTVM's training metric "a-recall@top" of predictions pred against labels (n each): order the
 * rows by prediction, descending; rank[j] = the rank of row j's label among all labels in that
 * order (largest first, ties by position); curve[i] = #{j < i : rank[j] <= i} / (i + 1); the score
 * is sum_{i < min(top, n)} curve[i] / top. items and rank are scratch of n entries each. */
double xgb_average_recall(const float *pred, const float *label, int n, int top,
                          xgb_rank_item *items, int *rank);
/* A booster fitted on every told trial as AutoTVM's XGBoostCostModel.fit: rows shuffled, labels
 * y / y_max, rank:pairwise, up to max_rounds rounds, stopped stop_rounds rounds after the best
 * training a-recall@plan_size; prediction then uses every round trained (as xgb.train's booster
 * did). NULL after a logged failure. Sets last_rounds, last_best_round, last_recall. */
BoosterHandle xgb_fit(xgb_state *st);
/* Model scores (higher = predicted faster) of ids[0..n) (n <= n_points) into out; -1 after a
 * logged failure. */
int xgb_predict(xgb_state *st, BoosterHandle b, const config_id *ids, int n, float *out);

/* xgb_anneal.c */
/* Chooses the move mode and counts the movable groups (at create). */
void xgb_walk_init(xgb_state *st);
/* One random-walk step from id (xgb_move_mode); id itself when nothing can move. */
config_id xgb_walk(xgb_state *st, config_id id);
/* AutoTVM's SimulatedAnnealingOptimizer.find_maximums: fills plan with up to plan_size unvisited
 * configurations of highest predicted score (those scoring below 0 dropped, as AutoTVM does),
 * best first. -1 after a logged failure or out of memory (the plan is then empty). */
int xgb_find_maximums(xgb_state *st, BoosterHandle b);

#endif
