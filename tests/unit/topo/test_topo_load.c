/* test_topo_load.c - topology files: loading, validation, inline generators, writing.
 * Pins down: the hand-written example loads with the stated counts, hosts, per-node GPU specs,
 * parallel (count) and simplex links; every validation error (unknown node with the closest
 * name suggested, duplicate names, self-loops, zero/negative bandwidth, bad units, unknown keys,
 * unreachable GPUs, wrong kinds/format/version) returns DT_EINPUT naming file and JSON path;
 * inline generators and file names resolve where a topology is expected; load -> write -> load
 * reproduces the topology exactly and writing twice gives the same bytes.
 * Leaves free: the wording of messages beyond the quoted parts; whitespace of written files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/topo.h"
#include "testutil.h"
#include "topo_internal.h"

static int load_text(const char *text, const char *path, topo **out, dt_error *e)
{
    cJSON *j = NULL;
    dt_error_clear(e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", &j, e), DT_OK);
    js_ctx ctx = {.file = "t.json", .err = e};
    const cJSON *v = path[0] ? cJSON_GetObjectItem(j, path) : j;
    int rc = topo_from_json(&ctx, v, path, DT_DATA("topo"), out);
    cJSON_Delete(j);
    return rc;
}

/* Three GPUs on a switch; "%s" slots let each case break one thing. */
#define BASE_NODES                                                                         \
    "{\"name\": \"gpu0\", \"kind\": \"gpu\"}, {\"name\": \"gpu1\", \"kind\": \"gpu\"},"     \
    "{\"name\": \"gpu8\", \"kind\": \"gpu\"}, {\"name\": \"sw\", \"kind\": \"switch\"}"
#define BASE_LINKS                                                                         \
    "{\"src\": \"gpu0\", \"dst\": \"sw\", \"bandwidth\": \"50 GB/s\", \"latency\": \"1 us\"}," \
    "{\"src\": \"gpu1\", \"dst\": \"sw\", \"bandwidth\": \"50 GB/s\", \"latency\": \"1 us\"}"

static void expect_error(const char *text, const char *path, const char *msg_part)
{
    topo *t = NULL;
    dt_error e;
    ck_assert_int_eq(load_text(text, "", &t, &e), DT_EINPUT);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(e.file, "t.json");
    ck_assert_msg(strcmp(e.path, path) == 0, "path \"%s\", expected \"%s\" (%s)", e.path, path, e.msg);
    ck_assert_msg(strstr(e.msg, msg_part) != NULL, "message \"%s\" lacks \"%s\"", e.msg, msg_part);
}

START_TEST(example_file)
{
    topo *t = NULL;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(topo_load_file(DT_DATA("topo/example.json"), &t, &e), DT_OK);
    ck_assert_str_eq(t->name, "two-boxes");
    ck_assert_int_eq(t->n_nodes, 9);
    ck_assert_int_eq(t->n_gpus, 4);
    ck_assert_int_eq(t->n_hosts, 2);
    ck_assert_int_eq(t->n_links, 8 + 6 + 2 + 8 + 6 + 2);
    ck_assert_int_eq(t->switch_latency, 250 * SIM_NS);
    ck_assert(!t->gpu_forwarding);
    ck_assert_str_eq(t->gpus[0].name, "H100-SXM");
    ck_assert_rel(t->gpus[0].hbm_bytes, 94e9, 1e-15);
    ck_assert_rel(t->gpus[0].compute_eff[GPU_OP_MATMUL], 0.65, 1e-15);
    ck_assert_str_eq(t->gpus[2].name, "A100-SXM");
    ck_assert_int_eq(t->nodes[t->gpu_node[3]].host, 1);
    ck_assert_str_eq(t->host_names[t->nodes[0].host], "boxA");
    /* boxA.gpu0 -> boxB.gpu0: gpu, boxA, nic, tor, nic, boxB, gpu = 6 links; the tor -> boxB.nic
     * direction is the 400 Gb/s simplex link. */
    const int *l;
    int n;
    ck_assert_int_eq(topo_route(t, 0, 2, 0, &l, &n), DT_OK);
    ck_assert_int_eq(n, 6);
    ck_assert_rel(t->links[l[3]].bandwidth, 50e9, 1e-15);
    ck_assert_int_eq(t->links[l[3]].reverse, -1);
    ck_assert_int_eq(topo_route(t, 2, 0, 0, &l, &n), DT_OK);
    ck_assert_rel(t->links[l[2]].bandwidth, 25e9, 1e-15);
    /* inside boxA, one of the four parallel NVLinks */
    ck_assert_int_eq(topo_route(t, 0, 1, 3, &l, &n), DT_OK);
    ck_assert_int_eq(n, 1);
    topo_destroy(t);
}
END_TEST

START_TEST(validation_errors)
{
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"gpu9\", \"bandwidth\": 1, \"latency\": 0}]}",
                 "links[2].dst", "unknown node \"gpu9\" (did you mean \"gpu8\"?)");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"spine\", \"dst\": \"sw\", \"bandwidth\": 1, \"latency\": 0}]}",
                 "links[2].src", "unknown node \"spine\"");
    expect_error("{\"nodes\": [" BASE_NODES ", {\"name\": \"gpu1\", \"kind\": \"gpu\"}], "
                 "\"links\": []}",
                 "nodes[4].name", "duplicate node name \"gpu1\" (first used by nodes[1])");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"sw\", \"dst\": \"sw\", \"bandwidth\": 1, \"latency\": 0}]}",
                 "links[2].dst", "self-loop");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"sw\", \"bandwidth\": \"0 GB/s\", \"latency\": 0}]}",
                 "links[2].bandwidth", "positive");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"sw\", \"bandwidth\": -5, \"latency\": 0}]}",
                 "links[2].bandwidth", "positive");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"sw\", \"bandwidth\": \"400 GB\", \"latency\": 0}]}",
                 "links[2].bandwidth", "unknown bandwidth unit \"GB\"");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"sw\", \"bandwidth\": 1, \"latency\": \"1 parsec\"}]}",
                 "links[2].latency", "unknown time unit");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"sw\", \"bandwith\": 1, \"latency\": 0}]}",
                 "links[2].bandwith", "did you mean \"bandwidth\"");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"sw\", \"bandwidth\": 1, \"latency\": 0, \"count\": 0}]}",
                 "links[2].count", "from 1 to 4096");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS "], \"swtich_latency\": 1}",
                 "swtich_latency", "did you mean \"switch_latency\"");
    expect_error("{\"nodes\": [{\"name\": \"g\", \"knd\": \"gpu\"}], \"links\": []}",
                 "nodes[0].knd", "did you mean \"kind\"");
    expect_error("{\"nodes\": [{\"name\": \"g\", \"kind\": \"gpus\"}], \"links\": []}",
                 "nodes[0].kind", "did you mean \"gpu\"");
    expect_error("{\"nodes\": [{\"name\": \"s\", \"kind\": \"switch\", \"gpu\": \"B200\"}], "
                 "\"links\": []}",
                 "nodes[0].gpu", "only nodes of kind \"gpu\"");
    expect_error("{\"nodes\": [{\"name\": \"g\", \"kind\": \"gpu\", \"gpu\": \"B100\"}], "
                 "\"links\": []}",
                 "nodes[0].gpu", "did you mean \"B200\"");
    /* gpu8 has no link at all */
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS "]}", "nodes[0]",
                 "GPU \"gpu0\" cannot reach GPU \"gpu8\"");
    /* gpu8 only has a link towards the switch: nobody can reach it */
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"sw\", \"bandwidth\": 1, \"latency\": 0, \"duplex\": false}]}",
                 "nodes[0]", "cannot reach GPU \"gpu8\"");
    /* GPUs that do not relay: a chain g0 - g1 - g2 is broken in the middle */
    expect_error("{\"gpu_forwarding\": false, \"nodes\": [{\"name\": \"g0\", \"kind\": \"gpu\"},"
                 "{\"name\": \"g1\", \"kind\": \"gpu\"}, {\"name\": \"g2\", \"kind\": \"gpu\"}],"
                 "\"links\": [{\"src\": \"g0\", \"dst\": \"g1\", \"bandwidth\": 1, \"latency\": 0},"
                 "{\"src\": \"g1\", \"dst\": \"g2\", \"bandwidth\": 1, \"latency\": 0}]}",
                 "nodes[0]", "cannot reach GPU \"g2\" (GPUs do not relay");
    expect_error("{\"format\": \"dtsim-topo\", \"nodes\": [], \"links\": []}", "format",
                 "expected \"dtsim-topology\"");
    expect_error("{\"version\": 2, \"nodes\": [], \"links\": []}", "version", "version 1");
    expect_error("{\"nodes\": []}", "links", "missing required key");
    expect_error("{\"nodes\": [{\"name\": \"s\", \"kind\": \"switch\"}], \"links\": []}", "nodes",
                 "at least one node of kind \"gpu\"");
    expect_error("{\"nodes\": [{\"name\": \"\", \"kind\": \"gpu\"}], \"links\": []}", "nodes[0].name",
                 "1 to 200 characters");
    expect_error("[1]", "(top level)", "expected a topology");
    /* latencies that could overflow a route's cost: 3 nodes x 1e6 s */
    expect_error("{\"switch_latency\": \"2 s\", \"nodes\": [], \"links\": []}", "switch_latency",
                 "below 1 s");
    expect_error("{\"nodes\": [" BASE_NODES "], \"links\": [" BASE_LINKS ","
                 "{\"src\": \"gpu8\", \"dst\": \"sw\", \"bandwidth\": 1, \"latency\": \"5 s\"}]}",
                 "links[2].latency", "below 1 s");
}
END_TEST

START_TEST(forwarding_makes_chain_valid)
{
    topo *t = NULL;
    dt_error e;
    ck_assert_int_eq(load_text("{\"nodes\": [{\"name\": \"g0\", \"kind\": \"gpu\"},"
                               "{\"name\": \"g1\", \"kind\": \"gpu\"}, {\"name\": \"g2\", \"kind\": \"gpu\"}],"
                               "\"links\": [{\"src\": \"g0\", \"dst\": \"g1\", \"bandwidth\": 1, \"latency\": 0},"
                               "{\"src\": \"g1\", \"dst\": \"g2\", \"bandwidth\": 1, \"latency\": 0}]}",
                               "", &t, &e),
                     DT_OK);
    int n;
    const int *l;
    ck_assert_int_eq(topo_route(t, 0, 2, 0, &l, &n), DT_OK);
    ck_assert_int_eq(n, 2);
    topo_destroy(t);
}
END_TEST

START_TEST(inline_generators)
{
    topo *t = NULL;
    dt_error e;
    ck_assert_int_eq(load_text("{\"topology\": {\"generator\": \"fat-tree\", \"gpus\": 128, "
                               "\"bandwidth\": \"400 Gb/s\", \"radix\": 32, \"oversubscription\": 3,"
                               "\"gpu\": {\"preset\": \"B200\", \"hbm\": \"192 GB\"}, \"name\": \"ft\"}}",
                               "topology", &t, &e),
                     DT_OK);
    ck_assert_str_eq(t->name, "ft");
    ck_assert_int_eq(t->gen.family, TOPO_FAMILY_FAT_TREE);
    ck_assert_int_eq(t->gen.radix, 32);
    ck_assert_rel(t->links[0].bandwidth, 50e9, 1e-15);
    ck_assert_rel(t->gpus[127].hbm_bytes, 192e9, 1e-15);
    topo_destroy(t);
    ck_assert_int_eq(load_text("{\"t\": {\"generator\": \"torus\", \"dims\": \"4x2x3\"}}", "t", &t, &e),
                     DT_OK);
    ck_assert_int_eq(t->n_gpus, 24);
    topo_destroy(t);
    ck_assert_int_eq(load_text("{\"t\": {\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 4,"
                               "\"nvlink\": \"900 GB/s\", \"nic\": \"200 Gb/s\"}}", "t", &t, &e),
                     DT_OK);
    ck_assert_int_eq(t->n_gpus, 8);
    ck_assert_rel(t->links[0].bandwidth, 900e9, 1e-15);
    topo_destroy(t);
    ck_assert_int_eq(load_text("{\"t\": \"example.json\"}", "t", &t, &e), DT_OK);
    ck_assert_int_eq(t->n_gpus, 4);
    topo_destroy(t);

    ck_assert_int_eq(load_text("{\"topology\": {\"generator\": \"fat-tree\", \"gpus\": 5000}}",
                               "topology", &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "topology.gpus");
    ck_assert_int_eq(load_text("{\"topology\": {\"generator\": \"fat-tre\"}}", "topology", &t, &e),
                     DT_EINPUT);
    ck_assert_str_eq(e.path, "topology.generator");
    ck_assert_msg(strstr(e.msg, "did you mean \"fat-tree\"") != NULL, "%s", e.msg);
    ck_assert_int_eq(load_text("{\"t\": {\"generator\": \"torus\", \"dims\": \"4x4x\"}}", "t", &t, &e),
                     DT_EINPUT);
    ck_assert_str_eq(e.path, "t.dims");
    ck_assert_int_eq(load_text("{\"t\": {\"generator\": \"ring\", \"gpus\": 4, \"radixx\": 2}}", "t",
                               &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "t.radixx");
    ck_assert_int_eq(load_text("{\"t\": {\"generator\": \"ring\", \"gpus\": 4, \"latency\": \"1000 s\"}}",
                               "t", &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "t.latency");
    ck_assert_int_eq(load_text("{\"t\": \"missing.json\"}", "t", &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "t");
    ck_assert_msg(strstr(e.msg, "missing.json") != NULL, "%s", e.msg);
}
END_TEST

static void assert_same(const topo *a, const topo *b)
{
    ck_assert_str_eq(a->name, b->name);
    ck_assert_int_eq(a->n_nodes, b->n_nodes);
    ck_assert_int_eq(a->n_links, b->n_links);
    ck_assert_int_eq(a->n_gpus, b->n_gpus);
    ck_assert_int_eq(a->n_hosts, b->n_hosts);
    ck_assert_int_eq(a->switch_latency, b->switch_latency);
    ck_assert_int_eq(a->gpu_forwarding, b->gpu_forwarding);
    for (int v = 0; v < a->n_nodes; v++) {
        ck_assert_str_eq(a->nodes[v].name, b->nodes[v].name);
        ck_assert_int_eq(a->nodes[v].kind, b->nodes[v].kind);
        ck_assert_int_eq(a->nodes[v].gpu, b->nodes[v].gpu);
        ck_assert_int_eq(a->nodes[v].host, b->nodes[v].host);
    }
    for (int h = 0; h < a->n_hosts; h++) ck_assert_str_eq(a->host_names[h], b->host_names[h]);
    for (int e = 0; e < a->n_links; e++) {
        ck_assert_int_eq(a->links[e].src, b->links[e].src);
        ck_assert_int_eq(a->links[e].dst, b->links[e].dst);
        ck_assert(a->links[e].bandwidth == b->links[e].bandwidth);
        ck_assert_int_eq(a->links[e].latency, b->links[e].latency);
        ck_assert_int_eq(a->links[e].reverse, b->links[e].reverse);
    }
    for (int g = 0; g < a->n_gpus; g++) ck_assert(memcmp(&a->gpus[g], &b->gpus[g], sizeof a->gpus[g]) == 0);
}

static topo *round_trip(const topo *t, char **text)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(topo_write_json(t, f, &e), DT_OK);
    fclose(f);
    cJSON *j = NULL;
    ck_assert_int_eq(js_parse_text(buf, len, "written", &j, &e), DT_OK);
    js_ctx ctx = {.file = "written", .err = &e};
    topo *back = NULL;
    int rc = topo_from_json(&ctx, j, "", ".", &back);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    cJSON_Delete(j);
    *text = buf;
    return back;
}

START_TEST(write_round_trip)
{
    topo *t = NULL;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(topo_load_file(DT_DATA("topo/example.json"), &t, &e), DT_OK);
    char *s1, *s2;
    topo *b = round_trip(t, &s1);
    assert_same(t, b);
    topo *c = round_trip(b, &s2);
    ck_assert_str_eq(s1, s2);
    ck_assert(strstr(s1, "\"count\":4") != NULL);
    ck_assert(strstr(s1, "\"duplex\":false") != NULL);
    free(s1);
    free(s2);
    topo_destroy(b);
    topo_destroy(c);
    topo_destroy(t);

    topo_gen_params p = {.family = TOPO_FAMILY_DGX, .nodes = 4, .gpus_per_node = 8,
                         .latency = 1234567};
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_OK);
    t->gpus[5].hbm_bytes = 1e9; /* one odd GPU is written inline on its node */
    b = round_trip(t, &s1);
    assert_same(t, b);
    ck_assert(strstr(s1, "\"hbm\":\"1 GB\"") != NULL);
    free(s1);
    topo_destroy(b);
    topo_destroy(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo_load");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, example_file);
    tcase_add_test(tc, validation_errors);
    tcase_add_test(tc, forwarding_makes_chain_valid);
    tcase_add_test(tc, inline_generators);
    tcase_add_test(tc, write_round_trip);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
