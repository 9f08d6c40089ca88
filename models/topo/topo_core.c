/* topo_core.c - building, freezing and destroying topology structs; family names.
 *
 * Every way of making a topology (file loader, generators) goes through the builder, so the
 * invariants live in one place: directed links in pairs for duplex links (reverse set both
 * ways), CSR adjacency in link order (which makes routing deterministic), GPU indices in node
 * order.
 */
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

static const char *const family_names[] = {"file", "ring", "switch", "fat-tree", "torus",
                                           "dragonfly", "dgx", "geo"};

const char *topo_family_name(topo_family f)
{
    if ((int)f < 0 || (size_t)f >= sizeof family_names / sizeof family_names[0]) return "?";
    return family_names[f];
}

void tb_begin(topo_builder *b, const char *name)
{
    memset(b, 0, sizeof *b);
    b->t = dt_xcalloc(1, sizeof *b->t);
    b->t->name = dt_xstrdup(name ? name : "unnamed");
    b->t->gpu_forwarding = true;
}

int tb_host(topo_builder *b, const char *name)
{
    topo *t = b->t;
    if (t->n_hosts == b->cap_hosts) {
        b->cap_hosts = b->cap_hosts ? 2 * b->cap_hosts : 16;
        t->host_names = dt_xrealloc(t->host_names, (size_t)b->cap_hosts * sizeof *t->host_names);
    }
    t->host_names[t->n_hosts] = dt_xstrdup(name);
    return t->n_hosts++;
}

int tb_node(topo_builder *b, const char *name, topo_node_kind kind, int host, const gpu_spec *spec)
{
    topo *t = b->t;
    if (t->n_nodes == b->cap_nodes) {
        b->cap_nodes = b->cap_nodes ? 2 * b->cap_nodes : 64;
        t->nodes = dt_xrealloc(t->nodes, (size_t)b->cap_nodes * sizeof *t->nodes);
    }
    topo_node *n = &t->nodes[t->n_nodes];
    n->name = dt_xstrdup(name);
    n->kind = kind;
    n->host = host;
    n->gpu = -1;
    if (kind == TOPO_GPU) {
        DT_ASSERT(spec != NULL);
        if (t->n_gpus == b->cap_gpus) {
            b->cap_gpus = b->cap_gpus ? 2 * b->cap_gpus : 64;
            t->gpus = dt_xrealloc(t->gpus, (size_t)b->cap_gpus * sizeof *t->gpus);
        }
        t->gpus[t->n_gpus] = *spec;
        n->gpu = t->n_gpus++;
    }
    return t->n_nodes++;
}

static int add_directed(topo_builder *b, int src, int dst, double bw, sim_time_t lat)
{
    topo *t = b->t;
    if (t->n_links == b->cap_links) {
        b->cap_links = b->cap_links ? 2 * b->cap_links : 128;
        t->links = dt_xrealloc(t->links, (size_t)b->cap_links * sizeof *t->links);
    }
    t->links[t->n_links] = (topo_link){.src = src, .dst = dst, .bandwidth = bw, .latency = lat,
                                       .reverse = -1};
    return t->n_links++;
}

int tb_link(topo_builder *b, int src, int dst, double bandwidth, sim_time_t latency, bool duplex)
{
    DT_ASSERT(src >= 0 && src < b->t->n_nodes && dst >= 0 && dst < b->t->n_nodes);
    int fwd = add_directed(b, src, dst, bandwidth, latency);
    if (duplex) {
        int rev = add_directed(b, dst, src, bandwidth, latency);
        b->t->links[fwd].reverse = rev;
        b->t->links[rev].reverse = fwd;
    }
    return fwd;
}

topo *tb_finish(topo_builder *b)
{
    topo *t = b->t;
    t->out_start = dt_xcalloc((size_t)t->n_nodes + 1, sizeof *t->out_start);
    t->out_links = dt_xmalloc(((size_t)t->n_links + 1) * sizeof *t->out_links);
    for (int e = 0; e < t->n_links; e++) t->out_start[t->links[e].src + 1]++;
    for (int v = 0; v < t->n_nodes; v++) t->out_start[v + 1] += t->out_start[v];
    int *fill = dt_xmalloc(((size_t)t->n_nodes + 1) * sizeof *fill);
    memcpy(fill, t->out_start, (size_t)t->n_nodes * sizeof *fill);
    for (int e = 0; e < t->n_links; e++) t->out_links[fill[t->links[e].src]++] = e;
    free(fill);
    t->gpu_node = dt_xmalloc(((size_t)t->n_gpus + 1) * sizeof *t->gpu_node);
    for (int v = 0; v < t->n_nodes; v++)
        if (t->nodes[v].kind == TOPO_GPU) t->gpu_node[t->nodes[v].gpu] = v;
    topo_route_cache_init(t);
    b->t = NULL;
    return t;
}

void tb_abort(topo_builder *b)
{
    topo_destroy(b->t);
    b->t = NULL;
}

void topo_destroy(topo *t)
{
    if (!t) return;
    topo_route_cache_free(t);
    for (int v = 0; v < t->n_nodes; v++) free(t->nodes[v].name);
    for (int h = 0; h < t->n_hosts; h++) free(t->host_names[h]);
    free(t->host_names);
    free(t->nodes);
    free(t->links);
    free(t->out_start);
    free(t->out_links);
    free(t->gpu_node);
    free(t->gpus);
    free(t->name);
    free(t);
}

int topo_check_latency_range(const topo *t, const char *file, const char *path, dt_error *err)
{
    /* Route costs pack latency into 48 bits of a key (topo_route.c): bound any simple path by
     * n_nodes x (largest link latency + switch latency) and keep that below 2^46 ps (~70 s). */
    sim_time_t max_lat = 0;
    for (int e = 0; e < t->n_links; e++)
        if (t->links[e].latency > max_lat) max_lat = t->links[e].latency;
    double bound = ((double)max_lat + (double)t->switch_latency) * (double)t->n_nodes;
    if (bound < (double)((sim_time_t)1 << 46)) return DT_OK;
    return dt_error_set(err, DT_EINPUT, file, path,
                        "latencies too large: with %d nodes, a largest link latency of %.3g s and "
                        "a switch latency of %.3g s a route could exceed 70 s",
                        t->n_nodes, sim_time_to_s(max_lat), sim_time_to_s(t->switch_latency));
}
