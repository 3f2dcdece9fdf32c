/* libFuzzer target: restriction expressions (space/expr_*): the input is parsed with three
 * parameters and two constants in scope and, when it parses, evaluated on a few assignments
 * (ints, a float, a string, zeros for the division paths). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "space/expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const params[] = {"block_size_x", "tile", "name"};
    static const char *const const_names[] = {"N", "scale"};
    const expr_value const_values[] = {
        {.type = EXPR_INT, .u.i = 4096},
        {.type = EXPR_FLOAT, .u.f = 0.5},
    };
    expr_names names = {3, params, 2, const_names, const_values};
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    kt_error err;
    kt_error_clear(&err);
    expr *e = expr_parse(text, &names, size, &err);
    if (e) {
        const expr_value rows[][3] = {
            {{.type = EXPR_INT, .u.i = 32},
             {.type = EXPR_INT, .u.i = 4},
             {.type = EXPR_STR, .len = 3, .u.s = "abc"}},
            {{.type = EXPR_INT, .u.i = 0},
             {.type = EXPR_FLOAT, .u.f = 0.0},
             {.type = EXPR_STR, .len = 0, .u.s = ""}},
            {{.type = EXPR_INT, .u.i = INT64_MIN},
             {.type = EXPR_INT, .u.i = -1},
             {.type = EXPR_BOOL, .u.i = 1}},
            {{.type = EXPR_FLOAT, .u.f = 1e308},
             {.type = EXPR_INT, .u.i = 63},
             {.type = EXPR_INT, .u.i = 2}},
        };
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            expr_value out;
            (void)expr_eval(e, rows[r], &out);
            (void)expr_test(e, rows[r]);
        }
        (void)expr_num_vars(e);
        expr_free(e);
    }
    free(text);
    return 0;
}
