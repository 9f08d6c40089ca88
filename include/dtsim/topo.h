/* topo.h - the cluster's wiring: nodes (GPUs, switches, NICs, hosts), directed links, and
 * routes between GPUs.
 *
 * A topology comes from a JSON file (format v1, docs/formats.md), from inline JSON inside a
 * scenario, or from a generator (ring, switch, fat-tree, torus, dragonfly, dgx). The struct is
 * read-only to everyone but this module; topo_destroy() frees it and everything borrowed from
 * it (names, routes).
 *
 * Links are directed: a full-duplex link in a file becomes two entries here, one per direction,
 * each with the stated per-direction bandwidth (adjacent, `reverse` pointing at each other).
 * `count` parallel links become `count` separate directed links so that equal-cost multipath
 * can spread flows over them.
 *
 * Threads: after creation the struct is read-only except the route cache, which has its own
 * lock, so several threads may call topo_route() on one topology.
 */
#ifndef DTSIM_TOPO_H
#define DTSIM_TOPO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dtsim/error.h"
#include "dtsim/gpu.h"
#include "dtsim/json.h"
#include "dtsim/simtime.h"

typedef enum topo_node_kind {
    TOPO_GPU,
    TOPO_SWITCH,
    TOPO_NIC,
    TOPO_HOST
} topo_node_kind;

typedef struct topo_node {
    char *name;
    topo_node_kind kind;
    int gpu;  /* index into gpu arrays for TOPO_GPU, else -1 */
    int host; /* host/box index (a DGX, a server) the node belongs to, -1 if none */
} topo_node;

typedef struct topo_link {
    int src, dst;         /* node indices */
    double bandwidth;     /* B/s, this direction */
    sim_time_t latency;   /* propagation + serialisation start, ps */
    int reverse;          /* index of the opposite direction, -1 if simplex */
} topo_link;

typedef enum topo_family {
    TOPO_FAMILY_FILE, /* arbitrary graph from a file */
    TOPO_FAMILY_RING,
    TOPO_FAMILY_SWITCH,
    TOPO_FAMILY_FAT_TREE,
    TOPO_FAMILY_TORUS,
    TOPO_FAMILY_DRAGONFLY,
    TOPO_FAMILY_DGX,
    TOPO_FAMILY_GEO
} topo_family;

/* Generator parameters (CLI options without dashes, '-' as '_'). Zero = default. */
typedef struct topo_gen_params {
    topo_family family;
    int gpus;                 /* total GPUs (ring, switch, fat-tree, dragonfly) */
    double bandwidth;         /* B/s per link direction (network links) */
    sim_time_t latency;       /* per link */
    char gpu_preset[GPU_NAME_MAX];
    /* fat-tree */
    int tiers;                /* 2 or 3 */
    int radix;                /* switch ports */
    double oversubscription;  /* down:up ratio at the leaf, >= 1 */
    /* torus */
    int dims[4];
    int n_dims;
    /* dragonfly: a routers per group, p terminals per router, h global links per router */
    int df_a, df_p, df_h;
    /* dgx */
    int nodes, gpus_per_node;
    double nvlink_bw, nic_bw;
    sim_time_t nvlink_latency;
    sim_time_t switch_latency;
    int df_groups;            /* dragonfly groups (alternative to gpus) */
    /* geo: regions joined by wide-area links; nodes, gpus_per_node, nvlink_bw and nic_bw as dgx
     * (per region), latency on the region's LAN links */
    int regions, gpus_per_region;
    double wan_bw;            /* B/s per direction of each region pair's link */
    sim_time_t wan_latency;   /* one way, per region pair */
} topo_gen_params;

typedef struct topo topo;
struct topo {
    char *name;
    topo_node *nodes;
    int n_nodes;
    topo_link *links;
    int n_links;
    int *out_start;           /* CSR: links leaving node v are out_links[out_start[v] .. out_start[v+1]) */
    int *out_links;
    int n_gpus;
    int *gpu_node;            /* gpu index -> node index */
    gpu_spec *gpus;           /* gpu index -> spec */
    int n_hosts;
    char **host_names;        /* host index -> name */
    bool gpu_forwarding;      /* GPUs relay traffic for others (ring, torus); false: GPUs are
                                 endpoints only, routes never pass through a third GPU */
    sim_time_t switch_latency; /* forwarding delay added at each switch traversed */
    topo_gen_params gen;      /* family TOPO_FAMILY_FILE unless generated */
    void *route_cache;        /* private to the routing module */
};

/* Defaults the generators use for a zero field (also documented in docs/formats.md). */
#define TOPO_DEFAULT_BANDWIDTH 50e9             /* 400 Gb/s per direction */
#define TOPO_DEFAULT_LATENCY (500 * SIM_NS)     /* per link */
#define TOPO_DEFAULT_SWITCH_LATENCY (200 * SIM_NS)
#define TOPO_DEFAULT_NVLINK_LATENCY (100 * SIM_NS)
#define TOPO_DEFAULT_GPU "H100-SXM"
#define TOPO_DEFAULT_RADIX 64
#define TOPO_DEFAULT_WAN_BANDWIDTH 12.5e6       /* 100 Mb/s per region pair and direction */
#define TOPO_DEFAULT_WAN_LATENCY (50 * SIM_MS)  /* one way */
#define TOPO_DEFAULT_LAN_BANDWIDTH 12.5e9       /* 100 Gb/s per GPU inside a region */

/* Load a topology file. On success *out is caller-owned (topo_destroy). */
int topo_load_file(const char *filename, topo **out, dt_error *err);
/* From JSON value v at path: an object with nodes/links, an object with "generator", or a
 * string naming a file (resolved relative to base_dir). */
int topo_from_json(const js_ctx *ctx, const cJSON *v, const char *path, const char *base_dir,
                   topo **out);
int topo_generate(const topo_gen_params *params, topo **out, dt_error *err);
void topo_destroy(topo *t);

/* Serialise (format v1) to f. Generated topologies write their explicit nodes and links, with
 * the regenerating command as "description". Reading the output back gives an identical
 * topology (family TOPO_FAMILY_FILE). */
int topo_write_json(const topo *t, FILE *f, dt_error *err);

/* Route from GPU src to GPU dst: *links is an array of *n_links directed link indices, borrowed
 * from t (valid until topo_destroy). Shortest by total latency (links plus switch_latency per
 * switch entered), then hops; intermediate GPUs only when t->gpu_forwarding. Among equal-cost
 * paths the choice is per hop, a deterministic function of flow_hash reduced to one of 64
 * variants (so at most 64 distinct paths per GPU pair are ever stored). src == dst gives 0
 * links. DT_EINPUT for GPU indices out of range (or no path, which loading rules out).
 * Cost: the first route towards a new leaf switch runs one Dijkstra; later ones are a walk of a
 * few hops (docs/architecture.md, "Topology and routing"). */
int topo_route(topo *t, int src_gpu, int dst_gpu, uint64_t flow_hash, const int **links,
               int *n_links);
/* As topo_route, for a caller that keeps the routes it asks for (the network model's route
 * store): the path is stored (valid until topo_destroy) but not entered in the route table,
 * which saves the table's memory and upkeep (64 MB and a rehash of a million entries for the
 * pairs of a direct all-reduce on 1,024 GPUs). A path already in the table comes from there;
 * asking again for an unlisted one stores it again. */
int topo_route_unlisted(topo *t, int src_gpu, int dst_gpu, uint64_t flow_hash,
                        const int **links, int *n_links);

/* Counts, diameter (largest hop count of a GPU-to-GPU route) and bisection bandwidth: closed
 * forms for generated topologies where exact, else one Dijkstra per GPU and a max-flow between
 * the GPU halves in index order (docs/formats.md). */
/* One tier of a layered fabric: the links from the nodes `level` hops from the nearest GPU up to
 * those level + 1 hops away, counting only nodes that lead on to the top of the fabric (an
 * NVSwitch only GPUs reach is not a tier). Found by breadth-first search from every GPU at
 * once, not through GPUs; a switchless ring or torus has none. */
#define TOPO_MAX_TIERS 8
typedef struct topo_tier {
    int level;               /* 0: GPUs' own links up */
    char from[24], to[24];   /* node names of the two levels without digits: "nic", "leaf" */
    int n_links;             /* directed links up */
    double up_bw;            /* B/s, summed over them */
    double bisection;        /* up_bw / 2: what crosses this tier between two halves whose
                                split follows its subtrees (balanced, one direction) */
    double oversubscription; /* bandwidth into this tier's lower nodes from below / up_bw (the
                                down:up ratio; 0 for level 0, which has nothing below) */
    double worst;            /* the same ratio of its most oversubscribed node (a full leaf
                                where the last one is partly filled) */
} topo_tier;

#define TOPO_INFO_GPU_TYPES 8
/* Largest GPUs x (nodes + links) for which topo_get_info runs the exact diameter (a shortest-
 * path search per GPU) and bisection (max-flow) when no closed form applies: 32,768 GPUs on
 * one switch (3.2e9) take 13.5 s, 16,384 (8e8) 4 s; the bound is about 17 s. */
#define TOPO_INFO_MAX_WORK 4e9
typedef struct topo_info {
    int n_gpus, n_switches, n_nics, n_hosts, n_links; /* n_links counts directed links */
    int diameter_hops;                                /* max over GPU pairs of route hops */
    double bisection_bw;                              /* B/s, one direction */
    bool bisection_exact;                             /* closed form (generated) vs method */
    bool metrics_skipped; /* no closed form and the exact methods would cost more than
                             TOPO_INFO_MAX_WORK: diameter_hops is -1, bisection_bw 0 */
    int n_tiers;
    topo_tier tiers[TOPO_MAX_TIERS];
    double tier_bisection;        /* min over tiers of their bisection: the bound they set */
    double asked_oversubscription;/* the generator's oversubscription (fat-tree, dgx), else 0 */
    int radix, leaf_down, leaf_up;/* with it: switch radix and how a leaf's ports were split */
    /* GPUs by type (spec name), in order of first appearance; more than TOPO_INFO_GPU_TYPES
     * names: the rest count in the sums only. Peaks at bf16 (fp16, then tf32 where it lacks
     * it); sums over every GPU, each with its own spec. */
    int n_gpu_types;
    struct topo_gpu_type {
        char name[GPU_NAME_MAX];
        int count;
        double peak_bf16, hbm_bytes, cost_per_hour; /* one GPU's */
    } gpu_types[TOPO_INFO_GPU_TYPES];
    double sum_peak_bf16, sum_hbm_bytes, sum_cost_per_hour;
} topo_info;

int topo_get_info(topo *t, topo_info *out, dt_error *err);

const char *topo_family_name(topo_family f);

/* Maximum flow (B/s) from the nodes src[0..n_src) to the nodes dst[0..n_dst) over the links'
 * bandwidths; a GPU that does not relay (gpu_forwarding false) carries flow only as one of the
 * sources or sinks. Dinic's algorithm, O(V^2 E) worst case; for storage and checkpoint rates
 * (goodput.h), computed once per run. */
double topo_maxflow(const topo *t, const int *src, int n_src, const int *dst, int n_dst);

/* Apply the fitted figures calibration c covers (calib.h) to topology t, per scope:
 *  - an intra-host fit (every machine-local calibration): latency and bandwidth of the links that
 *    join two GPUs of the same host (directly or through a switch inside the host; in a topology
 *    without hosts, every link on a GPU-to-GPU path of GPU-GPU or GPU-switch links), the
 *    latency split evenly over the hops of that path;
 *  - an inter-host fit (a measurement that spanned hosts): bandwidth of every fabric link (links
 *    to NICs, to switches outside the hosts, between hosts) and a latency per fabric hop such
 *    that the route where a ring in GPU order first crosses between hosts costs the fit's
 *    per-hop latency (needs 2 or more hosts);
 * both through cal_link_figures. The GPUs on covered paths get reduction bandwidth 0 (folded into
 * the link bandwidth: the measurement includes the reductions). The measured compute tables of
 * the "compute" section, if any, go to every GPU's spec. Writes a one-line description of what
 * was applied into note. DT_EINPUT if the calibration has no collective fit or nothing in the
 * topology is covered. Flushes the route cache (routes are shortest by latency). */
struct cal_result;
int topo_apply_calibration(topo *t, const struct cal_result *c, char *note, size_t note_size,
                           dt_error *err);
/* The same with the fits chosen by name: `choose` is NULL or "" (the defaults of
 * cal_link_fit_scope), or fit names separated by commas ("mpi_rs_ag", "nccl,nccltests_all_reduce
 * _inter"), each replacing the default of its own scope; a name the file lacks, or a top-k fit, is
 * DT_EINPUT naming the fits it has. Every fit applied passes the quality gates of calib.h: R^2
 * below CAL_R2_REFUSE is DT_EINPUT (file, "fits[i].r2", the R^2 and what to do), below
 * CAL_R2_WARN adds "warning: ..." to note. */
int topo_apply_calibration_fits(topo *t, const struct cal_result *c, const char *choose, char *note,
                                size_t note_size, dt_error *err);

/* Collective traffic does not reach a link's line rate: NCCL's protocols spend part of it on
 * flags and chunk headers. Achieved fraction per link class as NCCL's maintainer states it
 * (docs/collectives.md, "Link efficiency"): NVLink about 20 % protocol overhead (H100: ~370 of
 * 450 GB/s bus bandwidth, NVIDIA/nccl-tests#212; A800: 160 of 200 GB/s, NVIDIA/nccl#412), a
 * network NIC 24 GB/s per 200 Gb/s (NVIDIA/nccl#412; 12.2 GB/s per 100 Gb/s, nccl-tests#29). */
#define TOPO_NCCL_NVLINK_EFFICIENCY 0.80
#define TOPO_NCCL_NETWORK_EFFICIENCY 0.96

/* Scale link bandwidths by class: links on an intra-host GPU-to-GPU path (a GPU-GPU link, or
 * GPU-switch-GPU inside one host: NVLink/NVSwitch, the links a calibration covers) by nvlink,
 * every other link (NICs, the network) by network. Fractions in (0, 1]; 1 and 1 change nothing.
 * Latencies and routes are unchanged. */
void topo_apply_link_efficiency(topo *t, double nvlink, double network);
/* "nccl" (the two constants above), "line" (1, 1) or "NV,NET" (two fractions in (0, 1]):
 * DT_OK, or DT_EINPUT with the reason in why. */
int topo_link_efficiency_parse(const char *s, double *nvlink, double *network, char *why,
                               size_t why_size);

#endif
