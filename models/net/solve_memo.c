/* solve_memo.c - exact memo of whole max-min problems and interned paths (see solve_memo.h). */
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "ints_hash.h"
#include "solve_memo.h"

typedef struct sm_entry {
    uint64_t h;
    uint64_t used; /* stamp of its last store or hit: the least recent of a set is replaced */
    int ntok;
    size_t bytes;
    void *block; /* key words, then rates, bottlenecks, saturation bits; NULL: empty slot */
    sm_result r;
} sm_entry;

struct sm_memo {
    sm_entry *slot;
    int mask; /* of the set index: slots / SM_WAYS - 1 */
    uint64_t clock;
    size_t bytes, max_bytes;
    uint64_t clears;
};

/* Entries per set: a problem recurs hundreds of large solves later, and two of those that
 * share a direct-mapped slot would evict each other every time. */
#define SM_WAYS 4

sm_memo *sm_create(size_t max_bytes, int slots)
{
    DT_ASSERT(slots >= SM_WAYS && (slots & (slots - 1)) == 0);
    sm_memo *m = dt_xcalloc(1, sizeof *m);
    m->slot = dt_xcalloc((size_t)slots, sizeof *m->slot);
    m->mask = slots / SM_WAYS - 1;
    m->max_bytes = max_bytes;
    return m;
}

static void clear_all(sm_memo *m)
{
    for (int i = 0; i < (m->mask + 1) * SM_WAYS; i++) {
        free(m->slot[i].block);
        m->slot[i].block = NULL;
    }
    m->bytes = 0;
}

void sm_destroy(sm_memo *m)
{
    if (!m) return;
    clear_all(m);
    free(m->slot);
    free(m);
}

uint64_t sm_hash(const uint64_t *tok, int ntok)
{
    /* two independent chains: half the latency of one over a key of a few hundred words */
    uint64_t a = (uint64_t)ntok, b = 0x9e3779b97f4a7c15ULL;
    int i = 0;
    for (; i + 1 < ntok; i += 2) {
        a = (a ^ tok[i]) * 0x9e3779b97f4a7c15ULL;
        b = (b ^ tok[i + 1]) * 0xc2b2ae3d27d4eb4fULL;
    }
    if (i < ntok) a = (a ^ tok[i]) * 0x9e3779b97f4a7c15ULL;
    uint64_t h = a ^ (b >> 31) ^ (b << 33);
    return h ^ (h >> 29);
}

const sm_result *sm_find(sm_memo *m, uint64_t h, const uint64_t *tok, int ntok)
{
    sm_entry *set = &m->slot[(h & (uint64_t)m->mask) * SM_WAYS];
    for (int w = 0; w < SM_WAYS; w++) {
        sm_entry *e = &set[w];
        if (e->block && e->h == h && e->ntok == ntok &&
            !memcmp(e->block, tok, (size_t)ntok * sizeof *tok)) {
            e->used = ++m->clock;
            return &e->r;
        }
    }
    return NULL;
}

void sm_store(sm_memo *m, uint64_t h, const uint64_t *tok, int ntok, const double *rate,
              const int *bneck, int nf, const unsigned char *sat, int nl, double umax)
{
    size_t kb = (size_t)ntok * sizeof *tok, rb = (size_t)nf * sizeof *rate,
           bb = (size_t)nf * sizeof *bneck, sb = ((size_t)nl + 7) / 8;
    size_t bytes = kb + rb + bb + sb + sizeof(sm_entry);
    if (bytes > m->max_bytes) return;
    sm_entry *set = &m->slot[(h & (uint64_t)m->mask) * SM_WAYS], *e = set;
    for (int w = 1; w < SM_WAYS && e->block; w++) /* an empty way, else the least recent */
        if (!set[w].block || set[w].used < e->used) e = &set[w];
    if (e->block) {
        free(e->block);
        e->block = NULL;
        m->bytes -= e->bytes;
    }
    if (m->bytes + bytes > m->max_bytes) {
        clear_all(m);
        m->clears++;
    }
    /* (key words and rates first: 8-byte aligned in the block) */
    char *b = dt_xmalloc(kb + rb + bb + sb);
    memcpy(b, tok, kb);
    memcpy(b + kb, rate, rb);
    memcpy(b + kb + rb, bneck, bb);
    memcpy(b + kb + rb + bb, sat, sb);
    *e = (sm_entry){.h = h, .used = ++m->clock, .ntok = ntok, .bytes = bytes, .block = b,
                    .r = {.nf = nf, .nl = nl, .rate = (const double *)(b + kb),
                          .bneck = (const int *)(b + kb + rb),
                          .sat = (const unsigned char *)(b + kb + rb + bb), .umax = umax}};
    m->bytes += bytes;
}

size_t sm_bytes(const sm_memo *m) { return m->bytes; }
uint64_t sm_clears(const sm_memo *m) { return m->clears; }

/* Interned paths: open addressing over (hash, copy), grown at half full. */
typedef struct sm_path {
    uint64_t h;
    int *links; /* NULL: empty */
    int nh;
} sm_path;

struct sm_paths {
    sm_path *t;
    int cap, n;
    size_t bytes, max_bytes;
};

sm_paths *sm_paths_create(size_t max_bytes)
{
    sm_paths *p = dt_xcalloc(1, sizeof *p);
    p->max_bytes = max_bytes;
    return p;
}

void sm_paths_destroy(sm_paths *p)
{
    if (!p) return;
    for (int i = 0; i < p->cap; i++) free(p->t[i].links);
    free(p->t);
    free(p);
}

static void paths_grow(sm_paths *p)
{
    int c = p->cap ? 2 * p->cap : 256;
    sm_path *t = dt_xcalloc((size_t)c, sizeof *t);
    for (int i = 0; i < p->cap; i++) {
        if (!p->t[i].links) continue;
        int k = (int)(p->t[i].h & (uint64_t)(c - 1));
        while (t[k].links) k = (k + 1) & (c - 1);
        t[k] = p->t[i];
    }
    free(p->t);
    p->t = t;
    p->cap = c;
}

const int *sm_paths_intern(sm_paths *p, const int *path, int nh)
{
    uint64_t h = ints_hash(path, nh);
    if (p->cap) {
        for (int k = (int)(h & (uint64_t)(p->cap - 1));; k = (k + 1) & (p->cap - 1)) {
            const sm_path *s = &p->t[k];
            if (!s->links) break;
            if (s->h == h && s->nh == nh && !memcmp(s->links, path, (size_t)nh * sizeof *path))
                return s->links;
        }
    }
    size_t bytes = (size_t)nh * sizeof *path + sizeof(sm_path);
    if (p->bytes + bytes > p->max_bytes) return NULL;
    if (2 * (p->n + 1) > p->cap) paths_grow(p);
    int k = (int)(h & (uint64_t)(p->cap - 1));
    while (p->t[k].links) k = (k + 1) & (p->cap - 1);
    int *c = dt_xmalloc(((size_t)nh + 1) * sizeof *c); /* (+1: nh may be 0) */
    memcpy(c, path, (size_t)nh * sizeof *path);
    p->t[k] = (sm_path){h, c, nh};
    p->n++;
    p->bytes += bytes;
    return c;
}
