/* core/dtype — element types of kernel buffers and scalars; f16 (IEEE binary16) and bf16 (the top
 * half of a binary32) converted in software so that no compiler support is needed. */
#include "core/dtype.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const char *const names[KT_N_DTYPES] = {"f32", "f16", "bf16", "f64", "i8",
                                               "i16", "i32", "i64",  "u8"};
static const size_t sizes[KT_N_DTYPES] = {4, 2, 2, 8, 1, 2, 4, 8, 1};

const char *kt_dtype_name(kt_dtype t)
{
    return (unsigned)t < KT_N_DTYPES ? names[t] : "?";
}

int kt_dtype_parse(const char *s)
{
    for (int i = 0; s && i < KT_N_DTYPES; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

const char *kt_dtype_names(void)
{
    return "f16, bf16, f32, f64, i8, i16, i32, i64, u8";
}

size_t kt_dtype_size(kt_dtype t)
{
    return (unsigned)t < KT_N_DTYPES ? sizes[t] : 0;
}

int kt_dtype_is_float(kt_dtype t)
{
    return t == KT_F32 || t == KT_F16 || t == KT_BF16 || t == KT_F64;
}

void kt_dtype_int_range(kt_dtype t, double *lo, double *hi)
{
    switch (t) {
    case KT_I8:
        *lo = -128.0, *hi = 127.0;
        break;
    case KT_I16:
        *lo = -32768.0, *hi = 32767.0;
        break;
    case KT_I32:
        *lo = -2147483648.0, *hi = 2147483647.0;
        break;
    case KT_I64: /* the doubles nearest the range that convert without overflow */
        *lo = -9223372036854775808.0, *hi = 9223372036854774784.0;
        break;
    case KT_U8:
        *lo = 0.0, *hi = 255.0;
        break;
    default:
        *lo = 0.0, *hi = 0.0;
    }
}

static float f32_of_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t bits_of_f32(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static double f16_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)man, -24); /* subnormal (or zero) */
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp((double)(man | 0x400), exp - 25);
    return sign ? -v : v;
}

static uint16_t double_to_f16(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v))
        return 0x7e00;
    if (a >= 65520.0) /* rounds to infinity */
        return sign | 0x7c00;
    if (a < ldexp(1.0, -14)) { /* subnormal: units of 2^-24, nearest even */
        double q = nearbyint(a * 16777216.0);
        return sign | (uint16_t)q;
    }
    int e;
    double m = frexp(a, &e);          /* a = m * 2^e, m in [0.5, 1) */
    double q = nearbyint(m * 2048.0); /* 11 significant bits */
    if (q >= 2048.0) {
        q /= 2.0;
        e++;
    }
    int exp = e - 1 + 15;
    if (exp >= 31)
        return sign | 0x7c00;
    return sign | (uint16_t)(exp << 10) | (uint16_t)((uint32_t)q & 0x3ff);
}

static uint16_t float_to_bf16(float f)
{
    uint32_t b = bits_of_f32(f);
    if (isnan(f))
        return 0x7fc0;
    uint32_t round = 0x7fff + ((b >> 16) & 1); /* to nearest even */
    return (uint16_t)((b + round) >> 16);
}

static double clamp_int(kt_dtype t, double v)
{
    double lo, hi;
    kt_dtype_int_range(t, &lo, &hi);
    if (isnan(v))
        return 0.0;
    v = nearbyint(v);
    return v < lo ? lo : (v > hi ? hi : v);
}

double kt_dtype_get(kt_dtype t, const void *p, long long i)
{
    switch (t) {
    case KT_F32:
        return ((const float *)p)[i];
    case KT_F16:
        return f16_to_double(((const uint16_t *)p)[i]);
    case KT_BF16:
        return f32_of_bits((uint32_t)((const uint16_t *)p)[i] << 16);
    case KT_F64:
        return ((const double *)p)[i];
    case KT_I8:
        return ((const int8_t *)p)[i];
    case KT_I16:
        return ((const int16_t *)p)[i];
    case KT_I32:
        return ((const int32_t *)p)[i];
    case KT_I64:
        return (double)((const int64_t *)p)[i];
    case KT_U8:
        return ((const uint8_t *)p)[i];
    default:
        return NAN;
    }
}

void kt_dtype_set(kt_dtype t, void *p, long long i, double v)
{
    switch (t) {
    case KT_F32:
        ((float *)p)[i] = (float)v;
        break;
    case KT_F16:
        ((uint16_t *)p)[i] = double_to_f16(v);
        break;
    case KT_BF16:
        ((uint16_t *)p)[i] = float_to_bf16((float)v);
        break;
    case KT_F64:
        ((double *)p)[i] = v;
        break;
    case KT_I8:
        ((int8_t *)p)[i] = (int8_t)clamp_int(t, v);
        break;
    case KT_I16:
        ((int16_t *)p)[i] = (int16_t)clamp_int(t, v);
        break;
    case KT_I32:
        ((int32_t *)p)[i] = (int32_t)clamp_int(t, v);
        break;
    case KT_I64:
        ((int64_t *)p)[i] = (int64_t)clamp_int(t, v);
        break;
    case KT_U8:
        ((uint8_t *)p)[i] = (uint8_t)clamp_int(t, v);
        break;
    default:
        break;
    }
}
