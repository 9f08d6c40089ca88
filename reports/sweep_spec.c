/* sweep_spec.c - parsing a scenario's "sweep" and expanding its points.
 *
 * A sweep is a list of dimensions crossed with each other; a dimension is one axis, or a group
 * of zipped axes walked in lock step. Values are copied out of the scenario once (cJSON nodes
 * held in arrays for O(1) indexing), so a point costs one scenario copy plus one set per column.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/json.h"
#include "dtsim/limits.h"
#include "dtsim/sweep.h"

/* A sweep of more points than this is almost certainly a mistake (and its result files would
 * be gigabytes); the limit also keeps products from overflowing. */
#define SWEEP_MAX_POINTS 10000000u
#define SWEEP_MAX_VALUES 1000000u

typedef struct sweep_col {
    char *path;
    cJSON **values; /* owned copies */
    size_t n;
} sweep_col;

typedef struct sweep_dim {
    size_t first_col, n_cols, n;
} sweep_dim;

struct sweep_spec {
    sweep_col *cols;
    size_t n_cols, cap_cols;
    sweep_dim *dims;
    size_t n_dims;
    size_t n_points;
    size_t done_points; /* product of the lengths of the dimensions finished so far */
};

/* How many values the next column may have: a column longer than this makes the sweep exceed
 * SWEEP_MAX_POINTS whatever follows. Checked before its values are built, so 50 axes of a
 * million values each (a 3 KB file) fail at the second axis instead of building 50 million
 * values (17 s, 4.2 GB) before the point count was looked at. */
static size_t col_budget(const sweep_spec *s)
{
    size_t b = SWEEP_MAX_POINTS / (s->done_points ? s->done_points : 1);
    return b < SWEEP_MAX_VALUES ? b : SWEEP_MAX_VALUES;
}

static int too_many(const js_ctx *ctx, const char *path, const sweep_spec *s)
{
    if (SWEEP_MAX_POINTS / (s->done_points ? s->done_points : 1) < SWEEP_MAX_VALUES)
        return js_fail(ctx, path, NULL, "the sweep would have more than %u points (the axes "
                       "before this one give %zu)", SWEEP_MAX_POINTS,
                       s->done_points ? s->done_points : 1);
    return js_fail(ctx, path, NULL, "more than %u values", SWEEP_MAX_VALUES);
}

static sweep_col *add_col(sweep_spec *s)
{
    if (s->n_cols == s->cap_cols) {
        s->cap_cols = s->cap_cols ? 2 * s->cap_cols : 8;
        s->cols = dt_xrealloc(s->cols, s->cap_cols * sizeof *s->cols);
    }
    sweep_col *c = &s->cols[s->n_cols++];
    memset(c, 0, sizeof *c);
    return c;
}

/* Multiplicative ("x2", "*2") or additive ("+8", 8) step. */
static int parse_step(const js_ctx *ctx, const cJSON *step, const char *path, bool *mult,
                      double *by)
{
    char d[64];
    *mult = false;
    *by = 1;
    if (!step) return DT_OK;
    if (cJSON_IsNumber(step)) {
        *by = step->valuedouble;
    } else if (cJSON_IsString(step)) {
        const char *t = step->valuestring;
        if (*t == 'x' || *t == '*') {
            *mult = true;
            t++;
        } else if (*t == '+') {
            t++;
        }
        char *end = NULL;
        *by = strtod(t, &end);
        if (end == t || *end != '\0')
            return js_fail(ctx, path, "step", "expected a number, \"+N\" or \"xN\", found %s",
                           js_describe(step, d, sizeof d));
    } else {
        return js_fail(ctx, path, "step", "expected a number, \"+N\" or \"xN\", found %s",
                       js_describe(step, d, sizeof d));
    }
    if (!isfinite(*by) || (*mult ? *by <= 1 : *by <= 0))
        return js_fail(ctx, path, "step", "%s step must be %s, found %s",
                       *mult ? "a multiplicative" : "an additive", *mult ? "> 1" : "> 0",
                       js_describe(step, d, sizeof d));
    return DT_OK;
}

static int parse_range(const js_ctx *ctx, const cJSON *ax, const char *path, sweep_col *c,
                       const sweep_spec *s)
{
    char kp[JS_PATH_MAX], d[64];
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(ax, "range");
    js_path_key(kp, path, "range");
    if (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2 ||
        !cJSON_IsNumber(cJSON_GetArrayItem(range, 0)) ||
        !cJSON_IsNumber(cJSON_GetArrayItem(range, 1)))
        return js_fail(ctx, kp, NULL, "expected [first, last] (two numbers), found %s",
                       js_describe(range, d, sizeof d));
    double a = cJSON_GetArrayItem(range, 0)->valuedouble;
    double b = cJSON_GetArrayItem(range, 1)->valuedouble;
    if (!isfinite(a) || !isfinite(b) || a > b)
        return js_fail(ctx, kp, NULL, "first (%g) must not exceed last (%g)", a, b);
    bool mult;
    double by;
    int rc = parse_step(ctx, cJSON_GetObjectItemCaseSensitive(ax, "step"), path, &mult, &by);
    if (rc) return rc;
    if (mult && a <= 0)
        return js_fail(ctx, kp, NULL, "a multiplicative range must start above 0, found %g", a);
    /* Values are computed from the first one (a * by^k, a + k*by), not accumulated, so long
     * ranges do not drift; the last value is included when reached within rounding. */
    size_t cap = 16;
    c->values = dt_xmalloc(cap * sizeof *c->values);
    for (size_t k = 0;; k++) {
        double v = mult ? a * pow(by, (double)k) : a + (double)k * by;
        double tol = 1e-9 * fmax(fabs(b), 1.0);
        if (v > b + tol) break;
        if (c->n == col_budget(s)) return too_many(ctx, kp, s);
        if (fabs(v - b) <= tol) v = b;
        if (fabs(v - nearbyint(v)) < 1e-9 * fmax(fabs(v), 1.0)) v = nearbyint(v);
        if (c->n == cap) {
            cap *= 2;
            c->values = dt_xrealloc(c->values, cap * sizeof *c->values);
        }
        c->values[c->n++] = cJSON_CreateNumber(v);
    }
    return DT_OK;
}

static int parse_axis(const js_ctx *ctx, const cJSON *ax, const char *path, sweep_spec *s)
{
    static const char *const keys[] = {"path", "values", "range", "step", NULL};
    char kp[JS_PATH_MAX];
    int rc = js_expect_object(ctx, ax, path);
    if (!rc) rc = js_check_keys(ctx, ax, path, keys);
    const char *p = NULL;
    if (!rc) rc = js_get_string(ctx, ax, path, "path", true, &p);
    if (rc) return rc;
    if (!*p) return js_fail(ctx, path, "path", "expected a field path such as \"parallel.dp\"");
    if (!strcmp(p, "sweep") || !strncmp(p, "sweep.", 6) || !strncmp(p, "sweep[", 6))
        return js_fail(ctx, path, "path", "a sweep cannot sweep itself");
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(ax, "values");
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(ax, "range");
    if (!!values == !!range)
        return js_fail(ctx, path, NULL, "expected exactly one of \"values\" or \"range\"");
    if (values && cJSON_GetObjectItemCaseSensitive(ax, "step"))
        return js_fail(ctx, path, "step", "\"step\" goes with \"range\", not \"values\"");
    sweep_col *c = add_col(s);
    c->path = dt_xstrdup(p);
    if (range) return parse_range(ctx, ax, path, c, s);
    js_path_key(kp, path, "values");
    rc = js_expect_array(ctx, values, kp);
    if (rc) return rc;
    int n = cJSON_GetArraySize(values);
    if (n == 0) return js_fail(ctx, kp, NULL, "expected at least one value");
    if ((size_t)n > SWEEP_MAX_POINTS / (s->done_points ? s->done_points : 1))
        return js_fail(ctx, kp, NULL, "the sweep would have more than %u points (the axes "
                       "before this one give %zu)", SWEEP_MAX_POINTS,
                       s->done_points ? s->done_points : 1);
    c->values = dt_xmalloc((size_t)n * sizeof *c->values);
    for (const cJSON *v = values->child; v; v = v->next)
        c->values[c->n++] = cJSON_Duplicate(v, 1);
    return DT_OK;
}

static int finish_zip_dim(const js_ctx *ctx, const char *path, sweep_spec *s, size_t first)
{
    s->dims = dt_xrealloc(s->dims, (s->n_dims + 1) * sizeof *s->dims);
    sweep_dim *d = &s->dims[s->n_dims++];
    d->first_col = first;
    d->n_cols = s->n_cols - first;
    d->n = s->cols[first].n;
    for (size_t c = first + 1; c < s->n_cols; c++) {
        if (s->cols[c].n != d->n)
            return js_fail(ctx, path, NULL,
                           "zipped axes must have as many values each: \"%s\" has %zu, \"%s\" "
                           "has %zu",
                           s->cols[first].path, d->n, s->cols[c].path, s->cols[c].n);
    }
    if (!s->done_points) s->done_points = 1;
    if (d->n > SWEEP_MAX_POINTS / s->done_points)
        return js_fail(ctx, path, NULL, "the sweep would have more than %u points",
                       SWEEP_MAX_POINTS);
    s->done_points *= d->n;
    return DT_OK;
}

/* Parse a list of axes into columns; returns the common length (zip) in *n. */
static int parse_group(const js_ctx *ctx, const cJSON *list, const char *path, sweep_spec *s,
                       bool allow_zip_entries, bool zipped)
{
    char ip[JS_PATH_MAX];
    int rc = js_expect_array(ctx, list, path);
    if (rc) return rc;
    if (cJSON_GetArraySize(list) == 0) return js_fail(ctx, path, NULL, "expected at least one axis");
    int i = 0;
    for (const cJSON *ax = list->child; ax; ax = ax->next, i++) {
        js_path_index(ip, path, i);
        const cJSON *zip = cJSON_IsObject(ax) ? cJSON_GetObjectItemCaseSensitive(ax, "zip") : NULL;
        size_t first = s->n_cols;
        if (zip) {
            static const char *const zkeys[] = {"zip", NULL};
            if (!allow_zip_entries)
                return js_fail(ctx, ip, "zip", "zip groups cannot be nested");
            rc = js_check_keys(ctx, ax, ip, zkeys);
            char zp[JS_PATH_MAX];
            if (!rc) rc = parse_group(ctx, zip, js_path_key(zp, ip, "zip"), s, false, true);
            if (rc) return rc;
        } else {
            rc = parse_axis(ctx, ax, ip, s);
            if (rc) return rc;
        }
        if (zipped) continue; /* the caller makes one dimension of the whole list */
        rc = finish_zip_dim(ctx, ip, s, first);
        if (rc) return rc;
    }
    return DT_OK;
}

int sweep_spec_parse(const cJSON *scenario, const char *file, sweep_spec **out, dt_error *err)
{
    static const char *const keys[] = {"mode", "axes", NULL};
    static const char *const modes[] = {"cross", "zip", NULL};
    js_ctx ctx = {.file = file, .err = err};
    *out = NULL;
    const cJSON *sw = cJSON_IsObject(scenario)
                          ? cJSON_GetObjectItemCaseSensitive(scenario, "sweep")
                          : NULL;
    if (!sw) return js_fail(&ctx, "", "sweep", "this scenario has no \"sweep\" to run");
    int rc = js_expect_object(&ctx, sw, "sweep");
    if (!rc) rc = js_check_keys(&ctx, sw, "sweep", keys);
    int mode = 0;
    if (!rc) rc = js_get_enum(&ctx, sw, "sweep", "mode", false, modes, &mode);
    if (rc) return rc;
    const cJSON *axes = cJSON_GetObjectItemCaseSensitive(sw, "axes");
    if (!axes) return js_fail(&ctx, "sweep", "axes", "missing (a list of axes)");
    sweep_spec *s = dt_xcalloc(1, sizeof *s);
    if (mode == 1) {
        rc = parse_group(&ctx, axes, "sweep.axes", s, false, true);
        if (!rc) rc = finish_zip_dim(&ctx, "sweep.axes", s, 0);
    } else {
        rc = parse_group(&ctx, axes, "sweep.axes", s, true, false);
    }
    if (!rc) {
        for (size_t a = 0; a < s->n_cols && !rc; a++)
            for (size_t b = a + 1; b < s->n_cols; b++)
                if (!strcmp(s->cols[a].path, s->cols[b].path)) {
                    rc = js_fail(&ctx, "sweep.axes", NULL, "path \"%s\" is swept twice",
                                 s->cols[a].path);
                    break;
                }
    }
    if (!rc) {
        s->n_points = 1;
        for (size_t d = 0; d < s->n_dims; d++) {
            if (s->dims[d].n > SWEEP_MAX_POINTS / s->n_points) {
                rc = js_fail(&ctx, "sweep", NULL, "more than %u points", SWEEP_MAX_POINTS);
                break;
            }
            s->n_points *= s->dims[d].n;
        }
    }
    if (rc) {
        sweep_spec_destroy(s);
        return rc;
    }
    *out = s;
    return DT_OK;
}

void sweep_spec_destroy(sweep_spec *s)
{
    if (!s) return;
    for (size_t c = 0; c < s->n_cols; c++) {
        for (size_t i = 0; i < s->cols[c].n; i++) cJSON_Delete(s->cols[c].values[i]);
        free(s->cols[c].values);
        free(s->cols[c].path);
    }
    free(s->cols);
    free(s->dims);
    free(s);
}

size_t sweep_n_points(const sweep_spec *s) { return s->n_points; }
size_t sweep_n_columns(const sweep_spec *s) { return s->n_cols; }

const char *sweep_column_name(const sweep_spec *s, size_t col)
{
    DT_ASSERT(col < s->n_cols);
    return s->cols[col].path;
}

const cJSON *sweep_point_value(const sweep_spec *s, size_t point, size_t col)
{
    DT_ASSERT(point < s->n_points && col < s->n_cols);
    /* Row-major: the last dimension varies fastest. */
    size_t p = point;
    for (size_t d = s->n_dims; d-- > 0;) {
        size_t idx = p % s->dims[d].n;
        p /= s->dims[d].n;
        const sweep_dim *dm = &s->dims[d];
        if (col >= dm->first_col && col < dm->first_col + dm->n_cols)
            return s->cols[col].values[idx];
    }
    DT_ASSERT(!"column in no dimension");
    return NULL;
}

/* One step of a path: a key (into an object) or an index (into an array). */
typedef struct path_step {
    char key[JS_PATH_MAX];
    long index; /* -1 for a key */
    const char *rest;
} path_step;

static int next_step(const char *p, path_step *st)
{
    st->index = -1;
    st->key[0] = '\0';
    if (*p == '[') {
        char *end = NULL;
        st->index = strtol(p + 1, &end, 10);
        if (end == p + 1 || *end != ']' || st->index < 0) return -1;
        p = end + 1;
    } else {
        size_t n = strcspn(p, ".[");
        if (n == 0 || n >= sizeof st->key) return -1;
        memcpy(st->key, p, n);
        st->key[n] = '\0';
        p += n;
    }
    if (*p == '.') {
        p++;
        if (!*p || *p == '.' || *p == '[') return -1;
    }
    st->rest = p;
    return 0;
}

int sweep_json_set(cJSON *root, const char *path, const cJSON *value, const char *file,
                   dt_error *err)
{
    char done[JS_PATH_MAX] = "", tmp[JS_PATH_MAX];
    cJSON *cur = root;
    const char *p = path;
    for (;;) {
        path_step st;
        if (next_step(p, &st) != 0)
            return dt_error_set(err, DT_EINPUT, file, "sweep", "bad field path \"%s\"", path);
        bool last = *st.rest == '\0';
        cJSON *child = NULL;
        if (st.index >= 0) {
            if (!cJSON_IsArray(cur) || st.index >= cJSON_GetArraySize(cur))
                return dt_error_set(err, DT_EINPUT, file, done[0] ? done : "(top level)",
                                    "sweep path \"%s\": no element [%ld] here", path, st.index);
            child = cJSON_GetArrayItem(cur, (int)st.index);
            if (last) {
                cJSON_ReplaceItemInArray(cur, (int)st.index, cJSON_Duplicate(value, 1));
                return DT_OK;
            }
            js_path_index(tmp, done, (int)st.index);
        } else {
            if (!cJSON_IsObject(cur))
                return dt_error_set(err, DT_EINPUT, file, done[0] ? done : "(top level)",
                                    "sweep path \"%s\": expected an object here", path);
            child = cJSON_GetObjectItemCaseSensitive(cur, st.key);
            if (last) {
                if (child)
                    cJSON_ReplaceItemInObjectCaseSensitive(cur, st.key, cJSON_Duplicate(value, 1));
                else
                    cJSON_AddItemToObject(cur, st.key, cJSON_Duplicate(value, 1));
                return DT_OK;
            }
            if (!child) child = cJSON_AddObjectToObject(cur, st.key);
            js_path_key(tmp, done, st.key);
        }
        memcpy(done, tmp, sizeof done);
        cur = child;
        p = st.rest;
    }
}

cJSON *sweep_point_scenario(const sweep_spec *s, const cJSON *scenario, size_t point,
                            const char *file, dt_error *err)
{
    cJSON *sc = cJSON_Duplicate(scenario, 1);
    DT_ASSERT(sc);
    cJSON_DeleteItemFromObjectCaseSensitive(sc, "sweep");
    for (size_t c = 0; c < s->n_cols; c++) {
        if (sweep_json_set(sc, s->cols[c].path, sweep_point_value(s, point, c), file, err)) {
            cJSON_Delete(sc);
            return NULL;
        }
    }
    return sc;
}

uint64_t sweep_hash(const cJSON *scenario)
{
    char *text = cJSON_PrintUnformatted(scenario);
    DT_ASSERT(text);
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    free(text);
    return h;
}

static uint64_t fnv_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Folds one referenced file into h: its name as written, then its bytes (or a marker when it
 * cannot be read: the points that use it fail on their own, and the marker makes a later run
 * that finds the file differ from this one). Relative names resolve against base_dir, as
 * topo_from_json and run.c's calibration loader resolve them. */
static uint64_t fold_file(uint64_t h, const char *name, const char *base_dir)
{
    char path[4096];
    if (name[0] != '/' && base_dir && base_dir[0])
        snprintf(path, sizeof path, "%s/%s", base_dir, name);
    else
        snprintf(path, sizeof path, "%s", name);
    h = fnv_bytes(h, name, strlen(name) + 1);
    /* dt_open_input refuses what is not a regular file: hashing /dev/zero never ended and a
     * FIFO blocked; the points that use it fail on their own with the loader's message. */
    FILE *f = dt_open_input(path, "rb", NULL, NULL);
    if (!f) return fnv_bytes(h, "\0missing", 9);
    unsigned char buf[65536];
    size_t n;
    uint64_t len = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        h = fnv_bytes(h, buf, n);
        len += n;
    }
    fclose(f);
    /* The length closes the file's bytes, so "ab"+"c" and "a"+"bc" over two files differ. */
    return fnv_bytes(h, &len, sizeof len);
}

/* The scenario fields that name files, and the sweep axes that set them. */
static bool names_file(const char *path)
{
    return !strcmp(path, "topology") || !strcmp(path, "options.calibration");
}

static uint64_t fold_axis(uint64_t h, const cJSON *ax, const char *base_dir)
{
    const cJSON *zip = cJSON_IsObject(ax) ? cJSON_GetObjectItemCaseSensitive(ax, "zip") : NULL;
    if (cJSON_IsArray(zip)) {
        const cJSON *a;
        cJSON_ArrayForEach(a, zip) h = fold_axis(h, a, base_dir);
        return h;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(ax, "path");
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(ax, "values");
    if (!cJSON_IsString(p) || !names_file(p->valuestring) || !cJSON_IsArray(vals)) return h;
    const cJSON *v;
    cJSON_ArrayForEach(v, vals)
        if (cJSON_IsString(v)) h = fold_file(h, v->valuestring, base_dir);
    return h;
}

uint64_t sweep_hash_inputs(const cJSON *scenario, const char *base_dir)
{
    uint64_t h = sweep_hash(scenario);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(scenario, "topology");
    if (cJSON_IsString(t)) h = fold_file(h, t->valuestring, base_dir);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(scenario, "options");
    const cJSON *cal = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "calibration") : NULL;
    if (cJSON_IsString(cal)) h = fold_file(h, cal->valuestring, base_dir);
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(scenario, "sweep");
    const cJSON *axes = cJSON_IsObject(sw) ? cJSON_GetObjectItemCaseSensitive(sw, "axes") : NULL;
    const cJSON *ax;
    if (cJSON_IsArray(axes)) cJSON_ArrayForEach(ax, axes) h = fold_axis(h, ax, base_dir);
    return h;
}
