/* Communicator layer: every collective, blocking and non-blocking, f32 and bf16, every reduction,
 * in and out of place, on the world and on sub-communicators, and the f64 / i64 all-reduces; checked
 * element by element against the exact expected values. Runs as a single process (ctest unit) and
 * under mpirun (tests/coll.cmake runs it with 2 and 4 ranks). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/bench_coll.h"
#include "zaya/bf16.h"
#include "zaya/dist.h"

static int g_rank;

/* Collective through the blocking or non-blocking API (the first four have both). */
static zaya_status run(const zaya_comm *c, zaya_coll coll, const zaya_coll_shape *s, const void *sb, void *rb,
                       zaya_dist_dtype t, zaya_redop op, int root, int nonblocking) {
    int n = zaya_comm_size(c), r = zaya_comm_rank(c);
    zaya_dist_request req;
    if (nonblocking) {
        zaya_status st;
        if (coll == ZAYA_COLL_ALLREDUCE) st = zaya_iallreduce(c, sb, rb, s->count, t, op, &req);
        else if (coll == ZAYA_COLL_REDUCESCATTER) st = zaya_ireduce_scatter(c, sb, rb, s->block, t, op, &req);
        else if (coll == ZAYA_COLL_ALLGATHER) st = zaya_iallgather(c, sb, rb, s->block, t, &req);
        else if (coll == ZAYA_COLL_BROADCAST) st = zaya_ibroadcast(c, rb, s->count, t, root, &req);
        else return zaya_error_set(ZAYA_EINVAL, "no non-blocking form");
        if (st != ZAYA_OK) return st;
        /* Poll with test (the overlap pattern of training) until done. */
        int done = 0;
        while (!done) ZAYA_TRY(zaya_dist_test(&req, &done));
        return zaya_dist_wait(&req); /* a completed request waits as a no-op */
    }
    switch (coll) {
    case ZAYA_COLL_ALLREDUCE: return zaya_allreduce(c, sb, rb, s->count, t, op);
    case ZAYA_COLL_REDUCESCATTER: return zaya_reduce_scatter(c, sb, rb, s->block, t, op);
    case ZAYA_COLL_ALLGATHER: return zaya_allgather(c, sb, rb, s->block, t);
    case ZAYA_COLL_BROADCAST: return zaya_broadcast(c, rb, s->count, t, root);
    case ZAYA_COLL_REDUCE: return zaya_reduce(c, sb, rb, s->count, t, op, root);
    case ZAYA_COLL_ALLTOALL: return zaya_alltoall(c, sb, rb, s->block, t);
    case ZAYA_COLL_SENDRECV: return zaya_sendrecv(c, sb, (r + 1) % n, rb, (r - 1 + n) % n, s->count, t, 3);
    default: return ZAYA_EINVAL;
    }
}

static int64_t sum_world(const zaya_comm *w, int64_t v) {
    float f = (float)v; /* counts here are small: f32 sums of integers < 2^24 are exact */
    zaya_allreduce(w, &f, &f, 1, ZAYA_DIST_F32, ZAYA_REDOP_SUM);
    return (int64_t)f;
}

static void test_collectives(const zaya_comm *c, const zaya_comm *world, const char *label) {
    int n = zaya_comm_size(c), rank = zaya_comm_rank(c), root = n - 1;
    const int64_t sizes[3] = {4 * 1, 4 * 37 * 4, 4 * 4096 * 4 + 12}; /* odd counts, blocks, remainders */
    int64_t runs = 0, wrong_total = 0;
    for (int c_ = 0; c_ < ZAYA_COLL_COUNT; c_++)
        for (int t = 0; t < 2; t++)
            for (int op = 0; op < ZAYA_REDOP_COUNT; op++) {
                zaya_coll coll = (zaya_coll)c_;
                if (!zaya_coll_is_reduction(coll) && op > 0) break;
                for (int si = 0; si < 3; si++)
                    for (int ip = 0; ip < 2; ip++)
                        for (int nb = 0; nb < 2; nb++) {
                            if (nb && coll > ZAYA_COLL_BROADCAST) continue;
                            zaya_dist_dtype dt = (zaya_dist_dtype)t;
                            zaya_coll_shape s = zaya_coll_shape_for(coll, sizes[si], n, dt);
                            if (s.count == 0) continue;
                            int64_t elems = s.send_count > s.recv_count ? s.send_count : s.recv_count;
                            void *sb = malloc((size_t)elems * 4), *rb = malloc((size_t)elems * 4);
                            int ipl = ip || coll == ZAYA_COLL_BROADCAST;
                            zaya_coll_fill_input(coll, &s, ipl ? rb : sb, ipl, dt, (zaya_redop)op, root, rank, n, 11);
                            if (!ipl) zaya_coll_poison(rb, s.recv_count, dt);
                            const void *src = ip ? rb : sb;
                            if (coll == ZAYA_COLL_ALLGATHER && ip) src = (char *)rb + (size_t)rank * s.block * zaya_dist_dtype_size(dt);
                            zaya_status st = run(c, coll, &s, src, rb, dt, (zaya_redop)op, root, nb);
                            CHECK(st == ZAYA_OK, "%s %s: %s", label, zaya_coll_name(coll), zaya_error_message());
                            int64_t w = zaya_coll_count_wrong(coll, &s, rb, dt, (zaya_redop)op, root, rank, n, 11);
                            if (w)
                                fprintf(stderr, "rank %d %s: %s %s %s %lld B in_place=%d nonblocking=%d: %lld wrong\n",
                                        g_rank, label, zaya_coll_name(coll), zaya_dist_dtype_name(dt),
                                        zaya_redop_name((zaya_redop)op), (long long)s.bytes, ip, nb, (long long)w);
                            wrong_total += w;
                            runs++;
                            free(sb);
                            free(rb);
                        }
            }
    (void)world;
    CHECK(wrong_total == 0, "%s: %lld wrong elements over %lld runs", label, (long long)wrong_total, (long long)runs);
    CHECK(runs > 100, "%s: only %lld runs", label, (long long)runs);
}

static void test_avg(const zaya_comm *w) {
    /* Each rank contributes 1 + r/16: every partial sum (any order) is exact in bf16 for n <= 16, so
     * the result is exactly rne_bf16(f32(sum) / n), the documented avg. (Inputs whose partial sums
     * round would make the result depend on the backend's combine order, as dist.h explains.) */
    int n = zaya_comm_size(w), r = zaya_comm_rank(w);
    uint16_t x = zaya_f32_to_bf16(1.0f + (float)r / 16.0f), y;
    CHECK(zaya_allreduce(w, &x, &y, 1, ZAYA_DIST_BF16, ZAYA_REDOP_AVG) == ZAYA_OK, "bf16 avg");
    double sum = 0;
    for (int k = 0; k < n; k++) sum += 1.0 + k / 16.0;
    float want = zaya_bf16_to_f32(zaya_f32_to_bf16((float)sum / (float)n));
    CHECK(zaya_bf16_to_f32(y) == want, "bf16 avg %g, want %g", zaya_bf16_to_f32(y), want);
    float fx = (float)(r + 1), fy;
    CHECK(zaya_allreduce(w, &fx, &fy, 1, ZAYA_DIST_F32, ZAYA_REDOP_AVG) == ZAYA_OK &&
              fy == (float)(n * (n + 1) / 2) / (float)n,
          "f32 avg %g", fy);
}

/* f64 and i64 all-reduces keep every bit: values an f32 round trip would round (2^-40 offsets, integers
 * above 2^24) or overflow (2^900) come back exact, in place and out of place. */
static void test_exact_host(const zaya_comm *w) {
    const int n = zaya_comm_size(w), r = zaya_comm_rank(w);
    const double tiny = ldexp(1.0, -40), huge = ldexp(1.0, 900);
    const int64_t tri = (int64_t)n * (n + 1) / 2; /* sum of r + 1 over ranks */
    double x[3] = {1.0 + (r + 1) * tiny, huge * (r + 1), -(double)r - 0.5}, y[3] = {0};
    CHECK(zaya_allreduce_f64(w, x, x, 2, ZAYA_REDOP_SUM) == ZAYA_OK, "f64 sum: %s", zaya_error_message());
    CHECK(x[0] == n + (double)tri * tiny, "f64 sum %.17g, want %.17g", x[0], n + (double)tri * tiny);
    CHECK(x[1] == huge * (double)tri && isfinite(x[1]), "f64 sum of 2^900 multiples %g", x[1]);
    CHECK(zaya_allreduce_f64(w, x + 2, y, 1, ZAYA_REDOP_MAX) == ZAYA_OK && y[0] == -0.5 && x[2] == -(double)r - 0.5,
          "f64 max out of place %g (send %g)", y[0], x[2]);
    CHECK(zaya_allreduce_f64(w, x + 2, y, 1, ZAYA_REDOP_MIN) == ZAYA_OK && y[0] == -(double)(n - 1) - 0.5,
          "f64 min %g", y[0]);
    double a = r + 1;
    CHECK(zaya_allreduce_f64(w, &a, &a, 1, ZAYA_REDOP_AVG) == ZAYA_OK && a == (double)tri / n, "f64 avg %g", a);

    int64_t c[3] = {((int64_t)1 << 40) + r + 1, (int64_t)r << 33, -(int64_t)r}, d[3] = {0};
    CHECK(zaya_allreduce_i64(w, c, c, 1, ZAYA_REDOP_SUM) == ZAYA_OK &&
              c[0] == ((int64_t)n << 40) + tri, "i64 sum %lld, want %lld", (long long)c[0],
          (long long)(((int64_t)n << 40) + tri));
    CHECK(zaya_allreduce_i64(w, c + 1, d, 2, ZAYA_REDOP_MAX) == ZAYA_OK && d[0] == (int64_t)(n - 1) << 33 && d[1] == 0 &&
              c[1] == (int64_t)r << 33, "i64 max out of place %lld %lld", (long long)d[0], (long long)d[1]);
    CHECK(zaya_allreduce_i64(w, c + 2, d, 1, ZAYA_REDOP_MIN) == ZAYA_OK && d[0] == -(int64_t)(n - 1),
          "i64 min %lld", (long long)d[0]);
    CHECK(zaya_allreduce_i64(w, c, d, 0, ZAYA_REDOP_SUM) == ZAYA_OK, "i64 empty: %s", zaya_error_message());
    CHECK(zaya_allreduce_i64(w, c, c, 1, ZAYA_REDOP_AVG) == ZAYA_EINVAL && strstr(zaya_error_message(), "avg") &&
              strstr(zaya_error_message(), "i64"), "i64 avg refused: %s", zaya_error_message());
    CHECK(zaya_allreduce_f64(w, x, x, -1, ZAYA_REDOP_SUM) == ZAYA_EINVAL && strstr(zaya_error_message(), "f64") &&
              strstr(zaya_error_message(), "negative"), "f64 negative count: %s", zaya_error_message());
    CHECK(zaya_allreduce_i64(w, c, c, 3000000000ll, ZAYA_REDOP_SUM) == ZAYA_ERANGE &&
              strstr(zaya_error_message(), "3000000000"), "i64 huge count: %s", zaya_error_message());
    CHECK(zaya_allreduce_f64(NULL, x, x, 1, ZAYA_REDOP_SUM) == ZAYA_EINVAL, "f64 NULL communicator");
    CHECK(zaya_allreduce_f64(w, x, x, 1, (zaya_redop)42) == ZAYA_EINVAL, "f64 bad op");
}

static void test_subcomms(const zaya_comm *w) {
    int n = zaya_comm_size(w), r = zaya_comm_rank(w);
    for (int k = 1; k <= n; k *= 2) {
        for (int strided = 0; strided < 2; strided++) {
            zaya_comm *sub = NULL;
            zaya_status st = strided ? zaya_comm_strided(w, k, &sub) : zaya_comm_first(w, k, &sub);
            CHECK(st == ZAYA_OK, "group of %d: %s", k, zaya_error_message());
            int ranks[64], member = 0, pos = -1;
            zaya_comm_group_ranks(n, k, strided, ranks);
            for (int i = 0; i < k; i++)
                if (ranks[i] == r) member = 1, pos = i;
            CHECK(member == (sub != NULL), "k=%d strided=%d: membership of rank %d", k, strided, r);
            if (sub) {
                CHECK(zaya_comm_size(sub) == k && zaya_comm_rank(sub) == pos && zaya_comm_world_rank(sub) == r,
                      "k=%d: size %d rank %d", k, zaya_comm_size(sub), zaya_comm_rank(sub));
                /* The sum of world ranks over the group proves which ranks are in it. */
                float wr = (float)r, got = 0, want = 0;
                for (int i = 0; i < k; i++) want += (float)ranks[i];
                zaya_allreduce(sub, &wr, &got, 1, ZAYA_DIST_F32, ZAYA_REDOP_SUM);
                CHECK(got == want, "k=%d strided=%d: sum of members %g, want %g", k, strided, got, want);
                if (k == n) test_collectives(sub, w, strided ? "strided group" : "packed group");
            }
            zaya_comm_free(sub);
        }
    }
    /* Split by parity: even and odd ranks form two communicators. */
    zaya_comm *half = NULL;
    CHECK(zaya_comm_split(w, r % 2, r, &half) == ZAYA_OK && half, "split");
    if (half) {
        CHECK(zaya_comm_size(half) == (n + 1 - r % 2) / 2 && zaya_comm_rank(half) == r / 2, "parity split shape");
        zaya_comm_free(half);
    }
    CHECK(zaya_comm_barrier(w) == ZAYA_OK, "barrier");
}

static void test_errors(const zaya_comm *w) {
    float buf[4] = {0};
    int n = zaya_comm_size(w);
    CHECK(zaya_broadcast(w, buf, 4, ZAYA_DIST_F32, n) == ZAYA_EINVAL && strstr(zaya_error_message(), "root"),
          "bad root: %s", zaya_error_message());
    CHECK(zaya_allreduce(w, buf, buf, -1, ZAYA_DIST_F32, ZAYA_REDOP_SUM) == ZAYA_EINVAL &&
              strstr(zaya_error_message(), "all-reduce"), "negative count: %s", zaya_error_message());
    CHECK(zaya_allreduce(w, buf, buf, 3000000000ll, ZAYA_DIST_BF16, ZAYA_REDOP_SUM) == ZAYA_ERANGE &&
              strstr(zaya_error_message(), "3000000000") && strstr(zaya_error_message(), "bf16"),
          "huge count: %s", zaya_error_message());
    CHECK(zaya_allreduce(w, buf, buf, 4, ZAYA_DIST_F32, (zaya_redop)42) == ZAYA_EINVAL, "bad op");
    zaya_comm *sub = NULL;
    CHECK(zaya_comm_first(w, n + 1, &sub) == ZAYA_EINVAL && !sub, "group larger than world");
    zaya_dist_dtype t;
    zaya_redop op;
    CHECK(zaya_dist_dtype_parse("fp8", &t) == ZAYA_EINVAL && strstr(zaya_error_message(), "'fp8'"), "dtype parse");
    CHECK(zaya_redop_parse("mean", &op) == ZAYA_EINVAL && strstr(zaya_error_message(), "'mean'"), "op parse");
    CHECK(zaya_redop_parse("avg", &op) == ZAYA_OK && op == ZAYA_REDOP_AVG, "avg parse");
}

int main(int argc, char **argv) {
    zaya_comm *w = NULL;
    zaya_status st = zaya_dist_init(&argc, &argv, &w);
    CHECK(st == ZAYA_OK, "init: %s", zaya_error_message());
    if (st != ZAYA_OK) return th_finish("dist");
    CHECK(zaya_dist_initialized(), "initialized");
    g_rank = zaya_comm_rank(w);
    test_collectives(w, w, "world");
    test_avg(w);
    test_exact_host(w);
    test_subcomms(w);
    test_errors(w);
    /* Every rank must pass: combine the failure counts so rank 0's exit code speaks for all. */
    int64_t fails = sum_world(w, th_failures);
    if (g_rank != 0) th_failures = 0;
    else th_failures = (int)fails;
    /* Nested init/finalize: the inner pair leaves MPI usable for the outer one. */
    zaya_comm *inner = NULL;
    CHECK(zaya_dist_init(NULL, NULL, &inner) == ZAYA_OK && inner, "nested init");
    zaya_dist_finalize(inner);
    CHECK(zaya_dist_initialized(), "still initialized after the inner finalize");
    float one = 1, n = 0;
    CHECK(zaya_allreduce(w, &one, &n, 1, ZAYA_DIST_F32, ZAYA_REDOP_SUM) == ZAYA_OK && n == zaya_comm_size(w),
          "collective after nested finalize");
    zaya_dist_finalize(w);
    CHECK(!zaya_dist_initialized(), "finalized");
    return th_finish("dist");
}
