/* report.h - writers that turn results into things people look at: Perfetto/Chrome timelines,
 * the terminal breakdown bar, and gnuplot reports of a sweep's results.
 *
 * Writers never own what they are given (timelines, results stay the caller's) and write to the
 * FILE* or directory they are handed; they print nothing else.
 */
#ifndef DTSIM_REPORT_H
#define DTSIM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "dtsim/error.h"
#include "dtsim/run.h"

/* ---- timelines ---------------------------------------------------------------------------- */

/* Parse a GPU selection such as "0-7,64" for n_gpus GPUs into *mask (n_gpus bools, malloc'd,
 * caller frees). NULL or "all" selects every GPU. flag names the option in errors. */
int rep_gpu_select_parse(const char *spec, int n_gpus, const char *flag, bool **mask,
                         dt_error *err);

typedef struct rep_timeline_options {
    const bool *gpus;      /* n_gpus entries; NULL = all. Also filters links: see below */
    bool links;            /* include the per-link tracks */
    sim_time_t step_end;   /* the step's end; 0 = the last span's end */
    const char *scenario;  /* written as otherData.scenario (plot titles), NULL = none */
} rep_timeline_options;

/* Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing):
 *  - one process per host (GPUs without a host under "GPUs"), one more for "Network";
 *  - per GPU: a "state" track that tiles [0, step end] with "compute", "comm KIND (exposed)"
 *    (KIND the kinds of communication in flight: "TP", "DP+PP", ...), "wait (peers)"
 *    (communication-stream spans named "wait_for_peers") and "idle" slices, in that priority
 *    (so its slices sum to the step time), then one track per stream (compute,
 *    TP, PP, DP) holding the ops; spans overlapping on one stream get extra tracks ("TP #2")
 *    because the JSON importer needs slices on one track to nest;
 *  - per busy link a track of transfers, likewise split into lanes when they overlap. With a
 *    GPU selection, only links with an endpoint that is a selected GPU, or that is a node of a
 *    host holding a selected GPU (run_timeline.link_gpu/link_host; all links when those are
 *    NULL); the "Network" process only when a link track remains.
 * Times are microseconds with picosecond decimals. Returns DT_EIO if the write fails. */
int rep_timeline_write(const run_timeline *tl, const rep_timeline_options *opt, FILE *f,
                       dt_error *err);

/* ---- terminal breakdown bar --------------------------------------------------------------- */

/* One line: "[####====..!] compute 62.0%  comm 20.0%  bubble 15.0%  straggler 3.0%" with
 * width cells ('#' compute, '=' exposed comm, '.' bubble, '!' straggler wait, '~' waiting for
 * input data (named only when there is some), ' ' the rest of the step). Shares are of the
 * step time. */
void rep_breakdown_bar(const run_result *r, int width, FILE *f);

/* ---- gnuplot reports of a sweep ----------------------------------------------------------- */

#define REP_MAX_PLOTS 8

typedef struct rep_report_summary {
    int n_plots;
    char plots[REP_MAX_PLOTS][64]; /* base names: "scaling", "breakdown", ... */
    int rows;                      /* result rows read */
} rep_report_summary;

/* From DIR/results.csv (a sweep's results, or any CSV with a size and a busbw column) write
 * into DIR/report/: NAME.dat and NAME.gp per plot, NAME.png (pngcairo) and NAME.svg rendered by
 * running `gnuplot` (or $DTSIM_GNUPLOT), and index.md + index.html embedding them. Plots:
 * scaling (throughput and efficiency vs GPUs against ideal linear), breakdown (stacked step
 * time per point), memory (peak per GPU vs capacity), busbw (vs message size), each made when
 * the columns it needs are there. */
int rep_report(const char *dir, rep_report_summary *sum, dt_error *err);

/* The same from any table into out_dir (created if missing): a CSV file, or a JSON array of
 * flat objects (NAME.json, e.g. `dtsim collective --size 1KiB:1GiB:x2 --json`). The busbw
 * plot draws one line per value of an "algo" column. A trace-event file (a JSON object with
 * "traceEvents", from rep_timeline_write) instead gets the "timeline" plot: its per-GPU state
 * tracks as a chart, one row per GPU. */
int rep_report_file(const char *input, const char *out_dir, rep_report_summary *sum,
                    dt_error *err);

#endif
