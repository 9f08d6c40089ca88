/* rng.c - named, independently seeded GSL random streams. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>

#include "dtsim/error.h"
#include "dtsim/sim.h"

struct sim_rng {
    gsl_rng *g;
};

/* splitmix64 finaliser over FNV-1a of the name: a fixed, documented derivation so a stream's
 * seed never depends on creation order. */
uint64_t sim_rng_stream_seed(uint64_t seed, const char *name)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    uint64_t z = seed ^ h;
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

sim_rng *sim_rng_create(uint64_t seed, const char *name)
{
    sim_rng *r = dt_xcalloc(1, sizeof *r);
    r->g = gsl_rng_alloc(gsl_rng_mt19937);
    DT_ASSERT(r->g != NULL);
    /* mt19937 takes an unsigned long seed; 0 would mean "GSL's default seed", so avoid it. */
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
    DT_ASSERT(n >= 1 && n <= 0xffffffffULL);
    return gsl_rng_uniform_int(r->g, (unsigned long)n);
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
