/* federated.h - federated learning rounds over the network model (`dtsim federated`).
 *
 * A scenario with a "federated" section (docs/federated.md, docs/formats.md) names which GPUs
 * of its topology are clients, edge servers and the cloud's aggregation servers. Each client
 * trains its own copy of the scenario's model for `local_steps` local steps, then its update
 * goes up the hierarchy and the aggregated model comes back down; the rounds are simulated as
 * events over the flow network (every transfer a flow sharing links max-min fairly), no trace
 * needed. Three ways to aggregate, on the same clients, model and topology:
 *   hierarchical  clients -> their edge server (aggregates), every `edge_rounds` edge rounds
 *                 edges -> cloud (aggregates) -> edges -> clients (Liu et al. 2020, HierFAVG);
 *   ps            clients -> cloud -> clients (FedAvg with a flat, possibly sharded, server);
 *   allreduce     the clients all-reduce their updates among themselves (a ring), no server.
 *
 * Ownership: fl_run fills a caller-owned fl_result (plain data, nothing to free). The library
 * prints nothing; errors fill the caller's dt_error (file, JSON path).
 */
#ifndef DTSIM_FEDERATED_H
#define DTSIM_FEDERATED_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "dtsim/error.h"

typedef enum fl_aggregation { FL_HIERARCHICAL, FL_PS, FL_ALLREDUCE } fl_aggregation;

/* "hierarchical", "ps", "allreduce"; "?" out of range. */
const char *fl_aggregation_name(fl_aggregation a);

typedef struct fl_options {
    int rounds;                 /* > 0: overrides federated.rounds */
} fl_options;

/* When the first cloud round's last edge round reached each milestone (seconds from the
 * start; the latest over the parties concerned, -1 where the aggregation has no such step). */
typedef struct fl_milestones {
    double trained;             /* the last client's last local step of the round ends */
    double at_edges;            /* every edge server holds all its clients' updates */
    double edges_aggregated;    /* ... and has aggregated them */
    double at_cloud;            /* every cloud server holds all its shards */
    double cloud_aggregated;    /* ... and has aggregated them */
    double at_edges_back;       /* every edge server holds the new model */
    double at_clients;          /* every client holds the new model: the round's end */
} fl_milestones;

typedef struct fl_result {
    char name[128];
    fl_aggregation aggregation;
    int clients, edges, cloud_servers;
    int rounds, local_steps, edge_rounds;
    double update_bytes;        /* one client's update (and the model sent back) */
    double local_step_min_s, local_step_max_s; /* one local step on the fastest / slowest client */
    double total_s;             /* until every client holds the model of the last round */
    double round_s;             /* total_s / rounds */
    double compute_s;           /* the slowest client's training in one round:
                                   edge_rounds x local_steps x its local step */
    double comm_s;              /* round_s - compute_s: transfers and aggregation it waits for */
    fl_milestones first;        /* the first round's milestones */
    /* bytes per round: sent by the clients (up), by edge servers to the cloud (the wide area,
     * up) and back (down), by the cloud's servers (down), by edge servers to clients */
    double bytes_clients_up, bytes_edges_up, bytes_cloud_down, bytes_edges_down;
    double samples_per_round;   /* clients x edge_rounds x local_steps x samples per local step */
    double samples_per_s;
    uint64_t events;
} fl_result;

/* Simulate the federated section of `scenario` (parsed JSON; file names it in errors,
 * base_dir resolves a topology file). DT_OK, or DT_EINPUT / DT_EIO with err filled. */
int fl_run(const cJSON *scenario, const char *file, const char *base_dir, const fl_options *opt,
           fl_result *out, dt_error *err);
int fl_run_file(const char *filename, const fl_options *opt, fl_result *out, dt_error *err);

#endif
