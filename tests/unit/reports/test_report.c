/* test_report.c - gnuplot reports from a results CSV.
 * Pins down: the scaling table is the best throughput per GPU count against the ideal line
 * through the smallest count (efficiencies hand-computed), failed rows are left out, quoted CSV
 * fields with commas are read whole, a report writes .dat/.gp/.png/.svg per plot plus
 * index.md/index.html (files exist and are non-empty; gnuplot really runs), a collective CSV
 * gets only the busbw plot (from CSV, or from `dtsim collective --json` rows with one line per
 * algorithm), a trace-event file gets a per-GPU state chart, and a ragged CSV is an input error naming the record.
 * Leaves free: the looks of the pictures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dtsim/report.h"
#include "testutil.h"

static char tmp[64];

static void put(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    FILE *f = fopen(p, "w");
    ck_assert(f != NULL);
    fputs(text, f);
    fclose(f);
}

static long size_of(const char *name)
{
    char p[256];
    struct stat st;
    snprintf(p, sizeof p, "%s/report/%s", tmp, name);
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static char *slurp(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/report/%s", tmp, name);
    FILE *f = fopen(p, "r");
    ck_assert_msg(f != NULL, "%s missing", p);
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void setup(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/dtsim_report_XXXXXX");
    ck_assert(mkdtemp(tmp) != NULL);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(sweep_report)
{
    put("results.csv",
        "point,cluster.gpus,parallel.tp,status,step_time_s,compute_s,comm_exposed_s,bubble_s,"
        "straggler_wait_s,tokens_per_s,mem_peak_bytes,mem_capacity_bytes,fits,n_gpus,error\n"
        "0,8,1,ok,1,0.8,0.1,0.1,0,9000,9e10,8e10,0,8,\n"
        "1,8,2,ok,1,0.8,0.1,0.1,0,7000,1e10,8e10,1,8,\n"
        "2,16,1,ok,1,0.7,0.2,0.1,0,14000,1e10,8e10,1,16,\n"
        "3,32,1,ok,1,0.6,0.3,0.1,0,24000,9e10,8e10,0,32,\n"
        "4,64,1,error,,,,,,,,,,64,\"heads 32, tp 3: indivisible\"\n");
    put("sweep.json", "{\"scenario\": \"dir/demo.json\", \"scenario_text\": {\"name\": \"demo's run\"}}");
    dt_error e = {0};
    rep_report_summary sum;
    ck_assert_msg(rep_report(tmp, &sum, &e) == DT_OK, "%s", e.msg);
    ck_assert_int_eq(sum.rows, 5);
    ck_assert_int_eq(sum.n_plots, 3);
    ck_assert_str_eq(sum.plots[0], "scaling");
    ck_assert_str_eq(sum.plots[1], "breakdown");
    ck_assert_str_eq(sum.plots[2], "memory");
    /* plans that do not fit (point 0 at 8 GPUs, point 3 at 32) neither count nor anchor the
     * ideal line: 8 GPUs' best that fits is point 1 */
    char *dat = slurp("scaling.dat");
    ck_assert_msg(strstr(dat, "\n8 7000 7000 100\n16 14000 14000 100\n"), "%s", dat);
    ck_assert_msg(!strstr(dat, "\n32 "), "%s", dat);
    free(dat);
    /* labels: the varying axes' values, named once in the x label; largest step 1 s: ms */
    dat = slurp("breakdown.dat");
    ck_assert_msg(strstr(dat, "\"16 1\" 700 200 100 0\n"), "%s", dat);
    ck_assert_msg(strstr(dat, "# gpus / tp  compute_s(ms)"), "%s", dat);
    ck_assert_msg(!strstr(dat, "\"64"), "failed rows are left out: %s", dat);
    free(dat);
    char *gp = slurp("breakdown.gp");
    ck_assert_msg(strstr(gp, "'Step time breakdown per point' . \"\\n\" . 'demo''s run (demo.json)'"),
                  "the title names the scenario, quoted: %s", gp);
    ck_assert_msg(strstr(gp, "set xlabel 'gpus / tp'") && strstr(gp, "step time (ms)"), "%s", gp);
    free(gp);
    static const char *const names[] = {"scaling", "breakdown", "memory"};
    static const char *const exts[] = {"dat", "gp", "png", "svg"};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) {
            char f[64];
            snprintf(f, sizeof f, "%s.%s", names[i], exts[k]);
            ck_assert_msg(size_of(f) > 0, "%s missing or empty", f);
        }
    char *md = slurp("index.md");
    ck_assert_msg(strstr(md, "![scaling](scaling.png)") && strstr(md, "![memory](memory.png)"), "%s", md);
    free(md);
    ck_assert(size_of("index.html") > 0);
    ck_assert(size_of("busbw.png") < 0);
}
END_TEST

START_TEST(breakdown_by_kind_and_units)
{
    /* Exposed communication by kind stacks separately; a 70 s step is drawn in s, not ms. */
    put("results.csv",
        "point,parallel.tp,status,step_time_s,compute_s,comm_exposed_s,bubble_s,"
        "straggler_wait_s,comm_tp_s,comm_pp_s,comm_dp_s,comm_zero_s,error\n"
        "0,2,ok,70,50,15,5,0,10,1,3,1,\n"
        "1,4,ok,40,30,8,2,0,5,1,1,1,\n");
    dt_error e = {0};
    rep_report_summary sum;
    ck_assert_msg(rep_report(tmp, &sum, &e) == DT_OK, "%s", e.msg);
    char *dat = slurp("breakdown.dat");
    ck_assert_msg(strstr(dat, "\n\"2\" 50 10 1 3 1 5 0\n"), "%s", dat);
    ck_assert_msg(strstr(dat, "comm_zero_s(s)") && !strstr(dat, "comm_exposed_s"), "%s", dat);
    free(dat);
    char *gp = slurp("breakdown.gp");
    ck_assert_msg(strstr(gp, "title 'comm DP'") && strstr(gp, "step time (s)"), "%s", gp);
    free(gp);
}
END_TEST

START_TEST(collective_report)
{
    put("results.csv", "point,collective.size,status,busbw_GBps\n"
                       "0,1024,ok,1.5\n1,1048576,ok,80\n2,1073741824,ok,170\n");
    dt_error e = {0};
    rep_report_summary sum;
    ck_assert_msg(rep_report(tmp, &sum, &e) == DT_OK, "%s", e.msg);
    ck_assert_int_eq(sum.n_plots, 1);
    ck_assert_str_eq(sum.plots[0], "busbw");
    ck_assert(size_of("busbw.png") > 0 && size_of("busbw.svg") > 0);
}
END_TEST

START_TEST(collective_json)
{
    /* `dtsim collective --json` rows: one busbw line per algorithm, sizes in order. */
    put("coll.json", "[{\"algo\": \"ring\", \"size_bytes\": 1024, \"busbw_GBps\": 1.5},"
                     " {\"algo\": \"ring\", \"size_bytes\": 2048, \"busbw_GBps\": 3},"
                     " {\"algo\": \"tree\", \"size_bytes\": 1024, \"busbw_GBps\": 2.5},"
                     " {\"algo\": \"tree\", \"size_bytes\": 2048, \"busbw_GBps\": 4}]");
    char in[128], out[128];
    snprintf(in, sizeof in, "%s/coll.json", tmp);
    snprintf(out, sizeof out, "%s/report", tmp);
    dt_error e = {0};
    rep_report_summary sum;
    ck_assert_msg(rep_report_file(in, out, &sum, &e) == DT_OK, "%s", e.msg);
    ck_assert_int_eq(sum.rows, 4);
    ck_assert_int_eq(sum.n_plots, 1);
    char *dat = slurp("busbw.dat");
    ck_assert_msg(strstr(dat, "# ring\n1024 1.5\n2048 3\n\n\n# tree\n1024 2.5\n2048 4\n"), "%s", dat);
    free(dat);
    char *gp = slurp("busbw.gp");
    ck_assert_msg(strstr(gp, "index 1 using 1:2") && strstr(gp, "title 'tree'"), "%s", gp);
    free(gp);
    ck_assert(size_of("busbw.png") > 0 && size_of("busbw.svg") > 0);
    put("bad.json", "{\"a\": 1}");
    snprintf(in, sizeof in, "%s/bad.json", tmp);
    ck_assert_int_eq(rep_report_file(in, out, &sum, &e), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "expected an array of objects"), "%s", e.msg);
}
END_TEST

START_TEST(timeline_gantt)
{
    /* A two-GPU trace-event file: the state slices become timeline.dat rows (ms), one row per
     * GPU in order, coloured by state. */
    put("tl.json",
        "{\"traceEvents\": ["
        "{\"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"name\": \"thread_name\", \"args\": {\"name\": \"GPU 0 state\"}},"
        "{\"ph\": \"M\", \"pid\": 1, \"tid\": 2048, \"name\": \"thread_name\", \"args\": {\"name\": \"GPU 1 state\"}},"
        "{\"ph\": \"X\", \"cat\": \"state\", \"name\": \"compute\", \"pid\": 1, \"tid\": 0, \"ts\": 0, \"dur\": 1500},"
        "{\"ph\": \"X\", \"cat\": \"state\", \"name\": \"idle\", \"pid\": 1, \"tid\": 0, \"ts\": 1500, \"dur\": 500},"
        "{\"ph\": \"X\", \"cat\": \"compute\", \"name\": \"fwd\", \"pid\": 1, \"tid\": 256, \"ts\": 0, \"dur\": 1500},"
        "{\"ph\": \"X\", \"cat\": \"state\", \"name\": \"wait (peers)\", \"pid\": 1, \"tid\": 2048, \"ts\": 0, \"dur\": 2000}]}");
    char in[128], out[128];
    snprintf(in, sizeof in, "%s/tl.json", tmp);
    snprintf(out, sizeof out, "%s/report", tmp);
    dt_error e = {0};
    rep_report_summary sum;
    ck_assert_msg(rep_report_file(in, out, &sum, &e) == DT_OK, "%s", e.msg);
    ck_assert_int_eq(sum.rows, 2);
    ck_assert_int_eq(sum.n_plots, 1);
    ck_assert_str_eq(sum.plots[0], "timeline");
    char *dat = slurp("timeline.dat");
    ck_assert_msg(strstr(dat, "\n0 0 1.5 0x4477aa \"compute\"\n0 1.5 2 0xdddddd \"idle\"\n"
                              "1 0 2 0xaa3377 \"wait (peers)\"\n"), "%s", dat);
    free(dat);
    char *gp = slurp("timeline.gp");
    ck_assert_msg(strstr(gp, "'GPU 0' 0, 'GPU 1' 1"), "%s", gp); /* quoted by gp_str */
    free(gp);
    ck_assert(size_of("timeline.png") > 0 && size_of("timeline.svg") > 0);
}
END_TEST

START_TEST(bad_csv)
{
    put("results.csv", "point,status,n_gpus\n0,ok,8\n1,ok\n");
    dt_error e = {0};
    rep_report_summary sum;
    ck_assert_int_eq(rep_report(tmp, &sum, &e), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "record 3 has 2 fields, the header 3"), "%s", e.msg);
    char p[128];
    snprintf(p, sizeof p, "%s/none", tmp);
    ck_assert_int_eq(rep_report(p, &sum, &e), DT_EIO);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, sweep_report);
    tcase_add_test(tc, collective_report);
    tcase_add_test(tc, breakdown_by_kind_and_units);
    tcase_add_test(tc, collective_json);
    tcase_add_test(tc, timeline_gantt);
    tcase_add_test(tc, bad_csv);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
