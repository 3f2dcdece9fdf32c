/* bench/offline/bench_cv — the cross-validated table of `auto`: leave one kernel family out (see
 * bench_cv.h). */
#include "bench/offline/bench_cv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_loop.h"
#include "bench/offline/bench_kt.h"
#include "bench/offline/bench_space.h"

/* auto's tunable constants (search/auto.c's options), a small grid: the pool's pick by the GP's
 * expected improvement with the share of random proposals, the results without a new best before
 * the local walk, the random samples in the pool and the walk's order (ridge or EI); the first is
 * the earlier default (the ridge surrogate's pick). Dropped after a first round: `initial` 5 (10
 * was chosen on every fold), `long_stall` 60 against 30, `exploration` 0. */
static const char *const bench_cv_candidates[] = {
    "{\"model\": \"ridge\", \"exploration\": 0.15, \"stall\": 5, \"pool\": 128}",
    "{\"model\": \"ei\", \"walk\": \"ridge\", \"exploration\": 0.05, \"stall\": 3, \"pool\": 32}",
    "{\"model\": \"ei\", \"walk\": \"ei\", \"exploration\": 0.05, \"stall\": 3, \"pool\": 32}",
    "{\"model\": \"ei\", \"walk\": \"ridge\", \"exploration\": 0.05, \"stall\": 3, \"pool\": 128}",
    "{\"model\": \"ei\", \"walk\": \"ei\", \"exploration\": 0.05, \"stall\": 3, \"pool\": 128}",
    "{\"model\": \"ei\", \"walk\": \"ridge\", \"exploration\": 0.05, \"stall\": 5, \"pool\": 32}",
    "{\"model\": \"ei\", \"walk\": \"ei\", \"exploration\": 0.05, \"stall\": 5, \"pool\": 32}",
    "{\"model\": \"ei\", \"walk\": \"ridge\", \"exploration\": 0.05, \"stall\": 5, \"pool\": 128}",
    "{\"model\": \"ei\", \"walk\": \"ei\", \"exploration\": 0.05, \"stall\": 5, \"pool\": 128}",
    "{\"model\": \"ei\", \"walk\": \"ridge\", \"exploration\": 0.15, \"stall\": 3, \"pool\": 32}",
    "{\"model\": \"ei\", \"walk\": \"ei\", \"exploration\": 0.15, \"stall\": 3, \"pool\": 32}",
    "{\"model\": \"ei\", \"walk\": \"ridge\", \"exploration\": 0.15, \"stall\": 3, \"pool\": 128}",
    "{\"model\": \"ei\", \"walk\": \"ei\", \"exploration\": 0.15, \"stall\": 3, \"pool\": 128}",
    "{\"model\": \"ei\", \"walk\": \"ridge\", \"exploration\": 0.15, \"stall\": 5, \"pool\": 32}",
    "{\"model\": \"ei\", \"walk\": \"ei\", \"exploration\": 0.15, \"stall\": 5, \"pool\": 32}",
    "{\"model\": \"ei\", \"walk\": \"ridge\", \"exploration\": 0.15, \"stall\": 5, \"pool\": 128}",
    "{\"model\": \"ei\", \"walk\": \"ei\", \"exploration\": 0.15, \"stall\": 5, \"pool\": 128}",
};
#define BENCH_CV_N (int)(sizeof bench_cv_candidates / sizeof bench_cv_candidates[0])
#define CV_LO      25 /* the checkpoints a candidate is scored on: 25..400 */
#define CV_HI      400
#define CV_MAX_CP  16

const char *const *bench_cv_grid(int *n)
{
    *n = BENCH_CV_N;
    return bench_cv_candidates;
}

size_t bench_cv_family_len(const char *name)
{
    const char *u = strchr(name, '_');
    return u ? (size_t)(u - name) : strlen(name);
}

int bench_cv_wanted(const bench_options *opt)
{
    int has_auto = 0;
    for (int s = 0; s < opt->n_strategies; s++)
        has_auto |= strcmp(opt->strategies[s], "auto") == 0;
    return has_auto && opt->cv_seeds > 0 && !opt->remote && !opt->maker && opt->n_history == 0;
}

/* One replayed run's best so far (carried forward), as bench_run's evaluator keeps it. */
typedef struct cv_replay {
    const bench_space *bs;
    double best;
    double *curve;
} cv_replay;

static int cv_evaluate(bench_loop *l, config_id id, trial_result *r, kt_error *err)
{
    cv_replay *e = l->ctx;
    (void)err;
    trial_result_init(r);
    if (isnan(e->bs->time[id])) {
        r->status = TRIAL_RUNTIME_ERROR;
    } else {
        r->status = TRIAL_OK;
        r->time_ms = e->bs->time[id];
        r->repeats = 1;
        if (r->time_ms < e->best)
            e->best = r->time_ms;
    }
    r->compile_ms = e->bs->cost_s[id] * 1000.0;
    e->curve[l->evals] = e->best;
    return 0;
}

/* Mean fraction of the optimum over seeds 0..seeds-1 of auto with options on bs, at the ncp
 * checkpoints cp, into frac. 0, or -1 with err. */
static int cv_fractions(const bench_space *bs, const json_t *options, int seeds, int budget,
                        const int *cp, int ncp, int batch, double *frac, kt_error *err)
{
    int len = (uint64_t)budget < bs->n ? budget : (int)bs->n, rc = -1;
    double *curve = malloc((size_t)(len > 0 ? len : 1) * sizeof *curve);
    char what[256];
    if (!curve)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int k = 0; k < ncp; k++)
        frac[k] = 0;
    for (int s = 0; s < seeds; s++) {
        cv_replay e = {bs, INFINITY, curve};
        bench_loop l = {0};
        snprintf(what, sizeof what, "cross-validation: auto on %s, seed %d", bs->name, s);
        if (!(l.s = searcher_new("auto", bs->sp, options, (uint64_t)s, err)))
            goto out;
        l.budget = len;
        l.batch = batch;
        l.space_n = bs->n;
        l.what = what;
        l.ctx = &e;
        l.evaluate = cv_evaluate;
        int lrc = bench_loop_run(&l, err);
        searcher_free(l.s);
        if (lrc < 0)
            goto out;
        for (int k = l.evals; k < len; k++) /* stopped early: the last best carried */
            curve[k] = e.best;
        for (int k = 0; k < ncp; k++) {
            double b = len > 0 ? curve[(cp[k] < len ? cp[k] : len) - 1] : INFINITY;
            frac[k] += isfinite(b) && b > 0 ? bs->optimum / b : 0;
        }
    }
    for (int k = 0; k < ncp; k++)
        frac[k] /= seeds;
    rc = 0;
out:
    free(curve);
    return rc;
}

/* {"<cp>": v[k]} */
static json_t *cv_points(const int *cp, int ncp, const double *v)
{
    json_t *o = json_object();
    for (int k = 0; o && k < ncp; k++) {
        char key[24];
        snprintf(key, sizeof key, "%d", cp[k]);
        json_object_set_new(o, key, json_real(v[k]));
    }
    return o;
}

/* The training score of candidate g without family skip (-1: none left out): the mean over the
 * other families of their spaces' mean score. */
static double cv_train_score(const double *score, const int *fam, int n_spaces, int n_fam, int g,
                             int skip)
{
    double sum = 0;
    int used = 0;
    for (int f = 0; f < n_fam; f++) {
        double fs = 0;
        int m = 0;
        for (int i = 0; i < n_spaces; i++) {
            if (fam[i] == f) {
                fs += score[(size_t)g * n_spaces + i];
                m++;
            }
        }
        if (f != skip && m > 0) {
            sum += fs / m;
            used++;
        }
    }
    return used ? sum / used : 0;
}

/* The best candidate on every family but skip (ties: the first): its index, its score in *s. */
static int cv_choose(const double *score, const int *fam, int n_spaces, int n_fam, int skip,
                     double *s)
{
    int best = 0;
    *s = -INFINITY;
    for (int g = 0; g < BENCH_CV_N; g++) {
        double t = cv_train_score(score, fam, n_spaces, n_fam, g, skip);
        if (t > *s) {
            *s = t;
            best = g;
        }
    }
    return best;
}

/* auto's plain fractions on the space named name (of the plain result's spaces) at cp into v:
 * 1, or 0 when the plain result has none. */
static int cv_plain(const json_t *plain, const char *name, const int *cp, int ncp, double *v)
{
    size_t i;
    json_t *sp;
    json_array_foreach(plain, i, sp)
    {
        const char *n = json_string_value(json_object_get(sp, "name"));
        const json_t *a = json_object_get(json_object_get(sp, "strategies"), "auto");
        const json_t *fr = json_object_get(a, "fraction");
        if (!n || strcmp(n, name) != 0 || !fr)
            continue;
        for (int k = 0; k < ncp; k++) {
            char key[24];
            snprintf(key, sizeof key, "%d", cp[k]);
            v[k] = json_number_value(json_object_get(fr, key));
        }
        return 1;
    }
    return 0;
}

/* What the cross-validation holds while it runs. */
typedef struct cv_ctx {
    bench_space *bs; /* n_spaces loaded spaces */
    int n_spaces;
    int *fam; /* per space: its family's index */
    char (*fam_name)[REPLAY_MAX_NAME + 1];
    int n_fam;
    json_t *opts[BENCH_CV_N]; /* the candidates, parsed */
    double *score;            /* BENCH_CV_N x n_spaces: mean fraction over the scored checkpoints */
    int cp[CV_MAX_CP], ncp;   /* every checkpoint of the table */
    int sc[CV_MAX_CP], nsc;   /* the scored ones (25..400), as indices into cp */
} cv_ctx;

static void cv_free(cv_ctx *c)
{
    for (int i = 0; c->bs && i < c->n_spaces; i++)
        bench_space_free(&c->bs[i]);
    free(c->bs);
    free(c->fam);
    free(c->fam_name);
    free(c->score);
    for (int g = 0; g < BENCH_CV_N; g++)
        json_decref(c->opts[g]);
}

/* Loads the spaces and groups them by family. 0, or -1 with err. */
static int cv_load(cv_ctx *c, const bench_options *opt, const json_t *paths, kt_error *err)
{
    size_t n = json_array_size(paths), i;
    json_t *p;
    c->bs = calloc(n ? n : 1, sizeof *c->bs);
    c->fam = calloc(n ? n : 1, sizeof *c->fam);
    c->fam_name = calloc(n ? n : 1, sizeof *c->fam_name);
    c->score = calloc((size_t)BENCH_CV_N * (n ? n : 1), sizeof *c->score);
    if (!c->bs || !c->fam || !c->fam_name || !c->score)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    json_array_foreach(paths, i, p)
    {
        if (bench_space_load(json_string_value(p), opt->include_failed, &c->bs[i], err) < 0)
            return -1;
        c->n_spaces++;
        const char *name = c->bs[i].name;
        size_t len = bench_cv_family_len(name);
        int f = 0;
        while (f < c->n_fam &&
               (strlen(c->fam_name[f]) != len || strncmp(c->fam_name[f], name, len) != 0))
            f++;
        if (f == c->n_fam)
            snprintf(c->fam_name[c->n_fam++], sizeof c->fam_name[0], "%.*s", (int)len, name);
        c->fam[i] = f;
    }
    return 0;
}

/* The checkpoints: all of the table's, and which of them (25..400) score a candidate. */
static void cv_checkpoints(cv_ctx *c, const json_t *checkpoints)
{
    size_t i;
    json_t *v;
    json_array_foreach(checkpoints, i, v)
    {
        int b = (int)json_integer_value(v);
        if (c->ncp == CV_MAX_CP)
            break;
        if (b >= CV_LO && b <= CV_HI)
            c->sc[c->nsc++] = c->ncp;
        c->cp[c->ncp++] = b;
    }
}

/* Every candidate's score on every space (cv_seeds seeds each). 0, or -1 with err. */
static int cv_score_candidates(cv_ctx *c, const bench_options *opt, int batch, json_t *cands,
                               kt_error *err)
{
    double frac[CV_MAX_CP];
    for (int g = 0; g < BENCH_CV_N; g++) {
        json_t *per = json_object();
        json_array_append_new(cands, json_pack("{s:O, s:o}", "options", c->opts[g], "score", per));
        for (int i = 0; i < c->n_spaces; i++) {
            if (cv_fractions(&c->bs[i], c->opts[g], opt->cv_seeds, opt->budget, c->cp, c->ncp,
                             batch, frac, err) < 0)
                return -1;
            double s = 0;
            for (int k = 0; k < c->nsc; k++)
                s += frac[c->sc[k]];
            c->score[(size_t)g * c->n_spaces + i] = s / c->nsc;
            json_object_set_new(per, c->bs[i].name, json_real(s / c->nsc));
        }
    }
    return 0;
}

/* The names of family f's spaces as [{"name"}] (bench_kt_mean_best's shape), or every space's
 * when f is -1. */
static json_t *cv_space_list(const cv_ctx *c, int f)
{
    json_t *a = json_array();
    for (int i = 0; a && i < c->n_spaces; i++)
        if (f < 0 || c->fam[i] == f)
            json_array_append_new(a, json_pack("{s:s}", "name", c->bs[i].name));
    return a;
}

/* One held-out family: its chosen candidate run with --seeds seeds on its spaces; the family's
 * means into the entry, each space's CV fractions added to sum (and plain ones to psum). */
static int cv_family(cv_ctx *c, const bench_options *opt, int batch, int f, const json_t *kt_ref,
                     const json_t *plain, double *sum, double *psum, int *have_plain,
                     json_t *families, kt_error *err)
{
    double train, frac[CV_MAX_CP], fm[CV_MAX_CP] = {0}, pm[CV_MAX_CP] = {0}, pv[CV_MAX_CP];
    int g = cv_choose(c->score, c->fam, c->n_spaces, c->n_fam, f, &train), m = 0, pl = 1;
    json_t *names = json_array(), *spaces = cv_space_list(c, f);
    for (int i = 0; i < c->n_spaces; i++) {
        if (c->fam[i] != f)
            continue;
        if (cv_fractions(&c->bs[i], c->opts[g], opt->seeds, opt->budget, c->cp, c->ncp, batch, frac,
                         err) < 0) {
            json_decref(names);
            json_decref(spaces);
            return -1;
        }
        json_array_append_new(names, json_string(c->bs[i].name));
        int has = cv_plain(plain, c->bs[i].name, c->cp, c->ncp, pv);
        pl &= has;
        *have_plain &= has;
        for (int k = 0; k < c->ncp; k++) {
            fm[k] += frac[k];
            sum[k] += frac[k];
            pm[k] += has ? pv[k] : 0;
            psum[k] += has ? pv[k] : 0;
        }
        m++;
    }
    for (int k = 0; k < c->ncp; k++) {
        fm[k] /= m;
        pm[k] /= m;
    }
    json_t *e = json_pack("{s:s, s:o, s:O, s:i, s:f, s:o}", "family", c->fam_name[f], "spaces",
                          names, "chosen", c->opts[g], "chosen_index", g, "train_score", train,
                          "fraction", cv_points(c->cp, c->ncp, fm));
    if (e && pl)
        json_object_set_new(e, "plain", cv_points(c->cp, c->ncp, pm));
    if (e && kt_ref) {
        json_t *cps = json_array();
        for (int k = 0; k < c->ncp; k++)
            json_array_append_new(cps, json_integer(c->cp[k]));
        json_object_set_new(e, "kt_best", bench_kt_mean_best(kt_ref, spaces, cps));
        json_decref(cps);
    }
    json_decref(spaces);
    json_array_append_new(families, e);
    return 0;
}

json_t *bench_cv_run(const bench_options *opt, const json_t *paths, const json_t *checkpoints,
                     const json_t *kt_ref, const json_t *plain, kt_error *err)
{
    cv_ctx c;
    json_t *res = NULL, *cands = json_array(), *families = json_array();
    double sum[CV_MAX_CP] = {0}, psum[CV_MAX_CP] = {0}, train;
    int batch = opt->batch > 0 ? opt->batch : 1, have_plain = plain != NULL;

    memset(&c, 0, sizeof c);
    kt_error_clear(err);
    if (!cands || !families) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int g = 0; g < BENCH_CV_N; g++)
        if (!(c.opts[g] = json_loads(bench_cv_candidates[g], 0, NULL))) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
    if (cv_load(&c, opt, paths, err) < 0)
        goto out;
    cv_checkpoints(&c, checkpoints);
    if (c.n_fam < 2 || c.nsc == 0)
        goto out; /* nothing to leave out, or nothing to score: no table */
    if (cv_score_candidates(&c, opt, batch, cands, err) < 0)
        goto out;
    for (int f = 0; f < c.n_fam; f++)
        if (cv_family(&c, opt, batch, f, kt_ref, plain, sum, psum, &have_plain, families, err) < 0)
            goto out;
    for (int k = 0; k < c.ncp; k++) {
        sum[k] /= c.n_spaces;
        psum[k] /= c.n_spaces;
    }
    int g = cv_choose(c.score, c.fam, c.n_spaces, c.n_fam, -1, &train);
    res = json_pack("{s:s, s:i, s:i, s:o, s:o, s:{s:O, s:i, s:f}, s:o}", "strategy", "auto",
                    "cv_seeds", opt->cv_seeds, "seeds", opt->seeds, "candidates", cands, "families",
                    families, "all", "chosen", c.opts[g], "chosen_index", g, "train_score", train,
                    "mean", cv_points(c.cp, c.ncp, sum));
    cands = families = NULL;
    if (res && have_plain)
        json_object_set_new(res, "plain_mean", cv_points(c.cp, c.ncp, psum));
    if (res && kt_ref) {
        json_t *all = cv_space_list(&c, -1);
        json_object_set_new(res, "kt_best", bench_kt_mean_best(kt_ref, all, checkpoints));
        json_decref(all);
    }
    if (!res)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    json_decref(cands);
    json_decref(families);
    cv_free(&c);
    return res;
}

/* One row: label, then the fractions of pts ({"<cp>": f}) at the result's checkpoints. */
static void cv_row(FILE *out, const char *label, const json_t *pts, const json_t *cps, int kt)
{
    size_t i;
    json_t *v;
    fprintf(out, "  %-12s", label);
    json_array_foreach(cps, i, v)
    {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(v));
        const json_t *x = json_object_get(pts, key);
        if (kt)
            x = json_object_get(x, "fraction");
        if (json_is_number(x))
            fprintf(out, " %7.4f", json_number_value(x));
        else
            fprintf(out, " %7s", "-");
    }
    fputc('\n', out);
}

/* The candidate's options as one line of text into buf. */
static const char *cv_options_text(const json_t *o, char *buf, size_t cap)
{
    char *t = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
    snprintf(buf, cap, "%s", t ? t : "?");
    free(t);
    return buf;
}

void bench_cv_print(const json_t *result, FILE *out)
{
    const json_t *cv = json_object_get(result, "cross_validation");
    const json_t *cps = json_object_get(result, "checkpoints");
    size_t i;
    json_t *f, *v;
    char buf[256];
    if (!cv)
        return;
    fprintf(out,
            "\ncross-validated auto: leave one kernel family out (%zu families). For each family, "
            "auto's constants\n  are the best of %zu candidates on the other families (mean "
            "fraction over @%d..@%d, %lld seeds per space,\n  each family weighted equally), then "
            "run on the held-out family with %lld seeds.\n",
            json_array_size(json_object_get(cv, "families")),
            json_array_size(json_object_get(cv, "candidates")), CV_LO, CV_HI,
            (long long)json_integer_value(json_object_get(cv, "cv_seeds")),
            (long long)json_integer_value(json_object_get(cv, "seeds")));
    fprintf(out, "  %-12s", "");
    json_array_foreach(cps, i, v)
    {
        snprintf(buf, sizeof buf, "@%lld", (long long)json_integer_value(v));
        fprintf(out, " %7s", buf);
    }
    fputc('\n', out);
    json_array_foreach(json_object_get(cv, "families"), i, f)
    {
        fprintf(out, "%s (%zu spaces): chosen on the others %s (train %.4f)\n",
                json_string_value(json_object_get(f, "family")),
                json_array_size(json_object_get(f, "spaces")),
                cv_options_text(json_object_get(f, "chosen"), buf, sizeof buf),
                json_number_value(json_object_get(f, "train_score")));
        cv_row(out, "auto CV", json_object_get(f, "fraction"), cps, 0);
        if (json_object_get(f, "plain"))
            cv_row(out, "auto plain", json_object_get(f, "plain"), cps, 0);
        if (json_object_get(f, "kt_best"))
            cv_row(out, "KT best", json_object_get(f, "kt_best"), cps, 1);
    }
    fprintf(out, "mean over the spaces (each with its family's held-out figures)\n");
    cv_row(out, "auto CV", json_object_get(cv, "mean"), cps, 0);
    if (json_object_get(cv, "plain_mean"))
        cv_row(out, "auto plain", json_object_get(cv, "plain_mean"), cps, 0);
    if (json_object_get(cv, "kt_best"))
        cv_row(out, "KT best", json_object_get(cv, "kt_best"), cps, 1);
    const json_t *all = json_object_get(cv, "all");
    fprintf(out, "chosen on every family (train %.4f): %s\n",
            json_number_value(json_object_get(all, "train_score")),
            cv_options_text(json_object_get(all, "chosen"), buf, sizeof buf));
}
