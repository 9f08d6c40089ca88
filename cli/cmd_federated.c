/* cmd_federated.c - `dtsim federated`: rounds of federated learning (clients, edge servers,
 * cloud) over the network model; docs/federated.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dtsim/federated.h"
#include "dtsim/units.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim federated SCENARIO.json [--rounds N] [--json]\n"
            "\n"
            "Simulate rounds of federated learning: the scenario's \"federated\" section names\n"
            "the clients, edge servers and cloud servers among the topology's GPUs; each client\n"
            "trains the scenario's model for local_steps steps on its own GPU, then updates are\n"
            "aggregated hierarchically (clients -> edge -> cloud), by a flat (sharded) parameter\n"
            "server, or by an all-reduce among the clients, every transfer a flow over the\n"
            "topology. Prints the time per round, what it is spent on, when the first round\n"
            "reached each step and the bytes each tier sends (docs/federated.md).\n"
            "\n"
            "options:\n"
            "  --rounds N   rounds to simulate (default: federated.rounds, else 1)\n"
            "  --json       one JSON document on stdout\n"
            "  -h, --help   this help\n");
}

static void ms_json(cJSON *o, const char *key, double v)
{
    if (v >= 0) cJSON_AddNumberToObject(o, key, v);
}

static void print_json(const fl_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", r->name);
    cJSON_AddStringToObject(j, "aggregation", fl_aggregation_name(r->aggregation));
    cJSON_AddNumberToObject(j, "clients", r->clients);
    cJSON_AddNumberToObject(j, "edges", r->edges);
    cJSON_AddNumberToObject(j, "cloud_servers", r->cloud_servers);
    cJSON_AddNumberToObject(j, "rounds", r->rounds);
    cJSON_AddNumberToObject(j, "local_steps", r->local_steps);
    cJSON_AddNumberToObject(j, "edge_rounds", r->edge_rounds);
    cJSON_AddNumberToObject(j, "update_bytes", r->update_bytes);
    cJSON_AddNumberToObject(j, "local_step_min_s", r->local_step_min_s);
    cJSON_AddNumberToObject(j, "local_step_max_s", r->local_step_max_s);
    cJSON_AddNumberToObject(j, "total_s", r->total_s);
    cJSON_AddNumberToObject(j, "round_s", r->round_s);
    cJSON_AddNumberToObject(j, "compute_s", r->compute_s);
    cJSON_AddNumberToObject(j, "comm_s", r->comm_s);
    cJSON *m = cJSON_AddObjectToObject(j, "first_round_s");
    ms_json(m, "trained", r->first.trained);
    ms_json(m, "at_edges", r->first.at_edges);
    ms_json(m, "edges_aggregated", r->first.edges_aggregated);
    ms_json(m, "at_cloud", r->first.at_cloud);
    ms_json(m, "cloud_aggregated", r->first.cloud_aggregated);
    ms_json(m, "at_edges_back", r->first.at_edges_back);
    ms_json(m, "at_clients", r->first.at_clients);
    cJSON *b = cJSON_AddObjectToObject(j, "bytes_per_round");
    cJSON_AddNumberToObject(b, "clients_up", r->bytes_clients_up);
    cJSON_AddNumberToObject(b, "edges_up", r->bytes_edges_up);
    cJSON_AddNumberToObject(b, "cloud_down", r->bytes_cloud_down);
    cJSON_AddNumberToObject(b, "edges_down", r->bytes_edges_down);
    cJSON_AddNumberToObject(j, "samples_per_round", r->samples_per_round);
    cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
    cJSON_AddNumberToObject(j, "events", (double)r->events);
    char *s = cJSON_Print(j);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
}

static void line_ms(const char *label, double v)
{
    char a[32];
    if (v >= 0) printf("  %-26s %12s\n", label, unit_fmt_seconds(v, a, sizeof a));
}

static void print_text(const char *file, const fl_result *r)
{
    char a[32], b[32], c[32];
    printf("%s: federated learning, %s aggregation\n", file, fl_aggregation_name(r->aggregation));
    printf("  %d clients", r->clients);
    if (r->aggregation == FL_HIERARCHICAL) printf(", %d edge servers", r->edges);
    if (r->cloud_servers) printf(", %d cloud server%s", r->cloud_servers, r->cloud_servers > 1 ? "s" : "");
    printf("; update %s\n", unit_fmt_size(r->update_bytes, a, sizeof a));
    if (r->aggregation == FL_HIERARCHICAL)
        printf("  %d local steps per edge round, %d edge round%s per cloud round, %d round%s\n",
               r->local_steps, r->edge_rounds, r->edge_rounds > 1 ? "s" : "", r->rounds,
               r->rounds > 1 ? "s" : "");
    else
        printf("  %d local steps per round, %d round%s\n", r->local_steps * r->edge_rounds,
               r->rounds, r->rounds > 1 ? "s" : "");
    printf("  local step %s (slowest client %s)\n\n", unit_fmt_seconds(r->local_step_min_s, a, sizeof a),
           unit_fmt_seconds(r->local_step_max_s, b, sizeof b));
    printf("  round                      %12s   (%d round%s: %s)\n",
           unit_fmt_seconds(r->round_s, a, sizeof a), r->rounds, r->rounds > 1 ? "s" : "",
           unit_fmt_seconds(r->total_s, c, sizeof c));
    double pc = r->round_s > 0 ? 100 * r->compute_s / r->round_s : 0;
    printf("  compute                    %12s %5.1f%%  the slowest client's training\n",
           unit_fmt_seconds(r->compute_s, a, sizeof a), pc);
    printf("  communication              %12s %5.1f%%  transfers and aggregation waited for\n\n",
           unit_fmt_seconds(r->comm_s, a, sizeof a), 100 - pc);
    printf("first round%s, when each step was done (from the start)\n",
           r->aggregation == FL_HIERARCHICAL && r->edge_rounds > 1 ? " (its last edge round)" : "");
    line_ms("clients trained", r->first.trained);
    line_ms("updates at edge servers", r->first.at_edges);
    line_ms("edge servers aggregated", r->first.edges_aggregated);
    line_ms("updates at the cloud", r->first.at_cloud);
    line_ms("cloud aggregated", r->first.cloud_aggregated);
    line_ms("model back at edge servers", r->first.at_edges_back);
    line_ms("model at every client", r->first.at_clients);
    printf("\nbytes sent per round\n");
    printf("  %-26s %12s\n", r->aggregation == FL_ALLREDUCE ? "clients (all-reduce)" : "clients",
           unit_fmt_size(r->bytes_clients_up, a, sizeof a));
    if (r->aggregation == FL_HIERARCHICAL) {
        printf("  %-26s %12s\n", "edge servers to the cloud", unit_fmt_size(r->bytes_edges_up, a, sizeof a));
        printf("  %-26s %12s\n", "edge servers to clients", unit_fmt_size(r->bytes_edges_down, a, sizeof a));
    }
    if (r->aggregation != FL_ALLREDUCE)
        printf("  %-26s %12s\n", "cloud", unit_fmt_size(r->bytes_cloud_down, a, sizeof a));
    printf("\n  %.4g samples per round, %.4g samples/s; %llu events\n", r->samples_per_round,
           r->samples_per_s, (unsigned long long)r->events);
}

static int run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return CLI_OK;
    }
    const char *file = NULL;
    bool json = false;
    fl_options opt = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--rounds")) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || !end || *end || v < 1 || v > 1 << 20) {
                fprintf(stderr, "dtsim federated: --rounds needs a whole number 1..%d%s%s\n",
                        1 << 20, i + 1 < argc ? ", found " : "", i + 1 < argc ? argv[i + 1] : "");
                return CLI_USAGE;
            }
            opt.rounds = (int)v;
            i++;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "dtsim federated: unknown option: %s\n(see dtsim federated --help)\n",
                    argv[i]);
            return CLI_USAGE;
        } else if (!file) {
            file = argv[i];
        } else {
            fprintf(stderr, "dtsim federated: more than one scenario: %s\n", argv[i]);
            return CLI_USAGE;
        }
    }
    if (!file) {
        fprintf(stderr, "dtsim federated: missing the scenario file\n(see dtsim federated --help)\n");
        return CLI_USAGE;
    }
    fl_result r;
    dt_error err;
    dt_error_clear(&err);
    int rc = fl_run_file(file, &opt, &r, &err);
    if (rc != DT_OK) return cli_report_error(&err);
    if (json) print_json(&r);
    else print_text(file, &r);
    return CLI_OK;
}

const cli_command cmd_federated = {"federated",
                                   "federated learning rounds: clients, edge servers, cloud",
                                   run, help};
