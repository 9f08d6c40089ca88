/* topo_internal.h - what the topo_*.c files share and nobody else uses.
 *
 * A topology is built in one pass by a topo_builder (nodes, hosts, physical links), then frozen
 * by tb_finish(), which lays out the CSR adjacency and the GPU index arrays. After that the
 * struct is read-only except for the route cache, which topo_route.c owns.
 */
#ifndef DTSIM_TOPO_INTERNAL_H
#define DTSIM_TOPO_INTERNAL_H

#include "dtsim/topo.h"

/* topo_gen_params treats 0 as "use the default"; a generator spec that says "latency": 0 (or
 * "0 s") means zero, so the loader stores this sentinel and topo_generate's resolve() turns it
 * into 0. Private: only JSON specs (and so `dtsim topo gen`) can ask for an explicit zero. */
#define TOPO_GEN_ZERO_LATENCY ((sim_time_t)-1)

typedef struct topo_builder {
    topo *t;
    int cap_nodes, cap_links, cap_hosts, cap_gpus;
} topo_builder;

/* Start an empty topology named name (copied). */
void tb_begin(topo_builder *b, const char *name);
/* Add a host (box) and return its index. */
int tb_host(topo_builder *b, const char *name);
/* Add a node; name is copied; spec is required for TOPO_GPU (copied) and ignored otherwise.
 * Returns the node index. Names are not checked for uniqueness here (the loader does that). */
int tb_node(topo_builder *b, const char *name, topo_node_kind kind, int host, const gpu_spec *spec);
/* One physical link: a directed link src->dst, plus dst->src when duplex. Returns the index of
 * the src->dst direction. */
int tb_link(topo_builder *b, int src, int dst, double bandwidth, sim_time_t latency, bool duplex);
/* Freeze: CSR adjacency, gpu_node. Returns the topology (owned by the caller). */
topo *tb_finish(topo_builder *b);
/* Abandon a half-built topology. */
void tb_abort(topo_builder *b);

/* Routing cache set-up (called by tb_finish, so that concurrent topo_route() calls never
 * race to create it) and teardown (topo_route.c). */
void topo_route_cache_init(topo *t);
void topo_route_cache_free(topo *t);
/* Bytes the route cache holds now (distance maps + paths), for benchmarks and docs. */
size_t topo_route_cache_bytes(const topo *t);
/* Budget for distance maps (default 256 MB); over it, maps are dropped at the next call. */
void topo_route_cache_set_budget(topo *t, size_t bytes);
/* Forget every cached distance and path, e.g. after changing link latencies or bandwidths in
 * place (calibration does): later routes are recomputed. Paths returned earlier stay readable
 * until topo_destroy. */
void topo_route_cache_flush(topo *t);

/* DT_EINPUT (at file/path) when latencies are so large that route costs could overflow. */
int topo_check_latency_range(const topo *t, const char *file, const char *path, dt_error *err);

/* True if node v may relay traffic (be an intermediate hop of a GPU-to-GPU route). */
static inline bool topo_relays(const topo *t, int v)
{
    return t->nodes[v].kind != TOPO_GPU || t->gpu_forwarding;
}

/* Check that every GPU can reach every other GPU under the relay rule; on failure fill err
 * with the pair (path nodes[i] of the GPU that cannot reach the other). file may be NULL. */
int topo_check_connected(const topo *t, const char *file, const int *node_index_in_file,
                         dt_error *err);

/* The name topo_generate() gives (e.g. "fat-tree-128"). */
void topo_gen_default_name(const topo_gen_params *p, char *name, size_t size);

/* Down and up ports of a leaf for the generator's radix and oversubscription. */
void topo_leaf_ports(const topo_gen_params *p, int *down, int *up);

/* Largest route hop count over all GPU pairs, from the route cache's distances (topo_route.c). */
int topo_route_diameter(topo *t);

/* Generic metrics (topo_info.c), exposed for tests that compare them with closed forms. */
int topo_diameter_search(const topo *t);
double topo_bisection_maxflow(const topo *t);

#endif
