/* storage.c - the file system checkpoints are written to and training data is read from
 * (goodput.h, stor_).
 *
 * A deliberately small model: a transfer of B bytes spread evenly over h hosts takes
 *     latency + B / min(aggregate bandwidth, h x per-host bandwidth, path)
 * where `path` is the max-flow of the topology's links between the hosts' GPUs and a storage
 * node when the scenario names one (run.c computes it with topo_maxflow), else unlimited. That
 * is the fluid optimum of a bulk transfer whose hosts carry equal shares; what it leaves out
 * (metadata storms, stragglers among writers, caching) is in docs/goodput.md.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtsim/goodput.h"

#define TRY(x)                                                                              \
    do {                                                                                    \
        int rc_ = (x);                                                                      \
        if (rc_ != DT_OK) return rc_;                                                       \
    } while (0)

int stor_parse(const js_ctx *c, const cJSON *j, stor_spec *st, stor_input *in)
{
    memset(st, 0, sizeof *st);
    memset(in, 0, sizeof *in);
    st->bandwidth = st->host_bandwidth = INFINITY;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "storage");
    if (v) {
        static const char *const keys[] = {"bandwidth", "host_bandwidth", "latency", "node", NULL};
        TRY(js_expect_object(c, v, "storage"));
        TRY(js_check_keys(c, v, "storage", keys));
        TRY(js_get_quantity(c, v, "storage", "bandwidth", UNIT_BANDWIDTH, false, true, &st->bandwidth));
        TRY(js_get_quantity(c, v, "storage", "host_bandwidth", UNIT_BANDWIDTH, false, true,
                            &st->host_bandwidth));
        TRY(js_get_quantity(c, v, "storage", "latency", UNIT_TIME, false, false, &st->latency_s));
        if (st->latency_s > 1e6)
            return js_fail(c, "storage", "latency", "expected a latency below 1e6 s, found %g s",
                           st->latency_s);
        const char *node = NULL;
        TRY(js_get_string(c, v, "storage", "node", false, &node));
        if (node) {
            if (!node[0] || strlen(node) >= sizeof st->node)
                return js_fail(c, "storage", "node", "expected the name of a topology node "
                               "(1 to %zu characters)", sizeof st->node - 1);
            snprintf(st->node, sizeof st->node, "%s", node);
        }
        if (!isfinite(st->bandwidth) && !isfinite(st->host_bandwidth) && !node)
            return js_fail(c, "storage", NULL, "expected \"bandwidth\" (the file system's "
                           "aggregate), \"host_bandwidth\" (each host's link to it) or \"node\" "
                           "(a topology node the storage hangs off)");
        st->present = true;
    }
    v = cJSON_GetObjectItemCaseSensitive(j, "input");
    if (v) {
        static const char *const keys[] = {"bytes_per_sample", "prefetch", NULL};
        TRY(js_expect_object(c, v, "input"));
        TRY(js_check_keys(c, v, "input", keys));
        TRY(js_get_quantity(c, v, "input", "bytes_per_sample", UNIT_SIZE, true, true,
                            &in->bytes_per_sample));
        long long p = 2;
        TRY(js_get_int(c, v, "input", "prefetch", false, 0, 1 << 20, &p));
        in->prefetch = (int)p;
        if (!st->present)
            return js_fail(c, "", "input", "needs a \"storage\" section: where the samples are "
                           "read from, e.g. \"storage\": {\"bandwidth\": \"100 GB/s\"}");
        in->present = true;
    }
    return DT_OK;
}

double stor_transfer_s(const stor_spec *s, int hosts, double path_bw, double bytes)
{
    if (bytes <= 0) return 0;
    double bw = s->bandwidth;
    double h = (hosts > 0 ? hosts : 1) * s->host_bandwidth;
    if (h < bw) bw = h;
    if (path_bw < bw) bw = path_bw;
    return s->latency_s + (isfinite(bw) && bw > 0 ? bytes / bw : 0);
}

double stor_input_stall_s(const stor_input *in, double read_s, double step_s)
{
    if (!in->present) return 0;
    if (in->prefetch == 0) return read_s;
    return read_s > step_s ? read_s - step_s : 0;
}
