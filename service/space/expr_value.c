/* Value semantics of the restriction dialect, following Python 3: bools are ints, int/int `/` is a
 * float, `//` and `%` floor toward -inf, int/float comparisons are exact, and where Python raises
 * (division by zero, str < int, complex powers) the operation fails. Int overflow, which Python
 * avoids with big ints, promotes to float instead of wrapping. */
#include "space/expr_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_intlike(const expr_value *v)
{
    return v->type == EXPR_INT || v->type == EXPR_BOOL;
}

static int is_number(const expr_value *v)
{
    return v->type != EXPR_STR;
}

static double as_double(const expr_value *v)
{
    return v->type == EXPR_FLOAT ? v->u.f : (double)v->u.i;
}

static int set_int(expr_value *out, int64_t i)
{
    out->type = EXPR_INT;
    out->len = 0;
    out->u.i = i;
    return 0;
}

static int set_float(expr_value *out, double f)
{
    out->type = EXPR_FLOAT;
    out->len = 0;
    out->u.f = f;
    return 0;
}

static int set_bool(expr_value *out, int b)
{
    out->type = EXPR_BOOL;
    out->len = 0;
    out->u.i = b != 0;
    return 0;
}

int expr_truthy(const expr_value *v)
{
    switch (v->type) {
    case EXPR_FLOAT:
        return v->u.f != 0.0; /* NaN is truthy in Python too */
    case EXPR_STR:
        return v->len != 0;
    default:
        return v->u.i != 0;
    }
}

/* Exact comparison of an int64 with a double: -1, 0, 1, or 2 when unordered (NaN). */
static int cmp_int_double(int64_t i, double d)
{
    if (isnan(d))
        return 2;
    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    double fl = floor(d);
    int64_t fi = (int64_t)fl; /* exact: fl is integral and within range */
    if (i != fi)
        return i < fi ? -1 : 1;
    return d > fl ? -1 : 0;
}

/* Numeric comparison: -1, 0, 1, or 2 when unordered. */
static int cmp_numbers(const expr_value *a, const expr_value *b)
{
    if (is_intlike(a) && is_intlike(b))
        return a->u.i < b->u.i ? -1 : a->u.i > b->u.i;
    if (a->type == EXPR_FLOAT && b->type == EXPR_FLOAT) {
        if (isnan(a->u.f) || isnan(b->u.f))
            return 2;
        return a->u.f < b->u.f ? -1 : a->u.f > b->u.f;
    }
    if (a->type == EXPR_FLOAT) {
        int c = cmp_int_double(b->u.i, a->u.f);
        return c == 2 ? 2 : -c;
    }
    return cmp_int_double(a->u.i, b->u.f);
}

static int cmp_strings(const expr_value *a, const expr_value *b)
{
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->u.s, b->u.s, n) : 0;
    if (c == 0)
        return a->len < b->len ? -1 : a->len > b->len;
    return c < 0 ? -1 : 1;
}

int expr_value_equal(const expr_value *a, const expr_value *b)
{
    if (a->type == EXPR_STR || b->type == EXPR_STR)
        return a->type == b->type && cmp_strings(a, b) == 0;
    return cmp_numbers(a, b) == 0;
}

static int contains(const expr_value *hay, const expr_value *needle)
{
    if (needle->len == 0)
        return 1;
    for (uint32_t i = 0; i + needle->len <= hay->len; i++)
        if (memcmp(hay->u.s + i, needle->u.s, needle->len) == 0)
            return 1;
    return 0;
}

int expr_compare_op(int cmp, const expr_value *a, const expr_value *b)
{
    int c;
    switch (cmp) {
    case ECMP_EQ:
        return expr_value_equal(a, b);
    case ECMP_NE:
        return !expr_value_equal(a, b);
    case ECMP_IN:
    case ECMP_NOTIN:
        /* Sequences are handled by the evaluator; here only substring tests. */
        if (a->type != EXPR_STR || b->type != EXPR_STR)
            return -1;
        return contains(b, a) ^ (cmp == ECMP_NOTIN);
    default:
        break;
    }
    if (a->type == EXPR_STR && b->type == EXPR_STR)
        c = cmp_strings(a, b);
    else if (is_number(a) && is_number(b))
        c = cmp_numbers(a, b);
    else
        return -1; /* Python: '<' not supported between str and int */
    if (c == 2)
        return 0;
    switch (cmp) {
    case ECMP_LT:
        return c < 0;
    case ECMP_LE:
        return c <= 0;
    case ECMP_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

int expr_unary_op(int op, const expr_value *a, expr_value *out)
{
    if (op == EOP_NOT)
        return set_bool(out, !expr_truthy(a));
    if (!is_number(a))
        return -1;
    if (a->type == EXPR_FLOAT) {
        if (op == EOP_INV)
            return -1;
        return set_float(out, op == EOP_NEG ? -a->u.f : a->u.f);
    }
    switch (op) {
    case EOP_NEG:
        if (a->u.i == INT64_MIN)
            return set_float(out, 9223372036854775808.0);
        return set_int(out, -a->u.i);
    case EOP_INV:
        return set_int(out, ~a->u.i);
    default:
        return set_int(out, a->u.i);
    }
}

/* Python's float floor division and modulo: the remainder takes the sign of the divisor. */
static void float_divmod(double x, double y, double *floordiv, double *mod)
{
    double m = fmod(x, y);
    double div = (x - m) / y;
    if (m != 0.0) {
        if ((y < 0) != (m < 0)) {
            m += y;
            div -= 1.0;
        }
    } else {
        m = copysign(0.0, y);
    }
    double fd;
    if (div != 0.0) {
        fd = floor(div);
        if (div - fd > 0.5)
            fd += 1.0;
    } else {
        fd = copysign(0.0, x / y);
    }
    *floordiv = fd;
    *mod = m;
}

static int int_pow(int64_t base, int64_t exp, expr_value *out)
{
    if (exp < 0) {
        if (base == 0)
            return -1; /* ZeroDivisionError */
        return set_float(out, pow((double)base, (double)exp));
    }
    int64_t result = 1, b = base;
    int64_t e = exp;
    while (e > 0) {
        if ((e & 1) && __builtin_mul_overflow(result, b, &result))
            return set_float(out, pow((double)base, (double)exp));
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(b, b, &b))
            return set_float(out, pow((double)base, (double)exp));
    }
    return set_int(out, result);
}

static int int_binary(int op, int64_t x, int64_t y, int both_bool, expr_value *out)
{
    int64_t r;
    switch (op) {
    case EOP_ADD:
        if (__builtin_add_overflow(x, y, &r))
            return set_float(out, (double)x + (double)y);
        return set_int(out, r);
    case EOP_SUB:
        if (__builtin_sub_overflow(x, y, &r))
            return set_float(out, (double)x - (double)y);
        return set_int(out, r);
    case EOP_MUL:
        if (__builtin_mul_overflow(x, y, &r))
            return set_float(out, (double)x * (double)y);
        return set_int(out, r);
    case EOP_DIV:
        if (y == 0)
            return -1;
        return set_float(out, (double)x / (double)y);
    case EOP_FLOORDIV:
        if (y == 0)
            return -1;
        if (x == INT64_MIN && y == -1)
            return set_float(out, 9223372036854775808.0);
        r = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0)))
            r--;
        return set_int(out, r);
    case EOP_MOD:
        if (y == 0)
            return -1;
        if (y == -1)
            return set_int(out, 0); /* INT64_MIN % -1 is undefined in C */
        r = x % y;
        if (r != 0 && ((r < 0) != (y < 0)))
            r += y;
        return set_int(out, r);
    case EOP_POW:
        return int_pow(x, y, out);
    case EOP_SHL:
        if (y < 0)
            return -1;
        if (x == 0)
            return set_int(out, 0);
        if (y >= 63 || x > (INT64_MAX >> y) || x < (INT64_MIN >> y))
            return set_float(out, ldexp((double)x, y > 2000 ? 2000 : (int)y));
        return set_int(out, (int64_t)((uint64_t)x << y));
    case EOP_SHR:
        if (y < 0)
            return -1;
        if (y >= 63)
            return set_int(out, x < 0 ? -1 : 0);
        /* Right shift of a negative value is implementation-defined in C; floor it explicitly. */
        return set_int(out, x >= 0 ? x >> y : ~((~x) >> y));
    case EOP_BAND:
        r = x & y;
        break;
    case EOP_BOR:
        r = x | y;
        break;
    case EOP_BXOR:
        r = x ^ y;
        break;
    default:
        return -1;
    }
    return both_bool ? set_bool(out, (int)r) : set_int(out, r);
}

int expr_binary_op(int op, const expr_value *a, const expr_value *b, expr_value *out)
{
    if (!is_number(a) || !is_number(b))
        return -1; /* string concatenation and repetition would need memory per evaluation */
    if (is_intlike(a) && is_intlike(b))
        return int_binary(op, a->u.i, b->u.i, a->type == EXPR_BOOL && b->type == EXPR_BOOL, out);
    double x = as_double(a), y = as_double(b), fd, m;
    switch (op) {
    case EOP_ADD:
        return set_float(out, x + y);
    case EOP_SUB:
        return set_float(out, x - y);
    case EOP_MUL:
        return set_float(out, x * y);
    case EOP_DIV:
        if (y == 0.0)
            return -1;
        return set_float(out, x / y);
    case EOP_FLOORDIV:
    case EOP_MOD:
        if (y == 0.0)
            return -1;
        float_divmod(x, y, &fd, &m);
        return set_float(out, op == EOP_MOD ? m : fd);
    case EOP_POW: {
        if (x == 0.0 && y < 0.0)
            return -1; /* ZeroDivisionError */
        if (x < 0.0 && isfinite(y) && y != floor(y))
            return -1; /* the result would be complex */
        double r = pow(x, y);
        if (isinf(r) && isfinite(x) && isfinite(y))
            return -1; /* OverflowError */
        return set_float(out, r);
    }
    default:
        return -1; /* bitwise operators take ints only */
    }
}

/* Reads back p digits with decimal exponent e (d.ddd x 10^e). */
static double read_digits(const char *dig, int p, int e)
{
    char tmp[48];
    int n = 0;
    tmp[n++] = dig[0];
    tmp[n++] = '.';
    for (int i = 1; i < p; i++)
        tmp[n++] = dig[i];
    snprintf(tmp + n, sizeof tmp - (size_t)n, "e%d", e);
    return strtod(tmp, NULL);
}

/* The other p-digit neighbour of dig (one unit in the last place up or down), renormalized. */
static void step_digits(char *dig, int p, int *e, int up)
{
    int i = p - 1;
    if (up) {
        while (i >= 0 && dig[i] == '9')
            dig[i--] = '0';
        if (i < 0) {
            dig[0] = '1';
            (*e)++;
        } else {
            dig[i]++;
        }
        return;
    }
    while (i >= 0 && dig[i] == '0')
        dig[i--] = '9';
    dig[i]--;
    if (dig[0] == '0') { /* 1.00e5 - 1 unit = 9.99e4 */
        memmove(dig, dig + 1, (size_t)p - 1);
        dig[p - 1] = '9';
        (*e)--;
    }
}

/* Shortest digits that read back exactly as d > 0, the closest such when two qualify: Python's
 * repr. Returns the digit count, or -1 if printf's exponent cannot be read (not expected). */
static int shortest_digits(double d, char *digits, int *exp10)
{
    char tmp[48];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, d);
        int nd = 0;
        const char *s = tmp;
        for (; *s && *s != 'e'; s++)
            if (*s != '.')
                digits[nd++] = *s;
        /* printf's exponent: a sign and at least two digits, nothing after. */
        char *end = NULL;
        errno = 0;
        long el = strtol(s + 1, &end, 10);
        if (*s != 'e' || errno || end == s + 1 || *end != '\0' || el < -400 || el > 400)
            return -1;
        int e = (int)el;
        /* printf gives the nearest p-digit decimal; if it does not read back (a tie broken the
         * wrong way, or the asymmetric gap below a power of two), its other neighbour may. */
        double near = read_digits(digits, nd, e);
        if (near == d || p == 17) {
            *exp10 = e;
            return nd;
        }
        step_digits(digits, nd, &e, near < d);
        if (read_digits(digits, nd, e) == d) {
            *exp10 = e;
            return nd;
        }
    }
    return -1; /* not reached: 17 digits always read back */
}

int expr_format_float(double d, char *buf, size_t cap)
{
    char digits[24], out[40];
    if (isnan(d))
        return snprintf(buf, cap, "nan") < (int)cap ? 3 : -1;
    if (isinf(d)) {
        int n = snprintf(buf, cap, "%s", d < 0 ? "-inf" : "inf");
        return n < (int)cap ? n : -1;
    }
    int neg = signbit(d) != 0;
    int exp10 = 0, nd = 1;
    if (d == 0.0)
        digits[0] = '0';
    else
        nd = shortest_digits(fabs(d), digits, &exp10);
    if (nd < 1)
        return -1; /* printf gave no readable exponent: not expected from any C library */
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int n = 0;
    if (neg)
        out[n++] = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            out[n++] = '0';
            out[n++] = '.';
            for (int i = 0; i < -exp10 - 1; i++)
                out[n++] = '0';
            for (int i = 0; i < nd; i++)
                out[n++] = digits[i];
        } else {
            for (int i = 0; i <= exp10; i++)
                out[n++] = i < nd ? digits[i] : '0';
            out[n++] = '.';
            if (nd > exp10 + 1)
                for (int i = exp10 + 1; i < nd; i++)
                    out[n++] = digits[i];
            else
                out[n++] = '0';
        }
        out[n] = '\0';
    } else {
        out[n++] = digits[0];
        if (nd > 1) {
            out[n++] = '.';
            for (int i = 1; i < nd; i++)
                out[n++] = digits[i];
        }
        n += snprintf(out + n, sizeof out - (size_t)n, "e%c%02d", exp10 < 0 ? '-' : '+',
                      exp10 < 0 ? -exp10 : exp10);
    }
    if ((size_t)n >= cap)
        return -1;
    memcpy(buf, out, (size_t)n + 1);
    return n;
}
