/* test_chakra.c - Chakra execution traces read from memory (chakra_read_mem) and written back.
 * Pins down: a one-node trace gives one compute op of its duration; malformed files are refused
 * with the file, the message index and its byte offset (empty, gzip, a length cut short, a
 * varint longer than 10 bytes, a length past the end, protobuf that is not a GlobalMetadata or
 * a Node, an unknown node type, a dependency on a node the file lacks, a duration_micros past
 * dtsim's time bound of 9.2e18 ps), leaving no graph;
 * export then import is the identity on the op graph (trace_write byte for byte), also when a
 * node depends on one written after it, with sends, receives and a collective; a dtsim-written
 * receive whose comm_tag names an op of another lane that is no send to it is refused.
 * The bytes are protobuf encoded here by hand (field numbers of chakra_et.proto), independent
 * of the generated code. The CLI test (tests/cli/test_chakra.sh) covers files, closed-form
 * replays and protoc-encoded traces.
 * Leaves free: message wording beyond the quoted parts. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dtsim/chakra.h"
#include "dtsim/json.h"
#include "dtsim/replay.h"
#include "dtsim/topo.h"
#include "testutil.h"
#include "wl_testutil.h"

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf;

static void put(buf *B, uint64_t v) /* varint */
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        B->b[B->n++] = c | (v ? 0x80 : 0);
    } while (v);
}
static void put_bytes(buf *B, const void *p, size_t n)
{
    memcpy(B->b + B->n, p, n);
    B->n += n;
}
static void field_varint(buf *B, int field, uint64_t v)
{
    put(B, (uint64_t)field << 3);
    put(B, v);
}
static void field_bytes(buf *B, int field, const void *p, size_t n)
{
    put(B, (uint64_t)field << 3 | 2);
    put(B, n);
    put_bytes(B, p, n);
}
static void field_str(buf *B, int field, const char *s) { field_bytes(B, field, s, strlen(s)); }
/* a framed message: its length, then its bytes */
static void frame(buf *file, const buf *msg)
{
    put(file, msg->n);
    put_bytes(file, msg->b, msg->n);
}
static void meta(buf *file)
{
    buf m = {.n = 0};
    field_str(&m, 1, "0.0.4");
    frame(file, &m);
}
/* attribute (Node field 10): name, then int64_val (9) or string_val (29) */
static void attr_i64(buf *node, const char *name, int64_t v)
{
    buf a = {.n = 0};
    field_str(&a, 1, name);
    field_varint(&a, 9, (uint64_t)v);
    field_bytes(node, 10, a.b, a.n);
}
static void attr_str(buf *node, const char *name, const char *v)
{
    buf a = {.n = 0};
    field_str(&a, 1, name);
    field_str(&a, 29, v);
    field_bytes(node, 10, a.b, a.n);
}
enum { COMP = 4, SEND = 5, RECV = 6, COLL = 7 };
/* a node: id, name, type, data deps (packed), duration */
static void node(buf *n, uint64_t id, const char *name, int type, const uint64_t *deps, int n_deps, uint64_t dur_us)
{
    n->n = 0;
    field_varint(n, 1, id);
    field_str(n, 2, name);
    field_varint(n, 3, (uint64_t)type);
    if (n_deps) {
        buf p = {.n = 0};
        for (int i = 0; i < n_deps; i++) put(&p, deps[i]);
        field_bytes(n, 5, p.b, p.n);
    }
    if (dur_us) field_varint(n, 7, dur_us);
}

static int read1(const buf *f, wl_graph **g, trace_env *env, dt_error *err)
{
    const unsigned char *b[1] = {f->b};
    size_t len[1] = {f->n};
    const char *name[1] = {"r.0.et"};
    chakra_read_options o = {0};
    dt_error_clear(err);
    return chakra_read_mem(1, b, len, name, &o, g, env, err);
}

START_TEST(one_compute_node)
{
    buf f = {.n = 0}, n;
    meta(&f);
    node(&n, 7, "gemm", COMP, NULL, 0, 250);
    frame(&f, &n);
    wl_graph *g = NULL;
    trace_env env;
    dt_error err;
    ck_assert_int_eq(read1(&f, &g, &env, &err), DT_OK);
    ck_assert_int_eq(g->n_gpus, 1);
    ck_assert_int_eq(g->n_ops, 1);
    ck_assert_int_eq(g->ops[0].kind, WL_OP_COMPUTE);
    ck_assert_str_eq(g->names[g->ops[0].name], "gemm");
    ck_assert(g->costs[g->ops[0].arg].fixed == 250 * SIM_US);
    wl_graph_destroy(g);
    trace_env_free(&env);
}
END_TEST

static void refused(const buf *f, const char *path, const char *needle)
{
    wl_graph *g = (wl_graph *)1;
    trace_env env;
    dt_error err;
    int rc = read1(f, &g, &env, &err);
    ck_assert_msg(rc == DT_EINPUT, "accepted (%s)", needle);
    ck_assert_msg(g == NULL, "a graph left behind (%s)", needle);
    ck_assert_str_eq(err.file, "r.0.et");
    ck_assert_msg(strstr(err.path, path) != NULL, "path '%s' lacks '%s' (%s)", err.path, path, err.msg);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
}

START_TEST(malformed)
{
    buf f = {.n = 0}, n;
    refused(&f, "", "empty");
    f.n = 0;
    put_bytes(&f, "\x1f\x8b\x08\x00", 4);
    refused(&f, "", "gunzip");
    f.n = 0;
    put_bytes(&f, "\x80", 1);
    refused(&f, "message 0 at byte 0", "truncated");
    f.n = 0;
    put_bytes(&f, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12);
    refused(&f, "message 0 at byte 0", "more than 10 bytes");
    f.n = 0;
    put_bytes(&f, "\x05\x0a", 2);
    refused(&f, "message 0 at byte 0", "declares 5 bytes but 1 remain");
    f.n = 0;
    put_bytes(&f, "\x02\x0f\x00", 3); /* wire type 7 does not exist */
    refused(&f, "message 0 at byte 0", "not a Chakra GlobalMetadata");
    f.n = 0;
    meta(&f); /* 8 bytes: 0x07, then 0x0a 0x05 "0.0.4" */
    ck_assert_int_eq(f.n, 8);
    put_bytes(&f, "\x02\x0f\x00", 3);
    refused(&f, "message 1 at byte 8", "not a valid Chakra Node");
    f.n = 0;
    meta(&f);
    node(&n, 3, "odd", 42, NULL, 0, 0);
    frame(&f, &n);
    refused(&f, "node 3 (message 1 at byte 8)", "node type 42");
    f.n = 0;
    meta(&f);
    uint64_t d = 9;
    node(&n, 3, "lost", COMP, &d, 1, 10);
    frame(&f, &n);
    refused(&f, "node 3 (message 1 at byte 8)", "depends on node 9");
    /* a duration past the bound of every dtsim time (9.2e18 ps): it had been saturated to
     * "never", which the dtsim trace it exports to could not be read back with */
    f.n = 0;
    meta(&f);
    node(&n, 4, "forever", COMP, NULL, 0, (uint64_t)9.2e12);
    frame(&f, &n);
    refused(&f, "node 4 (message 1 at byte 8)", "duration_micros: time out of range");
    f.n = 0;
    meta(&f);
    node(&n, 4, "long", COMP, NULL, 0, (uint64_t)9.1e12); /* 105 days: kept */
    frame(&f, &n);
    wl_graph *g = NULL;
    trace_env env;
    dt_error err;
    ck_assert_int_eq(read1(&f, &g, &env, &err), DT_OK);
    ck_assert(g->costs[g->ops[0].arg].fixed == (sim_time_t)9.1e12 * SIM_US);
    wl_graph_destroy(g);
    trace_env_free(&env);
}
END_TEST

START_TEST(export_import_identity)
{
    /* rank 0: a compute node that depends on one written after it, a send to rank 1, a
     * collective over both ranks; rank 1: the receive, compute, the collective */
    buf f[2] = {{.n = 0}, {.n = 0}}, n;
    uint64_t d;
    meta(&f[0]);
    d = 2;
    node(&n, 1, "late \"consumer\"", COMP, &d, 1, 40);
    frame(&f[0], &n);
    node(&n, 2, "producer", COMP, NULL, 0, 30);
    frame(&f[0], &n);
    d = 2;
    node(&n, 3, "send", SEND, &d, 1, 0);
    attr_i64(&n, "comm_src", 0);
    attr_i64(&n, "comm_dst", 1);
    attr_i64(&n, "comm_tag", 5);
    attr_i64(&n, "comm_size", 1 << 20);
    frame(&f[0], &n);
    d = 1;
    node(&n, 4, "allreduce", COLL, &d, 1, 0);
    attr_i64(&n, "comm_type", 0);
    attr_i64(&n, "comm_size", 4 << 20);
    attr_str(&n, "pg_name", "0");
    frame(&f[0], &n);
    meta(&f[1]);
    node(&n, 1, "recv", RECV, NULL, 0, 0);
    attr_i64(&n, "comm_src", 0);
    attr_i64(&n, "comm_dst", 1);
    attr_i64(&n, "comm_tag", 5);
    attr_i64(&n, "comm_size", 1 << 20);
    frame(&f[1], &n);
    d = 1;
    node(&n, 2, "work", COMP, &d, 1, 70);
    frame(&f[1], &n);
    d = 2;
    node(&n, 3, "allreduce", COLL, &d, 1, 0);
    attr_i64(&n, "comm_type", 0);
    attr_i64(&n, "comm_size", 4 << 20);
    attr_str(&n, "pg_name", "0");
    frame(&f[1], &n);

    const unsigned char *b[2] = {f[0].b, f[1].b};
    size_t len[2] = {f[0].n, f[1].n};
    const char *names[2] = {"r.0.et", "r.1.et"};
    chakra_read_options o = {0};
    wl_graph *g = NULL;
    trace_env env;
    dt_error err;
    dt_error_clear(&err);
    int rc = chakra_read_mem(2, b, len, names, &o, &g, &env, &err);
    ck_assert_msg(rc == DT_OK, "%s: %s", err.path, err.msg);
    ck_assert_int_eq(g->n_gpus, 2);
    ck_assert_int_eq(g->n_colls, 1);

    cJSON *gen = cJSON_Parse("{\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 2}");
    js_ctx ctx = {.file = "t", .err = &err};
    topo *t = NULL;
    ck_assert_int_eq(topo_from_json(&ctx, gen, "", NULL, &t), DT_OK);
    chakra_export *x = NULL;
    ck_assert_int_eq(chakra_export_create(g, &env, t->gpus, &x, &err), DT_OK);
    ck_assert_int_eq(chakra_export_ranks(x), 2);
    char *out[2];
    size_t olen[2];
    for (int r = 0; r < 2; r++) {
        FILE *w = open_memstream(&out[r], &olen[r]);
        ck_assert_int_eq(chakra_export_write_rank(x, r, w, &err), DT_OK);
        fclose(w);
    }
    chakra_export_destroy(x);
    wl_graph *g2 = NULL;
    trace_env env2;
    rc = chakra_read_mem(2, (const unsigned char *const *)out, olen, names, &o, &g2, &env2, &err);
    ck_assert_msg(rc == DT_OK, "%s: %s", err.path, err.msg);
    char *s1 = dump_trace(g, &env), *s2 = dump_trace(g2, &env2);
    ck_assert_str_eq(s1, s2);
    /* a dtsim-written receive names its send by op id (comm_tag): pointed at a compute op of
     * the other lane instead, the files say what per-rank files cannot (a dependency across
     * lanes that is not a message), and the reader refuses them rather than export failing */
    uint32_t send_op = UINT32_MAX, comp0 = UINT32_MAX;
    for (uint32_t i = 0; i < g2->n_ops; i++) {
        if (g2->ops[i].kind == WL_OP_SEND) send_op = i;
        if (g2->ops[i].kind == WL_OP_COMPUTE && g2->ops[i].lane == 0 && comp0 == UINT32_MAX) comp0 = i;
    }
    ck_assert(send_op < 128 && comp0 < 128 && g2->ops[send_op].lane == 0);
    uint8_t *tag = NULL;
    for (size_t i = 0; i + 10 <= olen[1] && !tag; i++)
        if (memcmp(out[1] + i, "comm_tag", 8) == 0) tag = (uint8_t *)out[1] + i;
    ck_assert_ptr_nonnull(tag);
    ck_assert(tag[8] == (7 << 3) || tag[8] == (9 << 3)); /* int32_val or int64_val: a one-byte varint */
    ck_assert_int_eq(tag[9], send_op);
    tag[9] = (uint8_t)comp0;
    wl_graph *g4 = (wl_graph *)1;
    trace_env env4;
    rc = chakra_read_mem(2, (const unsigned char *const *)out, olen, names, &o, &g4, &env4, &err);
    ck_assert_int_eq(rc, DT_EINPUT);
    ck_assert_ptr_null(g4);
    ck_assert_str_eq(err.file, "r.1.et");
    ck_assert_msg(strstr(err.msg, "of another lane (0), not for a send to this one (lane 1)"), "%s", err.msg);
    tag[9] = (uint8_t)send_op;
    /* read as a foreign trace (dtsim's attributes ignored), the ops, sends and collective
     * come back (the written receive folds into the send it matches) */
    wl_graph *g3 = NULL;
    trace_env env3;
    chakra_read_options o3 = {.ignore_dtsim = true};
    rc = chakra_read_mem(2, (const unsigned char *const *)out, olen, names, &o3, &g3, &env3, &err);
    ck_assert_msg(rc == DT_OK, "%s: %s", err.path, err.msg);
    ck_assert_int_eq(g3->n_colls, 1);
    int sends = 0;
    for (uint32_t i = 0; i < g3->n_ops; i++) sends += g3->ops[i].kind == WL_OP_SEND;
    ck_assert_int_eq(sends, 1);
    wl_graph_destroy(g3);
    trace_env_free(&env3);
    free(s1);
    free(s2);
    for (int r = 0; r < 2; r++) free(out[r]);
    wl_graph_destroy(g2);
    trace_env_free(&env2);
    wl_graph_destroy(g);
    trace_env_free(&env);
    topo_destroy(t);
    cJSON_Delete(gen);
}
END_TEST

/* Op i's deps in g as a set test. */
static bool depends_on(const wl_graph *g, uint32_t i, uint32_t j)
{
    for (uint32_t d = 0; d < g->ops[i].n_deps; d++)
        if (g->deps[g->ops[i].dep_start + d] == j) return true;
    return false;
}

START_TEST(tp_overlap_export)
{
    /* tp 2 under tp_comm_overlap: dtsim runs each layer op's tensor-parallel collectives beside
     * its compute (max of the two). The export writes them from the compute node's own
     * dependencies and joins both chains in a zero-length tp_join node, so that a reader of
     * plain Chakra (dtsim's own with ignore_dtsim) overlaps them too: in that reading every
     * tp_join waits for one compute op and for the last of a chain of tp_collective ops whose
     * first has the compute op's dependencies and not the compute op. Read back with the
     * dtsim attributes, the graph is the one written (trace_write byte for byte). */
    load("{\"topology\": {\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 2},"
         " \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 1024,"
         "  \"heads\": 8, \"seq_len\": 1024, \"vocab\": 32000},"
         " \"parallel\": {\"tp\": 2, \"sequence_parallel\": true, \"microbatches\": 2},"
         " \"precision\": \"bf16\","
         " \"framework\": {\"preset\": \"megatron\", \"tp_comm_overlap\": true}}",
         2);
    wl_graph *g = wl_graph_build(&sc);
    unload();
    trace_env env = {0};
    dt_error e;
    dt_error_clear(&e);
    chakra_read_options o = {0};
    wl_graph *g2 = NULL;
    trace_env env2;
    int rc = chakra_roundtrip(g, &env, 2, &o, &g2, &env2, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    char *w1 = dump_trace(g, &env), *w2 = dump_trace(g2, &env2);
    ck_assert_str_eq(w1, w2);
    free(w1);
    free(w2);
    o.ignore_dtsim = true;
    wl_graph *f = NULL;
    trace_env env3;
    rc = chakra_roundtrip(g, &env, 2, &o, &f, &env3, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    int joins = 0;
    for (uint32_t i = 0; i < f->n_ops; i++) {
        if (strcmp(f->names[f->ops[i].name], "tp_join")) continue;
        joins++;
        ck_assert_uint_eq(f->ops[i].n_deps, 2);
        uint32_t a = f->deps[f->ops[i].dep_start], b = f->deps[f->ops[i].dep_start + 1];
        ck_assert_int_eq(f->ops[a].kind, WL_OP_COMPUTE); /* every collective beside: the op */
        ck_assert_str_eq(f->names[f->ops[b].name], "tp_collective");
        uint32_t head = b;
        while (f->ops[head].n_deps == 1 &&
               !strcmp(f->names[f->ops[f->deps[f->ops[head].dep_start]].name], "tp_collective"))
            head = f->deps[f->ops[head].dep_start];
        ck_assert(!depends_on(f, head, a));
        for (uint32_t d = 0; d < f->ops[a].n_deps; d++)
            ck_assert(depends_on(f, head, f->deps[f->ops[a].dep_start + d]));
    }
    ck_assert_int_gt(joins, 0);
    wl_graph_destroy(g);
    wl_graph_destroy(g2);
    wl_graph_destroy(f);
    trace_env_free(&env2);
    trace_env_free(&env3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("chakra");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, one_compute_node);
    tcase_add_test(tc, malformed);
    tcase_add_test(tc, export_import_identity);
    tcase_add_test(tc, tp_overlap_export);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
