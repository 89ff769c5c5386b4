/* Context parallelism inside an attention block: the exchanges between the chunks of a sequence.
 *
 * A CP group of S ranks splits every sequence into chunks of Tp positions: S of them (contiguous) or
 * 2S (zig-zag: rank r holds chunks r and 2S-1-r, which balances the causal attention work). Each
 * rank's pieces lie one after the other in its rows. Per block, forward:
 *  - boundary state: the last H = k0 + k1 - 2 pre-convolution q|k rows of each piece and its last
 *    row's delayed-value projection go to the holder of the next chunk, which convolves [halo | own
 *    rows] with no padding (chunk 0 gets zeros: the padding of the whole sequence) and takes that
 *    value as its first delayed value. In the zig-zag layout the last rank's two pieces are adjacent
 *    chunks, so that one transfer is a local copy;
 *  - keys and values (post-norm, post-RoPE, compressed) are all-gathered into position order, and
 *    each piece's queries attend to every earlier position with their own causal offset.
 * Backward is the exact reverse: K/V are gathered again (not kept: activation memory stays ~1/S),
 * every piece's dK/dV over all positions are summed and reduce-scattered to their owners, and the
 * boundary gradients go back to the previous chunk's holder, which adds them to its own. The
 * transport is the caller's (zaya_cp_ops). */
#include <math.h>
#include <string.h>

#include "model/internal.h"

#define TAG_FWD 0 /* halo slots: + receiving piece (0, 1) */
#define TAG_BWD 2

int64_t zaya_cp_halo_rows(const zaya_config *c) {
    return c->attention == ZAYA_ATTENTION_CCA ? (c->cca_time0 - 1) + (c->cca_time1 - 1) : 0;
}

int zaya_cp_pieces(const zaya_cp_ops *cp) { return cp && cp->size > 1 && cp->zigzag ? 2 : 1; }

int64_t zaya_cp_chunk(const zaya_cp_ops *cp, int rank, int piece) {
    if (zaya_cp_pieces(cp) == 1) return rank;
    return piece == 0 ? rank : 2 * (int64_t)cp->size - 1 - rank;
}

/* The rank and piece holding global chunk c (0 <= c < size * pieces). */
static void chunk_owner(const zaya_cp_ops *cp, int64_t c, int *rank, int *piece) {
    if (zaya_cp_pieces(cp) == 1) {
        *rank = (int)c, *piece = 0;
    } else if (c < cp->size) {
        *rank = (int)c, *piece = 0;
    } else {
        *rank = (int)(2 * cp->size - 1 - c), *piece = 1;
    }
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
/* floats of boundary state per piece and sequence: H q|k rows, then the delayed half of one value row */
static int64_t state_floats(const zaya_config *c) {
    return zaya_cp_halo_rows(c) * qk_dim(c) + (c->attention == ZAYA_ATTENTION_CCA ? kv_dim(c) / 2 : 0);
}

int64_t zaya_cp_conv_rows(const zaya_model *m) {
    return m->T + (int64_t)zaya_cp_pieces(&m->cp) * (m->cfg.cca_time1 - 1);
}

void zaya_cp_plan(zaya_model *m, zaya_arena *a) {
    if (m->cp.size <= 1) return;
    const zaya_config *c = &m->cfg;
    const int64_t B = m->B, T = m->T, N = B * T, S = m->cp.size, P = zaya_cp_pieces(&m->cp), Tp = T / P;
    const int64_t H = zaya_cp_halo_rows(c), C = qk_dim(c), kvd = kv_dim(c), M = state_floats(c);
    zaya_model_work *w = m->work;
    if (H > 0) {
        for (int64_t l = 0; l < c->num_hidden_layers; l++)
            m->acts[l].halo = zaya_arena_floats(a, (size_t)(B * P * H * C));
        w->cp_ext = zaya_arena_floats(a, (size_t)(B * P * (Tp + H) * C));
        w->cp_dext = zaya_arena_floats(a, (size_t)(B * P * (Tp + H) * C));
    }
    if (M > 0) {
        w->cp_send = zaya_arena_floats(a, (size_t)(P * B * M));
        w->cp_recv = zaya_arena_floats(a, (size_t)(P * B * M));
    }
    w->cp_kv = zaya_arena_floats(a, (size_t)(N * 2 * kvd));
    w->cp_kv_all = zaya_arena_floats(a, (size_t)(S * N * 2 * kvd));
    w->cp_gk = zaya_arena_floats(a, (size_t)(S * N * kvd));
    w->cp_gv = zaya_arena_floats(a, (size_t)(S * N * kvd));
    w->cp_dgk = zaya_arena_floats(a, (size_t)(S * N * kvd));
    w->cp_dgv = zaya_arena_floats(a, (size_t)(S * N * kvd));
    w->cp_tk = zaya_arena_floats(a, (size_t)(S * T * kvd));
    w->cp_tv = zaya_arena_floats(a, (size_t)(S * T * kvd));
}

/* ---- boundary state between consecutive chunks ---- */

/* Where piece p's state goes (the next chunk's holder) and comes from (the previous chunk's). */
typedef struct cp_route {
    int next_rank, next_piece; /* -1: the last chunk */
    int prev_rank, prev_piece; /* -1: chunk 0 */
} cp_route;

static cp_route route_of(const zaya_cp_ops *cp, int p) {
    const int64_t c = zaya_cp_chunk(cp, cp->rank, p), nchunks = (int64_t)cp->size * zaya_cp_pieces(cp);
    cp_route r = {-1, -1, -1, -1};
    if (c + 1 < nchunks) chunk_owner(cp, c + 1, &r.next_rank, &r.next_piece);
    if (c > 0) chunk_owner(cp, c - 1, &r.prev_rank, &r.prev_piece);
    return r;
}

/* Sends every piece's block of `send` ([P, B, M]: block p = piece p's state) forward (to the next chunk)
 * or backward (to the previous), landing in the receiving piece's block of `recv`; a transfer between
 * two pieces of this rank is a copy. Blocks with no sender are zeroed. */
static void exchange(zaya_model *m, int forward, float *send, float *recv, int64_t block, double *bytes) {
    const zaya_cp_ops *cp = &m->cp;
    const int P = zaya_cp_pieces(cp);
    const int base = forward ? TAG_FWD : TAG_BWD;
    /* receives are keyed by the receiving piece, sends by the piece they are meant for */
    int from[2] = {-1, -1}, local_from[2] = {-1, -1};
    int to[2] = {-1, -1}, to_piece[2] = {-1, -1};
    for (int p = 0; p < P; p++) {
        const cp_route r = route_of(cp, p);
        const int src = forward ? r.prev_rank : r.next_rank, dst = forward ? r.next_rank : r.prev_rank;
        const int dst_piece = forward ? r.next_piece : r.prev_piece, src_piece = forward ? r.prev_piece : r.next_piece;
        if (src == cp->rank) local_from[p] = src_piece;
        else from[p] = src;
        if (dst >= 0 && dst != cp->rank) to[p] = dst, to_piece[p] = dst_piece;
    }
    /* post every receive first, then the sends: one slot per receiving piece */
    for (int q = 0; q < P; q++) {
        int dst = -1, sp = -1;
        for (int p = 0; p < P; p++)
            if (to_piece[p] == q) dst = to[p], sp = p;
        const int src = from[q];
        if (dst < 0 && src < 0) continue;
        cp_check(m, cp->halo_start(cp->ctx, base + q, dst, dst >= 0 ? send + sp * block : NULL, src,
                                   src >= 0 ? recv + q * block : NULL, block));
        if (src >= 0) *bytes += (double)block * sizeof(float);
    }
    for (int q = 0; q < P; q++) {
        if (local_from[q] >= 0) memcpy(recv + q * block, send + local_from[q] * block, sizeof(float) * (size_t)block);
        else if (from[q] < 0) memset(recv + q * block, 0, sizeof(float) * (size_t)block);
    }
    for (int q = 0; q < P; q++) {
        int any = from[q] >= 0;
        for (int p = 0; p < P; p++) any |= to_piece[p] == q;
        if (any) cp_check(m, cp->halo_wait(cp->ctx, base + q));
    }
}

void zaya_cp_build_ext(zaya_model *m, int l) {
    const int64_t B = m->B, P = zaya_cp_pieces(&m->cp), Tp = m->T / P, H = zaya_cp_halo_rows(&m->cfg);
    const int64_t C = qk_dim(&m->cfg);
    const zaya_layer_acts *A = &m->acts[l];
    float *ext = m->work->cp_ext;
    for (int64_t q = 0; q < B * P; q++) { /* q = b * P + p: piece p of sequence b */
        memcpy(ext + q * (Tp + H) * C, A->halo + q * H * C, sizeof(float) * (size_t)(H * C));
        memcpy(ext + (q * (Tp + H) + H) * C, A->qk_pre + q * Tp * C, sizeof(float) * (size_t)(Tp * C));
    }
}

void zaya_cp_exchange_inputs(zaya_model *m, int l, const float *qk_pre, const float *vv, float *v) {
    const zaya_config *c = &m->cfg;
    const int64_t B = m->B, P = zaya_cp_pieces(&m->cp), Tp = m->T / P, H = zaya_cp_halo_rows(c), C = qk_dim(c);
    const int64_t kvd = kv_dim(c), h = kvd / 2, M = state_floats(c);
    const int has_v = c->attention == ZAYA_ATTENTION_CCA;
    zaya_model_work *w = m->work;
    if (M == 0) return;
    for (int64_t p = 0; p < P; p++)
        for (int64_t b = 0; b < B; b++) {
            float *dst = w->cp_send + (p * B + b) * M;
            const int64_t last = (b * P + p) * Tp + Tp - 1; /* the piece's last row */
            memcpy(dst, qk_pre + (last - H + 1) * C, sizeof(float) * (size_t)(H * C));
            if (has_v) memcpy(dst + H * C, vv + last * kvd + h, sizeof(float) * (size_t)h);
        }
    exchange(m, 1, w->cp_send, w->cp_recv, B * M, &m->cp_traffic.halo_bytes);
    zaya_layer_acts *A = &m->acts[l];
    for (int64_t p = 0; p < P; p++)
        for (int64_t b = 0; b < B; b++) {
            const float *src = w->cp_recv + (p * B + b) * M;
            const int64_t q = b * P + p;
            if (H > 0) memcpy(A->halo + q * H * C, src, sizeof(float) * (size_t)(H * C));
            if (has_v) memcpy(v + q * Tp * kvd + h, src + H * C, sizeof(float) * (size_t)h);
        }
    if (H > 0) zaya_cp_build_ext(m, l);
}

void zaya_cp_return_boundaries(zaya_model *m, const float *dext, const float *dv, float *dqk_pre, float *dvv) {
    const zaya_config *c = &m->cfg;
    const int64_t B = m->B, P = zaya_cp_pieces(&m->cp), Tp = m->T / P, H = zaya_cp_halo_rows(c), C = qk_dim(c);
    const int64_t kvd = kv_dim(c), h = kvd / 2, M = state_floats(c);
    const int has_v = c->attention == ZAYA_ATTENTION_CCA;
    zaya_model_work *w = m->work;
    if (H > 0)
        for (int64_t q = 0; q < B * P; q++)
            memcpy(dqk_pre + q * Tp * C, dext + (q * (Tp + H) + H) * C, sizeof(float) * (size_t)(Tp * C));
    if (M == 0) return;
    /* block p of the message: gradients of the state piece p received in the forward */
    for (int64_t p = 0; p < P; p++)
        for (int64_t b = 0; b < B; b++) {
            float *dst = w->cp_send + (p * B + b) * M;
            const int64_t q = b * P + p;
            if (H > 0) memcpy(dst, dext + q * (Tp + H) * C, sizeof(float) * (size_t)(H * C));
            if (has_v) memcpy(dst + H * C, dv + q * Tp * kvd + h, sizeof(float) * (size_t)h);
        }
    exchange(m, 0, w->cp_send, w->cp_recv, B * M, &m->cp_traffic.halo_bytes);
    for (int64_t p = 0; p < P; p++)
        for (int64_t b = 0; b < B; b++) {
            const float *src = w->cp_recv + (p * B + b) * M; /* zero for the last chunk */
            const int64_t last = (b * P + p) * Tp + Tp - 1;
            float *dq = dqk_pre + (last - H + 1) * C;
            for (int64_t i = 0; i < H * C; i++) dq[i] += src[i];
            if (has_v) memcpy(dvv + last * kvd + h, src + H * C, sizeof(float) * (size_t)h);
        }
}

/* ---- keys and values of every chunk ---- */

/* Global position of row t of this rank's rows of a sequence. */
static int64_t position_of(const zaya_cp_ops *cp, int rank, int64_t t, int64_t Tp) {
    return zaya_cp_chunk(cp, rank, (int)(t / Tp)) * Tp + t % Tp;
}

static void gather_kv(zaya_model *m, const float *k, const float *v) {
    const int64_t B = m->B, T = m->T, N = B * T, S = m->cp.size, kvd = kv_dim(&m->cfg), TT = S * T;
    const int64_t Tp = T / zaya_cp_pieces(&m->cp);
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
            const int64_t dst = (b * TT + position_of(&m->cp, (int)j, t, Tp)) * kvd;
            memcpy(w->cp_gk + dst, src, sizeof(float) * (size_t)kvd);
            memcpy(w->cp_gv + dst, src + kvd, sizeof(float) * (size_t)kvd);
        }
    }
}

static void scatter_dkv(zaya_model *m, float *dk, float *dv) {
    const int64_t B = m->B, T = m->T, N = B * T, S = m->cp.size, kvd = kv_dim(&m->cfg), TT = S * T;
    const int64_t Tp = T / zaya_cp_pieces(&m->cp);
    zaya_model_work *w = m->work;
#pragma omp parallel for schedule(static) if (S * N * kvd > 65536)
    for (int64_t jb = 0; jb < S * B; jb++) {
        const int64_t j = jb / B, b = jb % B;
        for (int64_t t = 0; t < T; t++) {
            float *dst = w->cp_kv_all + ((j * B + b) * T + t) * 2 * kvd;
            const int64_t src = (b * TT + position_of(&m->cp, (int)j, t, Tp)) * kvd;
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

/* ---- the attention of one block, whole sequences or this rank's pieces ---- */

void zaya_attn_chunk_forward(zaya_model *m, zaya_layer_acts *A) {
    const zaya_config *c = &m->cfg;
    const int64_t B = m->B, T = m->T, hd = c->head_dim, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const float scale = 1.0f / sqrtf((float)hd);
    if (m->cp.size <= 1) {
        zaya_attention_forward_dtype(m->dtype, A->att, A->lse, A->q, A->k, A->v, B, T, T, 0, Hq, Hkv, hd, scale);
        return;
    }
    const int64_t P = zaya_cp_pieces(&m->cp), Tp = T / P, TT = m->cp.size * T, kvd = Hkv * hd, qd = Hq * hd;
    gather_kv(m, A->k, A->v);
    if (P == 1) { /* every sequence's chunk has the same offset: one call */
        zaya_attention_forward_dtype(m->dtype, A->att, A->lse, A->q, m->work->cp_gk, m->work->cp_gv, B, T, TT,
                                     m->cp.rank * T, Hq, Hkv, hd, scale);
        return;
    }
    for (int64_t q = 0; q < B * P; q++) {
        const int64_t b = q / P, q0 = zaya_cp_chunk(&m->cp, m->cp.rank, (int)(q % P)) * Tp;
        zaya_attention_forward_dtype(m->dtype, A->att + q * Tp * qd, A->lse + q * Hq * Tp, A->q + q * Tp * qd,
                                     m->work->cp_gk + b * TT * kvd, m->work->cp_gv + b * TT * kvd, 1, Tp, TT, q0,
                                     Hq, Hkv, hd, scale);
    }
}

void zaya_attn_chunk_backward(zaya_model *m, zaya_layer_acts *A) {
    const zaya_config *c = &m->cfg;
    zaya_model_work *w = m->work;
    const int64_t B = m->B, T = m->T, hd = c->head_dim, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const float scale = 1.0f / sqrtf((float)hd);
    if (m->cp.size <= 1) {
        zaya_attention_backward_dtype(m->dtype, w->dq, w->dk, w->dv, w->datt, A->q, A->k, A->v, A->att, A->lse, B, T,
                                      T, 0, Hq, Hkv, hd, scale);
        return;
    }
    const int64_t P = zaya_cp_pieces(&m->cp), Tp = T / P, TT = m->cp.size * T, kvd = Hkv * hd, qd = Hq * hd;
    gather_kv(m, A->k, A->v); /* gathered again: K/V of other chunks are not kept between passes */
    if (P == 1) {
        zaya_attention_backward_dtype(m->dtype, w->dq, w->cp_dgk, w->cp_dgv, w->datt, A->q, w->cp_gk, w->cp_gv, A->att, A->lse,
                                      B, T, TT, m->cp.rank * T, Hq, Hkv, hd, scale);
    } else { /* both pieces of a sequence feed its dK/dV: each into scratch, then summed */
        for (int64_t b = 0; b < B; b++) {
            float *dgk = w->cp_dgk + b * TT * kvd, *dgv = w->cp_dgv + b * TT * kvd;
            for (int64_t p = 0; p < P; p++) {
                const int64_t q = b * P + p, q0 = zaya_cp_chunk(&m->cp, m->cp.rank, (int)p) * Tp;
                zaya_attention_backward_dtype(m->dtype, w->dq + q * Tp * qd, p ? w->cp_tk : dgk, p ? w->cp_tv : dgv,
                                              w->datt + q * Tp * qd, A->q + q * Tp * qd, w->cp_gk + b * TT * kvd,
                                              w->cp_gv + b * TT * kvd, A->att + q * Tp * qd, A->lse + q * Hq * Tp, 1,
                                              Tp, TT, q0, Hq, Hkv, hd, scale);
                if (p) {
                    const int64_t n = (q0 + Tp) * kvd; /* rows past the piece's last query are zero */
#pragma omp parallel for schedule(static) if (n > 65536)
                    for (int64_t i = 0; i < n; i++) dgk[i] += w->cp_tk[i], dgv[i] += w->cp_tv[i];
                }
            }
        }
    }
    scatter_dkv(m, w->dk, w->dv);
}
