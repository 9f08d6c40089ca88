/* units.h - quantities with units, parsed from and printed for people.
 *
 * Accepted spellings (a number, optional spaces, then the unit; case matters where it carries
 * meaning: b is bit, B is byte):
 *   time       ps ns us µs ms s min h d                    -> picoseconds (sim_time_t)
 *   size       B KB MB GB TB PB (powers of 1000)
 *              KiB MiB GiB TiB PiB (powers of 1024)        -> bytes
 *   bandwidth  B/s KB/s MB/s GB/s TB/s KiB/s MiB/s GiB/s TiB/s
 *              b/s Kb/s Mb/s Gb/s Tb/s, also bit/s Kbit/s Mbit/s Gbit/s Tbit/s, bps Kbps Mbps Gbps Tbps
 *                                                          -> bytes per second
 *   compute    FLOP/s KFLOP/s MFLOP/s GFLOP/s TFLOP/s PFLOP/s (FLOPS spellings too)
 *                                                          -> FLOP per second
 *   work       FLOP KFLOP MFLOP GFLOP TFLOP PFLOP EFLOP    -> FLOP
 * A plain number (no unit) means the SI base unit: s, B, B/s, FLOP/s, FLOP.
 * Anything else is an error whose message names the unit found and the ones accepted.
 *
 * All parsers return DT_OK or DT_EINPUT and write a message into why[why_size] on error
 * (no file or path: the JSON layer adds those).
 */
#ifndef DTSIM_UNITS_H
#define DTSIM_UNITS_H

#include <stddef.h>

#include "dtsim/simtime.h"

typedef enum unit_kind {
    UNIT_TIME,
    UNIT_SIZE,
    UNIT_BANDWIDTH,
    UNIT_COMPUTE,
    UNIT_WORK
} unit_kind;

/* Parse text as a quantity of the given kind into SI base units (seconds for UNIT_TIME). */
int unit_parse(unit_kind kind, const char *text, double *out, char *why, size_t why_size);

int unit_parse_time(const char *text, sim_time_t *out_ps, char *why, size_t why_size);
int unit_parse_size(const char *text, double *out_bytes, char *why, size_t why_size);
int unit_parse_bandwidth(const char *text, double *out_Bps, char *why, size_t why_size);
int unit_parse_compute(const char *text, double *out_flops, char *why, size_t why_size);

/* A human example of the kind, for error messages: "\"1.5 us\"". */
const char *unit_example(unit_kind kind);
const char *unit_kind_name(unit_kind kind);

/* Formatting for people: choose a unit so the number reads 1..999 (3-4 significant digits).
 * All return buf. */
const char *unit_fmt_time(sim_time_t ps, char *buf, size_t size);     /* "1.234 ms" */
const char *unit_fmt_seconds(double s, char *buf, size_t size);       /* "1.234 ms" */
const char *unit_fmt_size(double bytes, char *buf, size_t size);      /* "1.50 GiB" (binary) */
const char *unit_fmt_bandwidth(double Bps, char *buf, size_t size);   /* "50.0 GB/s" (decimal bytes) */
const char *unit_fmt_compute(double flops, char *buf, size_t size);   /* "989 TFLOP/s" */

#endif
