/* catalog/catalog_peak — a device's peak arithmetic rate (GFLOP/s, FP32, one multiply-add counted
 * as two operations), computed from the description GET /v1/devices shows, so that the dashboard
 * can put a measured GFLOP/s beside it (issue 31, "% of the device's peak where known"). Known only
 * where every factor is: an accel device's processing elements and clock (its cost model's own
 * figures); a CUDA device's multiprocessors, FP32 lanes per multiprocessor (by compute
 * capability, the CUDA programming guide's table) and clock (the probe's clock_mhz); a CPU's
 * physical cores, FP32 lanes of its widest FMA vectors (avx512f + fma 16, avx2 + fma 8) times two
 * FMA units per core, and its frequency only where the kernel's cpufreq says the maximum
 * (max_mhz): no frequency, no peak. A replayed dataset records times, not the device.
 * Pure. */
#ifndef KT_CATALOG_PEAK_H
#define KT_CATALOG_PEAK_H

#include <jansson.h>
#include <stddef.h>

/* kind: "cpu", "cuda", "accel" or "replay"; desc: the device's description (borrowed). Returns 1
 * with *gflops and basis (how it was computed: "132 SMs × 128 FP32 lanes × 2 (FMA) × 1980 MHz"),
 * or 0 with basis saying why it is unknown ("the CPU's frequency is not known: ..."). */
int catalog_peak(const char *kind, const json_t *desc, double *gflops, char *basis, size_t cap);

/* Adds "peak_gflops" (a number, or null) and "peak_basis" (the text above) to dev, a device of
 * GET /v1/devices ({"kind", "description", ...}). */
void catalog_peak_set(json_t *dev);

#endif
