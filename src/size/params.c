/* Exact parameter accounting from tensor shapes, plus FLOPs per token and the KV cache. One row per
 * tensor kind so that the table adds up to what a checkpoint stores (balancing biases of the ZAYA1
 * router are buffers, not parameters, and are not counted). */
#include <string.h>

#include "zaya/size.h"

typedef struct builder {
    zaya_size_params *p;
} builder;

static zaya_size_param_row *add(builder *b, const char *name, int64_t each, int64_t instances, int64_t active_instances) {
    if (each <= 0 || instances <= 0) return NULL;
    ZAYA_ASSERT(b->p->nrows < ZAYA_SIZE_MAX_ROWS);
    zaya_size_param_row *r = &b->p->rows[b->p->nrows++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->each = each;
    r->instances = instances;
    r->total = each * instances;
    r->active = each * active_instances;
    return r;
}

/* A weight matrix [out, in] used as a matmul by every token it sees. */
static void add_mat(builder *b, const char *name, int64_t out, int64_t in, int64_t inst, int64_t active_inst) {
    zaya_size_param_row *r = add(b, name, out * in, inst, active_inst);
    if (!r) return;
    r->matrix = r->matmul = 1;
    r->rows_ = out;
    r->cols_ = in;
}

static void add_vec(builder *b, const char *name, int64_t n, int64_t inst) { add(b, name, n, inst, inst); }

/* Multi-head latent attention: queries through an optional low-rank bottleneck, keys and values
 * decompressed per head from one shared latent (plus a shared RoPE key), the latent normed. */
static void attention_mla(builder *b, const zaya_size_arch *a, int64_t L) {
    int64_t D = a->hidden, H = a->heads, qk = a->qk_nope_dim + a->qk_rope_dim;
    if (a->q_lora_rank > 0) {
        add_mat(b, "attn.q_a_proj", a->q_lora_rank, D, L, L);
        add_vec(b, "attn.q_a_layernorm", a->q_lora_rank, L);
        add_mat(b, "attn.q_b_proj", H * qk, a->q_lora_rank, L, L);
    } else {
        add_mat(b, "attn.q_proj", H * qk, D, L, L);
    }
    add_mat(b, "attn.kv_a_proj_with_mqa", a->kv_lora_rank + a->qk_rope_dim, D, L, L);
    add_vec(b, "attn.kv_a_layernorm", a->kv_lora_rank, L);
    add_mat(b, "attn.kv_b_proj", H * (a->qk_nope_dim + a->v_head_dim), a->kv_lora_rank, L, L);
    add_mat(b, "attn.o_proj", D, H * a->v_head_dim, L, L);
}

static void attention(builder *b, const zaya_size_arch *a) {
    int64_t L = a->layers, D = a->hidden, d = a->head_dim;
    int64_t q = a->heads * d, kv = a->kv_heads * d;
    if (a->mla) {
        attention_mla(b, a, L);
        return;
    }
    add_mat(b, "attn.q_proj", q, D, L, L);
    add_mat(b, "attn.k_proj", kv, D, L, L);
    if (a->attn == ZAYA_SIZE_ATTN_CCA) {
        /* Value shift: half of the value channels from the current token, half from the previous one. */
        add_mat(b, "attn.v_proj_current", kv / 2, D, L, L);
        add_mat(b, "attn.v_proj_delayed", kv - kv / 2, D, L, L);
        int64_t ch = q + kv; /* packed q|k channels convolved over time */
        zaya_size_param_row *r = add(b, "attn.conv_depthwise.weight", ch * a->cca_time0, L, L);
        if (r) r->matmul = 1;
        add_vec(b, "attn.conv_depthwise.bias", ch, L);
        /* Grouped conv: one group per head, d inputs -> d outputs, kernel cca_time1. */
        r = add(b, "attn.conv_grouped.weight", ch * d * a->cca_time1, L, L);
        if (r) r->matmul = 1;
        add_vec(b, "attn.conv_grouped.bias", ch, L);
        add_vec(b, "attn.temp", a->kv_heads, L);
    } else {
        add_mat(b, "attn.v_proj", kv, D, L, L);
    }
    if (a->qkv_bias) {
        add_vec(b, "attn.q_bias", q, L);
        add_vec(b, "attn.k_bias", kv, L);
        add_vec(b, "attn.v_bias", kv, L);
    }
    if (a->qk_norm == ZAYA_SIZE_QK_NORM_HEAD) {
        add_vec(b, "attn.q_norm", d, L);
        add_vec(b, "attn.k_norm", d, L);
    } else if (a->qk_norm == ZAYA_SIZE_QK_NORM_FULL) {
        add_vec(b, "attn.q_norm", q, L);
        add_vec(b, "attn.k_norm", kv, L);
    }
    add_mat(b, "attn.o_proj", D, q, L, L);
    if (a->o_bias) add_vec(b, "attn.o_bias", D, L);
    if (a->attn_sinks) add_vec(b, "attn.sinks", a->heads, L);
}

static void router(builder *b, const zaya_size_arch *a) {
    int64_t M = a->n_moe_layers, D = a->hidden;
    if (M <= 0 || a->experts <= 0) return;
    if (a->router == ZAYA_SIZE_ROUTER_ZAYA) {
        int64_t R = a->router_hidden;
        add_mat(b, "router.down_proj", R, D, M, M);
        add_vec(b, "router.down_proj.bias", R, M);
        if (a->router_eda) add_vec(b, "router.eda_scale", R, M - 1); /* none on the first MoE layer */
        add_vec(b, "router.norm", R, M);
        add_mat(b, "router.fc1", R, R, M, M);
        add_vec(b, "router.fc1.bias", R, M);
        add_mat(b, "router.fc2", R, R, M, M);
        add_vec(b, "router.fc2.bias", R, M);
        add_mat(b, "router.out_proj", a->router_classes, R, M, M);
    } else {
        add_mat(b, "router.gate", a->experts, D, M, M);
        if (a->router_bias) add_vec(b, "router.gate.bias", a->experts, M);
    }
}

static void feed_forward(builder *b, const zaya_size_arch *a) {
    int64_t D = a->hidden, M = a->n_moe_layers, dense = a->layers - a->n_moe_layers;
    if (M > 0 && a->experts > 0) {
        /* Expert width, never the dense intermediate_size: the classic MoE calculator bug. */
        int64_t F = a->expert_ffn;
        add_mat(b, "experts.gate_up", 2 * F, D, M * a->experts, M * a->top_k);
        add_mat(b, "experts.down", D, F, M * a->experts, M * a->top_k);
        if (a->expert_bias) {
            add(b, "experts.gate_up.bias", 2 * F, M * a->experts, M * a->top_k);
            add(b, "experts.down.bias", D, M * a->experts, M * a->top_k);
        }
        if (a->shared_experts > 0) {
            int64_t S = a->shared_experts * M;
            add_mat(b, "shared_expert.gate_up", 2 * a->shared_ffn, D, S, S);
            add_mat(b, "shared_expert.down", D, a->shared_ffn, S, S);
            if (a->shared_gate) add_mat(b, "shared_expert.gate", 1, D, M, M);
        }
    }
    if (dense > 0) {
        add_mat(b, "mlp.gate_up", 2 * a->dense_ffn, D, dense, dense);
        add_mat(b, "mlp.down", D, a->dense_ffn, dense, dense);
    }
}

/* The decoder layers: norms, attention, router and feed-forward (the MTP module reuses it). */
static void decoder_layers(builder *b, const zaya_size_arch *a) {
    int64_t D = a->hidden, L = a->layers, nv = a->norm_bias ? 2 * D : D;
    add_vec(b, a->norm_bias ? "input_layernorm (+bias)" : "input_layernorm", nv, L);
    attention(b, a);
    if (a->residual_scales) add_vec(b, "post_attention_residual_scale", 4 * D, L);
    add_vec(b, a->norm_bias ? "post_attention_layernorm (+bias)" : "post_attention_layernorm", nv, L);
    if (a->norms_per_layer >= 4) add_vec(b, "pre/post_feedforward_layernorm", 2 * nv, L);
    router(b, a);
    feed_forward(b, a);
    if (a->residual_scales) add_vec(b, "post_mlp_residual_scale", 4 * D, L);
}

void zaya_size_count_params(const zaya_size_arch *a, zaya_size_params *p) {
    memset(p, 0, sizeof *p);
    builder b = {p};
    int64_t D = a->hidden, nv = a->norm_bias ? 2 * D : D;
    zaya_size_param_row *emb = add(&b, a->tied_embeddings ? "embed_tokens (tied head)" : "embed_tokens", a->vocab * D, 1, 1);
    emb->embedding = 1;
    if (!a->tied_embeddings) {
        zaya_size_param_row *h = add(&b, "lm_head", a->vocab * D, 1, 1);
        h->embedding = 1;
        h->matmul = 1;
    }
    if (a->lm_head_bias) add_vec(&b, "lm_head.bias", a->vocab, 1);
    if (a->residual_scales || a->input_affine) add_vec(&b, "input_hidden_states.scale+bias", 2 * D, 1);
    decoder_layers(&b, a);
    add_vec(&b, a->norm_bias ? "final_norm (+bias)" : "final_norm", nv, 1);
    int main_rows = p->nrows;
    if (a->mtp_layers > 0) {
        /* A multi-token-prediction module: the next token's embedding and the hidden state, each normed,
         * projected from 2D to D, one MoE decoder layer, a norm before the shared head. */
        zaya_size_params one;
        zaya_size_arch m = *a;
        m.layers = m.n_moe_layers = 1;
        m.mtp_layers = 0;
        builder mb = {&one};
        memset(&one, 0, sizeof one);
        decoder_layers(&mb, &m);
        int64_t layer = 0;
        for (int i = 0; i < one.nrows; i++) layer += one.rows[i].total;
        zaya_size_param_row *r = add(&b, "mtp.decoder_layer", layer, a->mtp_layers, 0);
        if (r) r->matmul = 1;
        add_mat(&b, "mtp.eh_proj", D, 2 * D, a->mtp_layers, 0);
        add(&b, "mtp.enorm+hnorm+head_norm", 3 * nv, a->mtp_layers, 0);
        for (int i = main_rows; i < p->nrows; i++) p->rows[i].mtp = 1;
    }
    for (int i = 0; i < p->nrows; i++) {
        const zaya_size_param_row *r = &p->rows[i];
        if (r->mtp) {
            p->mtp += r->total;
            continue;
        }
        p->total += r->total;
        p->active += r->active;
        if (r->embedding) p->embedding += r->total;
        else if (r->matrix) p->matrix_total += r->total;
    }
    p->non_embedding = p->total - p->embedding;
    p->active_non_embedding = p->active - p->embedding;
    p->active_compute = p->active - (a->tied_embeddings ? 0 : a->vocab * D); /* a tied table is also the head */
    /* DeepSeek-V3's checkpoint stores each MTP module with its own copies of the embedding and head */
    p->checkpoint = p->total + p->mtp + a->mtp_layers * a->vocab * D * (a->tied_embeddings ? 1 : 2);
}

void zaya_size_count_flops(const zaya_size_arch *a, int64_t seq, zaya_size_flops *f) {
    memset(f, 0, sizeof *f);
    zaya_size_params p;
    zaya_size_count_params(a, &p);
    double macs = 0;
    for (int i = 0; i < p.nrows; i++)
        if (p.rows[i].matmul) macs += (double)p.rows[i].active;
    if (a->tied_embeddings) macs += (double)a->vocab * a->hidden; /* the tied head is a matmul too */
    f->linear_fwd = 2 * macs;
    /* QK^T and AV: 2 FLOPs x heads x head_dim each, over the causal average context (T+1)/2. CCA runs
     * them in the compressed latent, which is what heads x head_dim already describes. */
    double ctx = seq > 0 ? (seq + 1) / 2.0 : 0, wctx = ctx;
    if (a->n_window_layers > 0 && seq > a->window) {
        /* position i attends to min(i + 1, W) keys: average over the sequence */
        double W = (double)a->window, T = (double)seq;
        wctx = (W * (W + 1) / 2 + (T - W) * W) / T;
    }
    double qk = a->mla ? (double)(a->qk_nope_dim + a->qk_rope_dim) : (double)a->head_dim;
    double vd = a->mla ? (double)a->v_head_dim : (double)a->head_dim;
    double per_ctx = 2.0 * (double)a->heads * (qk + vd);
    f->attn_fwd = per_ctx * ((double)(a->layers - a->n_window_layers) * ctx + (double)a->n_window_layers * wctx);
    f->fwd = f->linear_fwd + f->attn_fwd;
    f->train = 3 * f->fwd;           /* backward = 2x forward (input and weight gradients) */
    f->train_recompute = 4 * f->fwd; /* + one forward re-run */
}

static double kv_values_per_layer(const zaya_size_arch *a) {
    if (a->mla) return (double)(a->kv_lora_rank + a->qk_rope_dim); /* the compressed latent + shared RoPE key */
    return 2.0 * (double)a->kv_heads * (double)a->head_dim;
}

double zaya_size_kv_bytes_per_token(const zaya_size_arch *a, int bytes_per_value) {
    return (double)a->layers * kv_values_per_layer(a) * bytes_per_value;
}

double zaya_size_kv_bytes(const zaya_size_arch *a, int64_t context, int bytes_per_value) {
    double T = (double)(context > 0 ? context : 0);
    double Tw = a->n_window_layers > 0 && context > a->window ? (double)a->window : T;
    return kv_values_per_layer(a) * bytes_per_value *
           ((double)(a->layers - a->n_window_layers) * T + (double)a->n_window_layers * Tw);
}

double zaya_size_kv_state_bytes(const zaya_size_arch *a, int bytes_per_value) {
    if (a->attn != ZAYA_SIZE_ATTN_CCA) return 0;
    int64_t ch = (a->heads + a->kv_heads) * a->head_dim;
    int64_t cols = (a->cca_time0 - 1) + (a->cca_time1 - 1);
    int64_t vdel = a->kv_heads * a->head_dim / 2;
    return (double)a->layers * (double)(ch * cols + vdel) * bytes_per_value;
}
