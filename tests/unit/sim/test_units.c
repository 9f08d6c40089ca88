/* test_units.c - quantities with units.
 * Pins down: every accepted unit's factor, plain numbers as SI base units, rounding of time to
 * picoseconds, and that unknown units, missing numbers, inf/nan/hex are errors naming the unit.
 * Leaves free: the exact wording of messages beyond the unit's name. */
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/units.h"
#include "testutil.h"

static double parse_ok(unit_kind k, const char *s)
{
    double v = -1;
    char why[256] = "";
    int rc = unit_parse(k, s, &v, why, sizeof why);
    ck_assert_msg(rc == DT_OK, "'%s' should parse: %s", s, why);
    return v;
}

static void parse_bad(unit_kind k, const char *s, const char *must_contain)
{
    double v = -1;
    char why[512] = "";
    int rc = unit_parse(k, s, &v, why, sizeof why);
    ck_assert_msg(rc == DT_EINPUT, "'%s' should be rejected", s);
    ck_assert_msg(strstr(why, must_contain) != NULL, "message '%s' lacks '%s'", why, must_contain);
}

START_TEST(time_units)
{
    ck_assert_rel(parse_ok(UNIT_TIME, "1.5 us"), 1.5e-6, 1e-15);
    ck_assert_rel(parse_ok(UNIT_TIME, "7ps"), 7e-12, 1e-15);
    ck_assert_rel(parse_ok(UNIT_TIME, "3 ns"), 3e-9, 1e-15);
    ck_assert_rel(parse_ok(UNIT_TIME, "2 \xc2\xb5s"), 2e-6, 1e-15);
    ck_assert_rel(parse_ok(UNIT_TIME, "10 ms"), 1e-2, 1e-15);
    ck_assert_rel(parse_ok(UNIT_TIME, "2 s"), 2.0, 1e-15);
    ck_assert_rel(parse_ok(UNIT_TIME, "0.25"), 0.25, 1e-15);
    sim_time_t t = 0;
    char why[128];
    ck_assert_int_eq(unit_parse_time("1.5 us", &t, why, sizeof why), DT_OK);
    ck_assert_int_eq(t, 1500000);
    ck_assert_int_eq(unit_parse_time("0.4 ps", &t, why, sizeof why), DT_OK);
    ck_assert_int_eq(t, 0);
    ck_assert_int_eq(unit_parse_time("1e9 s", &t, why, sizeof why), DT_EINPUT);
}
END_TEST

START_TEST(size_units)
{
    ck_assert_rel(parse_ok(UNIT_SIZE, "80 GiB"), 80.0 * 1073741824.0, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "64MiB"), 64.0 * 1048576.0, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "1 KiB"), 1024.0, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "2 TiB"), 2.0 * 1099511627776.0, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "1 PiB"), 1125899906842624.0, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "1 KB"), 1e3, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "1 MB"), 1e6, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "80 GB"), 80e9, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "3 TB"), 3e12, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "1 PB"), 1e15, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "17 B"), 17, 1e-15);
    ck_assert_rel(parse_ok(UNIT_SIZE, "4096"), 4096, 1e-15);
}
END_TEST

START_TEST(bandwidth_units)
{
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "400 Gb/s"), 50e9, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "400 Gbit/s"), 50e9, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "400 Gbps"), 50e9, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "100 Mb/s"), 12.5e6, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "8 Kb/s"), 1e3, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "8 b/s"), 1, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "1.6 Tb/s"), 200e9, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "450 GB/s"), 450e9, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "1 TB/s"), 1e12, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "3 MB/s"), 3e6, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "3 KB/s"), 3e3, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "5 B/s"), 5, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "2 GiB/s"), 2.0 * 1073741824.0, 1e-15);
    ck_assert_rel(parse_ok(UNIT_BANDWIDTH, "1e9"), 1e9, 1e-15);
}
END_TEST

START_TEST(compute_units)
{
    ck_assert_rel(parse_ok(UNIT_COMPUTE, "989 TFLOP/s"), 989e12, 1e-15);
    ck_assert_rel(parse_ok(UNIT_COMPUTE, "2 PFLOP/s"), 2e15, 1e-15);
    ck_assert_rel(parse_ok(UNIT_COMPUTE, "19.5 TFLOPS"), 19.5e12, 1e-15);
    ck_assert_rel(parse_ok(UNIT_COMPUTE, "1 GFLOP/s"), 1e9, 1e-15);
    ck_assert_rel(parse_ok(UNIT_COMPUTE, "5 FLOP/s"), 5, 1e-15);
    ck_assert_rel(parse_ok(UNIT_WORK, "3 TFLOP"), 3e12, 1e-15);
}
END_TEST

START_TEST(bad_units)
{
    parse_bad(UNIT_BANDWIDTH, "400 Gb", "\"Gb\"");
    parse_bad(UNIT_BANDWIDTH, "fast", "no number");
    parse_bad(UNIT_SIZE, "80 gib", "\"gib\"");
    parse_bad(UNIT_SIZE, "", "empty");
    parse_bad(UNIT_TIME, "1.5 sec", "\"sec\"");
    parse_bad(UNIT_TIME, "inf", "decimal number");
    parse_bad(UNIT_TIME, "nan s", "decimal number");
    parse_bad(UNIT_SIZE, "0x10 B", "decimal number");
    parse_bad(UNIT_COMPUTE, "10 TFLOP", "\"TFLOP\"");
    parse_bad(UNIT_SIZE, "1e400 B", "finite");
    /* finite number, infinite quantity once scaled (found by fuzz_units) */
    parse_bad(UNIT_SIZE, "1e300 PiB", "out of range");
    parse_bad(UNIT_COMPUTE, "1.7e300 EFLOP/s", "out of range");
}
END_TEST

START_TEST(formatting)
{
    char b[64];
    ck_assert_str_eq(unit_fmt_time(1500000, b, sizeof b), "1.5 us");
    ck_assert_str_eq(unit_fmt_size(80.0 * 1073741824.0, b, sizeof b), "80 GiB");
    ck_assert_str_eq(unit_fmt_bandwidth(50e9, b, sizeof b), "50 GB/s");
    ck_assert_str_eq(unit_fmt_compute(989e12, b, sizeof b), "989 TFLOP/s");
    ck_assert_str_eq(unit_fmt_seconds(0, b, sizeof b), "0 ps");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("units");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, time_units);
    tcase_add_test(tc, size_units);
    tcase_add_test(tc, bandwidth_units);
    tcase_add_test(tc, compute_units);
    tcase_add_test(tc, bad_units);
    tcase_add_test(tc, formatting);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
