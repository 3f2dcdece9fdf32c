/* model/problem_tokens — the problem as tokens and as a feature row (see problem_tokens.h). */
#include "model/problem_tokens.h"

#include <math.h>
#include <string.h>

static double pt_log2(double v)
{
    return log2(v < 1 ? 1 : v);
}

static double pt_mean_log2(const double *args, int n)
{
    double s = 0;
    for (int a = 0; a < n; a++)
        s += pt_log2(args[a]);
    return n > 0 ? s / n : 0;
}

/* 2^floor(log2 v) for v >= 1. */
static double pt_floor_pow2(double v)
{
    return exp2(floor(pt_log2(v)));
}

static int pt_trailing_zeros(double v)
{
    if (v < 1 || v != floor(v) || v > 9.0e15)
        return 0;
    long long x = (long long)v;
    int z = 0;
    while (z < 6 && x % 2 == 0) {
        x /= 2;
        z++;
    }
    return z;
}

int problem_tokens_dim(int n_args)
{
    return n_args + PROBLEM_TOKEN_FEATURES;
}

void problem_tokens(const double *args, int n_args, double *out)
{
    int dim = problem_tokens_dim(n_args);
    double mean = pt_mean_log2(args, n_args);
    memset(out, 0, (size_t)n_args * (size_t)dim * sizeof *out);
    for (int a = 0; a < n_args; a++) {
        double *t = out + (size_t)a * (size_t)dim, v = args[a] < 1 ? 1 : args[a];
        double *f = t + n_args, e = pt_floor_pow2(v);
        int tz = pt_trailing_zeros(args[a]);
        t[a] = 1;
        f[0] = pt_log2(v) / 16;
        for (int j = 1; j <= 6; j++)
            f[j] = tz >= j ? 1 : 0;
        f[7] = (v - e) / e;
        f[8] = v == e ? 1 : 0;
        f[9] = (pt_log2(v) - mean) / 8;
    }
}

int problem_features_dim(int n_args)
{
    return 4 * n_args + 2;
}

int problem_features_derived_dim(int n_args, int n_derived)
{
    return problem_features_dim(n_args) + 3 * n_derived;
}

void problem_features_derived(const double *args, int n_args, int n_derived, float *out)
{
    problem_features(args, n_args, out);
    float *d = out + problem_features_dim(n_args);
    for (int i = 0; i < n_derived; i++) {
        double x = args[n_args + i], v = x < 1 ? 1 : x, e = pt_floor_pow2(v);
        d[3 * i] = (float)pt_log2(v);
        d[3 * i + 1] = (float)((v - e) / e);
        d[3 * i + 2] = (float)pt_trailing_zeros(x);
    }
}

void problem_features(const double *args, int n_args, float *out)
{
    double mean = pt_mean_log2(args, n_args), sum = 0, lo = INFINITY, hi = -INFINITY;
    for (int a = 0; a < n_args; a++) {
        double v = args[a] < 1 ? 1 : args[a], l = pt_log2(v), e = pt_floor_pow2(v);
        out[4 * a] = (float)l;
        out[4 * a + 1] = (float)((v - e) / e);
        out[4 * a + 2] = (float)pt_trailing_zeros(args[a]);
        out[4 * a + 3] = (float)(l - mean);
        sum += l;
        lo = l < lo ? l : lo;
        hi = l > hi ? l : hi;
    }
    out[4 * n_args] = (float)sum;
    out[4 * n_args + 1] = (float)(n_args > 0 ? hi - lo : 0);
}
