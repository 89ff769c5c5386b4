/* The optimizer on the backend: zaya_optim's units, ownership and state layout (the host optimizer
 * object stays the checkpoint's view), its AdamW and Muon math as backend operations. Newton-Schulz runs
 * each shape group of the owned Muon matrices in batches (the CPU backend: the CPU pool schedule's
 * gr->batch matrices; a device: as many of the group's matrices as ENGINE_NS_FLOATS iterate floats
 * hold, so that each GEMM fills the device; a matrix's result does not depend on its batch), the
 * three products of an iteration as batched GEMMs, as src/optim/muon.c does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

#define NS_A 3.4445f
#define NS_B (-4.7750f)
#define NS_C 2.0315f

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Most iterate floats of one Newton-Schulz batch on a device (1 GiB per iterate buffer). */
#define ENGINE_NS_FLOATS ((int64_t)1 << 28)

/* Matrices per Newton-Schulz batch of group gr. */
static int ns_batch(const zaya_engine *e, const zaya_ns_group *gr) {
    if (e->be->is_host) return gr->batch;
    const int64_t fit = max64(1, ENGINE_NS_FLOATS / (gr->m * gr->n));
    return (int)(fit < gr->count ? fit : gr->count);
}

void zaya_engine_optim_free(zaya_engine *e) {
    zaya_backend *be = e->be;
    if (!e->aliased) be->free(be, e->state);
    be->free(be, e->unit_sums);
    be->free(be, e->ns_x);
    be->free(be, e->ns_y);
    be->free(be, e->ns_a);
    be->free(be, e->ns_b);
    be->free(be, e->ns_u);
    be->free(be, e->ns_xh);
    be->free(be, e->ns_ah);
    be->free(be, e->ns_bh);
    be->free(be, e->exchange);
    e->exchange = NULL;
    free(e->h_unit_sums);
    e->state = NULL;
    e->unit_sums = NULL;
    e->ns_x = e->ns_y = e->ns_a = e->ns_b = e->ns_u = NULL;
    e->ns_xh = e->ns_ah = e->ns_bh = NULL;
    e->h_unit_sums = NULL;
    e->opt = NULL;
}

zaya_status zaya_engine_optim_init(zaya_engine *e, zaya_optim *opt) {
    zaya_engine_optim_free(e);
    zaya_backend *be = e->be;
    const int n = opt->plan.nunits;
    e->h_unit_sums = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!e->h_unit_sums) return zaya_error_set(ZAYA_ENOMEM, "engine: cannot allocate the optimizer's tables");
    int64_t widest = 0;
    for (int i = 0; i < n; i++)
        if (opt->plan.units[i].owner == opt->rank && opt->plan.units[i].kind == ZAYA_UNIT_MUON)
            widest = max64(widest, opt->plan.units[i].numel);
    const size_t f = sizeof(float), h = sizeof(uint16_t);
    size_t mn = (size_t)opt->ns.cap_mn, mm = (size_t)opt->ns.cap_mm;
    for (int g = 0; g < opt->nns_groups; g++) {
        const zaya_ns_group *gr = &opt->ns_groups[g];
        const int64_t b = ns_batch(e, gr);
        if ((size_t)(b * gr->m * gr->n) > mn) mn = (size_t)(b * gr->m * gr->n);
        if ((size_t)(b * gr->m * gr->m) > mm) mm = (size_t)(b * gr->m * gr->m);
    }
    zaya_status s = ZAYA_OK;
    if (e->aliased) e->state = opt->state_block; /* a host backend works on the host optimizer's state */
    else s = be->alloc(be, (void **)&e->state, (size_t)opt->state_floats * f);
    if (s == ZAYA_OK) s = be->alloc(be, (void **)&e->unit_sums, (size_t)(n > 0 ? n : 1) * sizeof(double));
    if (s == ZAYA_OK) s = be->alloc(be, (void **)&e->ns_x, mn * f);
    if (s == ZAYA_OK) s = be->alloc(be, (void **)&e->ns_y, mn * f);
    if (s == ZAYA_OK) s = be->alloc(be, (void **)&e->ns_a, mm * f);
    if (s == ZAYA_OK) s = be->alloc(be, (void **)&e->ns_b, mm * f);
    if (s == ZAYA_OK) s = be->alloc(be, (void **)&e->ns_u, (size_t)widest * f);
    if (s == ZAYA_OK && opt->cfg.muon_ns_dtype == ZAYA_DTYPE_BF16) {
        s = be->alloc(be, (void **)&e->ns_xh, mn * h);
        if (s == ZAYA_OK) s = be->alloc(be, (void **)&e->ns_ah, mm * h);
        if (s == ZAYA_OK) s = be->alloc(be, (void **)&e->ns_bh, mm * h);
    }
    if (s == ZAYA_OK && opt->plan.world_size > 1)
        s = be->alloc(be, (void **)&e->exchange, (size_t)e->host->nfloats * f);
    if (s == ZAYA_OK && opt->state_floats > 0 && !e->aliased)
        s = be->upload(be, e->state, opt->state_block, (size_t)opt->state_floats * f);
    if (s != ZAYA_OK) {
        zaya_engine_optim_free(e);
        return s;
    }
    e->opt = opt;
    return ZAYA_OK;
}

/* A unit's state on the backend: the same offset into the state block as on the host. */
static float *state_of(const zaya_engine *e, const float *host_ptr) { return e->state + (host_ptr - e->opt->state_block); }

zaya_status zaya_engine_grad_sqnorm(zaya_engine *e, double *sqnorm) {
    const zaya_optim *o = e->opt;
    if (!o) return zaya_error_set(ZAYA_EINVAL, "engine: zaya_engine_optim_init first");
    zaya_backend *be = e->be;
    const int n = o->plan.nunits;
    for (int i = 0; i < n; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner == o->rank) be->sqnorm(be, e->unit_sums + i, e->grads + u->offset, u->numel);
    }
    ZAYA_TRY(be->download(be, e->h_unit_sums, e->unit_sums, sizeof(double) * (size_t)(n > 0 ? n : 1)));
    double total = 0;
    for (int i = 0; i < n; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner != o->rank) continue;
        total += e->h_unit_sums[i];
        if (isfinite(e->h_unit_sums[i])) continue;
        *sqnorm = total;
        /* the error path: find the first offending element on the host */
        float *g = malloc(sizeof(float) * (size_t)u->numel);
        if (!g) return zaya_error_set(ZAYA_ENUMERIC, "non-finite gradient in tensor '%s'", u->tensor_name);
        zaya_status s = be->download(be, g, e->grads + u->offset, sizeof(float) * (size_t)u->numel);
        int64_t j = 0;
        while (s == ZAYA_OK && j < u->numel && isfinite(g[j])) j++;
        const int bad = s == ZAYA_OK && j < u->numel, nan = bad && isnan(g[j]);
        free(g);
        if (!bad) return zaya_error_set(ZAYA_ENUMERIC, "gradient norm of tensor '%s' overflows", u->tensor_name);
        if (u->expert >= 0)
            return zaya_error_set(ZAYA_ENUMERIC, "non-finite gradient (%s) in tensor '%s' expert %d element %lld",
                                  nan ? "NaN" : "Inf", u->tensor_name, u->expert, (long long)(u->start + j));
        return zaya_error_set(ZAYA_ENUMERIC, "non-finite gradient (%s) in tensor '%s' element %lld", nan ? "NaN" : "Inf",
                              u->tensor_name, (long long)(u->start + j));
    }
    *sqnorm = total;
    return ZAYA_OK;
}

static void step_adamw(zaya_engine *e, double lr, double grad_scale) {
    zaya_optim *o = e->opt;
    const zaya_optim_config *c = &o->cfg;
    const int64_t t = ++o->adamw_steps;
    const double bc1 = 1.0 - pow(c->adam_beta1, (double)t), bc2 = 1.0 - pow(c->adam_beta2, (double)t);
    const float w1 = (float)(1.0 - c->adam_beta1), b2 = (float)c->adam_beta2, w2 = (float)(1.0 - c->adam_beta2);
    const float neg_step = (float)(-lr / bc1), bc2_sqrt = (float)sqrt(bc2), eps = (float)c->adam_eps;
    for (int i = 0; i < o->plan.nunits; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner != o->rank || u->kind != ZAYA_UNIT_ADAMW) continue;
        const float decay = u->decay ? (float)(1.0 - lr * c->weight_decay) : 1.0f;
        e->be->adamw(e->be, e->params + u->offset, e->grads + u->offset, state_of(e, o->exp_avg[i]),
                     state_of(e, o->exp_avg_sq[i]), u->numel, (float)grad_scale, w1, b2, w2, neg_step, bc2_sqrt, eps,
                     decay);
    }
}

/* Newton-Schulz on `mats` packed m x n iterates in ns_x (m <= n); the result ends in ns_x. */
static void newton_schulz(zaya_engine *e, int mats, int64_t m, int64_t n) {
    zaya_backend *be = e->be;
    const zaya_optim *o = e->opt;
    const int64_t mn = m * n, mm = m * m, total = (int64_t)mats * mn, totala = (int64_t)mats * mm;
    float *X = e->ns_x, *Y = e->ns_y, *A = e->ns_a, *Bm = e->ns_b;
    const int bf16 = o->cfg.muon_ns_dtype == ZAYA_DTYPE_BF16;
    const zaya_dtype dt = bf16 ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32;
    be->normalize_batched(be, X, mats, mn, 1e-7);
    for (int it = 0; it < o->cfg.muon_ns_steps; it++) {
        be->lincomb(be, Y, NS_A, X, 0.0f, X, total); /* Y = a X */
        const void *xa = X;
        if (bf16) {
            be->to_bf16(be, e->ns_xh, X, total);
            xa = e->ns_xh;
        }
        be->gemm_batched(be, dt, 0, 1, mats, m, m, n, xa, mn, xa, mn, A, mm, 1.0f, 0.0f); /* A = X X^T */
        be->lincomb(be, Bm, NS_B, A, 0.0f, A, totala);                                  /* B = b A */
        const void *aa = A;
        if (bf16) {
            be->to_bf16(be, e->ns_ah, A, totala);
            aa = e->ns_ah;
        }
        be->gemm_batched(be, dt, 0, 0, mats, m, m, m, aa, mm, aa, mm, Bm, mm, NS_C, 1.0f); /* B += c A A */
        const void *ba = Bm;
        if (bf16) {
            be->to_bf16(be, e->ns_bh, Bm, totala);
            ba = e->ns_bh;
        }
        be->gemm_batched(be, dt, 0, 0, mats, m, n, m, ba, mm, xa, mn, Y, mn, 1.0f, 1.0f); /* Y += B X */
        float *t = X;
        X = Y;
        Y = t;
    }
    if (X != e->ns_x) be->copy(be, e->ns_x, X, sizeof(float) * (size_t)total);
}

static void step_muon(zaya_engine *e, double lr, double grad_scale) {
    zaya_optim *o = e->opt;
    o->muon_steps++;
    zaya_backend *be = e->be;
    const zaya_optim_config *c = &o->cfg;
    const double mlr = lr * c->muon_lr_scale;
    const float beta = (float)c->muon_momentum, w = (float)(1.0 - c->muon_momentum), gs = (float)grad_scale;
    const float wdecay = (float)(1.0 - mlr * c->weight_decay);
    for (int g = 0; g < o->nns_groups; g++) {
        const zaya_ns_group *gr = &o->ns_groups[g];
        const int64_t m = gr->m, n = gr->n, mn = m * n;
        const float neg = (float)(-mlr * 0.2 * sqrt((double)n));
        const int batch = ns_batch(e, gr);
        for (int j0 = 0; j0 < gr->count; j0 += batch) {
            const int mats = gr->count - j0 < batch ? gr->count - j0 : batch;
            for (int j = 0; j < mats; j++) { /* momentum, packed into the wide orientation */
                const int ui = gr->units[j0 + j];
                const zaya_optim_unit *u = &o->plan.units[ui];
                float *xj = e->ns_x + (int64_t)j * mn;
                const int tall = u->rows > u->cols;
                be->muon_momentum(be, tall ? e->ns_u : xj, state_of(e, o->momentum[ui]), e->grads + u->offset,
                                  u->numel, gs, beta, w, c->muon_nesterov);
                if (tall) be->transpose(be, xj, e->ns_u, u->rows, u->cols);
            }
            newton_schulz(e, mats, m, n);
            for (int j = 0; j < mats; j++) {
                const int ui = gr->units[j0 + j];
                const zaya_optim_unit *u = &o->plan.units[ui];
                const float *xj = e->ns_x + (int64_t)j * mn;
                const float decay = u->decay ? wdecay : 1.0f;
                if (u->rows > u->cols) { /* back to the unit's rows x cols */
                    be->transpose(be, e->ns_u, xj, u->cols, u->rows);
                    xj = e->ns_u;
                }
                be->muon_apply(be, e->params + u->offset, xj, u->numel, decay, neg);
            }
        }
    }
}

zaya_status zaya_engine_optim_step(zaya_engine *e, double lr, double grad_scale) {
    if (!e->opt) return zaya_error_set(ZAYA_EINVAL, "engine: zaya_engine_optim_init first");
    step_adamw(e, lr, grad_scale);
    step_muon(e, lr, grad_scale);
    zaya_engine_refresh_shadow(e);
    return e->be->sync(e->be);
}

float *zaya_engine_params(zaya_engine *e) { return e->params; }
float *zaya_engine_grads(zaya_engine *e) { return e->grads; }

zaya_status zaya_engine_reduce_grads(zaya_engine *e, zaya_engine_allreduce_fn sum, void *ctx, int world) {
    if (world <= 1) return ZAYA_OK;
    ZAYA_TRY(e->be->sync(e->be));
    ZAYA_TRY(sum(ctx, e->grads, e->host->nfloats));
    e->be->scale(e->be, e->grads, 1.0f / (float)world, e->host->nfloats);
    return ZAYA_OK;
}

zaya_status zaya_engine_share_params(zaya_engine *e, zaya_engine_allreduce_fn sum, void *ctx) {
    const zaya_optim *o = e->opt;
    if (!o || o->plan.world_size <= 1) return ZAYA_OK;
    zaya_backend *be = e->be;
    ZAYA_TRY(be->zero(be, e->exchange, sizeof(float) * (size_t)e->host->nfloats));
    for (int i = 0; i < o->plan.nunits; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner == o->rank)
            ZAYA_TRY(be->copy(be, e->exchange + u->offset, e->params + u->offset, sizeof(float) * (size_t)u->numel));
    }
    ZAYA_TRY(be->sync(be));
    ZAYA_TRY(sum(ctx, e->exchange, e->host->nfloats));
    /* every unit is owned by exactly one rank: the sum is each unit's new value; the buffers (the
     * balancing biases, in no unit) come back as zeros and are re-uploaded from the host before use */
    ZAYA_TRY(be->copy(be, e->params, e->exchange, sizeof(float) * (size_t)e->host->nfloats));
    zaya_engine_refresh_shadow(e);
    return be->sync(be);
}
