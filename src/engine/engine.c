/* The engine's memory: the parameter and gradient blocks on the backend, the activation plan (one
 * backend allocation carved up front: forward and backward never allocate), host <-> backend copies. */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "zaya/bf16.h"
#include "zaya/log.h"

#define ALIGN 256

typedef struct carver {
    char *base; /* NULL: measuring */
    size_t used;
} carver;

static void *carve(carver *cv, size_t bytes) {
    cv->used = (cv->used + ALIGN - 1) / ALIGN * ALIGN;
    void *p = cv->base ? cv->base + cv->used : NULL;
    cv->used += bytes;
    return p;
}
#define FLOATS(n) ((float *)carve(cv, (size_t)(n) * sizeof(float)))
#define INTS(n) ((int32_t *)carve(cv, (size_t)(n) * sizeof(int32_t)))

zaya_status zaya_engine_backend_open(zaya_device d, zaya_backend **out) {
    *out = NULL;
    if (d.kind == ZAYA_DEVICE_CPU) return zaya_backend_cpu_init(out);
    return zaya_gpu_backend_init(d, out);
}

zaya_status zaya_engine_backend_peak(zaya_backend *be, zaya_dtype dt, double *gflops) {
    *gflops = 0;
    if (be->is_host) return ZAYA_OK;
    zaya_device d;
    ZAYA_TRY(zaya_device_parse(be->name, &d));
    ZAYA_TRY(zaya_gpu_select(d));
    if (dt == ZAYA_DTYPE_F32) { /* f32 GEMMs run without TF32: the datasheet's FP32 rate */
        zaya_gpu_props pr;
        ZAYA_TRY(zaya_gpu_props_get(d.index, &pr));
        const zaya_gpu_datasheet *ds = zaya_gpu_datasheet_find(pr.name);
        if (ds) *gflops = ds->f32_tflops * 1e3;
        return ZAYA_OK;
    }
    zaya_gpu_gemm *g = NULL;
    ZAYA_TRY(zaya_gpu_gemm_init(&g, ZAYA_GPU_BF16, 0, 0, 8192, 8192, 8192, 1));
    double best = 0, mean = 0;
    zaya_status s = zaya_gpu_gemm_time(g, 3, 10, &best, &mean);
    zaya_gpu_gemm_free(g);
    ZAYA_TRY(s);
    *gflops = 2.0 * 8192.0 * 8192.0 * 8192.0 / (best * 1e-3) * 1e-9;
    return ZAYA_OK;
}

zaya_backend *zaya_engine_backend(const zaya_engine *e) { return e->be; }
size_t zaya_engine_activation_bytes(const zaya_engine *e) { return e->arena_bytes; }
float zaya_engine_last_loss(const zaya_engine *e) { return e->last_loss; }
int64_t zaya_engine_last_tokens(const zaya_engine *e) { return e->last_tokens; }
const int64_t *zaya_engine_route_counts(const zaya_engine *e) { return e->route_counts; }
const double *zaya_engine_route_spread(const zaya_engine *e) { return e->route_spread; }
const double *zaya_engine_route_psum(const zaya_engine *e) { return e->route_psum; }

void zaya_engine_set_route_hook(zaya_engine *e, void (*hook)(void *, zaya_engine *, int), void *ctx) {
    e->route_hook = hook;
    e->route_hook_ctx = ctx;
}

static zaya_status balloc(zaya_engine *e, void **p, size_t bytes) { return e->be->alloc(e->be, p, bytes); }

/* The bf16 shadow of the whole parameter block, refreshed after every change of the f32 weights. */
static void sync_shadow(zaya_engine *e) {
    if (e->params_bf16) e->be->to_bf16(e->be, e->params_bf16, e->params, e->host->nfloats);
}

zaya_status zaya_engine_sync_rope(zaya_engine *e) {
    const zaya_rope_table *t = &e->host->rope;
    if (e->rope_cos && e->rope_theta == t->theta) return ZAYA_OK;
    const size_t bytes = (size_t)(t->max_pos * (t->rot_dims / 2)) * sizeof(float);
    if (!e->rope_cos) {
        ZAYA_TRY(balloc(e, (void **)&e->rope_cos, bytes));
        ZAYA_TRY(balloc(e, (void **)&e->rope_sin, bytes));
    }
    ZAYA_TRY(e->be->upload(e->be, e->rope_cos, t->cos, bytes));
    ZAYA_TRY(e->be->upload(e->be, e->rope_sin, t->sin, bytes));
    e->rope_theta = t->theta;
    return ZAYA_OK;
}

/* The operations each part of a config's step calls (forward, backward, optimizer). */
static const zaya_backend_op k_ops_all[] = {
    ZAYA_OP_gemm, ZAYA_OP_rmsnorm_forward, ZAYA_OP_rmsnorm_backward, ZAYA_OP_merge_forward, ZAYA_OP_merge_backward,
    ZAYA_OP_add, ZAYA_OP_scale, ZAYA_OP_embed_forward, ZAYA_OP_embed_backward, ZAYA_OP_rope_forward,
    ZAYA_OP_rope_backward, ZAYA_OP_split_qk, ZAYA_OP_merge_qk, ZAYA_OP_attention_forward, ZAYA_OP_attention_backward,
    ZAYA_OP_swiglu_forward, ZAYA_OP_swiglu_backward, ZAYA_OP_xent, ZAYA_OP_adamw, ZAYA_OP_muon_momentum,
    ZAYA_OP_sqnorm, ZAYA_OP_normalize_batched, ZAYA_OP_lincomb, ZAYA_OP_transpose, ZAYA_OP_muon_apply,
    ZAYA_OP_gemm_batched, ZAYA_OP_to_bf16};
static const zaya_backend_op k_ops_cca[] = {
    ZAYA_OP_conv_dw_forward, ZAYA_OP_conv_dw_backward, ZAYA_OP_conv_grouped_forward, ZAYA_OP_conv_grouped_backward,
    ZAYA_OP_qk_mean_skip_forward, ZAYA_OP_qk_mean_skip_backward, ZAYA_OP_value_shift_forward,
    ZAYA_OP_value_shift_backward, ZAYA_OP_l2norm_forward, ZAYA_OP_l2norm_backward};
static const zaya_backend_op k_ops_moe[] = {
    ZAYA_OP_top1, ZAYA_OP_top1_count, ZAYA_OP_route_stats, ZAYA_OP_router_dlogits, ZAYA_OP_gather_rows,
    ZAYA_OP_moe_combine_forward, ZAYA_OP_moe_combine_backward, ZAYA_OP_scatter_rows};
static const zaya_backend_op k_ops_zaya_router[] = {ZAYA_OP_add_bias, ZAYA_OP_gelu_forward, ZAYA_OP_gelu_backward,
                                                    ZAYA_OP_softmax_forward, ZAYA_OP_colsum_add};
static const zaya_backend_op k_ops_eda[] = {ZAYA_OP_eda_forward, ZAYA_OP_eda_backward};
static const zaya_backend_op k_ops_linear_router[] = {ZAYA_OP_softmax_ld_forward};

static zaya_status need_ops(const zaya_backend *be, const zaya_backend_op *ops, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (!zaya_backend_supports(be, ops[i]))
            return zaya_error_set(ZAYA_EUNSUPPORTED, "backend %s does not implement %s, which %s needs", be->name,
                                  zaya_backend_op_name(ops[i]), what);
    return ZAYA_OK;
}
#define NEED(ops, what) ZAYA_TRY(need_ops(be, ops, sizeof ops / sizeof ops[0], what))

zaya_status zaya_engine_check_backend(const zaya_backend *be, const zaya_config *c) {
    if (be->version != ZAYA_BACKEND_VERSION)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "backend %s fills operation table version %d, this build needs %d",
                              be->name, be->version, ZAYA_BACKEND_VERSION);
    NEED(k_ops_all, "every training step");
    if (c->attention == ZAYA_ATTENTION_CCA) NEED(k_ops_cca, "CCA attention (zaya_attention \"cca\")");
    if (zaya_config_is_moe(c)) {
        NEED(k_ops_moe, "the MoE (zaya_mlp \"moe\")");
        if (c->router == ZAYA_ROUTER_LINEAR) {
            NEED(k_ops_linear_router, "the linear router (zaya_router \"linear\")");
        } else {
            NEED(k_ops_zaya_router, "the ZAYA router");
            if (zaya_config_has_eda(c)) NEED(k_ops_eda, "the router's depth averaging (EDA)");
        }
    }
    return ZAYA_OK;
}

zaya_status zaya_engine_init(zaya_engine **out, zaya_backend *be, zaya_model *host) {
    *out = NULL;
    const zaya_config *c = &host->cfg;
    if (host->cp.size > 1)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "the %s engine does not run context parallelism (cp %d): use the CPU "
                              "trainer for it", be->name, host->cp.size);
    ZAYA_TRY(zaya_engine_check_backend(be, c));
    zaya_engine *e = calloc(1, sizeof *e);
    if (!e) return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the engine");
    e->be = be;
    e->host = host;
    e->c = c;
    e->dt = host->dtype;
    const int L = (int)c->num_hidden_layers;
    const int64_t E = c->num_experts, E1 = E + 1, nf = host->nfloats;
    e->p.layers = calloc((size_t)L, sizeof(zaya_layer_params));
    e->g.layers = calloc((size_t)L, sizeof(zaya_layer_params));
    e->route_counts = calloc((size_t)(L * E1), sizeof(int64_t));
    e->route_spread = calloc((size_t)L, sizeof(double));
    e->route_psum = calloc((size_t)(L * (E > 0 ? E : 1)), sizeof(double));
    if (!e->p.layers || !e->g.layers || !e->route_counts || !e->route_spread || !e->route_psum) {
        zaya_engine_free(e);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the engine's tables");
    }
    /* A host backend works on the host model's own parameter, gradient and shadow blocks: nothing to
     * copy, and what reads the host model (checkpoints, data parallelism's reductions, fault injection,
     * sampling) sees the engine's values as they are. */
    e->aliased = be->is_host;
    zaya_status s = ZAYA_OK;
    if (e->aliased) {
        e->params = host->params;
        e->grads = host->grads;
        e->params_bf16 = host->params_bf16;
    } else {
        s = balloc(e, (void **)&e->params, (size_t)nf * sizeof(float));
        if (s == ZAYA_OK) s = balloc(e, (void **)&e->grads, (size_t)nf * sizeof(float));
        if (s == ZAYA_OK && e->dt == ZAYA_DTYPE_BF16)
            s = balloc(e, (void **)&e->params_bf16, (size_t)nf * sizeof(uint16_t));
        if (s == ZAYA_OK) s = be->upload(be, e->params, host->params, (size_t)nf * sizeof(float));
    }
    if (s == ZAYA_OK) s = balloc(e, (void **)&e->stats, (size_t)(E1 + 1) * sizeof(double));
    if (s == ZAYA_OK) s = balloc(e, (void **)&e->counts, (size_t)(E1 + 1) * sizeof(int64_t));
    if (s == ZAYA_OK) s = zaya_engine_sync_rope(e);
    if (s != ZAYA_OK) {
        zaya_engine_free(e);
        return s;
    }
    zaya_model_bind(host, e->params, &e->p);
    zaya_model_bind(host, e->grads, &e->g);
    sync_shadow(e);
    s = be->sync(be);
    if (s != ZAYA_OK) {
        zaya_engine_free(e);
        return s;
    }
    *out = e;
    return ZAYA_OK;
}

static void free_plan(zaya_engine *e) {
    if (e->arena) e->be->free(e->be, e->arena);
    e->arena = NULL;
    e->arena_bytes = 0;
    if (e->L) {
        for (int l = 0; l < (int)e->c->num_hidden_layers; l++) free(e->L[l].off);
        free(e->L);
    }
    e->L = NULL;
    free(e->h_idx);
    e->h_idx = NULL;
    e->B = e->T = 0;
}

void zaya_engine_free(zaya_engine *e) {
    if (!e) return;
    zaya_engine_optim_free(e);
    free_plan(e);
    zaya_backend *be = e->be;
    if (!e->aliased) {
        be->free(be, e->params);
        be->free(be, e->grads);
        be->free(be, e->params_bf16);
    }
    be->free(be, e->rope_cos);
    be->free(be, e->rope_sin);
    be->free(be, e->stats);
    be->free(be, e->counts);
    free(e->p.layers);
    free(e->g.layers);
    free(e->route_counts);
    free(e->route_spread);
    free(e->route_psum);
    free(e);
}

/* Every buffer of the plan, as src/model/model.c's plan_layout lays out the CPU model's. */
static void layout(zaya_engine *e, carver *cv) {
    const zaya_config *c = e->c;
    const int64_t B = e->B, T = e->T, N = B * T, D = c->hidden_size, R = c->router_hidden_size;
    const int64_t E1 = c->num_experts + 1, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const int64_t F = c->mlp == ZAYA_MLP_DENSE ? zaya_config_dense_ffn(c) : c->moe_intermediate_size;
    const int64_t qd = zaya_config_q_dim(c), kvd = zaya_config_kv_dim(c), C = qd + kvd, Tc = T + c->cca_time1 - 1;
    const int64_t V = c->vocab_size;
    for (int l = 0; l < (int)c->num_hidden_layers; l++) {
        zaya_engine_layer *A = &e->L[l];
        A->x = FLOATS(N * D);
        A->rstd_in = FLOATS(N);
        A->xn = FLOATS(N * D);
        A->qk_pre = FLOATS(N * C);
        A->conv0 = FLOATS(B * Tc * C);
        A->qk_raw = FLOATS(N * C);
        A->inv_norm = FLOATS(N * (Hq + Hkv));
        A->qk = FLOATS(N * C);
        A->q = FLOATS(N * qd);
        A->k = FLOATS(N * kvd);
        A->vv = FLOATS(N * kvd);
        A->v = FLOATS(N * kvd);
        A->att = FLOATS(N * qd);
        A->lse = FLOATS(B * Hq * T);
        A->a = FLOATS(N * D);
        A->h = FLOATS(N * D);
        A->rstd_post = FLOATS(N);
        A->z = FLOATS(N * D);
        A->r = FLOATS(N * R);
        A->rstd_r = FLOATS(N);
        A->rn = FLOATS(N * R);
        A->a1 = FLOATS(N * R);
        A->g1 = FLOATS(N * R);
        A->a2 = FLOATS(N * R);
        A->g2 = FLOATS(N * R);
        A->probs = FLOATS(N * E1);
        A->idx = INTS(N);
        A->gate = FLOATS(N);
        A->perm = INTS(N);
        A->row_of = INTS(N);
        A->xe = FLOATS(N * D);
        A->gu = FLOATS(N * 2 * F);
        A->act = FLOATS(N * F);
        A->ye = FLOATS(N * D);
        A->m = FLOATS(N * D);
    }
    e->pos = INTS(N);
    e->ids = INTS(N);
    e->targets = INTS(N);
    e->emb_sorted = INTS(N);
    e->emb_seg = INTS(N + 1);
    e->x_final = FLOATS(N * D);
    e->rstd_final = FLOATS(N);
    e->y_final = FLOATS(N * D);
    e->dy_final = FLOATS(N * D);
    int64_t rows = (16ll << 20) / V; /* logit chunks of at most ~16M floats whatever the vocabulary */
    if (rows < 1) rows = 1;
    if (rows > N) rows = N;
    e->chunk_rows = rows;
    e->logits = FLOATS(rows * V);
    e->losses = FLOATS(N);
    e->qk_mult = FLOATS(Hq + Hkv);
    e->dqk_mult = FLOATS(Hq + Hkv);
    e->dx = FLOATS(N * D);
    e->dh = FLOATS(N * D);
    e->dz = FLOATS(N * D);
    e->da = FLOATS(N * D);
    e->dxn = FLOATS(N * D);
    e->dqk = FLOATS(N * C);
    e->dqk2 = FLOATS(N * C);
    e->dconv0 = FLOATS(B * Tc * C);
    e->dq = FLOATS(N * qd);
    e->dk = FLOATS(N * kvd);
    e->dv = FLOATS(N * kvd);
    e->dvv = FLOATS(N * kvd);
    e->datt = FLOATS(N * qd);
    e->dr = FLOATS(N * R);
    e->dr_carry = FLOATS(N * R);
    e->drn = FLOATS(N * R);
    e->dg = FLOATS(N * R);
    e->dg2 = FLOATS(N * R);
    e->dprobs = FLOATS(N * E1);
    e->dgate = FLOATS(N);
    e->dye = FLOATS(N * D);
    e->dxe = FLOATS(N * D);
    e->dgu = FLOATS(N * 2 * F);
    e->dact = FLOATS(N * F);
    if (e->dt == ZAYA_DTYPE_BF16) {
        int64_t widest = D > C ? D : C;
        if (2 * F > widest) widest = 2 * F;
        if (R > widest) widest = R;
        int64_t cap = N * widest;
        if (rows * V > cap) cap = rows * V;
        e->bf_cap = cap;
        e->bf_a = carve(cv, (size_t)cap * sizeof(uint16_t));
        e->bf_b = carve(cv, (size_t)cap * sizeof(uint16_t));
    }
}

zaya_status zaya_engine_plan(zaya_engine *e, int64_t B, int64_t T) {
    if (B <= 0 || T <= 0)
        return zaya_error_set(ZAYA_EINVAL, "batch (%lld) and sequence length (%lld) must be positive", (long long)B,
                              (long long)T);
    if (T > e->c->max_position_embeddings)
        return zaya_error_set(ZAYA_EINVAL, "sequence length %lld exceeds max_position_embeddings %lld", (long long)T,
                              (long long)e->c->max_position_embeddings);
    free_plan(e);
    const int L = (int)e->c->num_hidden_layers;
    const int64_t N = B * T, E1 = e->c->num_experts + 1;
    e->B = B;
    e->T = T;
    e->L = calloc((size_t)L, sizeof(zaya_engine_layer));
    /* host scratch: idx, perm, row_of, sorted [N] each, seg [N + 1], fill [E1], radix counts, losses [N] */
    e->h_idx = malloc(sizeof(int32_t) * (size_t)(5 * N + 1 + E1 + 65537) + sizeof(float) * (size_t)N);
    if (!e->L || !e->h_idx) {
        free_plan(e);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the engine's plan tables");
    }
    e->h_perm = e->h_idx + N;
    e->h_row_of = e->h_perm + N;
    e->h_sorted = e->h_row_of + N;
    e->h_seg = e->h_sorted + N;
    e->h_fill = e->h_seg + N + 1;
    e->h_cnt = e->h_fill + E1;
    e->h_losses = (float *)(e->h_cnt + 65537);
    for (int l = 0; l < L; l++) {
        e->L[l].off = calloc((size_t)(E1 + 1), sizeof(int64_t));
        if (!e->L[l].off) {
            free_plan(e);
            return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the engine's plan tables");
        }
    }
    carver measure = {NULL, 0};
    layout(e, &measure);
    zaya_status s = e->be->alloc(e->be, &e->arena, measure.used);
    if (s != ZAYA_OK) {
        free_plan(e);
        return zaya_error_set(s, "planning B=%lld T=%lld (%.1f MiB of activations): %s", (long long)B, (long long)T,
                              (double)measure.used / 1048576.0, zaya_error_message());
    }
    e->B = B;
    e->T = T;
    carver real = {e->arena, 0};
    layout(e, &real);
    e->arena_bytes = measure.used;
    if (s == ZAYA_OK && e->be->is_host) {
        /* the CPU reference backend runs the CPU model's own paths (backend.h): the padded expert
         * products and the grouped convolution's GEMM workspace */
        const zaya_config *c = e->c;
        const int64_t D = c->hidden_size, R = c->router_hidden_size, F = c->moe_intermediate_size;
        const int64_t C = zaya_config_q_dim(c) + zaya_config_kv_dim(c), H = c->num_attention_heads + c->num_key_value_heads;
        int64_t widest = D > C ? D : C;
        if (2 * F > widest) widest = 2 * F;
        if (R > widest) widest = R;
        const size_t pad = (size_t)(16 * 2 * widest) * sizeof(float) + 128;
        const size_t conv = (size_t)zaya_conv1d_grouped_ws_floats(B, T + c->cca_time1 - 1, C, H, c->cca_time1, 0) *
                            sizeof(float);
        s = e->be->reserve(e->be, pad > conv ? pad : conv);
    }
    /* positions and the per-head multipliers' constant part */
    int32_t *pos = e->h_perm; /* scratch */
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) pos[b * T + t] = (int32_t)t;
    if (s == ZAYA_OK) s = e->be->upload(e->be, e->pos, pos, sizeof(int32_t) * (size_t)N);
    const int64_t H = e->c->num_attention_heads + e->c->num_key_value_heads;
    float ones[H];
    for (int64_t i = 0; i < H; i++) ones[i] = 1.0f; /* the q heads' multipliers (the k heads' follow each block) */
    if (s == ZAYA_OK) s = e->be->upload(e->be, e->qk_mult, ones, sizeof(float) * (size_t)H);
    if (s != ZAYA_OK) { /* no half-made plan: the next forward asks for one */
        free_plan(e);
        return s;
    }
    ZAYA_DEBUG("engine plan B=%lld T=%lld on %s: %.1f MiB of activations and scratch", (long long)B, (long long)T,
               e->be->name, (double)e->arena_bytes / 1048576.0);
    return ZAYA_OK;
}

zaya_status zaya_engine_zero_grad(zaya_engine *e) {
    return e->be->zero(e->be, e->grads, (size_t)e->host->nfloats * sizeof(float));
}

zaya_status zaya_engine_scale_grads(zaya_engine *e, float s) {
    e->be->scale(e->be, e->grads, s, e->host->nfloats);
    return ZAYA_OK;
}

zaya_status zaya_engine_push_bias(zaya_engine *e, int l) {
    const float *hb = e->host->p.layers[l].bal_bias;
    if (!hb || e->aliased) return ZAYA_OK; /* aliased: the engine reads the host's biases themselves */
    return e->be->upload(e->be, e->p.layers[l].bal_bias, hb, sizeof(float) * (size_t)(e->c->num_experts + 1));
}

/* The host's biases over the backend's copies, so that a whole-block download keeps them. */
static zaya_status push_biases(zaya_engine *e) {
    for (int l = 0; l < (int)e->c->num_hidden_layers; l++) ZAYA_TRY(zaya_engine_push_bias(e, l));
    return ZAYA_OK;
}

zaya_status zaya_engine_pull(zaya_engine *e) {
    zaya_model *h = e->host;
    if (e->aliased) return ZAYA_OK; /* the host's blocks are the engine's */
    ZAYA_TRY(push_biases(e));
    ZAYA_TRY(e->be->download(e->be, h->params, e->params, (size_t)h->nfloats * sizeof(float)));
    zaya_model_sync_weights(h);
    if (e->opt && e->opt->state_floats > 0)
        ZAYA_TRY(e->be->download(e->be, e->opt->state_block, e->state, (size_t)e->opt->state_floats * sizeof(float)));
    return ZAYA_OK;
}

zaya_status zaya_engine_push(zaya_engine *e) {
    zaya_model *h = e->host;
    if (e->aliased) {
        sync_shadow(e);
        return e->be->sync(e->be);
    }
    ZAYA_TRY(e->be->upload(e->be, e->params, h->params, (size_t)h->nfloats * sizeof(float)));
    if (e->opt && e->opt->state_floats > 0)
        ZAYA_TRY(e->be->upload(e->be, e->state, e->opt->state_block, (size_t)e->opt->state_floats * sizeof(float)));
    sync_shadow(e);
    return e->be->sync(e->be);
}

zaya_status zaya_engine_pull_grads(zaya_engine *e, float *dst) {
    return e->be->download(e->be, dst, e->grads, (size_t)e->host->nfloats * sizeof(float));
}

void zaya_engine_refresh_shadow(zaya_engine *e) { sync_shadow(e); }
