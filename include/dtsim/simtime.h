/* simtime.h - simulated time: a signed 64-bit count of picoseconds.
 *
 * Integer time keeps runs bit-for-bit deterministic: no two platforms round an event's time
 * differently. 2^63 ps is about 106 days of simulated time, far beyond one training step.
 */
#ifndef DTSIM_SIMTIME_H
#define DTSIM_SIMTIME_H

#include <stdint.h>

typedef int64_t sim_time_t;

#define SIM_PS ((sim_time_t)1)
#define SIM_NS ((sim_time_t)1000)
#define SIM_US ((sim_time_t)1000000)
#define SIM_MS ((sim_time_t)1000000000)
#define SIM_S ((sim_time_t)1000000000000)
#define SIM_TIME_MAX INT64_MAX

/* Seconds as double, for reporting only. */
static inline double sim_time_to_s(sim_time_t t) { return (double)t * 1e-12; }

/* a + b for times >= 0, saturating at SIM_TIME_MAX ("never"): durations computed from absurd
 * input (1e40 FLOPs, a 1e-300 B/s link) must not overflow; a run that reaches SIM_TIME_MAX / 2
 * reports an input error instead (replay_run, coll_simulate). */
static inline sim_time_t sim_time_add(sim_time_t a, sim_time_t b)
{
    return b > SIM_TIME_MAX - a ? SIM_TIME_MAX : a + b;
}

/* Seconds to picoseconds, rounded to nearest, saturating at SIM_TIME_MAX. */
sim_time_t sim_time_from_s(double s);

#endif
