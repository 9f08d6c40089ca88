/* cmd_probe.c - `dtsim probe`: time bf16 GEMMs of a training layer's shapes and HBM copies on
 * this machine's GPU, burst and sustained, and set them against dtsim's GEMM model
 * (include/dtsim/probe.h, docs/calibration.md "Compute probe").
 *
 * Its own command rather than `calibrate --probe`: calibrate measures collectives, fits
 * T = alpha + S beta and writes a calibration file that readers apply to links; none of its
 * options (ranks, sizes, dtype, chunk, top-k, fit range) means anything for a GEMM, and the
 * probe's result is a report and a GPU spec override, not a calibration. --from makes the same
 * report from a measurement taken elsewhere (scripts/device-probe.sh), with no GPU here.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dtsim/gpu.h"
#include "dtsim/probe.h"
#include "dtsim/units.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim probe [options]                 (needs a CUDA GPU)\n"
            "       dtsim probe --from MEASUREMENT.json [options]\n\n"
            "Time bf16 GEMMs (cublasGemmEx, fp32 accumulation, in a training layer's layouts) on\n"
            "GPU 0, as a burst (median of short repeats) and sustained (looped, TFLOP/s per\n"
            "window), plus an HBM copy and read-modify-write; then compare each with dtsim's\n"
            "GEMM model for the GPU's preset: measured/predicted rate and the matmul efficiency\n"
            "each time implies, and a suggested GPU spec override (docs/calibration.md).\n\n"
            "options:\n"
            "  --shapes FILE     GEMM shapes, JSON: [{\"name\", \"m\", \"n\", \"k\", \"layout\":\n"
            "                    \"fwd\"|\"dgrad\"|\"wgrad\", \"sustain\": s}, ...] (default: one layer\n"
            "                    of the Megatron README's 1.7B at 4096 tokens, and 8192^3)\n"
            "  --sustain S       seconds each shape is looped for (default 60; 0: burst only)\n"
            "  --window S        sustained rate per window of S seconds (default 1)\n"
            "  --repeats N       timed burst repeats (default 50)\n"
            "  --warmup N        untimed GEMMs first (default 10)\n"
            "  --hbm SIZE        HBM probe buffer (default 1GiB; 0 skips it)\n"
            "  --gpu PRESET      compare with this preset (default: the one the device's name\n"
            "                    denotes; none for an unknown device)\n"
            "  --from FILE       report on a measurement written by the probe (or by\n"
            "                    kernels/kern_probe.cu built alone) instead of measuring\n"
            "  --out FILE        write the report JSON there (- for stdout)\n"
            "  --json            print the report JSON instead of the table\n\n"
            "Exit status: 0 done, 1 no CUDA device or a CUDA failure, 2 bad usage or input.\n");
}

static int usage(const char *fmt, const char *a)
{
    fprintf(stderr, "dtsim probe: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n(see dtsim probe --help)\n");
    return CLI_USAGE;
}

static int number(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !(x >= lo && x <= hi)) {
        fprintf(stderr, "dtsim probe: %s: expected a number from %g to %g, found \"%s\"\n", flag, lo, hi, v);
        return CLI_USAGE;
    }
    *out = x;
    return CLI_OK;
}

static void on_progress(const char *what, void *arg)
{
    (void)arg;
    fprintf(stderr, "probe: %s\n", what);
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void print_table(const cJSON *rep)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(rep, "dtsim");
    printf("%s, %g SMs", cJSON_GetObjectItemCaseSensitive(rep, "device")->valuestring, num(rep, "sms"));
    if (d)
        printf("; dtsim spec %s (bf16 peak %g TFLOP/s, matmul efficiency %g)", cJSON_GetObjectItemCaseSensitive(d, "spec")->valuestring,
               num(d, "peak_bf16_tflops"), num(d, "matmul_eff"));
    printf("\n\n%-16s %-6s %6s %6s %6s %8s %8s %8s %8s %8s %8s\n", "shape", "layout", "m", "n", "k", "burst", "first", "last",
           "dtsim", "measured", "implied");
    printf("%-16s %-6s %6s %6s %6s %8s %8s %8s %8s %8s %8s\n", "", "", "", "", "", "TFLOP/s", "TFLOP/s", "TFLOP/s", "TFLOP/s",
           "/dtsim", "matmul");
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(rep, "gemms"))
    {
        const cJSON *su = cJSON_GetObjectItemCaseSensitive(g, "sustained");
        const cJSON *gd = cJSON_GetObjectItemCaseSensitive(g, "dtsim");
        /* the comparison of the sustained end where there is one (training runs for minutes) */
        const cJSON *cmp = gd ? cJSON_GetObjectItemCaseSensitive(gd, su ? "sustained_last" : "burst") : NULL;
        double v[] = {num(g, "burst_tflops"), su ? num(su, "first_tflops") : NAN, su ? num(su, "last_tflops") : NAN,
                      gd ? num(gd, "predicted_tflops") : NAN, cmp ? num(cmp, "measured_over_predicted") : NAN,
                      cmp ? num(cmp, "implied_matmul_eff") : NAN};
        printf("%-16s %-6s %6g %6g %6g", cJSON_GetObjectItemCaseSensitive(g, "name")->valuestring,
               cJSON_GetObjectItemCaseSensitive(g, "layout")->valuestring, num(g, "m"), num(g, "n"), num(g, "k"));
        for (int i = 0; i < 6; i++) {
            if (isnan(v[i])) printf(" %8s", "-");
            else printf(i < 4 ? " %8.1f" : " %8.3f", v[i]);
        }
        printf("\n");
    }
    printf("\n(measured/dtsim and implied matmul efficiency: of the last sustained window where the\n"
           " shape was sustained, else of the burst)\n");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(rep, "hbm");
    if (h) printf("\nHBM: copy %.0f GB/s, read-modify-write %.0f GB/s (bytes read + written)\n", num(h, "copy_gbs"), num(h, "rmw_gbs"));
    const cJSON *sg = cJSON_GetObjectItemCaseSensitive(rep, "suggested_spec");
    if (sg) {
        char *s = cJSON_PrintUnformatted(sg);
        printf("\nsuggested GPU spec: %s\n", s);
        free(s);
    }
}

static int probe_or_read(const cal_probe_opts *o, const char *shapes_file, const char *from, cal_probe_run *meas,
                         dt_error *err);
static int report(const cal_probe_run *meas, const char *gpu, bool json, const char *out, dt_error *err);

static int run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return CLI_OK;
    }
    cal_probe_opts o;
    cal_probe_opts_default(&o);
    const char *shapes_file = NULL, *from = NULL, *gpu = NULL, *out = NULL;
    bool json = false, measure_opt = false;
    int rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            json = true;
            continue;
        }
        static const char *const valued[] = {"--shapes", "--sustain", "--window", "--repeats", "--warmup", "--hbm",
                                             "--gpu",    "--from",    "--out",    NULL};
        bool known = false;
        for (const char *const *k = valued; *k; k++) known = known || !strcmp(a, *k);
        if (!known) return usage("unknown argument \"%s\"", a);
        if (i + 1 >= argc) return usage("%s needs a value", a);
        const char *v = argv[++i];
        double x;
        if (strcmp(a, "--gpu") && strcmp(a, "--from") && strcmp(a, "--out")) measure_opt = true;
        if (!strcmp(a, "--shapes")) shapes_file = v;
        else if (!strcmp(a, "--from")) from = v;
        else if (!strcmp(a, "--gpu")) gpu = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--sustain")) {
            if ((rc = number(a, v, 0, CAL_PROBE_MAX_WINDOWS, &o.sustain_s))) return rc;
        } else if (!strcmp(a, "--window")) {
            if ((rc = number(a, v, 0.01, 60, &o.window_s))) return rc;
        } else if (!strcmp(a, "--repeats")) {
            if ((rc = number(a, v, 1, 100000, &x)) || x != floor(x)) return usage("--repeats: expected a whole number from 1 to 100000, found \"%s\"", v);
            o.repeats = (int)x;
        } else if (!strcmp(a, "--warmup")) {
            if ((rc = number(a, v, 0, 100000, &x)) || x != floor(x)) return usage("--warmup: expected a whole number from 0 to 100000, found \"%s\"", v);
            o.warmup = (int)x;
        } else if (!strcmp(a, "--hbm")) {
            char why[256] = "";
            if (strcmp(v, "0") && (unit_parse_size(v, &o.hbm_bytes, why, sizeof why) != DT_OK || !(o.hbm_bytes >= 1 << 20) ||
                                   o.hbm_bytes > 64.0 * (1 << 30)))
                return usage("--hbm: expected 0 or a size from 1MiB to 64GiB such as 1GiB, found \"%s\"", v);
            if (!strcmp(v, "0")) o.hbm_bytes = 0;
        }
    }
    if (from && measure_opt) return usage("--from reports on a finished measurement: %s", "measuring options do not apply");
    if (out && json && cli_is_stdout(out)) return usage("%s", "--json and --out - both print the report; give one");

    dt_error err;
    dt_error_clear(&err);
    cal_probe_run *meas = dt_xcalloc(1, sizeof *meas); /* ~150 KB of windows: not on the stack */
    rc = probe_or_read(&o, shapes_file, from, meas, &err);
    if (rc == CLI_OK) rc = report(meas, gpu, json, out, &err);
    free(meas);
    return rc;
}

static int probe_or_read(const cal_probe_opts *o, const char *shapes_file, const char *from, cal_probe_run *meas,
                         dt_error *err)
{
    int rc;
    if (from) {
        if ((rc = cal_probe_run_file(from, meas, err))) return cli_report_error(err);
    } else {
        cal_probe_shape shapes[CAL_PROBE_MAX_SHAPES];
        int n = 0;
        if (shapes_file) {
            if ((rc = cal_probe_shapes_file(shapes_file, shapes, CAL_PROBE_MAX_SHAPES, &n, err))) return cli_report_error(err);
        } else {
            n = cal_probe_default_shapes(shapes, CAL_PROBE_MAX_SHAPES);
        }
        if ((rc = kern_probe_measure(o, shapes, n, on_progress, NULL, meas, err))) return cli_report_error(err);
    }
    return CLI_OK;
}

static int report(const cal_probe_run *meas, const char *gpu, bool json, const char *out, dt_error *err)
{
    int rc;
    gpu_spec spec;
    const char *preset = gpu ? gpu : cal_probe_preset_for(meas->device);
    if (preset && (rc = gpu_preset(preset, &spec, err))) return cli_report_error(err);
    if (!preset) fprintf(stderr, "dtsim probe: no preset for \"%s\": no comparison with dtsim's model (--gpu PRESET)\n", meas->device);
    cJSON *rep = cal_probe_report(meas, preset ? &spec : NULL, preset);
    char *text = cJSON_Print(rep);
    rc = CLI_OK;
    if (out) {
        cli_outfile o2;
        if (cli_outfile_open(&o2, out, err) != DT_OK) rc = cli_report_error(err);
        else {
            fprintf(o2.f, "%s\n", text);
            if (cli_outfile_commit(&o2, err) != DT_OK) rc = cli_report_error(err);
        }
    }
    if (rc == CLI_OK && json) printf("%s\n", text);
    else if (rc == CLI_OK && !(out && cli_is_stdout(out))) print_table(rep);
    free(text);
    cJSON_Delete(rep);
    return rc;
}

const cli_command cmd_probe = {"probe", "time GEMMs and HBM on this GPU against dtsim's model", run, help};
