/* bench/bench_judge — a predictor judged on held-out problems: the buffers and the decoding grid
 * (see bench_judge.h). */
#include "bench/bench_judge.h"

#include <stdlib.h>
#include <string.h>

const int bench_judge_ks[BENCH_JUDGE_NK] = {1, 10, 100};
const char *const bench_judge_modes[BENCH_JUDGE_MODES] = {"greedy", "free", "constrained"};

int bench_judge_init(bench_judge *j, int np, int n_problems, kt_error *err)
{
    size_t n = (size_t)(n_problems ? n_problems : 1);
    memset(j, 0, sizeof *j);
    j->rows = malloc((size_t)PREDICTOR_MAX_K * (size_t)np * sizeof *j->rows);
    j->score = malloc(PREDICTOR_MAX_K * sizeof *j->score);
    j->r1 = malloc(n * sizeof *j->r1);
    j->r5 = malloc(n * sizeof *j->r5);
    if (!j->rows || !j->score || !j->r1 || !j->r5) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return -1;
    }
    return 0;
}

void bench_judge_free(bench_judge *j)
{
    free(j->rows);
    free(j->score);
    free(j->r1);
    free(j->r5);
}

int bench_judge_decode(bench_judge *j, predictor *p, const json_t *problem, const space *sp, int m,
                       int kj, const int *best, bench_judge_valid_fn valid, void *ctx,
                       kt_error *err)
{
    int np = predictor_num_params(p), best_same = 0, n_valid = 0;
    int n = predictor_decode(p, problem, sp, (predict_mode)m, 0, bench_judge_ks[kj], j->rows,
                             j->score, err);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        const int *row = j->rows + (size_t)i * (size_t)np;
        int same = 0;
        for (int q = 0; q < np; q++)
            same += row[q] == best[q];
        best_same = same > best_same ? same : best_same;
        n_valid += valid(ctx, row);
    }
    j->acc[m][kj] += (double)best_same / np;
    j->perfect[m][kj] += n > 0 && best_same == np;
    j->valid[m][kj] += n_valid;
    j->emitted[m][kj] += n;
    return 0;
}

int bench_judge_grid_json(const bench_judge *j, int skip_empty, json_t *grid, kt_error *err)
{
    for (int m = 0; m < BENCH_JUDGE_MODES; m++) {
        json_t *mk = json_object();
        for (int k = 0; mk && k < BENCH_JUDGE_NK; k++) {
            char key[16];
            long e = j->emitted[m][k];
            if ((m == 0 && bench_judge_ks[k] > 1) || (skip_empty && e == 0))
                continue; /* greedy is one sequence */
            snprintf(key, sizeof key, "%d", bench_judge_ks[k]);
            json_object_set_new(mk, key,
                                json_pack("{s:f, s:f, s:o, s:I}", "param_accuracy",
                                          j->n ? j->acc[m][k] / j->n : 0.0, "perfect",
                                          j->n ? j->perfect[m][k] / j->n : 0.0, "valid",
                                          e ? json_real(j->valid[m][k] / (double)e) : json_null(),
                                          "emitted", (json_int_t)e));
        }
        if (!mk || json_object_set_new(grid, bench_judge_modes[m], mk) != 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            return -1;
        }
    }
    return 0;
}
