/* runner/cuda — the CUDA half of ktune-runner: the driver API (libcuda.so.1) and NVRTC opened with
 * dlopen, so the runner starts and reports "no CUDA device" cleanly where neither exists. main.c
 * calls these for
 * `--device cuda:N`; the compile-only entry point serves tests and checks on machines without a
 * GPU.
 *
 * Lifecycle: cuda_device_open -> cuda_device_probe / cuda_device_measure* -> cuda_device_close. */
#ifndef KT_RUNNER_CUDA_H
#define KT_RUNNER_CUDA_H

#include <jansson.h>
#include <stddef.h>

typedef struct cuda_device cuda_device;

/* NULL with reason filled ("no CUDA driver (libcuda.so.1 not found)", "no CUDA device 1 (2
 * found)"). */
cuda_device *cuda_device_open(int ordinal, char *reason, size_t reason_cap);
/* The probe reply's "device" object (new reference). */
json_t *cuda_device_probe(cuda_device *d);
/* Handles a measure request (PROTOCOL.md); returns the reply object without "id" (new reference).
 */
json_t *cuda_device_measure(cuda_device *d, const json_t *request, const char *cache_dir);
void cuda_device_close(cuda_device *d);

/* The toolchain CUDA results are keyed by (the probe's "toolchain"): the driver's version
 * (cuDriverGetVersion: 13000 -> "13.0"; 0 = unknown) and NVRTC's ("13.0", NULL when NVRTC is not
 * available): "cuda driver 13.0, nvrtc 13.0", "cuda driver 12.4, no nvrtc". Writes at most cap
 * bytes (NUL included, cap > 0). */
void cuda_toolchain_text(int driver_version, const char *nvrtc_version, char *out, size_t cap);

/* NVRTC only, no driver or device needed: compiles source_path with defines (object of name ->
 * integer) for sm_<arch> (e.g. 80, 90) into PTX (*ptx malloc'd, caller frees). Returns 0; -1 with
 * log filled (compile errors), or -2 when NVRTC itself is not available (log says why). */
int cuda_compile_ptx(const char *source_path, const json_t *defines, int arch, char **ptx,
                     char *log, size_t log_cap);

#endif
