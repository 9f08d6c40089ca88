/* maxmin.c - progressive filling with a lazy min-heap of link fair shares (see maxmin.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "maxmin.h"

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
    /* heap */
    mm_entry *heap;
    int n_heap, cap_heap;
};

mm_solver *mm_create(void) { return dt_xcalloc(1, sizeof(mm_solver)); }

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

void mm_solve_weighted(mm_solver *s, int n_links, const double *cap, int n_flows,
                       const int *fstart, const int *flinks, const double *weight, double *rate,
                       int *bneck)
{
    int n_inc = fstart[n_flows] - fstart[0];
    reserve(s, n_links, n_flows, n_inc);
    memset(s->lstart, 0, (size_t)(n_links + 1) * sizeof *s->lstart);
    for (int f = 0; f < n_flows; f++) {
        s->frozen[f] = 0;
        for (int k = fstart[f]; k < fstart[f + 1]; k++) s->lstart[flinks[k] + 1]++;
    }
    for (int l = 0; l < n_links; l++) s->lstart[l + 1] += s->lstart[l];
    memcpy(s->fill, s->lstart, (size_t)n_links * sizeof *s->fill);
    for (int f = 0; f < n_flows; f++)
        for (int k = fstart[f]; k < fstart[f + 1]; k++) s->lflows[s->fill[flinks[k]]++] = f;

    for (int l = 0; l < n_links; l++) {
        DT_ASSERT(cap[l] > 0);
        s->rem[l] = cap[l];
        s->unfrozen[l] = s->lstart[l + 1] - s->lstart[l];
        s->wsum[l] = s->unfrozen[l];
        s->ver[l] = 0;
    }
    if (weight) {
        for (int l = 0; l < n_links; l++) s->wsum[l] = 0;
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
        if (s->unfrozen[l] > 0) s->heap[s->n_heap++] = (mm_entry){cap[l] / s->wsum[l], l, 0};
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
