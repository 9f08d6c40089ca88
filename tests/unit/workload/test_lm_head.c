/* test_lm_head.c - what the output layer adds besides its GEMM: the cross-entropy over fp32
 * logits and, with tied embeddings on different stages, their gradient all-reduce.
 * Pins down (GPT-like layer, h 1024, V 32000, s 512, b 2, tp 2, pp 2, bf16 e = 2): the last
 * stage's forward moves (36 + e) bytes under the megatron preset (Megatron's cross-entropy: cast
 * e + 4, max 4, subtract 8, exp 8, sum 4, divide 8; 32 + e without it) and its backward (12 + e)
 * per logit on its TP rank (b s V / t of them) on top of the layers' elementwise traffic, the first stage none; one
 * "embedding_allreduce" per DP replica joins the first and the last stage (V h / t e bytes, an
 * all-reduce, comm kind pp) after the backward and before each stage's optimizer step; untied
 * embeddings or pp 1 have none. On one stage (pp 1) the tied V x h matrix is one parameter used
 * at both ends, so its gradient joins the data-parallel reduction's last bucket (after the
 * embedding's backward), not the first; untied, the output layer's copy joins the first and the
 * embedding's the last. Leaves free: op ids. */
#include <string.h>

#include "dtsim/workload.h"
#include "testutil.h"

static wl_graph *build_fw(const char *tied, const char *fw, wl_scenario *sc, cJSON **j)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 4, "
             "\"hidden\": 1024, \"heads\": 16, \"seq_len\": 512, \"vocab\": 32000, "
             "\"tied_embeddings\": %s}, \"parallel\": {\"tp\": 2, \"pp\": 2, \"dp\": 2, "
             "\"micro_batch_size\": 2, \"microbatches\": 2, \"sequence_parallel\": true}%s}", tied, fw);
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", j, &e), DT_OK);
    js_ctx c = {"t.json", &e};
    ck_assert_int_eq(wl_scenario_parse(&c, *j, sc), DT_OK);
    ck_assert_int_eq(wl_scenario_resolve(&c, sc, 8), DT_OK);
    return wl_graph_build(sc);
}

static wl_graph *build(const char *tied, wl_scenario *sc, cJSON **j)
{
    return build_fw(tied, "", sc, j);
}

static void cross_entropy_case(const char *fw, double ce_fwd)
{
    wl_scenario sc;
    cJSON *j;
    wl_graph *g = build_fw("true", fw, &sc, &j);
    wl_layer_cost lc;
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    double logits = 2 * 512 * 32000 / 2.0, e = 2;
    int seen = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COMPUTE || o->lane != 1 || o->mb != 1) continue; /* stage 1, replica 0 */
        const char *nm = g->names[o->name];
        double bytes = g->costs[o->arg].bytes[GPU_OP_ELEMENTWISE];
        if (!strcmp(nm, "forward")) {
            ck_assert_rel(bytes, 2 * lc.fwd_elem_bytes + logits * (ce_fwd + e), 1e-15);
            seen++;
        } else if (!strcmp(nm, "backward") && o->layer == 3) { /* per layer: the last one */
            ck_assert_rel(bytes, lc.bwd_elem_bytes + lc.bwd_score_bytes + logits * (12 + e), 1e-15);
            seen++;
        }
    }
    ck_assert_int_eq(seen, 2);
    /* stage 0's forward: layers and the embedding lookup, no cross-entropy */
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].lane == 0 && g->ops[i].mb == 0 && !strcmp(g->names[g->ops[i].name], "forward")) {
            ck_assert_rel(g->costs[g->ops[i].arg].bytes[GPU_OP_ELEMENTWISE],
                          2 * lc.fwd_elem_bytes + 2 * 2 * 512 * 1024 * e, 1e-15);
            break;
        }
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
}

START_TEST(cross_entropy_bytes)
{
    cross_entropy_case("", 32);
    cross_entropy_case(", \"framework\": {\"preset\": \"megatron\"}", 36);
}
END_TEST

START_TEST(tied_embedding_allreduce)
{
    wl_scenario sc;
    cJSON *j;
    wl_graph *g = build("true", &sc, &j);
    int n = 0;
    uint32_t inst[4];
    uint32_t lanes[4];
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (strcmp(g->names[o->name], "embedding_allreduce")) continue;
        ck_assert_int_eq(o->kind, WL_OP_COLL);
        ck_assert_int_lt(n, 4);
        inst[n] = o->arg;
        lanes[n++] = o->lane;
        ck_assert_int_eq(g->colls[o->arg].op, COLL_ALLREDUCE);
        ck_assert_rel(g->colls[o->arg].bytes, 32000 * 1024 / 2.0 * 2, 1e-15);
        ck_assert_int_eq(g->colls[o->arg].kind, WL_COMM_PP);
        /* the lane's optimizer step waits for it */
        bool waited = false;
        for (uint32_t k = i + 1; k < g->n_ops && !waited; k++)
            if (g->ops[k].lane == o->lane && !strcmp(g->names[g->ops[k].name], "optimizer_step"))
                for (uint32_t d = 0; d < g->ops[k].n_deps; d++)
                    waited |= g->deps[g->ops[k].dep_start + d] == i;
        ck_assert(waited);
    }
    /* lanes: replica 0 stages 0 and 1 (lanes 0, 1), replica 1 (lanes 2, 3); pairs share one */
    ck_assert_int_eq(n, 4);
    ck_assert(lanes[0] == 0 && lanes[1] == 1 && lanes[2] == 2 && lanes[3] == 3);
    ck_assert(inst[0] == inst[1] && inst[2] == inst[3] && inst[0] != inst[2]);
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);

    g = build("false", &sc, &j);
    for (uint32_t i = 0; i < g->n_ops; i++)
        ck_assert(strcmp(g->names[g->ops[i].name], "embedding_allreduce"));
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lm_head");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cross_entropy_bytes);
    tcase_add_test(tc, tied_embedding_allreduce);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
