/* bf16 attention (zaya_attention_*_dtype with ZAYA_DTYPE_BF16): both kernels (the AMX tile kernel where
 * the host has one, and the portable f32 kernel with rounded operands) against a double reference that
 * rounds the same operands (q, k, v, dout; P; dS) to bf16, against each other, against the f32
 * attention, across thread counts (bit for bit), and in query chunks (context parallelism). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "testutil.h"
#include "zaya/attention.h"
#include "zaya/bf16.h"

typedef struct shape {
    int64_t B, Tq, Tkv, q0, Hq, Hkv, D;
} shape;

static double rb(double x) { return zaya_bf16_to_f32(zaya_f32_to_bf16((float)x)); }

/* Double reference of the bf16 semantics for query rows at positions q0 .. q0+Tq-1. */
static void reference(double *out, double *lse, double *dq, double *dk, double *dv, const float *dout, const float *q,
                      const float *k, const float *v, shape s, double scale) {
    const int64_t B = s.B, Tq = s.Tq, Tkv = s.Tkv, Hq = s.Hq, Hkv = s.Hkv, D = s.D, G = Hq / Hkv;
    double *p = malloc(sizeof(double) * (size_t)Tkv), *dp = malloc(sizeof(double) * (size_t)Tkv);
    memset(dq, 0, sizeof(double) * (size_t)(B * Tq * Hq * D));
    memset(dk, 0, sizeof(double) * (size_t)(B * Tkv * Hkv * D));
    memset(dv, 0, sizeof(double) * (size_t)(B * Tkv * Hkv * D));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Tq; i++) {
                const int64_t hk = h / G, pos = s.q0 + i;
                const float *qi = q + ((b * Tq + i) * Hq + h) * D, *gi = dout + ((b * Tq + i) * Hq + h) * D;
                double mx = -INFINITY;
                for (int64_t j = 0; j <= pos; j++) {
                    const float *kj = k + ((b * Tkv + j) * Hkv + hk) * D;
                    double d = 0;
                    for (int64_t c = 0; c < D; c++) d += rb(qi[c]) * rb(kj[c]);
                    p[j] = d * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                double sum = 0;
                for (int64_t j = 0; j <= pos; j++) sum += exp(p[j] - mx);
                lse[(b * Hq + h) * Tq + i] = mx + log(sum);
                for (int64_t j = 0; j <= pos; j++) p[j] = exp(p[j] - mx) / sum;
                double *oi = out + ((b * Tq + i) * Hq + h) * D, delta = 0;
                for (int64_t c = 0; c < D; c++) {
                    double o = 0;
                    for (int64_t j = 0; j <= pos; j++) o += rb(p[j] * sum) * rb(v[((b * Tkv + j) * Hkv + hk) * D + c]);
                    oi[c] = o / sum; /* P is rounded before 1/l is applied, as in the kernels */
                    delta += (double)gi[c] * oi[c];
                }
                for (int64_t j = 0; j <= pos; j++) {
                    const float *vj = v + ((b * Tkv + j) * Hkv + hk) * D;
                    double d = 0;
                    for (int64_t c = 0; c < D; c++) d += rb(gi[c]) * rb(vj[c]);
                    dp[j] = d;
                }
                for (int64_t j = 0; j <= pos; j++) {
                    const double ds = rb(scale * p[j] * (dp[j] - delta)), pr = rb(p[j]);
                    const int64_t kvo = ((b * Tkv + j) * Hkv + hk) * D;
                    for (int64_t c = 0; c < D; c++) {
                        dq[((b * Tq + i) * Hq + h) * D + c] += ds * rb(k[kvo + c]);
                        dk[kvo + c] += ds * rb(qi[c]);
                        dv[kvo + c] += pr * rb(gi[c]);
                    }
                }
            }
    free(p);
    free(dp);
}

typedef struct result {
    float *out, *lse, *dq, *dk, *dv;
} result;

static result run(shape s, const float *q, const float *k, const float *v, const float *dout, zaya_dtype dt) {
    const int64_t nq = s.B * s.Tq * s.Hq * s.D, nkv = s.B * s.Tkv * s.Hkv * s.D;
    result r = {th_alloc(nq), th_alloc(s.B * s.Hq * s.Tq), th_alloc(nq), th_alloc(nkv), th_alloc(nkv)};
    const float scale = 1.0f / sqrtf((float)s.D);
    zaya_attention_forward_dtype(dt, r.out, r.lse, q, k, v, s.B, s.Tq, s.Tkv, s.q0, s.Hq, s.Hkv, s.D, scale);
    zaya_attention_backward_dtype(dt, r.dq, r.dk, r.dv, dout, q, k, v, r.out, r.lse, s.B, s.Tq, s.Tkv, s.q0, s.Hq,
                                  s.Hkv, s.D, scale);
    return r;
}

static void result_free(result *r) { free(r->out), free(r->lse), free(r->dq), free(r->dk), free(r->dv); }

static int same_bits(const float *a, const float *b, int64_t n) { return memcmp(a, b, sizeof(float) * (size_t)n) == 0; }

static void test_shape(shape s, float amp) {
    const int64_t nq = s.B * s.Tq * s.Hq * s.D, nkv = s.B * s.Tkv * s.Hkv * s.D, nl = s.B * s.Hq * s.Tq;
    const uint64_t seed = 4000 + (uint64_t)(s.Tq * 13 + s.D * 7 + s.Hq + s.q0);
    float *q = th_alloc(nq), *k = th_alloc(nkv), *v = th_alloc(nkv), *dout = th_alloc(nq);
    th_fill(q, nq, seed, 1, -amp, amp);
    th_fill(k, nkv, seed, 2, -amp, amp);
    th_fill(v, nkv, seed, 3, -1, 1);
    th_fill(dout, nq, seed, 4, -1, 1);
    double *ro = th_alloc_d(nq), *rl = th_alloc_d(nl), *rdq = th_alloc_d(nq), *rdk = th_alloc_d(nkv),
           *rdv = th_alloc_d(nkv);
    reference(ro, rl, rdq, rdk, rdv, dout, q, k, v, s, 1.0 / sqrt((double)s.D));

    char tag[128], label[192];
    snprintf(tag, sizeof tag, "B=%lld Tq=%lld Tkv=%lld q0=%lld Hq=%lld Hkv=%lld D=%lld amp=%g", (long long)s.B,
             (long long)s.Tq, (long long)s.Tkv, (long long)s.q0, (long long)s.Hq, (long long)s.Hkv, (long long)s.D,
             (double)amp);
    const char *impl = zaya_attention_bf16_impl(s.D);
    result r[2];
    for (int pass = 0; pass < 2; pass++) { /* 0: the host's kernel, 1: the portable one */
        zaya_attention_bf16_force_portable(pass);
        r[pass] = run(s, q, k, v, dout, ZAYA_DTYPE_BF16);
        const char *names[] = {"out", "lse", "dq", "dk", "dv"};
        const double errs[] = {th_rel_err(r[pass].out, ro, nq, 1e-3), th_rel_err(r[pass].lse, rl, nl, 1.0),
                               th_rel_err(r[pass].dq, rdq, nq, 1e-2), th_rel_err(r[pass].dk, rdk, nkv, 1e-2),
                               th_rel_err(r[pass].dv, rdv, nkv, 1e-2)};
        /* The reference rounds P and dS from double values, the kernels from f32 ones: an operand on a
         * rounding boundary can go either way, and the forward rounds P against the running max of its
         * key block: bounds of about one bf16 ulp (2^-8 = 3.9e-3) of the tensor's largest entry. */
        const double tols[] = {3e-3, 1e-5, 5e-3, 5e-3, 5e-3};
        for (int t = 0; t < 5; t++) {
            snprintf(label, sizeof label, "%s %s vs reference: %s", pass ? "portable" : impl, tag, names[t]);
            CHECK_ERR(label, errs[t], tols[t]);
            if (getenv("ZAYA_TEST_VERBOSE")) printf("%-90s %.3e\n", label, errs[t]);
        }
    }
    zaya_attention_bf16_force_portable(0);
    /* the two kernels differ only in the order of the f32 sums inside the products */
    const double cross[] = {th_rel_err_ff(r[0].out, r[1].out, nq, 1e-3), th_rel_err_ff(r[0].dq, r[1].dq, nq, 1e-2),
                            th_rel_err_ff(r[0].dk, r[1].dk, nkv, 1e-2), th_rel_err_ff(r[0].dv, r[1].dv, nkv, 1e-2)};
    const char *cn[] = {"out", "dq", "dk", "dv"};
    for (int t = 0; t < 4; t++) {
        snprintf(label, sizeof label, "%s vs portable %s: %s", impl, tag, cn[t]);
        CHECK_ERR(label, cross[t], 5e-3);
        if (getenv("ZAYA_TEST_VERBOSE")) printf("%-90s %.3e\n", label, cross[t]);
    }
    /* bf16 attention stays near the f32 attention (sanity: the rounding is of operands, not results) */
    result f = run(s, q, k, v, dout, ZAYA_DTYPE_F32);
    snprintf(label, sizeof label, "bf16 vs f32 %s: out", tag);
    CHECK_ERR(label, th_rel_err_ff(r[0].out, f.out, nq, 1e-3), 5e-2);
    if (s.q0 + s.Tq >= 8) { /* with one or two keys dS is ~0 in f32 and bf16 rounding noise in bf16 */
        snprintf(label, sizeof label, "bf16 vs f32 %s: dk", tag);
        CHECK_ERR(label, th_rel_err_ff(r[0].dk, f.dk, nkv, 1e-2), 5e-2);
    }
    /* thread count: the same bits */
    const int saved = omp_get_max_threads();
    const int counts[] = {1, 3};
    for (int c = 0; c < 2; c++) {
        omp_set_num_threads(counts[c]);
        result t = run(s, q, k, v, dout, ZAYA_DTYPE_BF16);
        snprintf(label, sizeof label, "%s %s: %d threads give the same bits", impl, tag, counts[c]);
        CHECK(same_bits(t.out, r[0].out, nq) && same_bits(t.lse, r[0].lse, nl) && same_bits(t.dq, r[0].dq, nq) &&
                  same_bits(t.dk, r[0].dk, nkv) && same_bits(t.dv, r[0].dv, nkv),
              "%s", label);
        result_free(&t);
    }
    omp_set_num_threads(saved);
    result_free(&f);
    result_free(&r[0]);
    result_free(&r[1]);
    free(ro), free(rl), free(rdq), free(rdk), free(rdv), free(q), free(k), free(v), free(dout);
}

int main(void) {
    printf("bf16 attention kernel on this host: %s (head_dim 64)\n", zaya_attention_bf16_impl(64));
    omp_set_num_threads(2);
    const int64_t Ts[] = {1, 17, 100, 256}, Ds[] = {32, 64, 128};
    for (size_t t = 0; t < 4; t++)
        for (size_t d = 0; d < 3; d++)
            test_shape((shape){.B = 2, .Tq = Ts[t], .Tkv = Ts[t], .q0 = 0, .Hq = 4, .Hkv = 2, .D = Ds[d]}, 1.0f);
    /* peaked softmax (running-max rescaling), MHA, one KV head for many query heads */
    test_shape((shape){.B = 1, .Tq = 200, .Tkv = 200, .q0 = 0, .Hq = 3, .Hkv = 3, .D = 64}, 6.0f);
    test_shape((shape){.B = 3, .Tq = 70, .Tkv = 70, .q0 = 0, .Hq = 8, .Hkv = 1, .D = 64}, 3.0f);
    /* a head_dim the tile kernel does not take: the portable kernel serves it */
    test_shape((shape){.B = 2, .Tq = 45, .Tkv = 45, .q0 = 0, .Hq = 4, .Hkv = 2, .D = 24}, 1.0f);
    /* query chunks at an offset (context parallelism), keys past the chunk present but unused */
    test_shape((shape){.B = 2, .Tq = 64, .Tkv = 256, .q0 = 128, .Hq = 4, .Hkv = 2, .D = 64}, 1.0f);
    test_shape((shape){.B = 1, .Tq = 37, .Tkv = 101, .q0 = 5, .Hq = 2, .Hkv = 1, .D = 32}, 2.0f);
    return th_finish("test_attention_bf16");
}
