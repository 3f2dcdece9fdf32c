/* space/space_internal — the space struct shared by the space_*.c files of this room, and the
 * helpers they call in one another. Not part of the room's interface: other rooms use space.h only.
 * Everything hangs off struct space and is freed by space_free. */
#ifndef KT_SPACE_SPACE_INTERNAL_H
#define KT_SPACE_SPACE_INTERNAL_H

#include "space/expr.h"
#include "space/space.h"

#define SPACE_HARD_MAX_PARAMS                                                                      \
    256 /* max_params is clamped to this: scratch arrays live on the stack */
#define SPACE_HARD_MAX_VALUES 65535 /* value indices are stored as uint16 */
#define SPACE_MAX_NAME        128   /* characters in a parameter or constant name */
#define SPACE_MAX_STRING      256   /* bytes in a string value */
#define SPACE_MAX_CONSTANTS   256

typedef struct space_param {
    char *name;
    int n;
    expr_value *vals; /* strings point at keys[v] */
    char **keys;      /* each value as it appears in a Kernel Tuner cache key */
    int numeric;      /* every value an int or a float: PAIR_SCALE may move this parameter */
    int *twice;       /* value index of 2*value, -1 if not in the list (numeric only) */
    int *half;        /* value index of value/2, -1 if not in the list (numeric only) */
    int group;        /* index of the group holding the parameter */
    int col;          /* column of the parameter in its group's rows */
} space_param;

/* An independent group: parameters (ascending) and their valid value-index rows, sorted
 * lexicographically (raw-grid order), k uint16 per row. */
typedef struct space_group {
    int k;
    int *params;
    uint64_t n;
    uint16_t *rows;
    uint64_t stride; /* id = sum over groups of position * stride; the last group has stride 1 */
} space_group;

struct space {
    space_limits lim;
    int n_params;
    space_param *params;
    const char **names; /* params[i].name, for expr_names */
    int n_consts;
    char **const_names;
    expr_value *const_values; /* string constants point at const_strings */
    char **const_strings;
    int n_restr;
    char **restr_text;
    expr **restr;
    int n_groups;
    space_group *groups;
    int is_explicit;
    int false_restriction; /* a parameter-free restriction that fails (empty space), or -1 */
    uint64_t count;
    double raw;
};

/* space.c */
/* Index of the value of parameter p equal to jv (ints and reals compare numerically, bools and
 * strings only with their own kind), or -1. */
int space_find_value(const space *sp, int p, const json_t *jv);
/* "'text'" cut to a readable length, for messages. */
void space_quote(const char *text, char *buf, size_t cap);

/* space_build.c */
/* Forms the groups from the restrictions and enumerates each; sets count and strides. */
int space_build_groups(space *sp, kt_error *err);
/* One group with every parameter, holding rows (n of them, unsorted, duplicates allowed; taken
 * over). */
int space_build_explicit(space *sp, uint16_t *rows, uint64_t n, kt_error *err);

/* space_codec.c */
/* Position of row in g's sorted rows, or -1. */
int64_t space_group_find(const space_group *g, const uint16_t *row);

#endif
