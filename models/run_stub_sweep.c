/* run_stub_sweep.c - TEMPORARY stand-ins for run.h until the workload branch lands (removed on
 * merge): lets the sweep machinery link and be tested with injected evaluators. */
#include <stdlib.h>

#include "dtsim/run.h"

void run_timeline_free(run_timeline *tl)
{
    if (!tl) return;
    for (size_t i = 0; i < tl->n_names; i++) free(tl->names[i]);
    for (size_t i = 0; i < tl->n_links; i++) free(tl->link_names[i]);
    for (int i = 0; i < tl->n_hosts; i++) free(tl->host_names[i]);
    free(tl->names);
    free(tl->link_names);
    free(tl->host_names);
    free(tl->gpu_host);
    free(tl->spans);
    free(tl->link_spans);
    free(tl);
}

void run_result_free(run_result *r)
{
    run_timeline_free(r->timeline);
    r->timeline = NULL;
}

int run_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                 const run_options *opt, run_result *out, dt_error *err)
{
    return dt_error_set(err, DT_EUNSUPPORTED, file, NULL, "run_scenario not available yet");
}

int run_memory(const cJSON *scenario, const char *file, const char *base_dir, struct run_memory *out,
               bool *fits, dt_error *err)
{
    return dt_error_set(err, DT_EUNSUPPORTED, file, NULL, "run_memory not available yet");
}

int run_scenario_file(const char *filename, const run_options *opt, run_result *out,
                      dt_error *err)
{
    return dt_error_set(err, DT_EUNSUPPORTED, filename, NULL, "run_scenario not available yet");
}
