/* accel/accel_device — an analytical accelerator (issue 13, after Mind Mappings section 5.1): PEs
 * with a private buffer each, one shared buffer, DRAM behind it (three memory levels), an energy
 * per word access per level, an energy per MAC, bandwidths and a clock. Devices are data, not code:
 * a JSON file (`accel/devices.json`, `ktuned --accel-devices FILE`) lists them, each is served as
 * `accel:<name>`; two ship (the paper's `mindmap` and a smaller `mindmap-small`).
 *
 * Lifecycle: accel_devices_load -> read-only use from any thread -> accel_devices_free. */
#ifndef KT_ACCEL_ACCEL_DEVICE_H
#define KT_ACCEL_ACCEL_DEVICE_H

#include <jansson.h>
#include <stdint.h>

#include "core/error.h"

#define ACCEL_LEVELS      3 /* 0 = L1 (private, per PE), 1 = L2 (shared), 2 = DRAM */
#define ACCEL_MAX_DEVICES 32

typedef struct accel_device {
    char name[32];                        /* "mindmap": the device is "accel:mindmap" */
    int pes;                              /* processing elements (256) */
    long long l1_bytes;                   /* private buffer per PE (65536) */
    long long l2_bytes;                   /* shared buffer (524288) */
    int l1_banks, l2_banks;               /* banks per buffer, allocated to tensors (8, 8) */
    int word_bytes;                       /* bytes per datum (2) */
    double clock_ghz;                     /* (1.0) */
    double mac_pj;                        /* energy per multiply-accumulate */
    double access_pj[ACCEL_LEVELS];       /* energy per word read or written, per level */
    double words_per_cycle[ACCEL_LEVELS]; /* bandwidth per level (L1: per PE) */
} accel_device;

/* Reads and validates a devices file: {"devices": [{"name", "pes", "l1_bytes", "l2_bytes",
 * "l1_banks", "l2_banks", "word_bytes", "clock_ghz", "mac_pj", "access_pj": [l1, l2, dram],
 * "words_per_cycle": [l1, l2, dram]}, ...]}. Every field required and range-checked, names unique
 * identifiers of at most 31 characters, at most ACCEL_MAX_DEVICES; an error is KT_ERR_CONFIG naming
 * the file, the device and the field. *out is malloc'd (caller frees with accel_devices_free). */
int accel_devices_load(const char *path, accel_device **out, int *n, kt_error *err);
void accel_devices_free(accel_device *devs, int n);
/* The device's parameters as JSON (the fields above), new reference: GET /v1/devices shows it. */
json_t *accel_device_json(const accel_device *d);
/* FNV-1a of the parameters: the device class is "accel:<name>:<16 hex digits>", so results of one
 * configuration are never served for another. */
uint64_t accel_device_hash(const accel_device *d);

#endif
