/* core/target_key — the identity of a tuning target, by which every stored result is keyed: the
 * kernel, the device it is measured on, the device class results are shared across (the device
 * model), the hash of the kernel's source (or of a replay dataset's definition), the toolchain that
 * builds and runs it (a result measured under another compiler or driver is another result) and the
 * canonical problem. One type for every room: the catalog fills it when it resolves a request
 * (catalog/target.h), the store writes it with jobs, imports and best entries and reads it back
 * (job_store_target), the API and the worker pass it on.
 *
 * A target_key is a view: its strings are borrowed from whoever made it (a catalog target, a stored
 * job's row) and live exactly as long as that owner. Copying the struct copies the view.
 *
 * The device comes twice: as its name (device, what is stored and shown) and parsed (dev,
 * core/device_name.h), parsed once by whoever makes the key: the catalog when it resolves a
 * request (catalog_resolve*, catalog_external_*), the store when it reads a row (job_store's job
 * targets, best_offer_of_job_row). Code that asks what the device is switches on dev.kind and
 * never parses the name again. */
#ifndef KT_CORE_TARGET_KEY_H
#define KT_CORE_TARGET_KEY_H

#include "core/device_name.h"

#define TARGET_TOOLCHAIN_MAX 128 /* bytes of a toolchain, NUL excluded */

typedef struct target_key {
    const char *kernel; /* "gemm", "convolution" */
    const char *device; /* "cpu", "cuda:0", "replay:convolution_milo-A4000" */
    const char
        *device_class;       /* "cpu:<model>:<vector bits>", "cuda:<name>:sm_<cc>", replay device */
    const char *kernel_hash; /* 16 hex digits: the kernel's source, or the dataset's definition */
    const char *problem_key; /* the canonical problem as compact JSON with sorted keys */
    /* Last, so that an initializer by position written before it existed still compiles as it
     * meant: "gcc 12.2.0" (cpu: the compiler), "cuda driver 13.0, nvrtc 13.0" (cuda: driver and
     * NVRTC), "recorded" (a replay dataset, or the toolchain the dataset records). Printable
     * ASCII, 1..TARGET_TOOLCHAIN_MAX bytes. */
    const char *toolchain;
    /* device parsed (see above); a key made by hand with no dev reads as kind cpu, so every maker
     * of a key fills it. */
    kt_device dev;
} target_key;

#endif
