/* Causal grouped-query attention: tiled forward and backward with an online softmax (fp32), and the
 * portable bf16 mode (zaya_attention_*_dtype: the products' operands rounded to bf16 values; the AMX
 * kernel of attention_amx.c serves bf16 where the host has the tile unit).
 *
 * All work is expressed through one register-blocked tile product (gemm_tile) on stack tiles:
 *   S  = Q K^T          (query tile x key tile, keys packed transposed so the key index is contiguous)
 *   O += P V            (rows of V are contiguous across head_dim)
 *   dV += P^T dO, dK += dS^T Q, dQ += dS K, dP = dO V^T
 * Tasks of one or two rows per head (decode steps) take scores as dot products against the key rows
 * in place instead. Scratch is bounded by the tile sizes and the maximum head_dim; nothing is
 * allocated. */
#include "zaya/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "attention_amx.h"
#include "zaya/bf16.h"
#include "zaya/status.h"

/* Tile sizes: a forward query tile (32 x D) plus a packed key tile (D x 64) fit L1/L2 for D = 128. */
#define FWD_QT 32
#define FWD_KT 64
#define BWD_QT 32
#define BWD_KT 64
#define FWD_DIRECT_ROWS 2 /* tasks with at most this many rows skip key packing (decode) */
#define FWD_HEADS 4 /* query heads of one group that share a packed key tile in one task */
#define MAXD ZAYA_ATTENTION_MAX_HEAD_DIM

/* ---- SIMD vocabulary: explicit FMA, since ISO C mode does not contract a*b+c ---- */
#if defined(__AVX512F__)
#include <immintrin.h>
#define VW 16
/* Register block: MR rows x NRV vectors of accumulators. 8 x 2 (16 of the 32 zmm registers) measured
 * fastest on Zen 4: each k step is 2 vector loads and 8 broadcasts for 16 FMAs. */
#define MR 8
#define NRV 2
typedef __m512 vf;
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, x) _mm512_storeu_ps((p), (x))
#define V_SET1(x) _mm512_set1_ps(x)
#define V_ZERO() _mm512_setzero_ps()
#define V_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define VW 8
#define MR 6
#define NRV 2 /* 16 ymm registers: 12 accumulators, 2 loads, 1 broadcast */
typedef __m256 vf;
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, x) _mm256_storeu_ps((p), (x))
#define V_SET1(x) _mm256_set1_ps(x)
#define V_ZERO() _mm256_setzero_ps()
#define V_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#else
#define VW 4
#define MR 4
#define NRV 2
typedef float vf __attribute__((vector_size(16)));
static inline vf v_load(const float *p) {
    vf x;
    memcpy(&x, p, sizeof x);
    return x;
}
#define V_LOAD(p) v_load(p)
static inline void v_store(float *p, vf x) { memcpy(p, &x, sizeof x); }
#define V_STORE(p, x) v_store((p), (x))
#define V_SET1(x) ((vf){(x), (x), (x), (x)})
#define V_ZERO() ((vf){0, 0, 0, 0})
#define V_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* C[m, n] (+)= A[m, k] B[k, n]; B and C row-major with leading dimensions, A addressed as
 * a[r * ars + p * acs] so that a transposed A (ars = 1, acs = lda) needs no copy. The inner loop walks
 * k with MR x (NRV*VW) accumulators in registers: MR broadcasts and NRV loads feed MR*NRV FMAs. */
static void gemm_tile(float *restrict c, int64_t ldc, const float *restrict a, int64_t ars, int64_t acs,
                      const float *restrict b, int64_t ldb, int m, int n, int k, int accumulate) {
    const int nr = NRV * VW;
    int i = 0;
    for (; i + MR <= m; i += MR) {
        const float *a0 = a + (int64_t)i * ars;
        float *c0 = c + (int64_t)i * ldc;
        int j = 0;
        for (; j + nr <= n; j += nr) {
            vf acc[MR][NRV];
            for (int r = 0; r < MR; r++)
                for (int v = 0; v < NRV; v++) acc[r][v] = accumulate ? V_LOAD(c0 + r * ldc + j + v * VW) : V_ZERO();
            for (int p = 0; p < k; p++) {
                vf bv[NRV];
                for (int v = 0; v < NRV; v++) bv[v] = V_LOAD(b + (int64_t)p * ldb + j + v * VW);
                for (int r = 0; r < MR; r++) {
                    vf av = V_SET1(a0[r * ars + p * acs]);
                    for (int v = 0; v < NRV; v++) acc[r][v] = V_FMA(av, bv[v], acc[r][v]);
                }
            }
            for (int r = 0; r < MR; r++)
                for (int v = 0; v < NRV; v++) V_STORE(c0 + r * ldc + j + v * VW, acc[r][v]);
        }
        for (; j + VW <= n; j += VW) {
            vf acc[MR];
            for (int r = 0; r < MR; r++) acc[r] = accumulate ? V_LOAD(c0 + r * ldc + j) : V_ZERO();
            for (int p = 0; p < k; p++) {
                vf bv = V_LOAD(b + (int64_t)p * ldb + j);
                for (int r = 0; r < MR; r++) acc[r] = V_FMA(V_SET1(a0[r * ars + p * acs]), bv, acc[r]);
            }
            for (int r = 0; r < MR; r++) V_STORE(c0 + r * ldc + j, acc[r]);
        }
        for (; j < n; j++)
            for (int r = 0; r < MR; r++) {
                float sum = accumulate ? c0[r * ldc + j] : 0.0f;
                for (int p = 0; p < k; p++) sum = fmaf(a0[r * ars + p * acs], b[(int64_t)p * ldb + j], sum);
                c0[r * ldc + j] = sum;
            }
    }
    for (; i < m; i++) { /* leftover rows: four independent FMA chains per row */
        const float *a0 = a + (int64_t)i * ars;
        float *c0 = c + (int64_t)i * ldc;
        int j = 0;
        for (; j + 4 * VW <= n; j += 4 * VW) {
            vf acc[4];
            for (int v = 0; v < 4; v++) acc[v] = accumulate ? V_LOAD(c0 + j + v * VW) : V_ZERO();
            for (int p = 0; p < k; p++) {
                const vf av = V_SET1(a0[p * acs]);
                for (int v = 0; v < 4; v++) acc[v] = V_FMA(av, V_LOAD(b + (int64_t)p * ldb + j + v * VW), acc[v]);
            }
            for (int v = 0; v < 4; v++) V_STORE(c0 + j + v * VW, acc[v]);
        }
        for (; j + VW <= n; j += VW) {
            vf acc = accumulate ? V_LOAD(c0 + j) : V_ZERO();
            for (int p = 0; p < k; p++) acc = V_FMA(V_SET1(a0[p * acs]), V_LOAD(b + (int64_t)p * ldb + j), acc);
            V_STORE(c0 + j, acc);
        }
        for (; j < n; j++) {
            float sum = accumulate ? c0[j] : 0.0f;
            for (int p = 0; p < k; p++) sum = fmaf(a0[p * acs], b[(int64_t)p * ldb + j], sum);
            c0[j] = sum;
        }
    }
}

/* exp(x) for x <= 0 (softmax arguments after max subtraction), vectorizable: 2^n * e^r with
 * n = round(x / ln2), |r| <= ln2/2, degree-7 Taylor polynomial (relative error < 1e-8 before rounding).
 * Arguments below -87 (including -inf) give exactly 0, so masked logits contribute nothing. */
static inline float exp_nonpos(float x) {
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float xc = x >= -87.0f ? (x <= 88.0f ? x : 88.0f) : -87.0f; /* keeps the int conversion defined */
    float t = xc * log2e + round_magic;
    float n = t - round_magic;
    float r = (xc - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t ni = (int32_t)n; /* in [-126, 0] */
    union {
        uint32_t u;
        float f;
    } s = {.u = (uint32_t)(ni + 127) << 23};
    float y = p * s.f;
    y = x == x ? y : x; /* NaN in, NaN out */
    return x < -87.0f ? 0.0f : y;
}

/* Row helpers with VW independent partial results, so the reductions vectorize without reassociation
 * flags (the summation order is fixed, only not left-to-right). */
static float row_max(const float *x, int n) {
    float part[VW];
    for (int u = 0; u < VW; u++) part[u] = -INFINITY;
    int j = 0;
    for (; j + VW <= n; j += VW)
        for (int u = 0; u < VW; u++) part[u] = x[j + u] > part[u] ? x[j + u] : part[u];
    float m = -INFINITY;
    for (int u = 0; u < VW; u++) m = part[u] > m ? part[u] : m;
    for (; j < n; j++) m = x[j] > m ? x[j] : m;
    return m;
}

static float row_dot(const float *x, const float *y, int n) {
    float part[VW] = {0};
    int j = 0;
    for (; j + VW <= n; j += VW)
        for (int u = 0; u < VW; u++) part[u] += x[j + u] * y[j + u];
    float s = 0.0f;
    for (int u = 0; u < VW; u++) s += part[u];
    for (; j < n; j++) s += x[j] * y[j];
    return s;
}

/* x[j] = exp(x[j] * scale - sub); returns the sum. */
static float row_exp_sum(float *x, int n, float scale, float sub) {
    for (int j = 0; j < n; j++) x[j] = exp_nonpos(x[j] * scale - sub);
    float part[VW] = {0};
    int j = 0;
    for (; j + VW <= n; j += VW)
        for (int u = 0; u < VW; u++) part[u] += x[j + u];
    float s = 0.0f;
    for (int u = 0; u < VW; u++) s += part[u];
    for (; j < n; j++) s += x[j];
    return s;
}

static float hsum(vf x) {
    float t[VW], sum = 0.0f;
    V_STORE(t, x);
    for (int u = 0; u < VW; u++) sum += t[u];
    return sum;
}

/* s[r * lds + j] = q_r . k_j for nr query rows (q_r = qr[r]) and nj key rows (k_j = k + j*ldk), in
 * place: for a handful of rows this beats packing the keys. Four rows at a time, so every key load
 * feeds four independent FMA chains. */
static void dot_scores(float *s, int lds, const float *const *qr, int nr, const float *k, int64_t ldk, int nj, int D) {
    for (int r0 = 0; r0 < nr; r0 += 4) {
        const int rn = nr - r0 < 4 ? nr - r0 : 4;
        for (int j = 0; j < nj; j++) {
            const float *kj = k + j * ldk;
            vf acc[4] = {V_ZERO(), V_ZERO(), V_ZERO(), V_ZERO()};
            int d = 0;
            for (; d + VW <= D; d += VW) {
                const vf kv = V_LOAD(kj + d);
                for (int r = 0; r < 4; r++)
                    if (r < rn) acc[r] = V_FMA(V_LOAD(qr[r0 + r] + d), kv, acc[r]);
            }
            for (int r = 0; r < rn; r++) {
                float sum = hsum(acc[r]);
                for (int e = d; e < D; e++) sum += qr[r0 + r][e] * kj[e];
                s[(r0 + r) * lds + j] = sum;
            }
        }
    }
}

/* Packs rows [nj, D] (row stride ld) transposed into dst[D, KT] so that key index is contiguous. */
static void pack_transposed(float *restrict dst, int kt, const float *restrict src, int64_t ld, int nj, int D) {
    for (int j = 0; j < nj; j++)
        for (int d = 0; d < D; d++) dst[d * kt + j] = src[(int64_t)j * ld + d];
}

/* Copies n rows of D floats (source rows ld apart) into a dense [n, D] tile. Rows of q, k, v are
 * Hq*D or Hkv*D floats apart, a power-of-two stride that maps every row of a tile onto the same few L1
 * sets; dense copies keep the tile products in L1. */
static void copy_rows(float *restrict dst, const float *restrict src, int64_t ld, int n, int D) {
    for (int i = 0; i < n; i++) memcpy(dst + (int64_t)i * D, src + i * ld, sizeof(float) * (size_t)D);
}

/* bf16 operands (dtype ZAYA_DTYPE_BF16): rows of an f32 tile rounded to bf16 values in place. */
static void round_rows(float *x, int64_t ld, int n, int m) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) x[i * ld + j] = zaya_bf16_to_f32(zaya_f32_to_bf16(x[i * ld + j]));
}

/* Number of keys (from the tile start j0) that query position p may see within a tile of nj keys. */
static inline int causal_valid(int64_t p, int64_t j0, int nj) {
    int64_t v = p - j0 + 1;
    return v <= 0 ? 0 : (v >= nj ? nj : (int)v);
}

/* Where one task's rows live. Query heads of a group are consecutive, so head g of the task is at
 * +g*D in q/out rows and +g*lse_head in lse. */
typedef struct fwd_task {
    float *out, *lse;     /* lse may be NULL */
    const float *q;       /* first head of the task, first row */
    const float *k, *v;   /* the KV head, position 0 */
    int64_t ldq, ldkv;    /* row strides of q/out and of k/v */
    int64_t lse_row, lse_head;
    int64_t pos0;         /* absolute position of the first row */
    int ni, nh, D;        /* rows, heads, head_dim */
    int rnd;              /* bf16 operands: q, k, v and P rounded before their products */
    float scale;
} fwd_task;

/* Attention for rows at positions pos0 .. pos0+ni-1 of nh query heads sharing one KV head, against
 * keys [0, pos0 + ni). Each key tile is packed once and used by every head of the task. */
static void forward_task(const fwd_task *t) {
    _Alignas(64) float kt[MAXD * FWD_KT], vc[FWD_KT * MAXD];
    _Alignas(64) float s[FWD_QT * FWD_KT];
    _Alignas(64) float qc[FWD_HEADS][FWD_QT * MAXD], o[FWD_HEADS][FWD_QT * MAXD];
    float m[FWD_HEADS][FWD_QT], l[FWD_HEADS][FWD_QT];
    const int ni = t->ni, D = t->D;
    const float scale = t->scale;
    for (int g = 0; g < t->nh; g++) {
        copy_rows(qc[g], t->q + g * D, t->ldq, ni, D);
        if (t->rnd) round_rows(qc[g], D, ni, D);
        memset(o[g], 0, sizeof(float) * (size_t)ni * (size_t)D);
        for (int i = 0; i < ni; i++) m[g][i] = -INFINITY, l[g][i] = 0.0f;
    }
    /* A decode step has a row or two per head: packing the key tile would cost more than the products,
     * so scores come from dot products against the key rows in place. */
    const int direct = ni <= FWD_DIRECT_ROWS && !t->rnd;
    const int64_t kend = t->pos0 + ni;
    for (int64_t j0 = 0; j0 < kend; j0 += FWD_KT) {
        const int nj = (int)(kend - j0 < FWD_KT ? kend - j0 : FWD_KT);
        const float *kj0 = t->k + j0 * t->ldkv, *vj0 = t->v + j0 * t->ldkv;
        if (direct) { /* scores of every head at once: head g's rows start at s + g*ni*KT */
            const float *qr[FWD_HEADS * FWD_DIRECT_ROWS];
            for (int g = 0; g < t->nh; g++)
                for (int i = 0; i < ni; i++) qr[g * ni + i] = qc[g] + i * D;
            dot_scores(s, FWD_KT, qr, t->nh * ni, kj0, t->ldkv, nj, D);
        } else {
            pack_transposed(kt, FWD_KT, kj0, t->ldkv, nj, D);
            copy_rows(vc, vj0, t->ldkv, nj, D);
            if (t->rnd) round_rows(kt, FWD_KT, D, nj), round_rows(vc, D, nj, D);
        }
        for (int g = 0; g < t->nh; g++) {
            float *const sg = direct ? s + g * ni * FWD_KT : s;
            if (!direct) gemm_tile(s, FWD_KT, qc[g], D, 1, kt, FWD_KT, ni, nj, D, 0);
            for (int i = 0; i < ni; i++) {
                float *si = sg + i * FWD_KT;
                const int valid = causal_valid(t->pos0 + i, j0, nj);
                if (valid == 0) {
                    memset(si, 0, sizeof(float) * (size_t)nj);
                    continue;
                }
                /* scale > 0, so max(scale * s) = scale * max(s). */
                const float mx = row_max(si, valid) * scale;
                const float mnew = mx > m[g][i] ? mx : m[g][i];
                const float alpha = exp_nonpos(m[g][i] - mnew); /* 0 on the first tile (m = -inf) */
                const float sum = row_exp_sum(si, valid, scale, mnew);
                for (int j = valid; j < nj; j++) si[j] = 0.0f;
                l[g][i] = l[g][i] * alpha + sum;
                m[g][i] = mnew;
                if (alpha != 1.0f)
                    for (int d = 0; d < D; d++) o[g][i * D + d] *= alpha;
            }
            if (t->rnd) round_rows(sg, FWD_KT, ni, nj); /* P rounded after its row sums are taken */
            gemm_tile(o[g], D, sg, FWD_KT, 1, direct ? vj0 : vc, direct ? t->ldkv : D, ni, D, nj, 1);
        }
    }
    for (int g = 0; g < t->nh; g++)
        for (int i = 0; i < ni; i++) {
            const float inv = 1.0f / l[g][i];
            float *out = t->out + i * t->ldq + g * D;
            for (int d = 0; d < D; d++) out[d] = o[g][i * D + d] * inv;
            if (t->lse) t->lse[i * t->lse_row + g * t->lse_head] = m[g][i] + logf(l[g][i]);
        }
}

static void check_args(int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    ZAYA_ASSERT(Hq > 0 && Hkv > 0 && Hq % Hkv == 0);
    ZAYA_ASSERT(D > 0 && D <= MAXD);
    ZAYA_ASSERT(scale > 0.0f); /* the row max is taken before scaling */
}

static void forward_chunk(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B, int64_t Tq,
                          int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale, int rnd) {
    check_args(Hq, Hkv, D, scale);
    ZAYA_ASSERT(q0 >= 0 && q0 + Tq <= Tkv);
    if (B <= 0 || Tq <= 0) return;
    const int64_t ntiles = (Tq + FWD_QT - 1) / FWD_QT, group = Hq / Hkv;
    const int64_t chunks = (group + FWD_HEADS - 1) / FWD_HEADS; /* head chunks per KV head */
    const int64_t per_tile = B * Hkv * chunks, ntasks = per_tile * ntiles;
    /* Later query tiles cost more (causal): hand them out first. */
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < ntasks; task++) {
        const int64_t tile = ntiles - 1 - task / per_tile, rest = task % per_tile;
        const int64_t b = rest / (Hkv * chunks), hk = rest / chunks % Hkv, chunk = rest % chunks;
        const int64_t h = hk * group + chunk * FWD_HEADS, i0 = tile * FWD_QT;
        const int64_t qoff = ((b * Tq + i0) * Hq + h) * D, kvoff = (b * Tkv * Hkv + hk) * D;
        const fwd_task t = {.out = out + qoff, .lse = lse ? lse + (b * Hq + h) * Tq + i0 : NULL, .q = q + qoff,
                            .k = k + kvoff, .v = v + kvoff, .ldq = Hq * D, .ldkv = Hkv * D, .lse_row = 1,
                            .lse_head = Tq, .pos0 = q0 + i0, .ni = (int)(Tq - i0 < FWD_QT ? Tq - i0 : FWD_QT),
                            .nh = (int)(group - chunk * FWD_HEADS < FWD_HEADS ? group - chunk * FWD_HEADS : FWD_HEADS),
                            .D = (int)D, .rnd = rnd, .scale = scale};
        forward_task(&t);
    }
}

/* ---- which kernel the bf16 calls run ---- */

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

static int amx_host(void) {
#if defined(__x86_64__) && defined(SYS_arch_prctl)
    if (!zaya_attention_amx_built()) return 0;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    const int avx512 = (b >> 16 & 1) && (b >> 30 & 1), amx = (d >> 22 & 1) && (d >> 24 & 1);
    if (!avx512 || !amx || !__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a >> 5 & 1)) return 0; /* AVX512-BF16 */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1)) return 0;                              /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xe6u) != 0xe6u) return 0; /* SSE, AVX and AVX-512 state enabled */
    /* Linux hands out the tile data state on request (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). */
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return 0;
#endif
}

static int amx_state = -1; /* -1 not probed yet; written once, by the first caller */
static int force_portable;

static int use_amx(int64_t D) {
    int st = __atomic_load_n(&amx_state, __ATOMIC_ACQUIRE);
    if (st < 0) {
        const char *e = getenv("ZAYA_ATTENTION_BF16");
        st = e && strcmp(e, "portable") == 0 ? 0 : amx_host();
        __atomic_store_n(&amx_state, st, __ATOMIC_RELEASE);
    }
    return st && !__atomic_load_n(&force_portable, __ATOMIC_RELAXED) && D % 32 == 0;
}

const char *zaya_attention_bf16_impl(int64_t D) { return use_amx(D) ? "amx" : "portable"; }

void zaya_attention_bf16_force_portable(int on) { __atomic_store_n(&force_portable, on != 0, __ATOMIC_RELAXED); }

void zaya_attention_forward_chunk(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                                  int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    forward_chunk(out, lse, q, k, v, B, Tq, Tkv, q0, Hq, Hkv, D, scale, 0);
}

void zaya_attention_forward_dtype(zaya_dtype dtype, float *out, float *lse, const float *q, const float *k,
                                  const float *v, int64_t B, int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq,
                                  int64_t Hkv, int64_t D, float scale) {
    const int bf16 = dtype == ZAYA_DTYPE_BF16;
    if (bf16) {
        check_args(Hq, Hkv, D, scale);
        ZAYA_ASSERT(q0 >= 0 && q0 + Tq <= Tkv);
        if (use_amx(D) && zaya_attention_amx_forward(out, lse, q, k, v, B, Tq, Tkv, q0, Hq, Hkv, D, scale)) return;
    }
    forward_chunk(out, lse, q, k, v, B, Tq, Tkv, q0, Hq, Hkv, D, scale, bf16);
}

void zaya_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                            int64_t T, int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    zaya_attention_forward_chunk(out, lse, q, k, v, B, T, T, 0, Hq, Hkv, D, scale);
}

void zaya_attention_decode(float *out, float *lse, const float *q, const float *const *k_cache,
                           const float *const *v_cache, const int64_t *pos, const int64_t *n_rows, int64_t nseq,
                           int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    check_args(Hq, Hkv, D, scale);
    int64_t max_tiles = 0;
    for (int64_t s = 0; s < nseq; s++) {
        ZAYA_ASSERT(pos[s] >= 0 && n_rows[s] >= 0);
        const int64_t t = (n_rows[s] + FWD_QT - 1) / FWD_QT;
        max_tiles = t > max_tiles ? t : max_tiles;
    }
    /* One task per (sequence, head chunk, row tile); decode steps (one row) still get Hkv * chunks
     * tasks per sequence. */
    const int64_t group = Hq / Hkv, chunks = (group + FWD_HEADS - 1) / FWD_HEADS;
    const int64_t per_seq = Hkv * chunks * max_tiles, ntasks = nseq * per_seq;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < ntasks; task++) {
        const int64_t s = task / per_seq, hc = task % per_seq / max_tiles, tile = task % max_tiles;
        const int64_t hk = hc / chunks, chunk = hc % chunks, h = hk * group + chunk * FWD_HEADS;
        const int64_t i0 = tile * FWD_QT;
        if (i0 >= n_rows[s]) continue;
        int64_t row0 = 0; /* rows of earlier sequences; nseq is small at decode time */
        for (int64_t p = 0; p < s; p++) row0 += n_rows[p];
        const int64_t qoff = ((row0 + i0) * Hq + h) * D;
        const fwd_task t = {.out = out + qoff, .lse = lse ? lse + (row0 + i0) * Hq + h : NULL, .q = q + qoff,
                            .k = k_cache[s] + hk * D, .v = v_cache[s] + hk * D, .ldq = Hq * D, .ldkv = Hkv * D,
                            .lse_row = Hq, .lse_head = 1, .pos0 = pos[s] + i0,
                            .ni = (int)(n_rows[s] - i0 < FWD_QT ? n_rows[s] - i0 : FWD_QT),
                            .nh = (int)(group - chunk * FWD_HEADS < FWD_HEADS ? group - chunk * FWD_HEADS : FWD_HEADS),
                            .D = (int)D, .scale = scale};
        forward_task(&t);
    }
}

/* ---- Backward ---- */

/* Shared view of one (batch, query head, kv head) slice for the backward tiles. */
typedef struct bwd_view {
    const float *q, *dout, *out, *lse; /* q/dout/out rows ldq apart; lse contiguous over positions */
    const float *k, *v;                /* rows ldkv apart */
    float *dq;                         /* rows ldq apart */
    int64_t ldq, ldkv, T; /* T: query rows */
    int64_t q0;           /* position of query row 0 (keys are indexed by position) */
    int D;
    int rnd; /* bf16 operands: q, k, v, dout, P and dS rounded before their products */
    float scale;
} bwd_view;

/* For query rows [i0, i0+ni) (qc, dc: dense copies of q and dout) against keys [j0, j0+nj) (kt, vt
 * packed): writes P into p[ni, KT] and dS = scale * P * (dP - Delta) into ds[ni, KT], zero where masked. */
static void bwd_scores(float *restrict p, float *restrict ds, const bwd_view *w, const float *qc, const float *dc,
                       const float *kt, const float *vt, int64_t i0, int ni, int64_t j0, int nj) {
    const int D = w->D;
    const float *out = w->out + i0 * w->ldq;
    gemm_tile(p, BWD_KT, qc, D, 1, kt, BWD_KT, ni, nj, D, 0);
    gemm_tile(ds, BWD_KT, dc, D, 1, vt, BWD_KT, ni, nj, D, 0);
    for (int i = 0; i < ni; i++) {
        /* Delta_i = dout_i . out_i = sum_j P_ij dP_ij, recomputed per tile: O(D) next to O(KT*D). */
        const float delta = row_dot(w->rnd ? w->dout + (i0 + i) * w->ldq : dc + i * D, out + i * w->ldq, D);
        const int valid = causal_valid(w->q0 + i0 + i, j0, nj);
        float *pi = p + i * BWD_KT, *dsi = ds + i * BWD_KT;
        row_exp_sum(pi, valid, w->scale, w->lse[i0 + i]);
        for (int j = 0; j < valid; j++) dsi[j] = w->scale * pi[j] * (dsi[j] - delta);
        for (int j = valid; j < nj; j++) pi[j] = 0.0f, dsi[j] = 0.0f;
    }
    if (w->rnd) round_rows(p, BWD_KT, ni, nj), round_rows(ds, BWD_KT, ni, nj);
}

/* The view of query head g of a group, given the view of the group's first head: query heads of a
 * group are consecutive, so q/dout/out/dq move by g*D within a row and lse by g*T. */
static bwd_view head_view(const bwd_view *w0, int64_t g) {
    bwd_view w = *w0;
    w.q += g * w.D, w.dout += g * w.D, w.out += g * w.D, w.dq += g * w.D, w.lse += g * w.T;
    return w;
}

/* dk, dv rows [j0, j0+nj) of one KV head, summed over its `group` query heads (w0 = the first). With
 * fuse_dq, the same tiles also accumulate dq (the caller owns every query head of the group). */
static void bwd_kv_tile(float *dk, float *dv, const bwd_view *w0, int64_t group, int64_t j0, int nj, int fuse_dq) {
    _Alignas(64) float kt[MAXD * BWD_KT], vt[MAXD * BWD_KT], kc[BWD_KT * MAXD];
    _Alignas(64) float dk_acc[BWD_KT * MAXD], dv_acc[BWD_KT * MAXD];
    _Alignas(64) float qc[BWD_QT * MAXD], dc[BWD_QT * MAXD];
    _Alignas(64) float p[BWD_QT * BWD_KT], ds[BWD_QT * BWD_KT];
    const int D = w0->D;
    const int64_t ldkv = w0->ldkv, T = w0->T;
    pack_transposed(kt, BWD_KT, w0->k + j0 * ldkv, ldkv, nj, D);
    pack_transposed(vt, BWD_KT, w0->v + j0 * ldkv, ldkv, nj, D);
    if (fuse_dq) copy_rows(kc, w0->k + j0 * ldkv, ldkv, nj, D);
    if (w0->rnd) round_rows(kt, BWD_KT, D, nj), round_rows(vt, BWD_KT, D, nj), round_rows(kc, D, fuse_dq ? nj : 0, D);
    memset(dk_acc, 0, sizeof(float) * (size_t)nj * (size_t)D);
    memset(dv_acc, 0, sizeof(float) * (size_t)nj * (size_t)D);
    for (int64_t g = 0; g < group; g++) {
        const bwd_view wg = head_view(w0, g), *w = &wg;
        const int64_t first = j0 > w->q0 ? j0 - w->q0 : 0; /* the first query row that sees key j0 */
        for (int64_t i0 = first / BWD_QT * BWD_QT; i0 < T; i0 += BWD_QT) {
            const int ni = (int)(T - i0 < BWD_QT ? T - i0 : BWD_QT);
            copy_rows(qc, w->q + i0 * w->ldq, w->ldq, ni, D);
            copy_rows(dc, w->dout + i0 * w->ldq, w->ldq, ni, D);
            if (w->rnd) round_rows(qc, D, ni, D), round_rows(dc, D, ni, D);
            bwd_scores(p, ds, w, qc, dc, kt, vt, i0, ni, j0, nj);
            /* P^T and dS^T are read in place through the strides of A. */
            gemm_tile(dv_acc, D, p, 1, BWD_KT, dc, D, nj, D, ni, 1);
            gemm_tile(dk_acc, D, ds, 1, BWD_KT, qc, D, nj, D, ni, 1);
            if (fuse_dq) gemm_tile(w->dq + i0 * w->ldq, w->ldq, ds, BWD_KT, 1, kc, D, ni, D, nj, 1);
        }
    }
    for (int j = 0; j < nj; j++) {
        memcpy(dk + (j0 + j) * ldkv, dk_acc + j * D, sizeof(float) * (size_t)D);
        memcpy(dv + (j0 + j) * ldkv, dv_acc + j * D, sizeof(float) * (size_t)D);
    }
}

/* dq rows [i0, i0+ni) of one query head: streams over the key tiles up to the causal limit, last tile
 * first: the order in which the fused pass (bwd_kv_tile with fuse_dq) adds the tiles into dq, so that
 * which pass runs (it depends on the thread count) does not change a bit. */
static void bwd_q_tile(const bwd_view *w, int64_t i0, int ni) {
    _Alignas(64) float kt[MAXD * BWD_KT], vt[MAXD * BWD_KT], kc[BWD_KT * MAXD];
    _Alignas(64) float dq_acc[BWD_QT * MAXD], qc[BWD_QT * MAXD], dc[BWD_QT * MAXD];
    _Alignas(64) float p[BWD_QT * BWD_KT], ds[BWD_QT * BWD_KT];
    const int D = w->D;
    memset(dq_acc, 0, sizeof(float) * (size_t)ni * (size_t)D);
    copy_rows(qc, w->q + i0 * w->ldq, w->ldq, ni, D);
    copy_rows(dc, w->dout + i0 * w->ldq, w->ldq, ni, D);
    if (w->rnd) round_rows(qc, D, ni, D), round_rows(dc, D, ni, D);
    const int64_t kend = w->q0 + i0 + ni;
    for (int64_t j0 = (kend - 1) / BWD_KT * BWD_KT; j0 >= 0; j0 -= BWD_KT) {
        const int nj = (int)(kend - j0 < BWD_KT ? kend - j0 : BWD_KT);
        pack_transposed(kt, BWD_KT, w->k + j0 * w->ldkv, w->ldkv, nj, D);
        pack_transposed(vt, BWD_KT, w->v + j0 * w->ldkv, w->ldkv, nj, D);
        copy_rows(kc, w->k + j0 * w->ldkv, w->ldkv, nj, D);
        if (w->rnd) round_rows(kt, BWD_KT, D, nj), round_rows(vt, BWD_KT, D, nj), round_rows(kc, D, nj, D);
        bwd_scores(p, ds, w, qc, dc, kt, vt, i0, ni, j0, nj);
        gemm_tile(dq_acc, D, ds, BWD_KT, 1, kc, D, ni, D, nj, 1);
    }
    for (int i = 0; i < ni; i++) memcpy(w->dq + (i0 + i) * w->ldq, dq_acc + i * D, sizeof(float) * (size_t)D);
}

static bwd_view make_view(float *dq, const float *dout, const float *q, const float *k, const float *v,
                          const float *out, const float *lse, int64_t b, int64_t h, int64_t Tq, int64_t Tkv,
                          int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale, int rnd) {
    const int64_t hk = h / (Hq / Hkv), qoff = (b * Tq * Hq + h) * D, kvoff = (b * Tkv * Hkv + hk) * D;
    return (bwd_view){.q = q + qoff, .dout = dout + qoff, .out = out + qoff, .lse = lse + (b * Hq + h) * Tq,
                      .k = k + kvoff, .v = v + kvoff, .dq = dq + qoff, .ldq = Hq * D, .ldkv = Hkv * D, .T = Tq,
                      .q0 = q0, .D = (int)D, .rnd = rnd, .scale = scale};
}

static void backward_chunk(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                           const float *v, const float *out, const float *lse, int64_t B, int64_t Tq, int64_t Tkv,
                           int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale, int rnd) {
    check_args(Hq, Hkv, D, scale);
    ZAYA_ASSERT(q0 >= 0 && q0 + Tq <= Tkv);
    if (B <= 0 || Tq <= 0) return;
    /* keys past the last query's position get no gradient */
    const int64_t Tk = q0 + Tq, group = Hq / Hkv, nkt = (Tk + BWD_KT - 1) / BWD_KT;
    if (Tk < Tkv)
        for (int64_t b = 0; b < B; b++) {
            memset(dk + (b * Tkv + Tk) * Hkv * D, 0, sizeof(float) * (size_t)((Tkv - Tk) * Hkv * D));
            memset(dv + (b * Tkv + Tk) * Hkv * D, 0, sizeof(float) * (size_t)((Tkv - Tk) * Hkv * D));
        }
    /* When every thread gets whole (batch, kv head) slices, one pass computes dq, dk and dv together:
     * the slice owns its query heads' dq, so nothing races and P, dP are computed once (5 tile
     * products per pair instead of 7 with a separate dq pass). */
    const int threads = omp_get_max_threads();
    const int fuse = (B * Hkv) % threads == 0 || B * Hkv >= 4 * threads;
    if (fuse) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t bk = 0; bk < B * Hkv; bk++) {
            const int64_t b = bk / Hkv, hk = bk % Hkv;
            const bwd_view w0 = make_view(dq, dout, q, k, v, out, lse, b, hk * group, Tq, Tkv, q0, Hq, Hkv, D, scale, rnd);
            for (int64_t t = 0; t < Tq; t++) memset(w0.dq + t * Hq * D, 0, sizeof(float) * (size_t)(group * D));
            const int64_t kvoff = (b * Tkv * Hkv + hk) * D;
            for (int64_t jt = nkt - 1; jt >= 0; jt--) {
                const int64_t j0 = jt * BWD_KT;
                bwd_kv_tile(dk + kvoff, dv + kvoff, &w0, group, j0, (int)(Tk - j0 < BWD_KT ? Tk - j0 : BWD_KT), 1);
            }
        }
        return;
    }
    /* Otherwise: dk/dv over (batch, kv head, key tile), then dq over (batch, query head, query tile). */
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < B * Hkv * nkt; task++) {
        const int64_t jt = task / (B * Hkv), bk = task % (B * Hkv), b = bk / Hkv, hk = bk % Hkv;
        const bwd_view w0 = make_view(dq, dout, q, k, v, out, lse, b, hk * group, Tq, Tkv, q0, Hq, Hkv, D, scale, rnd);
        const int64_t j0 = jt * BWD_KT, kvoff = (b * Tkv * Hkv + hk) * D;
        bwd_kv_tile(dk + kvoff, dv + kvoff, &w0, group, j0, (int)(Tk - j0 < BWD_KT ? Tk - j0 : BWD_KT), 0);
    }
    const int64_t nqt = (Tq + BWD_QT - 1) / BWD_QT;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < B * Hq * nqt; task++) {
        const int64_t it = nqt - 1 - task / (B * Hq), bh = task % (B * Hq), b = bh / Hq, h = bh % Hq;
        const bwd_view w = make_view(dq, dout, q, k, v, out, lse, b, h, Tq, Tkv, q0, Hq, Hkv, D, scale, rnd);
        const int64_t i0 = it * BWD_QT;
        bwd_q_tile(&w, i0, (int)(Tq - i0 < BWD_QT ? Tq - i0 : BWD_QT));
    }
}

void zaya_attention_backward_chunk(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                                   const float *v, const float *out, const float *lse, int64_t B, int64_t Tq,
                                   int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    backward_chunk(dq, dk, dv, dout, q, k, v, out, lse, B, Tq, Tkv, q0, Hq, Hkv, D, scale, 0);
}

void zaya_attention_backward_dtype(zaya_dtype dtype, float *dq, float *dk, float *dv, const float *dout,
                                   const float *q, const float *k, const float *v, const float *out, const float *lse,
                                   int64_t B, int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D,
                                   float scale) {
    const int bf16 = dtype == ZAYA_DTYPE_BF16;
    if (bf16) {
        check_args(Hq, Hkv, D, scale);
        ZAYA_ASSERT(q0 >= 0 && q0 + Tq <= Tkv);
        if (use_amx(D) &&
            zaya_attention_amx_backward(dq, dk, dv, dout, q, k, v, out, lse, B, Tq, Tkv, q0, Hq, Hkv, D, scale))
            return;
    }
    backward_chunk(dq, dk, dv, dout, q, k, v, out, lse, B, Tq, Tkv, q0, Hq, Hkv, D, scale, bf16);
}

void zaya_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                             const float *v, const float *out, const float *lse, int64_t B, int64_t T, int64_t Hq,
                             int64_t Hkv, int64_t D, float scale) {
    zaya_attention_backward_chunk(dq, dk, dv, dout, q, k, v, out, lse, B, T, T, 0, Hq, Hkv, D, scale);
}
