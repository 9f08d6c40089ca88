/* sweep_record.c - one sweep point as a JSON record, and as a CSV row.
 *
 * The record is the single source of truth: it is what a point's file holds, what results.json
 * lists, and what each CSV row is printed from, so a resumed or MPI-gathered sweep prints the
 * very same bytes as one run in one go. Numbers go through cJSON's round-trip printing in JSON
 * and "%.10g" in CSV.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/sweep.h"

/* comm_KIND_s: comm_exposed_s by kind (run.h), one per wl_comm_kind in its order up to ZeRO.
 * Expert (ep) and context (cp) parallel communication have no column yet (a new column would
 * change every existing sweep's CSV); they are in comm_exposed_s. */
_Static_assert(WL_COMM_KIND_COUNT == 6, "a new communication kind needs its comm_KIND_s column");
static const char *const metric_names[] = {
    "step_time_s",       "compute_s",         "comm_exposed_s",    "bubble_s",
    "straggler_wait_s",  "comm_tp_s",         "comm_pp_s",         "comm_dp_s",
    "comm_zero_s",       "max_straggler_wait_s", "samples_per_s",  "tokens_per_s",      "tflops_per_gpu",
    "mfu",               "mem_params_bytes",  "mem_grads_bytes",   "mem_optimizer_bytes",
    "mem_activations_bytes", "mem_peak_bytes", "mem_capacity_bytes", "fits",
    "n_gpus",            "cost_per_step_usd", "usd_per_hour",      "tokens_per_usd",
    "events",            NULL};

const char *const *sweep_metric_names(void) { return metric_names; }

static void metric_values(const run_result *r, double *v)
{
    double usd_per_hour = r->step_time_s > 0 ? r->cost_per_step_usd / r->step_time_s * 3600 : 0;
    double tokens_per_step = r->throughput.tokens_per_s * r->step_time_s;
    double tokens_per_usd = r->cost_per_step_usd > 0 ? tokens_per_step / r->cost_per_step_usd : 0;
    double vals[] = {r->step_time_s,
                     r->breakdown_s.compute,
                     r->breakdown_s.comm_exposed,
                     r->breakdown_s.bubble,
                     r->breakdown_s.straggler_wait,
                     r->comm_exposed_by_kind_s[WL_COMM_TP],
                     r->comm_exposed_by_kind_s[WL_COMM_PP],
                     r->comm_exposed_by_kind_s[WL_COMM_DP],
                     r->comm_exposed_by_kind_s[WL_COMM_ZERO],
                     r->max_straggler_wait_s,
                     r->throughput.samples_per_s,
                     r->throughput.tokens_per_s,
                     r->throughput.tflops_per_gpu,
                     r->throughput.mfu,
                     r->memory.params,
                     r->memory.grads,
                     r->memory.optimizer,
                     r->memory.activations,
                     r->memory.peak,
                     r->memory.capacity,
                     r->fits ? 1 : 0,
                     r->n_gpus,
                     r->cost_per_step_usd,
                     usd_per_hour,
                     tokens_per_usd,
                     (double)r->events};
    _Static_assert(sizeof vals / sizeof vals[0] == sizeof metric_names / sizeof metric_names[0] - 1,
                   "one value per metric");
    memcpy(v, vals, sizeof vals);
}

cJSON *sweep_record(const sweep_spec *s, size_t point, const run_result *r, const dt_error *e)
{
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddNumberToObject(rec, "point", (double)point);
    cJSON *axes = cJSON_AddObjectToObject(rec, "axes");
    for (size_t c = 0; c < sweep_n_columns(s); c++)
        cJSON_AddItemToObject(axes, sweep_column_name(s, c),
                              cJSON_Duplicate(sweep_point_value(s, point, c), 1));
    if (e && e->code != DT_OK) {
        char buf[DT_ERR_FILE_MAX + DT_ERR_PATH_MAX + DT_ERR_MSG_MAX + 64];
        cJSON_AddStringToObject(rec, "status", "error");
        cJSON_AddStringToObject(rec, "error", dt_error_format(e, buf, sizeof buf));
        return rec;
    }
    cJSON_AddStringToObject(rec, "status", "ok");
    cJSON *m = cJSON_AddObjectToObject(rec, "metrics");
    double v[sizeof metric_names / sizeof metric_names[0]];
    metric_values(r, v);
    for (size_t i = 0; metric_names[i]; i++) {
        if (!strcmp(metric_names[i], "fits"))
            cJSON_AddBoolToObject(m, "fits", v[i] != 0);
        else
            cJSON_AddNumberToObject(m, metric_names[i], isfinite(v[i]) ? v[i] : 0);
    }
    return rec;
}

/* RFC 4180 quoting, only when needed. */
static void csv_string(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_value(FILE *f, const cJSON *v)
{
    if (!v || cJSON_IsNull(v)) return;
    if (cJSON_IsNumber(v)) {
        fprintf(f, "%.10g", v->valuedouble);
    } else if (cJSON_IsBool(v)) {
        fputc(cJSON_IsTrue(v) ? '1' : '0', f);
    } else if (cJSON_IsString(v)) {
        csv_string(f, v->valuestring);
    } else {
        char *t = cJSON_PrintUnformatted(v);
        csv_string(f, t);
        free(t);
    }
}

void sweep_csv_header(const sweep_spec *s, FILE *f)
{
    fputs("point", f);
    for (size_t c = 0; c < sweep_n_columns(s); c++) {
        fputc(',', f);
        csv_string(f, sweep_column_name(s, c));
    }
    fputs(",status", f);
    for (size_t i = 0; metric_names[i]; i++) fprintf(f, ",%s", metric_names[i]);
    fputs(",error\n", f);
}

void sweep_csv_row(const sweep_spec *s, const cJSON *rec, FILE *f)
{
    csv_value(f, cJSON_GetObjectItemCaseSensitive(rec, "point"));
    const cJSON *axes = cJSON_GetObjectItemCaseSensitive(rec, "axes");
    for (size_t c = 0; c < sweep_n_columns(s); c++) {
        fputc(',', f);
        csv_value(f, cJSON_GetObjectItemCaseSensitive(axes, sweep_column_name(s, c)));
    }
    fputc(',', f);
    csv_value(f, cJSON_GetObjectItemCaseSensitive(rec, "status"));
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "metrics");
    for (size_t i = 0; metric_names[i]; i++) {
        fputc(',', f);
        csv_value(f, m ? cJSON_GetObjectItemCaseSensitive(m, metric_names[i]) : NULL);
    }
    fputc(',', f);
    csv_value(f, cJSON_GetObjectItemCaseSensitive(rec, "error"));
    fputc('\n', f);
}
