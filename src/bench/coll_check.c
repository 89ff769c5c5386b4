/* Collective names, nccl-tests bandwidth formulas, buffer shapes, and the exact correctness check:
 * inputs from (seed, rank, index) chosen so that every expected result is exactly representable. */
#include <math.h>
#include <string.h>

#include "zaya/bench_coll.h"
#include "zaya/bf16.h"
#include "zaya/rng.h"

static const char *g_names[ZAYA_COLL_COUNT] = {"allreduce", "reducescatter", "allgather", "broadcast",
                                               "reduce",    "alltoall",      "sendrecv"};
static const char *g_perf[ZAYA_COLL_COUNT] = {"all_reduce_perf", "reduce_scatter_perf", "all_gather_perf",
                                              "broadcast_perf",  "reduce_perf",         "alltoall_perf",
                                              "sendrecv_perf"};

const char *zaya_coll_name(zaya_coll c) { return (c >= 0 && c < ZAYA_COLL_COUNT) ? g_names[c] : "?"; }
const char *zaya_coll_perf_name(zaya_coll c) { return (c >= 0 && c < ZAYA_COLL_COUNT) ? g_perf[c] : "?"; }

int zaya_coll_is_reduction(zaya_coll c) {
    return c == ZAYA_COLL_ALLREDUCE || c == ZAYA_COLL_REDUCESCATTER || c == ZAYA_COLL_REDUCE;
}
int zaya_coll_is_rooted(zaya_coll c) { return c == ZAYA_COLL_BROADCAST || c == ZAYA_COLL_REDUCE; }

zaya_status zaya_coll_parse_list(const char *s, unsigned *mask) {
    *mask = 0;
    if (!strcmp(s, "all")) {
        *mask = (1u << ZAYA_COLL_COUNT) - 1;
        return ZAYA_OK;
    }
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int found = -1;
        for (int c = 0; c < ZAYA_COLL_COUNT; c++)
            if (strlen(g_names[c]) == len && !strncmp(g_names[c], p, len)) found = c;
        if (found < 0)
            return zaya_error_set(ZAYA_EINVAL,
                                  "unknown collective '%.*s' (use allreduce, reducescatter, allgather, broadcast, "
                                  "reduce, alltoall, sendrecv or all)",
                                  (int)len, p);
        *mask |= 1u << found;
        p += len;
        if (*p == ',') p++;
    }
    if (!*mask) return zaya_error_set(ZAYA_EINVAL, "empty collective list");
    return ZAYA_OK;
}

double zaya_coll_busbw_factor(zaya_coll c, int n) {
    if (n < 1) n = 1;
    switch (c) {
    case ZAYA_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case ZAYA_COLL_REDUCESCATTER:
    case ZAYA_COLL_ALLGATHER:
    case ZAYA_COLL_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

double zaya_coll_algbw_gbps(int64_t bytes, double time_us) {
    return time_us > 0 ? (double)bytes / (time_us * 1e-6) / 1e9 : 0.0;
}

zaya_coll_shape zaya_coll_shape_for(zaya_coll c, int64_t bytes, int n, zaya_dist_dtype t) {
    zaya_coll_shape s = {0};
    int64_t ts = (int64_t)zaya_dist_dtype_size(t);
    int64_t elems = bytes / ts;
    switch (c) {
    case ZAYA_COLL_REDUCESCATTER:
    case ZAYA_COLL_ALLGATHER:
    case ZAYA_COLL_ALLTOALL:
        /* nccl-tests: the per-rank count, rounded down to 16 bytes (4 floats, 8 bf16); count is that
         * per-rank count, bytes the whole buffer. */
        s.block = (elems / n) & ~(int64_t)(16 / ts - 1);
        s.count = s.block;
        s.send_count = c == ZAYA_COLL_ALLGATHER ? s.block : s.block * n;
        s.recv_count = c == ZAYA_COLL_REDUCESCATTER ? s.block : s.block * n;
        s.bytes = s.block * n * ts;
        break;
    default:
        s.count = s.send_count = s.recv_count = s.block = elems;
        s.bytes = s.count * ts;
        break;
    }
    return s;
}

float zaya_coll_input_value(uint64_t seed, int rank, int64_t index, zaya_redop op, int nranks) {
    uint32_t u = zaya_rng_u32_at(seed, (uint64_t)rank, (uint64_t)index);
    int m;
    if (op == ZAYA_REDOP_SUM || op == ZAYA_REDOP_AVG) {
        int k = 256 / (nranks > 0 ? nranks : 1);
        if (k > 128) k = 128;
        if (k < 1) k = 1;
        m = (int)(u % (uint32_t)(2 * k + 1)) - k;
    } else if (op == ZAYA_REDOP_PROD) {
        static const int vals[6] = {-16, -8, -4, 4, 8, 16};
        m = vals[u % 6];
    } else {
        m = (int)(u % 257u) - 128;
    }
    return (float)m * 0.125f;
}

/* Non-reductions move data only: draw from the widest range. */
static zaya_redop gen_op(zaya_coll c, zaya_redop op) { return zaya_coll_is_reduction(c) ? op : ZAYA_REDOP_MAX; }

static void store(void *buf, int64_t i, float v, zaya_dist_dtype t) {
    if (t == ZAYA_DIST_BF16) ((uint16_t *)buf)[i] = zaya_f32_to_bf16(v);
    else ((float *)buf)[i] = v;
}

static float load(const void *buf, int64_t i, zaya_dist_dtype t) {
    return t == ZAYA_DIST_BF16 ? zaya_bf16_to_f32(((const uint16_t *)buf)[i]) : ((const float *)buf)[i];
}

void zaya_coll_poison(void *buf, int64_t n, zaya_dist_dtype t) {
    for (int64_t i = 0; i < n; i++) store(buf, i, NAN, t);
}

void zaya_coll_fill_input(zaya_coll c, const zaya_coll_shape *s, void *buf, int in_place, zaya_dist_dtype t,
                          zaya_redop op, int root, int rank, int nranks, uint64_t seed) {
    zaya_redop g = gen_op(c, op);
    if (c == ZAYA_COLL_ALLGATHER) {
        int64_t off = in_place ? (int64_t)rank * s->block : 0;
        if (in_place) zaya_coll_poison(buf, s->recv_count, t);
        for (int64_t j = 0; j < s->block; j++) store(buf, off + j, zaya_coll_input_value(seed, rank, j, g, nranks), t);
        return;
    }
    if (c == ZAYA_COLL_BROADCAST && rank != root) {
        zaya_coll_poison(buf, s->count, t); /* a broadcast that moves nothing must not pass */
        return;
    }
    for (int64_t i = 0; i < s->send_count; i++) store(buf, i, zaya_coll_input_value(seed, rank, i, g, nranks), t);
}

/* Reduction of element idx over all ranks, rounded as dist.h documents for dtype t. */
static float reduce_expected(uint64_t seed, int64_t idx, zaya_dist_dtype t, zaya_redop op, int n) {
    double acc = zaya_coll_input_value(seed, 0, idx, op, n);
    for (int r = 1; r < n; r++) {
        double v = zaya_coll_input_value(seed, r, idx, op, n);
        switch (op) {
        case ZAYA_REDOP_PROD: acc *= v; break;
        case ZAYA_REDOP_MIN: acc = v < acc ? v : acc; break;
        case ZAYA_REDOP_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    float f = (float)acc; /* exact by construction of the inputs */
    if (op == ZAYA_REDOP_AVG) {
        f = f / (float)n;
        if (t == ZAYA_DIST_BF16) f = zaya_bf16_to_f32(zaya_f32_to_bf16(f));
    }
    return f;
}

float zaya_coll_expected(zaya_coll c, const zaya_coll_shape *s, int64_t j, zaya_dist_dtype t, zaya_redop op,
                         int root, int rank, int n, uint64_t seed) {
    zaya_redop g = gen_op(c, op);
    int64_t b = s->block > 0 ? s->block : 1;
    switch (c) {
    case ZAYA_COLL_ALLREDUCE:
    case ZAYA_COLL_REDUCE: return reduce_expected(seed, j, t, op, n);
    case ZAYA_COLL_REDUCESCATTER: return reduce_expected(seed, (int64_t)rank * s->block + j, t, op, n);
    case ZAYA_COLL_ALLGATHER: return zaya_coll_input_value(seed, (int)(j / b), j % b, g, n);
    case ZAYA_COLL_BROADCAST: return zaya_coll_input_value(seed, root, j, g, n);
    case ZAYA_COLL_ALLTOALL: return zaya_coll_input_value(seed, (int)(j / b), (int64_t)rank * b + j % b, g, n);
    case ZAYA_COLL_SENDRECV: return zaya_coll_input_value(seed, (rank - 1 + n) % n, j, g, n);
    default: return NAN;
    }
}

int64_t zaya_coll_count_wrong(zaya_coll c, const zaya_coll_shape *s, const void *out, zaya_dist_dtype t,
                              zaya_redop op, int root, int rank, int n, uint64_t seed) {
    if (c == ZAYA_COLL_REDUCE && rank != root) return 0;
    int64_t len = s->recv_count, wrong = 0;
    for (int64_t j = 0; j < len; j++) {
        float want = zaya_coll_expected(c, s, j, t, op, root, rank, n, seed);
        float got = load(out, j, t);
        if (!(got == want)) wrong++; /* NaN (an unwritten output) is always wrong */
    }
    return wrong;
}
