#include "catalog/catalog_peak.h"

#include <stdio.h>
#include <string.h>

/* FP32 lanes per multiprocessor by compute capability (major * 10 + minor); 0: unknown. */
static int cuda_fp32_lanes(long long cc)
{
    if (cc >= 30 && cc < 40)
        return 192;
    if (cc >= 50 && cc < 60)
        return 128;
    if (cc == 60)
        return 64;
    if (cc == 61 || cc == 62)
        return 128;
    if (cc >= 70 && cc <= 75)
        return 64;
    if (cc == 80)
        return 64;
    if (cc == 86 || cc == 87 || cc == 89 || cc == 90)
        return 128;
    if (cc >= 100 && cc <= 121)
        return 128;
    return 0;
}

static int has_isa(const json_t *desc, const char *flag)
{
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(desc, "isa"), i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), flag) == 0)
            return 1;
    }
    return 0;
}

static double positive(const json_t *desc, const char *key)
{
    const json_t *v = json_object_get(desc, key);
    return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : 0;
}

static int cpu_peak(const json_t *desc, double *gflops, char *basis, size_t cap)
{
    double mhz = positive(desc, "max_mhz"), cores = positive(desc, "physical_cores");
    int lanes = !has_isa(desc, "fma")      ? 0
                : has_isa(desc, "avx512f") ? 16
                : has_isa(desc, "avx2")    ? 8
                                           : 0;
    if (mhz <= 0) {
        snprintf(basis, cap,
                 "peak unknown: the CPU's frequency is not known (no cpufreq maximum "
                 "frequency on this host)");
        return 0;
    }
    if (lanes == 0) {
        snprintf(basis, cap,
                 "peak unknown: no x86 FMA vector width (avx2 or avx512f with fma) "
                 "among the probed ISA flags");
        return 0;
    }
    if (cores <= 0) {
        snprintf(basis, cap, "peak unknown: the number of physical cores is not known");
        return 0;
    }
    *gflops = cores * lanes * 2.0 * 2.0 * mhz / 1000.0;
    snprintf(basis, cap,
             "%.0f physical cores × %d FP32 lanes (%s) × 2 FMA units × 2 (FMA) × %.0f MHz "
             "(cpufreq maximum)",
             cores, lanes, lanes == 16 ? "avx512f" : "avx2", mhz);
    return 1;
}

static int cuda_peak(const json_t *desc, double *gflops, char *basis, size_t cap)
{
    double sms = positive(desc, "sms"), mhz = positive(desc, "clock_mhz");
    long long cc = json_integer_value(json_object_get(desc, "compute_capability"));
    int lanes = cuda_fp32_lanes(cc);
    if (sms <= 0 || mhz <= 0 || lanes == 0) {
        snprintf(basis, cap, "peak unknown: %s",
                 sms <= 0   ? "the probe reports no multiprocessor count"
                 : mhz <= 0 ? "the probe reports no clock rate"
                            : "FP32 lanes per multiprocessor unknown for this compute capability");
        return 0;
    }
    *gflops = sms * lanes * 2.0 * mhz / 1000.0;
    snprintf(basis, cap, "%.0f SMs × %d FP32 lanes (sm_%lld) × 2 (FMA) × %.0f MHz", sms, lanes, cc,
             mhz);
    return 1;
}

static int accel_peak(const json_t *desc, double *gflops, char *basis, size_t cap)
{
    double pes = positive(desc, "pes"), ghz = positive(desc, "clock_ghz");
    if (pes <= 0 || ghz <= 0) {
        snprintf(basis, cap, "peak unknown: the device file gives no pes or clock_ghz");
        return 0;
    }
    *gflops = pes * 2.0 * ghz;
    snprintf(basis, cap, "%.0f PEs × 2 (one multiply-accumulate a cycle) × %g GHz", pes, ghz);
    return 1;
}

int catalog_peak(const char *kind, const json_t *desc, double *gflops, char *basis, size_t cap)
{
    *gflops = 0;
    if (kind && strcmp(kind, "cpu") == 0)
        return cpu_peak(desc, gflops, basis, cap);
    if (kind && strcmp(kind, "cuda") == 0)
        return cuda_peak(desc, gflops, basis, cap);
    if (kind && strcmp(kind, "accel") == 0)
        return accel_peak(desc, gflops, basis, cap);
    snprintf(basis, cap, "peak unknown: %s",
             kind && strcmp(kind, "replay") == 0
                 ? "a replayed dataset records times, not the device's attributes"
                 : "no peak is known for this kind of device");
    return 0;
}

void catalog_peak_set(json_t *dev)
{
    char basis[256];
    double gflops = 0;
    if (!dev)
        return;
    int known = catalog_peak(json_string_value(json_object_get(dev, "kind")),
                             json_object_get(dev, "description"), &gflops, basis, sizeof basis);
    json_object_set_new(dev, "peak_gflops", known ? json_real(gflops) : json_null());
    json_object_set_new(dev, "peak_basis", json_string(basis));
}
