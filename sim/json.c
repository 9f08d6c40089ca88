/* json.c - strict JSON reading on top of cJSON, with errors that name file, path and value.
 *
 * cJSON keeps no positions, so only syntax errors get line:column; everything later is located
 * by its JSON path, which is what a person needs to find the field anyway.
 */
#include "dtsim/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/limits.h"

static void position_of(const char *text, const char *at, int *line, int *col)
{
    int l = 1, c = 1;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static int fail_at(dt_error *err, const char *name, const char *text, const char *at,
                   const char *msg)
{
    int line, col;
    position_of(text, at, &line, &col);
    dt_error_set(err, DT_EINPUT, name, NULL, "%s", msg);
    if (err) {
        err->line = line;
        err->column = col;
    }
    return DT_EINPUT;
}

static uint64_t key_hash(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* Duplicate keys of one object. Small objects (most of them) compare pairwise; larger ones go
 * through an open-addressing set of their keys, so an object of n keys costs O(n), not O(n^2)
 * (1 M keys took over a minute pairwise). */
static const cJSON *duplicate_key(const cJSON *obj)
{
    size_t n = 0;
    for (const cJSON *a = obj->child; a; a = a->next) n++;
    if (n <= 16) {
        for (const cJSON *a = obj->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (strcmp(a->string, b->string) == 0) return b;
        return NULL;
    }
    size_t cap = 32;
    while (cap < 2 * n) cap *= 2;
    const cJSON **set = dt_xcalloc(cap, sizeof *set);
    const cJSON *dup = NULL;
    for (const cJSON *a = obj->child; a && !dup; a = a->next) {
        size_t i = (size_t)key_hash(a->string) & (cap - 1);
        for (; set[i]; i = (i + 1) & (cap - 1)) {
            if (strcmp(set[i]->string, a->string) == 0) {
                dup = a;
                break;
            }
        }
        if (!dup) set[i] = a;
    }
    free(set);
    return dup;
}

static int check_duplicates(const cJSON *v, const char *path, const char *name, dt_error *err)
{
    char child[JS_PATH_MAX];
    if (cJSON_IsObject(v)) {
        const cJSON *d = duplicate_key(v);
        if (d)
            return dt_error_set(err, DT_EINPUT, name, path[0] ? path : "(top level)",
                                "duplicate key \"%.200s\"", d->string);
        for (const cJSON *a = v->child; a; a = a->next) {
            int rc = check_duplicates(a, js_path_key(child, path, a->string), name, err);
            if (rc) return rc;
        }
    } else if (cJSON_IsArray(v)) {
        int i = 0;
        for (const cJSON *a = v->child; a; a = a->next, i++) {
            int rc = check_duplicates(a, js_path_index(child, path, i), name, err);
            if (rc) return rc;
        }
    }
    return DT_OK;
}

/* One pass over the text before cJSON sees it: the nesting depth (cJSON's own limit is 1000
 * levels, deep enough to be slow and to recurse through every later walk of the tree), and an
 * estimate of the memory the parsed tree will take, checked against the budget. Every value
 * but the first of a container follows a comma, so commas + containers + 1 bounds the number
 * of cJSON nodes (64 bytes each, 80 with malloc's header); strings are copied with a header. */
static int prescan(const char *buf, size_t len, const char *name, dt_error *err)
{
    int depth = 0;
    bool in_str = false;
    size_t nodes = 1, strings = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = buf[i];
        if (in_str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_str = false;
            continue;
        }
        switch (ch) {
        case '"':
            in_str = true;
            strings++;
            break;
        case '{':
        case '[':
            nodes++;
            if (++depth > DT_MAX_JSON_DEPTH) {
                char msg[96];
                snprintf(msg, sizeof msg, "nested deeper than %d arrays and objects",
                         DT_MAX_JSON_DEPTH);
                return fail_at(err, name, buf, buf + i, msg);
            }
            break;
        case '}':
        case ']':
            depth--;
            break;
        case ',':
            if (++nodes > DT_MAX_JSON_VALUES) {
                char msg[96];
                snprintf(msg, sizeof msg, "more than %zu values in one JSON file",
                         DT_MAX_JSON_VALUES);
                return fail_at(err, name, buf, buf + i, msg);
            }
            break;
        default:
            break;
        }
    }
    double bytes = 80.0 * (double)nodes + 32.0 * (double)strings + (double)len;
    return dt_check_memory(bytes, "parsing this JSON file", name, NULL, err);
}

/* Parse buf[0..len), which must be followed by a NUL at buf[len]. */
static int parse_terminated(const char *buf, size_t len, const char *name, cJSON **out,
                            dt_error *err)
{
    size_t real = strlen(buf);
    if (real != len) return fail_at(err, name, buf, buf + real, "unexpected NUL byte in JSON text");
    int rc = prescan(buf, len, name, err);
    if (rc) return rc;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
    if (!root) {
        const char *at = end ? end : buf;
        if (at < buf || at > buf + len) at = buf + len;
        char near[24], msg[64];
        size_t k = 0;
        for (const char *p = at; *p && *p != '\n' && k < sizeof near - 1; p++) near[k++] = *p;
        near[k] = '\0';
        if (k)
            snprintf(msg, sizeof msg, "JSON syntax error near '%s'", near);
        else
            snprintf(msg, sizeof msg, "JSON syntax error (unexpected end of input)");
        return fail_at(err, name, buf, at, msg);
    }
    rc = check_duplicates(root, "", name, err);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return DT_OK;
}

int js_parse_text(const char *text, size_t len, const char *name, cJSON **out, dt_error *err)
{
    if (len > DT_MAX_INPUT_BYTES)
        return dt_error_set(err, DT_EINPUT, name, NULL,
                            "%zu bytes: larger than the %zu MiB dtsim reads from one file", len,
                            DT_MAX_INPUT_BYTES >> 20);
    /* cJSON needs NUL termination to detect trailing garbage; copy to be safe. */
    char *buf = dt_xmalloc(len + 1);
    memcpy(buf, text, len);
    buf[len] = '\0';
    int rc = parse_terminated(buf, len, name, out, err);
    free(buf);
    return rc;
}

int js_parse_file(const char *filename, cJSON **out, dt_error *err)
{
    size_t size = 0;
    FILE *f = dt_open_input(filename, "rb", &size, err);
    if (!f) return err ? err->code : DT_EIO;
    /* A regular file's size is known (and at most DT_MAX_INPUT_BYTES); read one byte more to
     * see a file that grew meanwhile, and refuse it rather than read without end. */
    int rc = dt_check_memory((double)size, "reading this file", filename, NULL, err);
    if (rc) {
        fclose(f);
        return rc;
    }
    char *buf = dt_xmalloc(size + 2);
    size_t len = fread(buf, 1, size + 1, f);
    int bad = ferror(f), why = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return dt_error_set(err, DT_EIO, filename, NULL, "cannot read: %s", strerror(why));
    }
    if (len > size) {
        free(buf);
        return dt_error_set(err, DT_EIO, filename, NULL, "cannot read: the file grew while read");
    }
    buf[len] = '\0';
    rc = parse_terminated(buf, len, filename, out, err);
    free(buf);
    return rc;
}

const char *js_path_key(char *buf, const char *parent, const char *key)
{
    if (!parent || !parent[0])
        snprintf(buf, JS_PATH_MAX, "%s", key);
    else
        snprintf(buf, JS_PATH_MAX, "%s.%s", parent, key);
    return buf;
}

const char *js_path_index(char *buf, const char *parent, int index)
{
    snprintf(buf, JS_PATH_MAX, "%s[%d]", parent ? parent : "", index);
    return buf;
}

int js_fail(const js_ctx *ctx, const char *path, const char *key, const char *fmt, ...)
{
    char full[JS_PATH_MAX];
    if (key)
        js_path_key(full, path, key);
    else
        snprintf(full, sizeof full, "%s", path ? path : "");
    char msg[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dt_error_set(ctx->err, DT_EINPUT, ctx->file, full, "%s", msg);
}

const char *js_describe(const cJSON *v, char *buf, size_t size)
{
    if (!v)
        snprintf(buf, size, "nothing");
    else if (cJSON_IsString(v))
        snprintf(buf, size, "\"%.60s%s\"", v->valuestring, strlen(v->valuestring) > 60 ? "..." : "");
    else if (cJSON_IsNumber(v))
        snprintf(buf, size, "%.17g", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, size, "null");
    else if (cJSON_IsObject(v))
        snprintf(buf, size, "an object");
    else if (cJSON_IsArray(v))
        snprintf(buf, size, "an array");
    else
        snprintf(buf, size, "an invalid value");
    return buf;
}

int js_expect_object(const js_ctx *ctx, const cJSON *v, const char *path)
{
    if (cJSON_IsObject(v)) return DT_OK;
    char d[96];
    return js_fail(ctx, path[0] ? path : "(top level)", NULL, "expected an object, found %s",
                   js_describe(v, d, sizeof d));
}

int js_expect_array(const js_ctx *ctx, const cJSON *v, const char *path)
{
    if (cJSON_IsArray(v)) return DT_OK;
    char d[96];
    return js_fail(ctx, path, NULL, "expected an array, found %s", js_describe(v, d, sizeof d));
}

size_t js_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

size_t js_suggest_limit(const char *s)
{
    size_t len = strlen(s);
    return len <= 4 ? 1 : len <= 8 ? 2 : 3;
}

const char *js_suggest(const char *s, const char *const *candidates)
{
    const char *best = NULL;
    size_t best_d = 99;
    size_t limit = js_suggest_limit(s);
    for (const char *const *c = candidates; *c; c++) {
        size_t d = js_edit_distance(s, *c);
        if (d < best_d) {
            best_d = d;
            best = *c;
        }
    }
    return best_d <= limit ? best : NULL;
}

int js_check_keys(const js_ctx *ctx, const cJSON *obj, const char *path,
                  const char *const *allowed)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++) {
            if (strcmp(c->string, *a) == 0) {
                ok = true;
                break;
            }
        }
        if (ok) continue;
        const char *hint = js_suggest(c->string, allowed);
        char list[512];
        size_t n = 0;
        list[0] = '\0';
        for (const char *const *a = allowed; *a && n < sizeof list; a++) {
            int w = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", *a);
            if (w < 0) break;
            n += (size_t)w;
        }
        if (hint)
            return js_fail(ctx, path, c->string, "unknown key (did you mean \"%s\"?)", hint);
        return js_fail(ctx, path, c->string, "unknown key (expected one of: %s)", list);
    }
    return DT_OK;
}

static const cJSON *lookup(const js_ctx *ctx, const cJSON *obj, const char *path,
                           const char *key, bool required, int *rc)
{
    *rc = DT_OK;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v && required) *rc = js_fail(ctx, path, key, "missing required key");
    return v;
}

int js_get_string(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                  bool required, const char **out)
{
    int rc;
    const cJSON *v = lookup(ctx, obj, path, key, required, &rc);
    if (!v) return rc;
    if (!cJSON_IsString(v)) {
        char d[96];
        return js_fail(ctx, path, key, "expected a string, found %s", js_describe(v, d, sizeof d));
    }
    *out = v->valuestring;
    return DT_OK;
}

int js_get_bool(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                bool required, bool *out)
{
    int rc;
    const cJSON *v = lookup(ctx, obj, path, key, required, &rc);
    if (!v) return rc;
    if (!cJSON_IsBool(v)) {
        char d[96];
        return js_fail(ctx, path, key, "expected true or false, found %s",
                       js_describe(v, d, sizeof d));
    }
    *out = cJSON_IsTrue(v);
    return DT_OK;
}

int js_get_int(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
               bool required, long long min, long long max, long long *out)
{
    int rc;
    const cJSON *v = lookup(ctx, obj, path, key, required, &rc);
    if (!v) return rc;
    char d[96];
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
        return js_fail(ctx, path, key, "expected an integer, found %s", js_describe(v, d, sizeof d));
    double x = v->valuedouble;
    if (x < (double)min || x > (double)max)
        return js_fail(ctx, path, key, "expected an integer from %lld to %lld, found %s", min, max,
                       js_describe(v, d, sizeof d));
    *out = (long long)x;
    return DT_OK;
}

int js_get_number(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                  bool required, double min, double max, double *out)
{
    int rc;
    const cJSON *v = lookup(ctx, obj, path, key, required, &rc);
    if (!v) return rc;
    char d[96];
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return js_fail(ctx, path, key, "expected a number, found %s", js_describe(v, d, sizeof d));
    if (v->valuedouble < min || v->valuedouble > max)
        return js_fail(ctx, path, key, "expected a number from %g to %g, found %s", min, max,
                       js_describe(v, d, sizeof d));
    *out = v->valuedouble;
    return DT_OK;
}

int js_quantity_value(const js_ctx *ctx, const cJSON *v, const char *path, unit_kind kind,
                      bool positive, double *out)
{
    char d[96];
    double x;
    if (cJSON_IsNumber(v)) {
        x = v->valuedouble;
        if (!isfinite(x))
            return js_fail(ctx, path, NULL, "expected a finite %s, found %s", unit_kind_name(kind),
                           js_describe(v, d, sizeof d));
    } else if (cJSON_IsString(v)) {
        char why[600];
        if (unit_parse(kind, v->valuestring, &x, why, sizeof why))
            return js_fail(ctx, path, NULL, "%s", why);
    } else {
        return js_fail(ctx, path, NULL, "expected a %s such as %s, found %s", unit_kind_name(kind),
                       unit_example(kind), js_describe(v, d, sizeof d));
    }
    if (positive && !(x > 0))
        return js_fail(ctx, path, NULL, "expected a positive %s, found %s", unit_kind_name(kind),
                       js_describe(v, d, sizeof d));
    if (!positive && x < 0)
        return js_fail(ctx, path, NULL, "expected a non-negative %s, found %s",
                       unit_kind_name(kind), js_describe(v, d, sizeof d));
    *out = x;
    return DT_OK;
}

int js_get_quantity(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                    unit_kind kind, bool required, bool positive, double *out)
{
    int rc;
    const cJSON *v = lookup(ctx, obj, path, key, required, &rc);
    if (!v) return rc;
    char full[JS_PATH_MAX];
    return js_quantity_value(ctx, v, js_path_key(full, path, key), kind, positive, out);
}

int js_get_time(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                bool required, sim_time_t *out)
{
    double s;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v && !required) return DT_OK;
    int rc = js_get_quantity(ctx, obj, path, key, UNIT_TIME, required, false, &s);
    if (rc) return rc;
    if (s * 1e12 >= 9.2e18) {
        char d[96];
        return js_fail(ctx, path, key, "time out of range, found %s", js_describe(v, d, sizeof d));
    }
    *out = sim_time_from_s(s);
    return DT_OK;
}

int js_get_enum(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                bool required, const char *const *names, int *out)
{
    const char *s = NULL;
    int rc = js_get_string(ctx, obj, path, key, required, &s);
    if (rc || !s) return rc;
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return DT_OK;
        }
    }
    char list[512];
    size_t n = 0;
    list[0] = '\0';
    for (int i = 0; names[i] && n < sizeof list; i++) {
        int w = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", names[i]);
        if (w < 0) break;
        n += (size_t)w;
    }
    const char *hint = js_suggest(s, names);
    if (hint)
        return js_fail(ctx, path, key, "unknown value \"%s\" (did you mean \"%s\"?)", s, hint);
    return js_fail(ctx, path, key, "expected one of %s, found \"%s\"", list, s);
}
