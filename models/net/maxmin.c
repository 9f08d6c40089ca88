/* maxmin.c - progressive filling with a lazy min-heap of link fair shares (see maxmin.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "ints_hash.h"
#include "maxmin.h"

/* Incidences from which a solve first removes duplicate links (dedup_links). */
#define MM_DEDUP_MIN_INC 256

typedef struct mm_entry {
    double share;
    int link;
    unsigned version;
} mm_entry;

struct mm_solver {
    /* per link */
    double *rem;      /* remaining capacity */
    int *unfrozen;    /* flows not yet frozen */
    double *wsum;     /* their total weight (== unfrozen when every weight is 1) */
    unsigned *ver;    /* bumped whenever the share changes; heap entries carry it */
    int *lstart;      /* link -> flows CSR */
    int *lflows;
    int *fill;
    int cap_links;
    /* per flow */
    unsigned char *frozen;
    int cap_flows;
    int cap_inc; /* incidences */
    /* duplicate links (dedup_links): alive flag per link, the class table, reduced CSR */
    unsigned char *alive;
    uint64_t *sig;
    int *tab;
    unsigned *tgen, gen; /* a slot of tab is in use when its tgen is gen (no clearing per solve) */
    int cap_tab;
    int *fs2, *fl2;
    int cap_fs2, cap_fl2;
    int *cls;          /* per link: its class's slot in tab (mm_dedup_view), -1: no flow */
    int deduped;       /* the last solve dropped duplicate links */
    int dedup_min_inc; /* MM_DEDUP_MIN_INC, or what a test sets */
    /* heap */
    mm_entry *heap;
    int n_heap, cap_heap;
};

mm_solver *mm_create(void)
{
    mm_solver *s = dt_xcalloc(1, sizeof(mm_solver));
    s->dedup_min_inc = MM_DEDUP_MIN_INC;
    return s;
}

void mm_set_dedup_threshold(mm_solver *s, int min_incidences) { s->dedup_min_inc = min_incidences; }

void mm_destroy(mm_solver *s)
{
    if (!s) return;
    free(s->rem);
    free(s->unfrozen);
    free(s->wsum);
    free(s->ver);
    free(s->lstart);
    free(s->lflows);
    free(s->fill);
    free(s->frozen);
    free(s->alive);
    free(s->sig);
    free(s->tab);
    free(s->tgen);
    free(s->fs2);
    free(s->fl2);
    free(s->cls);
    free(s->heap);
    free(s);
}

static void reserve(mm_solver *s, int n_links, int n_flows, int n_inc)
{
    if (n_links > s->cap_links) {
        int c = n_links * 2;
        s->rem = dt_xrealloc(s->rem, (size_t)c * sizeof *s->rem);
        s->unfrozen = dt_xrealloc(s->unfrozen, (size_t)c * sizeof *s->unfrozen);
        s->wsum = dt_xrealloc(s->wsum, (size_t)c * sizeof *s->wsum);
        s->ver = dt_xrealloc(s->ver, (size_t)c * sizeof *s->ver);
        s->lstart = dt_xrealloc(s->lstart, (size_t)(c + 1) * sizeof *s->lstart);
        s->fill = dt_xrealloc(s->fill, (size_t)c * sizeof *s->fill);
        s->alive = dt_xrealloc(s->alive, (size_t)c);
        s->sig = dt_xrealloc(s->sig, (size_t)c * sizeof *s->sig);
        s->cls = dt_xrealloc(s->cls, (size_t)c * sizeof *s->cls);
        s->cap_links = c;
    }
    if (n_flows > s->cap_flows) {
        int c = n_flows * 2;
        s->frozen = dt_xrealloc(s->frozen, (size_t)c);
        s->cap_flows = c;
    }
    if (n_inc > s->cap_inc) {
        int c = n_inc * 2;
        s->lflows = dt_xrealloc(s->lflows, (size_t)c * sizeof *s->lflows);
        s->cap_inc = c;
    }
}

static inline int entry_less(const mm_entry *a, const mm_entry *b)
{
    /* Ties by link index keep the freezing order (and so the rounding) deterministic. */
    return a->share < b->share || (a->share == b->share && a->link < b->link);
}

static void heap_push(mm_solver *s, mm_entry e)
{
    if (s->n_heap == s->cap_heap) {
        s->cap_heap = s->cap_heap ? s->cap_heap * 2 : 64;
        s->heap = dt_xrealloc(s->heap, (size_t)s->cap_heap * sizeof *s->heap);
    }
    int i = s->n_heap++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!entry_less(&e, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

/* Move heap[i] down to its place. */
static void sift_down(mm_solver *s, int i)
{
    mm_entry x = s->heap[i];
    int n = s->n_heap;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_less(&s->heap[c + 1], &s->heap[c])) c++;
        if (!entry_less(&s->heap[c], &x)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    s->heap[i] = x;
}

static mm_entry heap_pop(mm_solver *s)
{
    mm_entry top = s->heap[0];
    s->heap[0] = s->heap[--s->n_heap];
    if (s->n_heap > 0) sift_down(s, 0);
    return top;
}

void mm_solve(mm_solver *s, int n_links, const double *cap, int n_flows, const int *fstart,
              const int *flinks, double *rate, int *bneck)
{
    mm_solve_weighted(s, n_links, cap, n_flows, fstart, flinks, NULL, rate, bneck);
}

/* Links crossed by exactly the same flows (same multiset) carry the same load at every moment
 * of progressive filling, so of such a class only the link with the least capacity (ties: the
 * lowest index) can be the one that freezes anything: its remaining capacity is never above the
 * others' (subtraction of the same amounts in the same order is monotone in floating point),
 * and the heap breaks equal shares by index. Dropping the rest changes no rate, and no
 * bottleneck but in the degenerate case of different capacities rounding to the same share.
 * Coupled ring flows (net_send_ring) cross thousands of links that carry just their own ECMP
 * lanes: this is what keeps the heap small for them. O(incidences + links).
 * Marks s->alive and builds the reduced flow -> link lists s->fs2 / s->fl2. */

/* Whether two lists of n ints are equal: a loop inlined here, since the lists compared are a
 * few flows long (a call to memcmp cost more than the compare, once per link). */
static inline int same_ints(const int *a, const int *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static void dedup_links(mm_solver *s, int n_links, const double *cap, int n_flows,
                        const int *fstart, const int *flinks)
{
    int tcap = 16;
    while (tcap < 2 * n_links) tcap *= 2;
    if (tcap > s->cap_tab) {
        s->tab = dt_xrealloc(s->tab, (size_t)tcap * sizeof *s->tab);
        free(s->tgen);
        s->tgen = dt_xcalloc((size_t)tcap, sizeof *s->tgen);
        s->gen = 0;
        s->cap_tab = tcap;
    }
    if (++s->gen == 0) { /* wrapped: every stamp is from an older solve */
        memset(s->tgen, 0, (size_t)s->cap_tab * sizeof *s->tgen);
        s->gen = 1;
    }
    /* The slot of link l - 1's class (-1: l - 1 crosses nothing). Links numbered one after
     * another along a flow's path are often crossed by the same flows (a ring's lanes share
     * the hops of each pair's route): such a link is compared with the one before it, whose
     * list lies just before its own, and joins that class's slot without a hash or a probe.
     * A class keeps its slot for good (slots are only ever replaced), so the probe would have
     * found that same slot and done the same. */
    int pslot = -1;
    for (int l = 0; l < n_links; l++) {
        s->alive[l] = 0;
        int a = s->lstart[l], b = s->lstart[l + 1];
        if (a == b) {
            pslot = -1;
            s->cls[l] = -1;
            continue;
        }
        int slot;
        if (pslot >= 0 && s->lstart[l - 1] == a - (b - a) &&
            same_ints(s->lflows + a - (b - a), s->lflows + a, b - a)) {
            slot = pslot;
            s->cls[l] = slot;
            s->sig[l] = s->sig[l - 1];
            int r = s->tab[slot];
            if (cap[l] < cap[r]) { /* as below */
                s->alive[r] = 0;
                s->alive[l] = 1;
                s->tab[slot] = l;
            }
            continue;
        }
        /* which links are alike is decided by the exact compare below (ints_hash.h) */
        uint64_t h = ints_hash(s->lflows + a, b - a);
        s->sig[l] = h;
        for (slot = (int)(h & (uint64_t)(tcap - 1));; slot = (slot + 1) & (tcap - 1)) {
            int r = s->tgen[slot] == s->gen ? s->tab[slot] : -1;
            if (r < 0) {
                s->tgen[slot] = s->gen;
                s->tab[slot] = l;
                s->alive[l] = 1;
                break;
            }
            if (s->sig[r] != h || s->lstart[r + 1] - s->lstart[r] != b - a ||
                !same_ints(s->lflows + s->lstart[r], s->lflows + a, b - a))
                continue;
            if (cap[l] < cap[r]) { /* l is tighter: it represents the class now */
                s->alive[r] = 0;
                s->alive[l] = 1;
                s->tab[slot] = l;
            }
            break;
        }
        pslot = slot;
        s->cls[l] = slot;
    }
    int n_inc = fstart[n_flows] - fstart[0];
    if (n_flows + 1 > s->cap_fs2) {
        s->cap_fs2 = 2 * (n_flows + 1);
        s->fs2 = dt_xrealloc(s->fs2, (size_t)s->cap_fs2 * sizeof *s->fs2);
    }
    if (n_inc + 1 > s->cap_fl2) {
        s->cap_fl2 = 2 * (n_inc + 1);
        s->fl2 = dt_xrealloc(s->fl2, (size_t)s->cap_fl2 * sizeof *s->fl2);
    }
    int k2 = 0;
    for (int f = 0; f < n_flows; f++) {
        s->fs2[f] = k2;
        for (int k = fstart[f]; k < fstart[f + 1]; k++) { /* (no branch to mispredict) */
            s->fl2[k2] = flinks[k];
            k2 += s->alive[flinks[k]];
        }
    }
    s->fs2[n_flows] = k2;
}

void mm_solve_weighted(mm_solver *s, int n_links, const double *cap, int n_flows,
                       const int *fstart, const int *flinks, const double *weight, double *rate,
                       int *bneck)
{
    mm_solve_counted(s, n_links, cap, n_flows, fstart, flinks, weight, NULL, rate, bneck);
}

void mm_solve_counted(mm_solver *s, int n_links, const double *cap, int n_flows,
                      const int *fstart, const int *flinks, const double *weight,
                      const int *link_n, double *rate, int *bneck)
{
    int n_inc = fstart[n_flows] - fstart[0];
    reserve(s, n_links, n_flows, n_inc);
    for (int f = 0; f < n_flows; f++) s->frozen[f] = 0;
    s->lstart[0] = 0;
    if (link_n) {
        /* the caller's counts: one pass over the links instead of one over the incidences */
        for (int l = 0; l < n_links; l++) s->lstart[l + 1] = s->lstart[l] + link_n[l];
        DT_ASSERT(s->lstart[n_links] == n_inc);
#ifndef NDEBUG
        int *cnt = dt_xcalloc((size_t)n_links + 1, sizeof *cnt);
        for (int k = fstart[0]; k < fstart[n_flows]; k++) cnt[flinks[k]]++;
        for (int l = 0; l < n_links; l++) DT_ASSERT(cnt[l] == link_n[l]);
        free(cnt);
#endif
    } else {
        memset(s->lstart, 0, (size_t)(n_links + 1) * sizeof *s->lstart);
        for (int f = 0; f < n_flows; f++)
            for (int k = fstart[f]; k < fstart[f + 1]; k++) s->lstart[flinks[k] + 1]++;
        for (int l = 0; l < n_links; l++) s->lstart[l + 1] += s->lstart[l];
    }
    memcpy(s->fill, s->lstart, (size_t)n_links * sizeof *s->fill);
    for (int f = 0; f < n_flows; f++)
        for (int k = fstart[f]; k < fstart[f + 1]; k++) s->lflows[s->fill[flinks[k]]++] = f;
    /* Small problems gain nothing from removing duplicate links, nor do dense ones (a direct
     * all-to-all: a thousand flows per link, no two links alike); long coupled rings (a few
     * flows per link) lose most of their heap. Same rates either way (dedup_links). */
    int dedup = s->dedup_min_inc == 0 ||
                (n_inc >= s->dedup_min_inc && (long)n_inc <= 32L * n_links);
    s->deduped = dedup;
    if (dedup) {
        dedup_links(s, n_links, cap, n_flows, fstart, flinks);
        fstart = s->fs2;
        flinks = s->fl2;
    }

    for (int l = 0; l < n_links; l++) {
        DT_ASSERT(cap[l] > 0);
        /* A link dedup_links dropped is in no reduced list and never in the heap: nothing
         * reads its state, so it is not set (most of a coupled ring's links). */
        if (dedup && !s->alive[l]) continue;
        s->rem[l] = cap[l];
        s->unfrozen[l] = s->lstart[l + 1] - s->lstart[l];
        s->wsum[l] = s->unfrozen[l];
        s->ver[l] = 0;
    }
    if (weight) {
        for (int l = 0; l < n_links; l++)
            if (!dedup || s->alive[l]) s->wsum[l] = 0;
        for (int f = 0; f < n_flows; f++) {
            DT_ASSERT(weight[f] > 0);
            for (int k = fstart[f]; k < fstart[f + 1]; k++) s->wsum[flinks[k]] += weight[f];
        }
    }
    /* Initial heap built bottom-up in O(L) rather than by L pushes. */
    s->n_heap = 0;
    if (n_links > s->cap_heap) {
        s->cap_heap = 2 * n_links;
        s->heap = dt_xrealloc(s->heap, (size_t)s->cap_heap * sizeof *s->heap);
    }
    for (int l = 0; l < n_links; l++)
        if ((!dedup || s->alive[l]) && s->unfrozen[l] > 0)
            s->heap[s->n_heap++] = (mm_entry){cap[l] / s->wsum[l], l, 0};
    for (int i = s->n_heap / 2 - 1; i >= 0; i--) sift_down(s, i);
    int left = 0; /* flows not frozen yet: the loop stops when none is left, rather than
                     popping every remaining (non-binding) link's entry */
    for (int f = 0; f < n_flows; f++)
        if (fstart[f + 1] == fstart[f]) {
            rate[f] = INFINITY;
            if (bneck) bneck[f] = -1;
            s->frozen[f] = 1;
        } else {
            left++;
        }

    /* Heap keys are lower bounds: a link's share only grows as flows freeze, so instead of
     * re-pushing a link at every change, a popped entry whose link changed since is re-keyed
     * and pushed back. The first up-to-date entry popped is the true minimum. This keeps heap
     * traffic near one push per link per freezing round instead of one per incidence. */
    double level = 0;
    while (s->n_heap > 0 && left > 0) {
        mm_entry e = heap_pop(s);
        int l = e.link;
        if (s->unfrozen[l] == 0) continue;
        if (e.version != s->ver[l]) {
            /* Mathematically the share only grows; clamping keeps rounding from ever
             * handing a flow a rate below the level already reached (or zero). */
            double ns = s->rem[l] / s->wsum[l];
            heap_push(s, (mm_entry){ns > level ? ns : level, l, s->ver[l]});
            continue;
        }
        double share = e.share;
        level = share;
        /* Every unfrozen flow on the bottleneck link freezes at its fair share. */
        for (int k = s->lstart[l]; k < s->lstart[l + 1]; k++) {
            int f = s->lflows[k];
            if (s->frozen[f]) continue;
            s->frozen[f] = 1;
            left--;
            double w = weight ? weight[f] : 1.0, use = w * share;
            rate[f] = use;
            if (bneck) bneck[f] = l;
            for (int j = fstart[f]; j < fstart[f + 1]; j++) {
                int m = flinks[j];
                double r = s->rem[m] - use;
                s->rem[m] = r > 0 ? r : 0;
                if (--s->unfrozen[m] == 0) s->wsum[m] = 0;
                else if (weight) {
                    /* rounding must never leave a positive share's divisor at or below 0 */
                    double ws = s->wsum[m] - w;
                    s->wsum[m] = ws > 1e-300 ? ws : 1e-300;
                } else {
                    s->wsum[m] = s->unfrozen[m];
                }
                s->ver[m]++;
            }
        }
    }
}

int mm_dedup_view(const mm_solver *s, const int **cls, const int **rep, const int **fstart,
                  const int **flinks)
{
    if (!s->deduped) return 0;
    *cls = s->cls;
    *rep = s->tab;
    *fstart = s->fs2;
    *flinks = s->fl2;
    return 1;
}
