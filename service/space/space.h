/* space/space — a kernel's tuning space: parameters with ordered value lists and restrictions
 * written in Kernel Tuner's Python expression syntax. Built once (space_new), then read-only and
 * safe to share between threads. Parameters that share no restriction form independent groups, each
 * enumerated on its own with pruning; the space is the Cartesian product of the groups' valid
 * lists, so huge spaces (the 899,756-config GEMM tiling space) are counted, sampled and walked
 * without enumerating the raw grid.
 *
 * A config_id is the dense index of a valid configuration, 0 .. space_count()-1: mixed radix over
 * the groups' valid lists, each list in raw-grid (lexicographic value-index) order. Ids are stable
 * for a given space definition (same parameters, values and restrictions). Exactly: groups are
 * numbered by their lowest parameter index (group 0 holds parameter 0), each group's parameters
 * ascend, and with pos_g the position of the config's sub-configuration in group g's sorted valid
 * list (n_g entries), id = (...((pos_0 * n_1 + pos_1) * n_2 + pos_2) ...) * n_{G-1} + pos_{G-1} so
 * group 0 is the most significant digit; when every group's parameters are contiguous, id order is
 * raw-grid order. An explicit space has one group, so its ids are its configs in raw-grid order.
 *
 * Lifecycle: space_new / space_new_explicit -> queries -> space_free. The caller owns the space. */
#ifndef KT_SPACE_SPACE_H
#define KT_SPACE_SPACE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/rng.h"

typedef uint64_t config_id;
/* The most valid configurations a space may have: ids are stored (PostgreSQL bigint) and written
 * (JSON integers) as signed 64-bit numbers, so every id and count stays within INT64_MAX. */
#define SPACE_MAX_COUNT ((uint64_t)INT64_MAX)

typedef struct space space;

/* Bounds on what space_new accepts; zero fields take the defaults in brackets. max_params is capped
 * at 256 and max_values at 65535 whatever is asked; names are at most 128 characters, string values
 * at most 256 bytes, constants at most 256. */
typedef struct space_limits {
    int max_params;           /* [64] */
    int max_values;           /* [4096] values per parameter */
    int max_restrictions;     /* [256] */
    size_t max_expr_len;      /* [4096] characters per restriction */
    uint64_t max_group_nodes; /* [200000000] enumeration steps per group before giving up */
    uint64_t max_group_valid; /* [50000000] valid sub-configurations kept per group */
} space_limits;

/* params: JSON array of {"name": "block_size_x", "values": [16, 32, ...]} in parameter order;
 * values are integers, reals, strings or booleans, distinct within a parameter. restrictions: JSON
 * array of expression strings, or NULL. Each must hold for a config to be valid. constants: JSON
 * object of name -> number usable in restrictions (device limits such as max_threads_per_block), or
 * NULL. A name may not be both a parameter and a constant. limits: NULL for defaults. Errors:
 * KT_ERR_BAD_SPACE (malformed params), KT_ERR_BAD_EXPRESSION (message names the restriction and the
 * position), KT_ERR_SPACE_TOO_LARGE (a group exceeds the limits, or the space has more than
 * SPACE_MAX_COUNT valid configurations). A space with zero valid configs
 * is valid (space_count() == 0). A restriction whose evaluation fails for a configuration (division
 * or modulo by zero, str < int, ...) makes that configuration invalid; one that reads no parameter
 * is checked once, and if it does not hold the space is empty. */
space *space_new(const json_t *params, const json_t *restrictions, const json_t *constants,
                 const space_limits *limits, kt_error *err);

/* A space whose valid configurations are an explicit list (a Kernel Tuner cache without
 * restrictions): configs is a JSON array of arrays of values, one value per parameter in parameter
 * order, each value present in that parameter's list. Duplicates are ignored. One group holds all
 * parameters. */
space *space_new_explicit(const json_t *params, const json_t *configs, kt_error *err);

void space_free(space *sp);

int space_num_params(const space *sp);
const char *space_param_name(const space *sp, int p);
int space_param_index(const space *sp, const char *name); /* -1 if absent */
int space_param_num_values(const space *sp, int p);
/* New reference to value v of parameter p as JSON. */
json_t *space_param_value_json(const space *sp, int p, int v);
/* Numeric value of value v of parameter p (strings: NAN, booleans: 0/1). */
double space_param_value_number(const space *sp, int p, int v);
int space_num_restrictions(const space *sp);
const char *space_restriction_text(const space *sp, int i);

uint64_t space_count(const space *sp);  /* valid configurations */
double space_raw_size(const space *sp); /* product of the value-list lengths */
int space_num_groups(const space *sp);  /* independent parameter groups */

/* The independent groups as units (AutoTVM's "knobs": on the GEMM tiling space the m, k and n
 * factorisations). Thread-safe, no allocation, O(1) each. Groups are numbered 0..space_num_groups-1
 * as in the id scheme above; a group's sub-configurations are its valid value-index rows, in sorted
 * (raw-grid) order, positions 0..space_group_size-1.
 *   space_param_group: the group holding parameter p, -1 for p out of range.
 *   space_group_size: n_g, the group's valid sub-configurations; 0 for g out of range (a built
 *     non-empty space has n_g >= 1 for every group).
 *   space_group_num_params / space_group_param: the group's parameters, ascending (i-th one), 0 /
 * -1 for g or i out of range. space_group_position: *pos = pos_g of id, the digit of group g
 * (space_decode of id gives that row's values to the group's parameters). Returns 0, or -1 (pos
 * untouched) when id >= count or g is out of range. space_with_group_position: *out = id with group
 * g's sub-configuration replaced by the one at position pos, every other group's unchanged; always
 * valid. Returns 0, or -1 (out untouched) when id >= count, g is out of range or pos >= n_g. */
int space_param_group(const space *sp, int p);
uint64_t space_group_size(const space *sp, int g);
int space_group_num_params(const space *sp, int g);
int space_group_param(const space *sp, int g, int i);
int space_group_position(const space *sp, config_id id, int g, uint64_t *pos);
int space_with_group_position(const space *sp, config_id id, int g, uint64_t pos, config_id *out);

/* id -> value index per parameter (idx has space_num_params entries). Returns -1 if id >= count. */
int space_decode(const space *sp, config_id id, int *idx);
/* value indices -> id. Returns -1 (no error) if the configuration is not valid. */
int space_encode(const space *sp, const int *idx, config_id *out);
/* 1 when some valid configuration has value indices idx[0..len) for parameters 0..len-1 (len 0:
 * 1 when the space is not empty), 0 otherwise (also for len out of [0, space_num_params] or an
 * index out of its list). Exact: groups are independent, and within a group the assigned
 * parameters are a prefix of its columns, found by binary search in its sorted valid list
 * (O(log n_g) per group). Thread-safe, no allocation. Used by the constrained beam search. */
int space_prefix_feasible(const space *sp, const int *idx, int len);
/* {"param": value, ...} for a valid id (new reference), NULL if id >= count. */
json_t *space_config_json(const space *sp, config_id id);
/* Object with every parameter -> id. Errors: KT_ERR_BAD_REQUEST naming a missing, unknown or
 * out-of-list parameter, or saying that the configuration violates a restriction (which one).
 * Numbers match numerically (4.0 selects the value 4); booleans and strings match only their own
 * kind. */
int space_config_from_json(const space *sp, const json_t *obj, config_id *out, kt_error *err);
/* Kernel Tuner cache key: values joined by "," in parameter order (integers as %lld, reals as
 * Python repr would print them, booleans True / False, strings bare). Returns the length, or -1 if
 * it does not fit in cap (including the NUL) or id >= count. */
int space_config_key(const space *sp, config_id id, char *buf, size_t cap);

/* Uniform random valid configuration (a uniform id); space_count() must be > 0 (0 is returned
 * else). */
config_id space_sample(const space *sp, kt_rng *rng);

typedef enum {
    SPACE_NEIGHBOURS_ADJACENT =
        0,                       /* one parameter moved to the previous or next value in its list */
    SPACE_NEIGHBOURS_HAMMING,    /* one parameter set to any other value of its list */
    SPACE_NEIGHBOURS_PAIR_SCALE, /* G-BFS action: one parameter's value x2 and another's /2,
                                    together (both new values must be in their lists) */
} space_neighbour_kind;

/* Writes up to max valid neighbours of id into out (deterministic order, no duplicates, never id
 * itself) and returns how many were written (0 if id >= count). space_max_neighbours bounds the
 * count for a kind. Order: parameters ascending; ADJACENT tries the previous value then the next;
 * HAMMING the other values in list order; PAIR_SCALE, for parameters whose values are all numbers
 * (no booleans), every ordered pair (p doubled, q halved) with p outer and q inner, skipping zero
 * values (they would not move). */
int space_neighbours(const space *sp, config_id id, space_neighbour_kind kind, config_id *out,
                     int max);
int space_max_neighbours(const space *sp, space_neighbour_kind kind);

/* The valid configuration minimising the sum over parameters of cost(arg, p, v), cost >= 0 finite,
 * called once per (parameter, value): the projection of a point of a continuous encoding onto the
 * space (search/mindmap.c). Groups are independent, so each group's valid sub-configurations are
 * scanned on their own and the minimum is exact; a group with more than max_rows of them (0: no
 * cap) is scanned on an even stride of max_rows rows plus the per-parameter minimum when that one
 * is valid, and the answer is then approximate. Ties go to the lowest position. Returns 1 with *out
 * set when exact, 0 with *out set when approximate, -1 for an empty space or out of memory. */
int space_nearest_valid(const space *sp, double (*cost)(void *arg, int p, int v), void *arg,
                        uint64_t max_rows, config_id *out);

#endif
