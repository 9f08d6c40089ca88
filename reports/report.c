/* report.c - gnuplot reports from a sweep's results.csv.
 *
 * Every plot is three files a user can restyle without dtsim: NAME.dat (the numbers, one
 * whitespace-separated table), NAME.gp (a plain gnuplot script reading it) and the pictures
 * the script draws, NAME.png (pngcairo) and NAME.svg. gnuplot runs in the report directory so
 * the scripts use bare file names. A plot is made only when the columns it needs are present;
 * rows whose status is not "ok" are left out.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dtsim/json.h"
#include "dtsim/report.h"

typedef struct table {
    char **head;
    size_t n_cols;
    char ***rows; /* rows[r][c], owned strings */
    size_t n_rows;
} table;

static void table_free(table *t)
{
    for (size_t c = 0; c < t->n_cols; c++) free(t->head[c]);
    for (size_t r = 0; r < t->n_rows; r++) {
        for (size_t c = 0; c < t->n_cols; c++) free(t->rows[r][c]);
        free(t->rows[r]);
    }
    free(t->head);
    free(t->rows);
}

/* One CSV record (RFC 4180 quoting). Returns the number of fields, -1 at end of file. */
static int csv_record(FILE *f, char ***fields)
{
    size_t n = 0, cap = 16, len = 0, lcap = 64;
    char **v = dt_xmalloc(cap * sizeof *v);
    char *cur = dt_xmalloc(lcap);
    bool quoted = false, any = false;
    int ch;
    for (;;) {
        ch = fgetc(f);
        if (ch == EOF && !any) {
            free(cur);
            free(v);
            return -1;
        }
        any = true;
        if (quoted) {
            if (ch == EOF) break;
            if (ch == '"') {
                int nx = fgetc(f);
                if (nx == '"') {
                    ch = '"';
                } else {
                    quoted = false;
                    if (nx != EOF) ungetc(nx, f);
                    continue;
                }
            }
        } else if (ch == '"' && len == 0) {
            quoted = true;
            continue;
        } else if (ch == ',' || ch == '\n' || ch == EOF) {
            if (len > 0 && cur[len - 1] == '\r') len--;
            cur[len] = '\0';
            if (n == cap) v = dt_xrealloc(v, (cap *= 2) * sizeof *v);
            v[n++] = dt_xstrdup(cur);
            len = 0;
            if (ch != ',') break;
            continue;
        }
        if (len + 2 > lcap) cur = dt_xrealloc(cur, lcap *= 2);
        cur[len++] = (char)ch;
    }
    free(cur);
    *fields = v;
    return (int)n;
}

static int table_read(const char *path, table *t, dt_error *err)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) return dt_error_set(err, DT_EIO, path, NULL, "cannot read: %s", strerror(errno));
    int n = csv_record(f, &t->head);
    if (n <= 0) {
        fclose(f);
        return dt_error_set(err, DT_EINPUT, path, NULL, "empty file: expected a CSV header");
    }
    t->n_cols = (size_t)n;
    size_t cap = 0;
    char **fields;
    int k, line = 1;
    while ((k = csv_record(f, &fields)) >= 0) {
        line++;
        if (k == 1 && !fields[0][0]) { /* blank line */
            free(fields[0]);
            free(fields);
            continue;
        }
        if ((size_t)k != t->n_cols) {
            for (int i = 0; i < k; i++) free(fields[i]);
            free(fields);
            fclose(f);
            table_free(t);
            memset(t, 0, sizeof *t);
            dt_error_set(err, DT_EINPUT, path, NULL, "record %d has %d fields, the header %d",
                         line, k, n);
            return DT_EINPUT;
        }
        if (t->n_rows == cap) t->rows = dt_xrealloc(t->rows, (cap = cap ? 2 * cap : 64) * sizeof *t->rows);
        t->rows[t->n_rows++] = fields;
    }
    fclose(f);
    return DT_OK;
}

/* Rows of a JSON array of flat objects (below), nested values left empty. */
static int table_from_array(const cJSON *j, const char *path, table *t, dt_error *err)
{
    memset(t, 0, sizeof *t);
    size_t cap = 0;
    int i = 0;
    for (const cJSON *row = j->child; row; row = row->next, i++) {
        if (!cJSON_IsObject(row)) {
            table_free(t);
            memset(t, 0, sizeof *t);
            return dt_error_set(err, DT_EINPUT, path, NULL, "element [%d] is not an object", i);
        }
        for (const cJSON *f = row->child; f; f = f->next) {
            size_t c = 0;
            while (c < t->n_cols && strcmp(t->head[c], f->string)) c++;
            if (c < t->n_cols) continue;
            if (t->n_rows > 0) continue; /* later rows' extra keys are ignored */
            t->head = dt_xrealloc(t->head, (t->n_cols + 1) * sizeof *t->head);
            t->head[t->n_cols++] = dt_xstrdup(f->string);
        }
        char **cells = dt_xcalloc(t->n_cols + 1, sizeof *cells);
        for (size_t c = 0; c < t->n_cols; c++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, t->head[c]);
            char buf[64] = "";
            if (cJSON_IsNumber(v))
                snprintf(buf, sizeof buf, "%.17g", v->valuedouble);
            else if (cJSON_IsBool(v))
                snprintf(buf, sizeof buf, "%d", cJSON_IsTrue(v));
            cells[c] = dt_xstrdup(cJSON_IsString(v) ? v->valuestring : buf);
        }
        if (t->n_rows == cap) t->rows = dt_xrealloc(t->rows, (cap = cap ? 2 * cap : 64) * sizeof *t->rows);
        t->rows[t->n_rows++] = cells;
    }
    if (t->n_cols == 0) return dt_error_set(err, DT_EINPUT, path, NULL, "no rows");
    return DT_OK;
}

/* A JSON array of flat objects (`dtsim collective --json` over a size sweep): columns are
 * the keys in first-seen order; numbers print as %.17g, strings as they are, other values
 * leave the cell empty. */
static int table_read_json(const char *path, table *t, dt_error *err)
{
    memset(t, 0, sizeof *t);
    cJSON *j = NULL;
    int rc = js_parse_file(path, &j, err);
    if (rc) return rc;
    if (!cJSON_IsArray(j)) {
        cJSON_Delete(j);
        return dt_error_set(err, DT_EINPUT, path, NULL,
                            "expected an array of objects (one per row), e.g. from "
                            "`dtsim collective --size 1KiB:1GiB:x2 --json`, a trace-event file "
                            "or `dtsim validate --json` output");
    }
    rc = table_from_array(j, path, t, err);
    cJSON_Delete(j);
    return rc;
}

static int col(const table *t, const char *name)
{
    for (size_t c = 0; c < t->n_cols; c++)
        if (!strcmp(t->head[c], name)) return (int)c;
    return -1;
}

static bool row_ok(const table *t, size_t r)
{
    int s = col(t, "status");
    return s < 0 || !strcmp(t->rows[r][s], "ok");
}

static double num(const table *t, size_t r, int c)
{
    if (c < 0) return NAN;
    char *end = NULL;
    double v = strtod(t->rows[r][c], &end);
    return end == t->rows[r][c] ? NAN : v;
}

/* Label of a point: its axis values ("parallel.tp=2 cluster.gpus=16"), last path part only. */
static void point_label(const table *t, size_t r, char *buf, size_t n)
{
    int p = col(t, "point"), s = col(t, "status");
    buf[0] = '\0';
    if (p < 0 || s < 0 || s <= p + 1) {
        snprintf(buf, n, "%zu", r);
        return;
    }
    size_t len = 0;
    for (int c = p + 1; c < s && len + 1 < n; c++) {
        const char *name = strrchr(t->head[c], '.');
        name = name ? name + 1 : t->head[c];
        int w = snprintf(buf + len, n - len, "%s%s=%s", len ? " " : "", name, t->rows[r][c]);
        if (w < 0) break;
        len += (size_t)w;
        if (len >= n) len = n - 1;
    }
    for (char *q = buf; *q; q++)
        if (*q == '"') *q = '\'';
}

static FILE *open_in(const char *dir, const char *name, const char *ext, dt_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "w");
    if (!f) dt_error_set(err, DT_EIO, path, NULL, "cannot write: %s", strerror(errno));
    return f;
}

/* A string from the user's data (an algorithm name, a track name) as a gnuplot single-quoted
 * literal: ' doubled, control characters (a newline would end the command) as spaces. Written
 * raw, "algo": "a'; system('rm ...'); '" ran a shell command when the script was plotted. */
static void gp_str(FILE *g, const char *s)
{
    fputc('\'', g);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', g);
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, g);
    }
    fputc('\'', g);
}

/* Script preamble and trailer: draw PNG, then the same plot as SVG. */
static void gp_begin(FILE *g, const char *name, const char *title)
{
    fprintf(g,
            "# %s.gp - written by `dtsim report`; edit and run `gnuplot %s.gp` to restyle.\n"
            "set terminal pngcairo size 900,560 noenhanced font 'Sans,10'\n"
            "set output '%s.png'\n"
            "set title \"%s\"\n"
            "set key outside right top\n"
            "set grid ytics\n",
            name, name, name, title);
}

static void gp_end(FILE *g, const char *name)
{
    fprintf(g,
            "set terminal svg size 900,560 dynamic noenhanced font 'Sans,10'\n"
            "set output '%s.svg'\n"
            "replot\n"
            "unset output\n",
            name);
}

static int close_pair(FILE *d, FILE *g, const char *dir, dt_error *err)
{
    bool bad = (d && (ferror(d) || fclose(d) != 0)) | (g && (ferror(g) || fclose(g) != 0));
    if (bad) return dt_error_set(err, DT_EIO, dir, NULL, "writing the report files failed");
    return DT_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* scaling: best throughput per GPU count vs the ideal line through the smallest count. */
static int plot_scaling(const table *t, const char *dir, bool *made, dt_error *err)
{
    int g = col(t, "n_gpus");
    int y = col(t, "tokens_per_s");
    const char *what = "tokens/s";
    if (y >= 0) {
        bool any = false;
        for (size_t r = 0; r < t->n_rows; r++) any |= row_ok(t, r) && num(t, r, y) > 0;
        if (!any) y = -1;
    }
    if (y < 0) {
        y = col(t, "samples_per_s");
        what = "samples/s";
    }
    *made = false;
    if (g < 0 || y < 0) return DT_OK;
    double *gs = dt_xmalloc((t->n_rows + 1) * sizeof *gs), *best = dt_xmalloc((t->n_rows + 1) * sizeof *best);
    size_t n = 0;
    for (size_t r = 0; r < t->n_rows; r++) {
        double gv = num(t, r, g), yv = num(t, r, y);
        if (!row_ok(t, r) || !(gv > 0) || !(yv > 0)) continue;
        size_t i = 0;
        while (i < n && gs[i] != gv) i++;
        if (i == n) {
            gs[n] = gv;
            best[n++] = yv;
        } else if (yv > best[i]) {
            best[i] = yv;
        }
    }
    if (n < 2) {
        free(gs);
        free(best);
        return DT_OK;
    }
    /* Sort pairs by GPU count (n is small). */
    double *pairs = dt_xmalloc(2 * n * sizeof *pairs);
    for (size_t i = 0; i < n; i++) {
        pairs[2 * i] = gs[i];
        pairs[2 * i + 1] = best[i];
    }
    qsort(pairs, n, 2 * sizeof *pairs, cmp_double);
    FILE *d = open_in(dir, "scaling", "dat", err), *gp = d ? open_in(dir, "scaling", "gp", err) : NULL;
    if (!d || !gp) {
        if (d) fclose(d);
        free(pairs), free(gs), free(best);
        return DT_EIO;
    }
    double g0 = pairs[0], y0 = pairs[1];
    fprintf(d, "# gpus  throughput(%s)  ideal  efficiency(%%)\n", what);
    for (size_t i = 0; i < n; i++) {
        double ideal = y0 * pairs[2 * i] / g0;
        fprintf(d, "%.10g %.10g %.10g %.6g\n", pairs[2 * i], pairs[2 * i + 1], ideal,
                100 * pairs[2 * i + 1] / ideal);
    }
    gp_begin(gp, "scaling", "Scaling: throughput and efficiency vs GPUs");
    fprintf(gp,
            "set logscale x 2\n"
            "set logscale y 10\n"
            "set format y '%%.0s%%c'\n"
            "set key inside right bottom\n"
            "set xlabel 'GPUs'\n"
            "set ylabel '%s (log scale)'\n"
            "set y2label 'scaling efficiency (%%)'\n"
            "set y2range [0:110]\n"
            "set nologscale y2\n"
            "set ytics nomirror\n"
            "set y2tics\n"
            "plot 'scaling.dat' using 1:2 with linespoints lw 2 pt 7 title 'simulated', \\\n"
            "     '' using 1:3 with lines dt 2 lw 1.5 title 'ideal linear', \\\n"
            "     '' using 1:4 axes x1y2 with linespoints pt 5 title 'efficiency (right)'\n",
            what);
    gp_end(gp, "scaling");
    free(pairs), free(gs), free(best);
    *made = true;
    return close_pair(d, gp, dir, err);
}

/* breakdown: stacked compute / exposed comm / bubble / straggler wait per point. */
static int plot_breakdown(const table *t, const char *dir, bool *made, dt_error *err)
{
    static const char *const parts[] = {"compute_s", "comm_exposed_s", "bubble_s",
                                        "straggler_wait_s"};
    int c[4];
    *made = false;
    for (int i = 0; i < 4; i++)
        if ((c[i] = col(t, parts[i])) < 0) return DT_OK;
    size_t n = 0;
    for (size_t r = 0; r < t->n_rows; r++) n += row_ok(t, r);
    if (n == 0) return DT_OK;
    FILE *d = open_in(dir, "breakdown", "dat", err), *gp = d ? open_in(dir, "breakdown", "gp", err) : NULL;
    if (!d || !gp) {
        if (d) fclose(d);
        return DT_EIO;
    }
    fprintf(d, "# point  compute(ms)  comm_exposed(ms)  bubble(ms)  straggler_wait(ms)\n");
    for (size_t r = 0; r < t->n_rows; r++) {
        if (!row_ok(t, r)) continue;
        char label[256];
        point_label(t, r, label, sizeof label);
        fprintf(d, "\"%s\"", label);
        for (int i = 0; i < 4; i++) {
            double v = num(t, r, c[i]);
            fprintf(d, " %.10g", isfinite(v) ? v * 1e3 : 0.0);
        }
        fputc('\n', d);
    }
    gp_begin(gp, "breakdown", "Step time breakdown per point");
    fprintf(gp,
            "set style data histograms\n"
            "set style histogram rowstacked\n"
            "set style fill solid 0.85 border -1\n"
            "set boxwidth 0.75\n"
            "set ylabel 'step time (ms)'\n"
            "set yrange [0:*]\n"
            "set xtics rotate by -35 left font ',8'\n"
            "plot 'breakdown.dat' using 2:xtic(1) title 'compute' lc rgb '#4477aa', \\\n"
            "     '' using 3 title 'comm (exposed)' lc rgb '#ee6677', \\\n"
            "     '' using 4 title 'pipeline bubble' lc rgb '#ccbb44', \\\n"
            "     '' using 5 title 'straggler wait' lc rgb '#aa3377'\n");
    gp_end(gp, "breakdown");
    *made = true;
    return close_pair(d, gp, dir, err);
}

/* memory: peak per GPU vs the GPU's capacity, per point (including points that do not fit). */
static int plot_memory(const table *t, const char *dir, bool *made, dt_error *err)
{
    int pk = col(t, "mem_peak_bytes"), cap = col(t, "mem_capacity_bytes"), fits = col(t, "fits");
    *made = false;
    if (pk < 0 || cap < 0) return DT_OK;
    size_t n = 0;
    for (size_t r = 0; r < t->n_rows; r++) n += row_ok(t, r);
    if (n == 0) return DT_OK;
    FILE *d = open_in(dir, "memory", "dat", err), *gp = d ? open_in(dir, "memory", "gp", err) : NULL;
    if (!d || !gp) {
        if (d) fclose(d);
        return DT_EIO;
    }
    const double GiB = 1024.0 * 1024 * 1024;
    fprintf(d, "# point  peak(GiB)  capacity(GiB)  fits\n");
    for (size_t r = 0; r < t->n_rows; r++) {
        if (!row_ok(t, r)) continue;
        char label[256];
        point_label(t, r, label, sizeof label);
        double f = fits >= 0 ? num(t, r, fits) : 1;
        fprintf(d, "\"%s\" %.6g %.6g %d\n", label, num(t, r, pk) / GiB, num(t, r, cap) / GiB,
                f != 0);
    }
    gp_begin(gp, "memory", "Peak memory per GPU vs capacity");
    fprintf(gp,
            "set style fill solid 0.8 border -1\n"
            "set boxwidth 0.7\n"
            "set offsets 0.6, 0.6, graph 0.08, 0\n"
            "set ylabel 'GiB per GPU (most loaded GPU)'\n"
            "set yrange [0:*]\n"
            "set xtics rotate by -35 left font ',8'\n"
            "plot 'memory.dat' using 0:($4 > 0 ? $2 : 1/0):xtic(1) with boxes lc rgb '#228833' title 'peak (fits)', \\\n"
            "     '' using 0:($4 > 0 ? 1/0 : $2) with boxes lc rgb '#cc3311' title 'peak (does not fit)', \\\n"
            "     '' using 0:3 with linespoints lw 2 pt 2 lc rgb 'black' title 'GPU capacity'\n");
    gp_end(gp, "memory");
    *made = true;
    return close_pair(d, gp, dir, err);
}

/* busbw: bus bandwidth vs message size, when the table has both (a collective sweep); one
 * line per algorithm when an "algo" column tells them apart. */
static int plot_busbw(const table *t, const char *dir, bool *made, dt_error *err)
{
    int s = -1, b = -1, a = col(t, "algo");
    *made = false;
    for (size_t c = 0; c < t->n_cols; c++) {
        const char *h = t->head[c], *last = strrchr(h, '.');
        last = last ? last + 1 : h;
        if (s < 0 && !strncmp(last, "size", 4)) s = (int)c;
        if (b < 0 && strstr(h, "busbw")) b = (int)c;
    }
    if (s < 0 || b < 0) return DT_OK;
    /* Series: distinct algo values in first-seen order (one unnamed series without). */
    const char **series = dt_xcalloc(t->n_rows + 1, sizeof *series);
    size_t n_series = 0;
    for (size_t r = 0; r < t->n_rows; r++) {
        const char *v = a >= 0 ? t->rows[r][a] : "";
        size_t k = 0;
        while (k < n_series && strcmp(series[k], v)) k++;
        if (k == n_series) series[n_series++] = v;
    }
    FILE *d = open_in(dir, "busbw", "dat", err), *gp = d ? open_in(dir, "busbw", "gp", err) : NULL;
    if (!d || !gp) {
        if (d) fclose(d);
        free(series);
        return DT_EIO;
    }
    fprintf(d, "# %s  %s; one block per algorithm (gnuplot index 0, 1, ...)\n", t->head[s], t->head[b]);
    for (size_t k = 0; k < n_series; k++) {
        if (k) fputs("\n\n", d);
        fprintf(d, "# %s\n", series[k][0] ? series[k] : "all");
        for (size_t r = 0; r < t->n_rows; r++) {
            if (!row_ok(t, r) || (a >= 0 && strcmp(t->rows[r][a], series[k]))) continue;
            double x = num(t, r, s), y = num(t, r, b);
            if (isfinite(x) && isfinite(y)) fprintf(d, "%.10g %.10g\n", x, y);
        }
    }
    gp_begin(gp, "busbw", "Bus bandwidth vs message size");
    fprintf(gp,
            "set logscale x 2\n"
            "set format x '%%.0b%%BB'\n"
            "set xlabel 'message size'\n"
            "set ylabel '%s'\n"
            "set key inside left top\n"
            "plot ",
            t->head[b]);
    for (size_t k = 0; k < n_series; k++) {
        fprintf(gp, "%s'busbw.dat' index %zu using 1:2 with linespoints lw 2 pt 7 title ",
                k ? ", \\\n     " : "", k);
        gp_str(gp, series[k][0] ? series[k] : "bus bandwidth");
    }
    fputc('\n', gp);
    gp_end(gp, "busbw");
    free(series);
    *made = true;
    return close_pair(d, gp, dir, err);
}

/* timeline: the per-GPU state tracks of a trace-event file (dtsim run --timeline) as a Gantt
 * chart - compute, exposed comm, waiting for peers, idle - one row per GPU, time in ms. */
static int plot_trace(const cJSON *root, const char *dir, int *rows, bool *made, dt_error *err)
{
    static const char *const states[] = {"compute", "comm (exposed)", "wait (peers)", "idle"};
    static const char *const colours[] = {"0x4477aa", "0xee6677", "0xaa3377", "0xdddddd"};
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    *made = false;
    *rows = 0;
    typedef struct track {
        double pid, tid;
        char name[96];
    } track;
    size_t n = (size_t)cJSON_GetArraySize(evs), nt = 0;
    track *tr = dt_xcalloc(n + 1, sizeof *tr);
    /* Rows: state tracks in order of first appearance (GPU order as dtsim writes them). */
    const cJSON *e;
    cJSON_ArrayForEach(e, evs)
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "state")) continue;
        double pid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "pid"));
        double tid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "tid"));
        size_t k = 0;
        while (k < nt && !(tr[k].pid == pid && tr[k].tid == tid)) k++;
        if (k == nt) {
            tr[nt].pid = pid;
            tr[nt].tid = tid;
            snprintf(tr[nt].name, sizeof tr[nt].name, "track %zu", nt);
            nt++;
        }
    }
    if (nt == 0) {
        free(tr);
        return DT_OK;
    }
    cJSON_ArrayForEach(e, evs)
    {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "M") || !cJSON_IsString(nm) ||
            strcmp(nm->valuestring, "thread_name"))
            continue;
        double pid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "pid"));
        double tid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "tid"));
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
        for (size_t k = 0; k < nt; k++)
            if (tr[k].pid == pid && tr[k].tid == tid && cJSON_IsString(a)) {
                snprintf(tr[k].name, sizeof tr[k].name, "%s", a->valuestring);
                char *st = strstr(tr[k].name, " state");
                if (st) *st = '\0';
            }
    }
    FILE *d = open_in(dir, "timeline", "dat", err), *gp = d ? open_in(dir, "timeline", "gp", err) : NULL;
    if (!d || !gp) {
        if (d) fclose(d);
        free(tr);
        return DT_EIO;
    }
    fprintf(d, "# row  start(ms)  end(ms)  colour  state\n");
    double t_end = 0;
    cJSON_ArrayForEach(e, evs)
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "state")) continue;
        double pid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "pid"));
        double tid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "tid"));
        double ts = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "ts")) / 1e3;
        double dur = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "dur")) / 1e3;
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        size_t k = 0;
        while (k < nt && !(tr[k].pid == pid && tr[k].tid == tid)) k++;
        int c = 3;
        for (int i = 0; i < 4; i++)
            if (cJSON_IsString(nm) && !strcmp(nm->valuestring, states[i])) c = i;
        fprintf(d, "%zu %.9g %.9g %s \"%s\"\n", k, ts, ts + dur, colours[c], states[c]);
        if (ts + dur > t_end) t_end = ts + dur;
    }
    gp_begin(gp, "timeline", "Per-GPU state over one step");
    fprintf(gp,
            "set xlabel 'time (ms)'\n"
            "set xrange [0:%.9g]\n"
            "set yrange [%zu-0.5:-0.5]\n"
            "set key outside right top\n"
            "unset grid\n",
            t_end, nt);
    if (nt <= 64) {
        fputs("set ytics (", gp);
        for (size_t k = 0; k < nt; k++) {
            fputs(k ? ", " : "", gp);
            gp_str(gp, tr[k].name);
            fprintf(gp, " %zu", k);
        }
        fputs(") font ',8'\n", gp);
    } else {
        fputs("set ylabel 'GPU track'\n", gp);
    }
    fputs("plot 'timeline.dat' using (($2+$3)/2):1:(($3-$2)/2):(0.4):4 with boxxyerror "
          "fs solid 1.0 noborder lc rgb variable notitle", gp);
    for (int i = 0; i < 4; i++)
        fprintf(gp, ", \\\n     NaN with boxes fs solid 1.0 lc rgb '#%s' title '%s'", colours[i] + 2,
                states[i]);
    fputc('\n', gp);
    gp_end(gp, "timeline");
    free(tr);
    *rows = (int)nt;
    *made = true;
    return close_pair(d, gp, dir, err);
}

/* parity: predicted against measured for `dtsim validate --json` rows, one panel per metric
 * (step time in s on log axes: the cases span two decades; model TFLOP/s per GPU and bus
 * bandwidth in GB/s on linear ones), each with the y = x line and the +-5 % and +-10 % bands.
 * A step time below the line is optimistic, a throughput above it. */
static int plot_parity(const table *t, const char *dir, bool *made, dt_error *err)
{
    int me = col(t, "measured"), pr = col(t, "predicted"), mt = col(t, "metric"), id = col(t, "id");
    *made = false;
    if (me < 0 || pr < 0 || mt < 0) return DT_OK;
    static const char *const metrics[] = {"step_time", "tflops_per_gpu", "busbw"};
    static const char *const titles[] = {"step time (s)", "model TFLOP/s per GPU",
                                         "bus bandwidth (GB/s)"};
    double lo[3], hi[3];
    int cnt[3] = {0, 0, 0}, panels = 0;
    for (int k = 0; k < 3; k++) {
        lo[k] = INFINITY, hi[k] = 0;
        for (size_t r = 0; r < t->n_rows; r++) {
            double x = num(t, r, me), y = num(t, r, pr);
            if (!row_ok(t, r) || !(x > 0) || !(y > 0) || strcmp(t->rows[r][mt], metrics[k])) continue;
            lo[k] = fmin(lo[k], fmin(x, y));
            hi[k] = fmax(hi[k], fmax(x, y));
            cnt[k]++;
        }
        panels += cnt[k] > 0;
    }
    if (panels == 0) return DT_OK;
    FILE *d = open_in(dir, "parity", "dat", err), *gp = d ? open_in(dir, "parity", "gp", err) : NULL;
    if (!d || !gp) {
        if (d) fclose(d);
        return DT_EIO;
    }
    fprintf(d, "# measured  predicted  case; one block per metric (gnuplot index 0, 1, 2)\n");
    for (int k = 0; k < 3; k++) {
        if (k) fputs("\n\n", d);
        fprintf(d, "# %s\n", titles[k]);
        for (size_t r = 0; r < t->n_rows; r++) {
            double x = num(t, r, me), y = num(t, r, pr);
            if (!row_ok(t, r) || !(x > 0) || !(y > 0) || strcmp(t->rows[r][mt], metrics[k])) continue;
            fprintf(d, "%.10g %.10g \"%s\"\n", x, y, id >= 0 ? t->rows[r][id] : "");
        }
        if (!cnt[k]) fprintf(d, "NaN NaN \"\"\n"); /* keeps the block for gnuplot's index */
    }
    fprintf(gp,
            "# parity.gp - written by `dtsim report`; edit and run `gnuplot parity.gp` to restyle.\n"
            "# One panel per metric: predicted against measured, y = x and the +-5 %% / +-10 %% bands.\n"
            "do for [out = 1:2] {\n"
            "  if (out == 1) { set terminal pngcairo size %d,520 noenhanced font 'Sans,10'; set output 'parity.png' }\n"
            "  if (out == 2) { set terminal svg size %d,520 dynamic noenhanced font 'Sans,10'; set output 'parity.svg' }\n"
            "  set multiplot layout 1,%d title 'dtsim validate: predicted vs measured'\n"
            "  set grid\n  set size ratio -1\n  set key inside left top font ',8'\n",
            470 * panels + 60, 470 * panels + 60, panels);
    for (int k = 0; k < 3; k++) {
        if (!cnt[k]) continue;
        double a = lo[k], b = hi[k];
        bool logs = k == 0;
        if (logs) a /= 1.4, b *= 1.4;
        else {
            double pad = 0.12 * b;
            a = fmax(0, a - pad), b += pad;
        }
        fprintf(gp,
                "  %s\n"
                "  set xrange [%.6g:%.6g]; set yrange [%.6g:%.6g]\n"
                "  set title '%s'; set xlabel 'measured'; set ylabel 'predicted'\n"
                "  plot x with lines lw 1.5 lc rgb 'black' title 'y = x', \\\n"
                "       1.05*x with lines dt 2 lc rgb '#228833' title '+-5 %%', 0.95*x with lines dt 2 lc rgb '#228833' notitle, \\\n"
                "       1.10*x with lines dt 3 lc rgb '#ccbb44' title '+-10 %%', 0.90*x with lines dt 3 lc rgb '#ccbb44' notitle, \\\n"
                "       'parity.dat' index %d using 1:2 with points pt 7 ps 1.1 lc rgb '#4477aa' notitle, \\\n"
                "       '' index %d using 1:2:3 with labels font ',7' offset 0.8,0.5 left notitle\n",
                logs ? "set logscale xy 10" : "unset logscale", a, b, a, b, titles[k], k, k);
    }
    fprintf(gp, "  unset multiplot\n  unset output\n}\n");
    *made = true;
    return close_pair(d, gp, dir, err);
}

static int run_gnuplot(const char *dir, const char *name, dt_error *err)
{
    const char *gnuplot = getenv("DTSIM_GNUPLOT");
    if (!gnuplot || !*gnuplot) gnuplot = "gnuplot";
    char script[128];
    snprintf(script, sizeof script, "%s.gp", name);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "fork failed: %s", strerror(errno));
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(126);
        FILE *null = freopen("/dev/null", "w", stdout);
        (void)null;
        execlp(gnuplot, gnuplot, script, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) break;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                            "cannot run %s (install gnuplot, e.g. apt-get install gnuplot-nox); "
                            "the .gp and .dat files are written in %s",
                            gnuplot, dir);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "%s %s failed in %s", gnuplot, script, dir);
    return DT_OK;
}

static const char *describe(const char *name)
{
    if (!strcmp(name, "scaling"))
        return "Best throughput at each GPU count (left axis) against ideal linear scaling from "
               "the smallest count, and scaling efficiency (right axis).";
    if (!strcmp(name, "breakdown"))
        return "Where each point's step time goes: compute, communication not hidden behind "
               "compute, pipeline bubble and waiting for stragglers.";
    if (!strcmp(name, "memory"))
        return "Peak memory of the most loaded GPU against the GPU's capacity; red bars do not "
               "fit.";
    if (!strcmp(name, "parity"))
        return "Predicted against measured for every case of the validation suite (log-log: each "
               "metric on its own scale); the dashed lines are +-5 % and the dotted +-10 % from "
               "exact. A step time below the line, or a throughput above it, is optimistic.";
    if (!strcmp(name, "timeline"))
        return "Each GPU's state over the step (from the timeline's state tracks): compute, "
               "communication not hidden by compute, waiting for peers, idle.";
    return "Bus bandwidth against message size.";
}

static int write_index(const char *dir, const rep_report_summary *sum, const char *src,
                       dt_error *err)
{
    FILE *md = open_in(dir, "index", "md", err), *html = md ? open_in(dir, "index", "html", err) : NULL;
    if (!md || !html) {
        if (md) fclose(md);
        return DT_EIO;
    }
    fprintf(md, "# dtsim report\n\nFrom `%s` (%d rows). Each plot has its data (`.dat`) and "
                "gnuplot script (`.gp`) beside it: edit the script and run `gnuplot NAME.gp` to "
                "restyle.\n",
            src, sum->rows);
    fprintf(html,
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dtsim report</title>\n"
            "<style>body{font-family:sans-serif;max-width:960px;margin:2em auto}"
            "img{max-width:100%%}</style></head><body>\n<h1>dtsim report</h1>\n"
            "<p>From <code>%s</code> (%d rows). Data (<code>.dat</code>) and gnuplot scripts "
            "(<code>.gp</code>) sit beside each picture.</p>\n",
            src, sum->rows);
    for (int i = 0; i < sum->n_plots; i++) {
        const char *n = sum->plots[i];
        fprintf(md, "\n## %s\n\n%s\n\n![%s](%s.png)\n\n[SVG](%s.svg) · [data](%s.dat) · "
                    "[script](%s.gp)\n",
                n, describe(n), n, n, n, n, n);
        fprintf(html,
                "<h2>%s</h2>\n<p>%s</p>\n<img src=\"%s.svg\" alt=\"%s\">\n"
                "<p><a href=\"%s.png\">PNG</a> · <a href=\"%s.dat\">data</a> · "
                "<a href=\"%s.gp\">script</a></p>\n",
                n, describe(n), n, n, n, n, n);
    }
    if (sum->n_plots == 0)
        fprintf(md, "\nNo plot applies: the results have none of the columns the plots need.\n");
    fprintf(html, "</body></html>\n");
    return close_pair(md, html, dir, err);
}

int rep_report_file(const char *input, const char *out, rep_report_summary *sum, dt_error *err)
{
    memset(sum, 0, sizeof *sum);
    table t;
    size_t n = strlen(input);
    bool is_json = n > 5 && !strcmp(input + n - 5, ".json");
    if (is_json) {
        /* A trace-event file (an object with traceEvents) gets the timeline plot. */
        cJSON *root = NULL;
        int rc = js_parse_file(input, &root, err);
        if (rc) return rc;
        if (cJSON_IsObject(root) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))) {
            if (mkdir(out, 0777) != 0 && errno != EEXIST) {
                cJSON_Delete(root);
                return dt_error_set(err, DT_EIO, out, NULL, "cannot create directory: %s", strerror(errno));
            }
            bool made = false;
            rc = plot_trace(root, out, &sum->rows, &made, err);
            cJSON_Delete(root);
            if (!rc && made) snprintf(sum->plots[sum->n_plots++], sizeof sum->plots[0], "timeline");
            const char *base = strrchr(input, '/');
            if (!rc) rc = write_index(out, sum, base ? base + 1 : input, err);
            if (!rc && made) rc = run_gnuplot(out, "timeline", err);
            return rc;
        }
        if (cJSON_IsObject(root) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "cases"))) {
            /* `dtsim validate --json`: the parity plot of its cases */
            rc = table_from_array(cJSON_GetObjectItemCaseSensitive(root, "cases"), input, &t, err);
            cJSON_Delete(root);
            if (rc) return rc;
            sum->rows = (int)t.n_rows;
            if (mkdir(out, 0777) != 0 && errno != EEXIST) {
                table_free(&t);
                return dt_error_set(err, DT_EIO, out, NULL, "cannot create directory: %s", strerror(errno));
            }
            bool made = false;
            rc = plot_parity(&t, out, &made, err);
            table_free(&t);
            if (!rc && made) snprintf(sum->plots[sum->n_plots++], sizeof sum->plots[0], "parity");
            const char *base = strrchr(input, '/');
            if (!rc) rc = write_index(out, sum, base ? base + 1 : input, err);
            if (!rc && made) rc = run_gnuplot(out, "parity", err);
            return rc;
        }
        cJSON_Delete(root);
    }
    int rc = is_json ? table_read_json(input, &t, err) : table_read(input, &t, err);
    if (rc) return rc;
    sum->rows = (int)t.n_rows;
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        table_free(&t);
        return dt_error_set(err, DT_EIO, out, NULL, "cannot create directory: %s", strerror(errno));
    }
    static const char *const names[] = {"scaling", "breakdown", "memory", "busbw"};
    int (*const makers[])(const table *, const char *, bool *, dt_error *) = {
        plot_scaling, plot_breakdown, plot_memory, plot_busbw};
    for (int i = 0; i < 4 && !rc; i++) {
        bool made = false;
        rc = makers[i](&t, out, &made, err);
        if (!rc && made) snprintf(sum->plots[sum->n_plots++], sizeof sum->plots[0], "%s", names[i]);
    }
    table_free(&t);
    const char *base = strrchr(input, '/');
    if (!rc) rc = write_index(out, sum, base ? base + 1 : input, err);
    for (int i = 0; i < sum->n_plots && !rc; i++) rc = run_gnuplot(out, sum->plots[i], err);
    return rc;
}

int rep_report(const char *dir, rep_report_summary *sum, dt_error *err)
{
    char csv[1024], out[1024];
    snprintf(csv, sizeof csv, "%s/results.csv", dir);
    snprintf(out, sizeof out, "%s/report", dir);
    return rep_report_file(csv, out, sum, err);
}
