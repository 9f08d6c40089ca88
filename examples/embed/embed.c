/* embed.c - a program that embeds dtsim: it builds a scenario in memory, runs one training step
 * and prints the step time. No file is read or written. Build it against an installed dtsim
 * (docs/api.md):
 *
 *     cc embed.c $(pkg-config --cflags --libs dtsim) -o embed
 *
 * Usage: embed [TP PP DP]   (default 2 2 4, the quickstart's plan: GPT-2 small on 2 DGX H100)
 *        embed --scenario   print the scenario it runs, as JSON (so `dtsim run` can check it)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <dtsim/error.h>
#include <dtsim/run.h>
#include <dtsim/version.h>

/* The scenario, as a program would build it: from its own state, not from a file. */
static cJSON *scenario(int tp, int pp, int dp)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "name", "embedded: GPT-2 small on two DGX H100 boxes");
    cJSON *t = cJSON_AddObjectToObject(s, "topology");
    cJSON_AddStringToObject(t, "generator", "dgx");
    cJSON_AddNumberToObject(t, "nodes", 2);
    cJSON_AddNumberToObject(t, "gpus_per_node", 8);
    cJSON_AddStringToObject(t, "gpu", "H100-SXM");
    cJSON *m = cJSON_AddObjectToObject(s, "model");
    cJSON_AddStringToObject(m, "kind", "transformer");
    cJSON_AddStringToObject(m, "name", "gpt2-small");
    cJSON_AddNumberToObject(m, "layers", 12);
    cJSON_AddNumberToObject(m, "hidden", 768);
    cJSON_AddNumberToObject(m, "heads", 12);
    cJSON_AddNumberToObject(m, "seq_len", 1024);
    cJSON_AddNumberToObject(m, "vocab", 50257);
    cJSON *p = cJSON_AddObjectToObject(s, "parallel");
    cJSON_AddNumberToObject(p, "tp", tp);
    cJSON_AddNumberToObject(p, "pp", pp);
    cJSON_AddNumberToObject(p, "dp", dp);
    cJSON_AddStringToObject(p, "schedule", "1f1b");
    cJSON_AddNumberToObject(p, "micro_batch_size", 4);
    cJSON_AddNumberToObject(s, "global_batch", 128);
    cJSON_AddStringToObject(s, "precision", "bf16");
    cJSON_AddStringToObject(s, "optimizer", "adam");
    cJSON_AddNumberToObject(s, "seed", 1);
    return s;
}

int main(int argc, char **argv)
{
    int tp = 2, pp = 2, dp = 4;
    bool print = argc == 2 && !strcmp(argv[1], "--scenario");
    if (argc == 4) {
        tp = atoi(argv[1]);
        pp = atoi(argv[2]);
        dp = atoi(argv[3]);
    } else if (argc != 1 && !print) {
        fprintf(stderr, "usage: %s [TP PP DP] | --scenario\n", argv[0]);
        return 2;
    }
    cJSON *s = scenario(tp, pp, dp);
    if (print) {
        char *text = cJSON_Print(s);
        puts(text);
        free(text);
        cJSON_Delete(s);
        return 0;
    }
    run_options opt = {0};  /* everything as the scenario says */
    run_result r;
    dt_error err;
    dt_error_clear(&err);
    /* file NULL: messages name "<scenario>"; base_dir: where relative paths would resolve */
    int rc = run_scenario(s, NULL, ".", &opt, &r, &err);
    cJSON_Delete(s);
    if (rc != DT_OK) {
        char buf[1024];
        fprintf(stderr, "embed: %s\n", dt_error_format(&err, buf, sizeof buf));
        run_result_free(&r);
        return 1;
    }
    printf("dtsim %s (compiled against %s)\n", dtsim_version(), DTSIM_VERSION_STRING);
    printf("step_time_s %.17g\n", r.step_time_s);
    printf("compute_s %.17g\n", r.breakdown_s.compute);
    printf("mfu %.6f\n", r.throughput.mfu);
    run_result_free(&r);
    return 0;
}
