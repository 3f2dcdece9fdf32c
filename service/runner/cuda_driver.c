/* runner/cuda_driver — libcuda.so.1 opened with dlopen (the runner never links the driver, so it
 * starts and says "no CUDA driver" where none is installed), device open / probe / close. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/cuda_internal.h"

#define CUDA_DRIVER_LIB "libcuda.so.1"

/* dlsym into a function pointer without the object/function pointer cast warning. */
static int cuda_sym(void *lib, const char *name, void *slot)
{
    void *p = dlsym(lib, name);
    if (!p)
        return -1;
    memcpy(slot, &p, sizeof p);
    return 0;
}

int cuda_driver_load(cuda_driver *drv, char *reason, size_t reason_cap)
{
    int rc = -1;
    memset(drv, 0, sizeof *drv);
    /* never unmapped: a driver (and the C++ runtime NVRTC pulls in) does not survive unloading */
    drv->lib = dlopen(CUDA_DRIVER_LIB, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!drv->lib) {
        snprintf(reason, reason_cap, "no CUDA driver (%s not found)", CUDA_DRIVER_LIB);
        goto out;
    }
    static const struct {
        const char *name;
        size_t offset;
    } syms[] = {
        {"cuInit", offsetof(cuda_driver, init)},
        {"cuDriverGetVersion", offsetof(cuda_driver, driver_get_version)},
        {"cuDeviceGetCount", offsetof(cuda_driver, device_get_count)},
        {"cuDeviceGet", offsetof(cuda_driver, device_get)},
        {"cuDeviceGetName", offsetof(cuda_driver, device_get_name)},
        {"cuDeviceGetAttribute", offsetof(cuda_driver, device_get_attribute)},
        {"cuDeviceTotalMem_v2", offsetof(cuda_driver, device_total_mem)},
        {"cuDevicePrimaryCtxRetain", offsetof(cuda_driver, primary_ctx_retain)},
        {"cuDevicePrimaryCtxRelease_v2", offsetof(cuda_driver, primary_ctx_release)},
        {"cuCtxSetCurrent", offsetof(cuda_driver, ctx_set_current)},
        {"cuCtxSynchronize", offsetof(cuda_driver, ctx_synchronize)},
        {"cuModuleLoadDataEx", offsetof(cuda_driver, module_load_data_ex)},
        {"cuModuleUnload", offsetof(cuda_driver, module_unload)},
        {"cuModuleGetFunction", offsetof(cuda_driver, module_get_function)},
        {"cuFuncGetAttribute", offsetof(cuda_driver, func_get_attribute)},
        {"cuFuncSetAttribute", offsetof(cuda_driver, func_set_attribute)},
        {"cuMemAlloc_v2", offsetof(cuda_driver, mem_alloc)},
        {"cuMemFree_v2", offsetof(cuda_driver, mem_free)},
        {"cuMemcpyHtoD_v2", offsetof(cuda_driver, memcpy_htod)},
        {"cuMemcpyDtoH_v2", offsetof(cuda_driver, memcpy_dtoh)},
        {"cuMemsetD32_v2", offsetof(cuda_driver, memset_d32)},
        {"cuLaunchKernel", offsetof(cuda_driver, launch_kernel)},
        {"cuEventCreate", offsetof(cuda_driver, event_create)},
        {"cuEventDestroy_v2", offsetof(cuda_driver, event_destroy)},
        {"cuEventRecord", offsetof(cuda_driver, event_record)},
        {"cuEventSynchronize", offsetof(cuda_driver, event_synchronize)},
        {"cuGetErrorName", offsetof(cuda_driver, get_error_name)},
        {"cuGetErrorString", offsetof(cuda_driver, get_error_string)},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        if (cuda_sym(drv->lib, syms[i].name, (char *)drv + syms[i].offset) != 0) {
            snprintf(reason, reason_cap, "no usable CUDA driver (%s lacks %s)", CUDA_DRIVER_LIB,
                     syms[i].name);
            goto out;
        }
    }
    /* CUDA 13 renamed the event timer; older drivers only have the first version. */
    if (cuda_sym(drv->lib, "cuEventElapsedTime_v2", &drv->event_elapsed_time) != 0 &&
        cuda_sym(drv->lib, "cuEventElapsedTime", &drv->event_elapsed_time) != 0) {
        snprintf(reason, reason_cap, "no usable CUDA driver (%s lacks cuEventElapsedTime)",
                 CUDA_DRIVER_LIB);
        goto out;
    }
    rc = 0;
out:
    if (rc != 0 && drv->lib) {
        dlclose(drv->lib);
        memset(drv, 0, sizeof *drv);
    }
    return rc;
}

void cuda_driver_unload(cuda_driver *drv)
{
    if (drv->lib)
        dlclose(drv->lib);
    memset(drv, 0, sizeof *drv);
}

const char *cuda_driver_error_name(const cuda_driver *drv, cuda_cu_result rc, char *buf, size_t cap)
{
    const char *name = NULL;
    if (drv->get_error_name && drv->get_error_name(rc, &name) == CUDA_CU_SUCCESS && name)
        snprintf(buf, cap, "%s", name);
    else
        snprintf(buf, cap, "CUDA error %d", rc);
    return buf;
}

int cuda_error_is_sticky(cuda_cu_result rc)
{
    switch (rc) {
    case CUDA_CU_ERROR_ILLEGAL_ADDRESS:
    case CUDA_CU_ERROR_LAUNCH_TIMEOUT:
    case CUDA_CU_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_CU_ERROR_ASSERT:
    case CUDA_CU_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_CU_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_CU_ERROR_MISALIGNED_ADDRESS:
    case CUDA_CU_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_CU_ERROR_INVALID_PC:
    case CUDA_CU_ERROR_LAUNCH_FAILED:
    case CUDA_CU_ERROR_TENSOR_MEMORY_LEAK:
        return 1;
    default:
        return 0;
    }
}

/* Reads the attributes the probe reports and measure checks launches against. */
static int cuda_device_read_attributes(cuda_device *d, char *reason, size_t reason_cap)
{
    int rc = -1;
    char ename[64];
    cuda_cu_result r;
    int major = 0, minor = 0;
    const struct {
        int attr;
        int *dst;
    } attrs[] = {
        {CUDA_CU_ATTR_COMPUTE_CAPABILITY_MAJOR, &major},
        {CUDA_CU_ATTR_COMPUTE_CAPABILITY_MINOR, &minor},
        {CUDA_CU_ATTR_MULTIPROCESSOR_COUNT, &d->sms},
        {CUDA_CU_ATTR_MAX_THREADS_PER_BLOCK, &d->max_threads_per_block},
        {CUDA_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, &d->max_shared_per_block},
        {CUDA_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &d->max_shared_optin},
        {CUDA_CU_ATTR_MAX_REGISTERS_PER_BLOCK, &d->max_registers_per_block},
        {CUDA_CU_ATTR_WARP_SIZE, &d->warp_size},
        {CUDA_CU_ATTR_MAX_BLOCK_DIM_X, &d->max_block[0]},
        {CUDA_CU_ATTR_MAX_BLOCK_DIM_Y, &d->max_block[1]},
        {CUDA_CU_ATTR_MAX_BLOCK_DIM_Z, &d->max_block[2]},
        {CUDA_CU_ATTR_MAX_GRID_DIM_X, &d->max_grid[0]},
        {CUDA_CU_ATTR_MAX_GRID_DIM_Y, &d->max_grid[1]},
        {CUDA_CU_ATTR_MAX_GRID_DIM_Z, &d->max_grid[2]},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        r = d->drv.device_get_attribute(attrs[i].dst, attrs[i].attr, d->dev);
        if (r != CUDA_CU_SUCCESS) {
            snprintf(reason, reason_cap, "cuDeviceGetAttribute(%d) failed: %s", attrs[i].attr,
                     cuda_driver_error_name(&d->drv, r, ename, sizeof ename));
            goto out;
        }
    }
    d->cc = major * 10 + minor;
    /* Only for the peak rate the catalog computes (issue 31): a driver that no longer answers it
     * leaves the peak unknown, never the device. */
    if (d->drv.device_get_attribute(&d->clock_khz, CUDA_CU_ATTR_CLOCK_RATE, d->dev) !=
            CUDA_CU_SUCCESS ||
        d->clock_khz < 0)
        d->clock_khz = 0;
    /* Devices before the opt-in attribute report 0 there: the static limit is the limit. */
    if (d->max_shared_optin < d->max_shared_per_block)
        d->max_shared_optin = d->max_shared_per_block;
    r = d->drv.device_get_name(d->name, (int)sizeof d->name, d->dev);
    if (r != CUDA_CU_SUCCESS)
        snprintf(d->name, sizeof d->name, "CUDA device %d", d->ordinal);
    d->name[sizeof d->name - 1] = '\0';
    r = d->drv.device_total_mem(&d->memory_bytes, d->dev);
    if (r != CUDA_CU_SUCCESS) {
        snprintf(reason, reason_cap, "cuDeviceTotalMem failed: %s",
                 cuda_driver_error_name(&d->drv, r, ename, sizeof ename));
        goto out;
    }
    if (d->drv.driver_get_version(&d->driver_version) != CUDA_CU_SUCCESS)
        d->driver_version = 0;
    rc = 0;
out:
    return rc;
}

cuda_device *cuda_device_open(int ordinal, char *reason, size_t reason_cap)
{
    cuda_device *d = NULL;
    int ok = 0, count = 0;
    char ename[64];
    cuda_cu_result r;

    d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(reason, reason_cap, "out of memory opening CUDA device %d", ordinal);
        goto out;
    }
    d->ordinal = ordinal;
    if (cuda_driver_load(&d->drv, reason, reason_cap) != 0)
        goto out;
    r = d->drv.init(0);
    if (r != CUDA_CU_SUCCESS) {
        snprintf(reason, reason_cap, "no CUDA device (cuInit failed: %s)",
                 cuda_driver_error_name(&d->drv, r, ename, sizeof ename));
        goto out;
    }
    r = d->drv.device_get_count(&count);
    if (r != CUDA_CU_SUCCESS) {
        snprintf(reason, reason_cap, "no CUDA device (cuDeviceGetCount failed: %s)",
                 cuda_driver_error_name(&d->drv, r, ename, sizeof ename));
        goto out;
    }
    if (ordinal < 0 || ordinal >= count) {
        snprintf(reason, reason_cap, "no CUDA device %d (%d found)", ordinal, count);
        goto out;
    }
    r = d->drv.device_get(&d->dev, ordinal);
    if (r != CUDA_CU_SUCCESS) {
        snprintf(reason, reason_cap, "no CUDA device %d (cuDeviceGet failed: %s)", ordinal,
                 cuda_driver_error_name(&d->drv, r, ename, sizeof ename));
        goto out;
    }
    if (cuda_device_read_attributes(d, reason, reason_cap) != 0)
        goto out;
    r = d->drv.primary_ctx_retain(&d->ctx, d->dev);
    if (r != CUDA_CU_SUCCESS) {
        d->ctx = NULL;
        snprintf(reason, reason_cap, "CUDA device %d: context creation failed: %s", ordinal,
                 cuda_driver_error_name(&d->drv, r, ename, sizeof ename));
        goto out;
    }
    r = d->drv.ctx_set_current(d->ctx);
    if (r != CUDA_CU_SUCCESS) {
        snprintf(reason, reason_cap, "CUDA device %d: cuCtxSetCurrent failed: %s", ordinal,
                 cuda_driver_error_name(&d->drv, r, ename, sizeof ename));
        goto out;
    }
    /* NVRTC is needed only to measure: a missing one is reported per measure, not here. */
    d->nvrtc_ok = cuda_nvrtc_load(&d->nvrtc, d->nvrtc_reason, sizeof d->nvrtc_reason) == 0;
    ok = 1;
out:
    if (!ok && d) {
        cuda_device_close(d);
        d = NULL;
    }
    return d;
}

void cuda_toolchain_text(int driver_version, const char *nvrtc_version, char *out, size_t cap)
{
    char driver[32];
    if (driver_version > 0)
        snprintf(driver, sizeof driver, "%d.%d", driver_version / 1000, driver_version % 1000 / 10);
    else
        snprintf(driver, sizeof driver, "unknown");
    if (nvrtc_version)
        snprintf(out, cap, "cuda driver %s, nvrtc %.32s", driver, nvrtc_version);
    else
        snprintf(out, cap, "cuda driver %s, no nvrtc", driver);
}

json_t *cuda_device_probe(cuda_device *d)
{
    json_t *o = json_pack(
        "{s:s, s:i, s:i, s:I, s:i, s:i, s:i, s:i, s:i}", "name", d->name, "compute_capability",
        d->cc, "sms", d->sms, "memory_bytes", (json_int_t)d->memory_bytes, "max_threads_per_block",
        d->max_threads_per_block, "max_shared_memory_per_block", d->max_shared_optin,
        "max_registers_per_block", d->max_registers_per_block, "warp_size", d->warp_size,
        "driver_version", d->driver_version);
    char ver[32], toolchain[96];
    if (!o)
        goto out;
    json_object_set_new(o, "clock_mhz",
                        d->clock_khz > 0 ? json_real(d->clock_khz / 1000.0) : json_null());
    if (d->nvrtc_ok) {
        snprintf(ver, sizeof ver, "%d.%d", d->nvrtc.major, d->nvrtc.minor);
        json_object_set_new(o, "nvrtc_version", json_string(ver));
    } else {
        json_object_set_new(o, "nvrtc_error", json_string(d->nvrtc_reason));
    }
    cuda_toolchain_text(d->driver_version, d->nvrtc_ok ? ver : NULL, toolchain, sizeof toolchain);
    json_object_set_new(o, "toolchain", json_string(toolchain));
out:
    return o;
}

void cuda_device_close(cuda_device *d)
{
    if (!d)
        return;
    if (d->ctx)
        cuda_measure_release(d);
    if (d->ctx) {
        if (!d->context_lost)
            d->drv.ctx_synchronize();
        d->drv.primary_ctx_release(d->dev);
    }
    cuda_nvrtc_unload(&d->nvrtc);
    cuda_driver_unload(&d->drv);
    free(d);
}

void cuda_device_use_sources(cuda_device *d, struct runner_sources *s)
{
    if (d)
        d->sources = s;
}
