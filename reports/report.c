/* report.c - gnuplot reports from a sweep's results.csv.
 *
 * Every plot is three files a user can restyle without dtsim: NAME.dat (the numbers, one
 * whitespace-separated table), NAME.gp (a plain gnuplot script reading it) and the pictures
 * the script draws, NAME.png (pngcairo) and NAME.svg. gnuplot runs in the report directory so
 * the scripts use bare file names. A plot is made only when the columns it needs are present;
 * rows whose status is not "ok" are left out.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dtsim/json.h"
#include "dtsim/limits.h"
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
    size_t size = 0;
    FILE *f = dt_open_input(path, "r", &size, err);
    if (!f) return err ? err->code : DT_EIO;
    /* Every field is a separate allocation (about 40 bytes with its pointers and headers):
     * count them before storing any, so a file of "1\n" lines cannot exhaust memory. */
    size_t seps = 1;
    for (int ch; (ch = getc(f)) != EOF;) seps += ch == ',' || ch == '\n';
    rewind(f);
    int mrc = dt_check_memory(40.0 * (double)seps + (double)size, "reading this CSV file", path,
                              NULL, err);
    if (mrc) {
        fclose(f);
        return mrc;
    }
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

/* Axis columns: those between "point" and "status" (a sweep's results.csv); [a, b). */
static bool axis_range(const table *t, int *a, int *b)
{
    int p = col(t, "point"), s = col(t, "status");
    if (p < 0 || s < 0 || s <= p + 1) return false;
    *a = p + 1;
    *b = s;
    return true;
}

/* An axis is worth a label when it takes more than one value over the rows that are drawn. */
static bool axis_varies(const table *t, int c)
{
    const char *first = NULL;
    for (size_t r = 0; r < t->n_rows; r++) {
        if (!row_ok(t, r)) continue;
        if (!first) first = t->rows[r][c];
        else if (strcmp(first, t->rows[r][c])) return true;
    }
    return false;
}

static const char *axis_short(const char *name)
{
    const char *s = strrchr(name, '.');
    return s ? s + 1 : name;
}

/* Label of a point on a category axis: the values of the axes that vary ("2 16": the x label
 * names them, see points_xlabel), values cut to 12 characters; the point number when no axis
 * varies or there is none. Short, so that 20 or 30 labels fit under the bars. */
static void point_label(const table *t, size_t r, char *buf, size_t n)
{
    int a, b;
    buf[0] = '\0';
    size_t len = 0;
    if (axis_range(t, &a, &b))
        for (int c = a; c < b && len + 1 < n; c++) {
            if (!axis_varies(t, c)) continue;
            int w = snprintf(buf + len, n - len, "%s%.12s", len ? " " : "", t->rows[r][c]);
            if (w < 0) break;
            len += (size_t)w;
            if (len >= n) len = n - 1;
        }
    if (!len) {
        int p = col(t, "point");
        snprintf(buf, n, "%s", p >= 0 ? t->rows[r][p] : "");
        if (p < 0) snprintf(buf, n, "%zu", r);
    }
    for (char *q = buf; *q; q++)
        if (*q == '"') *q = '\'';
}

/* What point labels list: "tp / gpus" (the varying axes' last path parts), or "point". */
static void points_xlabel(const table *t, char *buf, size_t n)
{
    int a, b;
    size_t len = 0;
    buf[0] = '\0';
    if (axis_range(t, &a, &b))
        for (int c = a; c < b && len + 1 < n; c++) {
            if (!axis_varies(t, c)) continue;
            int w = snprintf(buf + len, n - len, "%s%s", len ? " / " : "", axis_short(t->head[c]));
            if (w < 0) break;
            len += (size_t)w;
            if (len >= n) len = n - 1;
        }
    if (!len) snprintf(buf, n, "point");
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

/* Script preamble and trailer: draw PNG, then the same plot as SVG. The title is what the plot
 * shows, then the scenario it comes from (user data, hence quoted by gp_str). */
static void gp_begin(FILE *g, const char *name, const char *title, const char *scenario)
{
    fprintf(g,
            "# %s.gp - written by `dtsim report`; edit and run `gnuplot %s.gp` to restyle.\n"
            "set terminal pngcairo size 900,560 noenhanced font 'Sans,10'\n"
            "set output '%s.png'\n"
            "set title ",
            name, name, name);
    char buf[512];
    if (scenario && scenario[0]) snprintf(buf, sizeof buf, "%s\n%s", title, scenario);
    else snprintf(buf, sizeof buf, "%s", title);
    /* gp_str turns control characters into spaces: put the line break back as gnuplot's. */
    char *nl = strchr(buf, '\n');
    if (nl) {
        *nl = '\0';
        gp_str(g, buf);
        fputs(" . \"\\n\" . ", g);
        gp_str(g, nl + 1);
    } else {
        gp_str(g, buf);
    }
    fputs("\nset key outside right top\nset grid ytics\n", g);
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

/* Flush and close both, checked; the message keeps the errno of the first failure (a write
 * error the stream did not keep reads EIO). */
static int close_pair(FILE *d, FILE *g, const char *dir, dt_error *err)
{
    int e = 0;
    FILE *fs[2] = {d, g};
    for (int i = 0; i < 2; i++) {
        if (!fs[i]) continue;
        errno = 0;
        if ((fflush(fs[i]) != 0 || ferror(fs[i])) && !e) e = errno ? errno : EIO;
        if (fclose(fs[i]) != 0 && !e) e = errno;
    }
    if (e) return dt_error_set(err, DT_EIO, dir, NULL, "writing the report files failed: %s", strerror(e));
    return DT_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* scaling: best throughput per GPU count vs the ideal line through the smallest count. Only
 * plans that fit count (a "fits" column of 0 marks one that does not): a point that would not
 * run must neither be drawn as achievable nor anchor the ideal line. */
static int plot_scaling(const table *t, const char *dir, const char *scen, bool *made,
                        dt_error *err)
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
    int fits = col(t, "fits");
    for (size_t r = 0; r < t->n_rows; r++) {
        double gv = num(t, r, g), yv = num(t, r, y);
        if (!row_ok(t, r) || !(gv > 0) || !(yv > 0)) continue;
        if (fits >= 0 && num(t, r, fits) == 0) continue;
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
    gp_begin(gp, "scaling", "Scaling: throughput and efficiency vs GPUs (plans that fit)", scen);
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

/* goodput: a `dtsim goodput --plot` table (interval_s, goodput, goodput_ci95, renewal,
 * young_s, daly_s): simulated goodput with its 95 % band against the checkpoint interval, the
 * renewal closed form where it applies, Young's and Daly's intervals as marks. */
static int plot_goodput(const table *t, const char *dir, const char *scen, bool *made,
                        dt_error *err)
{
    int ci = col(t, "interval_s"), cg = col(t, "goodput"), ce = col(t, "goodput_ci95");
    int cr = col(t, "renewal"), cy = col(t, "young_s"), cd = col(t, "daly_s"), cb = col(t, "best");
    *made = false;
    if (ci < 0 || cg < 0) return DT_OK;
    double xmax = 0;
    size_t n = 0;
    bool renewal = false;
    for (size_t r = 0; r < t->n_rows; r++) {
        double x = num(t, r, ci), g = num(t, r, cg);
        if (!(x > 0) || !isfinite(g)) continue;
        if (x > xmax) xmax = x;
        renewal |= isfinite(num(t, r, cr));
        n++;
    }
    if (n < 2) return DT_OK;
    /* minutes unless the intervals are hours long (or seconds short) */
    double unit = xmax >= 3 * 3600 ? 3600 : xmax >= 180 ? 60 : 1;
    const char *uname = unit == 3600 ? "h" : unit == 60 ? "min" : "s";
    FILE *d = open_in(dir, "goodput", "dat", err), *gp = d ? open_in(dir, "goodput", "gp", err) : NULL;
    if (!d || !gp) {
        if (d) fclose(d);
        return DT_EIO;
    }
    fprintf(d, "# interval(%s)  goodput(%%)  low(%%)  high(%%)  renewal(%%)\n", uname);
    double young = NAN, daly = NAN, best = NAN;
    for (size_t r = 0; r < t->n_rows; r++) {
        double x = num(t, r, ci), g = num(t, r, cg), e = num(t, r, ce), rn = num(t, r, cr);
        if (!(x > 0) || !isfinite(g)) continue;
        if (!isfinite(e)) e = 0;
        fprintf(d, "%.10g %.8g %.8g %.8g %.8g\n", x / unit, 100 * g, 100 * (g - e), 100 * (g + e),
                isfinite(rn) ? 100 * rn : NAN);
        if (isfinite(num(t, r, cy))) young = num(t, r, cy);
        if (isfinite(num(t, r, cd))) daly = num(t, r, cd);
        if (cb >= 0 && num(t, r, cb) == 1) best = x;
    }
    gp_begin(gp, "goodput", "Goodput vs checkpoint interval", scen);
    fprintf(gp,
            "set logscale x\n"
            "set key inside right bottom\n"
            "set xlabel 'checkpoint interval (training time between checkpoints, %s, log scale)'\n"
            "set ylabel 'goodput (%% of wall-clock time training kept work)'\n",
            uname);
    const double marks[3] = {young, daly, best};
    const char *const mark_names[3] = {"Young", "Daly", "best"};
    for (int i = 0; i < 3; i++)
        if (isfinite(marks[i]) && marks[i] > 0)
            fprintf(gp,
                    "set arrow from %.10g, graph 0 to %.10g, graph 1 nohead dt %d lc rgb '%s'\n"
                    "set label '%s' at %.10g, graph %.2f offset 0.5,0\n",
                    marks[i] / unit, marks[i] / unit, i == 2 ? 1 : 3,
                    i == 2 ? "#cc0000" : "#555555", mark_names[i], marks[i] / unit, 0.06 + 0.06 * i);
    fprintf(gp,
            "plot 'goodput.dat' using 1:3:4 with filledcurves lc rgb '#cfe2f3' title '95%% confidence', \\\n"
            "     '' using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '#1f4e79' title 'simulated (mean of runs)'%s\n",
            renewal ? ", \\\n     '' using 1:5 with lines dt 2 lw 1.5 lc rgb '#000000' title 'renewal formula (exponential)'" : "");
    gp_end(gp, "goodput");
    *made = true;
    return close_pair(d, gp, dir, err);
}

/* Seconds in the unit that keeps the largest value between 1 and 10,000: "s", "ms", "us". */
static const char *time_unit(double max_s, double *scale)
{
    if (max_s >= 10) {
        *scale = 1;
        return "s";
    }
    if (max_s >= 10e-3) {
        *scale = 1e3;
        return "ms";
    }
    *scale = 1e6;
    return "us";
}

/* breakdown: stacked compute / exposed comm (by kind when the results have comm_KIND_s
 * columns) / bubble / straggler wait per point, in the unit that suits the largest step. */
static int plot_breakdown(const table *t, const char *dir, const char *scen, bool *made,
                          dt_error *err)
{
    static const char *const parts[] = {"compute_s",   "comm_tp_s", "comm_pp_s", "comm_dp_s",
                                        "comm_zero_s", "comm_exposed_s", "bubble_s",
                                        "straggler_wait_s"};
    static const char *const titles[] = {"compute", "comm TP", "comm PP", "comm DP", "comm ZeRO",
                                         "comm (exposed)", "pipeline bubble", "straggler wait"};
    static const char *const colours[] = {"#4477aa", "#ee6677", "#66ccee", "#ccbb44", "#228833",
                                          "#ee6677", "#bbbbbb", "#aa3377"};
    enum { N_PARTS = 8, COMM_ALL = 5 };
    int c[N_PARTS];
    bool use[N_PARTS];
    *made = false;
    for (int i = 0; i < N_PARTS; i++) c[i] = col(t, parts[i]);
    if (c[0] < 0 || c[COMM_ALL] < 0 || c[6] < 0 || c[7] < 0) return DT_OK;
    bool by_kind = c[1] >= 0 && c[2] >= 0 && c[3] >= 0 && c[4] >= 0;
    for (int i = 0; i < N_PARTS; i++) use[i] = i == COMM_ALL ? !by_kind : (i < 1 || i > 4 || by_kind);
    size_t n = 0;
    double max = 0;
    for (size_t r = 0; r < t->n_rows; r++) {
        if (!row_ok(t, r)) continue;
        n++;
        double sum = 0;
        for (int i = 0; i < N_PARTS; i++)
            if (use[i] && isfinite(num(t, r, c[i]))) sum += num(t, r, c[i]);
        if (sum > max) max = sum;
    }
    if (n == 0) return DT_OK;
    double scale;
    const char *unit = time_unit(max, &scale);
    FILE *d = open_in(dir, "breakdown", "dat", err), *gp = d ? open_in(dir, "breakdown", "gp", err) : NULL;
    if (!d || !gp) {
        if (d) fclose(d);
        return DT_EIO;
    }
    char xl[256];
    points_xlabel(t, xl, sizeof xl);
    fprintf(d, "# %s", xl);
    for (int i = 0; i < N_PARTS; i++)
        if (use[i]) fprintf(d, "  %s(%s)", parts[i], unit);
    fputc('\n', d);
    for (size_t r = 0; r < t->n_rows; r++) {
        if (!row_ok(t, r)) continue;
        char label[256];
        point_label(t, r, label, sizeof label);
        fprintf(d, "\"%s\"", label);
        for (int i = 0; i < N_PARTS; i++) {
            if (!use[i]) continue;
            double v = num(t, r, c[i]);
            fprintf(d, " %.10g", isfinite(v) ? v * scale : 0.0);
        }
        fputc('\n', d);
    }
    gp_begin(gp, "breakdown", "Step time breakdown per point", scen);
    fprintf(gp,
            "set style data histograms\n"
            "set style histogram rowstacked\n"
            "set style fill solid 0.85 border -1\n"
            "set boxwidth 0.75\n"
            "set ylabel 'step time (%s)'\n"
            "set xlabel ",
            unit);
    gp_str(gp, xl);
    fprintf(gp,
            "\nset yrange [0:*]\n"
            "set xtics %s font ',8'\n"
            "plot ",
            n > 8 ? "rotate by -45 left" : "nomirror");
    int k = 2;
    bool first = true;
    for (int i = 0; i < N_PARTS; i++) {
        if (!use[i]) continue;
        if (first) fprintf(gp, "'breakdown.dat' using %d:xtic(1)", k);
        else fprintf(gp, ", \\\n     '' using %d", k);
        fprintf(gp, " title '%s' lc rgb '%s'", titles[i], colours[i]);
        first = false;
        k++;
    }
    fputc('\n', gp);
    gp_end(gp, "breakdown");
    *made = true;
    return close_pair(d, gp, dir, err);
}

/* memory: peak per GPU vs the GPU's capacity, per point (including points that do not fit). */
static int plot_memory(const table *t, const char *dir, const char *scen, bool *made,
                       dt_error *err)
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
    gp_begin(gp, "memory", "Peak memory per GPU vs capacity", scen);
    fprintf(gp,
            "set style fill solid 0.8 border -1\n"
            "set boxwidth 0.7\n"
            "set offsets 0.6, 0.6, graph 0.08, 0\n"
            "set ylabel 'GiB per GPU (most loaded GPU)'\n"
            "set yrange [0:*]\n"
            "set xtics %s font ',8'\n"
            "plot 'memory.dat' using 0:($4 > 0 ? $2 : 1/0):xtic(1) with boxes lc rgb '#228833' title 'peak (fits)', \\\n"
            "     '' using 0:($4 > 0 ? 1/0 : $2) with boxes lc rgb '#cc3311' title 'peak (does not fit)', \\\n"
            "     '' using 0:3 with linespoints lw 2 pt 2 lc rgb 'black' title 'GPU capacity'\n",
            n > 8 ? "rotate by -45 left" : "nomirror");
    char xl[256];
    points_xlabel(t, xl, sizeof xl);
    fputs("set xlabel ", gp);
    gp_str(gp, xl);
    fputs("\nreplot\n", gp);
    gp_end(gp, "memory");
    *made = true;
    return close_pair(d, gp, dir, err);
}

/* busbw: bus bandwidth vs message size, when the table has both (a collective sweep); one
 * line per algorithm when an "algo" column tells them apart. */
static int plot_busbw(const table *t, const char *dir, const char *scen, bool *made,
                      dt_error *err)
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
    gp_begin(gp, "busbw", "Bus bandwidth vs message size", scen);
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
/* The timeline's state names: compute, "comm KIND (exposed)" per kind of communication (the
 * first kind when several were in flight; plain "comm (exposed)" from older files), waiting
 * for peers, idle. */
static const char *const trace_states[] = {"compute", "comm TP", "comm PP", "comm DP",
                                           "comm ZeRO", "comm (exposed)", "wait (peers)", "idle"};
static const char *const trace_colours[] = {"0x4477aa", "0xee6677", "0x66ccee", "0xccbb44",
                                            "0x228833", "0xee6677", "0xaa3377", "0xdddddd"};
enum { TRACE_N_STATES = 8, TRACE_IDLE = 7 };
/* Expert and context parallel communication ("comm EP", "comm CP") are drawn as "comm
 * (exposed)": their own colours would change every existing chart's legend. */
_Static_assert(WL_COMM_KIND_COUNT == 6, "a new communication kind needs its timeline state here");

static int trace_state(const char *name)
{
    if (!strcmp(name, "compute")) return 0;
    if (!strcmp(name, "wait (peers)")) return 6;
    if (!strncmp(name, "comm ", 5)) {
        for (int i = 1; i <= 4; i++) {
            size_t n = strlen(trace_states[i]);
            if (!strncmp(name, trace_states[i], n) && (name[n] == ' ' || name[n] == '+'))
                return i;
        }
        return 5;
    }
    return TRACE_IDLE;
}

static int plot_trace(const cJSON *root, const char *dir, const char *scen, int *rows, bool *made,
                      dt_error *err)
{
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
    bool used[TRACE_N_STATES] = {false};
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
        int c = cJSON_IsString(nm) ? trace_state(nm->valuestring) : TRACE_IDLE;
        used[c] = true;
        fprintf(d, "%zu %.9g %.9g %s \"%s\"\n", k, ts, ts + dur, trace_colours[c], trace_states[c]);
        if (ts + dur > t_end) t_end = ts + dur;
    }
    gp_begin(gp, "timeline", "Per-GPU state over one step", scen);
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
    for (int i = 0; i < TRACE_N_STATES; i++)
        if (used[i])
            fprintf(gp, ", \\\n     NaN with boxes fs solid 1.0 lc rgb '#%s' title '%s'",
                    trace_colours[i] + 2, trace_states[i]);
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

/* gnuplot does not report a failed write of its pictures (a full disk leaves an empty or cut
 * PNG and exit status 0): check that both are complete. A PNG ends with its IEND chunk (the
 * 12 bytes below), an SVG with its closing tag and white space. */
static int picture_complete(const char *path, bool png)
{
    FILE *f = fopen(path, "rb");
    if (!f) return errno;
    unsigned char tail[64];
    size_t n = 0;
    if (fseek(f, -(long)sizeof tail, SEEK_END) != 0) rewind(f);
    n = fread(tail, 1, sizeof tail, f);
    fclose(f);
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    if (png) return n >= 12 && !memcmp(tail + n - 12, iend, 12) ? 0 : EIO;
    while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == ' ' || tail[n - 1] == '\r')) n--;
    return n >= 6 && !memcmp(tail + n - 6, "</svg>", 6) ? 0 : EIO;
}

static int check_pictures(const char *dir, const char *name, dt_error *err)
{
    for (int k = 0; k < 2; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.%s", dir, name, k ? "svg" : "png");
        int e = picture_complete(path, k == 0);
        if (e)
            return e == EIO ? dt_error_set(err, DT_EIO, path, NULL,
                                           "gnuplot left this picture incomplete (a full disk? "
                                           "gnuplot does not report failed writes)")
                            : dt_error_set(err, DT_EIO, path, NULL, "gnuplot wrote no picture: %s",
                                           strerror(e));
    }
    return DT_OK;
}

static int run_gnuplot(const char *dir, const char *name, dt_error *err)
{
    const char *gnuplot = getenv("DTSIM_GNUPLOT");
    if (!gnuplot || !*gnuplot) gnuplot = "gnuplot";
    char script[128];
    snprintf(script, sizeof script, "%s.gp", name);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "fork failed: %s", strerror(errno));
    if (pid == 0) {
#ifdef __linux__
        /* dies with us: an interrupted report leaves no gnuplot drawing into a removed folder.
         * A parent killed (kill -9) before prctl ran sends no signal: then stop here, or gnuplot
         * would draw into the stage that the next run is removing as a dead process's. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(126);
#endif
        if (chdir(dir) != 0) _exit(126);
        int null = open("/dev/null", O_WRONLY); /* not freopen: stdout may be no file stream */
        if (null >= 0) dup2(null, STDOUT_FILENO);
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
    return check_pictures(dir, name, err);
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
    if (!strcmp(name, "goodput"))
        return "Goodput (share of wall-clock time whose training is kept) against the checkpoint "
               "interval, mean of the simulated runs with its 95 % confidence band; the renewal "
               "formula where failures are exponential; Young's and Daly's intervals and the "
               "best one simulated.";
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

/* The scenario a table or timeline comes from, for plot titles: the "name" of the scenario a
 * sweep ran (sweep.json beside results.csv, scenario_text.name, else its file), the timeline's
 * otherData.scenario, else the input's own file name. */
static void scenario_label(const char *input, const cJSON *trace, char *buf, size_t n)
{
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    snprintf(buf, n, "%s", base);
    if (trace) {
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(trace, "otherData"), "scenario");
        if (cJSON_IsString(sc) && sc->valuestring[0]) snprintf(buf, n, "%s", sc->valuestring);
        return;
    }
    char path[1024];
    int dl = (int)(base - input);
    snprintf(path, sizeof path, "%.*ssweep.json", dl, input);
    FILE *f = fopen(path, "r");
    if (!f) return;
    fclose(f);
    cJSON *m = NULL;
    dt_error e;
    dt_error_clear(&e);
    if (js_parse_file(path, &m, &e) != DT_OK) return;
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(m, "scenario");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(m, "scenario_text"), "name");
    const char *fb = cJSON_IsString(file) ? strrchr(file->valuestring, '/') : NULL;
    const char *fname = cJSON_IsString(file) ? (fb ? fb + 1 : file->valuestring) : "";
    if (cJSON_IsString(name) && name->valuestring[0])
        snprintf(buf, n, "%.200s%s%.200s%s", name->valuestring, fname[0] ? " (" : "", fname,
                 fname[0] ? ")" : "");
    else if (fname[0])
        snprintf(buf, n, "%s", fname);
    cJSON_Delete(m);
}

int rep_report_file(const char *input, const char *out, rep_report_summary *sum, dt_error *err)
{
    memset(sum, 0, sizeof *sum);
    table t;
    size_t n = strlen(input);
    bool is_json = n > 5 && !strcmp(input + n - 5, ".json");
    char scen[512];
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
            scenario_label(input, root, scen, sizeof scen);
            rc = plot_trace(root, out, scen, &sum->rows, &made, err);
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
    scenario_label(input, NULL, scen, sizeof scen);
    static const char *const names[] = {"scaling", "breakdown", "memory", "busbw", "goodput"};
    int (*const makers[])(const table *, const char *, const char *, bool *, dt_error *) = {
        plot_scaling, plot_breakdown, plot_memory, plot_busbw, plot_goodput};
    for (int i = 0; i < 5 && !rc; i++) {
        bool made = false;
        rc = makers[i](&t, out, scen, &made, err);
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
