/* cal_nccl_tests.c - nccl-tests logs (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
 * alltoall_perf, sendrecv_perf, broadcast_perf, reduce_perf) read into calibration fits.
 *
 * The format is what nccl-tests prints (src/common.cu): a header with the run's parameters,
 * one line per rank saying which host and GPU it ran on, a table of one row per size with the
 * out-of-place and in-place time, algbw and busbw, then "# Avg bus bandwidth". Real logs are
 * seldom clean: mpirun tags lines ("[1,0]<stdout>:"), Open MPI and NCCL interleave their own
 * messages with the table, versions differ in columns (root, #wrong vs error) and in the
 * header. So the reader is driven by the table's own column header, skips lines that are not
 * rows, and is strict about what is a row: a line that starts like a row (size and count)
 * must parse completely and agree with itself (algbw = size / time, busbw = algbw x the
 * collective's factor), or the log is refused at that line. A table without its closing
 * "# Avg bus bandwidth" line is a truncated log and is refused too: a calibration must not be
 * made from half a run.
 *
 * Fitting is cal_fit_alpha_beta, the same robust fit as the measured backends, on the times of
 * every run merged (out-of-place and in-place are two samples per size). NCCL changes protocol
 * and algorithm with the size (LL, LL128, Simple; ring, tree, NVLS), so no single line
 * T = alpha + S beta holds from 8 B to 8 GiB; the fit covers the widest run of consecutive sizes
 * ending at the largest one within which the line reproduces every size's median time within
 * the tolerance (5 % by default), or the range the caller gives. Every size stays in the file;
 * the fitted range is recorded with it.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dtsim/calib.h"
#include "dtsim/kern.h"
#include "dtsim/limits.h"
#include "dtsim/units.h"

/* ---------------------------------------------------------------- small helpers */

/* the test binaries' names, by the kind they measure ("" for top-k: no such test) */
static const char *const op_test_names[CAL_KIND_COUNT] = {
    [CAL_KIND_ALLREDUCE] = "all_reduce", [CAL_KIND_TOPK] = "",
    [CAL_KIND_REDUCE_SCATTER] = "reduce_scatter", [CAL_KIND_ALLGATHER] = "all_gather",
    [CAL_KIND_BROADCAST] = "broadcast", [CAL_KIND_REDUCE] = "reduce",
    [CAL_KIND_ALLTOALL] = "alltoall", [CAL_KIND_SENDRECV] = "sendrecv"};

/* "all_reduce_perf", "all_reduce_perf_mpi", "./build/alltoall_perf" anywhere in s: the test's
 * collective, or -1. The longest name wins (reduce_scatter before reduce). */
static int op_in_text(const char *s)
{
    int best = -1;
    size_t best_len = 0;
    for (int op = 0; op < CAL_KIND_COUNT; op++) {
        if (!op_test_names[op][0]) continue;
        char pat[48];
        snprintf(pat, sizeof pat, "%s_perf", op_test_names[op]);
        for (const char *p = strstr(s, pat); p; p = strstr(p + 1, pat)) {
            bool left_ok = p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
            const char *e = p + strlen(pat);
            bool right_ok = !(isalnum((unsigned char)*e)) || !strncmp(e, "_mpi", 4);
            if (left_ok && right_ok && strlen(pat) > best_len) {
                best = op;
                best_len = strlen(pat);
            }
        }
    }
    return best;
}

typedef struct lines {
    char *buf;
    char **line;
    int n;
} lines;

static void split_lines(const char *text, size_t len, lines *L)
{
    L->buf = dt_xmalloc(len + 1);
    memcpy(L->buf, text, len);
    L->buf[len] = 0;
    int cap = 64;
    L->line = dt_xmalloc((size_t)cap * sizeof *L->line);
    L->n = 0;
    char *p = L->buf, *end = L->buf + len;
    while (p <= end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        *nl = 0;
        if (nl > p && nl[-1] == '\r') nl[-1] = 0;
        if (L->n == cap) L->line = dt_xrealloc(L->line, (size_t)(cap *= 2) * sizeof *L->line);
        L->line[L->n++] = p;
        p = nl + 1;
        if (nl == end) break;
    }
}

/* Strip an mpirun output tag ("[1,0]<stdout>:" or "[0]") in place; *is_stderr when the tag
 * says the line went to stderr. A "[N]" tag also appears glued inside rows of some logs
 * ("-1[0]"): when the line starts with one, every later "[N]" goes too. */
static char *untag(char *s, bool *is_stderr)
{
    *is_stderr = false;
    char *p = s;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != '[') return s;
    char *q = p + 1;
    while (isdigit((unsigned char)*q) || *q == ',') q++;
    if (*q != ']' || q == p + 1) return s;
    q++;
    if (!strncmp(q, "<stdout>:", 9)) return q + 9;
    if (!strncmp(q, "<stderr>:", 9)) {
        *is_stderr = true;
        return q + 9;
    }
    /* "[0]" style: remove every "[digits]" from the rest of the line */
    char *w = p;
    for (char *r = q; *r;) {
        if (*r == '[') {
            char *e = r + 1;
            while (isdigit((unsigned char)*e)) e++;
            if (*e == ']' && e > r + 1) {
                *w++ = ' ';
                r = e + 1;
                continue;
            }
        }
        *w++ = *r++;
    }
    *w = 0;
    return p;
}

#define MAX_TOK 40
static int tokenize(char *s, char **tok)
{
    int n = 0;
    for (char *p = strtok(s, " \t"); p && n < MAX_TOK; p = strtok(NULL, " \t")) tok[n++] = p;
    return n;
}

static bool parse_ll(const char *s, long long *v)
{
    char *e;
    if (!*s) return false;
    long long x = strtoll(s, &e, 10);
    if (*e) return false;
    *v = x;
    return true;
}

static bool parse_num(const char *s, double *v)
{
    char *e;
    if (!*s) return false;
    double x = strtod(s, &e);
    if (*e || !isfinite(x)) return false;
    *v = x;
    return true;
}

/* ---------------------------------------------------------------- parsing */

enum col { C_SIZE, C_COUNT, C_TYPE, C_REDOP, C_ROOT, C_TIME, C_ALGBW, C_BUSBW, C_WRONG, C_OTHER };

typedef struct table_layout {
    int col[MAX_TOK];      /* column kind per position */
    int n;                 /* columns in the header */
    int group_at[2];       /* position of the time column of out-of-place / in-place */
    int n_groups;
    double time_scale;     /* seconds per printed time unit (us; old versions: ms) */
    int line;              /* header line */
} table_layout;

/* A header line "size count type redop root time algbw busbw #wrong time ..." (with or without
 * the leading '#'): fill the layout; false when the line is not one. */
static bool parse_header(char *s, table_layout *t, int line)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", s);
    char *tok[MAX_TOK];
    int n = tokenize(copy, tok);
    int start = 0;
    if (n && !strcmp(tok[0], "#")) start = 1;
    else if (n && tok[0][0] == '#') tok[0]++;
    if (n - start < 4 || strcmp(tok[start], "size") || strcmp(tok[start + 1], "count")) return false;
    memset(t, 0, sizeof *t);
    t->time_scale = 1e-6;
    t->line = line;
    for (int i = start; i < n; i++) {
        const char *w = tok[i];
        int c = !strcmp(w, "size") ? C_SIZE : !strcmp(w, "count") ? C_COUNT : !strcmp(w, "type") ? C_TYPE
              : !strcmp(w, "redop") ? C_REDOP : !strcmp(w, "root") ? C_ROOT : !strcmp(w, "time") ? C_TIME
              : !strcmp(w, "algbw") ? C_ALGBW : !strcmp(w, "busbw") ? C_BUSBW
              : (!strcmp(w, "#wrong") || !strcmp(w, "wrong") || !strcmp(w, "error")) ? C_WRONG : C_OTHER;
        if (c == C_TIME && t->n_groups < 2) t->group_at[t->n_groups++] = t->n;
        t->col[t->n++] = c;
    }
    /* a group is time algbw busbw [wrong] */
    for (int g = 0; g < t->n_groups; g++) {
        int at = t->group_at[g];
        if (at + 2 >= t->n || t->col[at + 1] != C_ALGBW || t->col[at + 2] != C_BUSBW) return false;
    }
    return t->n_groups >= 1;
}

typedef struct rank_info {
    int rank, group;
    char host[64];
    int line;
} rank_info;

typedef struct run_build {
    cal_nccl_run run;
    int cap_rows;
    rank_info *ranks;
    int n_ranks, cap_ranks;
    int nthread, ngpus;         /* from "# nThread T nGpus G" (0 unknown) */
    bool have_table, complete;
    table_layout layout;
    int op_named;               /* from "# Collective test starting", -1 none */
    int op_named_line;
    char redop[16];
    long long root;
} run_build;

static void add_row(run_build *b, double size, const double t[2], const double algbw[2], const double busbw[2], int line)
{
    cal_nccl_run *r = &b->run;
    if (r->n_rows == b->cap_rows) {
        b->cap_rows = b->cap_rows ? 2 * b->cap_rows : 32;
        r->size = dt_xrealloc(r->size, (size_t)b->cap_rows * sizeof *r->size);
        r->row_line = dt_xrealloc(r->row_line, (size_t)b->cap_rows * sizeof *r->row_line);
        for (int g = 0; g < 2; g++) {
            r->time[g] = dt_xrealloc(r->time[g], (size_t)b->cap_rows * sizeof *r->time[g]);
            r->algbw[g] = dt_xrealloc(r->algbw[g], (size_t)b->cap_rows * sizeof *r->algbw[g]);
            r->busbw[g] = dt_xrealloc(r->busbw[g], (size_t)b->cap_rows * sizeof *r->busbw[g]);
        }
    }
    int i = r->n_rows++;
    r->size[i] = size;
    r->row_line[i] = line;
    for (int g = 0; g < 2; g++) {
        r->time[g][i] = t[g];
        r->algbw[g][i] = algbw[g];
        r->busbw[g][i] = busbw[g];
    }
}

static void run_free(cal_nccl_run *r)
{
    free(r->size);
    free(r->row_line);
    for (int g = 0; g < 2; g++) {
        free(r->time[g]);
        free(r->algbw[g]);
        free(r->busbw[g]);
    }
    memset(r, 0, sizeof *r);
}

void cal_nccl_log_free(cal_nccl_log *l)
{
    if (!l) return;
    for (int i = 0; i < l->n_runs; i++) run_free(&l->runs[i]);
    free(l->runs);
    memset(l, 0, sizeof *l);
}

static void log_warn(cal_nccl_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_warn(cal_nccl_log *l, const char *fmt, ...)
{
    if (l->n_warnings >= CAL_NCCL_MAX_WARNINGS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->warnings[l->n_warnings++], sizeof l->warnings[0], fmt, ap);
    va_end(ap);
}

static const char *dtype_of(const char *type)
{
    static const char *const map[][2] = {{"float", "fp32"},   {"float32", "fp32"}, {"half", "fp16"},
                                         {"float16", "fp16"}, {"bfloat16", "bf16"}, {"double", "fp64"},
                                         {"float64", "fp64"}, {"int8", "int8"},    {"uint8", "uint8"},
                                         {"int32", "int32"},  {"uint32", "uint32"}, {"int64", "int64"},
                                         {"uint64", "uint64"}, {"char", "int8"},   {"int", "int32"},
                                         {"fp8_e4m3", "fp8"}, {"fp8_e5m2", "fp8"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(type, map[i][0])) return map[i][1];
    return NULL;
}

/* Finish a run: work out the collective, the ranks and the hosts, check every row against the
 * collective's busbw factor, and append it to the log. */
static int finish_run(run_build *b, cal_nccl_log *L, const char *file, const char *file_op_text, int op_hint,
                      int end_line, dt_error *err)
{
    cal_nccl_run *r = &b->run;
    if (r->n_rows == 0)
        return dt_error_set(err, DT_EINPUT, file, NULL,
                            "line %d: the table that starts at line %d has no rows", end_line, b->layout.line);
    /* ranks and hosts from the device list */
    int n = b->n_ranks, groups = 1;
    if (n > 0) {
        for (int i = 0; i < n; i++) {
            if (b->ranks[i].group + 1 > groups) groups = b->ranks[i].group + 1;
            for (int j = 0; j < i; j++)
                if (b->ranks[j].rank == b->ranks[i].rank && b->ranks[j].group == b->ranks[i].group)
                    return dt_error_set(err, DT_EINPUT, file, NULL,
                                        "line %d: rank %d is listed twice (first at line %d): nccl-tests "
                                        "built without MPI ran %d independent single-process copies; "
                                        "rebuild it with MPI=1",
                                        b->ranks[i].line, b->ranks[i].rank, b->ranks[j].line, n);
        }
        r->hosts = 0;
        int max_per = 0;
        char names[CAL_NAME_MAX] = "";
        for (int i = 0; i < n; i++) {
            bool seen = false;
            for (int j = 0; j < i; j++)
                if (!strcmp(b->ranks[j].host, b->ranks[i].host)) seen = true;
            if (seen) continue;
            r->hosts++;
            int per = 0;
            for (int j = 0; j < n; j++) per += !strcmp(b->ranks[j].host, b->ranks[i].host);
            if (per > max_per) max_per = per;
            size_t len = strlen(names);
            if (len + strlen(b->ranks[i].host) + 3 < sizeof names)
                snprintf(names + len, sizeof names - len, "%s%s", len ? "," : "", b->ranks[i].host[0] ? b->ranks[i].host : "?");
        }
        r->gpus_per_host = max_per;
        snprintf(r->hostnames, sizeof r->hostnames, "%s", names);
        if (n % groups)
            return dt_error_set(err, DT_EINPUT, file, NULL,
                                "line %d: %d ranks in %d groups (NCCL_TESTS_SPLIT_MASK) do not split evenly",
                                end_line, n, groups);
        r->ranks = n / groups;
        r->groups = groups;
    }
    /* the collective: named, or inferred */
    int op = op_hint;
    if (b->op_named >= 0) {
        if (op >= 0 && op != b->op_named)
            return dt_error_set(err, DT_EINPUT, file, NULL, "line %d: the log says %s_perf but --nccl-op says %s",
                                b->op_named_line, op_test_names[b->op_named], op_test_names[op]);
        op = b->op_named;
    }
    if (op < 0 && file_op_text) op = op_in_text(file_op_text);
    /* the busbw/algbw ratio of the best-measured row */
    int best = -1;
    for (int i = 0; i < r->n_rows; i++)
        if (best < 0 || r->algbw[0][i] > r->algbw[0][best]) best = i;
    double ratio = r->algbw[0][best] > 0 ? r->busbw[0][best] / r->algbw[0][best] : 0;
    bool ratio_ok = r->algbw[0][best] >= 1.0; /* two decimals: a precise ratio from 1 GB/s up */
    if (op < 0) {
        if (!ratio_ok)
            return dt_error_set(err, DT_EINPUT, file, NULL,
                                "line %d: cannot tell which collective this log measured (no 'Collective test "
                                "starting' line, no *_perf name, bandwidths too small to infer it): name it with "
                                "--nccl-op",
                                b->layout.line);
        if (ratio > 1.02) op = CAL_KIND_ALLREDUCE;
        else if (ratio < 0.98) {
            if (!strcmp(b->redop, "none"))
                return dt_error_set(err, DT_EINPUT, file, NULL,
                                    "line %d: busbw/algbw = %.3f fits all_gather and alltoall alike: name the "
                                    "collective with --nccl-op",
                                    b->layout.line, ratio);
            op = CAL_KIND_REDUCE_SCATTER;
        } else {
            if (b->root >= 0) op = strcmp(b->redop, "none") ? CAL_KIND_REDUCE : CAL_KIND_BROADCAST;
            else if (r->ranks == 2 || r->ranks == 0)
                return dt_error_set(err, DT_EINPUT, file, NULL,
                                    "line %d: busbw = algbw fits sendrecv and a 2-rank all_reduce alike: name "
                                    "the collective with --nccl-op",
                                    b->layout.line);
            else
                op = CAL_KIND_SENDRECV;
        }
    }
    r->kind = (cal_kind)op;
    if (r->ranks == 0) {
        /* no device list: the ranks from the busbw factor (sendrecv, broadcast, reduce: a pair) */
        if (op == CAL_KIND_SENDRECV || op == CAL_KIND_BROADCAST || op == CAL_KIND_REDUCE) {
            r->ranks = op == CAL_KIND_SENDRECV ? 2 : 0;
        } else if (ratio_ok) {
            double nn = op == CAL_KIND_ALLREDUCE ? 2.0 / (2.0 - ratio) : 1.0 / (1.0 - ratio);
            r->ranks = (int)lround(nn);
        }
        if (r->ranks < 2)
            return dt_error_set(err, DT_EINPUT, file, NULL,
                                "line %d: no device list ('#  Rank N ... on HOST device ...' lines) to count the "
                                "ranks from",
                                b->layout.line);
        r->hosts = 1;
        r->groups = 1;
        r->gpus_per_host = r->ranks;
        if (r->kind == CAL_KIND_SENDRECV)
            log_warn(L, "%s:%d: no device list: sendrecv figures taken for one pair of ranks in one host", file,
                     b->layout.line);
        else
            log_warn(L, "%s:%d: no device list: %d ranks inferred from busbw/algbw, assumed to be in one host", file,
                     b->layout.line, r->ranks);
    } else if (op == CAL_KIND_SENDRECV && r->ranks != 2) {
        /* sendrecv_perf: every rank sends to its neighbour at once; one pair's figures */
    }
    if (r->ranks < 2)
        return dt_error_set(err, DT_EINPUT, file, NULL,
                            "line %d: one rank per communicator: the run moved nothing between GPUs", b->layout.line);
    /* every row: busbw = algbw x factor (printed with two decimals) */
    double f = cal_busbw_factor(r->kind, r->ranks);
    for (int i = 0; i < r->n_rows; i++)
        for (int g = 0; g < 2; g++) {
            if (!(r->time[g][i] > 0)) continue;
            double want = r->algbw[g][i] * f;
            /* both printed to two decimals: algbw's rounding is multiplied by the factor */
            if (fabs(r->busbw[g][i] - want) > 0.0051 * (1 + f) + 0.005 * want)
                return dt_error_set(err, DT_EINPUT, file, NULL,
                                    "line %d: busbw %.2f is not algbw %.2f x %.4g (%s over %d ranks): the row is "
                                    "garbled, or the log is not %s_perf over %d ranks",
                                    r->row_line[i], r->busbw[g][i], r->algbw[g][i], f, op_test_names[r->kind], r->ranks,
                                    op_test_names[r->kind], r->ranks);
        }
    snprintf(r->file, sizeof r->file, "%s", file);
    r->line = b->layout.line;
    L->runs = dt_xrealloc(L->runs, (size_t)(L->n_runs + 1) * sizeof *L->runs);
    L->runs[L->n_runs++] = *r;
    memset(r, 0, sizeof *r); /* arrays now owned by the log */
    return DT_OK;
}

/* A device line "#  Rank  3 Group  0 Pid 123 on host device  3 [0x1b] NAME" (Group optional;
 * an empty host name leaves "on" followed by "device"). */
static bool parse_device(char *s, rank_info *ri, char *gpu, size_t gpu_size)
{
    char *p = s;
    while (*p == '#' || *p == ' ' || *p == '\t') p++;
    if (strncmp(p, "Rank", 4) || !isspace((unsigned char)p[4])) return false;
    char copy[512];
    snprintf(copy, sizeof copy, "%s", p);
    char *tok[MAX_TOK];
    int n = tokenize(copy, tok);
    long long v;
    if (n < 2 || !parse_ll(tok[1], &v) || v < 0) return false;
    memset(ri, 0, sizeof *ri);
    ri->rank = (int)v;
    int i = 2;
    if (i + 1 < n && !strcmp(tok[i], "Group") && parse_ll(tok[i + 1], &v)) {
        ri->group = (int)v;
        i += 2;
    }
    for (; i < n; i++)
        if (!strcmp(tok[i], "on")) break;
    if (i >= n) return false;
    if (i + 1 < n && strcmp(tok[i + 1], "device")) snprintf(ri->host, sizeof ri->host, "%s", tok[i + 1]);
    const char *br = strchr(p, ']');
    if (br) {
        br++;
        while (*br == ' ') br++;
        if (gpu && !gpu[0]) snprintf(gpu, gpu_size, "%s", br);
    }
    return true;
}

int cal_nccl_parse(const char *text, size_t len, const char *file, int op_hint, cal_nccl_log *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    if (len > CAL_NCCL_MAX_BYTES)
        return dt_error_set(err, DT_EINPUT, file, NULL, "%zu bytes: larger than the %d MiB dtsim reads from one log",
                            len, CAL_NCCL_MAX_BYTES >> 20);
    if (memchr(text, 0, len))
        return dt_error_set(err, DT_EINPUT, file, NULL, "contains NUL bytes: not a text log");
    lines L;
    split_lines(text, len, &L);
    /* collective named by the file name or by a command line anywhere in the log */
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    int text_op = -1;
    for (int i = 0; i < L.n && text_op < 0; i++)
        if (strstr(L.line[i], "_perf")) text_op = op_in_text(L.line[i]);
    if (text_op < 0) text_op = op_in_text(base);
    char text_op_name[64] = "";
    if (text_op >= 0) snprintf(text_op_name, sizeof text_op_name, "%s_perf", op_test_names[text_op]);

    run_build b;
    memset(&b, 0, sizeof b);
    b.op_named = -1;
    b.root = -1;
    int rc = DT_OK;
    int last_row_line = 0;
    for (int ln = 0; ln < L.n && rc == DT_OK; ln++) {
        int line = ln + 1;
        bool is_err;
        char *s = untag(L.line[ln], &is_err);
        if (is_err) continue;
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) continue;
        table_layout lay;
        if (parse_header(s, &lay, line)) {
            if (b.have_table && !b.complete) {
                if (b.run.n_rows == 0) { /* a repeated header before any row: keep the last */
                    b.layout = lay;
                    continue;
                }
                rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                  "line %d: a new table starts, but the one at line %d never ended with "
                                  "'# Avg bus bandwidth' (a truncated run)",
                                  line, b.layout.line);
                break;
            }
            if (b.complete) { /* next run in the same file */
                rc = finish_run(&b, out, file, text_op_name[0] ? text_op_name : NULL, op_hint, line, err);
                run_free(&b.run); /* a failed finish leaves the rows with the run */
                free(b.ranks);
                memset(&b, 0, sizeof b);
                b.op_named = -1;
                b.root = -1;
                if (rc) break;
            }
            b.layout = lay;
            b.have_table = true;
            continue;
        }
        if (*s == '#') {
            const char *c = s + 1;
            while (*c == ' ') c++;
            if (!strncmp(c, "Collective test starting:", 25) || !strncmp(c, "nThread", 7) ||
                !strncmp(c, "nccl-tests version", 18)) {
                if (b.complete) {
                    rc = finish_run(&b, out, file, text_op_name[0] ? text_op_name : NULL, op_hint, line, err);
                    run_free(&b.run);
                    free(b.ranks);
                    memset(&b, 0, sizeof b);
                    b.op_named = -1;
                    b.root = -1;
                    if (rc) break;
                } else if (b.have_table) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: a new run starts, but the table at line %d never ended with "
                                      "'# Avg bus bandwidth' (a truncated run)",
                                      line, b.layout.line);
                    break;
                }
            }
            if (!strncmp(c, "Collective test starting:", 25)) {
                int op = op_in_text(c + 25);
                if (op < 0) {
                    char name[64];
                    sscanf(c + 25, " %63s", name);
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: unknown test \"%s\" (dtsim reads all_reduce_perf, all_gather_perf, "
                                      "reduce_scatter_perf, alltoall_perf, sendrecv_perf, broadcast_perf, "
                                      "reduce_perf)",
                                      line, name);
                    break;
                }
                b.op_named = op;
                b.op_named_line = line;
            } else if (!strncmp(c, "nThread", 7)) {
                const char *w = strstr(c, "warmup iters:"), *it = strstr(c, " iters:");
                sscanf(c, "nThread %d nGpus %d", &b.nthread, &b.ngpus);
                if (w) sscanf(w, "warmup iters: %d", &b.run.warmup);
                /* " iters:" also matches inside "warmup iters:" and "agg iters:": take the
                 * one preceded by neither */
                for (const char *q = it; q; q = strstr(q + 1, " iters:")) {
                    if ((q - c >= 6 && !strncmp(q - 6, "warmup", 6)) || (q - c >= 3 && !strncmp(q - 3, "agg", 3)))
                        continue;
                    sscanf(q, " iters: %d", &b.run.iters);
                    break;
                }
            } else if (!strncmp(c, "Rank", 4)) {
                rank_info ri;
                if (parse_device(s, &ri, b.run.gpu, sizeof b.run.gpu)) {
                    if (b.n_ranks == b.cap_ranks) {
                        b.cap_ranks = b.cap_ranks ? 2 * b.cap_ranks : 16;
                        b.ranks = dt_xrealloc(b.ranks, (size_t)b.cap_ranks * sizeof *b.ranks);
                    }
                    ri.line = line;
                    b.ranks[b.n_ranks++] = ri;
                }
            } else if (strstr(c, "(us)") && b.have_table && b.run.n_rows == 0) {
                b.layout.time_scale = 1e-6;
            } else if (strstr(c, "(ms)") && b.have_table && b.run.n_rows == 0) {
                b.layout.time_scale = 1e-3;
            } else if (!strncmp(c, "Out of bounds values", 20)) {
                if (strstr(c, "FAILED")) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: the run reports out-of-bounds values (data corruption): a "
                                      "calibration from a failing run would be wrong",
                                      line);
                    break;
                }
            } else if (!strncmp(c, "Avg bus bandwidth", 17)) {
                if (!b.have_table) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: '# Avg bus bandwidth' without a table before it", line);
                    break;
                }
                b.complete = true;
            }
            continue;
        }
        /* not a comment: a row when it starts with size and count, else noise */
        char copy[1024];
        snprintf(copy, sizeof copy, "%s", s);
        char *tok[MAX_TOK];
        int nt = tokenize(copy, tok);
        long long v0, v1;
        if (nt < 2 || !parse_ll(tok[0], &v0) || !parse_ll(tok[1], &v1)) {
            out->noise_lines++;
            continue;
        }
        if (!b.have_table) {
            rc = dt_error_set(err, DT_EINPUT, file, NULL,
                              "line %d: a result row before any column header ('#  size  count  type ...')", line);
            break;
        }
        if (b.complete) {
            rc = dt_error_set(err, DT_EINPUT, file, NULL,
                              "line %d: a result row after the table's '# Avg bus bandwidth' line", line);
            break;
        }
        const table_layout *t = &b.layout;
        if (nt < t->n) {
            rc = dt_error_set(err, DT_EINPUT, file, NULL,
                              "line %d: %d fields where the header at line %d has %d: the row is cut short "
                              "(truncated or garbled log)",
                              line, nt, t->line, t->n);
            break;
        }
        if (strlen(s) >= sizeof copy - 1) {
            rc = dt_error_set(err, DT_EINPUT, file, NULL, "line %d: longer than any nccl-tests row", line);
            break;
        }
        double size = (double)v0;
        if (v0 < 0 || v1 < 0) {
            rc = dt_error_set(err, DT_EINPUT, file, NULL, "line %d: negative size or count", line);
            break;
        }
        double tm[2] = {0, 0}, ab[2] = {0, 0}, bb[2] = {0, 0};
        for (int c = 0; c < t->n && rc == DT_OK; c++) {
            const char *w = tok[c];
            switch (t->col[c]) {
            case C_TYPE: {
                const char *dt = dtype_of(w);
                if (!dt) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL, "line %d: unknown data type \"%s\"", line, w);
                    break;
                }
                if (b.run.dtype[0] && strcmp(b.run.dtype, dt)) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: data type %s, earlier rows were %s (run with one -d type per log)",
                                      line, w, b.run.dtype);
                    break;
                }
                snprintf(b.run.dtype, sizeof b.run.dtype, "%s", dt);
                break;
            }
            case C_REDOP: snprintf(b.redop, sizeof b.redop, "%s", w); break;
            case C_ROOT: {
                long long rt = -1;
                if (!parse_ll(w, &rt)) rc = dt_error_set(err, DT_EINPUT, file, NULL, "line %d: root \"%s\" is not an integer", line, w);
                b.root = rt;
                break;
            }
            case C_TIME: {
                int g = c == t->group_at[0] ? 0 : 1;
                double x;
                if (!strcmp(w, "N/A")) break;
                if (!parse_num(w, &x) || !(x > 0)) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: time \"%s\" is not a positive number (garbled row)", line, w);
                    break;
                }
                tm[g] = x * t->time_scale;
                if (!parse_num(tok[c + 1], &ab[g]) || ab[g] < 0 || !parse_num(tok[c + 2], &bb[g]) || bb[g] < 0) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: algbw \"%s\" / busbw \"%s\" are not bandwidths (garbled row)", line,
                                      tok[c + 1], tok[c + 2]);
                    break;
                }
                /* algbw = size / time (GB/s = 1e9 B/s), printed with two decimals from an
                 * unrounded time: agreement to the printing precision */
                double want = size / tm[g] / 1e9;
                if (fabs(ab[g] - want) > 0.011 + 0.005 * want) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: algbw %.2f GB/s is not size/time = %.2f GB/s: the row is garbled",
                                      line, ab[g], want);
                    break;
                }
                break;
            }
            case C_WRONG: {
                double x;
                if (!strcmp(w, "N/A") || !parse_num(w, &x)) break;
                if (x > 0) {
                    rc = dt_error_set(err, DT_EINPUT, file, NULL,
                                      "line %d: %s wrong elements: the run failed verification, and a calibration "
                                      "from it would be wrong",
                                      line, w);
                }
                break;
            }
            default: break;
            }
        }
        if (rc) break;
        if (!(tm[0] > 0) && !(tm[1] > 0)) {
            rc = dt_error_set(err, DT_EINPUT, file, NULL, "line %d: no time in the row", line);
            break;
        }
        if (b.run.n_rows && !(size > b.run.size[b.run.n_rows - 1])) {
            rc = dt_error_set(err, DT_EINPUT, file, NULL,
                              "line %d: size %.0f does not increase over the row before (line %d): rows of two "
                              "runs mixed?",
                              line, size, b.run.row_line[b.run.n_rows - 1]);
            break;
        }
        if (!tm[0] || !tm[1]) { /* one mode missing: the other stands for both */
            int have = tm[0] > 0 ? 0 : 1;
            tm[1 - have] = 0;
            ab[1 - have] = ab[have];
            bb[1 - have] = bb[have];
        }
        add_row(&b, size, tm, ab, bb, line);
        last_row_line = line;
    }
    if (rc == DT_OK) {
        if (b.have_table && !b.complete)
            rc = dt_error_set(err, DT_EINPUT, file, NULL,
                              "line %d: the log ends inside the table that starts at line %d (no '# Avg bus "
                              "bandwidth' line): truncated",
                              last_row_line ? last_row_line : L.n, b.layout.line);
        else if (b.complete)
            rc = finish_run(&b, out, file, text_op_name[0] ? text_op_name : NULL, op_hint, L.n, err);
        else if (out->n_runs == 0)
            rc = dt_error_set(err, DT_EINPUT, file, NULL,
                              "no nccl-tests result table (expected a '#  size  count  type ... time  algbw  busbw' "
                              "header followed by rows)");
    }
    run_free(&b.run);
    free(b.ranks);
    free(L.line);
    free(L.buf);
    if (rc) cal_nccl_log_free(out);
    return rc;
}

/* ---------------------------------------------------------------- fitting */

typedef struct size_samples {
    double size;
    double *t;
    int n, cap;
} size_samples;

static int by_size(const void *a, const void *b)
{
    double x = ((const size_samples *)a)->size, y = ((const size_samples *)b)->size;
    return (x > y) - (x < y);
}

/* Median of a sample list (copied, sorted). */
static double median_of(const double *t, int n)
{
    double *s = dt_xmalloc((size_t)n * sizeof *s);
    memcpy(s, t, (size_t)n * sizeof *s);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && s[j] < s[j - 1]; j--) {
            double x = s[j];
            s[j] = s[j - 1];
            s[j - 1] = x;
        }
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

/* Fit points [i0, i1) and report the worst relative miss of a median. settle: the line written
 * (cal_fit_line: a noisy negative latency held at 0, a clearly negative one refused); else the
 * free fit, enough to compare candidate ranges. */
static int fit_range(const size_samples *pts, int i0, int i1, bool settle, cal_fit *fit, double *worst, int *worst_at,
                     dt_error *err)
{
    int n = 0;
    for (int i = i0; i < i1; i++) n += pts[i].n;
    double *x = dt_xmalloc((size_t)n * sizeof *x), *t = dt_xmalloc((size_t)n * sizeof *t);
    int k = 0;
    for (int i = i0; i < i1; i++)
        for (int j = 0; j < pts[i].n; j++) {
            x[k] = pts[i].size;
            t[k++] = pts[i].t[j];
        }
    int rc = settle ? cal_fit_line(x, t, (size_t)n, fit, err) : cal_fit_alpha_beta(x, t, (size_t)n, fit, err);
    free(x);
    free(t);
    if (rc) return rc;
    *worst = 0;
    *worst_at = i0;
    for (int i = i0; i < i1; i++) {
        double line = fit->alpha + fit->beta * pts[i].size;
        double miss = line > 0 ? fabs(median_of(pts[i].t, pts[i].n) / line - 1) : INFINITY;
        if (miss > *worst) {
            *worst = miss;
            *worst_at = i;
        }
    }
    return DT_OK;
}

int cal_from_nccl_runs(const cal_nccl_run *runs, int n_runs, const cal_nccl_options *opt, cal_result **out,
                       dt_error *err)
{
    *out = NULL;
    double tol = opt && opt->tolerance > 0 ? opt->tolerance : 0.05;
    cal_result *c = dt_xcalloc(1, sizeof *c);
    cal_result_set_machine(c); /* the date of the import; the machine fields are replaced below */
    snprintf(c->backend, sizeof c->backend, "nccl-tests");
    c->cpu_model[0] = 0;
    c->cores = 0;
    int rc = DT_OK;
    bool *used = dt_xcalloc((size_t)n_runs + 1, sizeof *used);
    /* one fit per (collective, scope, ranks): runs of the same shape merge */
    for (int r0 = 0; r0 < n_runs && rc == DT_OK; r0++) {
        if (used[r0]) continue;
        const cal_nccl_run *R = &runs[r0];
        cal_scope scope = R->hosts > 1 ? CAL_SCOPE_INTER : CAL_SCOPE_INTRA;
        size_samples *pts = NULL;
        int n_pts = 0;
        int iters = 0, warmup = 0;
        char sources[CAL_NAME_MAX] = "";
        for (int r = r0; r < n_runs; r++) {
            const cal_nccl_run *Q = &runs[r];
            cal_scope qs = Q->hosts > 1 ? CAL_SCOPE_INTER : CAL_SCOPE_INTRA;
            if (used[r] || Q->kind != R->kind || qs != scope || Q->ranks != R->ranks) continue;
            for (int k = 0; k < c->n_algos; k++)
                if (c->algos[k].kind == Q->kind && c->algos[k].scope == qs) {
                    rc = dt_error_set(err, DT_EINPUT, Q->file, NULL,
                                      "line %d: a second %s_perf run over %s links with %d ranks (the first has %d): "
                                      "give logs of one shape per collective and scope",
                                      Q->line, op_test_names[Q->kind], qs == CAL_SCOPE_INTER ? "inter-host" : "intra-host",
                                      Q->ranks, c->algos[k].ranks);
                }
            if (rc) break;
            used[r] = true;
            if (Q->iters > iters) iters = Q->iters;
            if (Q->warmup > warmup) warmup = Q->warmup;
            const char *bn = strrchr(Q->file, '/');
            bn = bn ? bn + 1 : Q->file;
            if (!strstr(sources, bn) && strlen(sources) + strlen(bn) + 3 < sizeof sources)
                snprintf(sources + strlen(sources), sizeof sources - strlen(sources), "%s%s", sources[0] ? ", " : "", bn);
            for (int i = 0; i < Q->n_rows; i++) {
                if (!(Q->size[i] > 0)) continue; /* -b 0: no bytes moved, no point on the line */
                size_samples *p = NULL;
                for (int j = 0; j < n_pts; j++)
                    if (pts[j].size == Q->size[i]) p = &pts[j];
                if (!p) {
                    pts = dt_xrealloc(pts, (size_t)(n_pts + 1) * sizeof *pts);
                    p = &pts[n_pts++];
                    memset(p, 0, sizeof *p);
                    p->size = Q->size[i];
                }
                for (int g = 0; g < 2; g++)
                    if (Q->time[g][i] > 0) {
                        if (p->n == p->cap) p->t = dt_xrealloc(p->t, (size_t)(p->cap = p->cap ? 2 * p->cap : 4) * sizeof *p->t);
                        p->t[p->n++] = Q->time[g][i];
                    }
            }
        }
        if (rc) {
            for (int j = 0; j < n_pts; j++) free(pts[j].t);
            free(pts);
            break;
        }
        if (n_pts == 0) {
            rc = dt_error_set(err, DT_EINPUT, R->file, NULL, "line %d: every row has size 0: nothing to fit", R->line);
            break;
        }
        qsort(pts, (size_t)n_pts, sizeof *pts, by_size);
        /* candidate sizes: the caller's range, else all */
        int lo = 0, hi = n_pts;
        if (opt && opt->size_from > 0)
            while (lo < n_pts && pts[lo].size < opt->size_from * (1 - 1e-12)) lo++;
        if (opt && opt->size_to > 0)
            while (hi > lo && pts[hi - 1].size > opt->size_to * (1 + 1e-12)) hi--;
        bool forced = opt && (opt->size_from > 0 || opt->size_to > 0);
        cal_fit fit;
        double worst = 0;
        int worst_at = 0, chosen = -1;
        if (hi - lo < 2) {
            rc = dt_error_set(err, DT_EINPUT, R->file, NULL,
                              "%s_perf: %d size%s in the range to fit: a line needs 2 or more (more than 2 to say "
                              "anything about its quality)",
                              op_test_names[R->kind], hi - lo, hi - lo == 1 ? "" : "s");
        } else if (forced) {
            chosen = lo;
        } else {
            double best_worst = INFINITY;
            int best_i = -1;
            dt_error e2;
            for (int i = lo; i + 3 <= hi && chosen < 0; i++) {
                dt_error_clear(&e2);
                cal_fit f;
                double w;
                int wa;
                if (fit_range(pts, i, hi, false, &f, &w, &wa, &e2) != DT_OK || !(f.beta > 0)) continue;
                if (w <= tol) {
                    chosen = i;
                    fit = f;
                    worst = w;
                    worst_at = wa;
                } else if (w < best_worst) {
                    best_worst = w;
                    best_i = wa;
                }
            }
            if (chosen < 0) {
                char b1[32];
                rc = dt_error_set(err, DT_EINPUT, R->file, NULL,
                                  "%s_perf: no run of 3 or more consecutive sizes ending at the largest (%s) that "
                                  "one line T = alpha + S beta reproduces within %.3g %% (the best misses %s by "
                                  "%.1f %%): give --sizes FROM:TO or a larger --fit-tolerance",
                                  op_test_names[R->kind], unit_fmt_size(pts[hi - 1].size, b1, sizeof b1), 100 * tol,
                                  best_i >= 0 ? unit_fmt_size(pts[best_i].size, (char[32]){0}, 32) : "?",
                                  100 * best_worst);
            }
        }
        /* the chosen range fitted as it is written (the search compared free fits) */
        if (rc == DT_OK) {
            rc = fit_range(pts, chosen, hi, true, &fit, &worst, &worst_at, err);
            if (rc && err) {
                char tmp[DT_ERR_MSG_MAX];
                memcpy(tmp, err->msg, sizeof tmp);
                bool negative = fit.beta > 0 && cal_alpha_judge(fit.alpha, fit.alpha_ci) == CAL_ALPHA_NEGATIVE;
                dt_error_set(err, rc, R->file, NULL, "%s_perf: %.600s%s", op_test_names[R->kind], tmp,
                             negative ? ": fit a range that includes small sizes (--fit-range)" : "");
            }
        }
        if (rc == DT_OK && !(fit.beta > 0)) {
            rc = dt_error_set(err, DT_EINPUT, R->file, NULL,
                              "%s_perf: the time does not grow with the size over the range fitted (beta = %.3g s/B)",
                              op_test_names[R->kind], fit.beta);
        }
        /* What is written must read back: the calibration reader (models/gpu/calib.c) bounds every
         * fitted figure, and a log whose times span 1e-300..1e300 fits a line outside them. */
        if (rc == DT_OK && !(fabs(fit.alpha) <= 1e6 && fit.alpha_ci <= 1e6 && fit.beta <= 1e6 && fit.beta_ci <= 1e6 &&
                             fit.r2 >= -1e9)) {
            rc = dt_error_set(err, DT_EINPUT, R->file, NULL,
                              "%s_perf: the fitted line (alpha %.3g s +- %.3g, beta %.3g s/B +- %.3g, R^2 %.3g) is "
                              "outside what a calibration holds (|alpha|, beta and their 95 %% intervals up to 1e6 s): "
                              "the times are not those of a collective",
                              op_test_names[R->kind], fit.alpha, fit.alpha_ci, fit.beta, fit.beta_ci, fit.r2);
        }
        if (rc == DT_OK) {
            char name[32];
            snprintf(name, sizeof name, "nccltests_%s%s", cal_kind_name(R->kind), scope == CAL_SCOPE_INTER ? "_inter" : "");
            cal_algo *a = cal_result_add_algo(c, name, R->kind);
            a->fit = fit;
            a->ranks = R->ranks;
            a->hosts = R->hosts;
            a->scope = scope;
            a->fit_from = pts[chosen].size;
            a->fit_to = pts[hi - 1].size;
            a->fit_worst = worst;
            a->points = dt_xcalloc((size_t)n_pts, sizeof *a->points);
            for (int j = 0; j < n_pts; j++) cal_point_set(&a->points[a->n_points++], pts[j].size, pts[j].t, pts[j].n);
            if (c->n_algos == 1) {
                c->ranks = R->ranks;
                snprintf(c->dtype, sizeof c->dtype, "%s", R->dtype[0] ? R->dtype : "fp32");
                snprintf(c->hostname, sizeof c->hostname, "%s", R->hostnames);
                if (R->gpu[0]) snprintf(c->gpu, sizeof c->gpu, "%d x %.100s", R->ranks * R->groups, R->gpu);
                c->repeats = iters > 0 ? iters : 1;
                c->warmup = warmup;
                snprintf(c->origin, sizeof c->origin, "%s", sources);
            }
            (void)worst_at;
        }
        for (int j = 0; j < n_pts; j++) free(pts[j].t);
        free(pts);
    }
    free(used);
    if (rc == DT_OK && c->n_algos == 0) rc = dt_error_set(err, DT_EINPUT, NULL, NULL, "no nccl-tests runs to fit");
    if (rc) {
        cal_result_destroy(c);
        return rc;
    }
    *out = c;
    return DT_OK;
}

int cal_nccl_parse_file(const char *path, int op_hint, cal_nccl_log *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    /* dt_open_input: a FIFO would block fopen itself, before the check below could refuse it */
    FILE *f = dt_open_input(path, "rb", NULL, err);
    if (!f) return err ? err->code : DT_EIO;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return dt_error_set(err, DT_EINPUT, path, NULL, "not a regular file (a log is read whole)");
    }
    if (st.st_size > CAL_NCCL_MAX_BYTES) {
        fclose(f);
        return dt_error_set(err, DT_EINPUT, path, NULL, "%lld bytes: larger than the %d MiB dtsim reads from one log",
                            (long long)st.st_size, CAL_NCCL_MAX_BYTES >> 20);
    }
    size_t n = (size_t)st.st_size;
    char *buf = dt_xmalloc(n + 1);
    size_t got = fread(buf, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != n) {
        free(buf);
        return dt_error_set(err, DT_EIO, path, NULL, "read error");
    }
    int rc = cal_nccl_parse(buf, n, path, op_hint, out, err);
    free(buf);
    return rc;
}
