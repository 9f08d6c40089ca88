/* json.h - strict, validated reading of the JSON files users write.
 *
 * cJSON parses; this module makes it strict and makes its errors useful:
 *  - syntax errors carry line and column (counted up to cJSON's parse end);
 *  - trailing garbage and duplicate keys are errors (cJSON accepts both);
 *  - getters check type and unit and report FILE: PATH: expected X, found Y;
 *  - js_check_keys() rejects unknown keys, suggesting the closest allowed one.
 *
 * Paths use dots and brackets: links[3].bandwidth. A js_ctx names the file being read and the
 * caller-owned dt_error to fill; getters return DT_OK or DT_EINPUT.
 * Absent optional keys leave *out untouched, so callers set defaults first.
 */
#ifndef DTSIM_JSON_H
#define DTSIM_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "dtsim/error.h"
#include "dtsim/simtime.h"
#include "dtsim/units.h"

typedef struct js_ctx {
    const char *file; /* shown in errors; "<inline>" or a flag name when not from a file */
    dt_error *err;    /* caller-owned */
} js_ctx;

#define JS_PATH_MAX DT_ERR_PATH_MAX

/* Read and parse a whole file. On success *out is owned by the caller (cJSON_Delete). */
int js_parse_file(const char *filename, cJSON **out, dt_error *err);
/* Parse text (len bytes, need not be NUL-terminated); name is used in errors. */
int js_parse_text(const char *text, size_t len, const char *name, cJSON **out, dt_error *err);

/* Build child paths into buf (JS_PATH_MAX bytes). Return buf. */
const char *js_path_key(char *buf, const char *parent, const char *key);
const char *js_path_index(char *buf, const char *parent, int index);

/* Fill ctx->err for PATH(.KEY) with a formatted message; returns DT_EINPUT. key may be NULL. */
int js_fail(const js_ctx *ctx, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Describe a value for "found ..." text: "\"fast\"", "12", "an object", "null". */
const char *js_describe(const cJSON *v, char *buf, size_t size);

/* Fail unless v is an object / array. */
int js_expect_object(const js_ctx *ctx, const cJSON *v, const char *path);
int js_expect_array(const js_ctx *ctx, const cJSON *v, const char *path);

/* Every key of obj must be in the NULL-terminated list allowed. */
int js_check_keys(const js_ctx *ctx, const cJSON *obj, const char *path,
                  const char *const *allowed);

/* Closest string in the NULL-terminated list to s within a small edit distance, or NULL. */
const char *js_suggest(const char *s, const char *const *candidates);

/* The pieces of js_suggest, for callers whose candidates are not a string list (topology node
 * names): Levenshtein distance (99 when either string is longer than 63 characters), and the
 * largest distance still worth suggesting for a mistyped s (1, 2 or 3 by its length). */
size_t js_edit_distance(const char *a, const char *b);
size_t js_suggest_limit(const char *s);

/* Typed getters for obj[key]. required=true makes absence an error. */
int js_get_string(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                  bool required, const char **out);
int js_get_bool(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                bool required, bool *out);
/* Integral number within [min, max]; read from valuedouble (valueint saturates). */
int js_get_int(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
               bool required, long long min, long long max, long long *out);
/* Plain finite number within [min, max]. */
int js_get_number(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                  bool required, double min, double max, double *out);
/* A quantity: a string with a unit or a plain number in SI base units. min_exclusive=true
 * rejects values <= 0 (bandwidths, sizes that must be positive); otherwise values < 0. */
int js_get_quantity(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                    unit_kind kind, bool required, bool positive, double *out);
int js_get_time(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                bool required, sim_time_t *out);
/* One of the NULL-terminated names; *out is its index. */
int js_get_enum(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                bool required, const char *const *names, int *out);

/* Quantity from a bare value (array element, CLI flag through a parsed node). */
int js_quantity_value(const js_ctx *ctx, const cJSON *v, const char *path, unit_kind kind,
                      bool positive, double *out);

#endif
