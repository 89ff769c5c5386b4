/* Model lifetime: parameter block, deterministic init, activation planning. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "zaya/bf16.h"
#include "zaya/log.h"
#include "zaya/rng.h"

zaya_status zaya_model_init(zaya_model *m, const zaya_config *cfg, zaya_dtype dtype) {
    memset(m, 0, sizeof *m);
    ZAYA_TRY(zaya_config_validate(cfg));
    m->cfg = *cfg;
    m->dtype = dtype;
    ZAYA_TRY(zaya_layout_build(cfg, &m->tensors, &m->ntensors, &m->nfloats));
    size_t bytes = (size_t)m->nfloats * sizeof(float);
    m->params = zaya_calloc((size_t)m->nfloats, sizeof(float));
    m->grads = zaya_calloc((size_t)m->nfloats, sizeof(float));
    if (dtype == ZAYA_DTYPE_BF16) m->params_bf16 = zaya_calloc((size_t)m->nfloats, sizeof(uint16_t));
    int L = (int)cfg->num_hidden_layers;
    m->p.layers = calloc((size_t)L, sizeof(zaya_layer_params));
    m->g.layers = calloc((size_t)L, sizeof(zaya_layer_params));
    m->route_counts = calloc((size_t)L * (size_t)(cfg->num_experts + 1), sizeof(int64_t));
    m->route_spread = calloc((size_t)L, sizeof(double));
    m->route_psum = calloc((size_t)L * (size_t)(cfg->num_experts > 0 ? cfg->num_experts : 1), sizeof(double));
    if (!m->params || !m->grads || (dtype == ZAYA_DTYPE_BF16 && !m->params_bf16) || !m->p.layers || !m->g.layers ||
        !m->route_counts || !m->route_spread || !m->route_psum) {
        zaya_model_free(m);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate model parameters and gradients (2 x %.1f MiB)",
                              (double)bytes / 1048576.0);
    }
    zaya_layout_bind(m, m->params, &m->p);
    zaya_layout_bind(m, m->grads, &m->g);
    if (zaya_rope_table_init(&m->rope, cfg->max_position_embeddings, zaya_config_rot_dims(cfg), cfg->rope_theta) != 0) {
        zaya_model_free(m);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the RoPE table");
    }
    return ZAYA_OK;
}

void zaya_model_free(zaya_model *m) {
    zaya_free(m->params);
    zaya_free(m->grads);
    zaya_free(m->params_bf16);
    free(m->p.layers);
    free(m->g.layers);
    free(m->tensors);
    free(m->route_counts);
    free(m->route_spread);
    free(m->route_psum);
    free(m->acts);
    free(m->work);
    zaya_arena_free(&m->arena);
    zaya_rope_table_free(&m->rope);
    memset(m, 0, sizeof *m);
}

static int is_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Init (documented in docs/model.md): matrices N(0, initializer_range); the projections that
 * write into the residual stream (o_proj, expert or dense down_proj) scaled by 1/sqrt(2 L); conv kernels
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch's Conv1d; norms, residual scales, EDA scales and key
 * temperatures 1; every bias 0; balancing biases 0 with the skip class at -1. Tensor i draws from
 * Philox stream i, so the init does not depend on thread count. */
void zaya_model_init_tensor(const zaya_config *c, const zaya_tensor_info *t, int index, uint64_t seed, int64_t start,
                            int64_t count, float *dst) {
    const float std = (float)c->initializer_range;
    const float out_std = std / sqrtf(2.0f * (float)c->num_hidden_layers);
    const char *n = t->name;
    if (t->opt == ZAYA_OPT_NONE) { /* balancing biases */
        for (int64_t j = 0; j < count; j++) dst[j] = start + j == t->numel - 1 ? -1.0f : 0.0f;
    } else if (strstr(n, "conv_qk") && is_suffix(n, ".weight")) {
        float bound = 1.0f / sqrtf((float)(t->shape[1] * t->shape[2]));
        zaya_rng_fill_uniform(dst, (size_t)count, seed, (uint64_t)index, (uint64_t)start, -bound, bound);
    } else if (t->ndim >= 2) {
        int resid_out = is_suffix(n, "o_proj.weight") || is_suffix(n, "experts.down_proj") ||
                        is_suffix(n, ".mlp.down_proj.weight"); /* the dense MLP's output projection */
        zaya_rng_fill_normal(dst, (size_t)count, seed, (uint64_t)index, (uint64_t)start, 0.0f, resid_out ? out_std : std);
    } else if (is_suffix(n, "bias")) {
        memset(dst, 0, (size_t)count * sizeof(float));
    } else { /* norms, scales, EDA scales, temperatures */
        for (int64_t j = 0; j < count; j++) dst[j] = 1.0f;
    }
}

void zaya_model_init_weights(zaya_model *m, uint64_t seed) {
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        zaya_model_init_tensor(&m->cfg, t, i, seed, 0, t->numel, m->params + t->offset);
    }
    zaya_model_sync_weights(m);
}

void zaya_model_sync_weights(zaya_model *m) {
    if (m->params_bf16) zaya_f32_to_bf16_n(m->params_bf16, m->params, (size_t)m->nfloats);
}

void zaya_model_zero_grad(zaya_model *m) {
    float *g = m->grads;
    int64_t n = m->nfloats;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++) g[i] = 0.0f;
}

zaya_status zaya_model_set_rope_theta(zaya_model *m, double theta) {
    if (!(theta > 1.0)) return zaya_error_set(ZAYA_EINVAL, "RoPE theta must be > 1, got %g", theta);
    if (theta == m->cfg.rope_theta) return ZAYA_OK;
    zaya_rope_table fresh;
    if (zaya_rope_table_init(&fresh, m->cfg.max_position_embeddings, zaya_config_rot_dims(&m->cfg), theta) != 0)
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the RoPE table");
    zaya_rope_table_free(&m->rope);
    m->rope = fresh;
    m->cfg.rope_theta = theta;
    return ZAYA_OK;
}

void zaya_model_bind(const zaya_model *m, float *base, zaya_params *p) { zaya_layout_bind(m, base, p); }

const zaya_tensor_info *zaya_model_find_tensor(const zaya_model *m, const char *name) {
    for (int i = 0; i < m->ntensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
    return NULL;
}

/* Lays out every activation and scratch buffer; run once measuring, once for real. */
static void plan_layout(zaya_model *m, zaya_arena *a, zaya_layer_acts *acts, zaya_model_work *w) {
    const zaya_config *c = &m->cfg;
    const int64_t B = m->B, T = m->T, N = B * T, D = c->hidden_size, R = c->router_hidden_size;
    const int64_t E1 = c->num_experts + 1, Hq = c->num_attention_heads;
    /* MLP width: of one expert, or of the dense MLP */
    const int64_t F = c->mlp == ZAYA_MLP_DENSE ? zaya_config_dense_ffn(c) : c->moe_intermediate_size;
    const int64_t Hkv = c->num_key_value_heads, qd = zaya_config_q_dim(c), kvd = zaya_config_kv_dim(c);
    /* convolution output rows per sequence: under context parallelism one run per piece */
    const int64_t C = qd + kvd, Tc = m->cp.size > 1 ? zaya_cp_conv_rows(m) : T + c->cca_time1 - 1, V = c->vocab_size;
    for (int l = 0; l < (int)c->num_hidden_layers; l++) {
        zaya_layer_acts *A = &acts[l];
        A->x = zaya_arena_floats(a, (size_t)(N * D));
        A->rstd_in = zaya_arena_floats(a, (size_t)N);
        A->xn = zaya_arena_floats(a, (size_t)(N * D));
        A->qk_pre = zaya_arena_floats(a, (size_t)(N * C));
        A->conv0 = zaya_arena_floats(a, (size_t)(B * Tc * C));
        A->qk_raw = zaya_arena_floats(a, (size_t)(N * C));
        A->inv_norm = zaya_arena_floats(a, (size_t)(N * (Hq + Hkv)));
        A->qk = zaya_arena_floats(a, (size_t)(N * C));
        A->q = zaya_arena_floats(a, (size_t)(N * qd));
        A->k = zaya_arena_floats(a, (size_t)(N * kvd));
        A->vv = zaya_arena_floats(a, (size_t)(N * kvd));
        A->v = zaya_arena_floats(a, (size_t)(N * kvd));
        A->att = zaya_arena_floats(a, (size_t)(N * qd));
        A->lse = zaya_arena_floats(a, (size_t)(B * Hq * T));
        A->a = zaya_arena_floats(a, (size_t)(N * D));
        A->h = zaya_arena_floats(a, (size_t)(N * D));
        A->rstd_post = zaya_arena_floats(a, (size_t)N);
        A->z = zaya_arena_floats(a, (size_t)(N * D));
        A->r = zaya_arena_floats(a, (size_t)(N * R));
        A->rstd_r = zaya_arena_floats(a, (size_t)N);
        A->rn = zaya_arena_floats(a, (size_t)(N * R));
        A->a1 = zaya_arena_floats(a, (size_t)(N * R));
        A->g1 = zaya_arena_floats(a, (size_t)(N * R));
        A->a2 = zaya_arena_floats(a, (size_t)(N * R));
        A->g2 = zaya_arena_floats(a, (size_t)(N * R));
        A->probs = zaya_arena_floats(a, (size_t)(N * E1));
        A->idx = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
        A->gate = zaya_arena_floats(a, (size_t)N);
        A->perm = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
        A->row_of = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
        A->off = zaya_arena_alloc(a, (size_t)(E1 + 1) * sizeof(int64_t));
        A->xe = zaya_arena_floats(a, (size_t)(N * D));
        A->gu = zaya_arena_floats(a, (size_t)(N * 2 * F));
        A->act = zaya_arena_floats(a, (size_t)(N * F));
        A->ye = zaya_arena_floats(a, (size_t)(N * D));
        A->m = zaya_arena_floats(a, (size_t)(N * D));
        A->halo = NULL;
    }
    w->pos = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
    w->ids = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
    w->targets = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
    w->x_final = zaya_arena_floats(a, (size_t)(N * D));
    w->rstd_final = zaya_arena_floats(a, (size_t)N);
    w->y_final = zaya_arena_floats(a, (size_t)(N * D));
    w->dy_final = zaya_arena_floats(a, (size_t)(N * D));
    /* Logit chunks of at most ~16M floats (64 MiB) whatever the vocabulary. */
    int64_t rows = (16ll << 20) / V;
    if (rows < 1) rows = 1;
    if (rows > N) rows = N;
    w->chunk_rows = rows;
    w->logits = zaya_arena_floats(a, (size_t)(rows * V));
    w->losses = zaya_arena_floats(a, (size_t)N);
    w->qk_mult = zaya_arena_floats(a, (size_t)(Hq + Hkv));
    w->dqk_mult = zaya_arena_floats(a, (size_t)(Hq + Hkv));
    w->dx = zaya_arena_floats(a, (size_t)(N * D));
    w->dh = zaya_arena_floats(a, (size_t)(N * D));
    w->dz = zaya_arena_floats(a, (size_t)(N * D));
    w->da = zaya_arena_floats(a, (size_t)(N * D));
    w->dxn = zaya_arena_floats(a, (size_t)(N * D));
    w->dqk = zaya_arena_floats(a, (size_t)(N * C));
    w->dqk2 = zaya_arena_floats(a, (size_t)(N * C));
    w->dconv0 = zaya_arena_floats(a, (size_t)(B * Tc * C));
    w->dq = zaya_arena_floats(a, (size_t)(N * qd));
    w->dk = zaya_arena_floats(a, (size_t)(N * kvd));
    w->dv = zaya_arena_floats(a, (size_t)(N * kvd));
    w->dvv = zaya_arena_floats(a, (size_t)(N * kvd));
    w->datt = zaya_arena_floats(a, (size_t)(N * qd));
    w->dr = zaya_arena_floats(a, (size_t)(N * R));
    w->dr_carry = zaya_arena_floats(a, (size_t)(N * R));
    w->drn = zaya_arena_floats(a, (size_t)(N * R));
    w->dg = zaya_arena_floats(a, (size_t)(N * R));
    w->dg2 = zaya_arena_floats(a, (size_t)(N * R));
    w->dprobs = zaya_arena_floats(a, (size_t)(N * E1));
    w->dgate = zaya_arena_floats(a, (size_t)N);
    w->dye = zaya_arena_floats(a, (size_t)(N * D));
    w->dxe = zaya_arena_floats(a, (size_t)(N * D));
    w->dgu = zaya_arena_floats(a, (size_t)(N * 2 * F));
    w->dact = zaya_arena_floats(a, (size_t)(N * F));
    int64_t widest = D > C ? D : C;
    if (2 * F > widest) widest = 2 * F;
    if (R > widest) widest = R;
    if (c->attention == ZAYA_ATTENTION_CCA) { /* pieces of Tc / P rows under context parallelism, B * Tc rows in all */
        const int64_t P = m->cp.size > 1 ? zaya_cp_pieces(&m->cp) : 1;
        w->conv_ws = zaya_arena_floats(
            a, (size_t)zaya_conv1d_grouped_ws_floats(B * P, Tc / P, C, Hq + Hkv, c->cca_time1, 0));
    }
    w->pad_in = zaya_arena_floats(a, (size_t)(ZAYA_EXPERT_MIN_ROWS * widest));
    w->pad_out = zaya_arena_floats(a, (size_t)(ZAYA_EXPERT_MIN_ROWS * widest));
    if (m->dtype == ZAYA_DTYPE_BF16) {
        /* Largest matmul operand: an [N, widest] activation or a logits chunk. */
        int64_t cap = (N > ZAYA_EXPERT_MIN_ROWS ? N : ZAYA_EXPERT_MIN_ROWS) * widest; /* padded expert calls too */
        if (rows * V > cap) cap = rows * V;
        w->bf_cap = cap;
        w->bf_a = zaya_arena_alloc(a, (size_t)cap * sizeof(uint16_t));
        w->bf_b = zaya_arena_alloc(a, (size_t)cap * sizeof(uint16_t));
    }
    zaya_cp_plan(m, a);
}

zaya_status zaya_model_plan(zaya_model *m, int64_t B, int64_t T) {
    if (B <= 0 || T <= 0) return zaya_error_set(ZAYA_EINVAL, "batch (%lld) and sequence length (%lld) must be positive", (long long)B, (long long)T);
    const int64_t S = m->cp.size > 1 ? m->cp.size : 1, H = zaya_cp_halo_rows(&m->cfg), P = zaya_cp_pieces(&m->cp);
    if (S * T > m->cfg.max_position_embeddings)
        return zaya_error_set(ZAYA_EINVAL, "sequence length %lld exceeds max_position_embeddings %lld", (long long)(S * T),
                              (long long)m->cfg.max_position_embeddings);
    if (S > 1 && T % P != 0)
        return zaya_error_set(ZAYA_EINVAL, "context parallelism (zig-zag): %lld tokens per rank do not split into 2 chunks",
                              (long long)T);
    if (S > 1 && T / P < H)
        return zaya_error_set(ZAYA_EINVAL,
                              "context parallelism: a chunk of %lld tokens (sequence %lld in %lld chunks) is shorter "
                              "than the convolution halo of %lld tokens (cca_time0 + cca_time1 - 2); use fewer "
                              "context-parallel ranks or longer sequences",
                              (long long)(T / P), (long long)(S * T), (long long)(S * P), (long long)H);
    zaya_arena_free(&m->arena);
    free(m->acts);
    free(m->work);
    m->B = B;
    m->T = T;
    m->acts = calloc((size_t)m->cfg.num_hidden_layers, sizeof(zaya_layer_acts));
    m->work = calloc(1, sizeof(zaya_model_work));
    if (!m->acts || !m->work) return zaya_error_set(ZAYA_ENOMEM, "cannot allocate activation tables");
    zaya_arena measure;
    zaya_arena_init_measure(&measure);
    plan_layout(m, &measure, m->acts, m->work);
    ZAYA_TRY(zaya_arena_init(&m->arena, measure.used));
    plan_layout(m, &m->arena, m->acts, m->work);
    m->activation_bytes = measure.used;
    zaya_model_work *w = m->work;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) /* under CP: piece t / Tp's chunk */
            w->pos[b * T + t] = (int32_t)(S > 1 ? zaya_cp_chunk(&m->cp, m->cp.rank, (int)(t / (T / P))) * (T / P) + t % (T / P) : t);
    ZAYA_DEBUG("model plan B=%lld T=%lld: %.1f MiB of activations and scratch", (long long)B, (long long)T,
               (double)measure.used / 1048576.0);
    return ZAYA_OK;
}

void zaya_model_profile_attach(zaya_model *m, zaya_model_profile *prof) {
    m->prof = prof;
    m->prof_phase = -1;
}

const char *zaya_prof_phase_name(zaya_prof_phase phase) {
    static const char *const names[ZAYA_PROF_NPHASES] = {
        "embedding", "norms+merges", "attn projections", "CCA convs", "qk norm+rope",
        "attention", "router", "dispatch+combine", "experts", "head+xent"};
    return phase >= 0 && phase < ZAYA_PROF_NPHASES ? names[phase] : "?";
}
