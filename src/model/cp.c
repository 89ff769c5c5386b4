/* Context parallelism inside an attention block: the exchanges between the chunks of a sequence.
 *
 * A CP group of S ranks holds every sequence as S contiguous chunks of T positions (rank r: [rT,
 * (r+1)T)). Per block, forward:
 *  - halo: the last H = k0 + k1 - 2 pre-convolution q|k rows of each sequence's chunk go to rank r+1,
 *    which convolves [halo | own rows] with no padding (rank 0 gets zeros: the padding of the whole
 *    sequence); the last row's delayed-value projection goes along too (the value shift);
 *  - keys and values (post-norm, post-RoPE, compressed) are all-gathered, so that the chunk's queries
 *    attend to every earlier position with the causal offset rT.
 * Backward is the exact reverse: K/V are gathered again (not kept: activation memory stays ~1/S), the
 * chunk's dK/dV over all positions are reduce-scattered to their owners, and the halo gradients are sent
 * back to rank r-1, which adds them to its own. The transport is the caller's (zaya_cp_ops). */
#include <math.h>
#include <string.h>

#include "model/internal.h"

int64_t zaya_cp_halo_rows(const zaya_config *c) {
    return c->attention == ZAYA_ATTENTION_CCA ? (c->cca_time0 - 1) + (c->cca_time1 - 1) : 0;
}

zaya_status zaya_model_set_cp(zaya_model *m, const zaya_cp_ops *cp) {
    if (!cp || cp->size <= 1) {
        memset(&m->cp, 0, sizeof m->cp);
        m->cp.size = 1;
        return ZAYA_OK;
    }
    if (cp->rank < 0 || cp->rank >= cp->size)
        return zaya_error_set(ZAYA_EINVAL, "context parallelism: rank %d outside a group of %d", cp->rank, cp->size);
    if (!cp->halo_start || !cp->halo_wait || !cp->allgather || !cp->reduce_scatter)
        return zaya_error_set(ZAYA_EINVAL, "context parallelism: an exchange function is missing");
    m->cp = *cp;
    return ZAYA_OK;
}

static void cp_check(zaya_model *m, zaya_status s) {
    if (s != ZAYA_OK && m->cp_status == ZAYA_OK) m->cp_status = s;
}

static int64_t kv_dim(const zaya_config *c) { return c->num_key_value_heads * c->head_dim; }
static int64_t qk_dim(const zaya_config *c) { return (c->num_attention_heads + c->num_key_value_heads) * c->head_dim; }

void zaya_cp_plan(zaya_model *m, zaya_arena *a) {
    if (m->cp.size <= 1) return;
    const zaya_config *c = &m->cfg;
    const int64_t B = m->B, T = m->T, N = B * T, S = m->cp.size, H = zaya_cp_halo_rows(c);
    const int64_t C = qk_dim(c), kvd = kv_dim(c), h = kvd / 2;
    zaya_model_work *w = m->work;
    if (H > 0) {
        for (int64_t l = 0; l < c->num_hidden_layers; l++) m->acts[l].halo = zaya_arena_floats(a, (size_t)(B * H * C));
        w->cp_ext = zaya_arena_floats(a, (size_t)(B * (T + H) * C));
        w->cp_dext = zaya_arena_floats(a, (size_t)(B * (T + H) * C));
        w->cp_hsend = zaya_arena_floats(a, (size_t)(B * H * C));
        w->cp_hrecv = zaya_arena_floats(a, (size_t)(B * H * C));
    }
    w->cp_vsend = zaya_arena_floats(a, (size_t)(B * h));
    w->cp_vrecv = zaya_arena_floats(a, (size_t)(B * h));
    w->cp_kv = zaya_arena_floats(a, (size_t)(N * 2 * kvd));
    w->cp_kv_all = zaya_arena_floats(a, (size_t)(S * N * 2 * kvd));
    w->cp_gk = zaya_arena_floats(a, (size_t)(S * N * kvd));
    w->cp_gv = zaya_arena_floats(a, (size_t)(S * N * kvd));
    w->cp_dgk = zaya_arena_floats(a, (size_t)(S * N * kvd));
    w->cp_dgv = zaya_arena_floats(a, (size_t)(S * N * kvd));
}

/* ---- forward: halo rows and the delayed value of the previous chunk ---- */

void zaya_cp_start_halo(zaya_model *m, const float *qk_pre) {
    const int64_t B = m->B, T = m->T, H = zaya_cp_halo_rows(&m->cfg), C = qk_dim(&m->cfg);
    if (H == 0) return;
    zaya_model_work *w = m->work;
    for (int64_t b = 0; b < B; b++)
        memcpy(w->cp_hsend + b * H * C, qk_pre + (b * T + T - H) * C, sizeof(float) * (size_t)(H * C));
    if (m->cp.rank > 0) m->cp_traffic.halo_bytes += (double)(B * H * C) * sizeof(float);
    cp_check(m, m->cp.halo_start(m->cp.ctx, 0, +1, w->cp_hsend, w->cp_hrecv, B * H * C));
}

void zaya_cp_build_ext(zaya_model *m, int l) {
    const int64_t B = m->B, T = m->T, H = zaya_cp_halo_rows(&m->cfg), C = qk_dim(&m->cfg);
    const zaya_layer_acts *A = &m->acts[l];
    float *ext = m->work->cp_ext;
    for (int64_t b = 0; b < B; b++) {
        memcpy(ext + b * (T + H) * C, A->halo + b * H * C, sizeof(float) * (size_t)(H * C));
        memcpy(ext + (b * (T + H) + H) * C, A->qk_pre + b * T * C, sizeof(float) * (size_t)(T * C));
    }
}

void zaya_cp_finish_inputs(zaya_model *m, int l, const float *vv, float *v) {
    const zaya_config *c = &m->cfg;
    const int64_t B = m->B, T = m->T, H = zaya_cp_halo_rows(c), C = qk_dim(c), kvd = kv_dim(c), h = kvd / 2;
    zaya_model_work *w = m->work;
    zaya_layer_acts *A = &m->acts[l];
    const int has_v = c->attention == ZAYA_ATTENTION_CCA;
    if (has_v) {
        for (int64_t b = 0; b < B; b++)
            memcpy(w->cp_vsend + b * h, vv + (b * T + T - 1) * kvd + h, sizeof(float) * (size_t)h);
        if (m->cp.rank > 0) m->cp_traffic.halo_bytes += (double)(B * h) * sizeof(float);
        cp_check(m, m->cp.halo_start(m->cp.ctx, 1, +1, w->cp_vsend, w->cp_vrecv, B * h));
        cp_check(m, m->cp.halo_wait(m->cp.ctx, 1));
        if (m->cp.rank == 0) memset(w->cp_vrecv, 0, sizeof(float) * (size_t)(B * h));
        for (int64_t b = 0; b < B; b++) memcpy(v + b * T * kvd + h, w->cp_vrecv + b * h, sizeof(float) * (size_t)h);
    }
    if (H > 0) {
        cp_check(m, m->cp.halo_wait(m->cp.ctx, 0));
        if (m->cp.rank == 0) memset(w->cp_hrecv, 0, sizeof(float) * (size_t)(B * H * C));
        memcpy(A->halo, w->cp_hrecv, sizeof(float) * (size_t)(B * H * C));
        zaya_cp_build_ext(m, l);
    }
}

/* ---- keys and values of every chunk ---- */

void zaya_cp_gather_kv(zaya_model *m, const float *k, const float *v) {
    const int64_t B = m->B, T = m->T, N = B * T, S = m->cp.size, kvd = kv_dim(&m->cfg), TT = S * T;
    zaya_model_work *w = m->work;
    for (int64_t n = 0; n < N; n++) {
        memcpy(w->cp_kv + n * 2 * kvd, k + n * kvd, sizeof(float) * (size_t)kvd);
        memcpy(w->cp_kv + n * 2 * kvd + kvd, v + n * kvd, sizeof(float) * (size_t)kvd);
    }
    m->cp_traffic.gather_bytes += (double)((S - 1) * N * 2 * kvd) * sizeof(float);
    cp_check(m, m->cp.allgather(m->cp.ctx, w->cp_kv, w->cp_kv_all, N * 2 * kvd));
#pragma omp parallel for schedule(static) if (S * N * kvd > 65536)
    for (int64_t jb = 0; jb < S * B; jb++) {
        const int64_t j = jb / B, b = jb % B;
        for (int64_t t = 0; t < T; t++) {
            const float *src = w->cp_kv_all + ((j * B + b) * T + t) * 2 * kvd;
            const int64_t dst = (b * TT + j * T + t) * kvd;
            memcpy(w->cp_gk + dst, src, sizeof(float) * (size_t)kvd);
            memcpy(w->cp_gv + dst, src + kvd, sizeof(float) * (size_t)kvd);
        }
    }
}

void zaya_cp_scatter_dkv(zaya_model *m, float *dk, float *dv) {
    const int64_t B = m->B, T = m->T, N = B * T, S = m->cp.size, kvd = kv_dim(&m->cfg), TT = S * T;
    zaya_model_work *w = m->work;
#pragma omp parallel for schedule(static) if (S * N * kvd > 65536)
    for (int64_t jb = 0; jb < S * B; jb++) {
        const int64_t j = jb / B, b = jb % B;
        for (int64_t t = 0; t < T; t++) {
            float *dst = w->cp_kv_all + ((j * B + b) * T + t) * 2 * kvd;
            const int64_t src = (b * TT + j * T + t) * kvd;
            memcpy(dst, w->cp_dgk + src, sizeof(float) * (size_t)kvd);
            memcpy(dst + kvd, w->cp_dgv + src, sizeof(float) * (size_t)kvd);
        }
    }
    m->cp_traffic.scatter_bytes += (double)((S - 1) * N * 2 * kvd) * sizeof(float);
    cp_check(m, m->cp.reduce_scatter(m->cp.ctx, w->cp_kv_all, w->cp_kv, N * 2 * kvd));
    for (int64_t n = 0; n < N; n++) {
        memcpy(dk + n * kvd, w->cp_kv + n * 2 * kvd, sizeof(float) * (size_t)kvd);
        memcpy(dv + n * kvd, w->cp_kv + n * 2 * kvd + kvd, sizeof(float) * (size_t)kvd);
    }
}

/* ---- backward: the boundary gradients go back to their owners ---- */

void zaya_cp_start_dvv(zaya_model *m, const float *dv) {
    const int64_t B = m->B, T = m->T, kvd = kv_dim(&m->cfg), h = kvd / 2;
    zaya_model_work *w = m->work;
    for (int64_t b = 0; b < B; b++) memcpy(w->cp_vsend + b * h, dv + b * T * kvd + h, sizeof(float) * (size_t)h);
    if (m->cp.rank < m->cp.size - 1) m->cp_traffic.halo_bytes += (double)(B * h) * sizeof(float);
    cp_check(m, m->cp.halo_start(m->cp.ctx, 1, -1, w->cp_vsend, w->cp_vrecv, B * h));
}

void zaya_cp_finish_dvv(zaya_model *m, float *dvv) {
    const int64_t B = m->B, T = m->T, kvd = kv_dim(&m->cfg), h = kvd / 2;
    zaya_model_work *w = m->work;
    cp_check(m, m->cp.halo_wait(m->cp.ctx, 1));
    if (m->cp.rank == m->cp.size - 1) return; /* the last chunk's last row has no successor */
    for (int64_t b = 0; b < B; b++)
        memcpy(dvv + (b * T + T - 1) * kvd + h, w->cp_vrecv + b * h, sizeof(float) * (size_t)h);
}

void zaya_cp_return_halo(zaya_model *m, const float *dext, float *dqk_pre) {
    const int64_t B = m->B, T = m->T, H = zaya_cp_halo_rows(&m->cfg), C = qk_dim(&m->cfg);
    zaya_model_work *w = m->work;
    for (int64_t b = 0; b < B; b++) {
        memcpy(w->cp_hsend + b * H * C, dext + b * (T + H) * C, sizeof(float) * (size_t)(H * C));
        memcpy(dqk_pre + b * T * C, dext + (b * (T + H) + H) * C, sizeof(float) * (size_t)(T * C));
    }
    if (m->cp.rank < m->cp.size - 1) m->cp_traffic.halo_bytes += (double)(B * H * C) * sizeof(float);
    cp_check(m, m->cp.halo_start(m->cp.ctx, 0, -1, w->cp_hsend, w->cp_hrecv, B * H * C));
    cp_check(m, m->cp.halo_wait(m->cp.ctx, 0));
    if (m->cp.rank == m->cp.size - 1) return;
    for (int64_t b = 0; b < B; b++) {
        float *dst = dqk_pre + (b * T + T - H) * C;
        const float *src = w->cp_hrecv + b * H * C;
        for (int64_t i = 0; i < H * C; i++) dst[i] += src[i];
    }
}

/* ---- the attention of one block, whole sequence or chunk ---- */

void zaya_attn_chunk_forward(zaya_model *m, zaya_layer_acts *A) {
    const zaya_config *c = &m->cfg;
    const int64_t B = m->B, T = m->T, hd = c->head_dim, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const float scale = 1.0f / sqrtf((float)hd);
    if (m->cp.size <= 1) {
        zaya_attention_forward(A->att, A->lse, A->q, A->k, A->v, B, T, Hq, Hkv, hd, scale);
        return;
    }
    zaya_cp_gather_kv(m, A->k, A->v);
    zaya_attention_forward_chunk(A->att, A->lse, A->q, m->work->cp_gk, m->work->cp_gv, B, T, m->cp.size * T,
                                 m->cp.rank * T, Hq, Hkv, hd, scale);
}

void zaya_attn_chunk_backward(zaya_model *m, zaya_layer_acts *A) {
    const zaya_config *c = &m->cfg;
    zaya_model_work *w = m->work;
    const int64_t B = m->B, T = m->T, hd = c->head_dim, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const float scale = 1.0f / sqrtf((float)hd);
    if (m->cp.size <= 1) {
        zaya_attention_backward(w->dq, w->dk, w->dv, w->datt, A->q, A->k, A->v, A->att, A->lse, B, T, Hq, Hkv, hd,
                                scale);
        return;
    }
    zaya_cp_gather_kv(m, A->k, A->v); /* gathered again: K/V of other chunks are not kept between passes */
    zaya_attention_backward_chunk(w->dq, w->cp_dgk, w->cp_dgv, w->datt, A->q, w->cp_gk, w->cp_gv, A->att, A->lse, B, T,
                                  m->cp.size * T, m->cp.rank * T, Hq, Hkv, hd, scale);
    zaya_cp_scatter_dkv(m, w->dk, w->dv);
}
