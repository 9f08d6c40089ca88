/* cmd_topo.c - `dtsim topo`: generate, validate and describe topologies.
 *
 *   dtsim topo gen KIND [options] [-o FILE]   write a generated topology (format v1)
 *   dtsim topo info FILE [--json]             counts, diameter, bisection bandwidth
 *   dtsim topo validate FILE [--json]         check a file; exit 2 with FILE: PATH: message
 *
 * `gen` turns its options into the same JSON object an inline generator uses in a file
 * ({"generator": KIND, "gpus": 128, ...}) and hands it to topo_from_json(), so the CLI and
 * files share one parser and one set of error messages; the JSON key in an error path is
 * shown as the option it came from (radix -> --radix).
 */
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dtsim/topo.h"
#include "dtsim/units.h"

typedef struct gen_opt {
    const char *flag; /* without leading dashes */
    const char *key;  /* JSON key */
    int numeric;      /* 1: integer/number, 0: string (quantity, name, dims) */
    const char *help;
} gen_opt;

static const gen_opt gen_opts[] = {
    {"gpus", "gpus", 1, "total GPUs (ring, switch, fat-tree, dragonfly, dgx)"},
    {"bandwidth", "bandwidth", 0, "per-direction link bandwidth (default 400 Gb/s)"},
    {"latency", "latency", 0, "per-link latency (default 500 ns)"},
    {"switch-latency", "switch_latency", 0, "forwarding delay per switch (default 200 ns)"},
    {"gpu", "gpu", 0, "GPU preset: A100-SXM, A100-SXM-40GB, H100-SXM (default), H200-SXM, B200"},
    {"name", "name", 0, "topology name (default e.g. fat-tree-128)"},
    {"tiers", "tiers", 1, "fat-tree: 2 (default) or 3"},
    {"radix", "radix", 1, "fat-tree, dgx: switch ports (default 64)"},
    {"oversubscription", "oversubscription", 1, "fat-tree, dgx: leaf down:up ratio (default 1)"},
    {"dims", "dims", 0, "torus: extents, e.g. 4x4x4 (wraparound links)"},
    {"groups", "groups", 1, "dragonfly: groups (default routers*global-links+1)"},
    {"routers", "routers", 1, "dragonfly: routers per group (default 4)"},
    {"terminals", "terminals", 1, "dragonfly: GPUs per router (default 2)"},
    {"global-links", "global_links", 1, "dragonfly: global links per router (default 2)"},
    {"nodes", "nodes", 1, "dgx: boxes"},
    {"gpus-per-node", "gpus_per_node", 1, "dgx: GPUs per box on one NVSwitch (default 8)"},
    {"nvlink", "nvlink", 0, "dgx: NVLink bandwidth per GPU and direction (default: the GPU's)"},
    {"nvlink-latency", "nvlink_latency", 0, "dgx: NVLink latency (default 100 ns)"},
    {"nic", "nic", 0, "dgx: NIC bandwidth per GPU (default: --bandwidth); geo: LAN per GPU (100 Gb/s)"},
    {"regions", "regions", 1, "geo: sites joined by wide-area links (default 2)"},
    {"gpus-per-region", "gpus_per_region", 1, "geo: GPUs per site (default 8)"},
    {"wan", "wan", 0, "geo: bandwidth per region pair and direction (default 100 Mb/s)"},
    {"wan-latency", "wan_latency", 0, "geo: one-way latency per region pair (default 50 ms)"},
    {NULL, NULL, 0, NULL}};

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim topo gen KIND [options] [-o FILE] [--json]\n"
            "       dtsim topo info FILE [--json]\n"
            "       dtsim topo validate FILE [--json]\n\n"
            "Generate, validate and describe topologies (format: docs/formats.md).\n\n"
            "gen KIND: ring, switch, fat-tree, torus, dragonfly, dgx, geo. Writes the topology to FILE\n"
            "(standard output without -o) and prints a summary. Options:\n");
    for (const gen_opt *o = gen_opts; o->flag; o++) fprintf(out, "  --%-18s %s\n", o->flag, o->help);
    fprintf(out,
            "  -o, --output FILE    where to write (nothing is written on error)\n\n"
            "info FILE: GPU, switch, NIC, host and link counts, diameter in hops, bisection\n"
            "bandwidth (closed form for generator files, otherwise max-flow between GPU halves).\n"
            "validate FILE: check a topology file; errors name FILE and the JSON path.\n\n"
            "--json prints one JSON document on standard output.\n"
            "Exit status: 0 ok, 1 failure, 2 invalid input or usage.\n\n"
            "examples:\n"
            "  dtsim topo gen fat-tree --gpus 128 --bandwidth \"400 Gb/s\" -o ft.json\n"
            "  dtsim topo gen dgx --nodes 4 --gpus-per-node 8 --nic \"400 Gb/s\" -o dgx.json\n"
            "  dtsim topo info ft.json --json\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dtsim topo: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see dtsim topo --help)\n");
    return CLI_USAGE;
}

static void print_summary_json(const topo *t, const topo_info *in, const char *file, bool valid)
{
    cJSON *o = cJSON_CreateObject();
    if (valid) cJSON_AddTrueToObject(o, "valid");
    if (file) cJSON_AddStringToObject(o, "file", file);
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "family", topo_family_name(t->gen.family));
    cJSON_AddNumberToObject(o, "gpus", in->n_gpus);
    cJSON_AddNumberToObject(o, "switches", in->n_switches);
    cJSON_AddNumberToObject(o, "nics", in->n_nics);
    cJSON_AddNumberToObject(o, "hosts", in->n_hosts);
    cJSON_AddNumberToObject(o, "links", in->n_links);
    if (in->diameter_hops >= 0) {
        cJSON_AddNumberToObject(o, "diameter_hops", in->diameter_hops);
        cJSON_AddNumberToObject(o, "bisection_bandwidth", in->bisection_bw);
        cJSON_AddStringToObject(o, "bisection_method",
                                in->bisection_exact ? "closed form" : "max-flow between GPU halves");
    } else if (in->metrics_skipped) {
        cJSON_AddBoolToObject(o, "metrics_skipped", true);
    }
    if (in->n_tiers > 0) {
        cJSON *ts = cJSON_AddArrayToObject(o, "tiers");
        for (int k = 0; k < in->n_tiers; k++) {
            const topo_tier *T = &in->tiers[k];
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "level", T->level);
            cJSON_AddStringToObject(x, "from", T->from);
            cJSON_AddStringToObject(x, "to", T->to);
            cJSON_AddNumberToObject(x, "links", T->n_links);
            cJSON_AddNumberToObject(x, "up_bandwidth", T->up_bw);
            cJSON_AddNumberToObject(x, "bisection_bandwidth", T->bisection);
            if (k > 0) {
                cJSON_AddNumberToObject(x, "oversubscription", T->oversubscription);
                cJSON_AddNumberToObject(x, "worst_oversubscription", T->worst);
            }
            cJSON_AddItemToArray(ts, x);
        }
        cJSON_AddNumberToObject(o, "tier_bisection_bandwidth", in->tier_bisection);
    }
    if (in->asked_oversubscription > 0)
        cJSON_AddNumberToObject(o, "asked_oversubscription", in->asked_oversubscription);
    if (t->n_gpus) cJSON_AddStringToObject(o, "gpu", t->gpus[0].name);
    cJSON *ty = cJSON_AddArrayToObject(o, "gpu_types");
    for (int k = 0; k < in->n_gpu_types; k++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", in->gpu_types[k].name);
        cJSON_AddNumberToObject(e, "count", in->gpu_types[k].count);
        cJSON_AddNumberToObject(e, "peak_bf16_flops", in->gpu_types[k].peak_bf16);
        cJSON_AddNumberToObject(e, "hbm_bytes", in->gpu_types[k].hbm_bytes);
        cJSON_AddNumberToObject(e, "cost_per_hour_usd", in->gpu_types[k].cost_per_hour);
        cJSON_AddItemToArray(ty, e);
    }
    cJSON *sum = cJSON_AddObjectToObject(o, "gpu_totals");
    cJSON_AddNumberToObject(sum, "peak_bf16_flops", in->sum_peak_bf16);
    cJSON_AddNumberToObject(sum, "hbm_bytes", in->sum_hbm_bytes);
    cJSON_AddNumberToObject(sum, "cost_per_hour_usd", in->sum_cost_per_hour);
    char *s = cJSON_Print(o);
    printf("%s\n", s);
    cJSON_free(s);
    cJSON_Delete(o);
}

static void print_info_text(const topo *t, const topo_info *in, const char *file)
{
    char b1[64];
    printf("%-14s %s\n", "topology", t->name);
    if (file) printf("%-14s %s\n", "file", file);
    printf("%-14s %s\n", "family", topo_family_name(t->gen.family));
    printf("%-14s %d", "GPUs", in->n_gpus);
    /* every type with its count: a mixed cluster is not its first GPU */
    for (int k = 0; k < in->n_gpu_types; k++)
        printf("%s%d x %s", k ? ", " : " (", in->gpu_types[k].count, in->gpu_types[k].name);
    if (in->n_gpu_types) printf(")");
    printf("\n");
    if (in->n_gpus) {
        char b2[64];
        printf("%-14s %.1f PFLOP/s bf16 peak, %s memory, %.2f USD/hour (sums over every GPU)\n",
               "GPU totals", in->sum_peak_bf16 / 1e15, unit_fmt_size(in->sum_hbm_bytes, b2, sizeof b2),
               in->sum_cost_per_hour);
    }
    printf("%-14s %d\n", "switches", in->n_switches);
    printf("%-14s %d\n", "NICs", in->n_nics);
    printf("%-14s %d\n", "hosts", in->n_hosts);
    printf("%-14s %d directed\n", "links", in->n_links);
    if (in->diameter_hops >= 0) {
        printf("%-14s %d hops\n", "diameter", in->diameter_hops);
        printf("%-14s %s per direction (%s)\n", "bisection",
               unit_fmt_bandwidth(in->bisection_bw, b1, sizeof b1),
               in->bisection_exact ? "closed form" : "max-flow between GPU halves");
    } else if (in->metrics_skipped) {
        printf("%-14s not computed: GPUs x (nodes + links) is past the %.0e the exact diameter "
               "and bisection are run for\n", "diameter", TOPO_INFO_MAX_WORK);
    }
    if (in->n_tiers > 0) {
        printf("tiers          links up from each level (oversubscription: bandwidth in from below"
               " / up)\n");
        for (int k = 0; k < in->n_tiers; k++) {
            const topo_tier *T = &in->tiers[k];
            char b2[64], nm[64];
            snprintf(nm, sizeof nm, "%s -> %s", T->from, T->to);
            printf("  %-16s %6d links %12s up, bisection %12s", nm, T->n_links,
                   unit_fmt_bandwidth(T->up_bw, b1, sizeof b1),
                   unit_fmt_bandwidth(T->bisection, b2, sizeof b2));
            if (k > 0) printf(", oversubscription %.3g:1", T->oversubscription);
            if (k > 0 && fabs(T->worst - T->oversubscription) > 1e-3 * T->oversubscription)
                printf(" (%.3g:1 at the worst %s)", T->worst, T->from);
            if (k > 0 && in->asked_oversubscription > 0 && !strcmp(T->from, "leaf")) {
                printf(" (asked %g:1; radix %d: %d ports down, %d up per leaf)",
                       in->asked_oversubscription, in->radix, in->leaf_down, in->leaf_up);
            }
            printf("\n");
        }
        printf("%-14s %s per direction: the least tier bisection (halves split along a tier)\n",
               "tier bound", unit_fmt_bandwidth(in->tier_bisection, b1, sizeof b1));
    }
}

static int load(const char *file, topo **t)
{
    dt_error err;
    dt_error_clear(&err);
    int rc = topo_load_file(file, t, &err);
    if (rc) return cli_report_error(&err);
    return CLI_OK;
}

/* Arguments of `topo info` and `topo validate`: one FILE and an optional --json. */
static int file_args(int argc, char **argv, const char *verb, const char **file, bool *json)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) *json = true;
        else if (argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option %s", argv[i]);
        else if (*file) return usage_error("%s takes one FILE, found a second: %s", verb, argv[i]);
        else *file = argv[i];
    }
    if (!*file) return usage_error("%s needs a FILE", verb);
    return CLI_OK;
}

static int run_info(int argc, char **argv)
{
    const char *file = NULL;
    bool json = false;
    int rc = file_args(argc, argv, "info", &file, &json);
    if (rc) return rc;
    topo *t = NULL;
    rc = load(file, &t);
    if (rc) return rc;
    topo_info in;
    dt_error err;
    dt_error_clear(&err);
    if (topo_get_info(t, &in, &err)) {
        topo_destroy(t);
        return cli_report_error(&err);
    }
    if (json) print_summary_json(t, &in, file, false);
    else print_info_text(t, &in, file);
    topo_destroy(t);
    return CLI_OK;
}

static int run_validate(int argc, char **argv)
{
    const char *file = NULL;
    bool json = false;
    int rc = file_args(argc, argv, "validate", &file, &json);
    if (rc) return rc;
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    rc = topo_load_file(file, &t, &err);
    if (rc) {
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddFalseToObject(o, "valid");
            cJSON_AddStringToObject(o, "file", err.file);
            cJSON_AddStringToObject(o, "path", err.path);
            if (err.line) cJSON_AddNumberToObject(o, "line", err.line);
            if (err.column) cJSON_AddNumberToObject(o, "column", err.column);
            cJSON_AddStringToObject(o, "message", err.msg);
            char *s = cJSON_Print(o);
            printf("%s\n", s);
            cJSON_free(s);
            cJSON_Delete(o);
        }
        return cli_report_error(&err);
    }
    topo_info in;
    memset(&in, 0, sizeof in);
    in.n_gpus = t->n_gpus;
    in.n_hosts = t->n_hosts;
    in.n_links = t->n_links;
    for (int v = 0; v < t->n_nodes; v++) {
        in.n_switches += t->nodes[v].kind == TOPO_SWITCH;
        in.n_nics += t->nodes[v].kind == TOPO_NIC;
    }
    in.diameter_hops = -1; /* validate does not pay for the metrics */
    if (json) print_summary_json(t, &in, file, true);
    else
        printf("%s: valid: %s, %d GPUs, %d switches, %d NICs, %d hosts, %d directed links\n", file,
               t->name, in.n_gpus, in.n_switches, in.n_nics, in.n_hosts, in.n_links);
    topo_destroy(t);
    return CLI_OK;
}

static const gen_opt *find_opt(const char *flag)
{
    for (const gen_opt *o = gen_opts; o->flag; o++)
        if (!strcmp(o->flag, flag)) return o;
    return NULL;
}

static int run_gen(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-')
        return usage_error("%s", "gen needs a KIND: ring, switch, fat-tree, torus, dragonfly, dgx");
    cJSON *spec = cJSON_CreateObject();
    cJSON_AddStringToObject(spec, "generator", argv[1]);
    const char *out = "-";
    bool json = false;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            json = true;
            continue;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) {
                cJSON_Delete(spec);
                return usage_error("%s needs a FILE", a);
            }
            out = argv[++i];
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            cJSON_Delete(spec);
            return usage_error("unexpected argument %s", a);
        }
        char flag[64];
        const char *val = NULL, *eq = strchr(a + 2, '=');
        size_t fl = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        if (fl >= sizeof flag) fl = sizeof flag - 1;
        memcpy(flag, a + 2, fl);
        flag[fl] = '\0';
        const gen_opt *o = find_opt(flag);
        if (!o) {
            cJSON_Delete(spec);
            return usage_error("unknown option %s", a);
        }
        if (eq) val = eq + 1;
        else if (i + 1 < argc) val = argv[++i];
        else {
            cJSON_Delete(spec);
            return usage_error("%s needs a value", a);
        }
        if (cJSON_GetObjectItemCaseSensitive(spec, o->key)) {
            cJSON_Delete(spec);
            return usage_error("option --%s given twice", o->flag);
        }
        char *end = NULL;
        double x = strtod(val, &end);
        if (o->numeric && end != val && *end == '\0')
            cJSON_AddNumberToObject(spec, o->key, x);
        else
            cJSON_AddStringToObject(spec, o->key, val);
    }
    dt_error err;
    dt_error_clear(&err);
    js_ctx ctx = {.file = NULL, .err = &err};
    topo *t = NULL;
    int rc = topo_from_json(&ctx, spec, "", ".", &t);
    cJSON_Delete(spec);
    if (rc) {
        /* Show JSON keys as the options they came from. */
        for (const gen_opt *o = gen_opts; o->flag; o++)
            if (!strcmp(err.path, o->key)) {
                snprintf(err.path, sizeof err.path, "--%s", o->flag);
                break;
            }
        if (!strcmp(err.path, "generator")) snprintf(err.path, sizeof err.path, "KIND");
        return cli_report_error(&err);
    }
    cli_outfile of;
    if ((rc = cli_outfile_open(&of, out, &err)) == DT_OK) {
        rc = topo_write_json(t, of.f, &err);
        if (rc) cli_outfile_abort(&of);
        else rc = cli_outfile_commit(&of, &err);
    }
    if (rc) {
        topo_destroy(t);
        return cli_report_error(&err);
    }
    if (!cli_is_stdout(out)) {
        topo_info in;
        if ((rc = topo_get_info(t, &in, &err))) {
            topo_destroy(t);
            return cli_report_error(&err);
        }
        if (json) print_summary_json(t, &in, out, false);
        else print_info_text(t, &in, out);
    }
    topo_destroy(t);
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        help(stderr);
        return CLI_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "gen") || !strcmp(sub, "generate")) return run_gen(argc - 1, argv + 1);
    if (!strcmp(sub, "info")) return run_info(argc - 1, argv + 1);
    if (!strcmp(sub, "validate")) return run_validate(argc - 1, argv + 1);
    return usage_error("unknown sub-command %s (gen, info, validate)", sub);
}

const cli_command cmd_topo = {.name = "topo",
                              .summary = "Generate, validate and describe topologies",
                              .run = run,
                              .help = help};
