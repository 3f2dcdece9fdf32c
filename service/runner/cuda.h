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
struct runner_sources; /* runner.h */

/* NULL with reason filled ("no CUDA driver (libcuda.so.1 not found)", "no CUDA device 1 (2
 * found)"). */
cuda_device *cuda_device_open(int ordinal, char *reason, size_t reason_cap);
/* The probe reply's "device" object (new reference). */
json_t *cuda_device_probe(cuda_device *d);
/* Handles a measure request (PROTOCOL.md); returns the reply object without "id" (new reference).
 */
json_t *cuda_device_measure(cuda_device *d, const json_t *request, const char *cache_dir);
void cuda_device_close(cuda_device *d);
/* The source texts of the requests that follow (runner.h's runner_sources, owned by the caller and
 * outliving d; NULL: sources are read from their paths). */
void cuda_device_use_sources(cuda_device *d, struct runner_sources *s);

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
/* NVRTC only, no driver or device needed: op "compile_check" (PROTOCOL.md), the compile check of a
 * CUDA variant where no CUDA device exists (issue 27's validation). Compiles text (len bytes,
 * NUL-terminated; name: the file name NVRTC's log shows) with defines for the newest architecture
 * NVRTC supports, cancelled after timeout_s (> 0) where NVRTC allows. Returns the reply without
 * "id" (new reference): {"ok": true, "status": "ok" | "compile_error" | "timeout", "nvrtc_version":
 * "13.0", "arch": 120, "compile_ms", "extras":
 * {"ptx_bytes", "log" (not ok: NVRTC's log tail)}}, or {"ok": false, "reason"} when NVRTC is not
 * available or failed; NULL when out of memory. */
json_t *cuda_compile_check(const char *name, const char *text, size_t len, const json_t *defines,
                           double timeout_s);

#endif
