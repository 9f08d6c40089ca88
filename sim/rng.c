/* rng.c - named, independently seeded GSL random streams.
 *
 * Each purpose (a straggler model, a fault injector, a workload jitter) owns a stream seeded from
 * (run seed, stream name) alone, so a stream's draws never depend on which other streams exist,
 * in what order they were created, or how many draws they made: adding a model or a draw
 * changes nothing elsewhere, which keeps sweeps comparable point to point.
 *
 * Generator: gsl_rng_mt19937, named here rather than taken from GSL_RNG_TYPE so the environment
 * cannot change results. Its seed is 32 bits (GSL masks it), so there are 2^32 distinct streams;
 * k names under one run seed share a stream with probability about k^2 / 2^33 (1e-5 for 300
 * streams): acceptable for independent noise, not a cryptographic guarantee.
 */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>

#include "dtsim/error.h"
#include "dtsim/sim.h"

struct sim_rng {
    gsl_rng *g;
};

static uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* FNV-1a of the name, combined with the mixed run seed, mixed again: a fixed, documented
 * derivation (changing it changes every result, so it is pinned by a test). Mixing the seed
 * before combining keeps (seed, name) pairs from colliding through a simple xor relation. */
uint64_t sim_rng_stream_seed(uint64_t seed, const char *name)
{
    DT_ASSERT(name != NULL);
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return splitmix64(splitmix64(seed) ^ h);
}

sim_rng *sim_rng_create(uint64_t seed, const char *name)
{
    sim_rng *r = dt_xcalloc(1, sizeof *r);
    r->g = gsl_rng_alloc(gsl_rng_mt19937);
    DT_ASSERT(r->g != NULL);
    /* mt19937 uses the low 32 bits; 0 would mean "GSL's default seed" (4357): say so here. */
    unsigned long s = (unsigned long)(sim_rng_stream_seed(seed, name) & 0xffffffffUL);
    gsl_rng_set(r->g, s ? s : 4357UL);
    return r;
}

void sim_rng_destroy(sim_rng *r)
{
    if (!r) return;
    gsl_rng_free(r->g);
    free(r);
}

double sim_rng_uniform(sim_rng *r) { return gsl_rng_uniform(r->g); }
uint64_t sim_rng_uniform_int(sim_rng *r, uint64_t n)
{
    DT_ASSERT(n >= 1);
    /* mt19937 yields 32 bits per draw; GSL's own routine covers n up to 2^32 - 1. */
    if (n <= 0xffffffffULL) return gsl_rng_uniform_int(r->g, (unsigned long)n);
    /* Wider ranges: 64 bits from two draws, rejecting the top partial copy of [0, n) so every
     * value is equally likely (fewer than half the draws are rejected, usually far fewer). */
    uint64_t limit = UINT64_MAX - (UINT64_MAX % n + 1) % n; /* largest multiple of n, minus 1 */
    for (;;) {
        uint64_t hi = gsl_rng_get(r->g); /* two statements: the draw order must be fixed */
        uint64_t x = hi << 32 | (uint64_t)gsl_rng_get(r->g);
        if (x <= limit) return x % n;
    }
}
double sim_rng_exponential(sim_rng *r, double mean) { return gsl_ran_exponential(r->g, mean); }
double sim_rng_normal(sim_rng *r, double mean, double sigma)
{
    return mean + gsl_ran_gaussian_ziggurat(r->g, sigma);
}
double sim_rng_lognormal(sim_rng *r, double zeta, double sigma)
{
    return gsl_ran_lognormal(r->g, zeta, sigma);
}
void *sim_rng_gsl(sim_rng *r) { return r->g; }
