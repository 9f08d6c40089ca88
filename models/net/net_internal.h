/* net_internal.h - the network model's switches for its own tests (not public API).
 *
 * The exact memo of whole solves (net.c, solve_memo.h) is on by default and changes no result;
 * tests run the same traffic with it off, or on for small components too, and compare. */
#ifndef DTSIM_NET_INTERNAL_H
#define DTSIM_NET_INTERNAL_H

#include <stdint.h>

#include "dtsim/net.h"

/* min_incidences >= 0: memoise components of at least that many (flow, link) incidences
 * (default NET_SMEMO_MIN_INC); < 0: turn the memo off for good (before any transfer: paths
 * already interned stay so). */
void net_set_solve_memo(net *n, int min_incidences);
/* Components looked up in the memo, and how many of them it had. */
void net_solve_memo_stats(const net *n, uint64_t *keyed, uint64_t *hits);

#endif
