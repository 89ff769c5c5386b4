/* Attention of a step's query rows against bf16 K/V caches (bf16 inference): the contract of
 * zaya_attention_decode (include/zaya/attention.h) with the caches read as bf16 and everything else
 * (scores, online softmax, accumulators) in f32. One task per (sequence, row, KV head) handles the
 * query heads of that KV head together, so every cached row is read once per task. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "infer/internal.h"
#include "zaya/attention.h"

static inline float bf(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#define MAX_GROUP 16

void zaya_infer_attention_bf16(float *out, const float *q, const uint16_t *const *k_cache,
                               const uint16_t *const *v_cache, const int64_t *pos, const int64_t *n_rows, int64_t nseq,
                               int64_t Hq, int64_t Hkv, int64_t D, float scale) {
    ZAYA_ASSERT(Hkv > 0 && Hq % Hkv == 0 && Hq / Hkv <= MAX_GROUP && D <= ZAYA_ATTENTION_MAX_HEAD_DIM);
    const int64_t group = Hq / Hkv, ldkv = Hkv * D;
    int64_t R = 0;
    for (int64_t s = 0; s < nseq; s++) R += n_rows[s];
    const int64_t ntasks = R * Hkv;
#pragma omp parallel for schedule(dynamic, 1) if (ntasks > 1)
    for (int64_t task = 0; task < ntasks; task++) {
        const int64_t row = task / Hkv, hk = task % Hkv;
        int64_t s = 0, first = 0; /* the row's sequence and that sequence's first row */
        while (row >= first + n_rows[s]) first += n_rows[s++];
        const int64_t p = pos[s] + (row - first); /* attends to positions 0..p */
        const uint16_t *K = k_cache[s] + hk * D, *V = v_cache[s] + hk * D;
        float acc[MAX_GROUP][ZAYA_ATTENTION_MAX_HEAD_DIM], m[MAX_GROUP], l[MAX_GROUP];
        const float *qh[MAX_GROUP];
        for (int64_t g = 0; g < group; g++) {
            qh[g] = q + (row * Hq + hk * group + g) * D;
            m[g] = -FLT_MAX, l[g] = 0.0f;
            memset(acc[g], 0, (size_t)D * sizeof(float));
        }
        for (int64_t j = 0; j <= p; j++) {
            const uint16_t *kj = K + j * ldkv, *vj = V + j * ldkv;
            for (int64_t g = 0; g < group; g++) {
                float sc = 0.0f;
#pragma omp simd reduction(+ : sc)
                for (int64_t d = 0; d < D; d++) sc += qh[g][d] * bf(kj[d]);
                sc *= scale;
                float corr = 1.0f, w;
                if (sc > m[g]) {
                    corr = expf(m[g] - sc);
                    m[g] = sc;
                    w = 1.0f;
                } else {
                    w = expf(sc - m[g]);
                }
                l[g] = l[g] * corr + w;
                float *a = acc[g];
#pragma omp simd
                for (int64_t d = 0; d < D; d++) a[d] = a[d] * corr + w * bf(vj[d]);
            }
        }
        for (int64_t g = 0; g < group; g++) {
            float *o = out + (row * Hq + hk * group + g) * D;
            const float inv = 1.0f / l[g];
            for (int64_t d = 0; d < D; d++) o[d] = acc[g][d] * inv;
        }
    }
}
