/* timeline.c - run timelines as Chrome/Perfetto trace-event JSON, and the breakdown bar.
 *
 * The JSON is written with fprintf, never built as a cJSON tree: a large run has millions of
 * spans and a tree would cost several times the output size in memory. Spans are sorted per
 * (GPU, stream) and given lanes greedily (first lane free at the span's start), so every
 * track only ever holds disjoint slices, which the importer accepts without nesting rules.
 * Cost: O(n log n) for the sort, O(n x lanes) for lanes (lanes are few: overlapping ops of one
 * stream are rare, overlapping transfers on one link a handful).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/report.h"

#define LANES_MAX 256

static const char *const stream_names[RUN_STREAM_COUNT] = {"compute", "TP", "PP", "DP"};

int rep_gpu_select_parse(const char *spec, int n_gpus, const char *flag, bool **mask,
                         dt_error *err)
{
    bool *m = dt_xcalloc(n_gpus > 0 ? (size_t)n_gpus : 1, sizeof *m);
    *mask = m;
    if (!spec || !strcmp(spec, "all")) {
        for (int i = 0; i < n_gpus; i++) m[i] = true;
        return DT_OK;
    }
    const char *p = spec;
    while (*p) {
        char *end = NULL;
        long a = strtol(p, &end, 10), b;
        if (end == p || a < 0) goto bad;
        b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a) goto bad;
            p = end;
        }
        if (b >= n_gpus) {
            free(m);
            *mask = NULL;
            return dt_error_set(err, DT_EINPUT, flag, NULL,
                                "GPU %ld is out of range: this run has GPUs 0-%d", b, n_gpus - 1);
        }
        for (long i = a; i <= b; i++) m[i] = true;
        if (*p == ',') {
            p++;
            if (!*p) goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    return DT_OK;
bad:
    free(m);
    *mask = NULL;
    return dt_error_set(err, DT_EINPUT, flag, NULL,
                        "expected GPU ids and ranges such as \"0-7,64\", found \"%s\"", spec);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Picoseconds as microseconds, exactly. */
static void us(FILE *f, sim_time_t ps)
{
    fprintf(f, "%" PRId64 ".%06" PRId64, ps / 1000000, ps % 1000000);
}

typedef struct ivl {
    sim_time_t start, end;
    size_t idx; /* into the source array, for names and a deterministic tie-break */
    int key;    /* GPU*RUN_STREAM_COUNT + stream, or link */
} ivl;

static int ivl_cmp(const void *pa, const void *pb)
{
    const ivl *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->end != b->end) return a->end > b->end ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Assign lanes to a run of intervals of one key (sorted by start); lane[i] out. */
static void assign_lanes(const ivl *v, size_t n, int *lane)
{
    sim_time_t last[LANES_MAX];
    int used = 0;
    for (size_t i = 0; i < n; i++) {
        int l = 0;
        while (l < used && last[l] > v[i].start) l++;
        if (l == used) {
            if (used < LANES_MAX)
                used++;
            else
                l = LANES_MAX - 1; /* pathological overlap: slices will overlap in the last lane */
        }
        last[l] = v[i].end;
        lane[i] = l;
    }
}

typedef struct emitter {
    FILE *f;
    bool first;
} emitter;

static void sep(emitter *e)
{
    fputs(e->first ? "\n" : ",\n", e->f);
    e->first = false;
}

static void meta(emitter *e, const char *what, int pid, long tid, const char *name, long sort)
{
    sep(e);
    fprintf(e->f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%ld,\"name\":\"%s_name\",\"args\":{\"name\":",
            pid, tid, what);
    json_str(e->f, name);
    fputs("}}", e->f);
    sep(e);
    fprintf(e->f,
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":%ld,\"name\":\"%s_sort_index\",\"args\":{\"sort_index\":%ld}}",
            pid, tid, what, sort);
}

static void slice(emitter *e, const char *name, const char *cat, int pid, long tid,
                  sim_time_t start, sim_time_t end)
{
    sep(e);
    fputs("{\"ph\":\"X\",\"name\":", e->f);
    json_str(e->f, name);
    fprintf(e->f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%ld,\"ts\":", cat, pid, tid);
    us(e->f, start);
    fputs(",\"dur\":", e->f);
    us(e->f, end - start);
}

/* Tracks of one GPU: tid = GPU * 2048 + kind * 256 + lane, kind 0 = state, 1.. = streams. */
static long gpu_tid(int gpu, int kind, int lane) { return (long)gpu * 2048 + kind * 256 + lane; }

typedef struct edge {
    sim_time_t t;
    int comp, comm, wait;
    int kind; /* wl_comm_kind of a communication edge, -1 otherwise */
} edge;

/* 0 compute, 1 communication, 2 waiting: a communication-stream span named "wait_for_peers"
 * (the part of a collective or send spent waiting for the slowest member to arrive, as the
 * run records it) is waiting, not traffic. */
static int span_class(const run_timeline *tl, const run_span *s)
{
    if (s->stream == RUN_STREAM_COMPUTE) return 0;
    if (s->name >= 0 && (size_t)s->name < tl->n_names &&
        !strcmp(tl->names[s->name], "wait_for_peers"))
        return 2;
    return 1;
}

static int edge_cmp(const void *pa, const void *pb)
{
    const edge *a = pa, *b = pb;
    return a->t < b->t ? -1 : a->t > b->t;
}

/* "comm DP (exposed)", or with several kinds in flight at once "comm DP+PP (exposed)" (kinds
 * in wl_comm_kind order). */
static void comm_state_name(const int *kinds, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "comm ");
    bool any = false;
    for (int k = 0; k < WL_COMM_KIND_COUNT && len < n; k++)
        if (kinds[k] > 0) {
            len += (size_t)snprintf(buf + len, n - len, "%s%s", any ? "+" : "",
                                    wl_comm_kind_abbrev((wl_comm_kind)k));
            any = true;
        }
    if (len < n) snprintf(buf + len, n - len, "%s(exposed)", any ? " " : "");
}

/* The state track of one GPU: [0, T] cut where compute/comm coverage changes, so its slices
 * sum to T exactly: compute where any compute op runs, "comm KIND (exposed)" where only
 * communication runs (named by the kinds in flight: TP, PP, DP, ZeRO), "wait (peers)" where a
 * collective or send waits for its slowest member, "idle" (pipeline bubble, end of step) where
 * nothing does. */
static void state_track(emitter *e, const run_timeline *tl, const ivl *v, size_t n, int gpu,
                        int pid, sim_time_t T)
{
    static const char *const names[] = {"compute", "comm", "wait (peers)", "idle"};
    edge *ev = dt_xmalloc((2 * n + 1) * sizeof *ev);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const run_span *s = &tl->spans[v[i].idx];
        if (s->end <= s->start) continue;
        int cls = span_class(tl, s);
        int kind = cls == 1 && s->comm >= 0 && s->comm < WL_COMM_KIND_COUNT ? s->comm : -1;
        ev[k++] = (edge){s->start, cls == 0, cls == 1, cls == 2, kind};
        ev[k++] = (edge){s->end, -(cls == 0), -(cls == 1), -(cls == 2), kind};
    }
    qsort(ev, k, sizeof *ev, edge_cmp);
    long tid = gpu_tid(gpu, 0, 0);
    int comp = 0, comm = 0, wait = 0, cls = -1, kinds[WL_COMM_KIND_COUNT] = {0};
    char cur[64] = "", nm[64];
    sim_time_t at = 0, seg = 0;
    size_t j = 0;
    while (at < T) {
        while (j < k && ev[j].t <= at) {
            comp += ev[j].comp;
            comm += ev[j].comm;
            wait += ev[j].wait;
            if (ev[j].kind >= 0) kinds[ev[j].kind] += ev[j].comm;
            j++;
        }
        sim_time_t next = j < k && ev[j].t < T ? ev[j].t : T;
        int now = comp > 0 ? 0 : comm > 0 ? 1 : wait > 0 ? 2 : 3;
        if (now == 1) comm_state_name(kinds, nm, sizeof nm);
        else snprintf(nm, sizeof nm, "%s", names[now]);
        if (now != cls || strcmp(nm, cur)) {
            if (cls >= 0) {
                slice(e, cur, "state", pid, tid, seg, at);
                fputs("}", e->f);
            }
            cls = now;
            snprintf(cur, sizeof cur, "%s", nm);
            seg = at;
        }
        at = next;
    }
    if (cls >= 0) {
        slice(e, cur, "state", pid, tid, seg, T);
        fputs("}", e->f);
    }
    free(ev);
}

int rep_timeline_write(const run_timeline *tl, const rep_timeline_options *opt, FILE *f,
                       dt_error *err)
{
    rep_timeline_options dflt = {.links = true};
    if (!opt) opt = &dflt;
    emitter e = {.f = f, .first = true};
    sim_time_t T = opt->step_end;
    for (size_t i = 0; i < tl->n_spans; i++)
        if (tl->spans[i].end > T) T = tl->spans[i].end;
    for (size_t i = 0; i < tl->n_link_spans; i++)
        if (tl->link_spans[i].end > T) T = tl->link_spans[i].end;
    /* pid 1..n_hosts: hosts; n_hosts+1: GPUs without a host; n_hosts+2: the network. */
    int pid_nohost = tl->n_hosts + 1, pid_net = tl->n_hosts + 2;
#define GPU_ON(g) ((g) >= 0 && (g) < tl->n_gpus && (!opt->gpus || opt->gpus[(g)]))
#define GPU_PID(g)                                                                          \
    (tl->gpu_host && tl->gpu_host[(g)] >= 0 && tl->gpu_host[(g)] < tl->n_hosts               \
         ? tl->gpu_host[(g)] + 1                                                            \
         : pid_nohost)

    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"dtsim\",", f);
    if (opt->scenario) {
        fputs("\"scenario\":", f);
        json_str(f, opt->scenario);
        fputc(',', f);
    }
    fputs("\"step_end_us\":", f);
    us(f, T);
    fputs("},\"traceEvents\":[", f);
    /* Op spans sorted per (GPU, stream): one pass gives each GPU's state track and its op
     * tracks. */
    ivl *v = dt_xmalloc((tl->n_spans + 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < tl->n_spans; i++) {
        const run_span *s = &tl->spans[i];
        if (!GPU_ON(s->gpu)) continue;
        v[n++] = (ivl){s->start, s->end, i, s->gpu * RUN_STREAM_COUNT + (int)s->stream};
    }
    qsort(v, n, sizeof *v, ivl_cmp);
    bool *pid_named = dt_xcalloc((size_t)tl->n_hosts + 3, sizeof *pid_named);
    size_t at = 0;
    for (int g = 0; g < tl->n_gpus; g++) {
        size_t from = at;
        while (at < n && v[at].key / RUN_STREAM_COUNT == g) at++;
        if (!GPU_ON(g)) continue;
        int pid = GPU_PID(g);
        if (!pid_named[pid]) {
            pid_named[pid] = true;
            char hn[32];
            snprintf(hn, sizeof hn, "host%d", pid - 1);
            const char *pname = pid == pid_nohost ? "GPUs"
                                : tl->host_names && tl->host_names[pid - 1] ? tl->host_names[pid - 1]
                                                                            : hn;
            meta(&e, "process", pid, 0, pname, pid);
        }
        char name[96];
        snprintf(name, sizeof name, "GPU %d state", g);
        meta(&e, "thread", pid, gpu_tid(g, 0, 0), name, gpu_tid(g, 0, 0));
        state_track(&e, tl, v + from, at - from, g, pid, T);
    }

    int *lane = dt_xmalloc((n + 1) * sizeof *lane);
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && v[b].key == v[a].key; b++) {}
        assign_lanes(v + a, b - a, lane + a);
        int gpu = v[a].key / RUN_STREAM_COUNT, st = v[a].key % RUN_STREAM_COUNT;
        int pid = GPU_PID(gpu), max_lane = -1;
        for (size_t i = a; i < b; i++) {
            if (lane[i] > max_lane) {
                max_lane = lane[i];
                char name[96];
                if (lane[i] == 0)
                    snprintf(name, sizeof name, "GPU %d %s", gpu, stream_names[st]);
                else
                    snprintf(name, sizeof name, "GPU %d %s #%d", gpu, stream_names[st], lane[i] + 1);
                long tid = gpu_tid(gpu, st + 1, lane[i]);
                meta(&e, "thread", pid, tid, name, tid);
            }
            const run_span *s = &tl->spans[v[i].idx];
            const char *nm = s->name >= 0 && (size_t)s->name < tl->n_names ? tl->names[s->name]
                                                                           : "op";
            slice(&e, nm, stream_names[st], pid, gpu_tid(gpu, st + 1, lane[i]), s->start, s->end);
            if (s->microbatch >= 0 || s->layer >= 0) {
                fputs(",\"args\":{", f);
                if (s->microbatch >= 0) fprintf(f, "\"microbatch\":%d", s->microbatch);
                if (s->microbatch >= 0 && s->layer >= 0) fputc(',', f);
                if (s->layer >= 0) fprintf(f, "\"layer\":%d", s->layer);
                fputc('}', f);
            }
            fputc('}', f);
        }
    }
    free(lane);
    free(v);

    if (opt->links && tl->n_link_spans > 0) {
        /* With a GPU selection, a link is kept when one of its endpoints is a selected GPU or
         * a node (GPU, NVSwitch, NIC, ...) of a host that holds a selected GPU: the selected
         * GPUs' own links, their hosts' internal links and those hosts' uplinks. Links between
         * host-less switches (leaf, spine) and other hosts' links are left out. */
        bool *host_on = NULL;
        bool filter = opt->gpus && tl->link_gpu && tl->link_host;
        if (filter) {
            host_on = dt_xcalloc((size_t)tl->n_hosts + 1, sizeof *host_on);
            for (int g = 0; g < tl->n_gpus; g++)
                if (opt->gpus[g] && tl->gpu_host && tl->gpu_host[g] >= 0 &&
                    tl->gpu_host[g] < tl->n_hosts)
                    host_on[tl->gpu_host[g]] = true;
        }
        v = dt_xmalloc(tl->n_link_spans * sizeof *v);
        n = 0;
        for (size_t i = 0; i < tl->n_link_spans; i++) {
            int l = tl->link_spans[i].link;
            if (filter && l >= 0 && (size_t)l < tl->n_links) {
                bool keep = false;
                for (int k = 0; k < 2 && !keep; k++) {
                    int g = tl->link_gpu[2 * l + k], h = tl->link_host[2 * l + k];
                    keep = GPU_ON(g) || (h >= 0 && h < tl->n_hosts && host_on[h]);
                }
                if (!keep) continue;
            }
            v[n++] = (ivl){tl->link_spans[i].start, tl->link_spans[i].end, i, l};
        }
        free(host_on);
        if (n > 0) meta(&e, "process", pid_net, 0, "Network links", pid_net);
        qsort(v, n, sizeof *v, ivl_cmp);
        lane = dt_xmalloc((n ? n : 1) * sizeof *lane);
        for (size_t a = 0, b; a < n; a = b) {
            for (b = a; b < n && v[b].key == v[a].key; b++) {}
            assign_lanes(v + a, b - a, lane + a);
            int link = v[a].key, max_lane = -1;
            const char *ln = link >= 0 && (size_t)link < tl->n_links ? tl->link_names[link] : "link";
            for (size_t i = a; i < b; i++) {
                long tid = (long)link * LANES_MAX + lane[i];
                if (lane[i] > max_lane) {
                    max_lane = lane[i];
                    char name[160];
                    if (lane[i] == 0)
                        snprintf(name, sizeof name, "%s", ln);
                    else
                        snprintf(name, sizeof name, "%s #%d", ln, lane[i] + 1);
                    meta(&e, "thread", pid_net, tid, name, tid);
                }
                const run_link_span *s = &tl->link_spans[v[i].idx];
                slice(&e, "transfer", "link", pid_net, tid, s->start, s->end);
                fprintf(f, ",\"args\":{\"bytes\":%.17g}}", s->bytes);
            }
        }
        free(lane);
        free(v);
    }
    fputs("\n]}\n", f);
    free(pid_named);
#undef GPU_ON
#undef GPU_PID
    if (ferror(f)) return dt_error_set(err, DT_EIO, NULL, NULL, "writing the timeline failed");
    return DT_OK;
}

void rep_breakdown_bar(const run_result *r, int width, FILE *f)
{
    enum { N = 6 }; /* compute, comm, bubble, straggler, data stall, the rest */
    static const char cell[N] = {'#', '=', '.', '!', '~', ' '};
    static const char *const label[N - 1] = {"compute", "comm", "bubble", "straggler", "data"};
    double part[N] = {r->breakdown_s.compute, r->breakdown_s.comm_exposed, r->breakdown_s.bubble,
                      r->breakdown_s.straggler_wait, r->breakdown_s.data_stall, 0};
    double sum = 0;
    for (int i = 0; i < N - 1; i++) {
        if (!(part[i] > 0)) part[i] = 0;
        sum += part[i];
    }
    /* Shares of the step; if the parts overshoot it (they should not), of their sum. */
    double whole = r->step_time_s > sum ? r->step_time_s : sum;
    part[N - 1] = whole - sum;
    if (width < 4) width = 4;
    /* Largest remainder: the cells add up to width exactly. */
    int cells[N], given = 0;
    double rem[N];
    for (int i = 0; i < N; i++) {
        double x = whole > 0 ? part[i] / whole * width : (i == N - 1 ? width : 0);
        cells[i] = (int)x;
        rem[i] = x - cells[i];
        given += cells[i];
    }
    while (given < width) {
        int best = 0;
        for (int i = 1; i < N; i++)
            if (rem[i] > rem[best]) best = i;
        cells[best]++;
        rem[best] = -1;
        given++;
    }
    fputc('[', f);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < cells[i]; c++) fputc(cell[i], f);
    fputc(']', f);
    /* the data stall only when there is one (an input pipeline slower than the step) */
    for (int i = 0; i < N - 1; i++)
        if (i < 4 || part[i] > 0)
            fprintf(f, "%s%c %s %.1f%%", i ? "  " : " ", cell[i], label[i],
                    whole > 0 ? 100 * part[i] / whole : 0.0);
    fputc('\n', f);
}
