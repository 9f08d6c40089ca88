/* fuzz_json.c - libFuzzer target: strict JSON parsing and every typed getter.
 *
 * js_parse_text on the raw bytes; on success, walk the whole tree and, on every object, run
 * js_check_keys (against a fixed list, so unknown keys and did-you-mean suggestions are hit) and
 * every getter on every key, and js_quantity_value on every array element, for every unit kind.
 * Checked beyond "no crash, no sanitizer report": every failure returns DT_EINPUT with a
 * non-empty message, syntax errors carry line and column >= 1, successes on quantities are
 * finite, and dt_error_format never overruns.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const allowed[] = {"name", "bandwidth", "latency", "nodes", "links",
                                      "kind", "count", "duplex", "gpu", NULL};

static void expect_error(const dt_error *err, int rc)
{
    if (rc != DT_EINPUT || err->code != DT_EINPUT || err->msg[0] == '\0') abort();
    char buf[64]; /* small on purpose */
    dt_error_format(err, buf, sizeof buf);
}

static void check_rc(const dt_error *err, int rc)
{
    if (rc != DT_OK) expect_error(err, rc);
}

static void getters(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key)
{
    dt_error *err = ctx->err;
    const char *s;
    bool b;
    long long i;
    double x;
    sim_time_t t;
    int e;
    dt_error_clear(err);
    check_rc(err, js_get_string(ctx, obj, path, key, true, &s));
    dt_error_clear(err);
    check_rc(err, js_get_bool(ctx, obj, path, key, true, &b));
    dt_error_clear(err);
    check_rc(err, js_get_int(ctx, obj, path, key, true, -1000, 1LL << 40, &i));
    dt_error_clear(err);
    check_rc(err, js_get_number(ctx, obj, path, key, true, -1e300, 1e300, &x));
    for (int k = 0; k < 5; k++) {
        for (int pos = 0; pos < 2; pos++) {
            dt_error_clear(err);
            x = NAN;
            int rc = js_get_quantity(ctx, obj, path, key, (unit_kind)k, true, pos, &x);
            check_rc(err, rc);
            if (rc == DT_OK && (!isfinite(x) || x < 0 || (pos && x <= 0))) abort();
        }
    }
    dt_error_clear(err);
    check_rc(err, js_get_time(ctx, obj, path, key, true, &t));
    dt_error_clear(err);
    check_rc(err, js_get_enum(ctx, obj, path, key, true, allowed, &e));
    /* absent optional keys are fine and leave outputs alone */
    dt_error_clear(err);
    i = 7;
    if (!cJSON_GetObjectItemCaseSensitive(obj, "\001absent") &&
        (js_get_int(ctx, obj, path, "\001absent", false, 0, 1, &i) != DT_OK || i != 7))
        abort();
}

static void walk(const js_ctx *ctx, const cJSON *v, const char *path, int depth)
{
    char child[JS_PATH_MAX], d[96];
    js_describe(v, d, sizeof d);
    if (depth > 64) return;
    if (cJSON_IsObject(v)) {
        dt_error_clear(ctx->err);
        check_rc(ctx->err, js_check_keys(ctx, v, path, allowed));
        dt_error_clear(ctx->err);
        check_rc(ctx->err, js_expect_array(ctx, v, path));
        for (const cJSON *c = v->child; c; c = c->next) {
            getters(ctx, v, path, c->string);
            js_suggest(c->string, allowed);
            walk(ctx, c, js_path_key(child, path, c->string), depth + 1);
        }
    } else if (cJSON_IsArray(v)) {
        dt_error_clear(ctx->err);
        check_rc(ctx->err, js_expect_object(ctx, v, path));
        int n = 0;
        for (const cJSON *c = v->child; c; c = c->next, n++) {
            js_path_index(child, path, n);
            for (int k = 0; k < 5; k++) {
                double x = NAN;
                dt_error_clear(ctx->err);
                int rc = js_quantity_value(ctx, c, child, (unit_kind)k, false, &x);
                check_rc(ctx->err, rc);
                if (rc == DT_OK && !(isfinite(x) && x >= 0)) abort();
            }
            walk(ctx, c, child, depth + 1);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_error err;
    dt_error_clear(&err);
    cJSON *root = NULL;
    int rc = js_parse_text((const char *)data, size, "fuzz.json", &root, &err);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        if (root) abort();
        bool syntax = strncmp(err.msg, "JSON syntax", 11) == 0 ||
                      strncmp(err.msg, "unexpected NUL", 14) == 0;
        if (syntax && (err.line < 1 || err.column < 1)) abort();
        return 0;
    }
    if (!root) abort();
    js_ctx ctx = {.file = "fuzz.json", .err = &err};
    walk(&ctx, root, "", 0);
    cJSON_Delete(root);
    return 0;
}
