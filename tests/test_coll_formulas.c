/* bench coll: nccl-tests bandwidth formulas, buffer shapes, the exact-check generator (including
 * detection of deliberately wrong outputs), bf16 reduction semantics against an independent
 * double-precision rounding, and the size parser (the machine-profile round trip is tests/test_profile.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/flags.h"
#include "testutil.h"
#include "zaya/bench_coll.h"
#include "zaya/bf16.h"
#include "zaya/rng.h"

static void test_formulas(void) {
    /* Factors from nccl-tests doc/PERFORMANCE.md, written out for n = 1, 2, 4, 8. */
    const double ar[4] = {0.0, 1.0, 1.5, 1.75}, nm1[4] = {0.0, 0.5, 0.75, 0.875};
    const int ns[4] = {1, 2, 4, 8};
    for (int i = 0; i < 4; i++) {
        CHECK(zaya_coll_busbw_factor(ZAYA_COLL_ALLREDUCE, ns[i]) == ar[i], "allreduce n=%d", ns[i]);
        CHECK(zaya_coll_busbw_factor(ZAYA_COLL_REDUCESCATTER, ns[i]) == nm1[i], "reducescatter n=%d", ns[i]);
        CHECK(zaya_coll_busbw_factor(ZAYA_COLL_ALLGATHER, ns[i]) == nm1[i], "allgather n=%d", ns[i]);
        CHECK(zaya_coll_busbw_factor(ZAYA_COLL_ALLTOALL, ns[i]) == nm1[i], "alltoall n=%d", ns[i]);
        CHECK(zaya_coll_busbw_factor(ZAYA_COLL_BROADCAST, ns[i]) == 1.0, "broadcast n=%d", ns[i]);
        CHECK(zaya_coll_busbw_factor(ZAYA_COLL_REDUCE, ns[i]) == 1.0, "reduce n=%d", ns[i]);
        CHECK(zaya_coll_busbw_factor(ZAYA_COLL_SENDRECV, ns[i]) == 1.0, "sendrecv n=%d", ns[i]);
    }
    CHECK(fabs(zaya_coll_busbw_factor(ZAYA_COLL_ALLREDUCE, 3) - 4.0 / 3.0) < 1e-15, "allreduce n=3");
    /* 1e9 bytes in one second is 1 GB/s (1e9, not 2^30). */
    CHECK(fabs(zaya_coll_algbw_gbps(1000000000, 1e6) - 1.0) < 1e-12, "algbw");
    CHECK(fabs(zaya_coll_algbw_gbps(1 << 20, 100.0) - 10.48576) < 1e-9, "algbw 1 MiB / 100 us");

    /* Shapes: S is the whole buffer; blocks divide it evenly (rounded down) and, as in nccl-tests,
     * count is the per-rank count of the blocked collectives, rounded down to 16 bytes per rank. */
    zaya_coll_shape s = zaya_coll_shape_for(ZAYA_COLL_ALLGATHER, 1 << 20, 4, ZAYA_DIST_F32);
    CHECK(s.block == 65536 && s.count == 65536 && s.send_count == 65536 && s.recv_count == 262144 &&
              s.bytes == 1 << 20, "allgather shape");
    s = zaya_coll_shape_for(ZAYA_COLL_REDUCESCATTER, 100, 3, ZAYA_DIST_F32);
    CHECK(s.block == 8 && s.count == 8 && s.bytes == 96 && s.send_count == 24 && s.recv_count == 8, "rs shape");
    s = zaya_coll_shape_for(ZAYA_COLL_ALLGATHER, 40, 2, ZAYA_DIST_F32); /* 5 floats per rank -> 4 (16 B) */
    CHECK(s.block == 4 && s.count == 4 && s.bytes == 32 && s.send_count == 4 && s.recv_count == 8, "ag 16 B rounding");
    s = zaya_coll_shape_for(ZAYA_COLL_ALLTOALL, 100, 3, ZAYA_DIST_BF16); /* 16 bf16 per rank: already 32 B */
    CHECK(s.block == 16 && s.count == 16 && s.bytes == 96 && s.send_count == 48 && s.recv_count == 48, "a2a bf16");
    s = zaya_coll_shape_for(ZAYA_COLL_REDUCESCATTER, 60, 2, ZAYA_DIST_BF16); /* 15 bf16 per rank -> 8 */
    CHECK(s.block == 8 && s.count == 8 && s.bytes == 32, "rs bf16 16 B rounding");
    s = zaya_coll_shape_for(ZAYA_COLL_ALLGATHER, 8, 2, ZAYA_DIST_F32); /* 1 float per rank: nothing to time */
    CHECK(s.block == 0 && s.count == 0 && s.bytes == 0, "ag below 16 B per rank");
    s = zaya_coll_shape_for(ZAYA_COLL_ALLREDUCE, 100, 3, ZAYA_DIST_BF16);
    CHECK(s.count == 50 && s.bytes == 100, "allreduce bf16 shape");

    unsigned mask = 0;
    CHECK(zaya_coll_parse_list("allreduce,sendrecv", &mask) == ZAYA_OK &&
              mask == ((1u << ZAYA_COLL_ALLREDUCE) | (1u << ZAYA_COLL_SENDRECV)), "coll list");
    CHECK(zaya_coll_parse_list("all", &mask) == ZAYA_OK && mask == 0x7f, "all");
    CHECK(zaya_coll_parse_list("allreduce,bogus", &mask) == ZAYA_EINVAL &&
              strstr(zaya_error_message(), "'bogus'"), "bad name: %s", zaya_error_message());
}

/* ---- independent simulation of each collective from every rank's input buffer ---- */

static float ld(const void *b, int64_t i, zaya_dist_dtype t) {
    return t == ZAYA_DIST_BF16 ? zaya_bf16_to_f32(((const uint16_t *)b)[i]) : ((const float *)b)[i];
}
static void st(void *b, int64_t i, float v, zaya_dist_dtype t) {
    if (t == ZAYA_DIST_BF16) ((uint16_t *)b)[i] = zaya_f32_to_bf16(v);
    else ((float *)b)[i] = v;
}

/* Combines ranks in reverse order (not the generator's order), in the dtype's own arithmetic. */
static float reduce_ref(void **in, int n, int64_t idx, zaya_dist_dtype t, zaya_redop op) {
    float acc = ld(in[n - 1], idx, t);
    for (int r = n - 2; r >= 0; r--) {
        float v = ld(in[r], idx, t);
        if (t == ZAYA_DIST_BF16) {
            acc = zaya_bf16_to_f32(zaya_bf16_combine(zaya_f32_to_bf16(acc), zaya_f32_to_bf16(v), op));
        } else if (op == ZAYA_REDOP_PROD) acc *= v;
        else if (op == ZAYA_REDOP_MIN) acc = fminf(acc, v);
        else if (op == ZAYA_REDOP_MAX) acc = fmaxf(acc, v);
        else acc += v;
    }
    if (op == ZAYA_REDOP_AVG) {
        acc /= (float)n;
        if (t == ZAYA_DIST_BF16) acc = zaya_bf16_to_f32(zaya_f32_to_bf16(acc));
    }
    return acc;
}

static void simulate(zaya_coll c, const zaya_coll_shape *s, void **in, void *out, int rank, int n, int root,
                     zaya_dist_dtype t, zaya_redop op) {
    int64_t b = s->block;
    for (int64_t j = 0; j < s->recv_count; j++) {
        float v = NAN;
        switch (c) {
        case ZAYA_COLL_ALLREDUCE:
        case ZAYA_COLL_REDUCE: v = reduce_ref(in, n, j, t, op); break;
        case ZAYA_COLL_REDUCESCATTER: v = reduce_ref(in, n, rank * b + j, t, op); break;
        case ZAYA_COLL_ALLGATHER: v = ld(in[j / b], j % b, t); break;
        case ZAYA_COLL_BROADCAST: v = ld(in[root], j, t); break;
        case ZAYA_COLL_ALLTOALL: v = ld(in[j / b], rank * b + j % b, t); break;
        case ZAYA_COLL_SENDRECV: v = ld(in[(rank - 1 + n) % n], j, t); break;
        default: break;
        }
        st(out, j, v, t);
    }
}

static void test_exact_check(void) {
    const int ns[5] = {1, 2, 3, 4, 8};
    int64_t cases = 0;
    for (int ni = 0; ni < 5; ni++) {
        int n = ns[ni], root = n > 1 ? 1 : 0;
        for (int c = 0; c < ZAYA_COLL_COUNT; c++)
            for (int t = 0; t < 2; t++)
                for (int op = 0; op < ZAYA_REDOP_COUNT; op++) {
                    if (!zaya_coll_is_reduction((zaya_coll)c) && op > 0) break;
                    zaya_dist_dtype dt = (zaya_dist_dtype)t;
                    zaya_coll_shape s = zaya_coll_shape_for((zaya_coll)c, 4 * 37 * n, n, dt);
                    size_t bytes = (size_t)(s.send_count > s.recv_count ? s.send_count : s.recv_count) * 4 + 64;
                    void *in[8], *out = malloc(bytes);
                    for (int r = 0; r < n; r++) {
                        in[r] = malloc(bytes);
                        zaya_coll_fill_input((zaya_coll)c, &s, in[r], 0, dt, (zaya_redop)op, root, r, n, 99);
                    }
                    /* Broadcast inputs are the root's only; other ranks' buffers start poisoned. */
                    for (int rank = 0; rank < n; rank++) {
                        simulate((zaya_coll)c, &s, in, out, rank, n, root, dt, (zaya_redop)op);
                        int64_t w = zaya_coll_count_wrong((zaya_coll)c, &s, out, dt, (zaya_redop)op, root, rank, n, 99);
                        CHECK(w == 0, "%s n=%d %s %s rank %d: %lld wrong on a correct result",
                              zaya_coll_name((zaya_coll)c), n, zaya_dist_dtype_name(dt), zaya_redop_name((zaya_redop)op),
                              rank, (long long)w);
                        int counted = !(c == ZAYA_COLL_REDUCE && rank != root);
                        /* A deliberately wrong element is detected: one bf16/f32 ulp-sized change. */
                        int64_t k = s.recv_count / 2;
                        if (dt == ZAYA_DIST_BF16) ((uint16_t *)out)[k] ^= 1;
                        else ((float *)out)[k] = nextafterf(((float *)out)[k], INFINITY);
                        w = zaya_coll_count_wrong((zaya_coll)c, &s, out, dt, (zaya_redop)op, root, rank, n, 99);
                        CHECK(w == counted, "%s n=%d: one wrong element counted as %lld", zaya_coll_name((zaya_coll)c), n,
                              (long long)w);
                        /* A collective that wrote nothing is wrong everywhere. */
                        zaya_coll_poison(out, s.recv_count, dt);
                        w = zaya_coll_count_wrong((zaya_coll)c, &s, out, dt, (zaya_redop)op, root, rank, n, 99);
                        CHECK(w == (counted ? s.recv_count : 0), "%s: unwritten output counted %lld",
                              zaya_coll_name((zaya_coll)c), (long long)w);
                        cases++;
                    }
                    /* In-place all-gather layout: own block in place, the rest poisoned. */
                    if (c == ZAYA_COLL_ALLGATHER) {
                        zaya_coll_fill_input((zaya_coll)c, &s, out, 1, dt, (zaya_redop)op, root, n - 1, n, 99);
                        for (int64_t j = 0; j < s.recv_count; j++) {
                            int mine = j / s.block == n - 1;
                            float v = ld(out, j, dt);
                            CHECK(mine ? v == ld(in[n - 1], j % s.block, dt) : isnan(v), "in-place allgather layout");
                            if (!(mine ? v == ld(in[n - 1], j % s.block, dt) : isnan(v))) break;
                        }
                    }
                    for (int r = 0; r < n; r++) free(in[r]);
                    free(out);
                }
    }
    CHECK(cases > 300, "only %lld cases ran", (long long)cases);

    /* Generator ranges: sums of any subset stay integers/8 with |m| <= 256 (exact in bf16). */
    for (int n = 1; n <= 64; n *= 2) {
        int worst = 0;
        for (int64_t i = 0; i < 2000; i++) {
            int pos = 0, neg = 0;
            for (int r = 0; r < n; r++) {
                float v = zaya_coll_input_value(7, r, i, ZAYA_REDOP_SUM, n);
                int m = (int)(v * 8);
                CHECK(m == v * 8, "sum input %g is not a multiple of 1/8", v);
                if (m > 0) pos += m; else neg -= m;
            }
            if (pos > worst) worst = pos;
            if (neg > worst) worst = neg;
        }
        CHECK(worst <= 256, "n=%d: a partial sum reaches %d/8", n, worst);
    }
    for (int64_t i = 0; i < 1000; i++) {
        float v = zaya_coll_input_value(7, 3, i, ZAYA_REDOP_PROD, 4);
        CHECK(fabsf(v) == 0.5f || fabsf(v) == 1.0f || fabsf(v) == 2.0f, "prod input %g", v);
    }
}

/* Round-to-nearest-even of a double onto the bf16 grid (normal range), written independently of
 * bf16.h: 8 significant bits. */
static double rne_bf16_ref(double x) {
    if (x == 0 || !isfinite(x)) return x;
    int e;
    double m = frexp(x, &e); /* x = m 2^e, 0.5 <= |m| < 1 */
    double y = ldexp(m, 8), r = nearbyint(y); /* default rounding mode is to nearest, ties to even */
    return ldexp(r, e - 8);
}

static uint16_t random_bf16(uint64_t i, int emin, int emax) {
    uint32_t u = zaya_rng_u32_at(5, 1, i);
    int e = emin + (int)(u % (uint32_t)(emax - emin + 1));
    uint16_t mant = (uint16_t)((u >> 8) & 0x7f), sign = (uint16_t)((u >> 16) & 1);
    return (uint16_t)((sign << 15) | ((uint16_t)(e + 127) << 7) | mant);
}

static void test_bf16_semantics(void) {
    int bad_sum = 0, bad_prod = 0, bad_minmax = 0;
    for (uint64_t i = 0; i < 200000; i++) {
        /* Exponents spread over [-40, 40] so gaps beyond 16 (where f32 itself rounds) occur often. */
        uint16_t a = random_bf16(2 * i, -40, 40), b = random_bf16(2 * i + 1, -40, 40);
        double x = zaya_bf16_to_f32(a), y = zaya_bf16_to_f32(b);
        if (zaya_bf16_to_f32(zaya_bf16_combine(a, b, ZAYA_REDOP_SUM)) != rne_bf16_ref(x + y)) bad_sum++;
        if (zaya_bf16_to_f32(zaya_bf16_combine(a, b, ZAYA_REDOP_PROD)) != rne_bf16_ref(x * y)) bad_prod++;
        if (zaya_bf16_to_f32(zaya_bf16_combine(a, b, ZAYA_REDOP_MIN)) != fmin(x, y) ||
            zaya_bf16_to_f32(zaya_bf16_combine(a, b, ZAYA_REDOP_MAX)) != fmax(x, y))
            bad_minmax++;
    }
    CHECK(bad_sum == 0, "%d sums not correctly rounded", bad_sum);
    CHECK(bad_prod == 0, "%d products not correctly rounded", bad_prod);
    CHECK(bad_minmax == 0, "%d min/max wrong", bad_minmax);
    /* Ties go to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7. */
    CHECK(zaya_bf16_combine(0x3f80, zaya_f32_to_bf16(0x1p-8f), ZAYA_REDOP_SUM) == 0x3f80, "tie to even (down)");
    CHECK(zaya_bf16_combine(0x3f81, zaya_f32_to_bf16(0x1p-8f), ZAYA_REDOP_SUM) == 0x3f82, "tie to even (up)");
    CHECK(zaya_bf16_combine(0x7f7f, 0x7f7f, ZAYA_REDOP_SUM) == 0x7f80, "overflow to +inf");
    /* The documented bound for an n-rank sum: |err| <= gamma_{n-1} sum |x|, u = 2^-8. */
    const double u = 1.0 / 256;
    int viol = 0;
    for (uint64_t trial = 0; trial < 20000; trial++) {
        const int n = 8;
        uint16_t acc = random_bf16(1000000 + trial * n, -4, 4);
        double exact = zaya_bf16_to_f32(acc), abs_sum = fabs(exact);
        for (int r = 1; r < n; r++) {
            uint16_t v = random_bf16(1000000 + trial * n + (uint64_t)r, -4, 4);
            exact += zaya_bf16_to_f32(v);
            abs_sum += fabs(zaya_bf16_to_f32(v));
            acc = zaya_bf16_combine(acc, v, ZAYA_REDOP_SUM);
        }
        double gamma = (n - 1) * u / (1 - (n - 1) * u);
        if (fabs(zaya_bf16_to_f32(acc) - exact) > gamma * abs_sum) viol++;
    }
    CHECK(viol == 0, "%d 8-rank sums exceed the gamma_7 bound", viol);
}

static void test_size_parser(void) {
    int64_t v = 0;
    CHECK(zaya_parse_bytes("64K", &v) == ZAYA_OK && v == 65536, "64K");
    CHECK(zaya_parse_bytes("128M", &v) == ZAYA_OK && v == 128ll << 20, "128M");
    CHECK(zaya_parse_bytes("1G", &v) == ZAYA_OK && v == 1ll << 30, "1G");
    CHECK(zaya_parse_bytes("8", &v) == ZAYA_OK && v == 8, "8");
    CHECK(zaya_parse_bytes("4X", &v) == ZAYA_EINVAL && strstr(zaya_error_message(), "unknown size suffix 'X'"),
          "bad suffix: %s", zaya_error_message());
    CHECK(zaya_parse_bytes("12KiB", &v) == ZAYA_EINVAL && strstr(zaya_error_message(), "trailing"), "KiB: %s",
          zaya_error_message());
    CHECK(zaya_parse_bytes("-5", &v) == ZAYA_EINVAL, "negative");
    CHECK(zaya_parse_bytes("M", &v) == ZAYA_EINVAL, "no digits");
}

static void test_summary(void) {
    zaya_coll_result rows[4] = {0};
    const double bw[4] = {0.1, 5.0, 9.5, 10.0};
    for (int i = 0; i < 4; i++) {
        rows[i].coll = ZAYA_COLL_ALLREDUCE;
        rows[i].nranks = 2;
        rows[i].bytes = 1024ll << (4 * i);
        rows[i].oop.busbw = bw[i];
        rows[i].oop.time_us = 10.0 + i;
        rows[i].bare_us = (10.0 + i) / (1.0 + 0.01 * i);
    }
    zaya_coll_results r = {.rows = rows, .n = 4, .cap = 4};
    zaya_coll_summary s[2];
    int n = zaya_coll_summarize(&r, s, 2);
    CHECK(n == 1, "one group");
    CHECK(s[0].peak_busbw == 10.0 && s[0].peak_bytes == rows[3].bytes, "peak");
    CHECK(s[0].saturation_bytes == rows[2].bytes, "saturation: smallest size with >= 90%% of peak");
    CHECK(s[0].latency_us == 10.0 && s[0].latency_bytes == 1024, "latency");
    CHECK(fabs(s[0].overhead_ratio - 1.015) < 1e-12, "median ratio %g", s[0].overhead_ratio);
    /* -N: each cycle is its own group, the second one's latency its own first row. */
    rows[2].cycle = rows[3].cycle = 1;
    rows[2].bytes = 1024;
    n = zaya_coll_summarize(&r, s, 2);
    CHECK(n == 2 && s[1].cycle == 1 && s[0].cycle == 0, "two cycles, two groups (got %d)", n);
    CHECK(s[1].latency_us == 12.0 && s[1].latency_bytes == 1024 && s[1].peak_busbw == 10.0, "cycle 2 summary");
}

/* The nccl-tests flags' values: every bad one is EINVAL naming the flag and the value. */
static zaya_coll_plan plan_default(void) {
    zaya_coll_plan p = {0};
    zaya_coll_opts_default(&p.opts);
    return p;
}

static void expect_bad(const zaya_coll_plan *p, const char *flag, const char *value) {
    zaya_status st = zaya_coll_plan_check(p);
    const char *m = zaya_error_message();
    CHECK(st == ZAYA_EINVAL && strstr(m, flag) && strstr(m, value), "%s %s: status %d, message '%s'", flag, value,
          (int)st, m);
}

static void test_plan_check(void) {
    zaya_coll_plan p = plan_default();
    CHECK(p.opts.average == 1 && p.opts.agg_iters == 1 && p.opts.report_cputime == 0, "defaults -a 1 -m 1 -C 0");
    CHECK(zaya_coll_plan_check(&p) == ZAYA_OK, "a zeroed plan with default options: %s", zaya_error_message());
    for (int a = 0; a < 4; a++) {
        p.opts.average = a;
        CHECK(zaya_coll_plan_check(&p) == ZAYA_OK, "-a %d", a);
    }
    CHECK(!strcmp(zaya_coll_average_name(0), "rank0") && !strcmp(zaya_coll_average_name(3), "max"), "average names");
    p = plan_default(); p.opts.average = 4; expect_bad(&p, "-a/--average", "got 4");
    p = plan_default(); p.opts.average = -1; expect_bad(&p, "-a/--average", "got -1");
    p = plan_default(); p.opts.agg_iters = 0; expect_bad(&p, "-m/--agg_iters", "got 0");
    p = plan_default(); p.opts.report_cputime = 2; expect_bad(&p, "-C/--report_cputime", "got 2");
    p = plan_default(); p.cycles = -2; expect_bad(&p, "-N/--run_cycles", "got -2");
    p = plan_default(); p.cycles = ZAYA_COLL_CYCLES_UNTIL_STOPPED;
    CHECK(zaya_coll_plan_check(&p) == ZAYA_OK, "-N 0 (until stopped)");
    p = plan_default(); p.ngpus = 2; expect_bad(&p, "-g/--ngpus 2", "--backend nccl");
    p.backend = ZAYA_COLL_BACKEND_NCCL;
    CHECK(zaya_coll_plan_check(&p) == ZAYA_OK, "-g 2 with nccl");
    p.ngpus = 65; expect_bad(&p, "-g/--ngpus", "got 65");
    p = plan_default(); p.nthreads = 2; expect_bad(&p, "-t/--nthreads 2", "-g N");
    p = plan_default(); p.cudagraph = 1; expect_bad(&p, "-G/--cudagraph 1", "--backend nccl");
    p.backend = ZAYA_COLL_BACKEND_NCCL; expect_bad(&p, "-G/--cudagraph 1", "not supported");
    p = plan_default(); p.report_path = ""; expect_bad(&p, "-J/--output_file", "empty");
}

int main(void) {
    test_formulas();
    test_exact_check();
    test_bf16_semantics();
    test_size_parser();
    test_summary();
    test_plan_check();
    return th_finish("coll_formulas");
}
