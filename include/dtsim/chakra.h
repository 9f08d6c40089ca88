/* chakra.h - MLCommons Chakra execution traces (ET) read into and written from dtsim's op graph.
 *
 * A Chakra trace is one protobuf file per rank, PREFIX.<rank>.et (the schema: et_def.proto,
 * declared for dtsim in models/workload/chakra_et.proto): a GlobalMetadata message, then the
 * rank's nodes - compute (a duration, or FLOPs and bytes), collectives (a type, a size and a
 * process group), point-to-point sends and receives (source, destination, tag, size), and
 * dependency nodes - each with control and data dependencies on nodes of the same rank.
 * ASTRA-sim replays such traces; PyTorch execution traces convert to them.
 *
 * Reading (docs/formats.md, "Chakra execution traces" says how every node type and attribute
 * maps): each rank becomes a lane of one GPU; compute nodes run on its compute stream, CPU
 * nodes and dependency nodes on a second stream (ASTRA-sim's separate CPU resource),
 * communication on a third (one communication at a time, as in ASTRA-sim). The k-th collective
 * of every member of a process group is one collective instance; a receive is matched to the
 * send with the same (source, destination, tag), first come first matched. Unknown attributes
 * and node fields are warnings (one per name, with its first location and a count); unknown
 * node types, inconsistent groups, unmatched receives and malformed protobuf are errors naming
 * the file, the node and the message's byte offset.
 *
 * A trace written by dtsim (chakra_export_*) also carries dtsim's own description of the graph
 * (lanes, shared costs, collective instances, streams, the run environment) in attributes named
 * dtsim_*: reading it back gives the very op graph that was written.
 *
 * Ownership: chakra_read returns a graph the caller destroys (wl_graph_destroy) and fills a
 * trace_env the caller frees (trace_env_free). A chakra_export borrows the graph, environment
 * and GPU specs it was created from until chakra_export_destroy. Nothing here prints; warnings
 * go to the caller's callback.
 */
#ifndef DTSIM_CHAKRA_H
#define DTSIM_CHAKRA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "dtsim/error.h"
#include "dtsim/gpu.h"
#include "dtsim/replay.h"
#include "dtsim/workload.h"

/* A warning: file, path (the node) and message filled as for an error, code DT_OK. */
typedef void (*chakra_warn_fn)(void *ctx, const dt_error *warning);

typedef struct chakra_read_options {
    const char *groups_file;  /* ASTRA-sim communicator groups {"1": [0, 1], ...}, or NULL */
    chakra_warn_fn warn;      /* NULL: warnings dropped */
    void *warn_ctx;
    bool ignore_dtsim;        /* read a dtsim-written trace as any other (its dtsim_* attributes
                                 become unknown attributes) */
} chakra_read_options;

/* Largest trace read: nodes over all ranks, and bytes of one message. */
#define CHAKRA_MAX_NODES (1u << 26)
#define CHAKRA_MAX_MESSAGE (64u << 20)

/* Read the ranks PREFIX.0.et .. PREFIX.(N-1).et, or the one such family in a directory
 * (dir_or_prefix names a directory). Ranks must run 0..N-1 without a gap. */
int chakra_read(const char *dir_or_prefix, const chakra_read_options *opt, wl_graph **out, trace_env *env,
                dt_error *err);
/* The same from memory: rank r's file is bytes[r][0 .. len[r]), called name[r] in messages. */
int chakra_read_mem(int n_ranks, const unsigned char *const *bytes, const size_t *len, const char *const *name,
                    const chakra_read_options *opt, wl_graph **out, trace_env *env, dt_error *err);

/* ---- writing ---- */

typedef struct chakra_export chakra_export;

/* Plan the export of graph g (one file per GPU, g->n_gpus of them). gpus: g->n_gpus specs the
 * compute nodes' durations are computed for (duration_micros, rounded to whole microseconds as
 * the format holds them; dtsim's exact costs travel in dtsim_* attributes). DT_EINPUT when the
 * graph holds what per-rank files cannot say: a dependency on another lane's op that is not a
 * send addressed to this lane. */
int chakra_export_create(const wl_graph *g, const trace_env *env, const gpu_spec *gpus, chakra_export **out,
                         dt_error *err);
void chakra_export_destroy(chakra_export *x);
int chakra_export_ranks(const chakra_export *x);
/* Write rank r's file (the .et bytes) to f. */
int chakra_export_write_rank(const chakra_export *x, int rank, FILE *f, dt_error *err);
/* ASTRA-sim's communicator-group file for the same groups ({"1": [0, 1], ...}). */
int chakra_export_write_groups(const chakra_export *x, FILE *f, dt_error *err);

#endif
