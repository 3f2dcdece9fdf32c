/* bench/bench_ratio — see bench_ratio.h. */
#include "bench/bench_ratio.h"

#include <math.h>
#include <stdlib.h>

static int ratio_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

json_t *bench_ratio_median(double *v, int n, const char *nonfinite)
{
    if (n == 0)
        return json_null();
    qsort(v, (size_t)n, sizeof *v, ratio_cmp);
    double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return isfinite(m) ? json_real(m) : json_string(nonfinite);
}

json_t *bench_ratio_share(const double *v, int n, double limit)
{
    int w = 0;
    for (int i = 0; i < n; i++)
        w += v[i] <= limit;
    return n ? json_real((double)w / n) : json_null();
}
