/* bench_bound.c - the planner's lower bound next to the simulated step, for the figures
 * docs/sweeps.md ("The lower bound") quotes under a scripts/docfigs.sh marker.
 *
 * `bench_bound [FILE...]`: for each scenario (default: the shipped Mixtral 8x7B and 128k
 * context-parallel ones, as tests/bench/run.sh calls it), one line with its simulated step
 * (run_scenario, as `dtsim run` prints it) and the lower bound run_probe_scenario gives the
 * planner for the same plan (4 significant digits each). Deterministic: no timing, so CI can
 * compare the output with the quoted block. Asserts nothing; exits 1 on a scenario that does
 * not run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/json.h"
#include "dtsim/run.h"

/* The directory of `file` (relative paths in a scenario are from there), into buf. */
static const char *dir_of(const char *file, char *buf, size_t n)
{
    const char *slash = strrchr(file, '/');
    if (!slash) return ".";
    size_t len = (size_t)(slash - file);
    if (len >= n) len = n - 1;
    memcpy(buf, file, len);
    buf[len] = 0;
    return len ? buf : "/";
}

int main(int argc, char **argv)
{
    static const char *const shipped[] = {DTSIM_SOURCE_DIR "/scenarios/llama3-8b-128k-cp-h100.json",
                                           DTSIM_SOURCE_DIR "/scenarios/mixtral-8x7b-1024-h100.json"};
    const char *const *files = (const char *const *)argv + 1;
    int n = argc - 1;
    if (n < 1) {
        files = shipped;
        n = 2;
    }
    char msg[2048], dir[1024];
    for (int i = 0; i < n; i++) {
        cJSON *j;
        dt_error e;
        dt_error_clear(&e);
        if (js_parse_file(files[i], &j, &e) != DT_OK) {
            fprintf(stderr, "bench_bound: %s\n", dt_error_format(&e, msg, sizeof msg));
            return 1;
        }
        const char *base = dir_of(files[i], dir, sizeof dir);
        run_options ro = {0};
        run_result r;
        run_probe pr;
        int rc = run_scenario(j, files[i], base, &ro, &r, &e);
        if (rc == DT_OK) {
            rc = run_probe_scenario(j, files[i], base, NULL, &pr, &e);
            if (rc == DT_OK)
                printf("%s: step %.4g s, lower bound %.4g s\n", files[i], r.step_time_s,
                       pr.step_lower_bound_s);
            run_result_free(&r);
        }
        cJSON_Delete(j);
        if (rc != DT_OK) {
            fprintf(stderr, "bench_bound: %s\n", dt_error_format(&e, msg, sizeof msg));
            return 1;
        }
    }
    return 0;
}
