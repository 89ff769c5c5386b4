/* The engine's whole-model forward (with the chunked tied-head cross-entropy) and backward: the
 * sequence of src/model/forward.c, each step a backend operation. */
#include <math.h>
#include <string.h>

#include "engine/internal.h"

static const uint16_t *shadow_of(const zaya_engine *e, const float *W) { return e->params_bf16 + (W - e->params); }

/* The profile's clock (0 when off; a device backend's queue drained first). */
static uint64_t prof_now(zaya_engine *e) {
    if (!e->prof || e->prof_phase < 0) return 0;
    if (!e->be->is_host) (void)e->be->sync(e->be);
    return zaya_now_ns();
}

/* Operands to bf16, the conversion's time charged as staging. */
static void stage(zaya_engine *e, uint16_t *dst, const float *src, int64_t n) {
    const uint64_t t0 = prof_now(e);
    e->be->to_bf16(e->be, dst, src, n);
    if (t0) e->prof->stage_s[e->prof_pass][e->prof_phase] += (double)(prof_now(e) - t0) * 1e-9;
}

/* The matmul time and FLOPs (2 m n k per product) of one linear call that started at t0. */
static void charge(zaya_engine *e, uint64_t t0, double products, int64_t n, int64_t in, int64_t out) {
    if (!t0) return;
    e->prof->gemm_s[e->prof_pass][e->prof_phase] += (double)(prof_now(e) - t0) * 1e-9;
    e->prof->flop[e->prof_pass][e->prof_phase] += products * 2.0 * (double)n * (double)in * (double)out;
}

void zaya_engine_lin_forward(zaya_engine *e, float *y, const float *x, const float *W, int64_t n, int64_t in,
                             int64_t out, float beta, int vary) {
    if (n == 0) return;
    zaya_backend *be = e->be;
    const uint64_t t0 = prof_now(e);
    if (e->dt == ZAYA_DTYPE_F32) {
        be->gemm(be, ZAYA_DTYPE_F32, 0, 1, n, out, in, x, W, y, beta, vary);
    } else {
        stage(e, e->bf_a, x, n * in);
        be->gemm(be, ZAYA_DTYPE_BF16, 0, 1, n, out, in, e->bf_a, shadow_of(e, W), y, beta, vary);
    }
    charge(e, t0, 1, n, in, out);
}

void zaya_engine_lin_backward(zaya_engine *e, float *dx, float beta, float *dW, const float *dy, const float *x,
                              const float *W, int64_t n, int64_t in, int64_t out, int vary) {
    if (n == 0) return;
    zaya_backend *be = e->be;
    const uint64_t t0 = prof_now(e);
    if (e->dt == ZAYA_DTYPE_F32) {
        if (dx) be->gemm(be, ZAYA_DTYPE_F32, 0, 0, n, in, out, dy, W, dx, beta, vary);
        be->gemm(be, ZAYA_DTYPE_F32, 1, 0, out, in, n, dy, x, dW, 1.0f, vary);
    } else {
        stage(e, e->bf_a, dy, n * out);
        if (dx) be->gemm(be, ZAYA_DTYPE_BF16, 0, 0, n, in, out, e->bf_a, shadow_of(e, W), dx, beta, vary);
        stage(e, e->bf_b, x, n * in);
        be->gemm(be, ZAYA_DTYPE_BF16, 1, 0, out, in, n, e->bf_a, e->bf_b, dW, 1.0f, vary);
    }
    charge(e, t0, dx ? 2 : 1, n, in, out);
}

void zaya_engine_profile_attach(zaya_engine *e, zaya_model_profile *prof) {
    e->prof = prof;
    e->prof_phase = -1;
}

/* The host model's gradients-ready hook (zaya_model.on_grads_ready: data parallelism reduces those
 * gradients meanwhile), on a host backend whose gradient block is the host's own. */
static void grads_ready(zaya_engine *e, int layer) {
    zaya_model *h = e->host;
    if (!h->on_grads_ready || !e->aliased) return;
    h->on_grads_ready(h->on_grads_ready_ctx, layer);
}

/* Validates and uploads ids and targets; for a backward-ready forward the embedding gradient's token
 * order (ids grouped by value, token order within a value: a radix sort on the host) goes up too. */
static zaya_status load_batch(zaya_engine *e, const int32_t *ids, const int32_t *targets, int backward_ready) {
    const int64_t N = e->B * e->T;
    ZAYA_TRY(zaya_model_check_tokens(e->c, ids, targets, N));
    zaya_backend *be = e->be;
    ZAYA_TRY(be->upload(be, e->ids, ids, sizeof(int32_t) * (size_t)N));
    if (targets) ZAYA_TRY(be->upload(be, e->targets, targets, sizeof(int32_t) * (size_t)N));
    if (!backward_ready) return ZAYA_OK;
    /* sort tokens by id: sorted[], with seg[s] the start of the s-th distinct id's run */
    int32_t *order = e->h_sorted, *seg = e->h_seg;
    const int32_t *tmp = ids;
    /* LSD radix sort on 16-bit digits keeps token order within an id (stable) in O(N) without a
     * vocabulary-sized table */
    int32_t *src = e->h_idx, *dst = order;
    for (int64_t i = 0; i < N; i++) src[i] = (int32_t)i;
    int32_t *cnt = e->h_cnt;
    for (int pass = 0; pass < 2; pass++) {
        const int sh = 16 * pass;
        memset(cnt, 0, sizeof(int32_t) * 65537);
        for (int64_t i = 0; i < N; i++) cnt[((uint32_t)tmp[src[i]] >> sh & 0xFFFF) + 1]++;
        for (int d = 0; d < 65536; d++) cnt[d + 1] += cnt[d];
        for (int64_t i = 0; i < N; i++) dst[cnt[(uint32_t)tmp[src[i]] >> sh & 0xFFFF]++] = src[i];
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != order) memcpy(order, src, sizeof(int32_t) * (size_t)N);
    int64_t ns = 0;
    for (int64_t i = 0; i < N; i++)
        if (i == 0 || ids[order[i]] != ids[order[i - 1]]) seg[ns++] = (int32_t)i;
    seg[ns] = (int32_t)N;
    e->emb_nseg = ns;
    ZAYA_TRY(be->upload(be, e->emb_sorted, order, sizeof(int32_t) * (size_t)N));
    return be->upload(be, e->emb_seg, seg, sizeof(int32_t) * (size_t)(ns + 1));
}

static zaya_status blocks_forward(zaya_engine *e) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const int L = (int)c->num_hidden_layers;
    const int64_t N = e->B * e->T, D = c->hidden_size;
    const float eps = (float)c->rms_norm_eps;
    for (int l = 0; l < L; l++) {
        zaya_engine_layer *A = &e->L[l];
        const zaya_layer_params *P = &e->p.layers[l];
        zaya_engine_prof_mark(e, ZAYA_PROF_NORM);
        be->rmsnorm_forward(be, A->xn, A->rstd_in, A->x, P->in_norm, N, D, eps);
        if (c->attention == ZAYA_ATTENTION_CCA) zaya_engine_cca_forward(e, l);
        else zaya_engine_softmax_attn_forward(e, l);
        zaya_engine_prof_mark(e, ZAYA_PROF_NORM);
        be->merge_forward(be, A->h, A->a, P->att_hb, P->att_hs, A->x, P->att_rb, P->att_rs, N, D);
        be->rmsnorm_forward(be, A->z, A->rstd_post, A->h, P->post_norm, N, D, eps);
        ZAYA_TRY(zaya_engine_moe_forward(e, l));
        float *next = l + 1 < L ? e->L[l + 1].x : e->x_final;
        zaya_engine_prof_mark(e, ZAYA_PROF_NORM);
        be->merge_forward(be, next, A->m, P->mlp_hb, P->mlp_hs, A->h, P->mlp_rb, P->mlp_rs, N, D);
    }
    be->rmsnorm_forward(be, e->y_final, e->rstd_final, e->x_final, e->p.final_norm, N, D, eps);
    return ZAYA_OK;
}

zaya_status zaya_engine_forward(zaya_engine *e, const int32_t *ids, const int32_t *targets, int backward_ready,
                                float *loss) {
    if (!e->L) return zaya_error_set(ZAYA_EINVAL, "engine: zaya_engine_plan first");
    if (e->host->cp.size > 1)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "the engine does not run context parallelism (cp %d) yet",
                              e->host->cp.size);
    if (backward_ready && !targets) return zaya_error_set(ZAYA_EINVAL, "a backward-ready forward needs targets");
    zaya_backend *be = e->be;
    const int64_t N = e->B * e->T, D = e->c->hidden_size, V = e->c->vocab_size;
    ZAYA_TRY(zaya_engine_sync_rope(e));
    e->backward_ready = 0;
    ZAYA_TRY(load_batch(e, ids, targets, backward_ready));
    zaya_engine_prof_begin(e, 0, ZAYA_PROF_EMBED);
    be->embed_forward(be, e->L[0].x, e->p.embed, e->ids, e->p.in_bias, e->p.in_scale, N, D);
    zaya_status bs = blocks_forward(e);
    zaya_engine_prof_mark(e, ZAYA_PROF_HEAD);
    if (bs != ZAYA_OK || !targets) {
        zaya_engine_prof_mark(e, -1);
        return bs != ZAYA_OK ? bs : be->sync(be);
    }

    int64_t ntok = 0;
    for (int64_t i = 0; i < N; i++) ntok += targets[i] >= 0;
    if (ntok == 0) {
        zaya_engine_prof_mark(e, -1);
        return zaya_error_set(ZAYA_EINVAL, "the batch has no targets to score (all are ignored)");
    }
    const float scale = 1.0f / (float)ntok;
    for (int64_t r0 = 0; r0 < N; r0 += e->chunk_rows) {
        const int64_t rows = N - r0 < e->chunk_rows ? N - r0 : e->chunk_rows;
        const float *y = e->y_final + r0 * D;
        zaya_engine_lin_forward(e, e->logits, y, e->p.embed, rows, D, V, 0.0f, 0);
        be->xent(be, e->logits, e->losses + r0, e->targets + r0, rows, V, backward_ready ? scale : 0.0f);
        if (backward_ready)
            zaya_engine_lin_backward(e, e->dy_final + r0 * D, 0.0f, e->g.embed, e->logits, y, e->p.embed, rows, D, V, 0);
    }
    zaya_status ds = be->download(be, e->h_losses, e->losses, sizeof(float) * (size_t)N);
    zaya_engine_prof_mark(e, -1);
    ZAYA_TRY(ds);
    double sum = 0;
    for (int64_t i = 0; i < N; i++) sum += e->h_losses[i];
    e->last_loss = (float)(sum / (double)ntok);
    e->last_tokens = ntok;
    e->backward_ready = backward_ready;
    if (loss) *loss = e->last_loss;
    return ZAYA_OK;
}

zaya_status zaya_engine_backward(zaya_engine *e) {
    if (!e->L || !e->backward_ready)
        return zaya_error_set(ZAYA_EINVAL, "engine: backward needs a backward-ready forward (with targets) first");
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const int L = (int)c->num_hidden_layers;
    const int64_t N = e->B * e->T, D = c->hidden_size, R = c->router_hidden_size;

    zaya_engine_prof_begin(e, 1, ZAYA_PROF_NORM);
    be->rmsnorm_backward(be, e->dx, e->g.final_norm, e->dy_final, e->x_final, e->p.final_norm, e->rstd_final, N, D);
    grads_ready(e, L);
    be->zero(be, e->dr_carry, sizeof(float) * (size_t)(N * R));
    for (int l = L - 1; l >= 0; l--) {
        zaya_engine_layer *A = &e->L[l];
        const zaya_layer_params *P = &e->p.layers[l];
        zaya_layer_params *G = &e->g.layers[l];
        zaya_engine_prof_mark(e, ZAYA_PROF_NORM);
        be->merge_backward(be, e->da, e->dh, 0, e->dx, A->m, P->mlp_hb, P->mlp_hs, A->h, P->mlp_rb, P->mlp_rs, G->mlp_hb,
                           G->mlp_hs, G->mlp_rb, G->mlp_rs, N, D);
        zaya_engine_moe_backward(e, l, e->da, e->dz);
        zaya_engine_prof_mark(e, ZAYA_PROF_NORM);
        be->rmsnorm_backward(be, e->dxn, G->post_norm, e->dz, A->h, P->post_norm, A->rstd_post, N, D);
        be->add(be, e->dh, e->dxn, N * D);
        be->merge_backward(be, e->da, e->dx, 0, e->dh, A->a, P->att_hb, P->att_hs, A->x, P->att_rb, P->att_rs, G->att_hb,
                           G->att_hs, G->att_rb, G->att_rs, N, D);
        if (c->attention == ZAYA_ATTENTION_CCA) zaya_engine_cca_backward(e, l, e->da, e->dxn);
        else zaya_engine_softmax_attn_backward(e, l, e->da, e->dxn);
        zaya_engine_prof_mark(e, ZAYA_PROF_NORM);
        be->rmsnorm_backward(be, e->dz, G->in_norm, e->dxn, A->x, P->in_norm, A->rstd_in, N, D);
        be->add(be, e->dx, e->dz, N * D);
        grads_ready(e, l);
    }
    /* x_0 = (embed[ids] + b_in) * s_in */
    zaya_engine_prof_mark(e, ZAYA_PROF_EMBED);
    be->embed_backward(be, e->g.embed, e->g.in_bias, e->g.in_scale, e->dxn, e->dx, e->p.embed, e->ids, e->p.in_bias,
                       e->p.in_scale, e->emb_sorted, e->emb_seg, e->emb_nseg, N, D);
    zaya_engine_prof_mark(e, -1);
    grads_ready(e, -1);
    return be->sync(be);
}
