/* ints_hash.h - the hash of an int list that the max-min solver's duplicate-link classes
 * (maxmin.c, dedup_links: a link's flow list) and the memo's interned paths (solve_memo.c: a
 * path's links) both key open-addressing tables with.
 *
 * Private to models/net and its tests. Both tables decide equality by an exact compare of the
 * lists, so the hash only spreads them: a multiply per element and one final mix (a stronger
 * mix per element was a tenth of a large solve's instructions for nothing an answer depends
 * on). One loop for both, so that a change to it is made once: it moves both tables' slots
 * and probe orders, not the rates they lead to.
 */
#ifndef DTSIM_INTS_HASH_H
#define DTSIM_INTS_HASH_H

#include <stdint.h>

static inline uint64_t ints_hash(const int *v, int n)
{
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)(uint32_t)v[i]) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

#endif
