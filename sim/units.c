/* units.c - parse and print quantities with units.
 *
 * One table per kind maps a unit spelling to its factor to the SI base unit. Matching is exact
 * (case-sensitive) because "Mb/s" and "MB/s" differ by a factor of eight: guessing would turn
 * a typo into a silently wrong simulation.
 */
#include "dtsim/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"

typedef struct unit_entry {
    const char *name;
    double factor;
} unit_entry;

static const unit_entry time_units[] = {
    {"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ms", 1e-3}, {"s", 1.0},
    /* failure rates and horizons (goodput) are quoted in hours and days */
    {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}, {NULL, 0}};

static const unit_entry size_units[] = {
    {"B", 1.0},         {"KB", 1e3},          {"MB", 1e6},          {"GB", 1e9},
    {"TB", 1e12},       {"PB", 1e15},         {"KiB", 1024.0},      {"MiB", 1048576.0},
    {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"PiB", 1125899906842624.0}, {NULL, 0}};

static const unit_entry bandwidth_units[] = {
    {"B/s", 1.0},        {"KB/s", 1e3},       {"MB/s", 1e6},       {"GB/s", 1e9},
    {"TB/s", 1e12},      {"KiB/s", 1024.0},   {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
    {"TiB/s", 1099511627776.0},
    {"b/s", 0.125},      {"Kb/s", 125.0},     {"Mb/s", 125e3},     {"Gb/s", 125e6},
    {"Tb/s", 125e9},     {"bit/s", 0.125},    {"Kbit/s", 125.0},   {"Mbit/s", 125e3},
    {"Gbit/s", 125e6},   {"Tbit/s", 125e9},   {"bps", 0.125},      {"Kbps", 125.0},
    {"Mbps", 125e3},     {"Gbps", 125e6},     {"Tbps", 125e9},     {NULL, 0}};

static const unit_entry compute_units[] = {
    {"FLOP/s", 1.0},   {"KFLOP/s", 1e3},  {"MFLOP/s", 1e6},  {"GFLOP/s", 1e9},
    {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {"EFLOP/s", 1e18}, {"FLOPS", 1.0},
    {"KFLOPS", 1e3},   {"MFLOPS", 1e6},   {"GFLOPS", 1e9},   {"TFLOPS", 1e12},
    {"PFLOPS", 1e15},  {"EFLOPS", 1e18},  {NULL, 0}};

static const unit_entry work_units[] = {
    {"FLOP", 1.0},   {"KFLOP", 1e3},  {"MFLOP", 1e6}, {"GFLOP", 1e9},
    {"TFLOP", 1e12}, {"PFLOP", 1e15}, {"EFLOP", 1e18}, {NULL, 0}};

static const unit_entry *table_of(unit_kind kind)
{
    switch (kind) {
    case UNIT_TIME: return time_units;
    case UNIT_SIZE: return size_units;
    case UNIT_BANDWIDTH: return bandwidth_units;
    case UNIT_COMPUTE: return compute_units;
    case UNIT_WORK: return work_units;
    }
    return NULL;
}

const char *unit_kind_name(unit_kind kind)
{
    switch (kind) {
    case UNIT_TIME: return "time";
    case UNIT_SIZE: return "size";
    case UNIT_BANDWIDTH: return "bandwidth";
    case UNIT_COMPUTE: return "compute rate";
    case UNIT_WORK: return "amount of work";
    }
    return "quantity";
}

const char *unit_example(unit_kind kind)
{
    switch (kind) {
    case UNIT_TIME: return "\"1.5 us\"";
    case UNIT_SIZE: return "\"80 GiB\"";
    case UNIT_BANDWIDTH: return "\"400 Gb/s\"";
    case UNIT_COMPUTE: return "\"989 TFLOP/s\"";
    case UNIT_WORK: return "\"3.2 TFLOP\"";
    }
    return "";
}

static void list_units(const unit_entry *t, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (; t->name; t++) {
        int w = snprintf(buf + n, size - n, "%s%s", n ? " " : "", t->name);
        if (w < 0 || (size_t)w >= size - n) break;
        n += (size_t)w;
    }
}

int unit_parse(unit_kind kind, const char *text, double *out, char *why, size_t why_size)
{
    const unit_entry *table = table_of(kind);
    if (!text || !*text) {
        snprintf(why, why_size, "expected a %s such as %s, found an empty string",
                 unit_kind_name(kind), unit_example(kind));
        return DT_EINPUT;
    }
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    char *end = NULL;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p) {
        snprintf(why, why_size, "expected a %s such as %s, found \"%s\" (no number)",
                 unit_kind_name(kind), unit_example(kind), text);
        return DT_EINPUT;
    }
    /* strtod also reads "inf", "nan" and hex floats: none is a quantity a person writes. */
    for (const char *q = p; q < end; q++) {
        if (strchr("xXnNiI", *q)) {
            snprintf(why, why_size, "expected a decimal number with a %s unit, found \"%s\"",
                     unit_kind_name(kind), text);
            return DT_EINPUT;
        }
    }
    if (!isfinite(v) || errno == ERANGE) {
        snprintf(why, why_size, "expected a finite %s, found \"%s\"", unit_kind_name(kind), text);
        return DT_EINPUT;
    }
    while (isspace((unsigned char)*end)) end++;
    size_t ulen = strlen(end);
    while (ulen > 0 && isspace((unsigned char)end[ulen - 1])) ulen--;
    if (ulen == 0) { /* plain number: SI base unit */
        *out = v;
        return DT_OK;
    }
    for (const unit_entry *t = table; t->name; t++) {
        if (strlen(t->name) == ulen && strncmp(t->name, end, ulen) == 0) {
            double x = v * t->factor;
            if (!isfinite(x)) { /* "1e300 PiB": the number is finite, the quantity is not */
                snprintf(why, why_size, "%s \"%s\" is out of range", unit_kind_name(kind), text);
                return DT_EINPUT;
            }
            *out = x;
            return DT_OK;
        }
    }
    char units[512];
    list_units(table, units, sizeof units);
    snprintf(why, why_size, "unknown %s unit \"%.*s\" in \"%s\" (known: %s)", unit_kind_name(kind),
             (int)(ulen > 64 ? 64 : ulen), end, text, units);
    return DT_EINPUT;
}

sim_time_t sim_time_from_s(double s)
{
    double ps = s * 1e12;
    if (ps >= 9.2e18) return SIM_TIME_MAX;
    if (ps <= -9.2e18) return -SIM_TIME_MAX;
    return (sim_time_t)llround(ps);
}

int unit_parse_time(const char *text, sim_time_t *out_ps, char *why, size_t why_size)
{
    double s;
    int rc = unit_parse(UNIT_TIME, text, &s, why, why_size);
    if (rc) return rc;
    if (fabs(s) * 1e12 >= 9.2e18) {
        snprintf(why, why_size, "time \"%s\" is out of range (at most about 100 days)", text);
        return DT_EINPUT;
    }
    *out_ps = sim_time_from_s(s);
    return DT_OK;
}

int unit_parse_size(const char *text, double *out, char *why, size_t why_size)
{
    return unit_parse(UNIT_SIZE, text, out, why, why_size);
}

int unit_parse_bandwidth(const char *text, double *out, char *why, size_t why_size)
{
    return unit_parse(UNIT_BANDWIDTH, text, out, why, why_size);
}

int unit_parse_compute(const char *text, double *out, char *why, size_t why_size)
{
    return unit_parse(UNIT_COMPUTE, text, out, why, why_size);
}

/* Print v scaled by the largest prefix that keeps it >= 1, with 4 significant digits. */
static const char *fmt_scaled(double v, const double *scales, const char *const *names, int n,
                              char *buf, size_t size)
{
    int i = 0;
    double a = fabs(v);
    for (int k = n - 1; k >= 0; k--) {
        if (a >= scales[k]) {
            i = k;
            break;
        }
    }
    if (v == 0) i = 0;
    snprintf(buf, size, "%.4g %s", v / scales[i], names[i]);
    return buf;
}

const char *unit_fmt_seconds(double s, char *buf, size_t size)
{
    static const double sc[] = {1e-12, 1e-9, 1e-6, 1e-3, 1.0};
    static const char *const nm[] = {"ps", "ns", "us", "ms", "s"};
    return fmt_scaled(s, sc, nm, 5, buf, size);
}

const char *unit_fmt_time(sim_time_t ps, char *buf, size_t size)
{
    return unit_fmt_seconds(sim_time_to_s(ps), buf, size);
}

const char *unit_fmt_size(double bytes, char *buf, size_t size)
{
    static const double sc[] = {1.0, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0,
                                1125899906842624.0};
    static const char *const nm[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    return fmt_scaled(bytes, sc, nm, 6, buf, size);
}

const char *unit_fmt_bandwidth(double Bps, char *buf, size_t size)
{
    static const double sc[] = {1.0, 1e3, 1e6, 1e9, 1e12};
    static const char *const nm[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
    return fmt_scaled(Bps, sc, nm, 5, buf, size);
}

const char *unit_fmt_compute(double flops, char *buf, size_t size)
{
    static const double sc[] = {1.0, 1e3, 1e6, 1e9, 1e12, 1e15, 1e18};
    static const char *const nm[] = {"FLOP/s", "KFLOP/s", "MFLOP/s", "GFLOP/s",
                                     "TFLOP/s", "PFLOP/s", "EFLOP/s"};
    return fmt_scaled(flops, sc, nm, 7, buf, size);
}
