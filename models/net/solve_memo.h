/* solve_memo.h - an exact memo of whole max-min problems, and the interned paths its keys name.
 *
 * Private to the network model (net.c) and its tests. Why: on the planner's costliest steps
 * (docs/performance.md, "Exact memo of whole solves") 38 % of the large solves are a problem
 * solved before, but hundreds of solves earlier; a solve's rates are progressive filling's
 * floating-point results, so the only exact shortcut is to hand back the very numbers the same
 * problem gave. The caller describes a problem by a key: words that determine every input the
 * solve and what follows it read (net.c, memo_key), compared word for word before an entry is
 * reused (the hash only picks the slot). Which problems hit depends on the hash, so on
 * addresses; what a hit returns does not.
 *
 * Memory: the memo owns its entries, one block each (key and results), and holds at most
 * max_bytes of them: a store that would pass the bound first empties the memo (deterministic,
 * no per-entry bookkeeping). The path table owns its copies until sm_paths_destroy and takes no
 * new path beyond its own bound (sm_paths_intern then returns NULL). Neither is thread-safe: one
 * of each per network model.
 */
#ifndef DTSIM_SOLVE_MEMO_H
#define DTSIM_SOLVE_MEMO_H

#include <stddef.h>
#include <stdint.h>

/* What a solve gave, as stored: per flow its rate and bottleneck (the problem's own local link
 * index), per link one bit, set when it ended saturated, and the largest load/capacity over the
 * links the caller notes. Borrowed from the memo: valid until the next sm_store or
 * sm_destroy. */
typedef struct sm_result {
    int nf, nl;
    const double *rate;
    const int *bneck;
    const unsigned char *sat; /* bit j % 8 of byte j / 8 */
    double umax;
} sm_result;

typedef struct sm_memo sm_memo;

/* slots: a power of two, at least 4 (sets of 4 by hash, the least recently used replaced). */
sm_memo *sm_create(size_t max_bytes, int slots);
void sm_destroy(sm_memo *m);
/* The stored result of the problem whose key is tok[0..ntok) (hash h), or NULL. */
const sm_result *sm_find(sm_memo *m, uint64_t h, const uint64_t *tok, int ntok);
/* Store a result under its key (copied), replacing the slot's entry; one larger than the whole
 * bound is not stored. */
void sm_store(sm_memo *m, uint64_t h, const uint64_t *tok, int ntok, const double *rate,
              const int *bneck, int nf, const unsigned char *sat, int nl, double umax);
/* Bytes held now, and how many times a store emptied the memo (tests, docs). */
size_t sm_bytes(const sm_memo *m);
uint64_t sm_clears(const sm_memo *m);

/* Key hash: spreads the table only (equality is decided word for word). */
uint64_t sm_hash(const uint64_t *tok, int ntok);

typedef struct sm_paths sm_paths;
sm_paths *sm_paths_create(size_t max_bytes);
void sm_paths_destroy(sm_paths *p);
/* The table's copy of path[0..nh) (the same pointer for the same links in the same order), or
 * NULL once the table holds max_bytes of paths and this one is not among them. */
const int *sm_paths_intern(sm_paths *p, const int *path, int nh);

#endif
