/* chakra.c - Chakra execution traces in and out of dtsim's op graph (chakra.h).
 *
 * Files are read whole (at most 1 GiB each) and walked message by message: a varint length,
 * then the message, unpacked by protobuf-c from code protoc-c generates at build time out of
 * chakra_et.proto. Each node is copied into a compact record (the protobuf tree is freed at
 * once), so memory is the records plus one message at a time.
 *
 * Mapping a foreign trace (one lane per rank, docs/formats.md):
 *   COMP_NODE            compute op, stream compute: duration_micros if > 0, else num_ops
 *                        (FLOPs) and tensor_size (bytes) through the GPU's roofline (matmul
 *                        class), else zero time;
 *   COMP_NODE, is_cpu_op compute op on stream "tp" (a CPU thread: its own resource, as in
 *                        ASTRA-sim), its duration;
 *   COMM_COLL_NODE       collective op, stream "dp" (the rank's communication resource);
 *   COMM_SEND_NODE       send op, stream "dp";
 *   COMM_RECV_NODE       zero-time op on stream "dp" that depends on the matching send: it holds
 *                        the communication stream until the data has arrived, as ASTRA-sim's
 *                        receive holds its communication resource;
 *   INVALID, METADATA, MEM_LOAD/STORE, STORAGE, BATCH, CHECKPOINT
 *                        zero-time ops on stream "tp" (dependency points), with one warning per
 *                        type dtsim does not model.
 * Streams run their ops one at a time in file order, so file order must respect the
 * dependencies of nodes on one stream, as it does in traces written in execution order.
 *
 * A dtsim-written trace (GlobalMetadata attribute dtsim_trace: the JSON trace without its ops)
 * is read back exactly: node id = op id, dtsim_cost / dtsim_coll / dtsim_stream name what the
 * op was, the in-lane collectives written with a compute node (after it, or beside it with a
 * tp_join node) and the receive nodes written for cross-lane sends fold away.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <chakra_et.pb-c.h> /* generated in the build tree from chakra_et.proto */

#include "dtsim/chakra.h"
#include "dtsim/json.h"
#include "dtsim/limits.h"

typedef ChakraProtoMsg__Node pb_node;
typedef ChakraProtoMsg__AttributeProto pb_attr;
typedef ChakraProtoMsg__GlobalMetadata pb_meta;

enum { NT_INVALID, NT_METADATA, NT_MEM_LOAD, NT_MEM_STORE, NT_COMP, NT_SEND, NT_RECV, NT_COLL, NT_STORAGE,
       NT_BATCH, NT_CHECKPOINT, NT_COUNT };
static const char *const node_type_names[NT_COUNT] = {
    "INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE", "COMP_NODE",  "COMM_SEND_NODE",
    "COMM_RECV_NODE", "COMM_COLL_NODE", "STORAGE_NODE", "BATCH_NODE", "CHECKPOINT_NODE"};
enum { CT_ALL_REDUCE, CT_REDUCE, CT_ALL_GATHER, CT_GATHER, CT_SCATTER, CT_BROADCAST, CT_ALL_TO_ALL,
       CT_REDUCE_SCATTER, CT_REDUCE_SCATTER_BLOCK, CT_BARRIER, CT_COUNT };
static const char *const comm_type_names[CT_COUNT] = {
    "ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER", "BROADCAST", "ALL_TO_ALL", "REDUCE_SCATTER",
    "REDUCE_SCATTER_BLOCK", "BARRIER"};

#define MAX_FILE_BYTES (1ull << 30)

/* ================================================================ reading */

/* One node, copied out of its message. */
typedef struct cnode {
    uint64_t id;
    int type;
    char *name;                  /* owned; NULL when the node has none */
    uint32_t dep_start;          /* into crank.deps: n_data data deps, then n_ctrl ctrl deps */
    uint32_t n_data, n_ctrl;
    uint64_t dur_us;
    double num_ops, tensor_size;
    bool is_cpu;
    int comm_type;               /* -1 absent */
    double comm_size;            /* -1 absent */
    int64_t comm_src, comm_dst, comm_tag; /* -1 absent */
    char *pg;                    /* owned; NULL absent */
    /* dtsim's own */
    int d_stream;                /* -1 absent */
    int64_t d_cost, d_coll, d_mb, d_layer, d_inlane; /* -1 absent (mb, layer: INT64_MIN absent) */
    double d_bytes;              /* -1 absent */
    char *pg_list;               /* METADATA node: its inputs.values (the PyTorch group list), owned */
    uint32_t msg;                /* message index in the file (0 is GlobalMetadata) */
    uint64_t offset;             /* byte offset of the message's length */
} cnode;

typedef struct crank {
    const char *file;
    cnode *nodes;
    uint32_t n, cap;
    uint64_t *deps;
    size_t n_deps, cap_deps;
    char *dtsim_trace;           /* GlobalMetadata attribute, owned */
    uint32_t *slots;             /* id -> node index + 1, open addressing */
    uint32_t cap_slots;
} crank;

/* Warnings are gathered by (what, key) and sent once each with a count. */
typedef struct warn_rec {
    char key[96];
    dt_error first;
    long count;
} warn_rec;

typedef struct reader {
    const chakra_read_options *opt;
    crank *ranks;
    int n_ranks;
    warn_rec *warns;
    int n_warns, cap_warns;
    dt_error *err;
    size_t total_nodes;
} reader;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static void node_path(const cnode *n, char *buf, size_t size)
{
    snprintf(buf, size, "node %" PRIu64 " (message %u at byte %" PRIu64 ")", n->id, n->msg, n->offset);
}

static int fail_node(reader *R, const crank *k, const cnode *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_node(reader *R, const crank *k, const cnode *n, const char *fmt, ...)
{
    char path[DT_ERR_PATH_MAX], msg[DT_ERR_MSG_MAX];
    node_path(n, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dt_error_set(R->err, DT_EINPUT, k->file, path, "%s", msg);
}

static void warn(reader *R, const char *key, const char *file, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void warn(reader *R, const char *key, const char *file, const char *path, const char *fmt, ...)
{
    for (int i = 0; i < R->n_warns; i++)
        if (!strcmp(R->warns[i].key, key)) {
            R->warns[i].count++;
            return;
        }
    if (R->n_warns == R->cap_warns) {
        R->cap_warns = R->cap_warns ? 2 * R->cap_warns : 8;
        R->warns = dt_xrealloc(R->warns, (size_t)R->cap_warns * sizeof *R->warns);
    }
    warn_rec *w = &R->warns[R->n_warns++];
    memset(w, 0, sizeof *w);
    snprintf(w->key, sizeof w->key, "%s", key);
    w->count = 1;
    char msg[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dt_error_set(&w->first, DT_EINPUT, file, path, "%s", msg);
    w->first.code = DT_OK;
}

static void flush_warnings(reader *R)
{
    for (int i = 0; i < R->n_warns; i++) {
        warn_rec *w = &R->warns[i];
        if (w->count > 1) {
            size_t len = strlen(w->first.msg);
            snprintf(w->first.msg + len, sizeof w->first.msg - len, " (%ld times in all)", w->count);
        }
        if (R->opt && R->opt->warn) R->opt->warn(R->opt->warn_ctx, &w->first);
    }
    free(R->warns);
    R->warns = NULL;
    R->n_warns = R->cap_warns = 0;
}

static void rank_free(crank *k)
{
    for (uint32_t i = 0; i < k->n; i++) {
        free(k->nodes[i].name);
        free(k->nodes[i].pg);
        free(k->nodes[i].pg_list);
    }
    free(k->nodes);
    free(k->deps);
    free(k->dtsim_trace);
    free(k->slots);
    memset(k, 0, sizeof *k);
}

/* index of node id in rank k, or -1 */
static long find_id(const crank *k, uint64_t id)
{
    if (!k->cap_slots) return -1;
    uint32_t mask = k->cap_slots - 1;
    for (uint32_t h = (uint32_t)mix64(id) & mask;; h = (h + 1) & mask) {
        uint32_t s = k->slots[h];
        if (!s) return -1;
        if (k->nodes[s - 1].id == id) return (long)(s - 1);
    }
}

static int index_ids(reader *R, crank *k)
{
    uint32_t cap = 16;
    while (cap < 2 * k->n + 2) cap *= 2;
    k->slots = dt_xcalloc(cap, sizeof *k->slots);
    k->cap_slots = cap;
    for (uint32_t i = 0; i < k->n; i++) {
        long j = find_id(k, k->nodes[i].id);
        if (j >= 0)
            return fail_node(R, k, &k->nodes[i], "node id %" PRIu64 " is used twice (first by message %u)",
                             k->nodes[i].id, k->nodes[j].msg);
        uint32_t mask = cap - 1, h = (uint32_t)mix64(k->nodes[i].id) & mask;
        while (k->slots[h]) h = (h + 1) & mask;
        k->slots[h] = i + 1;
    }
    return DT_OK;
}

/* ---- attribute values, whatever integer or floating type the producer chose ---- */

static bool attr_int(const pb_attr *a, int64_t *v)
{
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: *v = a->int32_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: *v = a->int64_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: *v = a->uint32_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        if (a->uint64_val > INT64_MAX) return false;
        *v = (int64_t)a->uint64_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: *v = a->sint32_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: *v = a->sint64_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL: *v = a->fixed32_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        if (a->fixed64_val > INT64_MAX) return false;
        *v = (int64_t)a->fixed64_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL: *v = a->sfixed32_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL: *v = a->sfixed64_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: *v = a->bool_val; return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL:
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL: {
        double d = a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL ? a->double_val : a->float_val;
        if (!(d == floor(d) && fabs(d) < 9.2e18)) return false;
        *v = (int64_t)d;
        return true;
    }
    default: return false;
    }
}

static bool attr_num(const pb_attr *a, double *v)
{
    int64_t i;
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL) *v = a->double_val;
    else if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL) *v = a->float_val;
    else if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL) *v = (double)a->uint64_val;
    else if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL) *v = (double)a->fixed64_val;
    else if (attr_int(a, &i)) *v = (double)i;
    else return false;
    return isfinite(*v);
}

/* Attributes dtsim reads, and those other tools write that dtsim knowingly ignores (PyTorch's
 * execution-trace bookkeeping, ASTRA-sim's scheduling hints). */
static const char *const ignored_attrs[] = {"comm_priority", "involved_dim", "tensor_loc", "rf_id", "fw_parent",
                                            "seq_id", "scope", "tid", "fw_tid", "op_schema", "stream", "pg_desc",
                                            "schema", NULL};

static int read_attrs(reader *R, const crank *k, cnode *n, pb_attr **attrs, size_t n_attrs, bool dtsim_ok)
{
    char path[DT_ERR_PATH_MAX];
    for (size_t i = 0; i < n_attrs; i++) {
        const pb_attr *a = attrs[i];
        const char *nm = a->name ? a->name : "";
        int64_t iv = 0;
        double dv = 0;
#define WANT_INT(field)                                                                             \
    do {                                                                                            \
        if (!attr_int(a, &iv)) return fail_node(R, k, n, "attribute %s: expected an integer", nm);   \
        field = iv;                                                                                 \
    } while (0)
#define WANT_NUM(field)                                                                             \
    do {                                                                                            \
        if (!attr_num(a, &dv) || !(dv >= 0) || !isfinite(dv))                                      \
            return fail_node(R, k, n, "attribute %s: expected a number >= 0", nm);                  \
        field = dv;                                                                                 \
    } while (0)
        if (!strcmp(nm, "is_cpu_op")) {
            if (!attr_int(a, &iv)) return fail_node(R, k, n, "attribute is_cpu_op: expected a bool");
            n->is_cpu = iv != 0;
        } else if (!strcmp(nm, "num_ops")) {
            WANT_NUM(n->num_ops);
        } else if (!strcmp(nm, "tensor_size")) {
            WANT_NUM(n->tensor_size);
        } else if (!strcmp(nm, "comm_type")) {
            WANT_INT(n->comm_type);
            if (iv < 0 || iv >= CT_COUNT)
                return fail_node(R, k, n, "attribute comm_type: %" PRId64 " is no CollectiveCommType (0..%d)", iv,
                                 CT_COUNT - 1);
        } else if (!strcmp(nm, "comm_size")) {
            WANT_NUM(n->comm_size);
        } else if (!strcmp(nm, "comm_src")) {
            WANT_INT(n->comm_src);
        } else if (!strcmp(nm, "comm_dst")) {
            WANT_INT(n->comm_dst);
        } else if (!strcmp(nm, "comm_tag")) {
            WANT_INT(n->comm_tag);
        } else if (!strcmp(nm, "pg_name")) {
            free(n->pg);
            if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL) {
                if (strlen(a->string_val) > 64)
                    return fail_node(R, k, n, "attribute pg_name: longer than 64 characters");
                n->pg = dt_xstrdup(a->string_val);
            } else if (attr_int(a, &iv)) {
                char b[32];
                snprintf(b, sizeof b, "%" PRId64, iv);
                n->pg = dt_xstrdup(b);
            } else {
                n->pg = NULL;
                return fail_node(R, k, n, "attribute pg_name: expected a string");
            }
        } else if (dtsim_ok && !strncmp(nm, "dtsim_", 6)) {
            if (!strcmp(nm, "dtsim_bytes")) {
                WANT_NUM(n->d_bytes);
            } else if (!attr_int(a, &iv)) {
                return fail_node(R, k, n, "attribute %s: expected an integer", nm);
            } else if (!strcmp(nm, "dtsim_stream")) {
                if (iv < 0 || iv > WL_STREAM_DP) return fail_node(R, k, n, "attribute dtsim_stream: expected 0..3");
                n->d_stream = (int)iv;
            } else if (!strcmp(nm, "dtsim_cost")) {
                n->d_cost = iv;
            } else if (!strcmp(nm, "dtsim_coll")) {
                n->d_coll = iv;
            } else if (!strcmp(nm, "dtsim_mb")) {
                n->d_mb = iv;
            } else if (!strcmp(nm, "dtsim_layer")) {
                n->d_layer = iv;
            } else if (!strcmp(nm, "dtsim_inlane")) {
                n->d_inlane = iv;
            } else {
                goto unknown;
            }
        } else {
            bool known = false;
            for (const char *const *p = ignored_attrs; *p && !known; p++) known = !strcmp(nm, *p);
            if (!known) goto unknown;
        }
        continue;
    unknown : {
        char key[96];
        snprintf(key, sizeof key, "attr:%.80s", nm);
        node_path(n, path, sizeof path);
        warn(R, key, k->file, path, "unknown attribute \"%.80s\" (ignored)", nm);
    }
#undef WANT_INT
#undef WANT_NUM
    }
    return DT_OK;
}

static int read_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= n) return -1;
        uint8_t b = p[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -2;
}

static int push_node(reader *R, crank *k, const pb_node *m, uint32_t msg, uint64_t offset, bool dtsim_ok)
{
    if (R->total_nodes >= CHAKRA_MAX_NODES)
        return dt_error_set(R->err, DT_EINPUT, k->file, NULL, "more than %u nodes in all: larger than dtsim replays",
                            CHAKRA_MAX_NODES);
    R->total_nodes++;
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 64;
        k->nodes = dt_xrealloc(k->nodes, (size_t)k->cap * sizeof *k->nodes);
    }
    cnode *n = &k->nodes[k->n++];
    memset(n, 0, sizeof *n);
    n->id = m->id;
    n->type = (int)m->type;
    n->msg = msg;
    n->offset = offset;
    n->comm_type = -1;
    n->comm_size = -1;
    n->comm_src = n->comm_dst = n->comm_tag = -1;
    n->d_stream = -1;
    n->d_cost = n->d_coll = n->d_inlane = -1;
    n->d_mb = n->d_layer = INT64_MIN;
    n->d_bytes = -1;
    n->dur_us = m->duration_micros;
    /* the bound every time a dtsim file gives has (js_get_time: 9.2e18 ps, about 106 days), so
     * that what is read here can be written as a dtsim trace and read back */
    if ((double)n->dur_us * (double)SIM_US >= 9.2e18) {
        char path[DT_ERR_PATH_MAX];
        node_path(n, path, sizeof path);
        return dt_error_set(R->err, DT_EINPUT, k->file, path,
                            "duration_micros: time out of range (at most 9.2e12 us), found %" PRIu64,
                            m->duration_micros);
    }
    if (m->name && m->name[0]) n->name = dt_xstrdup(m->name);
    size_t nd = m->n_data_deps + m->n_ctrl_deps;
    if (k->n_deps + nd > k->cap_deps) {
        while (k->n_deps + nd > k->cap_deps) k->cap_deps = k->cap_deps ? 2 * k->cap_deps : 256;
        k->deps = dt_xrealloc(k->deps, k->cap_deps * sizeof *k->deps);
    }
    if (k->n_deps + nd > UINT32_MAX)
        return dt_error_set(R->err, DT_EINPUT, k->file, NULL, "more than 2^32 dependencies in one file");
    n->dep_start = (uint32_t)k->n_deps;
    n->n_data = (uint32_t)m->n_data_deps;
    n->n_ctrl = (uint32_t)m->n_ctrl_deps;
    if (m->n_data_deps) memcpy(k->deps + k->n_deps, m->data_deps, m->n_data_deps * sizeof *m->data_deps);
    if (m->n_ctrl_deps)
        memcpy(k->deps + k->n_deps + m->n_data_deps, m->ctrl_deps, m->n_ctrl_deps * sizeof *m->ctrl_deps);
    k->n_deps += nd;
    if (n->type < 0 || n->type >= NT_COUNT)
        return fail_node(R, k, n, "node type %d is not in the Chakra schema (0..%d)", n->type, NT_COUNT - 1);
    char path[DT_ERR_PATH_MAX];
    if (m->base.n_unknown_fields) {
        char key[96];
        snprintf(key, sizeof key, "field:%u", m->base.unknown_fields[0].tag);
        node_path(n, path, sizeof path);
        warn(R, key, k->file, path, "unknown Node field %u (ignored; a newer schema?)", m->base.unknown_fields[0].tag);
    }
    if (n->type == NT_METADATA && m->inputs && m->inputs->values && strstr(m->inputs->values, "pg_name"))
        n->pg_list = dt_xstrdup(m->inputs->values);
    return read_attrs(R, k, n, m->attr, m->n_attr, dtsim_ok);
}

static int read_rank(reader *R, crank *k, const uint8_t *p, size_t len)
{
    if (len >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return dt_error_set(R->err, DT_EINPUT, k->file, NULL,
                            "gzip-compressed: dtsim reads .et files as ASTRA-sim does, uncompressed (gunzip it)");
    if (len == 0) return dt_error_set(R->err, DT_EINPUT, k->file, NULL, "empty: a Chakra trace starts with its GlobalMetadata");
    size_t pos = 0;
    uint32_t msg = 0;
    bool dtsim_ok = !(R->opt && R->opt->ignore_dtsim);
    while (pos < len) {
        uint64_t at = pos, n = 0;
        int v = read_varint(p, len, &pos, &n);
        char path[64];
        snprintf(path, sizeof path, "message %u at byte %" PRIu64, msg, at);
        if (v == -1)
            return dt_error_set(R->err, DT_EINPUT, k->file, path, "the file ends inside the message's length (truncated)");
        if (v == -2) return dt_error_set(R->err, DT_EINPUT, k->file, path, "malformed length (a varint of more than 10 bytes)");
        if (n > len - pos)
            return dt_error_set(R->err, DT_EINPUT, k->file, path,
                                "the message declares %" PRIu64 " bytes but %zu remain (truncated file, or not a Chakra trace)",
                                n, len - pos);
        if (n > CHAKRA_MAX_MESSAGE)
            return dt_error_set(R->err, DT_EINPUT, k->file, path, "%" PRIu64 " bytes: larger than the %u MiB dtsim reads per node",
                                n, CHAKRA_MAX_MESSAGE >> 20);
        if (msg == 0) {
            pb_meta *m = chakra_proto_msg__global_metadata__unpack(NULL, (size_t)n, p + pos);
            if (!m)
                return dt_error_set(R->err, DT_EINPUT, k->file, path,
                                    "not a Chakra GlobalMetadata (the first message of every .et file): "
                                    "malformed protobuf, or not a Chakra trace");
            for (size_t i = 0; i < m->n_attr; i++)
                if (dtsim_ok && m->attr[i]->name && !strcmp(m->attr[i]->name, "dtsim_trace") &&
                    m->attr[i]->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL) {
                    free(k->dtsim_trace);
                    k->dtsim_trace = dt_xstrdup(m->attr[i]->string_val);
                }
            chakra_proto_msg__global_metadata__free_unpacked(m, NULL);
        } else {
            pb_node *m = chakra_proto_msg__node__unpack(NULL, (size_t)n, p + pos);
            if (!m)
                return dt_error_set(R->err, DT_EINPUT, k->file, path,
                                    "not a valid Chakra Node (%" PRIu64 " bytes of malformed protobuf)", n);
            int rc = push_node(R, k, m, msg, at, dtsim_ok);
            chakra_proto_msg__node__free_unpacked(m, NULL);
            if (rc) return rc;
        }
        pos += (size_t)n;
        msg++;
    }
    return index_ids(R, k);
}

/* ---- process groups ---- */

typedef struct group {
    char name[68];
    int *ranks;                  /* sorted; NULL with n 0: all ranks (or, inferred, its users) */
    int n;
    bool inferred;               /* defined by nobody: its members are the ranks that use it */
} group;

typedef struct groups {
    group *g;
    int n, cap;
} groups;

static group *group_find(groups *G, const char *name)
{
    for (int i = 0; i < G->n; i++)
        if (!strcmp(G->g[i].name, name)) return &G->g[i];
    return NULL;
}

static void groups_free(groups *G)
{
    for (int i = 0; i < G->n; i++) free(G->g[i].ranks);
    free(G->g);
    memset(G, 0, sizeof *G);
}

/* Add (name, ranks); the same name twice must name the same ranks. */
static int group_add(reader *R, groups *G, const char *name, const int *ranks, int n, const char *file, const char *path)
{
    group *e = group_find(G, name);
    if (e) {
        bool same = e->n == n && (n == 0 || !memcmp(e->ranks, ranks, (size_t)n * sizeof *ranks));
        if (!same)
            return dt_error_set(R->err, DT_EINPUT, file, path, "process group \"%s\" is defined again with other ranks", name);
        return DT_OK;
    }
    if (G->n == G->cap) {
        G->cap = G->cap ? 2 * G->cap : 8;
        G->g = dt_xrealloc(G->g, (size_t)G->cap * sizeof *G->g);
    }
    group *g = &G->g[G->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    if (n > 0) {
        g->ranks = dt_xmalloc((size_t)n * sizeof *g->ranks);
        memcpy(g->ranks, ranks, (size_t)n * sizeof *ranks);
    }
    g->n = n;
    return DT_OK;
}

/* A JSON list of ranks (ints in 0..n_ranks-1, each once, sorted as dtsim orders a collective's
 * ranks). */
static int ranks_from_json(reader *R, const cJSON *a, const char *file, const char *path, int **out, int *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!cJSON_IsArray(a)) return dt_error_set(R->err, DT_EINPUT, file, path, "expected an array of ranks");
    int n = cJSON_GetArraySize(a);
    int *r = dt_xmalloc((size_t)(n + 1) * sizeof *r);
    bool *seen = dt_xcalloc((size_t)R->n_ranks + 1, sizeof *seen);
    int i = 0;
    for (const cJSON *x = a->child; x; x = x->next, i++) {
        if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || x->valuedouble < 0 ||
            x->valuedouble >= R->n_ranks || seen[(int)x->valuedouble]) {
            free(r);
            free(seen);
            return dt_error_set(R->err, DT_EINPUT, file, path,
                                "element %d: expected a rank 0..%d listed once (the trace has %d rank files)", i,
                                R->n_ranks - 1, R->n_ranks);
        }
        seen[(int)x->valuedouble] = true;
        r[i] = (int)x->valuedouble;
    }
    free(seen);
    /* dtsim runs a collective over its ranks in rank order (file order of the lanes) */
    for (int a1 = 1; a1 < n; a1++)
        for (int b = a1; b > 0 && r[b] < r[b - 1]; b--) {
            int t = r[b];
            r[b] = r[b - 1];
            r[b - 1] = t;
        }
    *out = r;
    *n_out = n;
    return DT_OK;
}

static int read_groups_file(reader *R, groups *G, const char *file)
{
    cJSON *j = NULL;
    int rc = js_parse_file(file, &j, R->err);
    if (rc) return rc;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return dt_error_set(R->err, DT_EINPUT, file, NULL,
                            "expected ASTRA-sim's communicator groups: an object {\"1\": [0, 1, ...], ...}");
    }
    for (const cJSON *e = j->child; e && rc == DT_OK; e = e->next) {
        int *ranks, n;
        if (strlen(e->string) > 64) {
            rc = dt_error_set(R->err, DT_EINPUT, file, e->string, "a group name of more than 64 characters");
            break;
        }
        rc = ranks_from_json(R, e, file, e->string, &ranks, &n);
        if (rc == DT_OK) {
            if (n == 0) rc = dt_error_set(R->err, DT_EINPUT, file, e->string, "a group needs at least one rank");
            else rc = group_add(R, G, e->string, ranks, n, file, e->string);
        }
        free(ranks);
    }
    cJSON_Delete(j);
    return rc;
}

/* A METADATA node's PyTorch process-group list: inputs.values is the Python repr of a list
 * holding one JSON string, "['[{\"pg_name\": \"0\", \"ranks\": [0, 1]}, ...]']". */
static int read_pg_list(reader *R, groups *G, const crank *k, const cnode *n)
{
    const char *s = n->pg_list;
    const char *a = strchr(s, '[');
    if (a && (a[1] == '\'' || a[1] == '"')) a = strchr(a + 1, '[');
    const char *b = strrchr(s, ']');
    if (b && b > s && (b[-1] == '\'' || b[-1] == '"')) {
        const char *c = b - 1;
        while (c > s && *c != ']') c--;
        b = c;
    }
    if (!a || !b || b < a) return fail_node(R, k, n, "METADATA node: the process-group list is not a JSON array");
    cJSON *j = cJSON_ParseWithLength(a, (size_t)(b - a + 1));
    if (!cJSON_IsArray(j)) {
        cJSON_Delete(j);
        return fail_node(R, k, n, "METADATA node: the process-group list is not a JSON array");
    }
    int rc = DT_OK;
    char path[DT_ERR_PATH_MAX];
    node_path(n, path, sizeof path);
    for (const cJSON *e = j->child; e && rc == DT_OK; e = e->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "pg_name");
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(e, "ranks");
        if (!cJSON_IsString(nm) || strlen(nm->valuestring) > 64 || !rk) {
            rc = fail_node(R, k, n, "METADATA node: each process group needs a pg_name string and ranks");
            break;
        }
        int *ranks, cnt;
        rc = ranks_from_json(R, rk, k->file, path, &ranks, &cnt);
        if (rc == DT_OK) rc = group_add(R, G, nm->valuestring, ranks, cnt, k->file, path); /* [] = all ranks */
        free(ranks);
    }
    cJSON_Delete(j);
    return rc;
}

/* ---- building the graph of a foreign trace ---- */

static coll_op op_of_comm(reader *R, int ct, const crank *k, const cnode *n)
{
    char path[DT_ERR_PATH_MAX];
    node_path(n, path, sizeof path);
    switch (ct) {
    case CT_ALL_REDUCE: return COLL_ALLREDUCE;
    case CT_REDUCE: return COLL_REDUCE;
    case CT_ALL_GATHER: return COLL_ALLGATHER;
    case CT_BROADCAST: return COLL_BROADCAST;
    case CT_ALL_TO_ALL: return COLL_ALLTOALL;
    case CT_REDUCE_SCATTER:
    case CT_REDUCE_SCATTER_BLOCK: return COLL_REDUCE_SCATTER;
    case CT_GATHER:
        warn(R, "comm:gather", k->file, path, "GATHER run as a reduce to the root (the same traffic, no reduction)");
        return COLL_REDUCE;
    case CT_SCATTER:
        warn(R, "comm:scatter", k->file, path, "SCATTER run as a broadcast from the root (the same traffic)");
        return COLL_BROADCAST;
    default: return COLL_ALLREDUCE; /* BARRIER: a zero-byte all-reduce, its latency only */
    }
}

typedef struct sendkey {
    int src, dst;
    int64_t tag;
    uint32_t op;  /* the send's op id (rank base + node index): file order within a rank */
} sendkey;

static int cmp_key(const sendkey *a, const sendkey *b)
{
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
    if (a->tag != b->tag) return a->tag < b->tag ? -1 : 1;
    return 0;
}

static int by_sendkey(const void *pa, const void *pb)
{
    const sendkey *a = pa, *b = pb;
    int c = cmp_key(a, b);
    return c ? c : (a->op > b->op) - (a->op < b->op);
}

typedef struct collref {
    int group, rank;
    uint32_t node;
} collref;

static int by_collref(const void *pa, const void *pb)
{
    const collref *a = pa, *b = pb;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return (a->node > b->node) - (a->node < b->node);
}

static int build_foreign(reader *R, groups *G, wl_graph **out)
{
    int N = R->n_ranks;
    size_t total = 0;
    uint32_t *base = dt_xmalloc(((size_t)N + 1) * sizeof *base);
    for (int r = 0; r < N; r++) {
        base[r] = (uint32_t)total;
        total += R->ranks[r].n;
    }
    base[N] = (uint32_t)total;
    wl_graph *g = wl_graph_create(N, N, 1);
    *out = g;
    for (int r = 0; r < N; r++) g->lane_gpus[r] = r;
    int rc = DT_OK;
    char path[DT_ERR_PATH_MAX];
    /* op kinds, streams, and the stream predecessor of each node */
    uint8_t *kind = dt_xmalloc(total + 1), *stream = dt_xmalloc(total + 1);
    uint32_t *arg = dt_xcalloc(total + 1, sizeof *arg);
    double *bytes = dt_xcalloc(total + 1, sizeof *bytes);
    int64_t *pred = dt_xmalloc((total + 1) * sizeof *pred);
    uint32_t *extra = dt_xcalloc(total + 1, sizeof *extra); /* recv: the matching send's op + 1 */
    bool warned_cpu = false;
    for (int r = 0; r < N && rc == DT_OK; r++) {
        crank *k = &R->ranks[r];
        int64_t last[4] = {-1, -1, -1, -1};
        for (uint32_t i = 0; i < k->n && rc == DT_OK; i++) {
            cnode *n = &k->nodes[i];
            uint32_t o = base[r] + i;
            node_path(n, path, sizeof path);
            switch (n->type) {
            case NT_COMP:
                kind[o] = WL_OP_COMPUTE;
                stream[o] = n->is_cpu ? WL_STREAM_TP : WL_STREAM_COMPUTE;
                if (n->is_cpu && !warned_cpu) {
                    warn(R, "cpu", k->file, path, "CPU nodes run their durations on a stream of their own (ASTRA-sim's CPU resource)");
                    warned_cpu = true;
                }
                break;
            case NT_COLL:
                kind[o] = WL_OP_COLL;
                stream[o] = WL_STREAM_DP;
                if (n->comm_type < 0) rc = fail_node(R, k, n, "COMM_COLL_NODE without comm_type");
                else if (n->comm_size < 0 && n->comm_type != CT_BARRIER)
                    rc = fail_node(R, k, n, "COMM_COLL_NODE without comm_size");
                break;
            case NT_SEND:
                kind[o] = WL_OP_SEND;
                stream[o] = WL_STREAM_DP;
                if (n->comm_size < 0) rc = fail_node(R, k, n, "COMM_SEND_NODE without comm_size");
                else if (n->comm_dst < 0 || n->comm_dst >= N)
                    rc = fail_node(R, k, n, "COMM_SEND_NODE: comm_dst %" PRId64 " is not a rank of the trace (0..%d)",
                                   n->comm_dst, N - 1);
                else if (n->comm_dst == r)
                    rc = fail_node(R, k, n, "COMM_SEND_NODE: rank %d sends to itself", r);
                else if (n->comm_src >= 0 && n->comm_src != r)
                    rc = fail_node(R, k, n, "COMM_SEND_NODE in rank %d's file says comm_src %" PRId64, r, n->comm_src);
                else {
                    arg[o] = (uint32_t)n->comm_dst;
                    bytes[o] = n->comm_size;
                }
                break;
            case NT_RECV:
                kind[o] = WL_OP_COMPUTE;
                stream[o] = WL_STREAM_DP;
                if (n->comm_src < 0 || n->comm_src >= N || n->comm_src == r)
                    rc = fail_node(R, k, n, "COMM_RECV_NODE: comm_src %" PRId64 " is not another rank of the trace (0..%d)",
                                   n->comm_src, N - 1);
                else if (n->comm_dst >= 0 && n->comm_dst != r)
                    rc = fail_node(R, k, n, "COMM_RECV_NODE in rank %d's file says comm_dst %" PRId64, r, n->comm_dst);
                break;
            default: {
                kind[o] = WL_OP_COMPUTE;
                stream[o] = WL_STREAM_TP;
                if (n->type != NT_METADATA) {
                    char key[32];
                    snprintf(key, sizeof key, "type:%d", n->type);
                    warn(R, key, k->file, path, "%s has no dtsim model: run as a zero-time dependency point",
                         node_type_names[n->type]);
                }
            }
            }
            pred[o] = last[stream[o]];
            last[stream[o]] = o;
        }
    }
    /* receives: each takes the first send not yet taken with its (source, destination, tag),
     * in the sender's file order. Sends sorted by that key, then file order; a receive finds
     * its key's run by bisection and takes the run's next send: O(S log S) in all. */
    if (rc == DT_OK) {
        size_t n_sends = 0;
        for (int a = 0; a < N; a++)
            for (uint32_t j = 0; j < R->ranks[a].n; j++) n_sends += R->ranks[a].nodes[j].type == NT_SEND;
        sendkey *sk = dt_xmalloc((n_sends + 1) * sizeof *sk);
        size_t ns = 0;
        for (int a = 0; a < N; a++)
            for (uint32_t j = 0; j < R->ranks[a].n; j++) {
                const cnode *s = &R->ranks[a].nodes[j];
                if (s->type == NT_SEND) sk[ns++] = (sendkey){a, (int)s->comm_dst, s->comm_tag, base[a] + j};
            }
        qsort(sk, ns, sizeof *sk, by_sendkey);
        uint32_t *taken = dt_xcalloc(ns + 1, sizeof *taken); /* per run start: sends taken */
        bool *matched = dt_xcalloc(ns + 1, sizeof *matched);
        for (int b = 0; b < N && rc == DT_OK; b++) {
            crank *kb = &R->ranks[b];
            for (uint32_t i = 0; i < kb->n && rc == DT_OK; i++) {
                cnode *rv = &kb->nodes[i];
                if (rv->type != NT_RECV) continue;
                sendkey want = {(int)rv->comm_src, b, rv->comm_tag, 0};
                size_t lo = 0, hi = ns;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (cmp_key(&sk[mid], &want) < 0) lo = mid + 1;
                    else hi = mid;
                }
                size_t at = lo + taken[lo];
                if (lo >= ns || cmp_key(&sk[lo], &want) != 0 || at >= ns || cmp_key(&sk[at], &want) != 0) {
                    rc = fail_node(R, kb, rv, "COMM_RECV_NODE from rank %d (tag %" PRId64 ") has no matching COMM_SEND_NODE in %s",
                                   want.src, rv->comm_tag, R->ranks[want.src].file);
                    break;
                }
                taken[lo]++;
                matched[at] = true;
                uint32_t so = sk[at].op;
                const crank *ka = &R->ranks[want.src];
                const cnode *s = &ka->nodes[so - base[want.src]];
                if (rv->comm_size >= 0 && s->comm_size != rv->comm_size) {
                    rc = fail_node(R, kb, rv, "COMM_RECV_NODE expects %.17g bytes but the matching send (node %" PRIu64
                                              " of %s) sends %.17g", rv->comm_size, s->id, ka->file, s->comm_size);
                    break;
                }
                extra[base[b] + i] = so + 1;
            }
        }
        for (size_t q = 0; q < ns && rc == DT_OK; q++)
            if (!matched[q]) {
                int a = sk[q].src;
                const cnode *s = &R->ranks[a].nodes[sk[q].op - base[a]];
                node_path(s, path, sizeof path);
                warn(R, "unmatched-send", R->ranks[a].file, path,
                     "COMM_SEND_NODE to rank %" PRId64 " has no matching COMM_RECV_NODE: the data just arrives", s->comm_dst);
            }
        free(sk);
        free(taken);
        free(matched);
    }
    /* collectives: the k-th collective of each member of a group is one instance. Collective
     * nodes sorted by (group, rank, file order) put every member's list in one run. */
    if (rc == DT_OK) {
        size_t n_colls = 0;
        for (int r = 0; r < N; r++)
            for (uint32_t i = 0; i < R->ranks[r].n; i++) n_colls += R->ranks[r].nodes[i].type == NT_COLL;
        collref *cr = dt_xmalloc((n_colls + 1) * sizeof *cr);
        size_t nc = 0;
        for (int r = 0; r < N && rc == DT_OK; r++) {
            crank *k = &R->ranks[r];
            for (uint32_t i = 0; i < k->n && rc == DT_OK; i++) {
                cnode *n = &k->nodes[i];
                if (n->type != NT_COLL) continue;
                const char *pg = n->pg && n->pg[0] ? n->pg : "0";
                group *gr = group_find(G, pg);
                if (!gr) {
                    /* not defined anywhere: "0" is every rank (ASTRA-sim's default), any other
                     * name the ranks that use it */
                    rc = group_add(R, G, pg, NULL, 0, k->file, NULL);
                    gr = group_find(G, pg);
                    gr->inferred = strcmp(pg, "0") != 0;
                }
                cr[nc++] = (collref){(int)(gr - G->g), r, i};
            }
        }
        qsort(cr, nc, sizeof *cr, by_collref);
        int *members = dt_xmalloc(((size_t)N + 1) * sizeof *members);
        size_t *run = dt_xmalloc(((size_t)N + 2) * sizeof *run); /* start of each member's run */
        for (size_t q = 0; q < nc && rc == DT_OK;) {
            int gi = cr[q].group;
            size_t qe = q;
            while (qe < nc && cr[qe].group == gi) qe++;
            group *gr = &G->g[gi];
            /* the members: listed, all ranks, or (inferred) those that use the group */
            int m = 0;
            if (gr->inferred) {
                for (size_t t = q; t < qe; t++)
                    if (t == q || cr[t].rank != cr[t - 1].rank) members[m++] = cr[t].rank;
            } else if (gr->n) {
                for (int x = 0; x < gr->n; x++) members[m++] = gr->ranks[x];
            } else {
                for (int r = 0; r < N; r++) members[m++] = r;
            }
            /* each member's run, and every user a member */
            size_t t = q;
            int count = -1;
            for (int x = 0; x < m && rc == DT_OK; x++) {
                while (t < qe && cr[t].rank < members[x]) {
                    const crank *k = &R->ranks[cr[t].rank];
                    rc = fail_node(R, k, &k->nodes[cr[t].node], "uses process group \"%s\", whose ranks do not include %d",
                                   gr->name, cr[t].rank);
                    break;
                }
                if (rc) break;
                run[x] = t;
                while (t < qe && cr[t].rank == members[x]) t++;
                int c = (int)(t - run[x]);
                if (count < 0) count = c;
                else if (c != count) {
                    /* located at the first collective one member has and the other lacks */
                    int more = c > count ? members[x] : members[0];
                    size_t at = c > count ? run[x] + (size_t)count : run[0] + (size_t)c;
                    const crank *km = &R->ranks[more];
                    rc = fail_node(R, km, &km->nodes[cr[at].node],
                                   "process group \"%s\": rank %d runs %d collectives on it, rank %d runs %d; every "
                                   "member must run the group's collectives, in the same order",
                                   gr->name, members[0], count, members[x], c);
                }
            }
            if (rc == DT_OK && t < qe) {
                const crank *k = &R->ranks[cr[t].rank];
                rc = fail_node(R, k, &k->nodes[cr[t].node], "uses process group \"%s\", whose ranks do not include %d", gr->name,
                               cr[t].rank);
            }
            if (rc == DT_OK && count == 0) {
                /* a listed group nobody uses: nothing to do */
            }
            for (int j = 0; rc == DT_OK && j < count; j++) {
                const crank *kf = &R->ranks[members[0]];
                const cnode *nf = &kf->nodes[cr[run[0] + (size_t)j].node];
                coll_op op = op_of_comm(R, nf->comm_type, kf, nf);
                double sz = nf->comm_type == CT_BARRIER ? 0 : nf->comm_size;
                for (int x = 1; x < m && rc == DT_OK; x++) {
                    const crank *k = &R->ranks[members[x]];
                    const cnode *n = &k->nodes[cr[run[x] + (size_t)j].node];
                    if (n->comm_type != nf->comm_type || (nf->comm_type != CT_BARRIER && n->comm_size != nf->comm_size))
                        rc = fail_node(R, k, n,
                                       "collective %d of process group \"%s\" is %s of %.17g bytes here but %s of %.17g "
                                       "bytes in %s (node %" PRIu64 ")",
                                       j, gr->name, comm_type_names[n->comm_type], n->comm_size, comm_type_names[nf->comm_type],
                                       nf->comm_size, kf->file, nf->id);
                }
                if (rc) break;
                uint32_t inst = wl_graph_coll(g, op, sz);
                for (int x = 0; x < m; x++) arg[base[members[x]] + cr[run[x] + (size_t)j].node] = inst;
            }
            q = qe;
        }
        free(members);
        free(run);
        free(cr);
    }
    /* the ops, in rank then file order, with their dependencies */
    uint32_t *deps = NULL;
    size_t cap = 0;
    for (int r = 0; r < N && rc == DT_OK; r++) {
        crank *k = &R->ranks[r];
        for (uint32_t i = 0; i < k->n && rc == DT_OK; i++) {
            cnode *n = &k->nodes[i];
            uint32_t o = base[r] + i;
            size_t need = n->n_data + n->n_ctrl + 1;
            if (need > cap) {
                cap = need * 2;
                deps = dt_xrealloc(deps, cap * sizeof *deps);
            }
            uint32_t nd = 0;
            for (uint32_t d = 0; d < n->n_data + n->n_ctrl; d++) {
                uint64_t id = k->deps[n->dep_start + d];
                long j = find_id(k, id);
                if (j < 0) {
                    rc = fail_node(R, k, n, "depends on node %" PRIu64 ", which %s does not have", id, k->file);
                    break;
                }
                if ((uint32_t)j == i) {
                    rc = fail_node(R, k, n, "depends on itself");
                    break;
                }
                uint32_t t = base[r] + (uint32_t)j;
                if (d >= n->n_data && (int64_t)t == pred[o]) continue; /* a stream's order is implied */
                bool dup = false;
                for (uint32_t q = 0; q < nd && !dup; q++) dup = deps[q] == t;
                if (!dup) deps[nd++] = t;
            }
            if (rc) break;
            if (n->type == NT_RECV) deps[nd++] = extra[o] - 1;
            wl_op op = {.lane = (uint32_t)r, .kind = kind[o], .stream = stream[o], .mb = -1, .layer = -1};
            const char *nm = n->name ? n->name : node_type_names[n->type];
            if (g->n_names >= UINT16_MAX - 1 && n->name) {
                warn(R, "names", k->file, NULL, "more than %d distinct node names: the rest are named by their type",
                     UINT16_MAX - 2);
                nm = node_type_names[n->type];
            }
            op.name = (uint16_t)wl_graph_name(g, nm);
            if (kind[o] == WL_OP_COMPUTE) {
                wl_cost c = {0};
                if (n->type == NT_COMP) {
                    if (n->dur_us > 0) c.fixed = n->dur_us > (uint64_t)(SIM_TIME_MAX / SIM_US) ? SIM_TIME_MAX
                                                                                             : (sim_time_t)n->dur_us * SIM_US;
                    else {
                        c.flops[GPU_OP_MATMUL] = n->num_ops;
                        c.bytes[GPU_OP_MATMUL] = n->tensor_size;
                    }
                }
                op.arg = wl_graph_cost(g, &c);
            } else if (kind[o] == WL_OP_COLL) {
                op.arg = arg[o];
            } else {
                op.arg = arg[o];
                op.bytes = bytes[o];
            }
            wl_graph_op(g, &op, deps, nd);
        }
    }
    free(deps);
    free(base);
    free(kind);
    free(stream);
    free(arg);
    free(bytes);
    free(pred);
    free(extra);
    return rc;
}

/* ---- a dtsim-written trace ---- */

static int build_dtsim(reader *R, wl_graph **out, trace_env *env)
{
    const crank *k0 = &R->ranks[0];
    for (int r = 1; r < R->n_ranks; r++)
        if (!R->ranks[r].dtsim_trace || strcmp(R->ranks[r].dtsim_trace, k0->dtsim_trace))
            return dt_error_set(R->err, DT_EINPUT, R->ranks[r].file, "GlobalMetadata",
                                "its dtsim_trace attribute differs from rank 0's (%s): files of two traces mixed?",
                                k0->file);
    cJSON *jt = NULL;
    char name[DT_ERR_FILE_MAX + 32];
    snprintf(name, sizeof name, "%s (dtsim_trace)", k0->file);
    int rc = js_parse_text(k0->dtsim_trace, strlen(k0->dtsim_trace), name, &jt, R->err);
    if (rc) return rc;
    js_ctx ctx = {.file = name, .err = R->err};
    wl_graph *g = NULL;
    rc = trace_read(&ctx, jt, &g, env);
    cJSON_Delete(jt);
    if (rc) return rc;
    *out = g;
    if (g->n_gpus != R->n_ranks) {
        return dt_error_set(R->err, DT_EINPUT, k0->file, "GlobalMetadata", "dtsim wrote this trace for %d GPUs, found %d files",
                            g->n_gpus, R->n_ranks);
    }
    int ls = g->lane_size;
    int *lane_of = dt_xmalloc((size_t)g->n_gpus * sizeof *lane_of);
    for (int i = 0; i < g->n_gpus; i++) lane_of[i] = -1;
    for (int l = 0; l < g->n_lanes; l++)
        for (int x = 0; x < ls; x++) lane_of[g->lane_gpus[(size_t)l * ls + x]] = l;
    /* the op nodes of each lane's first GPU, by id */
    size_t n_ops = 0;
    for (int l = 0; l < g->n_lanes; l++) {
        const crank *k = &R->ranks[g->lane_gpus[(size_t)l * ls]];
        for (uint32_t i = 0; i < k->n; i++) {
            const cnode *n = &k->nodes[i];
            if ((n->type == NT_COMP || n->type == NT_COLL || n->type == NT_SEND) && n->d_inlane < 0) n_ops++;
        }
    }
    struct at { int rank; uint32_t node; } *where = dt_xmalloc((n_ops + 1) * sizeof *where);
    for (size_t i = 0; i < n_ops; i++) where[i].rank = -1;
    for (int l = 0; l < g->n_lanes && rc == DT_OK; l++) {
        int r = g->lane_gpus[(size_t)l * ls];
        const crank *k = &R->ranks[r];
        for (uint32_t i = 0; i < k->n && rc == DT_OK; i++) {
            const cnode *n = &k->nodes[i];
            if (!((n->type == NT_COMP || n->type == NT_COLL || n->type == NT_SEND) && n->d_inlane < 0)) continue;
            if (n->id >= n_ops || where[n->id].rank >= 0)
                rc = fail_node(R, k, n, "dtsim numbers the ops of its traces 0..%zu, once each: this id does not fit",
                               n_ops - 1);
            else
                where[n->id] = (struct at){r, i};
        }
    }
    uint32_t *deps = NULL;
    size_t cap = 0;
    for (size_t o = 0; o < n_ops && rc == DT_OK; o++) {
        const crank *k = &R->ranks[where[o].rank];
        const cnode *n = &k->nodes[where[o].node];
        wl_op op = {.lane = (uint32_t)lane_of[where[o].rank], .mb = -1, .layer = -1};
        op.stream = (uint8_t)(n->d_stream >= 0 ? n->d_stream
                              : n->type == NT_COMP ? WL_STREAM_COMPUTE
                              : n->type == NT_SEND ? WL_STREAM_PP
                                                   : WL_STREAM_DP);
        if (n->d_mb != INT64_MIN) op.mb = (int32_t)(n->d_mb < -1 ? -1 : n->d_mb > INT32_MAX ? INT32_MAX : n->d_mb);
        if (n->d_layer != INT64_MIN)
            op.layer = (int32_t)(n->d_layer < -1 ? -1 : n->d_layer > INT32_MAX ? INT32_MAX : n->d_layer);
        if (n->type == NT_COMP) {
            op.kind = WL_OP_COMPUTE;
            if (n->d_cost < 0 || (uint64_t)n->d_cost >= g->n_costs) {
                rc = fail_node(R, k, n, "dtsim_cost %" PRId64 " is not a cost of the trace (0..%u)", n->d_cost, g->n_costs - 1);
                break;
            }
            op.arg = (uint32_t)n->d_cost;
        } else if (n->type == NT_COLL) {
            op.kind = WL_OP_COLL;
            if (n->d_coll < 0 || (uint64_t)n->d_coll >= g->n_colls) {
                rc = fail_node(R, k, n, "dtsim_coll %" PRId64 " is not a collective of the trace (0..%u)", n->d_coll,
                               g->n_colls - 1);
                break;
            }
            op.arg = (uint32_t)n->d_coll;
        } else {
            op.kind = WL_OP_SEND;
            if (n->comm_dst < 0 || n->comm_dst >= g->n_gpus || lane_of[n->comm_dst] < 0) {
                rc = fail_node(R, k, n, "comm_dst %" PRId64 " is not a GPU of a lane", n->comm_dst);
                break;
            }
            if (n->d_bytes < 0 && n->comm_size < 0) {
                rc = fail_node(R, k, n, "COMM_SEND_NODE without comm_size");
                break;
            }
            op.arg = (uint32_t)lane_of[n->comm_dst];
            op.bytes = n->d_bytes >= 0 ? n->d_bytes : n->comm_size;
        }
        if (g->n_names >= UINT16_MAX - 1) {
            rc = fail_node(R, k, n, "more than %d distinct op names", UINT16_MAX - 2);
            break;
        }
        op.name = (uint16_t)wl_graph_name(g, n->name ? n->name : "op");
        size_t need = n->n_data + n->n_ctrl + 1;
        if (need > cap) {
            cap = need * 2;
            deps = dt_xrealloc(deps, cap * sizeof *deps);
        }
        uint32_t nd = 0;
        for (uint32_t d = 0; d < n->n_data && rc == DT_OK; d++) {
            uint64_t id = k->deps[n->dep_start + d];
            long j = find_id(k, id);
            if (j < 0) {
                rc = fail_node(R, k, n, "depends on node %" PRIu64 ", which %s does not have", id, k->file);
                break;
            }
            const cnode *t = &k->nodes[j];
            int64_t target;
            if (t->d_inlane >= 0) target = t->d_inlane;               /* its compute op */
            else if (t->type == NT_RECV) target = t->comm_tag;        /* the send's op id */
            else if (t->type == NT_COMP || t->type == NT_COLL || t->type == NT_SEND) target = (int64_t)t->id;
            else target = -1;
            if (target < 0 || (uint64_t)target >= n_ops || (uint64_t)target == o) {
                rc = fail_node(R, k, n, "depends on node %" PRIu64 ", which is no op of the trace", id);
                break;
            }
            /* what a per-rank file can say, as chakra_export_create requires it: a dependency
             * inside the lane, or (through a receive) on a send addressed to this lane. The
             * dtsim_inlane and comm_tag numbers name ops directly, so check where they point. */
            const cnode *tn = &R->ranks[where[target].rank].nodes[where[target].node];
            int t_lane = lane_of[where[target].rank];
            bool to_us = tn->type == NT_SEND && tn->comm_dst >= 0 && tn->comm_dst < g->n_gpus &&
                         lane_of[tn->comm_dst] == (int)op.lane;
            if (t_lane != (int)op.lane && !(t->type == NT_RECV && to_us)) {
                rc = fail_node(R, k, n,
                               "depends on node %" PRIu64 ", which stands for op %" PRId64 " of another lane (%d), not "
                               "for a send to this one (lane %u)", id, target, t_lane, op.lane);
                break;
            }
            deps[nd++] = (uint32_t)target;
        }
        if (rc) break;
        wl_graph_op(g, &op, deps, nd);
    }
    free(deps);
    /* the lane's other GPUs hold the same ops */
    for (int l = 0; l < g->n_lanes && rc == DT_OK; l++)
        for (int x = 1; x < ls && rc == DT_OK; x++) {
            const crank *a = &R->ranks[g->lane_gpus[(size_t)l * ls]], *b = &R->ranks[g->lane_gpus[(size_t)l * ls + x]];
            uint32_t na = 0, nb = 0;
            for (uint32_t i = 0; i < a->n; i++) na += a->nodes[i].type == NT_COMP || a->nodes[i].type == NT_COLL;
            for (uint32_t i = 0; i < b->n; i++) nb += b->nodes[i].type == NT_COMP || b->nodes[i].type == NT_COLL;
            if (na != nb)
                rc = dt_error_set(R->err, DT_EINPUT, b->file, NULL,
                                  "%u compute and collective nodes where %s (the same lane) has %u", nb, a->file, na);
        }
    free(where);
    free(lane_of);
    return rc;
}

/* ---- entry points ---- */

static int read_all(reader *R, int n_ranks, const unsigned char *const *bytes, const size_t *len,
                    const char *const *name, wl_graph **out, trace_env *env)
{
    *out = NULL;
    memset(env, 0, sizeof *env);
    env->env.seed = 1;
    env->env.ring_model = COLL_RING_AUTO;
    if (n_ranks < 1) return dt_error_set(R->err, DT_EINPUT, NULL, NULL, "no rank files");
    R->n_ranks = n_ranks;
    R->ranks = dt_xcalloc((size_t)n_ranks, sizeof *R->ranks);
    int rc = DT_OK;
    for (int r = 0; r < n_ranks && rc == DT_OK; r++) {
        R->ranks[r].file = name[r];
        rc = read_rank(R, &R->ranks[r], bytes[r], len[r]);
    }
    bool dtsim = rc == DT_OK && R->ranks[0].dtsim_trace;
    groups G = {0};
    if (rc == DT_OK && !dtsim) {
        if (R->opt && R->opt->groups_file) rc = read_groups_file(R, &G, R->opt->groups_file);
        for (int r = 0; r < n_ranks && rc == DT_OK; r++)
            for (uint32_t i = 0; i < R->ranks[r].n && rc == DT_OK; i++)
                if (R->ranks[r].nodes[i].pg_list) rc = read_pg_list(R, &G, &R->ranks[r], &R->ranks[r].nodes[i]);
    }
    if (rc == DT_OK) rc = dtsim ? build_dtsim(R, out, env) : build_foreign(R, &G, out);
    groups_free(&G);
    for (int r = 0; r < n_ranks; r++) rank_free(&R->ranks[r]);
    free(R->ranks);
    R->ranks = NULL;
    if (rc) {
        free(R->warns);
        R->warns = NULL;
        wl_graph_destroy(*out);
        *out = NULL;
        trace_env_free(env);
    } else {
        flush_warnings(R);
    }
    return rc;
}

int chakra_read_mem(int n_ranks, const unsigned char *const *bytes, const size_t *len, const char *const *name,
                    const chakra_read_options *opt, wl_graph **out, trace_env *env, dt_error *err)
{
    reader R = {.opt = opt, .err = err};
    return read_all(&R, n_ranks, bytes, len, name, out, env);
}

static int read_file(const char *path, unsigned char **out, size_t *len, dt_error *err)
{
    *out = NULL;
    *len = 0;
    /* dt_open_input: a FIFO would block fopen itself, before the check below could refuse it */
    FILE *f = dt_open_input(path, "rb", NULL, err);
    if (!f) return err ? err->code : DT_EIO;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return dt_error_set(err, DT_EINPUT, path, NULL, "not a regular file");
    }
    if ((unsigned long long)st.st_size > MAX_FILE_BYTES) {
        fclose(f);
        return dt_error_set(err, DT_EINPUT, path, NULL, "%lld bytes: larger than the 1 GiB dtsim reads per rank",
                            (long long)st.st_size);
    }
    size_t n = (size_t)st.st_size;
    unsigned char *b = dt_xmalloc(n + 1);
    size_t got = fread(b, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != n) {
        free(b);
        return dt_error_set(err, DT_EIO, path, NULL, "read error");
    }
    *out = b;
    *len = n;
    return DT_OK;
}

/* "PREFIX.<digits>.et" -> rank, or -1 */
static long rank_of_name(const char *name, const char *prefix)
{
    size_t pl = strlen(prefix), nl = strlen(name);
    if (nl < pl + 5 || strncmp(name, prefix, pl) || name[pl] != '.' || strcmp(name + nl - 3, ".et")) return -1;
    long r = 0;
    for (const char *p = name + pl + 1; p < name + nl - 3; p++) {
        if (*p < '0' || *p > '9' || r > 1 << 24) return -1;
        r = r * 10 + (*p - '0');
    }
    return name + pl + 1 == name + nl - 3 ? -1 : r;
}

int chakra_read(const char *dir_or_prefix, const chakra_read_options *opt, wl_graph **out, trace_env *env, dt_error *err)
{
    *out = NULL;
    memset(env, 0, sizeof *env);
    char dir[4096], prefix[1024];
    struct stat st;
    if (stat(dir_or_prefix, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(dir, sizeof dir, "%s", dir_or_prefix);
        prefix[0] = 0; /* found below: the one family in the directory */
    } else {
        const char *slash = strrchr(dir_or_prefix, '/');
        if (slash) {
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - dir_or_prefix), dir_or_prefix);
            if (!dir[0]) snprintf(dir, sizeof dir, "/");
            snprintf(prefix, sizeof prefix, "%s", slash + 1);
        } else {
            snprintf(dir, sizeof dir, ".");
            snprintf(prefix, sizeof prefix, "%s", dir_or_prefix);
        }
        if (!prefix[0])
            return dt_error_set(err, DT_EINPUT, dir_or_prefix, NULL, "expected a directory or a file prefix (PREFIX.0.et)");
    }
    DIR *d = opendir(dir);
    if (!d) return dt_error_set(err, DT_EIO, dir, NULL, "cannot list: %s", strerror(errno));
    /* find the family: with a prefix, its files; in a directory, the one prefix of *.N.et */
    long max_rank = -1, count = 0;
    char other[1024] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        size_t nl = strlen(nm);
        if (nl < 5 || strcmp(nm + nl - 3, ".et")) continue;
        const char *p = nm + nl - 4;
        while (p > nm && *p >= '0' && *p <= '9') p--;
        if (p == nm + nl - 4 || *p != '.' || p == nm) continue;
        char pre[1024];
        snprintf(pre, sizeof pre, "%.*s", (int)(p - nm), nm);
        if (!prefix[0]) snprintf(prefix, sizeof prefix, "%s", pre);
        if (strcmp(pre, prefix)) {
            if (!other[0]) snprintf(other, sizeof other, "%s", pre);
            continue;
        }
        long r = rank_of_name(nm, prefix);
        if (r < 0) continue;
        count++;
        if (r > max_rank) max_rank = r;
    }
    closedir(d);
    if (S_ISDIR(st.st_mode) && other[0] && count)
        return dt_error_set(err, DT_EINPUT, dir_or_prefix, NULL,
                            "holds two traces (%s.*.et and %s.*.et): give the prefix, e.g. %s/%s", prefix, other, dir, prefix);
    if (count == 0)
        return dt_error_set(err, DT_EINPUT, dir_or_prefix, NULL, "no Chakra trace files (%s%s.<rank>.et)", prefix[0] ? prefix : "PREFIX",
                            "");
    if (max_rank + 1 > 1 << 20)
        return dt_error_set(err, DT_EINPUT, dir_or_prefix, NULL, "rank %ld: more ranks than dtsim simulates", max_rank);
    int n = (int)max_rank + 1;
    unsigned char **bytes = dt_xcalloc((size_t)n, sizeof *bytes);
    size_t *len = dt_xcalloc((size_t)n, sizeof *len);
    char **names = dt_xcalloc((size_t)n, sizeof *names);
    int rc = DT_OK;
    for (int r = 0; r < n && rc == DT_OK; r++) {
        size_t need = strlen(dir) + strlen(prefix) + 32;
        names[r] = dt_xmalloc(need);
        snprintf(names[r], need, "%s/%s.%d.et", dir, prefix, r);
        if (stat(names[r], &st) != 0)
            rc = dt_error_set(err, DT_EINPUT, names[r], NULL, "missing: ranks run 0..%d and every rank has its file", n - 1);
        else
            rc = read_file(names[r], &bytes[r], &len[r], err);
    }
    if (rc == DT_OK) rc = chakra_read_mem(n, (const unsigned char *const *)bytes, len, (const char *const *)names, opt, out, env, err);
    for (int r = 0; r < n; r++) {
        free(bytes[r]);
        free(names[r]);
    }
    free(bytes);
    free(len);
    free(names);
    return rc;
}

/* ================================================================ writing */

struct chakra_export {
    const wl_graph *g;
    const gpu_spec *gpus;
    int *lane_of, *pos_of;          /* per GPU */
    uint32_t *lane_ops_start, *lane_ops; /* CSR: ops of each lane in id order */
    /* process groups: member lists in CSR, found by hashing */
    int n_groups, cap_groups;
    uint32_t *grp_start;            /* n_groups + 1 */
    int *grp_ranks;
    size_t n_grp_ranks, cap_grp_ranks;
    uint32_t *grp_slots;
    uint32_t cap_grp_slots;
    int *inst_group;                /* per (instance, lane position) */
    int *lane_group;                /* per lane: its TP group, -1 with one GPU per lane */
    /* context parallelism: per lane the previous lane of its CP ring; per op the index of a
     * ring op (compute op with ring sends) among its lane's ring ops, -1 otherwise; a ring
     * send's comm_tag is tag_base + index x max_steps + step, the same on both ends */
    uint32_t *cp_prev;
    int64_t *ring_index;
    int64_t ring_tag_base, ring_max_steps;
    char *skeleton;                 /* the dtsim_trace attribute */
};

static uint64_t hash_ranks(const int *r, int n)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) h = mix64(h ^ (uint64_t)(unsigned)r[i]);
    return h;
}

static int group_of(chakra_export *x, const int *r, int n)
{
    uint64_t h = hash_ranks(r, n);
    if (x->cap_grp_slots < 2 * (uint32_t)x->n_groups + 2) {
        uint32_t cap = x->cap_grp_slots ? 2 * x->cap_grp_slots : 64;
        uint32_t *s = dt_xcalloc(cap, sizeof *s);
        for (int gi = 0; gi < x->n_groups; gi++) {
            uint64_t hh = hash_ranks(x->grp_ranks + x->grp_start[gi], (int)(x->grp_start[gi + 1] - x->grp_start[gi]));
            uint32_t p = (uint32_t)hh & (cap - 1);
            while (s[p]) p = (p + 1) & (cap - 1);
            s[p] = (uint32_t)gi + 1;
        }
        free(x->grp_slots);
        x->grp_slots = s;
        x->cap_grp_slots = cap;
    }
    uint32_t mask = x->cap_grp_slots - 1;
    uint32_t p = (uint32_t)h & mask;
    for (; x->grp_slots[p]; p = (p + 1) & mask) {
        int gi = (int)x->grp_slots[p] - 1;
        int gn = (int)(x->grp_start[gi + 1] - x->grp_start[gi]);
        if (gn == n && !memcmp(x->grp_ranks + x->grp_start[gi], r, (size_t)n * sizeof *r)) return gi;
    }
    if (x->n_grp_ranks + (size_t)n > x->cap_grp_ranks) {
        while (x->n_grp_ranks + (size_t)n > x->cap_grp_ranks) x->cap_grp_ranks = x->cap_grp_ranks ? 2 * x->cap_grp_ranks : 64;
        x->grp_ranks = dt_xrealloc(x->grp_ranks, x->cap_grp_ranks * sizeof *x->grp_ranks);
    }
    if (x->n_groups + 2 > x->cap_groups) {
        x->cap_groups = x->cap_groups ? 2 * x->cap_groups : 16;
        x->grp_start = dt_xrealloc(x->grp_start, ((size_t)x->cap_groups + 1) * sizeof *x->grp_start);
    }
    if (x->n_groups == 0) x->grp_start[0] = 0;
    memcpy(x->grp_ranks + x->n_grp_ranks, r, (size_t)n * sizeof *r);
    x->n_grp_ranks += (size_t)n;
    int gi = x->n_groups++;
    x->grp_start[gi + 1] = (uint32_t)x->n_grp_ranks;
    x->grp_slots[p] = (uint32_t)gi + 1;
    return gi;
}

static bool has_ring(const wl_graph *g, const wl_op *op)
{
    if (!g->cp_next || g->cp < 2 || op->kind != WL_OP_COMPUTE) return false;
    const wl_cost *c = &g->costs[op->arg];
    return c->ring_count > 0 && c->ring_bytes > 0;
}

/* Ring attention in per-rank files: each ring step of a compute op becomes a COMM_SEND_NODE
 * to the GPU at the same lane position in the next CP lane and a COMM_RECV_NODE from the
 * previous one. The two ends must agree on the tag without seeing each other's op ids, so a
 * tag counts ring ops within a lane: the lanes of one ring must run the same sequence of ring
 * ops (dtsim's CP lanes do: the same microbatches and layers), or the files could not say
 * which send a receive matches. */
static int ring_plan(chakra_export *x, dt_error *err)
{
    const wl_graph *g = x->g;
    x->cp_prev = dt_xmalloc(((size_t)g->n_lanes + 1) * sizeof *x->cp_prev);
    for (int l = 0; l < g->n_lanes; l++) x->cp_prev[g->cp_next[l]] = (uint32_t)l;
    x->ring_index = dt_xmalloc(((size_t)g->n_ops + 1) * sizeof *x->ring_index);
    int64_t *count = dt_xcalloc((size_t)g->n_lanes + 1, sizeof *count);
    x->ring_max_steps = 1;
    for (uint32_t o = 0; o < g->n_ops; o++) {
        const wl_op *op = &g->ops[o];
        x->ring_index[o] = -1;
        if (!has_ring(g, op)) continue;
        x->ring_index[o] = count[op->lane]++;
        int64_t steps = (int64_t)g->costs[op->arg].ring_count * (g->cp - 1);
        if (steps > x->ring_max_steps) x->ring_max_steps = steps;
    }
    /* the k-th ring op of a lane and of its ring's next lane: the same number of steps */
    int rc = DT_OK;
    int64_t *steps_of = dt_xmalloc(((size_t)g->n_ops + 1) * sizeof *steps_of); /* by (lane, k) */
    uint32_t *start = dt_xcalloc((size_t)g->n_lanes + 1, sizeof *start);
    for (int l = 0; l < g->n_lanes; l++) start[l + 1] = start[l] + (uint32_t)count[l];
    for (uint32_t o = 0; o < g->n_ops; o++)
        if (x->ring_index[o] >= 0)
            steps_of[start[g->ops[o].lane] + x->ring_index[o]] = g->costs[g->ops[o].arg].ring_count;
    for (int l = 0; l < g->n_lanes && rc == DT_OK; l++) {
        uint32_t nl = g->cp_next[l];
        bool same = count[l] == count[nl];
        for (int64_t k = 0; same && k < count[l]; k++) same = steps_of[start[l] + k] == steps_of[start[nl] + k];
        if (!same)
            rc = dt_error_set(err, DT_EINPUT, NULL, "context_parallel.next",
                              "lanes %d and %u of one CP ring run different ring-attention ops "
                              "(%lld and %lld ops, or different passes): per-rank Chakra files "
                              "cannot match their sends", l, nl, (long long)count[l], (long long)count[nl]);
    }
    int64_t most = 0;
    for (int l = 0; l < g->n_lanes; l++) most = count[l] > most ? count[l] : most;
    x->ring_tag_base = g->n_ops; /* above the op ids the pipeline sends use as tags */
    if (rc == DT_OK && x->ring_tag_base + most * x->ring_max_steps > INT32_MAX)
        rc = dt_error_set(err, DT_EINPUT, NULL, "context_parallel",
                          "%lld ring-attention steps per lane do not fit Chakra's 32-bit tags",
                          (long long)(most * x->ring_max_steps));
    free(steps_of);
    free(start);
    free(count);
    return rc;
}

void chakra_export_destroy(chakra_export *x)
{
    if (!x) return;
    free(x->lane_of);
    free(x->pos_of);
    free(x->lane_ops_start);
    free(x->lane_ops);
    free(x->grp_start);
    free(x->grp_ranks);
    free(x->grp_slots);
    free(x->inst_group);
    free(x->lane_group);
    free(x->cp_prev);
    free(x->ring_index);
    free(x->skeleton);
    free(x);
}

int chakra_export_ranks(const chakra_export *x) { return x->g->n_gpus; }

int chakra_export_create(const wl_graph *g, const trace_env *env, const gpu_spec *gpus, chakra_export **out,
                         dt_error *err)
{
    *out = NULL;
    chakra_export *x = dt_xcalloc(1, sizeof *x);
    x->g = g;
    x->gpus = gpus;
    int ls = g->lane_size;
    x->lane_of = dt_xmalloc(((size_t)g->n_gpus + 1) * sizeof *x->lane_of);
    x->pos_of = dt_xmalloc(((size_t)g->n_gpus + 1) * sizeof *x->pos_of);
    for (int i = 0; i < g->n_gpus; i++) x->lane_of[i] = x->pos_of[i] = -1;
    for (int l = 0; l < g->n_lanes; l++)
        for (int k = 0; k < ls; k++) {
            int gpu = g->lane_gpus[(size_t)l * ls + k];
            x->lane_of[gpu] = l;
            x->pos_of[gpu] = k;
        }
    /* ops by lane */
    x->lane_ops_start = dt_xcalloc((size_t)g->n_lanes + 1, sizeof *x->lane_ops_start);
    x->lane_ops = dt_xmalloc(((size_t)g->n_ops + 1) * sizeof *x->lane_ops);
    for (uint32_t o = 0; o < g->n_ops; o++) x->lane_ops_start[g->ops[o].lane + 1]++;
    for (int l = 0; l < g->n_lanes; l++) x->lane_ops_start[l + 1] += x->lane_ops_start[l];
    uint32_t *fill = dt_xmalloc(((size_t)g->n_lanes + 1) * sizeof *fill);
    memcpy(fill, x->lane_ops_start, ((size_t)g->n_lanes + 1) * sizeof *fill);
    for (uint32_t o = 0; o < g->n_ops; o++) x->lane_ops[fill[g->ops[o].lane]++] = o;
    free(fill);
    /* what per-rank files can say: deps inside a lane, or on a send addressed to the lane; and
     * collectives Chakra has (a dtsim sendrecv collective has none) */
    int rc = DT_OK;
    for (uint32_t c = 0; c < g->n_colls && rc == DT_OK; c++)
        if (g->colls[c].op == COLL_SENDRECV) {
            char path[64];
            snprintf(path, sizeof path, "collectives[%u]", c);
            rc = dt_error_set(err, DT_EINPUT, NULL, path,
                              "a sendrecv collective has no Chakra counterpart: write it as a send op");
        }
    for (uint32_t c = 0; c < g->n_costs && rc == DT_OK; c++)
        for (int q = 0; q < g->costs[c].n_inlane; q++)
            if (g->costs[c].inlane[q].op == COLL_SENDRECV) {
                char path[64];
                snprintf(path, sizeof path, "costs[%u].inlane[%d]", c, q);
                rc = dt_error_set(err, DT_EINPUT, NULL, path, "a sendrecv collective has no Chakra counterpart");
                break;
            }
    for (uint32_t o = 0; o < g->n_ops && rc == DT_OK; o++) {
        const wl_op *op = &g->ops[o];
        for (uint32_t d = 0; d < op->n_deps; d++) {
            const wl_op *t = &g->ops[g->deps[op->dep_start + d]];
            if (t->lane == op->lane) continue;
            if (t->kind == WL_OP_SEND && t->arg == op->lane) continue;
            char path[64];
            snprintf(path, sizeof path, "ops[%u].deps", o);
            rc = dt_error_set(err, DT_EINPUT, NULL, path,
                              "op %u (lane %u) depends on op %u of lane %u, which is not a send to lane %u: "
                              "per-rank Chakra files cannot say that",
                              o, op->lane, g->deps[op->dep_start + d], t->lane, op->lane);
            break;
        }
    }
    if (rc == DT_OK && g->cp_next && g->cp > 1) rc = ring_plan(x, err);
    /* groups: each lane's GPUs (tensor-parallel collectives), and per collective instance and
     * lane position the position-k GPUs of the lanes naming it, in op order (dtsim's order) */
    x->inst_group = dt_xmalloc(((size_t)g->n_colls * ls + 1) * sizeof *x->inst_group);
    x->lane_group = dt_xmalloc(((size_t)g->n_lanes + 1) * sizeof *x->lane_group);
    if (rc == DT_OK) {
        uint32_t *cnt = dt_xcalloc((size_t)g->n_colls + 1, sizeof *cnt);
        for (uint32_t o = 0; o < g->n_ops; o++)
            if (g->ops[o].kind == WL_OP_COLL) cnt[g->ops[o].arg]++;
        uint32_t *start = dt_xcalloc((size_t)g->n_colls + 2, sizeof *start);
        for (uint32_t c = 0; c < g->n_colls; c++) start[c + 1] = start[c] + cnt[c];
        uint32_t *lanes = dt_xmalloc(((size_t)start[g->n_colls] + 1) * sizeof *lanes);
        memset(cnt, 0, ((size_t)g->n_colls + 1) * sizeof *cnt);
        for (uint32_t o = 0; o < g->n_ops; o++)
            if (g->ops[o].kind == WL_OP_COLL) lanes[start[g->ops[o].arg] + cnt[g->ops[o].arg]++] = g->ops[o].lane;
        int *tmp = dt_xmalloc(((size_t)g->n_lanes + (size_t)ls + 1) * sizeof *tmp);
        for (uint32_t c = 0; c < g->n_colls; c++)
            for (int k = 0; k < ls; k++) {
                int n = 0;
                for (uint32_t i = start[c]; i < start[c + 1]; i++) tmp[n++] = g->lane_gpus[(size_t)lanes[i] * ls + k];
                x->inst_group[(size_t)c * ls + k] = n ? group_of(x, tmp, n) : -1;
            }
        for (int l = 0; l < g->n_lanes; l++)
            x->lane_group[l] = ls > 1 ? group_of(x, &g->lane_gpus[(size_t)l * ls], ls) : -1;
        free(tmp);
        free(lanes);
        free(start);
        free(cnt);
    }
    /* the dtsim description: the JSON trace without its ops */
    if (rc == DT_OK) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        wl_graph shell = *g;
        shell.n_ops = 0;
        shell.n_deps = 0;
        rc = trace_write(f, &shell, env, err);
        fclose(f);
        x->skeleton = buf;
    }
    if (rc) {
        chakra_export_destroy(x);
        return rc;
    }
    *out = x;
    return DT_OK;
}

/* ---- packing ---- */

typedef struct attrs {
    pb_attr a[12];
    pb_attr *p[12];
    size_t n;
} attrs;

static pb_attr *attr_new(attrs *A, const char *name)
{
    DT_ASSERT(A->n < 12);
    pb_attr *a = &A->a[A->n];
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    A->p[A->n++] = a;
    return a;
}
static void attr_i64(attrs *A, const char *name, int64_t v)
{
    pb_attr *a = attr_new(A, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
    a->int64_val = v;
}
static void attr_i32(attrs *A, const char *name, int32_t v)
{
    pb_attr *a = attr_new(A, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
    a->int32_val = v;
}
static void attr_u64(attrs *A, const char *name, uint64_t v)
{
    pb_attr *a = attr_new(A, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
    a->uint64_val = v;
}
static void attr_dbl(attrs *A, const char *name, double v)
{
    pb_attr *a = attr_new(A, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
    a->double_val = v;
}
static void attr_bool(attrs *A, const char *name, bool v)
{
    pb_attr *a = attr_new(A, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
    a->bool_val = v;
}
static void attr_str(attrs *A, const char *name, char *v)
{
    pb_attr *a = attr_new(A, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    a->string_val = v;
}

typedef struct packer {
    FILE *f;
    uint8_t *buf;
    size_t cap;
} packer;

static void put_varint(FILE *f, uint64_t v)
{
    uint8_t b[10];
    int n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) b[n] |= 0x80;
        n++;
    } while (v);
    fwrite(b, 1, (size_t)n, f);
}

static void put_msg(packer *P, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n > P->cap) {
        P->cap = n * 2;
        P->buf = dt_xrealloc(P->buf, P->cap);
    }
    protobuf_c_message_pack(m, P->buf);
    put_varint(P->f, n);
    fwrite(P->buf, 1, n, P->f);
}

static int64_t round_size(double b) { return b <= 0 ? 0 : b >= 9.2e18 ? INT64_MAX : (int64_t)llround(b); }

static const int comm_type_of_op[COLL_OP_COUNT] = {
    [COLL_ALLREDUCE] = CT_ALL_REDUCE, [COLL_REDUCE_SCATTER] = CT_REDUCE_SCATTER, [COLL_ALLGATHER] = CT_ALL_GATHER,
    [COLL_BROADCAST] = CT_BROADCAST,  [COLL_REDUCE] = CT_REDUCE,                  [COLL_ALLTOALL] = CT_ALL_TO_ALL,
    [COLL_SENDRECV] = -1 /* refused by chakra_export_create */};

/* Whether in-lane collective q of cost c runs beside the op's compute in dtsim's replay (under
 * tp_comm_overlap, or issued beside one GEMM: `under`), not after it. */
static bool inlane_beside(const wl_cost *c, int q)
{
    return c->inlane_overlap || c->inlane[q].under.m > 0;
}

static bool inlane_beside_any(const wl_cost *c)
{
    for (int q = 0; q < c->n_inlane; q++)
        if (inlane_beside(c, q)) return true;
    return false;
}

/* The compute part of op o on GPU gpu (without in-lane communication), ps: the replay's base
 * time (replay.c), which run.c costs with gpu_op_time. */
static sim_time_t compute_ps(const chakra_export *x, const wl_cost *c, int gpu)
{
    return replay_op_compute_time(x->g, c, x->gpus ? &x->gpus[gpu] : NULL, gpu_op_time, gpu_gemm_time);
}

int chakra_export_write_rank(const chakra_export *x, int rank, FILE *f, dt_error *err)
{
    const wl_graph *g = x->g;
    if (rank < 0 || rank >= g->n_gpus) return dt_error_set(err, DT_EINPUT, NULL, NULL, "rank %d: the graph has GPUs 0..%d", rank, g->n_gpus - 1);
    packer P = {.f = f};
    pb_meta meta;
    chakra_proto_msg__global_metadata__init(&meta);
    meta.version = "0.0.4";
    attrs MA = {0};
    attr_str(&MA, "schema", "dtsim " DTSIM_VERSION);
    attr_str(&MA, "dtsim_trace", x->skeleton);
    attr_i64(&MA, "dtsim_rank", rank);
    meta.attr = MA.p;
    meta.n_attr = MA.n;
    put_msg(&P, &meta.base);

    uint64_t next = g->n_ops; /* ids of the extra nodes */
    /* process groups, PyTorch's way: one METADATA node whose inputs.values lists them */
    {
        cJSON *list = cJSON_CreateArray();
        for (int gi = 0; gi < x->n_groups; gi++) {
            cJSON *e = cJSON_CreateObject();
            char nm[16];
            snprintf(nm, sizeof nm, "%d", gi + 1);
            cJSON_AddStringToObject(e, "pg_name", nm);
            cJSON_AddStringToObject(e, "pg_desc", "dtsim");
            cJSON_AddStringToObject(e, "backend_config", "cuda:nccl");
            cJSON *rk = cJSON_AddArrayToObject(e, "ranks");
            for (uint32_t i = x->grp_start[gi]; i < x->grp_start[gi + 1]; i++)
                cJSON_AddItemToArray(rk, cJSON_CreateNumber(x->grp_ranks[i]));
            cJSON_AddItemToArray(list, e);
        }
        char *js = cJSON_PrintUnformatted(list);
        cJSON_Delete(list);
        size_t n = strlen(js) + 8;
        char *vals = dt_xmalloc(n);
        snprintf(vals, n, "['%s']", js);
        free(js);
        pb_node m;
        chakra_proto_msg__node__init(&m);
        ChakraProtoMsg__IOInfo in;
        chakra_proto_msg__ioinfo__init(&in);
        in.values = vals;
        m.id = next++;
        m.name = "## process_group:init ##";
        m.type = CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE;
        m.inputs = &in;
        put_msg(&P, &m.base);
        free(vals);
    }
    int l = x->lane_of[rank], k = x->pos_of[rank];
    if (l >= 0) {
        uint64_t *end = dt_xmalloc(((size_t)g->n_ops + 1) * sizeof *end);  /* the node an op ends at */
        uint64_t *recv = dt_xcalloc((size_t)g->n_ops + 1, sizeof *recv);  /* send op -> recv node + 1 */
        bool *recv_put = dt_xcalloc((size_t)g->n_ops + 1, sizeof *recv_put);
        /* Node ids first: a dependency may name an op later in the lane (a graph is not in
         * topological order, nor is a Chakra file), so every op's last node (itself, or its
         * last tensor-parallel collective) and every receive's id must be known before the
         * first node is written. The same walk as the writing one below. */
        for (uint64_t id = next, i = x->lane_ops_start[l]; i < x->lane_ops_start[l + 1]; i++) {
            uint32_t o = x->lane_ops[i];
            const wl_op *op = &g->ops[o];
            for (uint32_t d = 0; d < op->n_deps; d++) {
                uint32_t s = g->deps[op->dep_start + d];
                if (g->ops[s].lane != (uint32_t)l && !recv[s]) recv[s] = ++id; /* id + 1 */
            }
            end[o] = o;
            const wl_cost *c = op->kind == WL_OP_COMPUTE ? &g->costs[op->arg] : NULL;
            if (c && c->n_inlane && g->lane_size > 1) {
                for (int q = 0; q < c->n_inlane; q++)
                    for (int r = 0; r < c->inlane[q].count; r++) end[o] = id++;
                if (inlane_beside_any(c)) end[o] = id++; /* the join */
            }
            if (has_ring(g, op)) {
                id += 2 * (uint64_t)c->ring_count * (uint64_t)(g->cp - 1); /* send, recv per step */
                end[o] = id - 1;
            }
        }
        uint64_t *dd = dt_xmalloc(((size_t)64) * sizeof *dd);
        size_t cap_dd = 64;
        int64_t last[4] = {-1, -1, -1, -1};
        char pgbuf[2][16];
        for (uint32_t i = x->lane_ops_start[l]; i < x->lane_ops_start[l + 1]; i++) {
            uint32_t o = x->lane_ops[i];
            const wl_op *op = &g->ops[o];
            /* a receive for each send from another lane this op waits for, before it */
            for (uint32_t d = 0; d < op->n_deps; d++) {
                uint32_t s = g->deps[op->dep_start + d];
                const wl_op *so = &g->ops[s];
                if (so->lane == (uint32_t)l || recv_put[s]) continue;
                pb_node m;
                chakra_proto_msg__node__init(&m);
                attrs A = {0};
                m.id = next++;
                DT_ASSERT(recv[s] == m.id + 1);
                m.name = "recv";
                m.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
                attr_i32(&A, "comm_src", g->lane_gpus[(size_t)so->lane * g->lane_size + k]);
                attr_i32(&A, "comm_dst", rank);
                attr_i32(&A, "comm_tag", (int32_t)s);
                attr_i64(&A, "comm_size", round_size(so->bytes));
                attr_bool(&A, "is_cpu_op", false);
                m.attr = A.p;
                m.n_attr = A.n;
                put_msg(&P, &m.base);
                recv_put[s] = true;
            }
            if (op->n_deps + 1 > cap_dd) {
                cap_dd = (size_t)op->n_deps * 2 + 2;
                dd = dt_xrealloc(dd, cap_dd * sizeof *dd);
            }
            size_t n_dd = 0;
            for (uint32_t d = 0; d < op->n_deps; d++) {
                uint32_t s = g->deps[op->dep_start + d];
                dd[n_dd++] = g->ops[s].lane == (uint32_t)l ? end[s] : recv[s] - 1;
            }
            uint64_t ctrl = 0;
            size_t n_ctrl = 0;
            if (last[op->stream] >= 0) {
                ctrl = end[last[op->stream]];
                n_ctrl = 1;
            }
            last[op->stream] = o;
            pb_node m;
            chakra_proto_msg__node__init(&m);
            attrs A = {0};
            m.id = o;
            m.name = g->names[op->name];
            m.data_deps = dd;
            m.n_data_deps = n_dd;
            m.ctrl_deps = &ctrl;
            m.n_ctrl_deps = n_ctrl;
            attr_i32(&A, "dtsim_stream", op->stream);
            if (op->mb >= 0) attr_i32(&A, "dtsim_mb", op->mb);
            if (op->layer >= 0) attr_i32(&A, "dtsim_layer", op->layer);
            const wl_cost *c = op->kind == WL_OP_COMPUTE ? &g->costs[op->arg] : NULL;
            if (op->kind == WL_OP_COMPUTE) {
                m.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
                sim_time_t ps = compute_ps(x, c, rank);
                m.duration_micros = ps <= 0 ? 0 : (uint64_t)llround((double)ps / (double)SIM_US);
                double fl = 0, by = 0;
                for (int q = 0; q < GPU_OP_CLASS_COUNT; q++) {
                    fl += c->flops[q];
                    by += c->bytes[q];
                }
                attr_bool(&A, "is_cpu_op", false);
                if (fl > 0) attr_i64(&A, "num_ops", round_size(fl));
                if (by > 0) attr_u64(&A, "tensor_size", (uint64_t)round_size(by));
                attr_i64(&A, "dtsim_cost", op->arg);
            } else if (op->kind == WL_OP_COLL) {
                const wl_coll *wc = &g->colls[op->arg];
                m.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
                attr_bool(&A, "is_cpu_op", false);
                attr_i64(&A, "comm_type", comm_type_of_op[wc->op]);
                attr_i64(&A, "comm_size", round_size(wc->bytes));
                snprintf(pgbuf[0], sizeof pgbuf[0], "%d", x->inst_group[(size_t)op->arg * g->lane_size + k] + 1);
                attr_str(&A, "pg_name", pgbuf[0]);
                attr_i64(&A, "dtsim_coll", op->arg);
            } else {
                m.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
                attr_bool(&A, "is_cpu_op", false);
                attr_i32(&A, "comm_src", rank);
                attr_i32(&A, "comm_dst", g->lane_gpus[(size_t)op->arg * g->lane_size + k]);
                attr_i32(&A, "comm_tag", (int32_t)o);
                attr_i64(&A, "comm_size", round_size(op->bytes));
                attr_dbl(&A, "dtsim_bytes", op->bytes);
            }
            m.attr = A.p;
            m.n_attr = A.n;
            put_msg(&P, &m.base);
            /* in-lane (tensor-parallel) collectives of a compute op, one node each: those run
             * after the compute chained after its node; those dtsim runs beside it
             * (inlane_beside) chained from the compute node's own dependencies, so that a tool
             * replaying the file overlaps them with it, and a zero-length join node after both
             * chains, which the op's consumers wait for */
            if (c && c->n_inlane && g->lane_size > 1) {
                uint64_t prev = o, bprev = 0;
                bool beside_started = false;
                snprintf(pgbuf[1], sizeof pgbuf[1], "%d", x->lane_group[l] + 1);
                for (int q = 0; q < c->n_inlane; q++)
                    for (int r = 0; r < c->inlane[q].count; r++) {
                        pb_node n2;
                        chakra_proto_msg__node__init(&n2);
                        attrs B = {0};
                        n2.id = next++;
                        n2.name = "tp_collective";
                        n2.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
                        if (!inlane_beside(c, q)) {
                            n2.data_deps = &prev;
                            n2.n_data_deps = 1;
                        } else if (beside_started) {
                            n2.data_deps = &bprev;
                            n2.n_data_deps = 1;
                        } else { /* as the compute node: its data and stream dependencies */
                            n2.data_deps = dd;
                            n2.n_data_deps = n_dd;
                            n2.ctrl_deps = &ctrl;
                            n2.n_ctrl_deps = n_ctrl;
                        }
                        attr_bool(&B, "is_cpu_op", false);
                        attr_i64(&B, "comm_type", comm_type_of_op[c->inlane[q].op]);
                        attr_i64(&B, "comm_size", round_size(c->inlane[q].bytes));
                        attr_str(&B, "pg_name", pgbuf[1]);
                        attr_i64(&B, "dtsim_inlane", o);
                        n2.attr = B.p;
                        n2.n_attr = B.n;
                        put_msg(&P, &n2.base);
                        if (inlane_beside(c, q)) {
                            bprev = n2.id;
                            beside_started = true;
                        } else {
                            prev = n2.id;
                        }
                    }
                if (beside_started) {
                    pb_node n2;
                    chakra_proto_msg__node__init(&n2);
                    attrs B = {0};
                    uint64_t both[2] = {prev, bprev};
                    n2.id = next++;
                    n2.name = "tp_join";
                    n2.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
                    n2.data_deps = both;
                    n2.n_data_deps = 2;
                    attr_bool(&B, "is_cpu_op", false);
                    attr_i64(&B, "dtsim_inlane", o);
                    n2.attr = B.p;
                    n2.n_attr = B.n;
                    put_msg(&P, &n2.base);
                    prev = n2.id;
                }
                DT_ASSERT(has_ring(g, op) || end[o] == prev);
            }
            /* ring attention's steps after them (the compute node is not split into its
             * attention blocks): step j's send and receive both wait for step j - 1's */
            if (has_ring(g, op)) {
                uint64_t pd[2] = {o, o};
                size_t npd = 1;
                if (c->n_inlane && g->lane_size > 1) pd[0] = next - 1;
                int to = g->lane_gpus[(size_t)g->cp_next[l] * g->lane_size + k];
                int from = g->lane_gpus[(size_t)x->cp_prev[l] * g->lane_size + k];
                int64_t steps = (int64_t)c->ring_count * (g->cp - 1);
                for (int64_t j = 0; j < steps; j++) {
                    int32_t tag = (int32_t)(x->ring_tag_base + x->ring_index[o] * x->ring_max_steps + j);
                    uint64_t ids[2];
                    for (int side = 0; side < 2; side++) {
                        pb_node n2;
                        chakra_proto_msg__node__init(&n2);
                        attrs B = {0};
                        n2.id = ids[side] = next++;
                        n2.name = side ? "ring_recv" : "ring_send";
                        n2.type = side ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE
                                       : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
                        n2.data_deps = pd;
                        n2.n_data_deps = npd;
                        attr_bool(&B, "is_cpu_op", false);
                        attr_i32(&B, "comm_src", side ? from : rank);
                        attr_i32(&B, "comm_dst", side ? rank : to);
                        attr_i32(&B, "comm_tag", tag);
                        attr_i64(&B, "comm_size", round_size(c->ring_bytes));
                        attr_i64(&B, "dtsim_inlane", o);
                        n2.attr = B.p;
                        n2.n_attr = B.n;
                        put_msg(&P, &n2.base);
                    }
                    pd[0] = ids[0];
                    pd[1] = ids[1];
                    npd = 2;
                }
                DT_ASSERT(end[o] == next - 1);
            }
        }
        free(end);
        free(recv);
        free(recv_put);
        free(dd);
    }
    free(P.buf);
    if (ferror(f)) return dt_error_set(err, DT_EIO, NULL, NULL, "writing rank %d's trace failed", rank);
    return DT_OK;
}

int chakra_export_write_groups(const chakra_export *x, FILE *f, dt_error *err)
{
    fprintf(f, "{");
    for (int gi = 0; gi < x->n_groups; gi++) {
        fprintf(f, "%s\n  \"%d\": [", gi ? "," : "", gi + 1);
        for (uint32_t i = x->grp_start[gi]; i < x->grp_start[gi + 1]; i++)
            fprintf(f, "%s%d", i > x->grp_start[gi] ? ", " : "", x->grp_ranks[i]);
        fprintf(f, "]");
    }
    fprintf(f, "\n}\n");
    if (ferror(f)) return dt_error_set(err, DT_EIO, NULL, NULL, "writing the communicator groups failed");
    return DT_OK;
}
