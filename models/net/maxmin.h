/* maxmin.h - max-min fair bandwidth sharing (progressive filling), on plain arrays.
 *
 * Private to the network model (models/net.c) and its tests; it knows nothing of topologies or
 * time. The caller describes one problem: links 0..n_links-1 with capacities, flows 0..n_flows-1
 * each crossing a list of links (CSR: flow f crosses links flinks[fstart[f] .. fstart[f+1])).
 * mm_solve() writes each flow's max-min fair rate.
 *
 * Progressive filling: all rates grow together; when a link saturates, the flows crossing it
 * freeze at its fair share and the others keep growing. Implemented with a min-heap of link
 * fair shares (remaining capacity / unfrozen flows). A link's share never decreases while
 * flows freeze (a frozen flow took at most the current minimum share), so heap keys are kept
 * as lower bounds and refreshed only when popped. Cost: O(E + R log L) for E (flow, link)
 * incidences, L links and R re-keyings (at most one per link per freezing round).
 *
 * Memory: the solver owns a workspace that grows to the largest problem seen and is reused, so
 * steady-state solving allocates nothing. Not thread-safe: one solver per network model.
 */
#ifndef DTSIM_MAXMIN_H
#define DTSIM_MAXMIN_H

typedef struct mm_solver mm_solver;

mm_solver *mm_create(void);
void mm_destroy(mm_solver *s);
/* Problems with at least this many (flow, link) incidences (default 256), and at most 32 per
 * link on average, first drop links crossed by the same flows as a tighter link (maxmin.c,
 * dedup_links): same rates, a smaller heap. 0: always; INT_MAX: never. For tests comparing
 * both ways. */
void mm_set_dedup_threshold(mm_solver *s, int min_incidences);

/* Solve. cap[l] > 0 (B/s). A flow crossing no link gets rate INFINITY. Every flow's rate is > 0
 * and for each link sum(rates) <= cap (up to floating-point rounding: the solver clamps the
 * remaining capacity at zero, so the excess is at most a few ulps of cap). */
void mm_solve(mm_solver *s, int n_links, const double *cap, int n_flows, const int *fstart,
              const int *flinks, double *rate, int *bneck);
/* Weighted max-min: flow f has weight w_f > 0 (weight NULL: all 1). Progressive filling raises
 * a common level; flow f sends at w_f x level on every link it crosses, and freezes when one of
 * them saturates; rate[f] is that send rate (B/s). A flow of weight 1/L thus competes like 1/L
 * of a flow: L of them together take one flow's share. */
void mm_solve_weighted(mm_solver *s, int n_links, const double *cap, int n_flows,
                       const int *fstart, const int *flinks, const double *weight, double *rate,
                       int *bneck);
/* The same, with link_n[l] the number of incidences on link l (a flow crossing it twice counts
 * twice), when the caller knows them without a pass over the incidences (the network model: its
 * links' entry counts); they must be right (their total is checked). link_n NULL: counted. */
void mm_solve_counted(mm_solver *s, int n_links, const double *cap, int n_flows,
                      const int *fstart, const int *flinks, const double *weight,
                      const int *link_n, double *rate, int *bneck);
/* After a solve: 1 when it dropped duplicate links (dedup_links), with, valid until the next
 * solve, cls[l] link l's class (-1 for a link no flow crosses), rep[cls[l]] the link that
 * represents that class (l itself when l was kept), and the reduced flow -> link lists (flow
 * f's kept links in path order, a link crossed twice twice). A dropped link is crossed by
 * exactly the flows of its representative, in the same order, and has at least its capacity.
 * 0 (nothing set) when none was dropped. (Classes by slot: resolving each link's
 * representative in a pass of its own cost more than the pass it saves.) */
int mm_dedup_view(const mm_solver *s, const int **cls, const int **rep, const int **fstart,
                  const int **flinks);
/* bneck (may be NULL) receives each flow's bottleneck: the link on which it froze (saturated,
 * and no flow on it is faster), -1 for a flow crossing no link. The network model uses it to
 * skip re-solving when a flow leaves links that bottleneck nobody else. */

#endif
