/* bench/accel/bench_accel_predict — `ktune bench --accel-predict` (see bench_accel.h): the
 * learned-models predictors on cnn_layer layer shapes of the accel cost model, with bench_predict's
 * metrics.
 *
 * Every shape's mapping space has its own value lists (tile factors are the divisors of its
 * dims), while a training_set (model/training_set.h) has one value list per parameter for every
 * problem. So the training set's lists are the UNION over the sampled shapes' spaces (numbers
 * sorted); a configuration is stored by its values. A predictor decodes rows of that union; for
 * the constrained beam (which needs a space with the model's exact parameters) a held-out shape
 * gets a space of the union lists under its own space's restrictions (space_restriction_text),
 * which accepts exactly its valid tile factors (a factor that does not divide a dim breaks the
 * product-divides-dim restriction). A row is then mapped into the shape's own space by its values
 * (a value the shape's list lacks, or a broken restriction: not valid) and evaluated by the cost
 * model: its EDP over the best EDP the search found for the shape is the "time ratio". */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/rng.h"
#include "model/predictor.h"
#include "bench/accel/bench_accel_impl.h"
#include "bench/bench_judge.h"
#include "bench/bench_paired.h"
#include "bench/bench_ratio.h"

#define BAP_TOP 5

/* The paired tests of the report (bench_paired.h): the learned predictors against the baselines
 * (issue 30: each learned part against its ablation). */
static const char *const bap_learned[] = {"seq2seq", "ensemble"};
static const char *const bap_baselines[] = {"nearest", "common"};

typedef struct bap_shape {
    ba_problem bp;
    json_t *problem; /* canonical arguments */
    json_t *tops;    /* [{"config", "obj"}]: the search's best distinct valid mappings */
    double best;     /* best EDP / min the search found */
    int ts_index;    /* its index in the training set */
    space *uspace;   /* the union lists under its restrictions (held-out shapes), or NULL */
} bap_shape;

typedef struct bap_data {
    const accel_device *dev;
    bap_shape *shapes;
    int n;
    training_set *all;
    json_t *params;      /* the union lists */
    json_t *kernel_json; /* accel_kernel_json of cnn_layer */
    long long search_evals;
    double search_s;
    int no_grid; /* --no-grid */
    int uspace_failed;
    char uspace_error[600];
} bap_data;

/* Adds every value of sp's parameters to the union lists (numbers kept sorted, others in order). */
static int bap_union_add(json_t *params, const space *sp, kt_error *err)
{
    int np = space_num_params(sp);
    if (json_array_size(params) == 0) {
        for (int p = 0; p < np; p++)
            json_array_append_new(
                params, json_pack("{s:s, s:[]}", "name", space_param_name(sp, p), "values"));
    }
    if ((int)json_array_size(params) != np)
        return kt_error_set(err, KT_ERR_INTERNAL, "cnn_layer spaces differ in parameters");
    for (int p = 0; p < np; p++) {
        json_t *e = json_array_get(params, (size_t)p), *vals = json_object_get(e, "values");
        if (strcmp(json_string_value(json_object_get(e, "name")), space_param_name(sp, p)) != 0)
            return kt_error_set(err, KT_ERR_INTERNAL, "cnn_layer spaces differ in parameters");
        for (int v = 0; v < space_param_num_values(sp, p); v++) {
            json_t *val = space_param_value_json(sp, p, v), *x;
            size_t i, at = json_array_size(vals);
            int dup = 0;
            json_array_foreach(vals, i, x)
            {
                if (json_equal(x, val) || (json_is_number(x) && json_is_number(val) &&
                                           json_number_value(x) == json_number_value(val))) {
                    dup = 1;
                    break;
                }
                if (json_is_number(val) && json_is_number(x) &&
                    json_number_value(x) > json_number_value(val) && at == json_array_size(vals))
                    at = i;
            }
            if (!dup)
                json_array_insert(vals, at, val);
            json_decref(val);
        }
    }
    return 0;
}

/* The shapes, each searched; the training set over the union lists. */
static int bap_load(const bench_accel_options *opt, const accel_device *d, bap_data *dd,
                    FILE *progress, kt_error *err)
{
    const accel_kernel *k = accel_kernel_find("cnn_layer");
    json_t *kj = NULL, *arg_names = json_array(), *a;
    kt_rng rng;
    ba_run run;
    size_t i;
    int rc = -1, tries = 0;
    double t0 = kt_clock_s();

    memset(&run, 0, sizeof run);
    if (!k || !arg_names || ba_run_alloc(&run, opt->predict_evals) < 0 ||
        !(dd->shapes = calloc((size_t)opt->shapes, sizeof *dd->shapes)) ||
        !(dd->params = json_array())) {
        kt_error_set(err, k ? KT_ERR_NO_MEMORY : KT_ERR_INTERNAL, k ? NULL : "no cnn_layer");
        goto out;
    }
    kj = accel_kernel_json(k);
    dd->kernel_json = json_incref(kj);
    dd->dev = d;
    json_array_foreach(json_object_get(kj, "problem_arguments"), i, a)
        json_array_append(arg_names, json_object_get(a, "name"));
    kt_rng_seed(&rng, opt->train_seed ^ 0x5eedULL);
    while (dd->n < opt->shapes && tries++ < 4 * opt->shapes) {
        bap_shape *s = &dd->shapes[dd->n];
        accel_problem p;
        accel_problem_sample(k, &rng, &p);
        if (ba_problem_init(&s->bp, d, &p, err) < 0) {
            if (err->code != KT_ERR_SPACE_TOO_LARGE)
                goto out;
            continue;
        }
        if (ba_search(&s->bp, opt->predict_strategy, 0, opt->predict_evals, NULL, 0, &run, err) < 0)
            goto out;
        dd->search_evals += run.n;
        if (run.n_top == 0 || bap_union_add(dd->params, s->bp.sp, err) < 0) {
            ba_problem_release(&s->bp);
            if (run.n_top == 0)
                continue; /* no valid mapping found: not a training problem */
            goto out;
        }
        s->problem = accel_problem_json(&p);
        s->best = run.top_obj[0];
        s->tops = json_array();
        for (int t = 0; t < run.n_top; t++)
            json_array_append_new(s->tops, json_pack("{s:o, s:f}", "config",
                                                     space_config_json(s->bp.sp, run.top[t]), "obj",
                                                     run.top_obj[t]));
        dd->n++;
        if (progress && dd->n % 50 == 0)
            fprintf(progress, "ktune bench: %d shapes searched (%s, %d evaluations each)\n", dd->n,
                    opt->predict_strategy, opt->predict_evals);
    }
    dd->search_s = kt_clock_s() - t0;
    if (!(dd->all = training_set_new(dd->params, arg_names, err)))
        goto out;
    for (int s = 0; s < dd->n; s++) {
        bap_shape *sh = &dd->shapes[s];
        json_t *t;
        if ((sh->ts_index = training_set_add_problem(dd->all, sh->problem, err)) < 0)
            goto out;
        json_array_foreach(sh->tops, i, t)
            training_set_add_trial(dd->all, sh->ts_index, json_object_get(t, "config"),
                                   json_number_value(json_object_get(t, "obj")));
    }
    rc = 0;
out:
    ba_run_release(&run);
    json_decref(kj);
    json_decref(arg_names);
    return rc;
}

static void bap_free(bap_data *dd)
{
    for (int i = 0; dd->shapes && i < dd->n; i++) {
        ba_problem_release(&dd->shapes[i].bp);
        json_decref(dd->shapes[i].problem);
        json_decref(dd->shapes[i].tops);
        space_free(dd->shapes[i].uspace);
    }
    free(dd->shapes);
    training_set_free(dd->all);
    json_decref(dd->params);
    json_decref(dd->kernel_json);
}

/* The shape of a training-set index, or NULL. */
static bap_shape *bap_shape_of(bap_data *dd, int ts_index)
{
    for (int i = 0; i < dd->n; i++) {
        if (dd->shapes[i].ts_index == ts_index)
            return &dd->shapes[i];
    }
    return NULL;
}

/* The constants of a shape's restrictions: its dims by name, the device's banks, and the largest
 * tile extent at L2 (the biggest allocation a tensor can get, every other tensor one bank, in
 * words: accel_space.c's rule). bap_uspace checks that they are right: the union space must hold
 * exactly as many valid configurations as the shape's own. */
static json_t *bap_constants(const bap_data *dd, const bap_shape *s)
{
    const accel_device *d = dd->dev;
    json_t *c = json_object(), *dn;
    size_t i;
    int nt = (int)json_array_size(json_object_get(dd->kernel_json, "tensors"));
    double words = (double)d->l2_bytes / d->word_bytes * (d->l2_banks - (nt - 1)) / d->l2_banks;
    json_array_foreach(json_object_get(dd->kernel_json, "dims"), i, dn)
        json_object_set_new(c, json_string_value(dn), json_integer(s->bp.p.dim[i]));
    json_object_set_new(c, "l1_banks", json_integer(d->l1_banks));
    json_object_set_new(c, "l2_banks", json_integer(d->l2_banks));
    json_object_set_new(c, "l2_extent_max", json_integer((json_int_t)floor(words)));
    return c;
}

/* The union space of a shape (built on first use; NULL when it cannot be rebuilt or does not
 * accept exactly the shape's configurations: the reason kept in dd, constrained decoding off). */
static const space *bap_uspace(bap_data *dd, bap_shape *s)
{
    if (s->uspace || dd->uspace_failed)
        return s->uspace;
    json_t *r = json_array(), *c = bap_constants(dd, s);
    kt_error err;
    for (int i = 0; r && i < space_num_restrictions(s->bp.sp); i++)
        json_array_append_new(r, json_string(space_restriction_text(s->bp.sp, i)));
    if (!(s->uspace = space_new(dd->params, r, c, NULL, &err))) {
        dd->uspace_failed = 1;
        snprintf(dd->uspace_error, sizeof dd->uspace_error, "%s", err.message);
    } else if (space_count(s->uspace) != space_count(s->bp.sp)) {
        dd->uspace_failed = 1;
        snprintf(dd->uspace_error, sizeof dd->uspace_error,
                 "the union lists under a shape's restrictions hold %llu configurations, the "
                 "shape's space %llu",
                 (unsigned long long)space_count(s->uspace),
                 (unsigned long long)space_count(s->bp.sp));
        space_free(s->uspace);
        s->uspace = NULL;
    }
    json_decref(r);
    json_decref(c);
    return s->uspace;
}

/* A union row in the shape's own space and evaluated: 1 valid (*obj), 0 not valid in the space
 * (*space_ok 0) or by the cost model (*space_ok 1). */
static int bap_eval_row(bap_data *dd, bap_shape *s, const int *row, double *obj, int *space_ok)
{
    json_t *cfg = training_set_config_json(dd->all, row);
    config_id id;
    kt_error err;
    *space_ok = cfg && space_config_from_json(s->bp.sp, cfg, &id, &err) == 0;
    json_decref(cfg);
    return *space_ok ? ba_evaluate(&s->bp, id, obj, NULL, &err) == 1 : 0;
}

/* Accumulated over the held-out shapes for one predictor: the grid and the ratios in j, and what
 * only this report counts. */
typedef struct bap_acc {
    bench_judge j;
    int invalid1, none;
    double predict_s;
} bap_acc;

/* The shape a candidate of the grid is judged on. */
typedef struct bap_judged {
    bap_data *dd;
    bap_shape *s;
} bap_judged;

/* A candidate of the grid is valid when the cost model accepts it for the shape. */
static int bap_valid(void *ctx, const int *row)
{
    bap_judged *c = ctx;
    double obj;
    int ok;
    bap_eval_row(c->dd, c->s, row, &obj, &ok);
    return ok;
}

/* One held-out shape for predictor p: the grid and the ratios into a. */
static int bap_one_shape(bap_data *dd, predictor *p, bap_shape *s, bap_acc *a, kt_error *err)
{
    int np = predictor_num_params(p), ok;
    const int *best = training_set_trial(dd->all, s->ts_index, 0, NULL);
    const space *us = bap_uspace(dd, s);
    bench_judge *j = &a->j;
    bap_judged ctx = {dd, s};
    double obj;
    for (int m = 0; m < BENCH_JUDGE_MODES && !dd->no_grid; m++) {
        for (int k = 0; k < BENCH_JUDGE_NK; k++) {
            if ((m == 0 && bench_judge_ks[k] > 1) || (m == 2 && !us))
                continue;
            if (bench_judge_decode(j, p, s->problem, m == 2 ? us : NULL, m, k, best, bap_valid,
                                   &ctx, err) < 0)
                return -1;
        }
    }
    double c0 = kt_clock_s();
    int n = predictor_decode(p, s->problem, us, us ? PREDICT_CONSTRAINED : PREDICT_FREE, 0, BAP_TOP,
                             j->rows, j->score, err);
    a->predict_s += kt_clock_s() - c0;
    if (n < 0)
        return -1;
    double r5 = INFINITY;
    for (int i = 0; i < n; i++) {
        double r = bap_eval_row(dd, s, j->rows + (size_t)i * (size_t)np, &obj, &ok) ? obj / s->best
                                                                                    : INFINITY;
        if (i == 0) {
            j->r1[j->n1++] = r;
            a->invalid1 += !isfinite(r);
        }
        r5 = r < r5 ? r : r5;
    }
    if (n == 0) { /* no prediction: a miss */
        j->r1[j->n1++] = INFINITY;
        a->none++;
    }
    j->r5[j->n5++] = r5;
    j->n++;
    return 0;
}

static json_t *bap_judge(bap_data *dd, const training_set *test, predictor *p, double train_s,
                         size_t bytes, kt_error *err)
{
    int np = predictor_num_params(p), nt = training_set_num_problems(test);
    bap_acc a = {0};
    bench_judge *j = &a.j;
    json_t *res = NULL, *grid = json_object();

    if (bench_judge_init(j, np, nt, err) < 0)
        goto out;
    if (!grid) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; i < nt; i++) {
        kt_error perr;
        int di = training_set_add_problem(dd->all, training_set_problem(test, i), &perr);
        bap_shape *s = di < 0 ? NULL : bap_shape_of(dd, di);
        if (s && bap_one_shape(dd, p, s, &a, err) < 0)
            goto out;
    }
    if (bench_judge_grid_json(j, 1, grid, err) < 0)
        goto out;
    /* per held-out shape, in one order for every predictor: the paired tests' input (before the
     * medians, which sort r1 and r5 in place) */
    json_t *pp = json_pack("{s:[], s:[]}", "top1", "top5");
    for (int i = 0; pp && i < j->n1; i++)
        json_array_append_new(json_object_get(pp, "top1"), bench_paired_ratio_json(j->r1[i]));
    for (int i = 0; pp && i < j->n5; i++)
        json_array_append_new(json_object_get(pp, "top5"), bench_paired_ratio_json(j->r5[i]));
    res = json_pack(
        "{s:s, s:f, s:I, s:f, s:O, s:o, s:{s:o, s:o, s:i, s:i, s:i}, s:{s:o, s:o, s:i}}",
        "predictor", predictor_kind(p), "train_s", train_s, "model_bytes", (json_int_t)bytes,
        "predict_ms", j->n ? 1e3 * a.predict_s / j->n : 0.0, "decoding", grid, "hyper",
        predictor_hyper_json(p), "top1", "median", bench_ratio_median(j->r1, j->n1, "invalid"),
        "within_1_10", bench_ratio_share(j->r1, j->n1, 1.10), "n", j->n1, "invalid", a.invalid1,
        "none", a.none, "top5", "median", bench_ratio_median(j->r5, j->n5, "invalid"),
        "within_1_05", bench_ratio_share(j->r5, j->n5, 1.05), "n", j->n5);
    if (!res || !pp || json_object_set_new(res, "per_problem", json_incref(pp)) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        json_decref(res);
        res = NULL;
    }
    json_decref(pp);
out:
    bench_judge_free(j);
    json_decref(grid);
    return res;
}

json_t *bench_accel_predict_run(const bench_accel_options *opt, const char *exe_dir, FILE *progress,
                                kt_error *err)
{
    accel_device *devs = NULL;
    int n_devs = 0;
    const accel_device *d = NULL;
    bap_data dd;
    training_set *train = NULL, *test = NULL;
    json_t *hyper = NULL, *preds = json_object(), *res = NULL;
    predictor *p = NULL;
    strbuf bytes;
    double t0 = kt_clock_s();

    memset(&dd, 0, sizeof dd);
    dd.no_grid = opt->no_grid;
    strbuf_init(&bytes, (size_t)1 << 31);
    kt_error_clear(err);
    if (opt->hyper)
        hyper = json_loads(opt->hyper, 0, NULL);
    if (opt->hyper && !json_is_object(hyper)) {
        kt_error_set(err, KT_ERR_BAD_OPTION, "--hyper: not a JSON object of predictor -> object");
        goto out;
    }
    if (ba_devices(opt, exe_dir, &devs, &n_devs, &d, err) < 0 ||
        bap_load(opt, d, &dd, progress, err) < 0 ||
        training_set_split(dd.all, opt->test_fraction, opt->train_seed, &train, &test, err) < 0)
        goto out;
    for (int k = 0; k < opt->n_predictors; k++) {
        const char *kind = opt->predictors[k];
        double c0 = kt_clock_s();
        if (progress)
            fprintf(progress, "ktune bench: training %s on %d shapes\n", kind,
                    training_set_num_problems(train));
        if (!(p = predictor_train(kind, train, json_object_get(hyper, kind), opt->train_seed,
                                  err)) ||
            predictor_save(p, &bytes, err) < 0) {
            kt_error_prefix(err, "%s", kind);
            goto out;
        }
        double train_s = kt_clock_s() - c0;
        json_t *one = bap_judge(&dd, test, p, train_s, bytes.len, err);
        if (!one) {
            kt_error_prefix(err, "%s", kind);
            goto out;
        }
        json_object_set_new(preds, kind, one);
        predictor_free(p);
        p = NULL;
        strbuf_release(&bytes);
        strbuf_init(&bytes, (size_t)1 << 31);
    }
    res = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:i, s:I, s:f, s:f, s:I, s:o, s:O, "
                    "s:f}",
                    "mode", "accel-predict", "kernel", "cnn_layer", "device", d->name, "shapes",
                    dd.n, "train_shapes", training_set_num_problems(train), "test_shapes",
                    training_set_num_problems(test), "search", opt->predict_strategy,
                    "search_evals", opt->predict_evals, "search_evals_total",
                    (json_int_t)dd.search_evals, "search_s", dd.search_s, "test_fraction",
                    opt->test_fraction, "seed", (json_int_t)opt->train_seed, "constrained",
                    dd.uspace_failed ? json_string(dd.uspace_error) : json_true(), "predictors",
                    preds, "wall_s", kt_clock_s() - t0);
    json_t *paired = res ? bench_paired_report(json_object_get(res, "predictors"), bap_learned, 2,
                                               bap_baselines, 2)
                         : NULL;
    if (!paired || json_object_set_new(res, "paired", paired) < 0 ||
        json_object_set_new(res, "no_grid", json_boolean(opt->no_grid)) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        json_decref(res);
        res = NULL;
    }
out:
    predictor_free(p);
    strbuf_release(&bytes);
    training_set_free(train);
    training_set_free(test);
    bap_free(&dd);
    accel_devices_free(devs, n_devs);
    json_decref(hyper);
    json_decref(preds);
    return res;
}
