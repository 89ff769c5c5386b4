/* bf16 causal GQA attention on the AMX tile unit (TDPBF16PS: 16 x 16 f32 += 16 x 32 bf16 . 32 x 16 bf16).
 *
 * Everything is computed transposed, keys down the rows and queries along the columns:
 *   S^T  = K Q^T          dP^T = V dO^T                       (A: K, V rows as stored)
 *   O^T += V^T P^T        dQ^T += K^T dS^T                    (A: V^T, K^T packed once per call)
 *   dV  += P^T dO         dK  += dS^T Q                       (A: P^T, dS^T as the tiles produce them)
 * so every A operand is row-major with its reduction index contiguous, every B operand is a pair
 * interleave of two rows (the tile unit's VNNI layout), and the softmax statistics of one query are a
 * vector lane: the column max, sum and rescale run 16 queries per instruction. The operands are packed
 * to bf16 once per call into a workspace kept by this file (grown to the largest call, never freed
 * while the process runs); per task only the 32 x 32 score block is converted.
 *
 * The arithmetic is that of the f32 kernel with its product operands rounded to bf16: the same exp
 * (same operations in the same order), the same online-softmax update, P summed in f32 before it is
 * rounded, Delta = dout . out in f32. Only the order of the f32 accumulations inside the products
 * differs. Work splits over (batch, query head, query block) forward and (batch, KV head) backward,
 * each task's arithmetic independent of the thread count. */
#include "attention_amx.h"

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__) && defined(__AVX512BW__)

#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "zaya/attention.h"

#define BLK 32 /* query and key block: 2 x 2 tiles of 16 x 16 */
/* Keys per online-softmax step of the forward: two blocks. The running max (against which P is
 * rounded) then moves at the same key positions as in the portable kernel's and the CUDA backend's
 * 64-key tiles, so the three round the same P. */
#define FKT 64
#define MAXD ZAYA_ATTENTION_MAX_HEAD_DIM

int zaya_attention_amx_built(void) { return 1; }

/* ---- tiles ---- */

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Every tile 16 rows x 64 bytes: an A tile (16 x 32 bf16), a B tile (16 pair rows x 16 columns) and a
 * C tile (16 x 16 f32) alike. The configuration is per thread. */
static void tiles_on(void) {
    tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) c.rows[t] = 16, c.colsb[t] = 64;
    _tile_loadconfig(&c);
}

/* st[32][32] = A[32 rows][D] . Bv, A bf16 rows lda elements apart, Bv the VNNI pairs [D/2][ldb/2][2]
 * of 32 columns (pair row p at bv + p * ldb). */
static void block_product(float *st, const uint16_t *a, int64_t lda, const uint16_t *bv, int64_t ldb, int D) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int c = 0; c < D / 32; c++) {
        _tile_loadd(4, a + c * 32, lda * 2);
        _tile_loadd(5, a + 16 * lda + c * 32, lda * 2);
        _tile_loadd(6, bv + (int64_t)c * 16 * ldb, ldb * 2);
        _tile_loadd(7, bv + (int64_t)c * 16 * ldb + 32, ldb * 2);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, st, BLK * 4);
    _tile_stored(1, st + 16, BLK * 4);
    _tile_stored(2, st + 16 * BLK, BLK * 4);
    _tile_stored(3, st + 16 * BLK + 16, BLK * 4);
}

/* C[32 rows][D] (f32, rows ldc apart) += A[32][32] (bf16 natural, 32 apart) . Bv (VNNI pairs of 32
 * rows: pair row p at bv + p * ldb, D columns). */
static void acc_rows(float *c, int64_t ldc, const uint16_t *a, const uint16_t *bv, int64_t ldb, int D) {
    _tile_loadd(4, a, BLK * 2);
    _tile_loadd(5, a + 16 * BLK, BLK * 2);
    for (int n = 0; n < D / 16; n++) {
        _tile_loadd(0, c + n * 16, ldc * 4);
        _tile_loadd(1, c + 16 * ldc + n * 16, ldc * 4);
        _tile_loadd(6, bv + n * 32, ldb * 2);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 5, 6);
        _tile_stored(0, c + n * 16, ldc * 4);
        _tile_stored(1, c + 16 * ldc + n * 16, ldc * 4);
    }
}

/* C^T[D][32] (f32, rows ldc apart) += A[D][32] (bf16 rows lda apart) . Pv (VNNI pairs [16][32][2]). */
static void acc_cols(float *c, int64_t ldc, const uint16_t *a, int64_t lda, const uint16_t *pv, int D) {
    _tile_loadd(6, pv, BLK * 4);
    _tile_loadd(7, pv + 32, BLK * 4);
    for (int n = 0; n < D / 16; n++) {
        _tile_loadd(0, c + (int64_t)n * 16 * ldc, ldc * 4);
        _tile_loadd(1, c + (int64_t)n * 16 * ldc + 16, ldc * 4);
        _tile_loadd(4, a + (int64_t)n * 16 * lda, lda * 2);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_stored(0, c + (int64_t)n * 16 * ldc, ldc * 4);
        _tile_stored(1, c + (int64_t)n * 16 * ldc + 16, ldc * 4);
    }
}

/* C^T[D][32] += A[D][64] . Pv (VNNI pairs [32][32][2]): two key chunks per load of the accumulators.
 * Tiles: C 0-1, A 4-5, B 6-7 (chunk 0) and 2-3 (chunk 1). */
static void acc_cols2(float *c, int64_t ldc, const uint16_t *a, int64_t lda, const uint16_t *pv, int D) {
    _tile_loadd(6, pv, BLK * 4);
    _tile_loadd(7, pv + 32, BLK * 4);
    _tile_loadd(2, pv + 16 * 2 * BLK, BLK * 4);
    _tile_loadd(3, pv + 16 * 2 * BLK + 32, BLK * 4);
    for (int n = 0; n < D / 16; n++) {
        float *cn = c + (int64_t)n * 16 * ldc;
        const uint16_t *an = a + (int64_t)n * 16 * lda;
        _tile_loadd(0, cn, ldc * 4);
        _tile_loadd(1, cn + 16, ldc * 4);
        _tile_loadd(4, an, lda * 2);
        _tile_loadd(5, an + BLK, lda * 2);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(0, 5, 2);
        _tile_dpbf16ps(1, 5, 3);
        _tile_stored(0, cn, ldc * 4);
        _tile_stored(1, cn + 16, ldc * 4);
    }
}

/* ---- conversions (round to nearest even, as zaya_f32_to_bf16 for every normal value; the instruction
 * reads f32 denormals as zero, and the tile unit does the same with bf16 denormal operands) ---- */

static inline __m256i bf16x16(__m512 x) { return (__m256i)_mm512_cvtneps_pbh(x); }

/* dst[0..n) = bf16(src[0..n)), n a multiple of 16 */
static void to_bf16(uint16_t *dst, const float *src, int n) {
    for (int i = 0; i < n; i += 16) _mm256_storeu_si256((__m256i *)(dst + i), bf16x16(_mm512_loadu_ps(src + i)));
}

/* dst[2c] = bf16(r0[c]), dst[2c + 1] = bf16(r1[c]) for c < n (n a multiple of 16): one VNNI pair row.
 * r1 == NULL pairs with zeros. */
static void pair_rows(uint16_t *dst, const float *r0, const float *r1, int n) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (int c = 0; c < n; c += 16) {
        const __m512 a = _mm512_loadu_ps(r0 + c), b = r1 ? _mm512_loadu_ps(r1 + c) : _mm512_setzero_ps();
        const __m512i lo_hi = (__m512i)_mm512_cvtne2ps_pbh(b, a); /* a in lanes 0..15, b in 16..31 */
        _mm512_storeu_si512(dst + 2 * c, _mm512_permutexvar_epi16(idx, lo_hi));
    }
}

/* ---- the f32 kernel's exp, 16 lanes: the same operations in the same order ---- */

static inline __m512 exp_nonpos16(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.0f), hi = _mm512_set1_ps(88.0f);
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi); /* max returns lo for a NaN x, as the scalar clamp */
    __m512 t = _mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)), magic);
    __m512 n = _mm512_sub_ps(t, magic);
    __m512 r = _mm512_sub_ps(_mm512_sub_ps(xc, _mm512_mul_ps(n, _mm512_set1_ps(0.693145751953125f))),
                             _mm512_mul_ps(n, _mm512_set1_ps(1.42860682030941723e-6f)));
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(0.5f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f));
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
    __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x, y);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), y, _mm512_setzero_ps());
}

/* ---- workspace ---- */

static pthread_mutex_t ws_lock = PTHREAD_MUTEX_INITIALIZER;
static void *ws_mem;
static size_t ws_size;

/* Returns the workspace of at least n bytes (64-byte aligned) with ws_lock held, or NULL (lock not
 * held) when it cannot be allocated. */
static void *ws_take(size_t n) {
    pthread_mutex_lock(&ws_lock);
    if (n > ws_size) {
        free(ws_mem);
        ws_size = 0;
        ws_mem = aligned_alloc(64, (n + 63) / 64 * 64);
        if (!ws_mem) {
            pthread_mutex_unlock(&ws_lock);
            return NULL;
        }
        ws_size = n;
    }
    return ws_mem;
}

static inline int64_t up32(int64_t n) { return (n + 31) / 32 * 32; }

/* Carves n elements of size sz from *p (64-byte steps). */
static void *carve(char **p, int64_t n, size_t sz) {
    void *r = *p;
    *p += ((size_t)n * sz + 63) / 64 * 64;
    return r;
}

/* Sum of the bytes carve hands out for n elements of size sz. */
static size_t carved(int64_t n, size_t sz) { return ((size_t)n * sz + 63) / 64 * 64; }

/* ---- packing, once per call ---- */

/* Rows 0..n-1 of one head (rows ld floats apart) as bf16 rows of D, zero rows up to np. */
static void pack_rows(uint16_t *dst, const float *src, int64_t ld, int64_t n, int64_t np, int D) {
    for (int64_t t = 0; t < n; t++) to_bf16(dst + t * D, src + t * ld, D);
    memset(dst + n * D, 0, sizeof(uint16_t) * (size_t)((np - n) * D));
}

/* rows [t0, t0 + cnt) of one head as dense bf16 rows of D (zero past n) */
static void stage_rows(uint16_t *rows, const float *src, int64_t ld, int64_t t0, int cnt, int64_t n, int D) {
    for (int r = 0; r < cnt; r++) {
        if (t0 + r < n) to_bf16(rows + r * D, src + (t0 + r) * ld, D);
        else memset(rows + r * D, 0, sizeof(uint16_t) * (size_t)D);
    }
}

/* Word offsets of 16 consecutive dense rows of D bf16 values (D / 2 words apart). */
static __m512i row_words(int D) {
    return _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                              _mm512_set1_epi32(D / 2));
}

/* dst[d][t] = bf16(src[t][d]) for t < n, zero up to np (a multiple of 32): the head transposed. 32 rows
 * at a time: word p of each row (channels 2p, 2p + 1) gathered, then split into its two channels. */
static void pack_transposed(uint16_t *dst, const float *src, int64_t ld, int64_t n, int64_t np, int D) {
    _Alignas(64) uint16_t rows[32 * MAXD], ie[32], io[32];
    for (int i = 0; i < 32; i++) ie[i] = (uint16_t)(i < 16 ? 2 * i : 32 + 2 * (i - 16)), io[i] = (uint16_t)(ie[i] + 1);
    const __m512i even = _mm512_loadu_si512(ie), odd = _mm512_loadu_si512(io), idx = row_words(D);
    for (int64_t t0 = 0; t0 < np; t0 += 32) {
        stage_rows(rows, src, ld, t0, 32, n, D);
        const int *w0 = (const int *)(const void *)rows, *w1 = (const int *)(const void *)(rows + 16 * D);
        for (int p = 0; p < D / 2; p++) {
            const __m512i a = _mm512_i32gather_epi32(idx, w0 + p, 4), b = _mm512_i32gather_epi32(idx, w1 + p, 4);
            _mm512_storeu_si512(dst + (int64_t)(2 * p) * np + t0, _mm512_permutex2var_epi16(a, even, b));
            _mm512_storeu_si512(dst + (int64_t)(2 * p + 1) * np + t0, _mm512_permutex2var_epi16(a, odd, b));
        }
    }
}

/* VNNI pairs with the pair index along d: dst[p][t] = (bf16 src[t][2p], bf16 src[t][2p+1]), zero for
 * t in [n, np). This is the B operand of products that reduce over d (S^T, dP^T): the transpose of the
 * rows' 32-bit words, 16 rows at a time by gathers. */
static void pack_pairs_d(uint16_t *dst, const float *src, int64_t ld, int64_t n, int64_t np, int D) {
    _Alignas(64) uint16_t rows[16 * MAXD];
    const __m512i idx = row_words(D);
    for (int64_t t0 = 0; t0 < np; t0 += 16) {
        stage_rows(rows, src, ld, t0, 16, n, D);
        const int *w = (const int *)(const void *)rows;
        for (int p = 0; p < D / 2; p++)
            _mm512_storeu_si512(dst + 2 * ((int64_t)p * np + t0), _mm512_i32gather_epi32(idx, w + p, 4));
    }
}

/* VNNI pairs with the pair index along t: dst[t/2][d][t%2] (B operand of dV, dK: reduce over queries). */
static void pack_pairs_t(uint16_t *dst, const float *src, int64_t ld, int64_t n, int64_t np, int D) {
    for (int64_t t = 0; t < np; t += 2) {
        if (t >= n) {
            memset(dst + t * D, 0, sizeof(uint16_t) * (size_t)(2 * D));
            continue;
        }
        pair_rows(dst + t * D, src + t * ld, t + 1 < n ? src + (t + 1) * ld : NULL, D);
    }
}

/* ---- forward ---- */

typedef struct {
    const uint16_t *kn, *vt, *qp; /* K rows [Tkp][D]; V^T [D][Tkp]; Q^T pairs [D/2][Tqp][2] */
    int64_t Tkp, Tqp;
    float *out, *lse; /* the head's first row / entry */
    int64_t ldo, pos0; /* out row stride; position of query 0 of the block */
    int nq, D;
    float scale;
} fwd_block;

static void forward_block(const fwd_block *f) {
    _Alignas(64) float ot[MAXD * BLK], st[FKT * BLK];
    _Alignas(64) uint16_t pv[FKT * BLK];
    const int D = f->D;
    const __m512 scale = _mm512_set1_ps(f->scale), ninf = _mm512_set1_ps(-INFINITY);
    __m512 m[2] = {ninf, ninf}, l[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    memset(ot, 0, sizeof(float) * (size_t)(D * BLK));
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const int64_t kend = f->pos0 + f->nq;
    for (int64_t j0 = 0; j0 < kend; j0 += FKT) {
        const int nr = j0 + BLK < kend ? FKT : BLK; /* a second block only where some key is visible */
        for (int r0 = 0; r0 < nr; r0 += BLK) /* st[key][query] */
            block_product(st + r0 * BLK, f->kn + (j0 + r0) * D, D, f->qp, f->Tqp * 2, D);
        for (int hf = 0; hf < 2; hf++) {
            const __m512i qi = _mm512_add_epi32(lane, _mm512_set1_epi32(hf * 16));
            const __mmask16 qok = _mm512_cmp_epi32_mask(qi, _mm512_set1_epi32(f->nq), _MM_CMPINT_LT);
            const __m512i qpos = _mm512_add_epi32(qi, _mm512_set1_epi32((int)(f->pos0 - j0)));
            __mmask16 vis[FKT];
            __m512 mx = ninf;
            for (int r = 0; r < nr; r++) {
                vis[r] = qok & _mm512_cmp_epi32_mask(qpos, _mm512_set1_epi32(r), _MM_CMPINT_NLT);
                mx = _mm512_mask_max_ps(mx, vis[r], mx, _mm512_loadu_ps(st + r * BLK + hf * 16));
            }
            mx = _mm512_mul_ps(mx, scale); /* scale > 0: max(scale s) = scale max(s) */
            const __m512 mnew = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(mx, m[hf], _CMP_GT_OQ), m[hf], mx);
            const __m512 sub =
                _mm512_mask_blend_ps(_mm512_cmp_ps_mask(mnew, ninf, _CMP_EQ_OQ), mnew, _mm512_setzero_ps());
            const __m512 alpha = exp_nonpos16(_mm512_sub_ps(m[hf], sub));
            __m512 sum = _mm512_setzero_ps();
            for (int r = 0; r < nr; r++) {
                float *s = st + r * BLK + hf * 16;
                const __m512 p = _mm512_maskz_mov_ps(
                    vis[r], exp_nonpos16(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(s), scale), sub)));
                _mm512_storeu_ps(s, p);
                sum = _mm512_add_ps(sum, p);
            }
            l[hf] = _mm512_add_ps(_mm512_mul_ps(l[hf], alpha), sum);
            m[hf] = mnew;
            for (int d = 0; d < D; d++) {
                float *o = ot + d * BLK + hf * 16;
                _mm512_storeu_ps(o, _mm512_mul_ps(_mm512_loadu_ps(o), alpha));
            }
        }
        for (int r = 0; r < nr; r += 2) pair_rows(pv + r * BLK, st + r * BLK, st + (r + 1) * BLK, BLK);
        if (nr == FKT) acc_cols2(ot, BLK, f->vt + j0, f->Tkp, pv, D);
        else acc_cols(ot, BLK, f->vt + j0, f->Tkp, pv, D);
    }
    _Alignas(64) float mm[BLK], ll[BLK];
    _mm512_storeu_ps(mm, m[0]), _mm512_storeu_ps(mm + 16, m[1]);
    _mm512_storeu_ps(ll, l[0]), _mm512_storeu_ps(ll + 16, l[1]);
    for (int c = 0; c < f->nq; c++) {
        const float inv = 1.0f / ll[c];
        float *o = f->out + c * f->ldo;
        for (int d = 0; d < D; d++) o[d] = ot[d * BLK + c] * inv;
        if (f->lse) f->lse[c] = mm[c] + logf(ll[c]);
    }
}

int zaya_attention_amx_forward(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                               int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    (void)Tkv;
    if (D % 32 != 0 || D > MAXD) return 0;
    if (B <= 0 || Tq <= 0) return 1;
    const int64_t G = Hq / Hkv, Tk = q0 + Tq, Tkp = up32(Tk), Tqp = up32(Tq);
    const int64_t nkv = B * Hkv, nq = B * Hq;
    const size_t need = carved(nkv * Tkp * D, 2) * 2 + carved(nq * Tqp * D, 2);
    char *p = ws_take(need);
    if (!p) return 0;
    uint16_t *kn = carve(&p, nkv * Tkp * D, 2), *vt = carve(&p, nkv * Tkp * D, 2);
    uint16_t *qp = carve(&p, nq * Tqp * D, 2);
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (int64_t bk = 0; bk < nkv; bk++) {
            const int64_t b = bk / Hkv, hk = bk % Hkv, off = (b * Tkv * Hkv + hk) * D;
            pack_rows(kn + bk * Tkp * D, k + off, Hkv * D, Tk, Tkp, (int)D);
            pack_transposed(vt + bk * Tkp * D, v + off, Hkv * D, Tk, Tkp, (int)D);
        }
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < nq; bh++) {
            const int64_t b = bh / Hq, h = bh % Hq;
            pack_pairs_d(qp + bh * Tqp * D, q + (b * Tq * Hq + h) * D, Hq * D, Tq, Tqp, (int)D);
        }
        tiles_on();
        const int64_t nblk = Tqp / BLK, ntask = nq * nblk;
#pragma omp for schedule(dynamic, 1)
        for (int64_t task = 0; task < ntask; task++) {
            const int64_t blk = nblk - 1 - task / nq, bh = task % nq, b = bh / Hq, h = bh % Hq, i0 = blk * BLK;
            const int64_t bk = b * Hkv + h / G;
            const fwd_block f = {.kn = kn + bk * Tkp * D, .vt = vt + bk * Tkp * D, .qp = qp + bh * Tqp * D + i0 * 2,
                                 .Tkp = Tkp, .Tqp = Tqp, .out = out + ((b * Tq + i0) * Hq + h) * D,
                                 .lse = lse ? lse + bh * Tq + i0 : NULL, .ldo = Hq * D, .pos0 = q0 + i0,
                                 .nq = (int)(Tq - i0 < BLK ? Tq - i0 : BLK), .D = (int)D, .scale = scale};
            forward_block(&f);
        }
        _tile_release();
    }
    pthread_mutex_unlock(&ws_lock);
    return 1;
}

/* ---- backward ---- */

typedef struct {
    const uint16_t *kn, *vn, *kt;         /* K, V rows [Tkp][D]; K^T [D][Tkp] (this KV head) */
    const uint16_t *const *qp, *const *dp; /* per query head: Q^T, dO^T pairs along d [D/2][Tqp][2] */
    const uint16_t *const *qv, *const *dv; /* per query head: Q, dO pairs along t [Tqp/2][D][2] */
    const float *const *delta, *const *lse; /* per query head [Tqp] */
    float *const *dqt;                    /* per query head: dQ^T [D][Tqp] */
    float *dk, *dvo;                      /* this KV head's dk, dv, rows ldkv apart */
    int64_t Tkp, Tqp, Tq, Tk, q0, ldkv;
    int G, D;
    float scale;
} bwd_head;

static void backward_kv(const bwd_head *w) {
    _Alignas(64) float dk_acc[BLK * MAXD], dv_acc[BLK * MAXD], st[BLK * BLK], dpt[BLK * BLK];
    _Alignas(64) uint16_t pn[BLK * BLK], dsn[BLK * BLK], dsv[BLK * BLK];
    const int D = w->D;
    const __m512 scale = _mm512_set1_ps(w->scale);
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (int64_t j0 = 0; j0 < w->Tk; j0 += BLK) {
        memset(dk_acc, 0, sizeof(float) * (size_t)(BLK * D));
        memset(dv_acc, 0, sizeof(float) * (size_t)(BLK * D));
        const int64_t first = j0 > w->q0 ? j0 - w->q0 : 0; /* the first query row that sees key j0 */
        for (int g = 0; g < w->G; g++) {
            for (int64_t i0 = first / BLK * BLK; i0 < w->Tq; i0 += BLK) {
                block_product(st, w->kn + j0 * D, D, w->qp[g] + i0 * 2, w->Tqp * 2, D);
                block_product(dpt, w->vn + j0 * D, D, w->dp[g] + i0 * 2, w->Tqp * 2, D);
                const int nq = (int)(w->Tq - i0 < BLK ? w->Tq - i0 : BLK);
                for (int hf = 0; hf < 2; hf++) {
                    const __m512i qi = _mm512_add_epi32(lane, _mm512_set1_epi32(hf * 16));
                    const __mmask16 qok = _mm512_cmp_epi32_mask(qi, _mm512_set1_epi32(nq), _MM_CMPINT_LT);
                    const __m512i qpos = _mm512_add_epi32(qi, _mm512_set1_epi32((int)(w->q0 + i0 - j0)));
                    const __m512 lse = _mm512_loadu_ps(w->lse[g] + i0 + hf * 16);
                    const __m512 delta = _mm512_loadu_ps(w->delta[g] + i0 + hf * 16);
                    for (int r = 0; r < BLK; r++) {
                        const __mmask16 vis = qok & _mm512_cmp_epi32_mask(qpos, _mm512_set1_epi32(r), _MM_CMPINT_NLT);
                        float *s = st + r * BLK + hf * 16, *d = dpt + r * BLK + hf * 16;
                        const __m512 pr = _mm512_maskz_mov_ps(
                            vis, exp_nonpos16(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(s), scale), lse)));
                        const __m512 ds =
                            _mm512_maskz_mov_ps(vis, _mm512_mul_ps(_mm512_mul_ps(scale, pr),
                                                                   _mm512_sub_ps(_mm512_loadu_ps(d), delta)));
                        _mm256_storeu_si256((__m256i *)(pn + r * BLK + hf * 16), bf16x16(pr));
                        _mm256_storeu_si256((__m256i *)(dsn + r * BLK + hf * 16), bf16x16(ds));
                        _mm512_storeu_ps(d, ds);
                    }
                }
                for (int r = 0; r < BLK; r += 2) pair_rows(dsv + r * BLK, dpt + r * BLK, dpt + (r + 1) * BLK, BLK);
                acc_rows(dv_acc, D, pn, w->dv[g] + i0 * D, 2 * D, D);
                acc_rows(dk_acc, D, dsn, w->qv[g] + i0 * D, 2 * D, D);
                acc_cols(w->dqt[g] + i0, w->Tqp, w->kt + j0, w->Tkp, dsv, D);
            }
        }
        const int nj = (int)(w->Tk - j0 < BLK ? w->Tk - j0 : BLK);
        for (int r = 0; r < nj; r++) {
            memcpy(w->dk + (j0 + r) * w->ldkv, dk_acc + r * D, sizeof(float) * (size_t)D);
            memcpy(w->dvo + (j0 + r) * w->ldkv, dv_acc + r * D, sizeof(float) * (size_t)D);
        }
    }
}

int zaya_attention_amx_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                                const float *v, const float *out, const float *lse, int64_t B, int64_t Tq,
                                int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    if (D % 32 != 0 || D > MAXD || Hq / Hkv > 64) return 0;
    if (B <= 0 || Tq <= 0) return 1;
    const int64_t G = Hq / Hkv, Tk = q0 + Tq, Tkp = up32(Tk), Tqp = up32(Tq);
    const int64_t nkv = B * Hkv, nq = B * Hq;
    const size_t need = carved(nkv * Tkp * D, 2) * 3 + carved(nq * Tqp * D, 2) * 4 + carved(nq * Tqp, 4) * 2 +
                        carved(nq * Tqp * D, 4);
    char *p = ws_take(need);
    if (!p) return 0;
    uint16_t *kn = carve(&p, nkv * Tkp * D, 2), *vn = carve(&p, nkv * Tkp * D, 2), *kt = carve(&p, nkv * Tkp * D, 2);
    uint16_t *qp = carve(&p, nq * Tqp * D, 2), *dp = carve(&p, nq * Tqp * D, 2);
    uint16_t *qv = carve(&p, nq * Tqp * D, 2), *dvv = carve(&p, nq * Tqp * D, 2);
    float *delta = carve(&p, nq * Tqp, 4), *lsep = carve(&p, nq * Tqp, 4), *dqt = carve(&p, nq * Tqp * D, 4);
    if (Tk < Tkv) /* keys past the last query's position get no gradient */
        for (int64_t b = 0; b < B; b++) {
            memset(dk + (b * Tkv + Tk) * Hkv * D, 0, sizeof(float) * (size_t)((Tkv - Tk) * Hkv * D));
            memset(dv + (b * Tkv + Tk) * Hkv * D, 0, sizeof(float) * (size_t)((Tkv - Tk) * Hkv * D));
        }
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (int64_t bk = 0; bk < nkv; bk++) {
            const int64_t b = bk / Hkv, hk = bk % Hkv, off = (b * Tkv * Hkv + hk) * D;
            pack_rows(kn + bk * Tkp * D, k + off, Hkv * D, Tk, Tkp, (int)D);
            pack_rows(vn + bk * Tkp * D, v + off, Hkv * D, Tk, Tkp, (int)D);
            pack_transposed(kt + bk * Tkp * D, k + off, Hkv * D, Tk, Tkp, (int)D);
        }
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < nq; bh++) {
            const int64_t b = bh / Hq, h = bh % Hq, off = (b * Tq * Hq + h) * D, ld = Hq * D;
            pack_pairs_d(qp + bh * Tqp * D, q + off, ld, Tq, Tqp, (int)D);
            pack_pairs_d(dp + bh * Tqp * D, dout + off, ld, Tq, Tqp, (int)D);
            pack_pairs_t(qv + bh * Tqp * D, q + off, ld, Tq, Tqp, (int)D);
            pack_pairs_t(dvv + bh * Tqp * D, dout + off, ld, Tq, Tqp, (int)D);
            for (int64_t t = 0; t < Tqp; t++) {
                float dsum = 0.0f;
                if (t < Tq) { /* Delta_t = dout_t . out_t in f32: 16 lane sums, then the lanes in order */
                    const float *a = dout + off + t * ld, *o = out + off + t * ld;
                    __m512 acc = _mm512_setzero_ps();
                    for (int64_t d = 0; d < D; d += 16)
                        acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(a + d), _mm512_loadu_ps(o + d)));
                    _Alignas(64) float lanes[16];
                    _mm512_store_ps(lanes, acc);
                    for (int u = 0; u < 16; u++) dsum += lanes[u];
                }
                delta[bh * Tqp + t] = dsum;
                lsep[bh * Tqp + t] = t < Tq ? lse[bh * Tq + t] : 0.0f;
            }
            memset(dqt + bh * Tqp * D, 0, sizeof(float) * (size_t)(Tqp * D));
        }
        tiles_on();
#pragma omp for schedule(dynamic, 1)
        for (int64_t bk = 0; bk < nkv; bk++) {
            const int64_t b = bk / Hkv, hk = bk % Hkv;
            const uint16_t *hq[64], *hd[64], *hqv[64], *hdv[64];
            const float *hdelta[64], *hlse[64];
            float *hdqt[64];
            for (int64_t g = 0; g < G; g++) {
                const int64_t bh = b * Hq + hk * G + g;
                hq[g] = qp + bh * Tqp * D, hd[g] = dp + bh * Tqp * D, hqv[g] = qv + bh * Tqp * D;
                hdv[g] = dvv + bh * Tqp * D, hdelta[g] = delta + bh * Tqp, hlse[g] = lsep + bh * Tqp;
                hdqt[g] = dqt + bh * Tqp * D;
            }
            const int64_t off = (b * Tkv * Hkv + hk) * D;
            const bwd_head w = {.kn = kn + bk * Tkp * D, .vn = vn + bk * Tkp * D, .kt = kt + bk * Tkp * D,
                                .qp = hq, .dp = hd, .qv = hqv, .dv = hdv, .delta = hdelta, .lse = hlse, .dqt = hdqt,
                                .dk = dk + off, .dvo = dv + off, .Tkp = Tkp, .Tqp = Tqp, .Tq = Tq, .Tk = Tk,
                                .q0 = q0, .ldkv = Hkv * D, .G = (int)G, .D = (int)D, .scale = scale};
            backward_kv(&w);
        }
        _tile_release();
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < nq; bh++) {
            const int64_t b = bh / Hq, h = bh % Hq;
            const float *src = dqt + bh * Tqp * D;
            const __m512i col = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                   _mm512_set1_epi32((int)Tqp)); /* 16 rows of dQ^T */
            for (int64_t t = 0; t < Tq; t++) {
                float *dst = dq + ((b * Tq + t) * Hq + h) * D;
                for (int64_t d = 0; d < D; d += 16) _mm512_storeu_ps(dst + d, _mm512_i32gather_ps(col, src + d * Tqp + t, 4));
            }
        }
    }
    pthread_mutex_unlock(&ws_lock);
    return 1;
}

#else /* built without the AMX instruction sets */

int zaya_attention_amx_built(void) { return 0; }

int zaya_attention_amx_forward(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                               int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    (void)out, (void)lse, (void)q, (void)k, (void)v, (void)B, (void)Tq, (void)Tkv, (void)q0, (void)Hq, (void)Hkv;
    (void)D, (void)scale;
    return 0;
}

int zaya_attention_amx_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                                const float *v, const float *out, const float *lse, int64_t B, int64_t Tq,
                                int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    (void)dq, (void)dk, (void)dv, (void)dout, (void)q, (void)k, (void)v, (void)out, (void)lse, (void)B, (void)Tq;
    (void)Tkv, (void)q0, (void)Hq, (void)Hkv, (void)D, (void)scale;
    return 0;
}

#endif
