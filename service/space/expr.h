/* space/expr — restriction expressions in Kernel Tuner's Python syntax, parsed once into a flat
 * tree whose names are resolved to parameter slots (constants are folded in), then evaluated many
 * times without allocating. Python semantics for arithmetic, comparison chains, and/or/not (see
 * service/space/README.md).
 *
 * Lifecycle: expr_parse -> expr_eval / expr_test (any number, any thread) -> expr_free. The expr
 * owns its string literals; string constants (expr_names) must outlive it; slot strings are
 * borrowed per call. */
#ifndef KT_SPACE_EXPR_H
#define KT_SPACE_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define EXPR_MAX_DEPTH 64 /* parentheses, unary operators, `not` and `**` nested in one another */
#define EXPR_MAX_HEIGHT                                                                            \
    256                    /* height of the parsed tree (long operator chains such as a+b+c+...)   \
                            */
#define EXPR_MAX_LEN 65536 /* hard cap on the text length, whatever the caller allows */

typedef enum { EXPR_INT = 0, EXPR_FLOAT, EXPR_BOOL, EXPR_STR } expr_type;

/* A runtime value. Booleans keep i = 0/1 (Python bools are ints). Strings are NUL-free, len bytes.
 */
typedef struct expr_value {
    uint8_t type;
    uint32_t len;
    union {
        int64_t i;
        double f;
        const char *s;
    } u;
} expr_value;

/* Names a restriction may use: parameter i is slot i of the slots array given to expr_eval;
 * constants are replaced by their value at parse time. */
typedef struct expr_names {
    int n_params;
    const char *const *params;
    int n_consts;
    const char *const *const_names;
    const expr_value *const_values;
} expr_names;

typedef struct expr expr;

/* Parses text (at most max_len characters, capped at EXPR_MAX_LEN). Errors are
 * KT_ERR_BAD_EXPRESSION with a message giving the 1-based column ("unexpected end of expression at
 * column 6"); an unknown name puts the known parameters and constants in the hint. Returns NULL on
 * error. */
expr *expr_parse(const char *text, const expr_names *names, size_t max_len, kt_error *err);
void expr_free(expr *e);

/* Distinct parameter slots the expression reads, ascending. */
int expr_num_vars(const expr *e);
const int *expr_vars(const expr *e);

/* Evaluates with slots[i] holding parameter i (only the slots in expr_vars are read). Returns 0, or
 * -1 when Python would raise (division or modulo by zero, unsupported operand types, complex
 * results). */
int expr_eval(const expr *e, const expr_value *slots, expr_value *out);
/* 1 if the expression is truthy, 0 if falsy, -1 if its evaluation fails. */
int expr_test(const expr *e, const expr_value *slots);

/* 1 if s[0..len) is a Python keyword (such a name cannot be used in an expression). */
int expr_is_keyword(const char *s, size_t len);
/* Python truthiness of a value. */
int expr_truthy(const expr_value *v);
/* Python ==, exact across ints, floats and bools; strings equal only strings. */
int expr_value_equal(const expr_value *a, const expr_value *b);
/* Python repr of a float ("1.5", "1e-05", "0.1", "1e+16", "-0.0"). Returns the length, or -1 if the
 * result (at most 32 characters with the NUL) does not fit in cap. */
int expr_format_float(double d, char *buf, size_t cap);

#endif
