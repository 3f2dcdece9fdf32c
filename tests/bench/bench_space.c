/* Bench of space/: build time (best of several) of the CLBlast GEMM space and the G-BFS tiling
 * spaces, then per-call cost of sampling (+ decode), encoding and neighbour walks. Prints; asserts
 * nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "space/space.h"

static json_t *load_clblast(json_t **restrictions)
{
    const char *path = KT_SHARED_DATA_DIR "/gpu-spaces/gemm_clblast-RTX_2080_Ti.json.gz";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s' 2>/dev/null", path);
    FILE *f = popen(cmd, "r");
    if (!f)
        return NULL;
    json_t *doc = json_loadf(f, 0, NULL);
    pclose(f);
    if (!doc)
        return NULL;
    json_t *params = json_array();
    size_t i;
    json_t *key;
    json_array_foreach(json_object_get(doc, "tune_params_keys"), i, key)
    {
        json_t *vals = json_object_get(json_object_get(doc, "tune_params"), json_string_value(key));
        json_array_append_new(params, json_pack("{s:O, s:O}", "name", key, "values", vals));
    }
    *restrictions = json_incref(json_object_get(doc, "restrictions"));
    json_decref(doc);
    return params;
}

static void tiling(int max_exp, long size, json_t **params, json_t **restrictions)
{
    static const char *const names[] = {"m0", "m1", "m2", "m3", "k0", "k1", "n0", "n1", "n2", "n3"};
    *params = json_array();
    for (int p = 0; p < 10; p++) {
        json_t *vals = json_array();
        for (int e = 0; e <= max_exp; e++)
            json_array_append_new(vals, json_integer(1LL << e));
        json_array_append_new(*params, json_pack("{s:s, s:o}", "name", names[p], "values", vals));
    }
    char r[3][64];
    snprintf(r[0], sizeof r[0], "m0*m1*m2*m3 == %ld", size);
    snprintf(r[1], sizeof r[1], "k0*k1 == %ld", size);
    snprintf(r[2], sizeof r[2], "n0*n1*n2*n3 == %ld", size);
    *restrictions = json_pack("[s,s,s]", r[0], r[1], r[2]);
}

/* Builds reps times; prints the best time and returns the last space. */
static space *bench_build(const char *label, json_t *params, json_t *restrictions, int reps)
{
    double best = 1e30;
    space *sp = NULL;
    for (int i = 0; i < reps; i++) {
        space_free(sp);
        kt_error err;
        double t0 = kt_clock_ms();
        sp = space_new(params, restrictions, NULL, NULL, &err);
        double t = kt_clock_ms() - t0;
        if (!sp) {
            printf("%-28s build failed: %s\n", label, err.message);
            return NULL;
        }
        if (t < best)
            best = t;
    }
    printf("%-28s build %8.3f ms (best of %d)  valid %llu of raw %.0f, %d groups\n", label, best,
           reps, (unsigned long long)space_count(sp), space_raw_size(sp), space_num_groups(sp));
    return sp;
}

static void bench_queries(const char *label, const space *sp)
{
    kt_rng rng;
    kt_rng_seed(&rng, 1);
    int idx[64];
    const int n = 1000000;
    uint64_t sink = 0;
    double t0 = kt_clock_ms();
    for (int i = 0; i < n; i++) {
        config_id id = space_sample(sp, &rng);
        space_decode(sp, id, idx);
        sink += (uint64_t)idx[0];
    }
    double t_sample = (kt_clock_ms() - t0) * 1e6 / n;
    t0 = kt_clock_ms();
    for (int i = 0; i < n; i++) {
        config_id id = kt_rng_below(&rng, space_count(sp)), back;
        space_decode(sp, id, idx);
        space_encode(sp, idx, &back);
        sink += back;
    }
    double t_round = (kt_clock_ms() - t0) * 1e6 / n;
    printf("%-28s sample+decode %6.1f ns   decode+encode %6.1f ns\n", label, t_sample, t_round);
    static const char *const kinds[] = {"adjacent", "hamming", "pair_scale"};
    config_id out[4096];
    for (int k = 0; k < 3; k++) {
        const int walks = 200000;
        long total = 0;
        t0 = kt_clock_ms();
        for (int i = 0; i < walks; i++) {
            config_id id = space_sample(sp, &rng);
            total += space_neighbours(sp, id, (space_neighbour_kind)k, out, 4096);
        }
        double t = (kt_clock_ms() - t0) * 1e6 / walks;
        printf("%-28s   neighbours %-10s %8.1f ns per walk, %5.1f found on average (max %d)\n", "",
               kinds[k], t, (double)total / walks,
               space_max_neighbours(sp, (space_neighbour_kind)k));
    }
    if (sink == 42)
        printf("\n");
}

int main(void)
{
    json_t *params, *restrictions;
    if ((params = load_clblast(&restrictions))) {
        space *sp = bench_build("clblast gemm (2080 Ti)", params, restrictions, 20);
        if (sp)
            bench_queries("clblast gemm (2080 Ti)", sp);
        space_free(sp);
        json_decref(params);
        json_decref(restrictions);
    } else {
        printf("clblast gemm: dataset absent, skipped\n");
    }
    static const struct {
        const char *label;
        int max_exp;
        long size;
    } tilings[] = {{"g-bfs tiling 1024^3", 10, 1024},
                   {"g-bfs tiling 2048^3", 11, 2048},
                   {"g-bfs tiling 512^3", 9, 512}};
    for (size_t i = 0; i < sizeof tilings / sizeof tilings[0]; i++) {
        tiling(tilings[i].max_exp, tilings[i].size, &params, &restrictions);
        space *sp = bench_build(tilings[i].label, params, restrictions, 10);
        if (sp && i == 0)
            bench_queries(tilings[i].label, sp);
        space_free(sp);
        json_decref(params);
        json_decref(restrictions);
    }
    return 0;
}
