/* topo_gen.c - topology generators: ring, switch, fat-tree, torus, dragonfly, dgx.
 *
 * Each generator turns a few numbers into explicit nodes and links through the builder, so
 * the result is indistinguishable from a loaded file (and topo_write_json() can save it). The
 * resolved parameters (defaults filled in) are kept in t->gen: topo_get_info() uses them for
 * closed-form diameter and bisection figures.
 *
 * Names are stable and readable (gpu7, leaf3, node12.gpu5, rail5.leaf0) because users see them
 * in traces and error messages. Parameter errors put the option name in err->path (e.g.
 * "radix"); topo_from_json() prefixes the JSON path.
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "dtsim/limits.h"
#include "topo_internal.h"

#define MAX_GPUS DT_MAX_GPUS

static int bad(dt_error *err, const char *opt, const char *fmt, int v)
{
    return dt_error_set(err, DT_EINPUT, NULL, opt, fmt, v);
}

/* Fill zero fields with defaults; check ranges. */
static int resolve(const topo_gen_params *in, topo_gen_params *p, gpu_spec *spec, dt_error *err)
{
    *p = *in;
    /* Explicit zeros from a JSON spec (topo_internal.h); defaults below only fill true zeros. */
    bool zero_lat = p->latency == TOPO_GEN_ZERO_LATENCY;
    bool zero_sw = p->switch_latency == TOPO_GEN_ZERO_LATENCY;
    if (zero_lat) p->latency = 0;
    if (zero_sw) p->switch_latency = 0; /* nvlink_latency: gen_dgx resolves it */
    if (!p->gpu_preset[0]) snprintf(p->gpu_preset, sizeof p->gpu_preset, "%s", TOPO_DEFAULT_GPU);
    if (gpu_preset(p->gpu_preset, spec, err)) {
        if (err) snprintf(err->path, sizeof err->path, "gpu");
        return DT_EINPUT;
    }
    if (p->bandwidth < 0 || p->nvlink_bw < 0 || p->nic_bw < 0 || p->latency < 0 ||
        p->switch_latency < 0 ||
        (p->nvlink_latency < 0 && p->nvlink_latency != TOPO_GEN_ZERO_LATENCY) || p->oversubscription < 0)
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "negative generator parameter");
    /* documented: at least 1 B/s (a 1e-300 B/s link only failed later, as a collective
     * longer than the simulated clock, without saying which parameter) */
    const double bws[] = {p->bandwidth, p->nvlink_bw, p->nic_bw, p->wan_bw};
    const char *const bw_keys[] = {"bandwidth", "nvlink", "nic", "wan"};
    for (int i = 0; i < 4; i++)
        if (bws[i] > 0 && bws[i] < 1)
            return dt_error_set(err, DT_EINPUT, NULL, bw_keys[i],
                                "expected a bandwidth of at least 1 B/s, found %g B/s", bws[i]);
    static const sim_time_t max_lat = SIM_S; /* documented: below 1 s */
    if (p->latency >= max_lat || p->switch_latency >= max_lat || p->nvlink_latency >= max_lat)
        return dt_error_set(err, DT_EINPUT, NULL,
                            p->latency >= max_lat ? "latency"
                            : p->switch_latency >= max_lat ? "switch_latency" : "nvlink_latency",
                            "expected a latency below 1 s");
    if (p->bandwidth == 0) p->bandwidth = TOPO_DEFAULT_BANDWIDTH;
    if (p->latency == 0 && !zero_lat) p->latency = TOPO_DEFAULT_LATENCY;
    if (p->switch_latency == 0 && !zero_sw) p->switch_latency = TOPO_DEFAULT_SWITCH_LATENCY;
    if (p->gpus < 0 || p->gpus > MAX_GPUS) return bad(err, "gpus", "expected 1 to 262144 GPUs, found %d", p->gpus);
    if (p->oversubscription == 0) p->oversubscription = 1;
    if (p->oversubscription < 1)
        return dt_error_set(err, DT_EINPUT, NULL, "oversubscription",
                            "expected a down:up ratio >= 1, found %g", p->oversubscription);
    return DT_OK;
}

/* Leaf port split for radix k and oversubscription o: down/up = o, down + up = k. */
void topo_leaf_ports(const topo_gen_params *p, int *down, int *up)
{
    int k = p->radix;
    int d = (int)lround(k * p->oversubscription / (1.0 + p->oversubscription));
    if (d >= k) d = k - 1;
    *down = d;
    *up = k - d;
}

/* Radix (default filled in, range checked) and its leaf port split: fat-tree and dgx leaves. */
static int leaf_ports(topo_gen_params *p, int *down, int *up, dt_error *err)
{
    if (p->radix == 0) p->radix = TOPO_DEFAULT_RADIX;
    if (p->radix < 2 || p->radix > 4096)
        return bad(err, "radix", "expected a radix from 2 to 4096, found %d", p->radix);
    topo_leaf_ports(p, down, up);
    if (*down < 1 || *up < 1)
        return bad(err, "radix", "radix %d leaves no down and up ports at this oversubscription",
                   p->radix);
    return DT_OK;
}

/* n GPUs named gpu0 .. gpu<n-1>, in order; returns the node index of gpu0. */
static int add_gpus(topo_builder *b, int n, const gpu_spec *spec)
{
    char name[64];
    int gpu0 = b->t->n_nodes;
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "gpu%d", i);
        tb_node(b, name, TOPO_GPU, -1, spec);
    }
    return gpu0;
}

/* A spine layer of u switches (spine0 ..) with a link from each of the `leaves` leaves from
 * leaf0 on to every spine: the top of a 2-tier fat-tree and of the dgx rail network. */
static void add_spines(topo_builder *b, int leaf0, int leaves, int u, double bandwidth,
                       sim_time_t latency)
{
    char name[64];
    int spine0 = b->t->n_nodes;
    for (int s = 0; s < u; s++) {
        snprintf(name, sizeof name, "spine%d", s);
        tb_node(b, name, TOPO_SWITCH, -1, NULL);
    }
    for (int l = 0; l < leaves; l++)
        for (int s = 0; s < u; s++) tb_link(b, leaf0 + l, spine0 + s, bandwidth, latency, true);
}

static int gen_ring(const topo_gen_params *p, const gpu_spec *spec, topo_builder *b, dt_error *err)
{
    int n = p->gpus;
    if (n < 1) return bad(err, "gpus", "ring needs at least 1 GPU, found %d", n);
    add_gpus(b, n, spec); /* the builder is empty: gpu i is node i */
    /* Two GPUs still form a ring: two parallel links, so both ring directions exist. */
    for (int i = 0; i < n && n > 1; i++) tb_link(b, i, (i + 1) % n, p->bandwidth, p->latency, true);
    b->t->gpu_forwarding = true;
    return DT_OK;
}

static int gen_switch(const topo_gen_params *p, const gpu_spec *spec, topo_builder *b,
                      dt_error *err)
{
    int n = p->gpus;
    if (n < 1) return bad(err, "gpus", "switch needs at least 1 GPU, found %d", n);
    char name[64];
    int sw = tb_node(b, "switch0", TOPO_SWITCH, -1, NULL);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "gpu%d", i);
        int g = tb_node(b, name, TOPO_GPU, -1, spec);
        tb_link(b, g, sw, p->bandwidth, p->latency, true);
    }
    b->t->gpu_forwarding = false;
    return DT_OK;
}

static int gen_fat_tree(topo_gen_params *p, const gpu_spec *spec, topo_builder *b, dt_error *err)
{
    int n = p->gpus;
    if (n < 1) return bad(err, "gpus", "fat-tree needs at least 1 GPU, found %d", n);
    if (p->tiers == 0) p->tiers = 2;
    if (p->tiers != 2 && p->tiers != 3)
        return bad(err, "tiers", "expected 2 or 3 tiers, found %d", p->tiers);
    int d, u;
    int rc = leaf_ports(p, &d, &u, err);
    if (rc) return rc;
    int k = p->radix;
    int leaves = (n + d - 1) / d;
    char name[64];
    int gpu0 = add_gpus(b, n, spec);
    int leaf0 = b->t->n_nodes;
    for (int l = 0; l < leaves; l++) {
        snprintf(name, sizeof name, "leaf%d", l);
        tb_node(b, name, TOPO_SWITCH, -1, NULL);
    }
    for (int i = 0; i < n; i++) tb_link(b, gpu0 + i, leaf0 + i / d, p->bandwidth, p->latency, true);
    if (p->tiers == 2) {
        if (leaves > k)
            return dt_error_set(err, DT_EINPUT, NULL, "gpus",
                                "%d GPUs need %d leaves, more than a 2-tier fat-tree of radix %d "
                                "holds (at most %d GPUs); use tiers 3 or a larger radix",
                                n, leaves, k, k * d);
        if (leaves > 1) add_spines(b, leaf0, leaves, u, p->bandwidth, p->latency);
    } else {
        int half = k / 2; /* leaves per pod = aggregation down ports; aggregation up ports */
        if (half < 1) return bad(err, "radix", "3-tier fat-tree needs radix >= 2, found %d", k);
        int pods = (leaves + half - 1) / half;
        if (pods > k)
            return dt_error_set(err, DT_EINPUT, NULL, "gpus",
                                "%d GPUs need %d pods, more than a 3-tier fat-tree of radix %d "
                                "holds (at most %d GPUs)", n, pods, k, k * half * d);
        if (leaves > 1) {
            int agg0 = b->t->n_nodes;
            for (int q = 0; q < pods; q++)
                for (int j = 0; j < u; j++) {
                    snprintf(name, sizeof name, "agg%d.%d", q, j);
                    tb_node(b, name, TOPO_SWITCH, -1, NULL);
                }
            for (int l = 0; l < leaves; l++)
                for (int j = 0; j < u; j++)
                    tb_link(b, leaf0 + l, agg0 + (l / half) * u + j, p->bandwidth, p->latency, true);
            if (pods > 1) {
                int core0 = b->t->n_nodes;
                for (int c = 0; c < u * half; c++) {
                    snprintf(name, sizeof name, "core%d", c);
                    tb_node(b, name, TOPO_SWITCH, -1, NULL);
                }
                for (int q = 0; q < pods; q++)
                    for (int j = 0; j < u; j++)
                        for (int m = 0; m < half; m++)
                            tb_link(b, agg0 + q * u + j, core0 + j * half + m, p->bandwidth,
                                    p->latency, true);
            }
        }
    }
    b->t->gpu_forwarding = false;
    return DT_OK;
}

static int gen_torus(topo_gen_params *p, const gpu_spec *spec, topo_builder *b, dt_error *err)
{
    if (p->n_dims < 1 || p->n_dims > 4)
        return bad(err, "dims", "expected 1 to 4 dimensions (e.g. \"4x4x4\"), found %d", p->n_dims);
    long long n = 1;
    for (int i = 0; i < p->n_dims; i++) {
        if (p->dims[i] < 1 || p->dims[i] > 65536)
            return bad(err, "dims", "expected extents from 1 to 65536, found %d", p->dims[i]);
        n *= p->dims[i];
        if (n > MAX_GPUS) return bad(err, "dims", "torus too large (more than %d GPUs)", MAX_GPUS);
    }
    if (p->gpus && p->gpus != n)
        return dt_error_set(err, DT_EINPUT, NULL, "gpus",
                            "gpus %d disagrees with dims (%lld GPUs)", p->gpus, n);
    p->gpus = (int)n;
    add_gpus(b, (int)n, spec); /* the builder is empty: gpu i is node i */
    /* GPU index = x0 + d0*(x1 + d1*(x2 ...)). One link to the +1 neighbour per dimension with
     * wraparound; an extent of 2 gets a single link (its +1 and -1 neighbours coincide). */
    long long stride = 1;
    for (int dim = 0; dim < p->n_dims; dim++) {
        int e = p->dims[dim];
        for (long long i = 0; i < n && e > 1; i++) {
            int x = (int)((i / stride) % e);
            if (e == 2 && x == 1) continue;
            long long j = i + ((x + 1) % e - x) * stride;
            tb_link(b, (int)i, (int)j, p->bandwidth, p->latency, true);
        }
        stride *= e;
    }
    b->t->gpu_forwarding = true;
    return DT_OK;
}

static int gen_dragonfly(topo_gen_params *p, const gpu_spec *spec, topo_builder *b, dt_error *err)
{
    if (p->df_a == 0) p->df_a = 4;
    if (p->df_p == 0) p->df_p = 2;
    if (p->df_h == 0) p->df_h = 2;
    int a = p->df_a, pt = p->df_p, h = p->df_h;
    if (a < 1 || a > 1024) return bad(err, "routers", "expected 1 to 1024 routers per group, found %d", a);
    if (pt < 1 || pt > 1024) return bad(err, "terminals", "expected 1 to 1024 terminals per router, found %d", pt);
    if (h < 1 || h > 1024) return bad(err, "global_links", "expected 1 to 1024 global links per router, found %d", h);
    int per_group = a * pt;
    int g = p->df_groups;
    if (g < 0) return bad(err, "groups", "expected at least 1 group, found %d", g);
    if (p->gpus) {
        if (p->gpus % per_group)
            return dt_error_set(err, DT_EINPUT, NULL, "gpus",
                                "%d GPUs is not a whole number of groups of %d (routers x terminals)",
                                p->gpus, per_group);
        if (g && g != p->gpus / per_group)
            return dt_error_set(err, DT_EINPUT, NULL, "groups",
                                "groups %d disagrees with gpus %d (%d per group)", g, p->gpus,
                                per_group);
        g = p->gpus / per_group;
    }
    if (g == 0) g = a * h + 1; /* the canonical balanced size: one global link per group pair */
    if (g > a * h + 1)
        return dt_error_set(err, DT_EINPUT, NULL, "groups",
                            "%d groups cannot all be linked directly with %d global ports per group "
                            "(at most %d groups)", g, a * h, a * h + 1);
    if ((long long)g * per_group > MAX_GPUS) return bad(err, "groups", "dragonfly too large (%d groups): more than 262144 GPUs", g);
    p->df_groups = g;
    p->gpus = g * per_group;
    char name[64];
    int r0 = b->t->n_nodes;
    for (int i = 0; i < g; i++)
        for (int j = 0; j < a; j++) {
            snprintf(name, sizeof name, "g%d.r%d", i, j);
            tb_node(b, name, TOPO_SWITCH, -1, NULL);
        }
    for (int i = 0; i < g; i++)
        for (int j = 0; j < a; j++)
            for (int t = 0; t < pt; t++) {
                snprintf(name, sizeof name, "gpu%d", (i * a + j) * pt + t);
                int v = tb_node(b, name, TOPO_GPU, -1, spec);
                tb_link(b, v, r0 + i * a + j, p->bandwidth, p->latency, true);
            }
    for (int i = 0; i < g; i++)
        for (int j = 0; j < a; j++)
            for (int k = j + 1; k < a; k++)
                tb_link(b, r0 + i * a + j, r0 + i * a + k, p->bandwidth, p->latency, true);
    /* Global links: pass over group pairs (i < k) repeatedly, one link per pair per pass, while
     * both groups have free ports. Port s of a group sits on router s % a, so consecutive links
     * spread over the routers. With g = a*h + 1 this is one link per pair. */
    int *used = dt_xcalloc((size_t)g, sizeof *used);
    for (bool progress = true; progress;) {
        progress = false;
        for (int i = 0; i < g; i++)
            for (int k = i + 1; k < g; k++) {
                if (used[i] >= a * h || used[k] >= a * h) continue;
                int ri = r0 + i * a + used[i] % a, rk = r0 + k * a + used[k] % a;
                used[i]++;
                used[k]++;
                tb_link(b, ri, rk, p->bandwidth, p->latency, true);
                progress = true;
            }
    }
    free(used);
    b->t->gpu_forwarding = false;
    return DT_OK;
}

static int gen_dgx(topo_gen_params *p, const gpu_spec *spec, topo_builder *b, dt_error *err)
{
    if (p->gpus_per_node == 0) p->gpus_per_node = 8;
    int gn = p->gpus_per_node;
    if (gn < 1 || gn > 1024) return bad(err, "gpus_per_node", "expected 1 to 1024 GPUs per node, found %d", gn);
    if (p->gpus) {
        if (p->gpus % gn)
            return dt_error_set(err, DT_EINPUT, NULL, "gpus",
                                "%d GPUs is not a whole number of %d-GPU nodes", p->gpus, gn);
        if (p->nodes && p->nodes != p->gpus / gn)
            return dt_error_set(err, DT_EINPUT, NULL, "nodes",
                                "nodes %d disagrees with gpus %d (%d per node)", p->nodes, p->gpus, gn);
        p->nodes = p->gpus / gn;
    }
    if (p->nodes < 1) return bad(err, "nodes", "dgx needs at least 1 node, found %d", p->nodes);
    if ((long long)p->nodes * gn > MAX_GPUS) return bad(err, "nodes", "dgx too large (%d nodes): more than 262144 GPUs", p->nodes);
    p->gpus = p->nodes * gn;
    if (p->nvlink_bw == 0) p->nvlink_bw = spec->nvlink_bw;
    if (p->nvlink_bw == 0) p->nvlink_bw = 450e9;
    if (p->nic_bw == 0) p->nic_bw = p->bandwidth;
    if (p->nvlink_latency == TOPO_GEN_ZERO_LATENCY) p->nvlink_latency = 0;
    else if (p->nvlink_latency == 0) p->nvlink_latency = TOPO_DEFAULT_NVLINK_LATENCY;
    int d, u;
    int rc = leaf_ports(p, &d, &u, err);
    if (rc) return rc;
    int nn = p->nodes, per_rail = (nn + d - 1) / d;
    char name[96];
    /* Node layout: per box its GPUs, NVSwitch, NICs; then leaves rail-major; then spines. */
    int *gpu_of = dt_xmalloc((size_t)nn * gn * sizeof *gpu_of);
    int *nic_of = dt_xmalloc((size_t)nn * gn * sizeof *nic_of);
    for (int i = 0; i < nn; i++) {
        snprintf(name, sizeof name, "node%d", i);
        int host = tb_host(b, name);
        for (int j = 0; j < gn; j++) {
            snprintf(name, sizeof name, "node%d.gpu%d", i, j);
            gpu_of[i * gn + j] = tb_node(b, name, TOPO_GPU, host, spec);
        }
        if (gn > 1) {
            snprintf(name, sizeof name, "node%d.nvswitch", i);
            int nvs = tb_node(b, name, TOPO_SWITCH, host, NULL);
            for (int j = 0; j < gn; j++)
                tb_link(b, gpu_of[i * gn + j], nvs, p->nvlink_bw, p->nvlink_latency, true);
        }
        for (int j = 0; j < gn; j++) {
            snprintf(name, sizeof name, "node%d.nic%d", i, j);
            nic_of[i * gn + j] = tb_node(b, name, TOPO_NIC, host, NULL);
            /* GPU to NIC over PCIe: the NIC's rate, no extra latency (it is in the NIC link). */
            tb_link(b, gpu_of[i * gn + j], nic_of[i * gn + j], p->nic_bw, 0, true);
        }
    }
    int leaf0 = b->t->n_nodes;
    for (int r = 0; r < gn; r++)
        for (int l = 0; l < per_rail; l++) {
            snprintf(name, sizeof name, "rail%d.leaf%d", r, l);
            tb_node(b, name, TOPO_SWITCH, -1, NULL);
        }
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < gn; j++)
            tb_link(b, nic_of[i * gn + j], leaf0 + j * per_rail + i / d, p->nic_bw, p->latency, true);
    int leaves = gn * per_rail;
    if (leaves > 1) add_spines(b, leaf0, leaves, u, p->nic_bw, p->latency);
    free(gpu_of);
    free(nic_of);
    b->t->gpu_forwarding = false;
    return DT_OK;
}

/* Geo-distributed: `regions` sites, each a LAN switch ("region<r>") with gpus_per_region GPUs in
 * boxes of gpus_per_node (an NVSwitch inside a box of more than one, as dgx), every GPU on its own
 * NIC (PCIe at the NIC's rate, then a LAN link of nic_bw and `latency` to the region switch); each
 * pair of regions joined by one duplex wide-area link of wan_bw and wan_latency, shared by all the
 * traffic between the two (a site's uplink to a peer, as a VPN or an interconnect between two
 * clouds is). Routes take the least latency as everywhere (topo_route.c): with one figure for
 * every pair that is the pair's own link; with a latency matrix a pair may transit a third
 * region where that is quicker, as internet routing does. Defaults: 100 Mb/s, 50 ms one way, LAN 100 Gb/s. The inline generator also takes
 * matrices ("wan": [[...]], topo_load.c) that set each pair's link afterwards. */
static int gen_geo(topo_gen_params *p, const gpu_spec *spec, topo_builder *b, dt_error *err)
{
    if (p->regions == 0) p->regions = p->gpus && p->gpus_per_region ? p->gpus / p->gpus_per_region : 2;
    int R = p->regions;
    if (R < 1 || R > 1024) return bad(err, "regions", "expected 1 to 1024 regions, found %d", R);
    if (p->gpus_per_region == 0) p->gpus_per_region = p->gpus ? p->gpus / R : 8;
    int G = p->gpus_per_region;
    if (G < 1 || (long long)G * R > MAX_GPUS)
        return bad(err, "gpus_per_region", "expected 1 or more GPUs per region (262144 in all), found %d", G);
    if (p->gpus && p->gpus != G * R)
        return dt_error_set(err, DT_EINPUT, NULL, "gpus",
                            "gpus %d disagrees with %d regions of %d GPUs", p->gpus, R, G);
    p->gpus = G * R;
    if (p->gpus_per_node == 0) p->gpus_per_node = G < 8 ? G : 8;
    int gn = p->gpus_per_node;
    if (gn < 1 || G % gn)
        return dt_error_set(err, DT_EINPUT, NULL, "gpus_per_node",
                            "%d GPUs per region is not a whole number of %d-GPU nodes", G, gn);
    p->nodes = G / gn;
    if (p->nvlink_bw == 0) p->nvlink_bw = spec->nvlink_bw > 0 ? spec->nvlink_bw : 450e9;
    if (p->nic_bw == 0) p->nic_bw = TOPO_DEFAULT_LAN_BANDWIDTH;
    if (p->nvlink_latency == TOPO_GEN_ZERO_LATENCY) p->nvlink_latency = 0;
    else if (p->nvlink_latency == 0) p->nvlink_latency = TOPO_DEFAULT_NVLINK_LATENCY;
    if (p->wan_bw < 0) return bad(err, "wan", "expected a positive bandwidth, found %d", -1);
    if (p->wan_bw == 0) p->wan_bw = TOPO_DEFAULT_WAN_BANDWIDTH;
    if (p->wan_latency == TOPO_GEN_ZERO_LATENCY) p->wan_latency = 0;
    else if (p->wan_latency == 0) p->wan_latency = TOPO_DEFAULT_WAN_LATENCY;
    if (p->wan_latency < 0 || p->wan_latency >= SIM_S)
        return dt_error_set(err, DT_EINPUT, NULL, "wan_latency", "expected a latency below 1 s");
    char name[96];
    int sw0 = b->t->n_nodes;
    for (int r = 0; r < R; r++) {
        snprintf(name, sizeof name, "region%d", r);
        tb_node(b, name, TOPO_SWITCH, -1, NULL);
    }
    for (int r = 0; r < R; r++)
        for (int i = 0; i < p->nodes; i++) {
            snprintf(name, sizeof name, "region%d.node%d", r, i);
            int host = tb_host(b, name);
            int g0 = b->t->n_nodes;
            for (int j = 0; j < gn; j++) {
                snprintf(name, sizeof name, "region%d.node%d.gpu%d", r, i, j);
                tb_node(b, name, TOPO_GPU, host, spec);
            }
            if (gn > 1) {
                snprintf(name, sizeof name, "region%d.node%d.nvswitch", r, i);
                int nvs = tb_node(b, name, TOPO_SWITCH, host, NULL);
                for (int j = 0; j < gn; j++)
                    tb_link(b, g0 + j, nvs, p->nvlink_bw, p->nvlink_latency, true);
            }
            for (int j = 0; j < gn; j++) {
                snprintf(name, sizeof name, "region%d.node%d.nic%d", r, i, j);
                int nic = tb_node(b, name, TOPO_NIC, host, NULL);
                tb_link(b, g0 + j, nic, p->nic_bw, 0, true);
                tb_link(b, nic, sw0 + r, p->nic_bw, p->latency, true);
            }
        }
    for (int r = 0; r < R; r++)
        for (int q = r + 1; q < R; q++) tb_link(b, sw0 + r, sw0 + q, p->wan_bw, p->wan_latency, true);
    b->t->gpu_forwarding = false;
    return DT_OK;
}

/* A name that says what was generated: "fat-tree-128", "dgx-4x8", "torus-4x4x4". */
void topo_gen_default_name(const topo_gen_params *p, char *name, size_t size)
{
    if (p->family == TOPO_FAMILY_DGX)
        snprintf(name, size, "dgx-%dx%d", p->nodes, p->gpus_per_node);
    else if (p->family == TOPO_FAMILY_GEO)
        snprintf(name, size, "geo-%dx%d", p->regions, p->gpus_per_region);
    else if (p->family == TOPO_FAMILY_TORUS) {
        size_t n = (size_t)snprintf(name, size, "torus-");
        for (int i = 0; i < p->n_dims && n < size; i++)
            n += (size_t)snprintf(name + n, size - n, "%s%d", i ? "x" : "", p->dims[i]);
    } else
        snprintf(name, size, "%s-%d", topo_family_name(p->family), p->gpus);
}

int topo_generate(const topo_gen_params *params, topo **out, dt_error *err)
{
    topo_gen_params p;
    gpu_spec spec;
    int rc = resolve(params, &p, &spec, err);
    if (rc) return rc;
    /* The GPUs the parameters ask for, known before any is built (the generators check the
     * exact count against DT_MAX_GPUS themselves); each costs its gpu_spec (measured compute
     * tables included) plus about 400 B of nodes, links and names: checked against the memory
     * budget so that a limit says so instead of an allocation failing (an abort). */
    double want = 0;
    switch (p.family) {
    case TOPO_FAMILY_TORUS:
        want = 1;
        for (int i = 0; i < p.n_dims; i++) want *= p.dims[i] > 0 ? p.dims[i] : 1;
        break;
    case TOPO_FAMILY_DGX: want = (double)p.nodes * (p.gpus_per_node > 0 ? p.gpus_per_node : 8); break;
    case TOPO_FAMILY_GEO: want = (double)p.regions * p.gpus_per_region; break;
    default: want = p.gpus; break;
    }
    /* beyond DT_MAX_GPUS the generator refuses with the count, which says more than a memory
     * estimate would (a gpu_spec is ~2.8 KB: 262,144 of them are near a small machine's budget) */
    if (want <= DT_MAX_GPUS &&
        (rc = dt_check_memory(want * (sizeof(gpu_spec) + 400.0), "a topology of this size", NULL,
                              "gpus", err)))
        return rc;
    topo_builder b;
    char name[96];
    tb_begin(&b, topo_family_name(p.family));
    switch (p.family) {
    case TOPO_FAMILY_RING: rc = gen_ring(&p, &spec, &b, err); break;
    case TOPO_FAMILY_SWITCH: rc = gen_switch(&p, &spec, &b, err); break;
    case TOPO_FAMILY_FAT_TREE: rc = gen_fat_tree(&p, &spec, &b, err); break;
    case TOPO_FAMILY_TORUS: rc = gen_torus(&p, &spec, &b, err); break;
    case TOPO_FAMILY_DRAGONFLY: rc = gen_dragonfly(&p, &spec, &b, err); break;
    case TOPO_FAMILY_DGX: rc = gen_dgx(&p, &spec, &b, err); break;
    case TOPO_FAMILY_GEO: rc = gen_geo(&p, &spec, &b, err); break;
    default:
        rc = dt_error_set(err, DT_EINPUT, NULL, "generator", "not a generator family");
    }
    if (rc) {
        tb_abort(&b);
        return rc;
    }
    topo_gen_default_name(&p, name, sizeof name);
    free(b.t->name);
    b.t->name = dt_xstrdup(name);
    b.t->switch_latency = p.switch_latency;
    b.t->gen = p;
    topo *t = tb_finish(&b);
    if ((rc = topo_check_latency_range(t, NULL, "latency", err))) {
        topo_destroy(t);
        return rc;
    }
    *out = t;
    return DT_OK;
}
