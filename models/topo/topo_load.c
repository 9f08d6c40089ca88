/* topo_load.c - topologies from JSON: files (format v1), inline objects, inline generators.
 *
 * Validation is complete before anything is built into a topo, and every error names the file
 * and the JSON path of the offending value: unknown keys (with did-you-mean), bad units,
 * duplicate node names, links to unknown nodes (did-you-mean over the node names), self-loops,
 * non-positive bandwidths, and GPUs that cannot reach one another under the relay rule.
 * Node names are looked up through a hash table, so a 35,000-node file loads in linear time.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/limits.h"
#include "topo_internal.h"

#define TOPO_FORMAT "dtsim-topology"
#define TOPO_MAX_NODES (1 << 24)
/* Slowest link bandwidth accepted: 1 B/s. A 1e-300 B/s link passed as "positive" and failed
 * later as a collective longer than the clock's range, with neither file nor path. */
#define TOPO_MIN_BANDWIDTH 1.0

static int check_min_bw(const js_ctx *ctx, const char *path, const char *key, double bw)
{
    if (bw == 0 || bw >= TOPO_MIN_BANDWIDTH) return DT_OK; /* 0: absent (the default) */
    return js_fail(ctx, path, key, "expected a bandwidth of at least 1 B/s, found %g B/s", bw);
}

/* Directed links of one topology: 2^24, 16 per GPU at DT_MAX_GPUS; about 1 GB with routes. */
#define TOPO_MAX_LINKS (1 << 24)

/* ---- name -> index hash table (open addressing, power-of-two size) ---- */

typedef struct name_table {
    const char **key;
    int *val;
    size_t cap;
} name_table;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void nt_init(name_table *nt, size_t n)
{
    nt->cap = 16;
    while (nt->cap < 2 * n + 2) nt->cap *= 2;
    nt->key = dt_xcalloc(nt->cap, sizeof *nt->key);
    nt->val = dt_xmalloc(nt->cap * sizeof *nt->val);
}

static void nt_free(name_table *nt)
{
    free(nt->key);
    free(nt->val);
}

/* Insert; returns the existing value if present (and does not insert), else -1. */
static int nt_put(name_table *nt, const char *k, int v)
{
    size_t i = hash_str(k) & (nt->cap - 1);
    while (nt->key[i]) {
        if (strcmp(nt->key[i], k) == 0) return nt->val[i];
        i = (i + 1) & (nt->cap - 1);
    }
    nt->key[i] = k;
    nt->val[i] = v;
    return -1;
}

static int nt_get(const name_table *nt, const char *k)
{
    size_t i = hash_str(k) & (nt->cap - 1);
    while (nt->key[i]) {
        if (strcmp(nt->key[i], k) == 0) return nt->val[i];
        i = (i + 1) & (nt->cap - 1);
    }
    return -1;
}

/* ---- reachability ---- */

/* BFS from node s over relaying nodes; marks seen[]. */
static void bfs(const topo *t, int s, int *queue, unsigned char *seen, bool forward,
                const int *in_start, const int *in_links, bool fabric_only)
{
    int qh = 0, qt = 0;
    queue[qt++] = s;
    seen[s] = 1;
    while (qh < qt) {
        int v = queue[qh++];
        if (v != s && !topo_relays(t, v)) continue;
        if (fabric_only && !topo_relays(t, v)) continue;
        int a = forward ? t->out_start[v] : in_start[v];
        int b = forward ? t->out_start[v + 1] : in_start[v + 1];
        for (int i = a; i < b; i++) {
            int e = forward ? t->out_links[i] : in_links[i];
            int w = forward ? t->links[e].dst : t->links[e].src;
            if (seen[w]) continue;
            if (fabric_only && !topo_relays(t, w)) continue;
            seen[w] = 1;
            queue[qt++] = w;
        }
    }
}

/* Fast path: if one strongly connected set of relaying nodes (the fabric component of one of
 * GPU 0's neighbours) is entered by every GPU and left towards every GPU, every pair is
 * connected: 2 BFS per candidate. Otherwise fall back to one BFS per GPU, which also finds the
 * failing pair: O(G (N + E)), seconds for a 16,384-GPU graph that fails the fast path. */
int topo_check_connected(const topo *t, const char *file, const int *node_index_in_file,
                         dt_error *err)
{
    if (t->n_gpus < 2) return DT_OK;
    int n = t->n_nodes;
    int *in_start = dt_xcalloc((size_t)n + 1, sizeof *in_start);
    int *in_links = dt_xmalloc(((size_t)t->n_links + 1) * sizeof *in_links);
    for (int e = 0; e < t->n_links; e++) in_start[t->links[e].dst + 1]++;
    for (int v = 0; v < n; v++) in_start[v + 1] += in_start[v];
    int *fill = dt_xmalloc(((size_t)n + 1) * sizeof *fill);
    memcpy(fill, in_start, (size_t)n * sizeof *fill);
    for (int e = 0; e < t->n_links; e++) in_links[fill[t->links[e].dst]++] = e;
    free(fill);
    int *queue = dt_xmalloc(((size_t)n + 1) * sizeof *queue);
    unsigned char *fw = dt_xcalloc((size_t)n + 1, 1), *bw = dt_xcalloc((size_t)n + 1, 1);
    int rc = DT_OK;
    bool fast = false;
    /* Candidate roots: GPU 0 itself when GPUs relay, else its relaying neighbours (an NVSwitch
     * reaches only its own GPUs, the NIC behind it reaches the whole fabric: try each). */
    int g0 = t->gpu_node[0];
    int lo = t->out_start[g0], hi = t->out_start[g0 + 1];
    if (hi - lo > 8) hi = lo + 8;
    for (int k = t->gpu_forwarding ? lo - 1 : lo; k < hi && !fast; k++) {
        int root = k < lo ? g0 : t->links[t->out_links[k]].dst;
        if (!topo_relays(t, root)) continue;
        memset(fw, 0, (size_t)n);
        memset(bw, 0, (size_t)n);
        bfs(t, root, queue, fw, true, in_start, in_links, true);
        bfs(t, root, queue, bw, false, in_start, in_links, true);
        fast = true;
        for (int g = 0; g < t->n_gpus && fast; g++) {
            int v = t->gpu_node[g];
            if (fw[v] && bw[v]) continue; /* a relaying GPU inside the component */
            bool out = false, in = false;
            for (int i = t->out_start[v]; i < t->out_start[v + 1] && !out; i++) {
                int w = t->links[t->out_links[i]].dst;
                out = fw[w] && bw[w] && topo_relays(t, w);
            }
            for (int i = in_start[v]; i < in_start[v + 1] && !in; i++) {
                int w = t->links[in_links[i]].src;
                in = fw[w] && bw[w] && topo_relays(t, w);
            }
            fast = out && in;
        }
    }
    if (!fast) {
        for (int g = 0; g < t->n_gpus && rc == DT_OK; g++) {
            memset(fw, 0, (size_t)n);
            bfs(t, t->gpu_node[g], queue, fw, true, in_start, in_links, false);
            for (int h = 0; h < t->n_gpus; h++) {
                if (fw[t->gpu_node[h]]) continue;
                int v = t->gpu_node[g];
                char path[64];
                snprintf(path, sizeof path, "nodes[%d]",
                         node_index_in_file ? node_index_in_file[v] : v);
                rc = dt_error_set(err, DT_EINPUT, file, path,
                                  "GPU \"%s\" cannot reach GPU \"%s\"%s", t->nodes[v].name,
                                  t->nodes[t->gpu_node[h]].name,
                                  t->gpu_forwarding ? ""
                                                    : " (GPUs do not relay traffic unless "
                                                      "\"gpu_forwarding\" is true)");
                break;
            }
        }
    }
    free(in_start);
    free(in_links);
    free(queue);
    free(fw);
    free(bw);
    return rc;
}

/* ---- nodes and links ---- */

static const char *const kind_names[] = {"gpu", "switch", "nic", "host", NULL};
static const char *const top_keys[] = {"format", "version", "name", "description", "gpu",
                                       "switch_latency", "gpu_forwarding", "nodes", "links", NULL};
static const char *const node_keys[] = {"name", "kind", "host", "gpu", NULL};
static const char *const link_keys[] = {"src", "dst", "bandwidth", "latency", "count", "duplex",
                                        NULL};

/* Trailing number of a name ("gpu17" -> 17), -1 if none. */
static long trailing_number(const char *s)
{
    size_t n = strlen(s), i = n;
    while (i > 0 && isdigit((unsigned char)s[i - 1]) && n - i < 9) i--;
    return i < n ? strtol(s + i, NULL, 10) : -1;
}

/* Closest node name to s. Node names are often numbered (gpu0 ... gpu8), so many candidates
 * tie on edit distance; the tie goes to the nearest number: "gpu9" suggests "gpu8". */
static const char *suggest_node(const char *s, const cJSON *nodes)
{
    size_t limit = js_suggest_limit(s), best_d = 99;
    long want = trailing_number(s), best_gap = 0;
    const char *best = NULL;
    for (const cJSON *nd = nodes->child; nd; nd = nd->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(nd, "name");
        if (!cJSON_IsString(nm)) continue;
        size_t d = js_edit_distance(s, nm->valuestring);
        if (d > limit || d > best_d) continue;
        long num = trailing_number(nm->valuestring);
        long gap = want >= 0 && num >= 0 ? labs(num - want) : 0;
        if (d < best_d || gap < best_gap) {
            best = nm->valuestring;
            best_d = d;
            best_gap = gap;
        }
    }
    return best;
}

static int node_ref(const js_ctx *ctx, const cJSON *l, const char *path, const char *key,
                    const name_table *nt, const cJSON *nodes, int *out)
{
    const char *s = NULL;
    int rc = js_get_string(ctx, l, path, key, true, &s);
    if (rc) return rc;
    int v = nt_get(nt, s);
    if (v >= 0) {
        *out = v;
        return DT_OK;
    }
    /* Unknown: suggest the closest node name. */
    const char *hint = suggest_node(s, nodes);
    if (hint) rc = js_fail(ctx, path, key, "unknown node \"%s\" (did you mean \"%s\"?)", s, hint);
    else rc = js_fail(ctx, path, key, "unknown node \"%s\"", s);
    return rc;
}

static int load_graph(const js_ctx *ctx, const cJSON *v, const char *path, topo **out)
{
    char sub[JS_PATH_MAX], item[JS_PATH_MAX], d[96];
    int rc = js_check_keys(ctx, v, path, top_keys);
    if (rc) return rc;
    const char *fmt = NULL;
    if ((rc = js_get_string(ctx, v, path, "format", false, &fmt))) return rc;
    if (fmt && strcmp(fmt, TOPO_FORMAT) != 0)
        return js_fail(ctx, path, "format", "expected \"%s\", found \"%s\"", TOPO_FORMAT, fmt);
    long long version = 1;
    if ((rc = js_get_int(ctx, v, path, "version", false, 1, 1000000, &version))) return rc;
    if (version != 1)
        return js_fail(ctx, path, "version", "this dtsim reads topology format version 1, found %lld",
                       version);
    const char *name = "topology", *desc = NULL;
    if ((rc = js_get_string(ctx, v, path, "name", false, &name))) return rc;
    if ((rc = js_get_string(ctx, v, path, "description", false, &desc))) return rc;
    gpu_spec def;
    dt_error tmp;
    DT_ASSERT(gpu_preset(TOPO_DEFAULT_GPU, &def, &tmp) == DT_OK);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(v, "gpu");
    if (g && (rc = gpu_spec_from_json(ctx, g, js_path_key(sub, path, "gpu"), &def))) return rc;
    sim_time_t swlat = 0;
    if ((rc = js_get_time(ctx, v, path, "switch_latency", false, &swlat))) return rc;
    if (swlat >= SIM_S)
        return js_fail(ctx, path, "switch_latency", "expected a switch latency below 1 s");
    bool fwd = true;
    if ((rc = js_get_bool(ctx, v, path, "gpu_forwarding", false, &fwd))) return rc;

    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(v, "nodes");
    const cJSON *links = cJSON_GetObjectItemCaseSensitive(v, "links");
    if (!nodes) return js_fail(ctx, path, "nodes", "missing required key");
    if ((rc = js_expect_array(ctx, nodes, js_path_key(sub, path, "nodes")))) return rc;
    if (!links) return js_fail(ctx, path, "links", "missing required key");
    char links_path[JS_PATH_MAX];
    js_path_key(links_path, path, "links");
    if ((rc = js_expect_array(ctx, links, links_path))) return rc;
    int n_nodes = cJSON_GetArraySize(nodes);
    if (n_nodes > TOPO_MAX_NODES) return js_fail(ctx, sub, NULL, "more than %d nodes", TOPO_MAX_NODES);

    /* Pass 0: GPUs counted before any node is built. Each GPU node holds its own gpu_spec
     * (2.2 KB with its compute tables): 262,144 of them are 600 MB, so the count is checked
     * against DT_MAX_GPUS and the memory budget first. */
    {
        size_t n_gpu = 0;
        int k = 0;
        for (const cJSON *nd = nodes->child; nd; nd = nd->next, k++) {
            const cJSON *kd = cJSON_IsObject(nd) ? cJSON_GetObjectItemCaseSensitive(nd, "kind") : NULL;
            if (!cJSON_IsString(kd) || strcmp(kd->valuestring, "gpu")) continue;
            if (++n_gpu > DT_MAX_GPUS)
                return js_fail(ctx, js_path_index(item, sub, k), NULL,
                               "more than %d GPUs (dtsim's limit for one topology)", DT_MAX_GPUS);
        }
        /* Directed links likewise: "count" (up to 4,096) and "duplex" multiply an entry, so a
         * small file could ask for billions. Malformed entries count 1 here and are reported
         * by pass 2 with their path. */
        double n_dir = 0;
        k = 0;
        for (const cJSON *l = links->child; l; l = l->next, k++) {
            const cJSON *cn = cJSON_IsObject(l) ? cJSON_GetObjectItemCaseSensitive(l, "count") : NULL;
            const cJSON *dx = cJSON_IsObject(l) ? cJSON_GetObjectItemCaseSensitive(l, "duplex") : NULL;
            double c = cJSON_IsNumber(cn) && cn->valuedouble >= 1 && cn->valuedouble <= 4096
                           ? floor(cn->valuedouble) : 1;
            n_dir += c * (cJSON_IsFalse(dx) ? 1 : 2);
            if (n_dir > TOPO_MAX_LINKS)
                return js_fail(ctx, js_path_index(item, links_path, k), NULL,
                               "more than %d directed links (dtsim's limit for one topology; "
                               "\"count\" and \"duplex\" multiply an entry)", TOPO_MAX_LINKS);
        }
        rc = dt_check_memory((double)n_gpu * (sizeof(gpu_spec) + 400.0) + n_dir * 100.0,
                             "a topology of this size", ctx->file, sub, ctx->err);
        if (rc) return rc;
    }
    /* Pass 1: names, kinds, duplicates. */
    name_table nt, hosts;
    nt_init(&nt, (size_t)n_nodes);
    nt_init(&hosts, (size_t)n_nodes);
    topo_builder b;
    tb_begin(&b, name);
    int i = 0;
    int n_gpu_nodes = 0;
    for (const cJSON *nd = nodes->child; nd; nd = nd->next, i++) {
        js_path_index(item, sub, i);
        if ((rc = js_expect_object(ctx, nd, item)) || (rc = js_check_keys(ctx, nd, item, node_keys)))
            goto fail;
        const char *nm = NULL, *host = NULL;
        int kind = 0;
        if ((rc = js_get_string(ctx, nd, item, "name", true, &nm))) goto fail;
        if (!nm[0] || strlen(nm) > 200) {
            rc = js_fail(ctx, item, "name", "expected a name of 1 to 200 characters, found %s",
                         js_describe(cJSON_GetObjectItemCaseSensitive(nd, "name"), d, sizeof d));
            goto fail;
        }
        int prev = nt_put(&nt, nm, i);
        if (prev >= 0) {
            rc = js_fail(ctx, item, "name", "duplicate node name \"%s\" (first used by nodes[%d])",
                         nm, prev);
            goto fail;
        }
        if ((rc = js_get_enum(ctx, nd, item, "kind", true, kind_names, &kind))) goto fail;
        if ((rc = js_get_string(ctx, nd, item, "host", false, &host))) goto fail;
        if (host && kind == TOPO_HOST) {
            rc = js_fail(ctx, item, "host", "a host node is its own host; remove \"host\"");
            goto fail;
        }
        if (host && !host[0]) {
            rc = js_fail(ctx, item, "host", "expected a host name, found \"\"");
            goto fail;
        }
        const char *hname = kind == TOPO_HOST ? nm : host;
        int hidx = -1;
        if (hname) {
            hidx = nt_get(&hosts, hname);
            if (hidx < 0) {
                hidx = tb_host(&b, hname);
                nt_put(&hosts, b.t->host_names[hidx], hidx);
            }
        }
        gpu_spec spec = def;
        const cJSON *ng = cJSON_GetObjectItemCaseSensitive(nd, "gpu");
        if (ng && kind != TOPO_GPU) {
            rc = js_fail(ctx, item, "gpu", "only nodes of kind \"gpu\" take a GPU spec");
            goto fail;
        }
        if (ng && (rc = gpu_spec_from_json(ctx, ng, js_path_key(d, item, "gpu"), &spec))) goto fail;
        if (kind == TOPO_GPU && n_gpu_nodes == DT_MAX_GPUS) {
            rc = js_fail(ctx, item, NULL, "more than %d GPUs (dtsim's limit for one topology)",
                         DT_MAX_GPUS);
            goto fail;
        }
        tb_node(&b, nm, (topo_node_kind)kind, hidx, kind == TOPO_GPU ? &spec : NULL);
        n_gpu_nodes += kind == TOPO_GPU;
    }
    /* The table's keys must point at storage that outlives it: re-point at the node copies. */
    for (size_t k = 0; k < nt.cap; k++)
        if (nt.key[k]) nt.key[k] = b.t->nodes[nt.val[k]].name;

    /* Pass 2: links. */
    i = 0;
    for (const cJSON *l = links->child; l; l = l->next, i++) {
        js_path_index(item, links_path, i);
        if ((rc = js_expect_object(ctx, l, item)) || (rc = js_check_keys(ctx, l, item, link_keys)))
            goto fail;
        int s = -1, t = -1;
        if ((rc = node_ref(ctx, l, item, "src", &nt, nodes, &s))) goto fail;
        if ((rc = node_ref(ctx, l, item, "dst", &nt, nodes, &t))) goto fail;
        if (s == t) {
            rc = js_fail(ctx, item, "dst", "self-loop: src and dst are both \"%s\"",
                         b.t->nodes[s].name);
            goto fail;
        }
        double bw = 0;
        sim_time_t lat = 0;
        long long count = 1;
        bool duplex = true;
        if ((rc = js_get_quantity(ctx, l, item, "bandwidth", UNIT_BANDWIDTH, true, true, &bw)) ||
            (rc = check_min_bw(ctx, item, "bandwidth", bw)) ||
            (rc = js_get_time(ctx, l, item, "latency", true, &lat)) ||
            (rc = js_get_int(ctx, l, item, "count", false, 1, 4096, &count)) ||
            (rc = js_get_bool(ctx, l, item, "duplex", false, &duplex)))
            goto fail;
        if (lat >= SIM_S) { /* documented: below 1 s (1 << 40 ps let 1.0 s through) */
            rc = js_fail(ctx, item, "latency", "expected a link latency below 1 s");
            goto fail;
        }
        /* Checked before the links are made: "count": 4096 on every entry multiplies a small
         * file into billions of links. */
        if ((long long)b.t->n_links + count * (duplex ? 2 : 1) > TOPO_MAX_LINKS) {
            rc = js_fail(ctx, item, NULL, "more than %d directed links (dtsim's limit for one "
                         "topology; \"count\" and \"duplex\" multiply an entry)", TOPO_MAX_LINKS);
            goto fail;
        }
        for (long long c = 0; c < count; c++) tb_link(&b, s, t, bw, lat, duplex);
    }
    nt_free(&nt);
    nt_free(&hosts);
    b.t->switch_latency = swlat;
    b.t->gpu_forwarding = fwd;
    b.t->gen.family = TOPO_FAMILY_FILE;
    topo *t = tb_finish(&b);
    if (n_gpu_nodes == 0) {
        topo_destroy(t);
        return js_fail(ctx, path, "nodes", "a topology needs at least one node of kind \"gpu\"");
    }
    /* Node indices equal file indices here (nodes are built in file order). */
    char where[2 * JS_PATH_MAX + 2];
    dt_error *err = ctx->err;
    if ((rc = topo_check_latency_range(t, ctx->file, "links", err)) ||
        (rc = topo_check_connected(t, ctx->file, NULL, err))) {
        /* Make the path relative to where the topology sits in its document. */
        if (err && path[0]) {
            snprintf(where, sizeof where, "%s.%s", path, err->path);
            size_t n = strlen(where);
            if (n >= sizeof err->path) n = sizeof err->path - 1;
            memcpy(err->path, where, n);
            err->path[n] = '\0';
        }
        topo_destroy(t);
        return rc;
    }
    *out = t;
    return DT_OK;
fail:
    nt_free(&nt);
    nt_free(&hosts);
    tb_abort(&b);
    return rc;
}

/* ---- inline generators ---- */

static const char *const gen_families[] = {"ring", "switch", "fat-tree", "torus", "dragonfly",
                                           "dgx", "geo", NULL};
static const char *const gen_keys[] = {"generator", "name", "gpus", "bandwidth", "latency",
                                       "switch_latency", "gpu", "tiers", "radix",
                                       "oversubscription", "dims", "groups", "routers",
                                       "terminals", "global_links", "nodes", "gpus_per_node",
                                       "nvlink", "nic", "nvlink_latency", "regions",
                                       "gpus_per_region", "wan", "wan_latency", NULL};

/* "4x4x4" or [4, 4, 4] */
static int parse_dims(const js_ctx *ctx, const cJSON *v, const char *path, topo_gen_params *p)
{
    char d[96];
    p->n_dims = 0;
    if (cJSON_IsArray(v)) {
        int i = 0;
        for (const cJSON *x = v->child; x; x = x->next, i++) {
            if (i >= 4 || !cJSON_IsNumber(x) || x->valuedouble != (int)x->valuedouble ||
                x->valuedouble < 1 || x->valuedouble > 65536)
                return js_fail(ctx, path, NULL,
                               "expected 1 to 4 extents from 1 to 65536, found %s at index %d",
                               js_describe(x, d, sizeof d), i);
            p->dims[p->n_dims++] = (int)x->valuedouble;
        }
    } else if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        while (*s) {
            char *end;
            long x = strtol(s, &end, 10);
            if (end == s || !isdigit((unsigned char)*s) || x < 1 || x > 65536 || p->n_dims >= 4 ||
                (*end && *end != 'x'))
                return js_fail(ctx, path, NULL,
                               "expected extents like \"4x4x4\" (1 to 4 of them, each 1 to 65536), "
                               "found %s", js_describe(v, d, sizeof d));
            p->dims[p->n_dims++] = (int)x;
            s = *end ? end + 1 : end;
            if (*end && !*s)
                return js_fail(ctx, path, NULL, "expected extents like \"4x4x4\", found %s",
                               js_describe(v, d, sizeof d));
        }
    } else {
        return js_fail(ctx, path, NULL, "expected extents like \"4x4x4\", found %s",
                       js_describe(v, d, sizeof d));
    }
    if (p->n_dims == 0) return js_fail(ctx, path, NULL, "expected at least one extent");
    return DT_OK;
}

static int get_count(const js_ctx *ctx, const cJSON *v, const char *path, const char *key, int *out)
{
    long long x = *out;
    int rc = js_get_int(ctx, v, path, key, false, 1, DT_MAX_GPUS, &x);
    if (rc == DT_OK) *out = (int)x;
    return rc;
}

/* One R x R matrix of quantities (unit u) at path.key: symmetric, diagonal ignored (null or any
 * value there), every off-diagonal entry a quantity. Fills m[r * R + q]. */
static int wan_matrix(const js_ctx *ctx, const char *path, const char *key, const cJSON *v, int R,
                      unit_kind u, double *m)
{
    char sub[JS_PATH_MAX], row[JS_PATH_MAX], d[96];
    js_path_key(sub, path, key);
    if (cJSON_GetArraySize(v) != R)
        return js_fail(ctx, sub, NULL, "expected %d rows (one per region), found %d", R,
                       cJSON_GetArraySize(v));
    int r = 0;
    for (const cJSON *x = v->child; x; x = x->next, r++) {
        js_path_index(row, sub, r);
        if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != R)
            return js_fail(ctx, row, NULL, "expected a row of %d entries, found %s", R,
                           js_describe(x, d, sizeof d));
        int q = 0;
        for (const cJSON *y = x->child; y; y = y->next, q++) {
            if (q == r) continue;
            char cell[JS_PATH_MAX];
            js_path_index(cell, row, q);
            double val;
            int rc = js_quantity_value(ctx, y, cell, u, u == UNIT_BANDWIDTH, &val);
            if (rc) return rc;
            if (u == UNIT_BANDWIDTH && (rc = check_min_bw(ctx, cell, NULL, val))) return rc;
            if (u == UNIT_TIME && !(val >= 0 && val < 1))
                return js_fail(ctx, cell, NULL, "expected a latency from 0 to below 1 s, found %s",
                               js_describe(y, d, sizeof d));
            m[r * R + q] = val;
        }
    }
    for (r = 0; r < R; r++)
        for (int q = r + 1; q < R; q++)
            if (m[r * R + q] != m[q * R + r]) {
                js_path_index(row, sub, q);
                char cell[JS_PATH_MAX];
                js_path_index(cell, row, r);
                return js_fail(ctx, cell, NULL,
                               "the matrix must be symmetric (one link per region pair): [%d][%d] "
                               "differs from [%d][%d]", q, r, r, q);
            }
    return DT_OK;
}

/* Per-pair wide-area figures of a geo topology: each region pair's link (region<r> to
 * region<q>, both directions) takes its matrix entry. The result is no longer what the
 * generator's flags regenerate: it becomes a file-family topology (its own nodes and links). */
static int wan_matrices(const js_ctx *ctx, const char *path, const cJSON *wan, const cJSON *lat,
                        topo *t)
{
    int R = t->gen.regions;
    double *bw = dt_xcalloc((size_t)R * R, sizeof *bw), *la = dt_xcalloc((size_t)R * R, sizeof *la);
    int rc = DT_OK;
    if (cJSON_IsArray(wan)) rc = wan_matrix(ctx, path, "wan", wan, R, UNIT_BANDWIDTH, bw);
    if (rc == DT_OK && cJSON_IsArray(lat)) rc = wan_matrix(ctx, path, "wan_latency", lat, R, UNIT_TIME, la);
    for (int l = 0; rc == DT_OK && l < t->n_links; l++) {
        int a = t->links[l].src, z = t->links[l].dst;
        if (a >= R || z >= R) continue; /* region switches are nodes 0..R-1 */
        if (cJSON_IsArray(wan)) t->links[l].bandwidth = bw[a * R + z];
        if (cJSON_IsArray(lat)) t->links[l].latency = (sim_time_t)llround(la[a * R + z] * 1e12);
    }
    free(bw);
    free(la);
    if (rc == DT_OK) t->gen.family = TOPO_FAMILY_FILE;
    return rc;
}

static int load_generator(const js_ctx *ctx, const cJSON *v, const char *path, topo **out)
{
    char sub[JS_PATH_MAX];
    int rc = js_check_keys(ctx, v, path, gen_keys);
    if (rc) return rc;
    int fam = 0;
    if ((rc = js_get_enum(ctx, v, path, "generator", true, gen_families, &fam))) return rc;
    topo_gen_params p;
    memset(&p, 0, sizeof p);
    p.family = (topo_family)(fam + 1);
    double x;
    if ((rc = get_count(ctx, v, path, "gpus", &p.gpus)) ||
        (rc = get_count(ctx, v, path, "tiers", &p.tiers)) ||
        (rc = get_count(ctx, v, path, "radix", &p.radix)) ||
        (rc = get_count(ctx, v, path, "groups", &p.df_groups)) ||
        (rc = get_count(ctx, v, path, "routers", &p.df_a)) ||
        (rc = get_count(ctx, v, path, "terminals", &p.df_p)) ||
        (rc = get_count(ctx, v, path, "global_links", &p.df_h)) ||
        (rc = get_count(ctx, v, path, "nodes", &p.nodes)) ||
        (rc = get_count(ctx, v, path, "gpus_per_node", &p.gpus_per_node)) ||
        (rc = get_count(ctx, v, path, "regions", &p.regions)) ||
        (rc = get_count(ctx, v, path, "gpus_per_region", &p.gpus_per_region)))
        return rc;
    const cJSON *wan = cJSON_GetObjectItemCaseSensitive(v, "wan");
    const cJSON *wan_lat = cJSON_GetObjectItemCaseSensitive(v, "wan_latency");
    if (p.family != TOPO_FAMILY_GEO && (wan || wan_lat || p.regions || p.gpus_per_region))
        return js_fail(ctx, path, wan ? "wan" : wan_lat ? "wan_latency" : p.regions ? "regions" : "gpus_per_region",
                       "only the geo generator has regions and wide-area links");
    if ((wan && !cJSON_IsArray(wan) &&
         (rc = js_get_quantity(ctx, v, path, "wan", UNIT_BANDWIDTH, false, true, &p.wan_bw))) ||
        (wan_lat && !cJSON_IsArray(wan_lat) &&
         (rc = js_get_time(ctx, v, path, "wan_latency", false, &p.wan_latency))))
        return rc;
    if (wan_lat && !cJSON_IsArray(wan_lat) && p.wan_latency == 0) p.wan_latency = TOPO_GEN_ZERO_LATENCY;
    if ((rc = js_get_quantity(ctx, v, path, "bandwidth", UNIT_BANDWIDTH, false, true, &p.bandwidth)) ||
        (rc = js_get_quantity(ctx, v, path, "nvlink", UNIT_BANDWIDTH, false, true, &p.nvlink_bw)) ||
        (rc = js_get_quantity(ctx, v, path, "nic", UNIT_BANDWIDTH, false, true, &p.nic_bw)) ||
        (rc = check_min_bw(ctx, path, "bandwidth", p.bandwidth)) ||
        (rc = check_min_bw(ctx, path, "nvlink", p.nvlink_bw)) ||
        (rc = check_min_bw(ctx, path, "nic", p.nic_bw)) ||
        (rc = check_min_bw(ctx, path, "wan", p.wan_bw)) ||
        (rc = js_get_time(ctx, v, path, "latency", false, &p.latency)) ||
        (rc = js_get_time(ctx, v, path, "switch_latency", false, &p.switch_latency)) ||
        (rc = js_get_time(ctx, v, path, "nvlink_latency", false, &p.nvlink_latency)))
        return rc;
    /* An explicit 0 means zero, not "the default" (see TOPO_GEN_ZERO_LATENCY). */
    {
        static const char *const lat_keys[] = {"latency", "switch_latency", "nvlink_latency"};
        sim_time_t *lat_vals[] = {&p.latency, &p.switch_latency, &p.nvlink_latency};
        for (int i = 0; i < 3; i++)
            if (*lat_vals[i] == 0 && cJSON_GetObjectItemCaseSensitive(v, lat_keys[i]))
                *lat_vals[i] = TOPO_GEN_ZERO_LATENCY;
    }
    x = 0;
    if ((rc = js_get_number(ctx, v, path, "oversubscription", false, 1, 1024, &x))) return rc;
    p.oversubscription = x;
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(v, "dims");
    if (dims && (rc = parse_dims(ctx, dims, js_path_key(sub, path, "dims"), &p))) return rc;
    gpu_spec spec;
    bool custom = false;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(v, "gpu");
    if (g) {
        if ((rc = gpu_spec_from_json(ctx, g, js_path_key(sub, path, "gpu"), &spec))) return rc;
        gpu_spec pre;
        dt_error tmp;
        if (gpu_preset(spec.name, &pre, &tmp) == DT_OK) {
            snprintf(p.gpu_preset, sizeof p.gpu_preset, "%s", spec.name);
            custom = memcmp(&pre, &spec, sizeof spec) != 0;
        } else {
            custom = true;
        }
        if (custom && (p.family == TOPO_FAMILY_DGX || p.family == TOPO_FAMILY_GEO) && p.nvlink_bw == 0 && spec.nvlink_bw > 0)
            p.nvlink_bw = spec.nvlink_bw;
    }
    dt_error gerr;
    dt_error_clear(&gerr);
    if ((rc = topo_generate(&p, out, &gerr))) {
        int r2 = js_fail(ctx, path, gerr.path[0] ? gerr.path : NULL, "%s", gerr.msg);
        if (rc == DT_ENOMEM && ctx->err) ctx->err->code = rc; /* over budget: not bad input */
        return rc == DT_ENOMEM ? rc : r2;
    }
    if (custom)
        for (int i = 0; i < (*out)->n_gpus; i++) (*out)->gpus[i] = spec;
    const char *name = NULL;
    if ((rc = js_get_string(ctx, v, path, "name", false, &name))) {
        topo_destroy(*out);
        *out = NULL;
        return rc;
    }
    if (name) {
        free((*out)->name);
        (*out)->name = dt_xstrdup(name);
    }
    if ((cJSON_IsArray(wan) || cJSON_IsArray(wan_lat)) &&
        (rc = wan_matrices(ctx, path, wan, wan_lat, *out))) {
        topo_destroy(*out);
        *out = NULL;
        return rc;
    }
    return DT_OK;
}

int topo_from_json(const js_ctx *ctx, const cJSON *v, const char *path, const char *base_dir,
                   topo **out)
{
    char d[96];
    *out = NULL;
    if (cJSON_IsString(v)) {
        const char *f = v->valuestring;
        /* "" would resolve to the scenario's own directory ("Is a directory") */
        if (!f[0])
            return js_fail(ctx, path[0] ? path : "(top level)", NULL,
                           "expected a topology file name or an object, found \"\"");
        char *full = NULL;
        if (f[0] != '/' && base_dir && base_dir[0]) {
            size_t n = strlen(base_dir) + strlen(f) + 2;
            full = dt_xmalloc(n);
            snprintf(full, n, "%s/%s", base_dir, f);
        }
        int rc = topo_load_file(full ? full : f, out, ctx->err);
        free(full);
        if (rc == DT_EIO) {
            /* Say where the file name came from. */
            char msg[DT_ERR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", ctx->err ? ctx->err->msg : "");
            return js_fail(ctx, path, NULL, "topology file \"%s\": %s", f, msg);
        }
        return rc;
    }
    if (!cJSON_IsObject(v))
        return js_fail(ctx, path[0] ? path : "(top level)", NULL,
                       "expected a topology (an object with nodes and links, an object with "
                       "\"generator\", or a file name), found %s",
                       js_describe(v, d, sizeof d));
    if (cJSON_GetObjectItemCaseSensitive(v, "generator")) return load_generator(ctx, v, path, out);
    return load_graph(ctx, v, path, out);
}

int topo_load_file(const char *filename, topo **out, dt_error *err)
{
    cJSON *root = NULL;
    *out = NULL;
    int rc = js_parse_file(filename, &root, err);
    if (rc) return rc;
    char *dir = dt_xstrdup(filename);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else strcpy(dir, ".");
    js_ctx ctx = {.file = filename, .err = err};
    if (cJSON_IsString(root))
        rc = js_fail(&ctx, "(top level)", NULL, "a topology file must hold an object, not a file name");
    else
        rc = topo_from_json(&ctx, root, "", dir, out);
    free(dir);
    cJSON_Delete(root);
    return rc;
}
