/* topo_calib.c - applying a calibration to a topology: the topology's own operation.
 *
 * A calibration (models/gpu/calib.c) is plain data about devices: fitted all-reduce latency and
 * bandwidth, measured compute tables. Turning it into link figures needs to know which links lie
 * on an intra-host GPU-to-GPU path, which only the topology knows; hence this file lives here and
 * the calibration module knows nothing of topologies.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/calib.h"
#include "dtsim/units.h"
#include "topo_internal.h"

/* Which links the calibration covers, as the hop count of the intra-host GPU-to-GPU path they lie
 * on (1: a direct GPU-GPU link, 2: GPU->switch->GPU inside one host), 0 when not covered.
 * "Same host" compares topo_node.host, so a topology that names no hosts is one box. Links to
 * NICs, and switch paths longer than one switch, are inter-host fabric: not covered. */
static int *covered_links(const topo *t)
{
    int *hops = dt_xcalloc((size_t)(t->n_links ? t->n_links : 1), sizeof *hops);
    for (int l = 0; l < t->n_links; l++) {
        const topo_link *L = &t->links[l];
        const topo_node *a = &t->nodes[L->src], *b = &t->nodes[L->dst];
        if (a->kind == TOPO_GPU && b->kind == TOPO_GPU && a->host == b->host) hops[l] = 1;
    }
    for (int l = 0; l < t->n_links; l++) {
        const topo_link *L = &t->links[l];
        const topo_node *a = &t->nodes[L->src], *sw = &t->nodes[L->dst];
        if (a->kind != TOPO_GPU || sw->kind != TOPO_SWITCH || sw->host != a->host) continue;
        for (int k = t->out_start[L->dst]; k < t->out_start[L->dst + 1]; k++) {
            int l2 = t->out_links[k];
            const topo_node *b = &t->nodes[t->links[l2].dst];
            if (b->kind == TOPO_GPU && b->host == a->host && t->links[l2].dst != L->src) {
                hops[l] = 2;
                hops[l2] = 2;
            }
        }
    }
    return hops;
}

int topo_apply_calibration(topo *t, const cal_result *c, char *note, size_t note_size, dt_error *err)
{
    const cal_algo *a = cal_link_fit(c);
    const char *src = c->source[0] ? c->source : "calibration";
    if (!a)
        return dt_error_set(err, DT_EINPUT, c->source[0] ? c->source : NULL, "fits",
                            "no all-reduce fit to take link figures from");
    if (c->ranks < 2)
        return dt_error_set(err, DT_EINPUT, c->source[0] ? c->source : NULL, "ranks",
                            "link figures need a ring of 2 or more ranks, found %d", c->ranks);
    double la, lb;
    cal_ring_link(a->fit.alpha, a->fit.beta, c->ranks, &la, &lb);
    if (la < 0) la = 0; /* a latency below the noise floor fits slightly negative */
    int *hops = covered_links(t);
    int n_cov = 0;
    bool *gpu_cov = dt_xcalloc((size_t)(t->n_gpus ? t->n_gpus : 1), sizeof *gpu_cov);
    double sw = sim_time_to_s(t->switch_latency);
    for (int l = 0; l < t->n_links; l++) {
        if (!hops[l]) continue;
        /* a path of h hops through h-1 switches pays h link latencies plus the switches' */
        double per = (la - (hops[l] - 1) * sw) / hops[l];
        t->links[l].latency = sim_time_from_s(per > 0 ? per : 0);
        t->links[l].bandwidth = lb;
        n_cov++;
        const topo_node *s = &t->nodes[t->links[l].src];
        if (s->kind == TOPO_GPU && s->gpu >= 0) gpu_cov[s->gpu] = true;
    }
    /* The measured time includes the reductions: they are folded into beta, hence into the link
     * bandwidth, so the covered GPUs reduce for free (reduce_bw 0) rather than twice. */
    int n_gpu = 0;
    for (int g = 0; g < t->n_gpus; g++)
        if (gpu_cov[g]) {
            t->gpus[g].reduce_bw = 0;
            n_gpu++;
        }
    topo_route_cache_flush(t); /* routes are shortest by latency: the latencies just changed */
    free(hops);
    free(gpu_cov);
    if (n_cov == 0)
        return dt_error_set(err, DT_EINPUT, c->source[0] ? c->source : NULL, NULL,
                            "topology \"%s\" has no GPU-to-GPU links inside a host for the calibration to describe",
                            t->name ? t->name : "");
    char b1[32], b2[32];
    snprintf(note, note_size,
             "%s (%s %s, %d ranks, %s): %d intra-host GPU links set to %s latency per GPU-GPU path, "
             "%s; reduction folded into link bandwidth on %d GPUs",
             src, c->backend, a->name, c->ranks, c->dtype, n_cov, unit_fmt_seconds(la, b1, sizeof b1),
             unit_fmt_bandwidth(lb, b2, sizeof b2), n_gpu);
    /* Measured compute tables describe the GPU model, not links: every GPU gets them. */
    size_t len = strlen(note);
    bool any = false;
    for (int k = 0; k < GPU_OP_CLASS_COUNT; k++) {
        const gpu_table *tab = &c->compute[k];
        if (tab->n <= 0) continue;
        for (int g = 0; g < t->n_gpus; g++) t->gpus[g].table[k] = *tab;
        if (len < note_size) {
            char pr[24] = "";
            if (tab->precision >= 0)
                snprintf(pr, sizeof pr, " %s", gpu_precision_name((gpu_precision)tab->precision));
            snprintf(note + len, note_size - len, "%s %s%s (%d points by %s)",
                     any ? "," : "; measured compute table", gpu_op_class_name((gpu_op_class)k), pr,
                     tab->n, tab->by_bytes ? "bytes" : "FLOPs");
            len = strlen(note);
        }
        any = true;
    }
    if (any && len < note_size) snprintf(note + len, note_size - len, " on %d GPUs", t->n_gpus);
    return DT_OK;
}

void topo_apply_link_efficiency(topo *t, double nvlink, double network)
{
    if (nvlink == 1 && network == 1) return;
    int *hops = covered_links(t);
    for (int l = 0; l < t->n_links; l++) t->links[l].bandwidth *= hops[l] ? nvlink : network;
    free(hops);
}

int topo_link_efficiency_parse(const char *s, double *nvlink, double *network, char *why,
                               size_t why_size)
{
    if (!strcmp(s, "nccl")) {
        *nvlink = TOPO_NCCL_NVLINK_EFFICIENCY;
        *network = TOPO_NCCL_NETWORK_EFFICIENCY;
        return DT_OK;
    }
    if (!strcmp(s, "line")) {
        *nvlink = *network = 1;
        return DT_OK;
    }
    char *end;
    double a = strtod(s, &end), b = -1;
    if (end != s && *end == ',') {
        const char *q = end + 1;
        b = strtod(q, &end);
        if (end == q) b = -1;
    }
    if (*end || !(a > 0 && a <= 1) || !(b > 0 && b <= 1)) {
        snprintf(why, why_size, "expected nccl, line or NVLINK,NETWORK fractions in (0, 1] such as "
                                "0.8,0.96, found '%s'", s);
        return DT_EINPUT;
    }
    *nvlink = a;
    *network = b;
    return DT_OK;
}
