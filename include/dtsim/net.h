/* net.h - the network model: transfers between GPUs as flows sharing links.
 *
 * The one narrow interface between traffic and wiring: callers say "send these bytes from GPU a
 * to GPU b and fire this event when the last byte has arrived"; they never see a switch.
 *
 * Flow mode (default): a flow follows topo_route(); its first byte arrives after the sum of link
 * latencies (plus switch forwarding latency); while flows share a link, rates are max-min fair
 * (progressive filling), recomputed only for the flows affected when a flow starts or ends.
 * Analytic mode: no contention; a transfer takes path latency + bytes / bottleneck bandwidth.
 *
 * The net borrows topo and engine (both must outlive it) and registers its own event kinds.
 */
#ifndef DTSIM_NET_H
#define DTSIM_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "dtsim/sim.h"
#include "dtsim/topo.h"

typedef enum net_mode {
    NET_FLOW,
    NET_ANALYTIC
} net_mode;

typedef struct net_config {
    net_mode mode;
    /* NCCL's PXN for net_send_spread (NCCL 2.12 and later, on by default): a transfer between
     * hosts whose sender's NIC sits on another rail than the receiver's goes over the host's
     * fabric (NVLink) to the sender-host GPU on the receiver's rail and leaves through that GPU's
     * NIC, staying on the rail instead of crossing the spines (docs/collectives.md,
     * "Point-to-point transfers across the spines"). Set where NCCL is the collective library. */
    bool pxn;
} net_config;

typedef struct net net;

net *net_create(topo *t, sim_engine *eng, const net_config *cfg);
void net_destroy(net *n);

/* Start a transfer now. bytes >= 0 (0 still pays latency). On arrival of the last byte the
 * engine fires (done_kind, done_id, done_data). src == dst completes immediately (same time).
 * Timing: the bandwidth phase starts now (rate = max-min share, re-divided as flows come and
 * go); when the last byte has left, the completion fires one path latency later. Alone, a flow
 * takes latency + bytes/bottleneck, the bytes/bottleneck part rounded up to a whole picosecond
 * (after dropping relative floating-point noise below 1e-12). Path latency = sum of link
 * latencies + topo.switch_latency per switch node traversed. The route is topo_route() with a
 * flow hash from (src, dst, lane), the lane rotating over 4 per pair: like NCCL spreading a
 * connection over a few channels, each pinned to a path by its 5-tuple hash. Deterministic;
 * pairs spread over equal-cost paths and may collide, as on real fabrics. */
void net_send(net *n, int src_gpu, int dst_gpu, double bytes, uint32_t done_kind,
              uint32_t done_id, uint64_t done_data);

/* ECMP lanes per GPU pair: net_send rotates successive transfers of a pair over them. */
#define NET_ECMP_LANES 4

/* net_send for a transfer that the sender spreads over several connections at once, as NCCL's
 * send/receive between hosts runs over several channels (2 per network peer), each pinned to
 * its path: where the pair's NET_ECMP_LANES lanes take different routes (through spines), in
 * flow mode, one coupled transfer over the four routes with a quarter of the bytes on each and
 * max-min weight 1/4 (net_send_ring over the pair four times: it competes with other traffic
 * as one flow and alone takes bytes / bottleneck + the largest lane latency, as net_send);
 * otherwise exactly net_send (analytic mode, one route: net_pair_multipath). With net_send, which lane a whole transfer took followed how
 * many the pair had sent, so whether two pairs' transfers met on a spine link followed their
 * timing (docs/collectives.md, "Point-to-point transfers across the spines"). Costs
 * NET_ECMP_LANES route look-ups in the per-source store and a coupled flow of 4x the hops.
 * With cfg.pxn, in either mode, such a pair whose sender's host holds a GPU with one route to
 * the receiver (its NIC under the receiver's leaf), reached without leaving the host, sends
 * through that relay instead: one flow over the route to the relay and the relay's route on,
 * latency the sum of both (the relay is found once per pair and kept with its routes). */
void net_send_spread(net *n, int src_gpu, int dst_gpu, double bytes, uint32_t done_kind,
                     uint32_t done_id, uint64_t done_data);

/* net_send of one transfer of an NCCL point-to-point operation inside a collective (the
 * all-to-all's grouped sends): through the PXN relay where cfg.pxn gives one (as
 * net_send_spread, the relay's route on its next lane, not spread), else exactly net_send. */
void net_send_p2p(net *n, int src_gpu, int dst_gpu, double bytes, uint32_t done_kind,
                  uint32_t done_id, uint64_t done_data);

/* The GPU through which net_send_spread relays a transfer from src to dst under cfg.pxn
 * (NCCL's PXN: the sender host's GPU on the receiver's rail), -1 where it sends from its own
 * NIC (no pxn, the same rail, the same host, no such GPU or none reached over NVLink). Pure,
 * as net_route_lane (safe from threads sharing the net). For cost models that must route a
 * send as net_send_spread does (coll_analytic_time's send/receive). */
int net_pxn_relay(net *n, int src_gpu, int dst_gpu);

/* Whether the pair's NET_ECMP_LANES lanes take different routes (equal-cost paths through
 * spines), which is where a transfer's lane matters. Pure, as net_route_lane (safe from
 * threads sharing the net): the pair's lane rotation and the route store are left as they
 * were. */
int net_pair_multipath(net *n, int src_gpu, int dst_gpu);

/* A coupled transfer: n_pairs transfers (src_gpu[i] -> dst_gpu[i]) that progress in lockstep
 * at one common rate, each sending `bytes` - how a ring collective's edges move data (each
 * step waits for the slowest edge). One flow whose path is every pair's route end to end: its
 * max-min share is the smallest over all those links (a link crossed by two pairs counts
 * twice), and it takes that rate on every one. Pairs with src == dst are skipped. The
 * completion fires when the last byte has arrived: data phase, then the largest pair's path
 * latency. Counts as one flow in net_stats (bytes: n_pairs x bytes). Routes: each pair's
 * route on ECMP lane `lane` (0..NET_ECMP_LANES-1), or with lane = -1 the pair's next lane in
 * rotation, as net_send. weight in (0, 1]: its max-min weight (a flow of weight 1/L competes
 * like 1/L of a flow), so that a caller spreading one ring over L lanes, one coupled
 * transfer of bytes/L and weight 1/L per lane, competes with other traffic like one flow.
 * Rings alone on their links take the bottleneck bandwidth whatever the weight. The path
 * array is allocated per call (O(total hops)); with lane >= 0 the concatenated routes are
 * cached per pair list (a later ring on the same pairs copies them), and the memo's lane
 * rotation is left exactly as looking them up would have left it. */
void net_send_ring(net *n, int n_pairs, const int *src_gpu, const int *dst_gpu, double bytes,
                   int lane, double weight, uint32_t done_kind, uint32_t done_id,
                   uint64_t done_data);

/* net_send_ring for a transfer that a ring runs in `steps` (>= 1) equal steps, each of which
 * lasts as long as its slowest pair: max over pairs e of (alpha_e + c / rate_e), c = bytes /
 * steps, alpha_e the pair's path latency. The bytes move at the coupled rate as in
 * net_send_ring (its bottleneck pairs set the pace); what the other pairs' latencies add to
 * each step is charged after the last byte instead of net_send_ring's one largest latency:
 * per step max(alpha of the pairs crossing a link used to capacity, max_e(alpha_e +
 * c / max(rate, rate_e)) - c / rate), where rate is the coupled rate of the moment and rate_e
 * a pair's own uncontended share (weight x its route's bottleneck; in analytic mode the
 * bottleneck), accrued step by step as the rate changes; it never exceeds the largest pair
 * latency. Alone, the transfer takes steps x max_e(alpha_e + c / rate_e): with uniform pairs
 * steps x (alpha + c / rate), and with one slow pair and another of larger latency, what a
 * step program's steps take. O(pairs) at the call and per rate change of the flow, O(hops)
 * per solve that includes it. */
void net_send_ring_steps(net *n, int n_pairs, const int *src_gpu, const int *dst_gpu,
                         double bytes, int steps, int lane, double weight, uint32_t done_kind,
                         uint32_t done_id, uint64_t done_data);

typedef struct net_stats {
    uint64_t flows_started, flows_finished;
    double bytes_sent, bytes_delivered;
    uint64_t rate_updates;        /* flows whose rate was recomputed */
    uint64_t solves;              /* max-min solves (one per batch of simultaneous changes) */
    uint64_t solved_flows;        /* sum over solves of the flows in the solved components */
    double max_link_utilisation;  /* max over links and time of sum(rates)/bandwidth */
} net_stats;

void net_get_stats(const net *n, net_stats *out);

net_mode net_get_mode(const net *n);

/* The alpha-beta view of a route (the one topo_route gives for flow hash 0): its latency as
 * net_send charges it, its bottleneck bandwidth and hop count. Any output may be NULL.
 * Returns topo_route's status. For cost models (collective `auto`) and tests. */
int net_path_info(net *n, int src_gpu, int dst_gpu, sim_time_t *latency, double *bottleneck,
                  int *hops);

/* The route net_send takes from src to dst on ECMP lane `lane` (0..NET_ECMP_LANES-1): its
 * directed links (borrowed from the topology's route cache, valid until topo_destroy), hop
 * count and latency as net_send charges it. Any output may be NULL. Pure: the pair's lane
 * rotation is left as it was. For cost models that spread a transfer over the lanes
 * (coll_analytic_time). Returns topo_route's status. */
int net_route_lane(net *n, int src_gpu, int dst_gpu, int lane, const int **links, int *hops,
                   sim_time_t *latency);

/* Test and debugging aid: re-solve max-min from scratch over every flow now in its bandwidth
 * phase and count flows whose incrementally maintained rate differs by more than rel_tol.
 * O(all flows); call it between events (a recompute may be pending at the current time). */
int net_check_fair(net *n, double rel_tol);

/* Test and debugging aid: on (the default), flows that one recompute gives the same finish time
 * complete in one batch event and their completions are handed back in one event per time
 * (models/net/net.c: "batch", "deliver"); off, every flow completes in its own event and every
 * completion is its own event. Results are the same either way (tests compare both); only
 * sim_events_handled() and the speed differ. Call before the first transfer. */
void net_set_batching(net *n, int on);

/* Per-link busy intervals, for timelines and link loads (optional: enabled before the run).
 * Called once per link of a flow's path when its last byte has left: [start, end] is the flow's
 * bandwidth phase (its send time to its data-done time, latency tail excluded), bytes its size,
 * tag the caller's label of the flow (net_set_tag). Flows sharing a link overlap in time; a flow
 * of 0 bytes or to itself reports nothing. */
typedef void (*net_link_observer)(void *ctx, int link, sim_time_t start, sim_time_t end,
                                  double bytes, uint32_t tag);
/* (The observer runs inside the network's completion handling, several flows' at a time: it
 * records; it must not call back into the network or schedule events.) */
void net_set_link_observer(net *n, net_link_observer fn, void *ctx);

/* Label transfers started from now on (net_send, net_send_ring) with tag, until the next call;
 * 0 at creation. The net only hands it back to the link observer: callers use it to say which
 * collective or what kind of traffic a flow belongs to (the collective engine sets each
 * collective's coll_spec.tag before its transfers). */
void net_set_tag(net *n, uint32_t tag);

/* Time during which link `link` carried at least one flow in its bandwidth phase, up to now
 * (flow mode; 0 in analytic mode, where transfers are not flows). */
sim_time_t net_link_busy(const net *n, int link);

#endif
