/* runner/cuda_internal — shared by the runner's cuda_*.c files (and tests/gpu/gemm_cublas.c, which
 * times cuBLAS through the same driver table): the dlopen'ed driver and NVRTC function tables
 * (prototypes declared here, never from cuda.h / nvrtc.h, so nothing links against CUDA), the
 * device struct, and the helpers that cuda_measure.c builds on.
 * Call order: cuda_driver_load / cuda_nvrtc_load -> calls through the tables -> *_unload. */
#ifndef KT_RUNNER_CUDA_INTERNAL_H
#define KT_RUNNER_CUDA_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/cuda.h"

/* Driver API types, as the driver ABI defines them (64-bit device pointers: the _v2 entry points).
 */
typedef int cuda_cu_result;
typedef int cuda_cu_device;
typedef void *cuda_cu_context;
typedef void *cuda_cu_module;
typedef void *cuda_cu_function;
typedef void *cuda_cu_event;
typedef void *cuda_cu_stream;
typedef unsigned long long cuda_cu_deviceptr;

/* The enum values used here (CUdevice_attribute, CUfunction_attribute, CUjit_option, CUresult). */
enum {
    CUDA_CU_SUCCESS = 0,
    CUDA_CU_ERROR_INVALID_VALUE = 1,
    CUDA_CU_ERROR_OUT_OF_MEMORY = 2,
    CUDA_CU_ERROR_NO_DEVICE = 100,
    CUDA_CU_ERROR_INVALID_IMAGE = 200,
    CUDA_CU_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_CU_ERROR_INVALID_PTX = 218,
    CUDA_CU_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_CU_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_CU_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_CU_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_CU_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_CU_ERROR_ASSERT = 710,
    CUDA_CU_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_CU_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_CU_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_CU_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_CU_ERROR_INVALID_PC = 718,
    CUDA_CU_ERROR_LAUNCH_FAILED = 719,
    CUDA_CU_ERROR_TENSOR_MEMORY_LEAK = 721,

    CUDA_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    CUDA_CU_ATTR_MAX_BLOCK_DIM_X = 2,
    CUDA_CU_ATTR_MAX_BLOCK_DIM_Y = 3,
    CUDA_CU_ATTR_MAX_BLOCK_DIM_Z = 4,
    CUDA_CU_ATTR_MAX_GRID_DIM_X = 5,
    CUDA_CU_ATTR_MAX_GRID_DIM_Y = 6,
    CUDA_CU_ATTR_MAX_GRID_DIM_Z = 7,
    CUDA_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CUDA_CU_ATTR_WARP_SIZE = 10,
    CUDA_CU_ATTR_MAX_REGISTERS_PER_BLOCK = 12,
    CUDA_CU_ATTR_CLOCK_RATE = 13, /* kHz; deprecated by newer drivers, may fail */
    CUDA_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CUDA_CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    CUDA_CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
    CUDA_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,

    CUDA_CU_FUNC_MAX_THREADS_PER_BLOCK = 0,
    CUDA_CU_FUNC_SHARED_SIZE_BYTES = 1,
    CUDA_CU_FUNC_NUM_REGS = 4,
    CUDA_CU_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,

    CUDA_CU_JIT_INFO_LOG_BUFFER = 3,
    CUDA_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CUDA_CU_JIT_ERROR_LOG_BUFFER = 5,
    CUDA_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/* The driver entry points the runner uses, resolved with dlsym from libcuda.so.1. */
typedef struct cuda_driver {
    void *lib;
    cuda_cu_result (*init)(unsigned int flags);
    cuda_cu_result (*driver_get_version)(int *version);
    cuda_cu_result (*device_get_count)(int *count);
    cuda_cu_result (*device_get)(cuda_cu_device *dev, int ordinal);
    cuda_cu_result (*device_get_name)(char *name, int len, cuda_cu_device dev);
    cuda_cu_result (*device_get_attribute)(int *value, int attribute, cuda_cu_device dev);
    cuda_cu_result (*device_total_mem)(size_t *bytes, cuda_cu_device dev);
    cuda_cu_result (*primary_ctx_retain)(cuda_cu_context *ctx, cuda_cu_device dev);
    cuda_cu_result (*primary_ctx_release)(cuda_cu_device dev);
    cuda_cu_result (*ctx_set_current)(cuda_cu_context ctx);
    cuda_cu_result (*ctx_synchronize)(void);
    cuda_cu_result (*module_load_data_ex)(cuda_cu_module *mod, const void *image,
                                          unsigned int n_options, int *options, void **values);
    cuda_cu_result (*module_unload)(cuda_cu_module mod);
    cuda_cu_result (*module_get_function)(cuda_cu_function *fn, cuda_cu_module mod,
                                          const char *name);
    cuda_cu_result (*func_get_attribute)(int *value, int attribute, cuda_cu_function fn);
    cuda_cu_result (*func_set_attribute)(cuda_cu_function fn, int attribute, int value);
    cuda_cu_result (*mem_alloc)(cuda_cu_deviceptr *ptr, size_t bytes);
    cuda_cu_result (*mem_free)(cuda_cu_deviceptr ptr);
    cuda_cu_result (*memcpy_htod)(cuda_cu_deviceptr dst, const void *src, size_t bytes);
    cuda_cu_result (*memcpy_dtoh)(void *dst, cuda_cu_deviceptr src, size_t bytes);
    cuda_cu_result (*memset_d32)(cuda_cu_deviceptr dst, unsigned int value, size_t count);
    cuda_cu_result (*launch_kernel)(cuda_cu_function fn, unsigned int gx, unsigned int gy,
                                    unsigned int gz, unsigned int bx, unsigned int by,
                                    unsigned int bz, unsigned int shared_bytes,
                                    cuda_cu_stream stream, void **params, void **extra);
    cuda_cu_result (*event_create)(cuda_cu_event *ev, unsigned int flags);
    cuda_cu_result (*event_destroy)(cuda_cu_event ev);
    cuda_cu_result (*event_record)(cuda_cu_event ev, cuda_cu_stream stream);
    cuda_cu_result (*event_synchronize)(cuda_cu_event ev);
    cuda_cu_result (*event_elapsed_time)(float *ms, cuda_cu_event start, cuda_cu_event end);
    cuda_cu_result (*get_error_name)(cuda_cu_result rc, const char **name);
    cuda_cu_result (*get_error_string)(cuda_cu_result rc, const char **text);
} cuda_driver;

/* NVRTC entry points, resolved with dlsym from libnvrtc. set_flow_callback is optional (NULL when
 * this NVRTC predates it: compile timeouts are then judged after the fact). */
typedef int cuda_nvrtc_result;
typedef void *cuda_nvrtc_program;
typedef struct cuda_nvrtc {
    void *lib;
    int major, minor;
    int archs[64]; /* the real architectures this NVRTC compiles for, ascending */
    int n_archs;
    const char *(*get_error_string)(cuda_nvrtc_result rc);
    cuda_nvrtc_result (*version)(int *major, int *minor);
    cuda_nvrtc_result (*get_num_supported_archs)(int *n);
    cuda_nvrtc_result (*get_supported_archs)(int *archs);
    cuda_nvrtc_result (*create_program)(cuda_nvrtc_program *prog, const char *src, const char *name,
                                        int n_headers, const char *const *headers,
                                        const char *const *include_names);
    cuda_nvrtc_result (*destroy_program)(cuda_nvrtc_program *prog);
    cuda_nvrtc_result (*compile_program)(cuda_nvrtc_program prog, int n_options,
                                         const char *const *options);
    cuda_nvrtc_result (*get_ptx_size)(cuda_nvrtc_program prog, size_t *size);
    cuda_nvrtc_result (*get_ptx)(cuda_nvrtc_program prog, char *ptx);
    cuda_nvrtc_result (*get_cubin_size)(cuda_nvrtc_program prog, size_t *size);
    cuda_nvrtc_result (*get_cubin)(cuda_nvrtc_program prog, char *cubin);
    cuda_nvrtc_result (*get_program_log_size)(cuda_nvrtc_program prog, size_t *size);
    cuda_nvrtc_result (*get_program_log)(cuda_nvrtc_program prog, char *log);
    cuda_nvrtc_result (*set_flow_callback)(cuda_nvrtc_program prog, int (*cb)(void *, void *),
                                           void *payload);
} cuda_nvrtc;

#define CUDA_LOG_TAIL    4096 /* bytes of a compiler or JIT log kept in a reply */
#define CUDA_MAX_DEFINES 64
#define CUDA_MAX_SOURCE  (4u << 20) /* bytes of a kernel source file */
#define CUDA_NAME_MAX    128
#define CUDA_MAX_REPEATS 100000
#define CUDA_REASON_MAX  512

typedef struct cuda_problem cuda_problem; /* cuda_measure.c: the problem's device buffers */
struct runner;                            /* runner.h: the CPU half's state (inputs, references) */

struct cuda_device {
    cuda_driver drv;
    cuda_nvrtc nvrtc;
    int nvrtc_ok;
    char nvrtc_reason[CUDA_REASON_MAX];
    int ordinal;
    cuda_cu_device dev;
    cuda_cu_context ctx;
    int context_lost; /* a sticky error poisoned the context: every later measure fails */
    char name[256];
    int cc; /* compute capability major*10 + minor */
    int sms, max_threads_per_block, max_shared_per_block, max_shared_optin;
    int max_registers_per_block, warp_size, driver_version;
    int clock_khz; /* the peak clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE); 0: the driver did not say */
    int max_block[3], max_grid[3];
    size_t memory_bytes;
    cuda_problem *problem; /* device buffers of host->problem, or NULL */
    struct runner *host;   /* the CPU half's state that fills inputs and computes references */
    struct runner_sources *sources; /* the current request's source texts (main.c's), or NULL */
};

/* cuda_driver.c */
int cuda_driver_load(cuda_driver *drv, char *reason, size_t reason_cap);
void cuda_driver_unload(cuda_driver *drv);
/* "CUDA_ERROR_ILLEGAL_ADDRESS" (or "CUDA error 700" when the driver does not know it). */
const char *cuda_driver_error_name(const cuda_driver *drv, cuda_cu_result rc, char *buf,
                                   size_t cap);
/* 1 for the errors that leave the context unusable (illegal address, launch failure, ...). */
int cuda_error_is_sticky(cuda_cu_result rc);

/* cuda_nvrtc.c */
int cuda_nvrtc_load(cuda_nvrtc *n, char *reason, size_t reason_cap);
void cuda_nvrtc_unload(cuda_nvrtc *n);
/* Builds "-DNAME=value" options from a defines object (names are C identifiers; values integers,
 * reals, booleans or plain tokens). Returns the count written to opts (each malloc'd, freed with
 * cuda_free_options), or -1 with log filled. */
int cuda_defines_to_options(const json_t *defines, char **opts, int max, char *log, size_t log_cap);
void cuda_free_options(char **opts, int n);
/* Compiles source (len bytes) with options. want_cubin: return the CUBIN (the options must name a
 * real sm_ architecture), else the PTX (NUL-terminated). timeout_s > 0 cancels a longer compile
 * where NVRTC allows it. Returns 0 (*out malloc'd, *out_len bytes), -1 compile error (log holds
 * the tail of NVRTC's log), -2 timeout, -3 NVRTC failure (log says which call). */
int cuda_nvrtc_compile(const cuda_nvrtc *n, const char *source, size_t len, const char *name,
                       const char *const *opts, int n_opts, int want_cubin, double timeout_s,
                       char **out, size_t *out_len, char *log, size_t log_cap);
/* The architecture to compile for a device of compute capability cc: cc itself when NVRTC supports
 * it (real: 1), else the newest supported one below it as PTX (real: 0). -1 if none. */
int cuda_nvrtc_pick_arch(const cuda_nvrtc *n, int cc, int *real);
/* Reads a whole file (at most max bytes), NUL-terminated. Returns 0, or -1 with reason filled. */
int cuda_read_file(const char *path, size_t max, char **out, size_t *len, char *reason,
                   size_t reason_cap);
/* Keeps the last cap-1 bytes of text in buf (a marker shows where it was cut). */
void cuda_copy_tail(char *buf, size_t cap, const char *text, size_t len);

/* cuda_measure.c: frees the problem state (device buffers, host inputs and references). */
void cuda_measure_release(cuda_device *d);

#endif
