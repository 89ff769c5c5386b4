/* CCA of one step against the caches: the same operations as src/model/cca.c, but the causal
 * convolutions start from each sequence's saved pre-convolution columns, the value shift from its
 * saved delayed value, RoPE uses absolute positions and attention reads the KV cache. */
#include <float.h>
#include <math.h>

#include "infer/internal.h"
#include "zaya/bf16.h"

/* Value channels: first half current token, second half the previous token's delayed projection. */
static void value_shift(zaya_infer *e, int l, int64_t nseg, int64_t kvd) {
    const int64_t h = kvd / 2;
    for (int64_t s = 0; s < nseg; s++) {
        const zaya_infer_seg *g = &e->seg[s];
        float *state = e->vdel[l] + g->slot * h;
        for (int64_t i = 0; i < g->n; i++) {
            int64_t r = g->row0 + i;
            memcpy(e->v + r * kvd, e->vv + r * kvd, (size_t)h * sizeof(float));
            memcpy(e->v + r * kvd + h, i == 0 ? state : e->vv + (r - 1) * kvd + h, (size_t)h * sizeof(float));
        }
        memcpy(state, e->vv + (g->row0 + g->n - 1) * kvd + h, (size_t)h * sizeof(float));
    }
}

/* Grouped conv for a few output rows (decode): the shared kernel repacks every weight slice per call,
 * which is the right trade for training's thousands of rows but costs more than the product itself
 * for one row. Same sum, read from the PyTorch layout w [C, cg, k] directly. x [rows + k - 1, C]. */
static void grouped_rows(float *y, const float *x, const float *w, const float *bias, int64_t rows, int64_t C,
                         int64_t groups, int64_t k) {
    const int64_t cg = C / groups;
    for (int64_t t = 0; t < rows; t++)
        for (int64_t o = 0; o < C; o++) {
            const float *wo = w + o * cg * k, *xg = x + t * C + (o / cg) * cg;
            float acc = bias[o];
            for (int64_t j = 0; j < k; j++) {
                float sj = 0.0f;
#pragma omp simd reduction(+ : sj)
                for (int64_t i = 0; i < cg; i++) sj += wo[i * k + j] * xg[j * C + i];
                acc += sj;
            }
            y[t * C + o] = acc;
        }
}

/* Window of a segment = [its W saved columns | its n new columns]; with no padding the depthwise
 * conv yields n + k1 - 1 rows and the grouped conv n rows, exactly the training conv's rows at these
 * positions (positions before 0 are zero columns, so padded outputs still carry the bias). */
static void convolve(zaya_infer *e, int l, int64_t nseg, int64_t C) {
    const zaya_config *c = &e->w->cfg;
    const zaya_infer_layer_w *P = &e->w->layers[l];
    const int64_t W = e->W, k0 = c->cca_time0, k1 = c->cca_time1, H = c->num_attention_heads + c->num_key_value_heads;
    int same = 1;
    int64_t wrow = 0;
    for (int64_t s = 0; s < nseg; s++) {
        const zaya_infer_seg *g = &e->seg[s];
        float *win = e->win + wrow * C, *state = e->conv[l] + g->slot * W * C;
        if (W > 0) memcpy(win, state, (size_t)(W * C) * sizeof(float));
        memcpy(win + W * C, e->qkpre + g->row0 * C, (size_t)(g->n * C) * sizeof(float));
        if (W > 0) memcpy(state, win + g->n * C, (size_t)(W * C) * sizeof(float));
        wrow += W + g->n;
        same &= g->n == e->seg[0].n;
    }
    if (same) { /* decode: one call over all sequences */
        const int64_t n = e->seg[0].n;
        zaya_conv1d_depthwise_forward(e->conv0, e->win, P->conv0_w, P->conv0_b, nseg, W + n, C, k0, 0);
        if (n == 1) {
            for (int64_t s = 0; s < nseg; s++)
                grouped_rows(e->qkraw + s * C, e->conv0 + s * k1 * C, P->conv1_w, P->conv1_b, 1, C, H, k1);
        } else {
            zaya_conv1d_grouped_forward(e->qkraw, e->conv0, P->conv1_w, P->conv1_b, nseg, n + k1 - 1, C, H, k1, 0);
        }
        return;
    }
    wrow = 0;
    for (int64_t s = 0; s < nseg; s++) {
        const zaya_infer_seg *g = &e->seg[s];
        zaya_conv1d_depthwise_forward(e->conv0, e->win + wrow * C, P->conv0_w, P->conv0_b, 1, W + g->n, C, k0, 0);
        zaya_conv1d_grouped_forward(e->qkraw + g->row0 * C, e->conv0, P->conv1_w, P->conv1_b, 1, g->n + k1 - 1, C, H,
                                    k1, 0);
        wrow += W + g->n;
    }
}

void zaya_infer_cca(zaya_infer *e, int l, int64_t N, int64_t nseg) {
    const zaya_config *c = &e->w->cfg;
    const zaya_infer_layer_w *P = &e->w->layers[l];
    const int64_t D = c->hidden_size, hd = c->head_dim, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const int64_t qd = Hq * hd, kvd = Hkv * hd, C = qd + kvd;

    zaya_infer_lin2(e, e->qkpre, e->xn, P->wq, qd, P->wk, kvd, N, D);
    zaya_infer_lin2(e, e->vv, e->xn, P->wv_cur, kvd / 2, P->wv_del, kvd / 2, N, D);
    value_shift(e, l, nseg, kvd);
    convolve(e, l, nseg, C);
    zaya_qk_mean_skip_forward(e->qkraw, e->qkpre, N, Hq, Hkv, hd);
    zaya_l2norm_forward(e->qk, e->inv, e->qkraw, e->mult + (int64_t)l * (Hq + Hkv), sqrtf((float)hd), N, Hq + Hkv, hd,
                        FLT_EPSILON);
    zaya_rope_forward(e->qk, e->w->rope, e->pos, N, Hq + Hkv, hd);

    const int64_t esz = e->kv_esz;
    for (int64_t s = 0; s < nseg; s++) {
        const zaya_infer_seg *g = &e->seg[s];
        char *kc = (char *)e->kc[l] + g->slot * e->Tmax * kvd * esz, *vc = (char *)e->vc[l] + g->slot * e->Tmax * kvd * esz;
        for (int64_t i = 0; i < g->n; i++) {
            const int64_t r = g->row0 + i, t = g->pos0 + i;
            memcpy(e->q + r * qd, e->qk + r * C, (size_t)qd * sizeof(float));
            if (e->kv_bf16) {
                zaya_f32_to_bf16_n((uint16_t *)(kc + t * kvd * esz), e->qk + r * C + qd, (size_t)kvd);
                zaya_f32_to_bf16_n((uint16_t *)(vc + t * kvd * esz), e->v + r * kvd, (size_t)kvd);
            } else {
                memcpy(kc + t * kvd * esz, e->qk + r * C + qd, (size_t)kvd * sizeof(float));
                memcpy(vc + t * kvd * esz, e->v + r * kvd, (size_t)kvd * sizeof(float));
            }
        }
        e->kp[s] = kc;
        e->vp[s] = vc;
        e->apos[s] = g->pos0;
        e->arows[s] = g->n;
        e->bytes_read += 2 * (g->pos0 + g->n) * kvd * esz; /* every cached K and V row up to the last new one */
    }
    const float scale = 1.0f / sqrtf((float)hd);
    if (e->kv_bf16)
        zaya_infer_attention_bf16(e->att, e->q, (const uint16_t *const *)e->kp, (const uint16_t *const *)e->vp, e->apos,
                                  e->arows, nseg, Hq, Hkv, hd, scale);
    else
        zaya_attention_decode(e->att, NULL, e->q, (const float *const *)e->kp, (const float *const *)e->vp, e->apos,
                              e->arows, nseg, Hq, Hkv, hd, scale);
    zaya_infer_lin(e, e->a, e->att, P->wo, N, qd, D);
}
