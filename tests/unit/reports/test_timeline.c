/* test_timeline.c - Perfetto/Chrome trace-event timelines and the terminal breakdown bar.
 * Pins down: the output parses as JSON (cJSON); each GPU's "state" track tiles [0, step end]
 * so its slices sum to the step time, with compute = the union of compute ops and exposed comm
 * = communication not under compute (hand-computed on a constructed timeline); slices on any one
 * track never overlap (overlapping DP ops and link transfers get a second lane); a GPU
 * selection drops the other GPUs' tracks and keeps only links with an endpoint that is a
 * selected GPU or a node of a host holding one (the Network process only when a link is left);
 * GPU selections parse ranges and reject junk; the bar
 * has exactly `width` cells in the right proportions.
 * Leaves free: colours, track order beyond sort indices, metadata wording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/json.h"
#include "dtsim/report.h"
#include "testutil.h"

#define US 1000000 /* ps per microsecond */

static char *dup(const char *s) { return strcpy(malloc(strlen(s) + 1), s); }

static run_timeline *make(void)
{
    run_timeline *tl = calloc(1, sizeof *tl);
    static const char *names[] = {"fwd", "bwd", "allreduce", "send"};
    tl->n_names = 4;
    tl->names = calloc(4, sizeof(char *));
    for (int i = 0; i < 4; i++) tl->names[i] = dup(names[i]);
    tl->n_gpus = 3;
    tl->gpu_host = calloc(3, sizeof(int));
    tl->gpu_host[2] = 1;
    tl->n_hosts = 2;
    tl->host_names = calloc(2, sizeof(char *));
    tl->host_names[0] = dup("node0");
    tl->host_names[1] = dup("node1");
    run_span sp[] = {
        {0, RUN_STREAM_COMPUTE, 0 * US, 100 * US, 0, 0, 0, -1},
        {0, RUN_STREAM_COMPUTE, 150 * US, 300 * US, 1, 0, 0, -1},
        {0, RUN_STREAM_TP, 100 * US, 150 * US, 2, -1, 0, WL_COMM_TP},
        {0, RUN_STREAM_DP, 250 * US, 400 * US, 2, -1, -1, WL_COMM_DP},
        {0, RUN_STREAM_DP, 260 * US, 380 * US, 2, -1, -1, WL_COMM_ZERO}, /* overlaps: 2nd lane */
        {1, RUN_STREAM_COMPUTE, 0 * US, 200 * US, 0, 1, 1, -1},
        {1, RUN_STREAM_PP, 200 * US, 260 * US, 3, 1, -1, WL_COMM_PP},
        {2, RUN_STREAM_COMPUTE, 50 * US, 100 * US, 0, 0, 2, -1},
    };
    tl->n_spans = sizeof sp / sizeof sp[0];
    tl->spans = malloc(sizeof sp);
    memcpy(tl->spans, sp, sizeof sp);
    tl->n_links = 2;
    tl->link_names = calloc(2, sizeof(char *));
    tl->link_names[0] = dup("gpu0->sw0");
    tl->link_names[1] = dup("sw0->gpu2");
    run_link_span ls[] = {{0, 0, 50 * US, 1e6}, {0, 10 * US, 60 * US, 2e6}, {1, 100 * US, 200 * US, 5e5}};
    tl->n_link_spans = 3;
    tl->link_spans = malloc(sizeof ls);
    memcpy(tl->link_spans, ls, sizeof ls);
    return tl;
}

static cJSON *write_parse(const run_timeline *tl, const rep_timeline_options *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dt_error e = {0};
    ck_assert_int_eq(rep_timeline_write(tl, o, f, &e), DT_OK);
    fclose(f);
    cJSON *j = NULL;
    ck_assert_msg(js_parse_text(buf, len, "timeline.json", &j, &e) == DT_OK, "%s", e.msg);
    free(buf);
    return j;
}

/* Sum of "state" slice durations of GPU g, and of those named `name` (NULL: all). */
static double state_sum(const cJSON *j, int g, const char *name)
{
    double s = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(j, "traceEvents"))
    {
        const cJSON *cat = cJSON_GetObjectItem(ev, "cat");
        if (!cat || strcmp(cat->valuestring, "state")) continue;
        if ((int)cJSON_GetObjectItem(ev, "tid")->valuedouble != g * 2048) continue;
        if (name && strcmp(cJSON_GetObjectItem(ev, "name")->valuestring, name)) continue;
        s += cJSON_GetObjectItem(ev, "dur")->valuedouble;
    }
    return s;
}

START_TEST(state_tracks_sum_to_step)
{
    run_timeline *tl = make();
    rep_timeline_options o = {.links = true, .step_end = 500 * US};
    cJSON *j = write_parse(tl, &o);
    for (int g = 0; g < 3; g++) ck_assert_rel(state_sum(j, g, NULL), 500.0, 1e-12);
    ck_assert_rel(state_sum(j, 0, "compute"), 250.0, 1e-12);
    /* exposed: TP 100-150; DP and ZeRO together 300-380, DP alone 380-400 */
    ck_assert_rel(state_sum(j, 0, "comm TP (exposed)"), 50.0, 1e-12);
    ck_assert_rel(state_sum(j, 0, "comm DP+ZeRO (exposed)"), 80.0, 1e-12);
    ck_assert_rel(state_sum(j, 0, "comm DP (exposed)"), 20.0, 1e-12);
    ck_assert_rel(state_sum(j, 0, "idle"), 100.0, 1e-12);
    ck_assert_rel(state_sum(j, 1, "comm PP (exposed)"), 60.0, 1e-12);
    ck_assert_rel(state_sum(j, 2, "idle"), 450.0, 1e-12);
    cJSON_Delete(j);
    run_timeline_free(tl);
}
END_TEST

START_TEST(tracks_never_overlap)
{
    run_timeline *tl = make();
    rep_timeline_options o = {.links = true, .step_end = 500 * US};
    cJSON *j = write_parse(tl, &o);
    const cJSON *evs = cJSON_GetObjectItem(j, "traceEvents");
    int n = cJSON_GetArraySize(evs), slices = 0;
    bool dp2 = false, link2 = false;
    for (int a = 0; a < n; a++) {
        const cJSON *x = cJSON_GetArrayItem(evs, a);
        const char *ph = cJSON_GetObjectItem(x, "ph")->valuestring;
        if (!strcmp(ph, "M")) {
            const cJSON *nm = cJSON_GetObjectItem(cJSON_GetObjectItem(x, "args"), "name");
            if (nm && !strcmp(nm->valuestring, "GPU 0 DP #2")) dp2 = true;
            if (nm && !strcmp(nm->valuestring, "gpu0->sw0 #2")) link2 = true;
            continue;
        }
        slices++;
        double s1 = cJSON_GetObjectItem(x, "ts")->valuedouble;
        double e1 = s1 + cJSON_GetObjectItem(x, "dur")->valuedouble;
        for (int b = a + 1; b < n; b++) {
            const cJSON *y = cJSON_GetArrayItem(evs, b);
            if (strcmp(cJSON_GetObjectItem(y, "ph")->valuestring, "X")) continue;
            if (cJSON_GetObjectItem(y, "pid")->valuedouble != cJSON_GetObjectItem(x, "pid")->valuedouble ||
                cJSON_GetObjectItem(y, "tid")->valuedouble != cJSON_GetObjectItem(x, "tid")->valuedouble)
                continue;
            double s2 = cJSON_GetObjectItem(y, "ts")->valuedouble;
            double e2 = s2 + cJSON_GetObjectItem(y, "dur")->valuedouble;
            ck_assert_msg(e1 <= s2 || e2 <= s1, "overlap on one track at %g and %g", s1, s2);
        }
    }
    ck_assert(dp2);
    ck_assert(link2);
    /* 3 GPUs' states (6 + 3 + 3 slices: GPU 0's exposed DP+ZeRO and DP alone are two) + 8 ops
     * + 3 transfers. */
    ck_assert_int_eq(slices, 12 + 8 + 3);
    cJSON_Delete(j);
    run_timeline_free(tl);
}
END_TEST

START_TEST(gpu_selection)
{
    dt_error e = {0};
    bool *m = NULL;
    ck_assert_int_eq(rep_gpu_select_parse("0-2,5", 8, "--timeline-gpus", &m, &e), DT_OK);
    ck_assert(m[0] && m[1] && m[2] && !m[3] && !m[4] && m[5] && !m[7]);
    free(m);
    ck_assert_int_eq(rep_gpu_select_parse("0-9", 8, "--timeline-gpus", &m, &e), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "GPUs 0-7") != NULL, "%s", e.msg);
    ck_assert_int_eq(rep_gpu_select_parse("3-1", 8, "--timeline-gpus", &m, &e), DT_EINPUT);
    ck_assert_int_eq(rep_gpu_select_parse("1,", 8, "--timeline-gpus", &m, &e), DT_EINPUT);
    ck_assert_int_eq(rep_gpu_select_parse("a", 8, "--timeline-gpus", &m, &e), DT_EINPUT);

    run_timeline *tl = make();
    ck_assert_int_eq(rep_gpu_select_parse("0,2", 3, "--timeline-gpus", &m, &e), DT_OK);
    rep_timeline_options o = {.gpus = m, .links = false, .step_end = 500 * US};
    cJSON *j = write_parse(tl, &o);
    const cJSON *ev;
    int x = 0;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(j, "traceEvents"))
    {
        int tid = (int)cJSON_GetObjectItem(ev, "tid")->valuedouble;
        ck_assert_msg(tid / 2048 != 1, "GPU 1 should be left out");
        x += !strcmp(cJSON_GetObjectItem(ev, "ph")->valuestring, "X");
    }
    ck_assert_int_eq(x, (6 + 3) + 6); /* states of GPUs 0 and 2, their 6 ops, no links */
    cJSON_Delete(j);
    free(m);
    run_timeline_free(tl);
}
END_TEST

/* Hosts 0 (GPUs 0, 1, switch sw0) and 1 (GPU 3, nic1); GPUs 2 and 4 on no host; a host-less
 * leaf and spine. One transfer per link. */
static const char *const link_case_names[] = {"gpu0->sw0", "gpu1->sw0", "sw0->leaf",
                                              "leaf->nic1", "nic1->gpu3", "gpu4->leaf",
                                              "leaf->spine", "gpu2->gpu4"};
static const int link_case_gpu[] = {0, -1, 1, -1, -1, -1, -1, -1, -1, 3, 4, -1, -1, -1, 2, 4};
static const int link_case_host[] = {0, 0, 0, 0, 0, -1, -1, 1, 1, 1, -1, -1, -1, -1, -1, -1};

/* Kept link tracks of a selection, as a bit set over link_case_names; -1 if a kept slice is
 * not on a kept link track. */
static int kept_links(const char *sel)
{
    run_timeline *tl = calloc(1, sizeof *tl);
    tl->n_gpus = 5;
    tl->gpu_host = malloc(5 * sizeof(int));
    int gh[] = {0, 0, -1, 1, -1};
    memcpy(tl->gpu_host, gh, sizeof gh);
    tl->n_hosts = 2;
    tl->host_names = calloc(2, sizeof(char *));
    tl->host_names[0] = dup("host0");
    tl->host_names[1] = dup("host1");
    tl->n_links = 8;
    tl->link_names = calloc(8, sizeof(char *));
    tl->link_gpu = malloc(sizeof link_case_gpu);
    memcpy(tl->link_gpu, link_case_gpu, sizeof link_case_gpu);
    tl->link_host = malloc(sizeof link_case_host);
    memcpy(tl->link_host, link_case_host, sizeof link_case_host);
    tl->link_spans = calloc(8, sizeof *tl->link_spans);
    tl->n_link_spans = 8;
    for (int l = 0; l < 8; l++) {
        tl->link_names[l] = dup(link_case_names[l]);
        tl->link_spans[l] = (run_link_span){l, l * US, (l + 1) * US, 1e3};
    }
    bool *m = NULL;
    dt_error e = {0};
    if (sel) ck_assert_int_eq(rep_gpu_select_parse(sel, 5, "--timeline-gpus", &m, &e), DT_OK);
    rep_timeline_options o = {.gpus = m, .links = true, .step_end = 10 * US};
    cJSON *j = write_parse(tl, &o);
    int named = 0, sliced = 0, net_process = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(j, "traceEvents"))
    {
        const char *ph = cJSON_GetObjectItem(ev, "ph")->valuestring;
        const char *nm = cJSON_GetObjectItem(ev, "name")->valuestring;
        const cJSON *args = cJSON_GetObjectItem(ev, "args");
        const cJSON *an = args ? cJSON_GetObjectItem(args, "name") : NULL;
        if (!strcmp(ph, "M") && !strcmp(nm, "process_name") && an &&
            !strcmp(an->valuestring, "Network links"))
            net_process = 1;
        if (!strcmp(ph, "M") && !strcmp(nm, "thread_name") && an)
            for (int l = 0; l < 8; l++)
                if (!strcmp(an->valuestring, link_case_names[l])) named |= 1 << l;
        const cJSON *cat = cJSON_GetObjectItem(ev, "cat");
        if (!strcmp(ph, "X") && cat && !strcmp(cat->valuestring, "link"))
            sliced |= 1 << (int)(cJSON_GetObjectItem(ev, "tid")->valuedouble / 256);
    }
    cJSON_Delete(j);
    free(m);
    run_timeline_free(tl);
    ck_assert_int_eq(net_process, named != 0);
    return named == sliced ? named : -1;
}

START_TEST(gpu_selection_filters_links)
{
    ck_assert_int_eq(kept_links(NULL), 0xff);
    /* GPU 1 (host 0): its own link, GPU 0's link to sw0 (a node of host 0), sw0's uplink. */
    ck_assert_int_eq(kept_links("1"), 1 << 0 | 1 << 1 | 1 << 2);
    /* GPU 3 (host 1): nic1's links, including leaf->nic1; not the leaf's other links. */
    ck_assert_int_eq(kept_links("3"), 1 << 3 | 1 << 4);
    /* GPU 4 (no host): only the links it is an endpoint of. */
    ck_assert_int_eq(kept_links("4"), 1 << 5 | 1 << 7);
    /* GPU 2 (no host) and GPU 0: the union; leaf->spine never. */
    ck_assert_int_eq(kept_links("0,2"), 1 << 0 | 1 << 1 | 1 << 2 | 1 << 7);
}
END_TEST

START_TEST(waiting_is_not_traffic)
{
    /* One GPU: compute 0-10, a DP collective waits for peers 10-30 then moves data 30-40. */
    run_timeline tl;
    memset(&tl, 0, sizeof tl);
    char *names[] = {"fwd", "wait_for_peers", "allreduce"};
    tl.names = names;
    tl.n_names = 3;
    tl.n_gpus = 1;
    run_span sp[] = {{0, RUN_STREAM_COMPUTE, 0, 10 * US, 0, -1, -1, -1},
                     {0, RUN_STREAM_DP, 10 * US, 30 * US, 1, -1, -1, WL_COMM_DP},
                     {0, RUN_STREAM_DP, 30 * US, 40 * US, 2, -1, -1, WL_COMM_DP}};
    tl.spans = sp;
    tl.n_spans = 3;
    rep_timeline_options o = {.step_end = 50 * US};
    cJSON *j = write_parse(&tl, &o);
    ck_assert_rel(state_sum(j, 0, NULL), 50.0, 1e-12);
    ck_assert_rel(state_sum(j, 0, "wait (peers)"), 20.0, 1e-12);
    ck_assert_rel(state_sum(j, 0, "comm DP (exposed)"), 10.0, 1e-12);
    ck_assert_rel(state_sum(j, 0, "idle"), 10.0, 1e-12);
    cJSON_Delete(j);
}
END_TEST

START_TEST(breakdown_bar)
{
    run_result r;
    memset(&r, 0, sizeof r);
    r.step_time_s = 2.0;
    r.breakdown_s.compute = 1.0;
    r.breakdown_s.comm_exposed = 0.5;
    r.breakdown_s.bubble = 0.3;
    r.breakdown_s.straggler_wait = 0.1;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rep_breakdown_bar(&r, 20, f);
    fclose(f);
    /* 10 '#', 5 '=', 3 '.', 1 '!', 1 ' ' (the unaccounted 0.1 s). */
    ck_assert_msg(!strncmp(buf, "[##########=====...! ]", 22), "%s", buf);
    ck_assert_msg(strstr(buf, "compute 50.0%") && strstr(buf, "straggler 5.0%"), "%s", buf);
    free(buf);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("timeline");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, state_tracks_sum_to_step);
    tcase_add_test(tc, tracks_never_overlap);
    tcase_add_test(tc, gpu_selection);
    tcase_add_test(tc, gpu_selection_filters_links);
    tcase_add_test(tc, waiting_is_not_traffic);
    tcase_add_test(tc, breakdown_bar);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
