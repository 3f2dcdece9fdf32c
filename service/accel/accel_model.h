/* accel/accel_model — the analytical cost model: what a mapping of a problem costs on a device
 * (energy per level and tensor, cycles, utilisation, energy-delay product) and the algorithmic
 * minimum (every datum moved once per level, every PE busy), which no valid mapping beats.
 * Deterministic, no allocation, microseconds per evaluation; thread-safe (pure functions).
 * The model itself (access counting, reuse, bandwidth) is described in accel/README.md. */
#ifndef KT_ACCEL_ACCEL_MODEL_H
#define KT_ACCEL_ACCEL_MODEL_H

#include <jansson.h>

#include "accel/accel_device.h"
#include "accel/accel_kernel.h"

typedef struct accel_stats {
    int valid; /* 0: reason says which limit the mapping breaks; the numbers are unset */
    char reason[160];
    double energy_pj[ACCEL_LEVELS][ACCEL_MAX_TENSORS]; /* access energy per level and tensor */
    double accesses[ACCEL_LEVELS][ACCEL_MAX_TENSORS];  /* words read + written */
    double mac_pj;                                     /* compute energy */
    double energy_pj_total;                            /* everything above */
    double cycles;
    double utilisation; /* PEs used / pes, in (0, 1] */
    double edp;         /* energy (J) x delay (s) */
} accel_stats;

/* Returns 1 (valid, out filled) or 0 (invalid: out->valid = 0, out->reason). */
int accel_evaluate(const accel_device *d, const accel_problem *p, const accel_mapping *m,
                   accel_stats *out);
/* The validity alone (1 valid, 0 invalid), as accel_evaluate decides it, without the reason or the
 * costs: the cheap check behind backend_quick_check and valid-sample loops. */
int accel_mapping_valid(const accel_device *d, const accel_problem *p, const accel_mapping *m);
/* The algorithmic minimum: energy of moving every datum once per level plus the MACs, cycles of
 * all PEs busy; edp their product. out->valid = 1. */
void accel_lower_bound(const accel_device *d, const accel_problem *p, accel_stats *out);

/* The meta-statistics a surrogate learns (Mind Mappings 5.5), normalised by the minimum: for each
 * level then tensor ln(energy / lb total energy), then ln(total energy / lb), utilisation,
 * ln(cycles / lb cycles): ACCEL_LEVELS * tensors + 3 values (12 for cnn_layer, 15 for mttkrp).
 * Returns the count written (<= cap). accel_meta_objective gives the weights w with
 * ln(edp / lb edp) = sum w_i meta_i (1 on the total-energy and cycles entries). */
int accel_meta(const accel_problem *p, const accel_stats *s, const accel_stats *lb, double *out,
               int cap);
int accel_meta_objective(const accel_problem *p, double *w, int cap);
/* Names of the meta entries ("energy_L1_I", ..., "energy_total", "utilisation", "cycles"). */
const char *accel_meta_name(const accel_problem *p, int i);

/* {"edp", "edp_over_min", "energy_pj", "cycles", "utilisation", "energy": {"L1": {"I": pj...}}}
 * new reference; lb may be NULL (no edp_over_min). */
json_t *accel_stats_json(const accel_problem *p, const accel_stats *s, const accel_stats *lb);

#endif
