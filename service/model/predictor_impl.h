/* model/predictor_impl — internal to the predictor facade (nothing outside model/predictor*.c
 * includes it): the predictor struct and the operations each algorithm provides.
 *
 * Each algorithm (predictor_simple.c: nearest, common; predictor_xgb.c; predictor_seq2seq.c;
 * predictor_local.c; predictor_ensemble.c) fills a pred_ops; nearest and local keep their
 * problems in a pred_problems table (predictor_problems.c). The facade (predictor.c) parses the
 * hyper-parameters, copies the layout (parameters, value counts, argument names), then calls
 * train or load; predict / decode go through decode; save writes meta (a JSON object the facade
 * puts on the meta line) and the binary payload. state is the algorithm's, freed by its destroy. */
#ifndef KT_MODEL_PREDICTOR_IMPL_H
#define KT_MODEL_PREDICTOR_IMPL_H

#include "model/derived.h"
#include "model/predictor.h"

/* Values of decode's args at most: the arguments and the derived features. */
#define PRED_MAX_FEATS (TS_MAX_ARGS + DERIVED_MAX)

typedef struct pred_ops {
    const char *name;
    int (*train)(predictor *p, const training_set *ts, uint64_t seed, kt_error *err);
    /* args: the problem (num_args numbers, then the derived values: nf in all). Up to k rows into
     * rows (k * np), scores into score, best first; CONSTRAINED keeps only rows valid in sp.
     * Returns how many, -1 with err. */
    int (*decode)(predictor *p, const double *args, const space *sp, predict_mode mode, int width,
                  int k, int *rows, double *score, kt_error *err);
    int (*save)(const predictor *p, json_t *meta, strbuf *bin, kt_error *err);
    int (*load)(predictor *p, const json_t *meta, const unsigned char *bin, size_t len,
                kt_error *err);
    void (*destroy)(predictor *p);
} pred_ops;

struct predictor {
    const pred_ops *ops;
    json_t *hyper; /* every key of the kind, defaults filled */
    int top, beam;
    double next_weight;
    /* seq2seq */
    int hidden, epochs;
    double lr;
    /* xgb */
    int rounds, depth;
    /* local */
    int loc_k;
    double loc_tol;
    /* ensemble: member weights (seq2seq, nearest, common, xgb, local), fusion constant, list,
     * diverse */
    double ens_w[5], ens_c;
    int ens_list, ens_diverse;
    json_t *params, *arg_names;
    int np, na;
    /* derived features (model/derived.h; NULL none): decode's args hold the na arguments, then
     * the nd derived values; nf = na + nd is what the feature-based kinds (xgb, seq2seq) read */
    derived *dv;
    int nd, nf;
    int use_derived; /* hyper "derived": keep the set's derived features (else dv stays NULL) */
    int *nv;
    void *state;
};

extern const pred_ops pred_nearest_ops, pred_common_ops, pred_xgb_ops, pred_seq2seq_ops,
    pred_local_ops, pred_ensemble_ops;

/* The hyper-parameters of p (an ensemble) that member kind accepts: a new object, NULL no memory.
 */
json_t *pred_member_hyper(const predictor *p, const char *kind);

/* 1 when row (np value indices) is a valid configuration of sp (which has the model's layout). */
int pred_row_valid(const space *sp, const int *row);
/* Appends row to rows[0..*n) unless already there (and *n < k); returns 1 appended, 0 not. */
int pred_row_push(const predictor *p, int *rows, double *score, int *n, int k, const int *row,
                  double s);
/* Training rows of the learned kinds: for each problem, its first `top` trials with weight
 * next_weight^i. Fills *prob (problem index), *rank (i) per row; returns the count, -1 no memory.
 * The caller frees both. */
int pred_training_rows(const predictor *p, const training_set *ts, int **prob, int **rank);
/* Little-endian length-prefixed blobs in the binary payload. */
int pred_put_blob(strbuf *bin, const void *data, size_t n);
/* Reads a blob at *pos of bin (len bytes): *data points into bin; 0, or -1 with err. */
int pred_get_blob(const unsigned char *bin, size_t len, size_t *pos, const unsigned char **data,
                  size_t *n, kt_error *err);

/* predictor_problems.c: the table of tuned problems behind the neighbourhood kinds (nearest,
 * local). Zero-initialise it; pred_problems_free empties it. */
typedef struct pred_problems {
    int n;       /* problems (those with trials) */
    double *lg;  /* n * nf: log2 of each feature (values below 1 count as 1) */
    int *off;    /* n + 1 offsets into rows, in rows of np */
    int *rows;   /* per problem its fastest rows, fastest first */
    double *rat; /* per row, its time over the problem's best (>= 1); NULL when not kept */
} pred_problems;

/* Fills t from ts: each problem with trials and its fastest cap rows (ratios: their ratios too).
 * 0, or -1 out of memory (t empty). */
int pred_problems_train(pred_problems *t, const predictor *p, const training_set *ts, int cap,
                        int ratios);
/* Euclidean distance of the log2 features of args (nf) to each problem's, into dist (n). */
void pred_problems_dist(const pred_problems *t, const predictor *p, const double *args,
                        double *dist);
/* The table as meta["problems"]: per problem {"log2_args", "rows"} (and "ratios" when kept).
 * 0, or -1 with err (no memory). */
int pred_problems_save(const pred_problems *t, const predictor *p, json_t *meta, kt_error *err);
/* And back (ratios: "ratios" is required, each >= 1 and finite); rows are checked against the
 * layout. 0, or -1 with err: KT_ERR_BAD_REQUEST "<kind> model: bad ..." naming the kind of p. */
int pred_problems_load(pred_problems *t, const predictor *p, const json_t *meta, int ratios,
                       kt_error *err);
void pred_problems_free(pred_problems *t);

/* Value-index rows in a model's meta: n integers as a JSON array (new reference, NULL when out of
 * memory), and back: pred_read_ints reads an array of n integers each in [0, lim[i]) (lim NULL:
 * >= 0) into out; 0, or -1 when a is not such an array. */
json_t *pred_int_array(const int *v, int n);
int pred_read_ints(const json_t *a, int n, const int *lim, int *out);

#endif
