/* topo_calib.c - applying a calibration to a topology: the topology's own operation.
 *
 * A calibration (models/gpu/calib.c) is plain data about devices: fitted collective latency and
 * bandwidth, measured compute tables. Turning it into link figures needs to know which links lie
 * on an intra-host GPU-to-GPU path and which form the fabric between hosts, which only the
 * topology knows; hence this file lives here and the calibration module knows nothing of
 * topologies.
 *
 * Two scopes (calib.h): a fit measured inside one host sets the links of intra-host GPU paths; a
 * fit measured across hosts (a multi-node nccl-tests log) sets the inter-host fabric. Both map a
 * collective's alpha-beta line to per-link figures through its ring-shaped cost
 * (cal_link_figures), so that dtsim's ring over the same ranks reproduces the line: inside a host
 * every ring hop is one covered path; across hosts the hops that cross between hosts are the
 * slow ones and set the ring's pace, so the fabric gets figures that make exactly those hops cost
 * what the measurement says (a faster intra-host hop waits for them each step).
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

/* Links of the inter-host fabric: not on an intra-host GPU path (hops[l] == 0) and touching a
 * NIC or a switch outside every host, or joining two hosts. */
static bool fabric_link(const topo *t, const int *hops, int l)
{
    if (hops[l]) return false;
    const topo_node *a = &t->nodes[t->links[l].src], *b = &t->nodes[t->links[l].dst];
    if (a->kind == TOPO_NIC || b->kind == TOPO_NIC) return true;
    if ((a->kind == TOPO_SWITCH && a->host < 0) || (b->kind == TOPO_SWITCH && b->host < 0)) return true;
    return a->host != b->host;
}

static const char *fit_label(const cal_result *c, const cal_algo *a, char *buf, size_t n)
{
    if (a->hosts > 1)
        snprintf(buf, n, "%s %s, %d ranks on %d hosts", c->backend, a->name, cal_fit_ranks(c, a), a->hosts);
    else
        snprintf(buf, n, "%s %s, %d ranks", c->backend, a->name, cal_fit_ranks(c, a));
    return buf;
}

/* Intra-host GPU paths: latency split over the path's hops (minus its switches), bandwidth on
 * every hop. Returns the links set; marks their GPUs in gpu_cov. */
static int apply_intra(topo *t, const int *hops, double la, double lb, bool *gpu_cov)
{
    int n_cov = 0;
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
    return n_cov;
}

/* Inter-host fabric links: bandwidth lb on every one; latency such that the route between the
 * first two GPUs adjacent in index order that sit in different hosts (where a ring crosses
 * between hosts) costs la: its fabric hops share what its switches and other hops leave.
 * Returns the links set (0 when the topology has fewer than two hosts); *was_bw: the largest
 * bandwidth those links had. */
static int apply_inter(topo *t, const int *hops, double la, double lb, bool *gpu_cov, double *was_bw, dt_error *err)
{
    *was_bw = 0;
    int a = -1, b = -1;
    for (int g = 0; g + 1 < t->n_gpus && a < 0; g++)
        if (t->nodes[t->gpu_node[g]].host != t->nodes[t->gpu_node[g + 1]].host) {
            a = g;
            b = g + 1;
        }
    if (a < 0 || t->n_hosts < 2) return 0;
    const int *path;
    int np = 0;
    if (topo_route(t, a, b, 0, &path, &np) != DT_OK) {
        dt_error_set(err, DT_EINTERNAL, NULL, NULL, "no route between GPUs %d and %d", a, b);
        return -1;
    }
    int nf = 0, nsw = 0;
    double other = 0;
    for (int i = 0; i < np; i++) {
        int l = path[i];
        if (fabric_link(t, hops, l)) nf++;
        else other += sim_time_to_s(t->links[l].latency);
        if (t->nodes[t->links[l].dst].kind == TOPO_SWITCH) nsw++;
    }
    double per = nf ? (la - nsw * sim_time_to_s(t->switch_latency) - other) / nf : 0;
    int n_cov = 0;
    for (int l = 0; l < t->n_links; l++) {
        if (!fabric_link(t, hops, l)) continue;
        if (t->links[l].bandwidth > *was_bw) *was_bw = t->links[l].bandwidth;
        t->links[l].latency = sim_time_from_s(per > 0 ? per : 0);
        t->links[l].bandwidth = lb;
        n_cov++;
    }
    for (int g = 0; g < t->n_gpus; g++)
        if (t->nodes[t->gpu_node[g]].host >= 0) gpu_cov[g] = true;
    return n_cov;
}

int topo_apply_calibration(topo *t, const cal_result *c, char *note, size_t note_size, dt_error *err)
{
    return topo_apply_calibration_fits(t, c, NULL, note, note_size, err);
}

/* "ring (R² 0.99), topk (R² 0.95)": the fits a file has, for messages. */
static void fit_list(const cal_result *c, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < c->n_algos && len < n; i++) {
        snprintf(buf + len, n - len, "%s%s (%s, R² %.3g)", i ? ", " : "", c->algos[i].name,
                 cal_kind_name(c->algos[i].kind), c->algos[i].fit.r2);
        len = strlen(buf);
    }
}

int topo_apply_calibration_fits(topo *t, const cal_result *c, const char *choose, char *note,
                                size_t note_size, dt_error *err)
{
    const cal_algo *ai = cal_link_fit_scope(c, CAL_SCOPE_INTRA), *ae = cal_link_fit_scope(c, CAL_SCOPE_INTER);
    const char *src = c->source[0] ? c->source : "calibration";
    const char *efile = c->source[0] ? c->source : NULL;
    char have[512];
    /* The user's choice, per scope: "a,b" names one fit each. */
    for (const char *p = choose; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
        int i = len ? cal_find_fit(c, name) : -1;
        fit_list(c, have, sizeof have);
        if (i < 0)
            return dt_error_set(err, DT_EINPUT, efile, "fits",
                                "no fit named \"%s\" to apply (the file has: %s)", name, have);
        if (c->algos[i].kind == CAL_KIND_TOPK)
            return dt_error_set(err, DT_EINPUT, efile, "fits",
                                "fit \"%s\" is top-k compression, not a collective: it sets no links "
                                "(the file has: %s)", name, have);
        if (c->algos[i].scope == CAL_SCOPE_INTER) ae = &c->algos[i];
        else ai = &c->algos[i];
        p = e ? e + 1 : p + len;
    }
    if (!ai && !ae) return dt_error_set(err, DT_EINPUT, efile, "fits", "no collective fit to take link figures from");
    const cal_algo *fits[2] = {ai, ae};
    /* Quality: a line that does not describe its medians would put made-up figures on every
     * link. Refuse below CAL_R2_REFUSE, warn below CAL_R2_WARN (in the note): cal_r2_judge, the
     * rule dtsim calibrate applies to these same default fits before it writes. */
    char warn[1024] = "";
    for (int k = 0; k < 2; k++) {
        if (!fits[k]) continue;
        const cal_algo *a = fits[k];
        char path[32];
        snprintf(path, sizeof path, "fits[%d].r2", (int)(a - c->algos));
        cal_r2_verdict v = cal_r2_judge(a->fit.r2);
        if (v == CAL_R2_POOR) {
            char why[400];
            fit_list(c, have, sizeof have);
            return dt_error_set(err, DT_EINPUT, efile, path,
                                "%s, so the link figures it would give are meaningless; measure again "
                                "(more --repeats, a quieter machine, a narrower --sizes range) or choose "
                                "another fit (--calibration-fit NAME, options.calibration_fit; the file has: %s)",
                                cal_r2_refusal(a, why, sizeof why), have);
        }
        if (v == CAL_R2_ROUGH) {
            size_t wl = strlen(warn);
            snprintf(warn + wl, sizeof warn - wl,
                     "; warning: %.200s fit \"%.32s\" (%s) has R² = %.3g, below %.2g: the figures "
                     "applied are rough", src, a->name, path, a->fit.r2, CAL_R2_WARN);
        }
    }
    for (int k = 0; k < 2; k++)
        if (fits[k] && cal_fit_ranks(c, fits[k]) < 2)
            return dt_error_set(err, DT_EINPUT, efile, "ranks", "link figures need a ring of 2 or more ranks, found %d",
                                cal_fit_ranks(c, fits[k]));
    int *hops = covered_links(t);
    bool *gpu_cov = dt_xcalloc((size_t)(t->n_gpus ? t->n_gpus : 1), sizeof *gpu_cov);
    double la[2] = {0, 0}, lb[2] = {0, 0}, was = 0;
    int n_cov[2] = {0, 0}, rc = DT_OK;
    for (int k = 0; k < 2; k++) {
        if (!fits[k]) continue;
        cal_link_figures(fits[k]->kind, fits[k]->fit.alpha, fits[k]->fit.beta, cal_fit_ranks(c, fits[k]), &la[k], &lb[k]);
        if (la[k] < 0) la[k] = 0; /* a latency below the noise floor fits slightly negative */
    }
    /* A ring over h hosts of g > 1 GPUs runs g rings, one per rail, each with 1/g of the data
     * (docs/collectives.md, "Rings per rail"): the measured line is g rails' worth, so each
     * fabric link gets 1/g of the ring-equivalent bandwidth. */
    int rails = 1;
    if (fits[1] && fits[1]->hosts > 1 && cal_fit_ranks(c, fits[1]) % fits[1]->hosts == 0) {
        rails = cal_fit_ranks(c, fits[1]) / fits[1]->hosts;
        /* the ring builder's cap, COLL_MAX_RINGS of dtsim/coll.h (not included: topo sits
         * below the collectives) */
        if (rails > 16) rails = 16;
        if (rails > 1) lb[1] /= rails;
    }
    /* intra first: the inter-host route's intra-host hops then already carry their figures */
    if (ai) n_cov[0] = apply_intra(t, hops, la[0], lb[0], gpu_cov);
    if (ae) n_cov[1] = apply_inter(t, hops, la[1], lb[1], gpu_cov, &was, err);
    if (n_cov[1] < 0) rc = err->code;
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
    if (rc) return rc;
    if (n_cov[0] == 0 && n_cov[1] <= 0) {
        if (ae && !ai)
            return dt_error_set(err, DT_EINPUT, efile, NULL,
                                "the calibration describes inter-host links and topology \"%s\" has %d host%s: "
                                "nothing to apply it to",
                                t->name ? t->name : "", t->n_hosts, t->n_hosts == 1 ? "" : "s");
        return dt_error_set(err, DT_EINPUT, efile, NULL,
                            "topology \"%s\" has no GPU-to-GPU links inside a host for the calibration to describe",
                            t->name ? t->name : "");
    }
    char b1[32], b2[32], b3[32], lab[96];
    const cal_algo *first = ai ? ai : ae;
    snprintf(note, note_size, "%s (%s, %s):", src, fit_label(c, first, lab, sizeof lab), c->dtype);
    size_t len = strlen(note);
    if (ai && len < note_size) {
        if (n_cov[0])
            snprintf(note + len, note_size - len, " %d intra-host GPU links set to %s latency per GPU-GPU path, %s",
                     n_cov[0], unit_fmt_seconds(la[0], b1, sizeof b1), unit_fmt_bandwidth(lb[0], b2, sizeof b2));
        else
            snprintf(note + len, note_size - len, " no intra-host GPU path to set");
        len = strlen(note);
    }
    if (ae && len < note_size) {
        bool above = was > 0 && lb[1] > was * 1.000001;
        char tail[160] = "";
        if (ai) snprintf(tail, sizeof tail, " (%s)", fit_label(c, ae, lab, sizeof lab));
        char rails_note[48] = "";
        if (rails > 1) snprintf(rails_note, sizeof rails_note, " (the ring's over %d rails)", rails);
        if (n_cov[1] > 0)
            snprintf(note + len, note_size - len,
                     "%s %d inter-host links set to %s latency per host-to-host GPU path, %s %s%s%s%s%s%s",
                     ai ? ";" : "", n_cov[1], unit_fmt_seconds(la[1], b1, sizeof b1),
                     unit_fmt_bandwidth(lb[1], b2, sizeof b2), rails > 1 ? "per rail" : "ring-equivalent",
                     rails > 1 ? rails_note : "", above ? " (above the " : "",
                     above ? unit_fmt_bandwidth(was, b3, sizeof b3) : "", above ? " they had)" : "", tail);
        else
            snprintf(note + len, note_size - len, "%s inter-host figures not applied (one host)%s", ai ? ";" : "", tail);
        len = strlen(note);
    }
    if (len < note_size)
        snprintf(note + len, note_size - len, "; reduction folded into link bandwidth on %d GPUs", n_gpu);
    len = strlen(note);
    /* Routes are shortest by latency: an intra-host path made slower than the way out through
     * the NICs and back loses the traffic of its own host to the fabric. Say so (the model has
     * no per-message overhead apart from link latency to put a large fitted alpha on). */
    if (ai && n_cov[0] && len < note_size) {
        int a = -1, b = -1;
        for (int g = 0; g + 1 < t->n_gpus && a < 0; g++)
            if (t->nodes[t->gpu_node[g]].host == t->nodes[t->gpu_node[g + 1]].host) {
                a = g;
                b = g + 1;
            }
        const int *path;
        int np = 0;
        int *h2 = a >= 0 ? covered_links(t) : NULL;
        if (a >= 0 && topo_route(t, a, b, 0, &path, &np) == DT_OK) {
            bool leaves = false;
            for (int i = 0; i < np; i++)
                if (!h2[path[i]]) leaves = true;
            if (leaves)
                snprintf(note + len, note_size - len,
                         "; warning: the %s per GPU-GPU path exceeds the route out of the host and back, so "
                         "traffic inside a host now takes the fabric (routes are shortest by latency)",
                         unit_fmt_seconds(la[0], b1, sizeof b1));
        }
        free(h2);
    }
    /* Measured compute tables describe the GPU model, not links: every GPU gets them. */
    len = strlen(note);
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
    len = strlen(note);
    if (warn[0] && len < note_size) snprintf(note + len, note_size - len, "%s", warn);
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
