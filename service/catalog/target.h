/* catalog/target — a resolved tuning target: its key (core/target_key.h), the canonical problem
 * and, for a full resolution, the space to search. Made by catalog_resolve (with the space) or
 * catalog_resolve_key (without: what a lookup needs, at no cost of enumeration), released by
 * target_release.
 *
 * Ownership: key.kernel, key.device, key.device_class, key.kernel_hash and key.toolchain are
 * borrowed from the catalog (valid until catalog_free); key.problem_key and problem are owned by
 * the target; sp is borrowed from the catalog for replay devices (one space per dataset) and owned
 * by the target for cpu / cuda / accel devices (one space per problem), as owns_space says; neural
 * (a problem that opted in to neural transformations, catalog/catalog_neural.h) is owned. A target
 * of the "external" device (issue 27, catalog_external.c: a space sent inline, measured by the
 * caller's harness through ask/tell) owns every key string and its space (owns_space), and keeps
 * the canonical space definition (space_def) that is stored with its job. A target
 * is read-only once made, so one may be shared by threads (worker/target_cache.h does). */
#ifndef KT_CATALOG_TARGET_H
#define KT_CATALOG_TARGET_H

#include <jansson.h>

#include "core/target_key.h"
#include "space/space.h"

typedef struct catalog_neural catalog_neural; /* catalog/catalog_neural.h */

typedef struct target {
    target_key key;
    json_t *problem;        /* canonical problem object: every argument, defaults filled */
    const space *sp;        /* the space to search; NULL after catalog_resolve_key */
    int owns_space;         /* 1: sp is freed by target_release */
    catalog_neural *neural; /* the problem's "neural" member parsed; NULL for a plain problem */
    /* External targets only (NULL otherwise): the canonical space definition {"default",
     * "parameters", "restrictions"} (owned) and the key's strings (owned, freed with the target).
     */
    json_t *space_def;
    char *owned_strings;
} target;

/* Frees what the target owns and zeroes it; NULL and zeroed targets are fine. */
void target_release(target *t);

#endif
