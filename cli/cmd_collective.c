/* cmd_collective.c - `dtsim collective`: simulate one collective on a topology, nccl-tests style.
 *
 * One row per size (a single size or a sweep lo:hi:xF / lo:hi:+STEP): simulated time, algbw
 * (size / time) and busbw (algbw x the nccl-tests factor), events handled and wall time.
 * --json prints one object, or an array of row objects for a sweep.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "dtsim/calib.h"
#include "dtsim/coll.h"
#include "dtsim/net.h"
#include "dtsim/topo.h"
#include "dtsim/units.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim collective --topology FILE|gen:FAMILY[:k=v,...] --op OP --size SIZE\n"
            "                        [--algo ALGO] [--group LIST] [--network flow|analytic]\n"
            "                        [--root I] [--servers N] [--chunk SIZE] [--reduce-bw BW]\n"
            "                        [--elem-bytes N] [--ring-model exact|steps|fluid|auto]\n"
            "                        [--rings N] [--library any|nccl]\n"
            "                        [--calibration FILE [--calibration-fit NAME]]\n"
            "                        [--link-efficiency nccl|line|NV,NET]\n"
            "                        [--analytic-time] [--json]\n\n"
            "Simulate one collective on a topology and print time and bandwidths like nccl-tests.\n\n"
            "  --topology   a topology file, or a generator spec such as\n"
            "               gen:dgx:nodes=4,gpus_per_node=8  gen:ring:gpus=8  gen:switch:gpus=16\n"
            "               gen:fat_tree:gpus=64,radix=16,oversubscription=2\n"
            "               keys: gpus nodes gpus_per_node bandwidth latency switch_latency\n"
            "               nvlink_bw nic_bw nvlink_latency tiers radix oversubscription\n"
            "               dims (4x4x4) groups routers terminals global_links gpu\n"
            "               (dragonfly; short forms a p h); nvlink and nic also work\n"
            "               for nvlink_bw and nic_bw (the names of docs/formats.md)\n"
            "  --op         allreduce reduce_scatter allgather broadcast reduce alltoall sendrecv\n"
            "  --algo       auto (default: the least estimated time among the --library's\n"
            "               algorithms), ring tree dbt hd direct hier ps, or fastest (the\n"
            "               least estimated time of those), or estimate (the least estimated\n"
            "               time under contention among ring .. hier), or rule (the size and\n"
            "               topology rule auto was before); the algo column says which ran\n"
            "  --library    whose algorithms auto chooses among: any (default: ring .. hier)\n"
            "               or nccl (all-reduce ring or tree; other ops ring; all-to-all direct)\n"
            "  --size       bytes with units (64MiB), or a sweep LO:HI:xF (1KiB:8GiB:x2) or\n"
            "               LO:HI:+STEP; nccl-tests sizes: all-gather's is its output buffer\n"
            "  --group      GPUs taking part: 0,1,2 or ranges 0-7,16-23 (default: all)\n"
            "  --network    flow (default: max-min shared links) or analytic (no contention)\n"
            "  --root       group index of the root (broadcast, reduce) or receiver (sendrecv)\n"
            "  --servers    parameter servers for --algo ps (default: one per host)\n"
            "  --chunk      pipelining chunk (default 4MiB)\n"
            "  --reduce-bw  reduction compute bandwidth (default: the GPU's; 0 = free)\n"
            "  --elem-bytes element size for splitting buffers (default 2)\n");
    /* two strings: C17 promises only 4,095 characters in one literal */
    fputs("  --rings      ring algorithm over hosts of g > 1 GPUs each: at most N rings\n"
            "               (NCCL's channels), each on its own rail (default g, at most 16;\n"
            "               1 = one ring through one NIC per host)\n"
            "  --ring-model exact (default: fluid where it gives the step model's answer,\n"
            "               from 64 ranks whose ring edges share no link and send one\n"
            "               transfer per step; steps elsewhere), steps (every ring step a\n"
            "               transfer), fluid (one flow per ring edge, docs/collectives.md)\n"
            "               or auto (fluid from 64 ranks or with rings per rail,\n"
            "               as scenarios do)\n"
            "  --calibration FILE  apply a calibration file to the topology first\n"
            "  --calibration-fit NAME  which of its fits sets the links (e.g. mpi_rs_ag; default:\n"
            "                      ring, nccl, tcp_ring, mpi_allreduce, mpi_rs_ag, others, first\n"
            "                      present); fits with R² < 0.5 are refused, < 0.9 warned about\n"
            "  --link-efficiency  fraction of line rate collectives achieve per link class:\n"
            "               nccl (NVLink 0.80, network 0.96: NCCL's protocol overhead as its\n"
            "               maintainer states it, docs/collectives.md), line (default: 1, 1)\n"
            "               or two fractions NVLINK,NETWORK such as 0.8,0.96\n"
            "  --analytic-time  also compute analytic_time_s: what `dtsim run --network\n"
            "               analytic` charges for this collective (routes every transfer\n"
            "               on every ECMP lane: as long as the simulation for direct\n"
            "               algorithms, so only on request)\n"
            "  --json       one JSON document (an array of rows for a sweep): time_s,\n"
            "               algbw_GBps, busbw_GBps, events, wall_s, ring_model (for ring\n"
            "               all-reduce/reduce-scatter/all-gather: steps or fluid), and\n"
            "               analytic_time_s with --analytic-time\n",
          out);
}

typedef struct opts {
    const char *topology, *op, *algo, *size, *group, *network, *calibration, *calibration_fit;
    const char *root, *servers, *chunk, *reduce_bw, *elem, *ring_model, *link_eff, *rings,
               *library;
    int json, analytic_time;
} opts;

static int usage_err(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "dtsim collective: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (see dtsim collective --help)\n");
    return CLI_USAGE;
}

/* "unknown WHAT 'name' (did you mean 'x'?)" under option PATH, the suggestion from the
 * NULL-terminated candidate list when one is close (js_suggest). Returns DT_EINPUT. */
static int unknown_name(dt_error *err, const char *path, const char *what, const char *name,
                        const char *const *candidates)
{
    const char *s = js_suggest(name, candidates);
    return dt_error_set(err, DT_EINPUT, NULL, path, "unknown %s '%s'%s%s%s", what, name,
                        s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* "0,1,2", "0-7", "0-3,8-11". */
static int parse_group(const char *s, int n_gpus, int **out, int *n_out, dt_error *err)
{
    int cap = 16, n = 0;
    int *g = dt_xmalloc((size_t)cap * sizeof *g);
    const char *p = s;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b;
        if (end == p) goto bad;
        b = a;
        p = end;
        if (*p == '-') {
            const char *q = p + 1;
            b = strtol(q, &end, 10);
            if (end == q) goto bad;
            p = end;
        }
        if (a < 0 || b < a || b >= n_gpus) {
            free(g);
            return dt_error_set(err, DT_EINPUT, NULL, "--group",
                                "GPU range %ld-%ld is outside 0-%d (the topology's GPUs)", a, b,
                                n_gpus - 1);
        }
        for (long i = a; i <= b; i++) {
            if (n == cap) g = dt_xrealloc(g, (size_t)(cap *= 2) * sizeof *g);
            g[n++] = (int)i;
        }
        if (*p == ',') p++;
        else if (*p) goto bad;
    }
    if (n == 0) goto bad;
    *out = g;
    *n_out = n;
    return DT_OK;
bad:
    free(g);
    return dt_error_set(err, DT_EINPUT, NULL, "--group",
                        "expected GPU indices like 0,1,2 or ranges like 0-7, found '%s'", s);
}

/* Sizes: "64MiB", "1KiB:8GiB:x2", "1MiB:4MiB:+1MiB". */
static int parse_sizes(const char *s, double **out, int *n_out, dt_error *err)
{
    char why[256];
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *c1 = strchr(buf, ':');
    if (!c1) {
        double v;
        if (unit_parse_size(buf, &v, why, sizeof why) != DT_OK)
            return dt_error_set(err, DT_EINPUT, NULL, "--size", "%s", why);
        *out = dt_xmalloc(sizeof **out);
        (*out)[0] = v;
        *n_out = 1;
        return DT_OK;
    }
    *c1 = 0;
    char *c2 = strchr(c1 + 1, ':');
    if (!c2)
        return dt_error_set(err, DT_EINPUT, NULL, "--size",
                            "expected LO:HI:xFACTOR or LO:HI:+STEP, found '%s'", s);
    *c2 = 0;
    double lo, hi, step;
    if (unit_parse_size(buf, &lo, why, sizeof why) != DT_OK ||
        unit_parse_size(c1 + 1, &hi, why, sizeof why) != DT_OK)
        return dt_error_set(err, DT_EINPUT, NULL, "--size", "%s", why);
    const char *st = c2 + 1;
    int mul = 0;
    if (*st == 'x' || *st == '*') {
        mul = 1;
        char *end;
        step = strtod(st + 1, &end);
        if (end == st + 1 || *end || !(step > 1))
            return dt_error_set(err, DT_EINPUT, NULL, "--size",
                                "expected a factor > 1 after 'x', found '%s'", st + 1);
    } else if (*st == '+') {
        if (unit_parse_size(st + 1, &step, why, sizeof why) != DT_OK || !(step > 0))
            return dt_error_set(err, DT_EINPUT, NULL, "--size",
                                "expected a positive size after '+', found '%s'", st + 1);
    } else {
        return dt_error_set(err, DT_EINPUT, NULL, "--size",
                            "expected xFACTOR or +STEP as the sweep step, found '%s'", st);
    }
    if (!(lo > 0 || !mul) || hi < lo)
        return dt_error_set(err, DT_EINPUT, NULL, "--size",
                            "expected 0 < LO <= HI for a sweep, found %s", s);
    int n = 0, cap = 16;
    double *v = dt_xmalloc((size_t)cap * sizeof *v);
    for (double x = lo; x <= hi * (1 + 1e-12); x = mul ? x * step : x + step) {
        if (n == 10000) {
            free(v);
            return dt_error_set(err, DT_EINPUT, NULL, "--size", "sweep has over 10000 sizes");
        }
        if (n == cap) v = dt_xrealloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[n++] = round(x);
    }
    *out = v;
    *n_out = n;
    return DT_OK;
}

/* gen:FAMILY[:k=v,...] into generator parameters. */
static int parse_gen(const char *spec, topo_gen_params *p, dt_error *err)
{
    memset(p, 0, sizeof *p);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *fam = buf, *kv = strchr(buf, ':');
    if (kv) *kv++ = 0;
    for (char *q = fam; *q; q++)
        if (*q == '_') *q = '-'; /* fat_tree and fat-tree alike */
    int found = 0;
    const char *names[16];
    int nn = 0;
    for (int f = TOPO_FAMILY_RING; f <= TOPO_FAMILY_GEO; f++) {
        names[nn++] = topo_family_name((topo_family)f);
        if (!strcmp(fam, topo_family_name((topo_family)f)) ||
            (f == TOPO_FAMILY_FAT_TREE && !strcmp(fam, "fattree"))) {
            p->family = (topo_family)f;
            found = 1;
        }
    }
    names[nn] = NULL;
    if (!found) {
        return unknown_name(err, "--topology", "generator", fam, names);
    }
    char *save = NULL;
    for (char *tok = kv ? strtok_r(kv, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return dt_error_set(err, DT_EINPUT, NULL, "--topology",
                                "expected key=value in the generator spec, found '%s'", tok);
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        for (char *q = tok; *q; q++)
            if (*q == '-') *q = '_';
        char why[256] = "";
        long iv;
        int rc = DT_OK;
        double d;
#define INTKEY(name, field)                                                                 \
    else if (!strcmp(k, name)) { if (parse_int(v, 0, 1L << 30, &iv)) rc = -1; else p->field = (int)iv; }
        if (0) {
        }
        INTKEY("gpus", gpus)
        INTKEY("nodes", nodes)
        INTKEY("gpus_per_node", gpus_per_node)
        INTKEY("tiers", tiers)
        INTKEY("radix", radix)
        /* Short names, and the long names of the topology format's generator object
         * (docs/formats.md), so a spec copied from a scenario works here too. */
        INTKEY("a", df_a)
        INTKEY("routers", df_a)
        INTKEY("p", df_p)
        INTKEY("terminals", df_p)
        INTKEY("h", df_h)
        INTKEY("global_links", df_h)
        INTKEY("groups", df_groups)
        else if (!strcmp(k, "bandwidth")) rc = unit_parse_bandwidth(v, &p->bandwidth, why, sizeof why);
        else if (!strcmp(k, "nvlink_bw") || !strcmp(k, "nvlink")) rc = unit_parse_bandwidth(v, &p->nvlink_bw, why, sizeof why);
        else if (!strcmp(k, "nic_bw") || !strcmp(k, "nic")) rc = unit_parse_bandwidth(v, &p->nic_bw, why, sizeof why);
        else if (!strcmp(k, "latency")) rc = unit_parse_time(v, &p->latency, why, sizeof why);
        else if (!strcmp(k, "nvlink_latency")) rc = unit_parse_time(v, &p->nvlink_latency, why, sizeof why);
        else if (!strcmp(k, "switch_latency")) rc = unit_parse_time(v, &p->switch_latency, why, sizeof why);
        else if (!strcmp(k, "oversubscription")) {
            char *end;
            d = strtod(v, &end);
            if (end == v || *end) rc = -1;
            else p->oversubscription = d;
        } else if (!strcmp(k, "gpu")) {
            snprintf(p->gpu_preset, sizeof p->gpu_preset, "%s", v);
        } else if (!strcmp(k, "dims")) {
            char *s2 = NULL, dbuf[64];
            snprintf(dbuf, sizeof dbuf, "%s", v);
            p->n_dims = 0;
            for (char *t = strtok_r(dbuf, "x", &s2); t && rc == DT_OK; t = strtok_r(NULL, "x", &s2)) {
                if (p->n_dims == 4 || parse_int(t, 1, 1 << 20, &iv)) rc = -1;
                else p->dims[p->n_dims++] = (int)iv;
            }
        } else {
            static const char *const keys[] = {
                "gpus", "nodes", "gpus_per_node", "tiers", "radix", "a", "p", "h", "routers",
                "terminals", "global_links", "groups", "bandwidth", "nvlink_bw", "nic_bw",
                "nvlink", "nic", "latency", "nvlink_latency", "switch_latency",
                "oversubscription", "gpu", "dims", NULL};
            return unknown_name(err, "--topology", "generator key", k, keys);
        }
#undef INTKEY
        if (rc != DT_OK)
            return dt_error_set(err, DT_EINPUT, NULL, "--topology", "bad value '%s' for %s%s%s",
                                v, k, why[0] ? ": " : "", why);
    }
    return DT_OK;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int run(int argc, char **argv)
{
    opts o = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (!strcmp(a, "--json")) {
            o.json = 1;
            continue;
        }
        if (!strcmp(a, "--analytic-time")) {
            o.analytic_time = 1;
            continue;
        }
        if (!strcmp(a, "--topology")) slot = &o.topology;
        else if (!strcmp(a, "--op")) slot = &o.op;
        else if (!strcmp(a, "--algo")) slot = &o.algo;
        else if (!strcmp(a, "--size")) slot = &o.size;
        else if (!strcmp(a, "--group")) slot = &o.group;
        else if (!strcmp(a, "--network")) slot = &o.network;
        else if (!strcmp(a, "--calibration")) slot = &o.calibration;
        else if (!strcmp(a, "--calibration-fit")) slot = &o.calibration_fit;
        else if (!strcmp(a, "--root")) slot = &o.root;
        else if (!strcmp(a, "--servers")) slot = &o.servers;
        else if (!strcmp(a, "--chunk")) slot = &o.chunk;
        else if (!strcmp(a, "--reduce-bw")) slot = &o.reduce_bw;
        else if (!strcmp(a, "--elem-bytes")) slot = &o.elem;
        else if (!strcmp(a, "--ring-model")) slot = &o.ring_model;
        else if (!strcmp(a, "--rings")) slot = &o.rings;
        else if (!strcmp(a, "--library")) slot = &o.library;
        else if (!strcmp(a, "--link-efficiency")) slot = &o.link_eff;
        else return usage_err("unknown option '%s'%s", a, "");
        if (i + 1 >= argc) return usage_err("%s needs a value%s", a, "");
        *slot = argv[++i];
    }
    if (!o.topology) return usage_err("--topology is required%s%s", "", "");
    if (!o.op) return usage_err("--op is required%s%s", "", "");
    if (!o.size) return usage_err("--size is required%s%s", "", "");

    dt_error err;
    dt_error_clear(&err);
    coll_spec spec = {.algo = COLL_AUTO, .elem_bytes = 2};
    if (coll_op_parse(o.op, &spec.op) != DT_OK) {
        const char *names[COLL_OP_COUNT + 1];
        for (int i = 0; i < COLL_OP_COUNT; i++) names[i] = coll_op_name((coll_op)i);
        names[COLL_OP_COUNT] = NULL;
        unknown_name(&err, "--op", "collective", o.op, names);
        return cli_report_error(&err);
    }
    if (o.algo && coll_algo_parse(o.algo, &spec.algo) != DT_OK) {
        const char *names[COLL_ALGO_COUNT + 1];
        for (int i = 0; i < COLL_ALGO_COUNT; i++) names[i] = coll_algo_name((coll_algo)i);
        names[COLL_ALGO_COUNT] = NULL;
        unknown_name(&err, "--algo", "algorithm", o.algo, names);
        return cli_report_error(&err);
    }
    net_config nc = {.mode = NET_FLOW};
    if (o.network) {
        if (!strcmp(o.network, "flow")) nc.mode = NET_FLOW;
        else if (!strcmp(o.network, "analytic")) nc.mode = NET_ANALYTIC;
        else {
            dt_error_set(&err, DT_EINPUT, NULL, "--network",
                         "expected flow or analytic, found '%s'", o.network);
            return cli_report_error(&err);
        }
    }
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 0, .ring_model = COLL_RING_EXACT};
    char why[256];
    long iv;
    if (o.root) {
        if (parse_int(o.root, 0, 1L << 30, &iv)) return usage_err("--root expects a group index, found '%s'%s", o.root, "");
        spec.root = (int)iv;
    }
    if (o.servers) {
        if (parse_int(o.servers, 1, 1L << 30, &iv)) return usage_err("--servers expects a positive count, found '%s'%s", o.servers, "");
        spec.servers = (int)iv;
    }
    if (o.elem) {
        if (parse_int(o.elem, 1, 1024, &iv)) return usage_err("--elem-bytes expects 1..1024, found '%s'%s", o.elem, "");
        spec.elem_bytes = (double)iv;
    }
    /* why is only filled when parsing fails: "--chunk 0" parses, and printed it uninitialised */
    if (o.chunk && (unit_parse_size(o.chunk, &cc.chunk_bytes, why, sizeof why) != DT_OK || !(cc.chunk_bytes > 0))) {
        dt_error_set(&err, DT_EINPUT, NULL, "--chunk", "expected a positive size, found '%s'", o.chunk);
        return cli_report_error(&err);
    }
    if (o.rings) {
        if (parse_int(o.rings, 1, COLL_MAX_RINGS, &iv)) return usage_err("--rings expects 1..16, found '%s'%s", o.rings, "");
        cc.rings = (int)iv;
    }
    if (o.ring_model && coll_ring_model_parse(o.ring_model, &cc.ring_model) != DT_OK)
        return usage_err("--ring-model expects exact, steps, fluid or auto, found '%s'%s", o.ring_model, "");
    if (o.library && coll_library_parse(o.library, &cc.library) != DT_OK)
        return usage_err("--library expects any or nccl, found '%s'%s", o.library, "");
    if (o.reduce_bw && unit_parse_bandwidth(o.reduce_bw, &cc.reduce_bw, why, sizeof why) != DT_OK) {
        dt_error_set(&err, DT_EINPUT, NULL, "--reduce-bw", "%s", why);
        return cli_report_error(&err);
    }
    if (o.reduce_bw && !(cc.reduce_bw >= 0)) { /* negative would silently mean "the GPU's" */
        dt_error_set(&err, DT_EINPUT, NULL, "--reduce-bw",
                     "expected a bandwidth >= 0 (0 = free), found '%s'", o.reduce_bw);
        return cli_report_error(&err);
    }
    double eff_nv = 1, eff_net = 1;
    if (o.link_eff &&
        topo_link_efficiency_parse(o.link_eff, &eff_nv, &eff_net, why, sizeof why) != DT_OK) {
        dt_error_set(&err, DT_EINPUT, NULL, "--link-efficiency", "%s", why);
        return cli_report_error(&err);
    }
    if (o.calibration_fit && !o.calibration)
        return usage_err("--calibration-fit chooses among the fits of --calibration FILE%s%s", "", "");
    double *sizes = NULL;
    int n_sizes = 0;
    if (parse_sizes(o.size, &sizes, &n_sizes, &err) != DT_OK) return cli_report_error(&err);

    topo *t = NULL;
    int rc;
    if (!strncmp(o.topology, "gen:", 4)) {
        topo_gen_params gp;
        rc = parse_gen(o.topology + 4, &gp, &err);
        if (rc == DT_OK) rc = topo_generate(&gp, &t, &err);
    } else {
        rc = topo_load_file(o.topology, &t, &err);
    }
    if (rc != DT_OK) {
        free(sizes);
        return cli_report_error(&err);
    }
    /* protocol efficiency first: a calibration then replaces the links it measured */
    topo_apply_link_efficiency(t, eff_nv, eff_net);
    char cal_note[768] = "";
    if (o.calibration) {
        /* measured link figures replace the topology's before anything is routed */
        cal_result *cal = NULL;
        rc = cal_load_file(o.calibration, &cal, &err);
        if (rc == DT_OK)
            rc = topo_apply_calibration_fits(t, cal, o.calibration_fit, cal_note, sizeof cal_note, &err);
        cal_result_destroy(cal);
        const char *w = strstr(cal_note, "warning: ");
        if (rc == DT_OK && w) fprintf(stderr, "dtsim collective: %s\n", w);
    }
    int *group = NULL;
    if (rc == DT_OK) {
        if (o.group) {
            rc = parse_group(o.group, t->n_gpus, &group, &spec.n, &err);
        } else {
            spec.n = t->n_gpus;
            group = dt_xmalloc((size_t)spec.n * sizeof *group);
            for (int i = 0; i < spec.n; i++) group[i] = i;
        }
    }
    spec.group = group;

    cJSON *rows = o.json ? cJSON_CreateArray() : NULL;
    int printed_header = 0;
    for (int i = 0; i < n_sizes && rc == DT_OK; i++) {
        spec.bytes = sizes[i];
        coll_result res;
        double w0 = now_s();
        rc = coll_simulate(t, &spec, &cc, &nc, &res, &err);
        double wall = now_s() - w0;
        if (rc != DT_OK) break;
        /* What `dtsim run --network analytic` charges for this spec (coll_analytic_time):
         * alpha-beta over the algorithm's routes. --network analytic here still runs the step
         * program with every transfer at its route's full bandwidth (no sharing at all). */
        sim_time_t at = 0;
        if (o.analytic_time) {
            sim_engine *ae = sim_engine_create();
            net *an = net_create(t, ae, &nc);
            coll_analytic *ca = coll_analytic_create(an, t, &cc);
            rc = coll_analytic_time(ca, &spec, &at, NULL, &err);
            coll_analytic_destroy(ca);
            net_destroy(an);
            sim_engine_destroy(ae);
            if (rc != DT_OK) break;
        }
        double ts = sim_time_to_s(res.time);
        double algbw = ts > 0 ? spec.bytes / ts / 1e9 : 0;
        double busbw = algbw * coll_busbw_factor(spec.op, spec.n);
        if (o.json) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "op", coll_op_name(spec.op));
            cJSON_AddStringToObject(r, "algo", coll_algo_name(res.algo));
            cJSON_AddStringToObject(r, "network", nc.mode == NET_FLOW ? "flow" : "analytic");
            cJSON_AddNumberToObject(r, "gpus", spec.n);
            cJSON_AddNumberToObject(r, "size_bytes", spec.bytes);
            cJSON_AddNumberToObject(r, "time_s", ts);
            if (o.analytic_time) cJSON_AddNumberToObject(r, "analytic_time_s", sim_time_to_s(at));
            if (res.ring_model >= 0)
                cJSON_AddStringToObject(r, "ring_model", coll_ring_model_name((coll_ring_model)res.ring_model));
            cJSON_AddNumberToObject(r, "algbw_GBps", algbw);
            cJSON_AddNumberToObject(r, "busbw_GBps", busbw);
            cJSON_AddNumberToObject(r, "events", (double)res.events);
            cJSON_AddNumberToObject(r, "flows", (double)res.net.flows_started);
            cJSON_AddNumberToObject(r, "max_link_utilisation", res.net.max_link_utilisation);
            cJSON_AddNumberToObject(r, "wall_s", wall);
            if (cal_note[0]) cJSON_AddStringToObject(r, "calibration", cal_note);
            cJSON_AddItemToArray(rows, r);
        } else {
            if (!printed_header) {
                printed_header = 1;
                printf("# dtsim collective: %s, %s, %d GPUs on %s, %s network\n",
                       coll_op_name(spec.op),
                       spec.algo == COLL_AUTO ? "algo auto" : coll_algo_name(spec.algo), spec.n,
                       t->name ? t->name : o.topology,
                       nc.mode == NET_FLOW ? "flow (max-min shared)" : "analytic (no contention)");
                if (cal_note[0]) printf("# calibration: %s\n", cal_note);
                printf("%12s %-7s %12s %12s %12s %10s %10s\n", "size", "algo", "time", "algbw",
                       "busbw", "events", "wall");
            }
            char b1[32], b2[32], b3[32], b4[32], b5[32];
            printf("%12s %-7s %12s %12s %12s %10llu %10s\n", unit_fmt_size(spec.bytes, b1, sizeof b1),
                   coll_algo_name(res.algo), unit_fmt_time(res.time, b2, sizeof b2),
                   unit_fmt_bandwidth(algbw * 1e9, b3, sizeof b3),
                   unit_fmt_bandwidth(busbw * 1e9, b4, sizeof b4),
                   (unsigned long long)res.events, unit_fmt_seconds(wall, b5, sizeof b5));
        }
    }
    if (rc == DT_OK && o.json) {
        cJSON *doc = rows;
        if (n_sizes == 1) {
            doc = cJSON_DetachItemFromArray(rows, 0);
            cJSON_Delete(rows);
            rows = NULL;
        } else {
            rows = NULL;
        }
        char *txt = cJSON_Print(doc);
        printf("%s\n", txt);
        free(txt);
        cJSON_Delete(doc);
    }
    cJSON_Delete(rows);
    free(group);
    free(sizes);
    topo_destroy(t);
    if (rc != DT_OK) return cli_report_error(&err);
    return CLI_OK;
}

const cli_command cmd_collective = {.name = "collective",
                                    .summary = "Simulate one collective on a topology",
                                    .run = run,
                                    .help = help};
