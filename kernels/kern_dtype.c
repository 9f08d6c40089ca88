/* kern_dtype.c - element types of the kernels: names, sizes, fp32 <-> bf16/fp16 conversion with
 * round-to-nearest-even, and seeded gradient-like fills.
 *
 * Conversions are done on bit patterns (memcpy, no type punning through unions) so they are
 * exact and portable; a hardware _Float16 is not assumed (tests compare against it when the
 * compiler has one). */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtsim/kern.h"
#include "dtsim/sim.h"

static const char *const dtype_names[KERN_DTYPE_COUNT] = {"fp32", "bf16", "fp16"};

const char *kern_dtype_name(kern_dtype t)
{
    DT_ASSERT(t >= 0 && t < KERN_DTYPE_COUNT);
    return dtype_names[t];
}

int kern_dtype_parse(const char *s, kern_dtype *out)
{
    for (int i = 0; i < KERN_DTYPE_COUNT; i++)
        if (!strcmp(s, dtype_names[i])) {
            *out = (kern_dtype)i;
            return DT_OK;
        }
    return DT_EINPUT;
}

size_t kern_dtype_size(kern_dtype t) { return t == KERN_FP32 ? 4 : 2; }

double kern_dtype_unit_roundoff(kern_dtype t)
{
    switch (t) {
    case KERN_FP32: return ldexp(1.0, -24);
    case KERN_BF16: return ldexp(1.0, -8);
    case KERN_FP16: return ldexp(1.0, -11);
    default: DT_ASSERT(0);
    }
}

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t kern_f32_to_bf16(float f)
{
    uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u); /* quiet NaN */
    /* Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry into the
     * exponent is the correct next binade (or infinity). */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float kern_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t kern_f32_to_fp16(float f)
{
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* NaN */
    /* 65520 is halfway between 65504 (largest finite, odd mantissa) and 65536: ties go to even,
     * i.e. to infinity. */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) { /* normal in fp16: >= 2^-14 */
        uint32_t h = (ax >> 13) - ((uint32_t)(127 - 15) << 10);
        uint32_t rem = ax & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* carry into exponent is fine */
        return (uint16_t)(sign | h);
    }
    /* Subnormal in fp16: units of 2^-24. value = mant * 2^(exp-150), so h = mant >> (126-exp). */
    uint32_t exp = ax >> 23;
    if (exp < 102) return sign; /* < 2^-25: rounds to (signed) zero */
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp; /* 14 .. 24 */
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float kern_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        float v = ldexpf((float)mant, -24); /* exact: mant < 2^10 */
        return sign ? -v : v;
    }
    if (exp == 31) return u2f(sign | 0x7f800000u | (mant << 13));
    return u2f(sign | ((exp + 112u) << 23) | (mant << 13));
}

float kern_load(kern_dtype t, const void *buf, size_t i)
{
    switch (t) {
    case KERN_FP32: return ((const float *)buf)[i];
    case KERN_BF16: return kern_bf16_to_f32(((const uint16_t *)buf)[i]);
    case KERN_FP16: return kern_fp16_to_f32(((const uint16_t *)buf)[i]);
    default: DT_ASSERT(0);
    }
}

void kern_store(kern_dtype t, void *buf, size_t i, float v)
{
    switch (t) {
    case KERN_FP32: ((float *)buf)[i] = v; break;
    case KERN_BF16: ((uint16_t *)buf)[i] = kern_f32_to_bf16(v); break;
    case KERN_FP16: ((uint16_t *)buf)[i] = kern_f32_to_fp16(v); break;
    default: DT_ASSERT(0);
    }
}

void kern_fill_gradient(kern_dtype t, void *buf, size_t count, double sigma, uint64_t seed,
                        int rank)
{
    char name[48];
    snprintf(name, sizeof name, "kern.gradient.rank%d", rank);
    sim_rng *r = sim_rng_create(seed, name);
    gsl_rng *g = sim_rng_gsl(r);
    for (size_t i = 0; i < count; i++)
        kern_store(t, buf, i, (float)gsl_ran_gaussian_ziggurat(g, sigma));
    sim_rng_destroy(r);
}
