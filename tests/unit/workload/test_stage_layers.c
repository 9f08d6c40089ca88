/* test_stage_layers.c - uneven pipeline stages ("parallel.stage_layers" and the default split).
 * Pins down: the default split (equal when the layers divide; else ceil each and the surplus
 * taken from the ends inward: Llama 3 405B's 126 layers on 16 stages = 7, 8 x 14, 7); a given
 * list is used as is, must have pp x virtual_stages entries summing to the layers, and bad
 * entries are errors naming the entry; a 2-stage GPipe step with 1 and 3 layers matches its
 * hand trace (21 ms, below); memory follows each stage's own layers; ops carry their first
 * layer. Leaves free: op ids. */
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/workload.h"
#include "wl_testutil.h"

static void split(int layers, int n, const int *want)
{
    int out[64];
    wl_default_stage_layers(layers, n, out);
    for (int i = 0; i < n; i++)
        ck_assert_msg(out[i] == want[i], "%d over %d: entry %d is %d, want %d", layers, n, i,
                      out[i], want[i]);
}

START_TEST(default_split)
{
    split(8, 4, (int[]){2, 2, 2, 2});
    split(7, 4, (int[]){2, 2, 2, 1});       /* one surplus: the logits stage */
    split(5, 4, (int[]){1, 2, 1, 1});       /* last, first, second-to-last */
    int llama[16] = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
    split(126, 16, llama);
    /* in a scenario: 7 layers on pp 2 -> 4, 3 */
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 7,"
         "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0},"
         "\"parallel\": {\"pp\": 2}}", 2);
    ck_assert_int_eq(sc.plan.n_stage_layers, 2);
    ck_assert_int_eq(sc.plan.stage_layers[0], 4);
    ck_assert_int_eq(sc.plan.stage_layers[1], 3);
    ck_assert_int_eq(wl_stage_layer_count(&sc.plan, 7, 1), 3);
    unload();
    /* interleaved: 10 layers on pp 2 x v 2: ceil 3 each, surplus 2 from the last and the first */
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 10,"
         "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0},"
         "\"parallel\": {\"pp\": 2, \"schedule\": \"interleaved\", \"virtual_stages\": 2,"
         "\"microbatches\": 4}}", 2);
    ck_assert_int_eq(sc.plan.n_stage_layers, 4);
    int want[4] = {2, 3, 3, 2};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(sc.plan.stage_layers[i], want[i]);
    /* stage 0 holds virtual stages 0 and 2, stage 1 holds 1 and 3 */
    ck_assert_int_eq(wl_stage_layer_count(&sc.plan, 10, 0), 5);
    ck_assert_int_eq(wl_stage_layer_count(&sc.plan, 10, 1), 5);
    unload();
}
END_TEST

static void bad(const char *parallel, int layers, const char *path, const char *msg_part)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", "
             "\"layers\": %d, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", "
             "\"params\": 0}, \"parallel\": %s}", layers, parallel);
    dt_error e;
    ck_assert_int_eq(try_load(text, 2, &e), DT_EINPUT);
    ck_assert_msg(!strcmp(e.path, path), "%s: path %s (%s)", parallel, e.path, e.msg);
    ck_assert_msg(strstr(e.msg, msg_part), "%s: %s", parallel, e.msg);
}

START_TEST(bad_input)
{
    bad("{\"pp\": 2, \"stage_layers\": [1, 2, 1]}", 4, "parallel.stage_layers",
        "pp x virtual_stages = 2, found 3");
    bad("{\"pp\": 2, \"stage_layers\": [1, 2]}", 4, "parallel.stage_layers",
        "sum to the model's layers (4), found 3");
    bad("{\"pp\": 2, \"stage_layers\": [1, 0]}", 1, "parallel.stage_layers[1]", "layer count >= 1");
    bad("{\"pp\": 2, \"stage_layers\": [1.5, 2.5]}", 4, "parallel.stage_layers[0]", "layer count");
    bad("{\"pp\": 2, \"stage_layers\": 4}", 4, "parallel.stage_layers", "array");
    bad("{\"pp\": 2}", 1, "model.layers", "at least pp x virtual_stages = 2");
}
END_TEST

/* pp 2, GPipe, 2 microbatches, free communication; stage 0 has 1 layer (1 ms F, 2 ms B),
 * stage 1 has 3 (3 ms F, 6 ms B). Stage 0: F0 [0,1] F1 [1,2]; stage 1: F0 [1,4] F1 [4,7]
 * B0 [7,13] B1 [13,19]; stage 0: B0 [13,15] B1 [19,21]. */
START_TEST(uneven_step_closed_form)
{
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
         "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 4e8},"
         "\"parallel\": {\"pp\": 2, \"microbatches\": 2, \"schedule\": \"gpipe\","
         "\"stage_layers\": [1, 3]}}", 2);
    wl_graph *g = wl_graph_build(&sc);
    replay_config cfg = {.n_gpus = g->n_gpus};
    replay_result r;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    replay_result_free(&r);
    ck_assert_int_eq(r.step_time, 21 * SIM_MS);
    /* the second stage's forwards start at layer 1 */
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind == WL_OP_COMPUTE && g->ops[i].lane == 1 &&
            !strcmp(g->names[g->ops[i].name], "forward"))
            ck_assert_int_eq(g->ops[i].layer, 1);
    /* memory: stage 1 holds 3 of the 4 layers' 1e8 parameters each (bf16: 2 B) */
    mem_breakdown mb;
    mem_compute(&sc.model, &sc.plan, &mb);
    ck_assert_int_eq(mb.stage, 1);
    ck_assert_rel(mb.params, 3 * 1e8 * 2, 1e-12);
    wl_graph_destroy(g);
    unload();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("stage_layers");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, default_split);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, uneven_step_closed_form);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
