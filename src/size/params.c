/* Exact parameter accounting from tensor shapes, plus FLOPs per token and the KV cache. One row per
 * tensor kind so that the table adds up to what a checkpoint stores (balancing biases of the ZAYA1
 * router are buffers, not parameters, and are not counted). */
#include <string.h>

#include "zaya/size.h"

typedef struct builder {
    zaya_params *p;
} builder;

static zaya_param_row *add(builder *b, const char *name, int64_t each, int64_t instances, int64_t active_instances) {
    if (each <= 0 || instances <= 0) return NULL;
    ZAYA_ASSERT(b->p->nrows < ZAYA_SIZE_MAX_ROWS);
    zaya_param_row *r = &b->p->rows[b->p->nrows++];
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
    zaya_param_row *r = add(b, name, out * in, inst, active_inst);
    if (!r) return;
    r->matrix = r->matmul = 1;
    r->rows_ = out;
    r->cols_ = in;
}

static void add_vec(builder *b, const char *name, int64_t n, int64_t inst) { add(b, name, n, inst, inst); }

static void attention(builder *b, const zaya_arch *a) {
    int64_t L = a->layers, D = a->hidden, d = a->head_dim;
    int64_t q = a->heads * d, kv = a->kv_heads * d;
    add_mat(b, "attn.q_proj", q, D, L, L);
    add_mat(b, "attn.k_proj", kv, D, L, L);
    if (a->attn == ZAYA_ATTN_CCA) {
        /* Value shift: half of the value channels from the current token, half from the previous one. */
        add_mat(b, "attn.v_proj_current", kv / 2, D, L, L);
        add_mat(b, "attn.v_proj_delayed", kv - kv / 2, D, L, L);
        int64_t ch = q + kv; /* packed q|k channels convolved over time */
        zaya_param_row *r = add(b, "attn.conv_depthwise.weight", ch * a->cca_time0, L, L);
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
    if (a->qk_norm == ZAYA_QK_NORM_HEAD) {
        add_vec(b, "attn.q_norm", d, L);
        add_vec(b, "attn.k_norm", d, L);
    } else if (a->qk_norm == ZAYA_QK_NORM_FULL) {
        add_vec(b, "attn.q_norm", q, L);
        add_vec(b, "attn.k_norm", kv, L);
    }
    add_mat(b, "attn.o_proj", D, q, L, L);
    if (a->o_bias) add_vec(b, "attn.o_bias", D, L);
}

static void router(builder *b, const zaya_arch *a) {
    int64_t M = a->n_moe_layers, D = a->hidden;
    if (M <= 0 || a->experts <= 0) return;
    if (a->router == ZAYA_ROUTER_ZAYA) {
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

static void feed_forward(builder *b, const zaya_arch *a) {
    int64_t D = a->hidden, M = a->n_moe_layers, dense = a->layers - a->n_moe_layers;
    if (M > 0 && a->experts > 0) {
        /* Expert width, never the dense intermediate_size: the classic MoE calculator bug. */
        int64_t F = a->expert_ffn;
        add_mat(b, "experts.gate_up", 2 * F, D, M * a->experts, M * a->top_k);
        add_mat(b, "experts.down", D, F, M * a->experts, M * a->top_k);
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

void zaya_size_count_params(const zaya_arch *a, zaya_params *p) {
    memset(p, 0, sizeof *p);
    builder b = {p};
    int64_t D = a->hidden, L = a->layers;
    zaya_param_row *emb = add(&b, a->tied_embeddings ? "embed_tokens (tied head)" : "embed_tokens", a->vocab * D, 1, 1);
    emb->embedding = 1;
    if (!a->tied_embeddings) {
        zaya_param_row *h = add(&b, "lm_head", a->vocab * D, 1, 1);
        h->embedding = 1;
        h->matmul = 1;
    }
    if (a->residual_scales) add_vec(&b, "input_hidden_states.scale+bias", 2 * D, 1);
    add_vec(&b, "input_layernorm", D, L);
    attention(&b, a);
    if (a->residual_scales) add_vec(&b, "post_attention_residual_scale", 4 * D, L);
    add_vec(&b, "post_attention_layernorm", D, L);
    router(&b, a);
    feed_forward(&b, a);
    if (a->residual_scales) add_vec(&b, "post_mlp_residual_scale", 4 * D, L);
    add_vec(&b, "final_norm", D, 1);
    for (int i = 0; i < p->nrows; i++) {
        const zaya_param_row *r = &p->rows[i];
        p->total += r->total;
        p->active += r->active;
        if (r->embedding) p->embedding += r->total;
        else if (r->matrix) p->matrix_total += r->total;
    }
    p->non_embedding = p->total - p->embedding;
    p->active_non_embedding = p->active - p->embedding;
}

void zaya_size_flops(const zaya_arch *a, int64_t seq, zaya_flops *f) {
    memset(f, 0, sizeof *f);
    zaya_params p;
    zaya_size_count_params(a, &p);
    double macs = 0;
    for (int i = 0; i < p.nrows; i++)
        if (p.rows[i].matmul) macs += (double)p.rows[i].active;
    if (a->tied_embeddings) macs += (double)a->vocab * a->hidden; /* the tied head is a matmul too */
    f->linear_fwd = 2 * macs;
    /* QK^T and AV: 2 FLOPs x heads x head_dim each, over the causal average context (T+1)/2. CCA runs
     * them in the compressed latent, which is what heads x head_dim already describes. */
    double ctx = seq > 0 ? (seq + 1) / 2.0 : 0;
    f->attn_fwd = (double)a->layers * 4.0 * a->heads * a->head_dim * ctx;
    f->fwd = f->linear_fwd + f->attn_fwd;
    f->train = 3 * f->fwd;           /* backward = 2x forward (input and weight gradients) */
    f->train_recompute = 4 * f->fwd; /* + one forward re-run */
}

double zaya_size_kv_bytes_per_token(const zaya_arch *a, int bytes_per_value) {
    return (double)a->layers * 2.0 * a->kv_heads * a->head_dim * bytes_per_value;
}

double zaya_size_kv_state_bytes(const zaya_arch *a, int bytes_per_value) {
    if (a->attn != ZAYA_ATTN_CCA) return 0;
    int64_t ch = (a->heads + a->kv_heads) * a->head_dim;
    int64_t cols = (a->cca_time0 - 1) + (a->cca_time1 - 1);
    int64_t vdel = a->kv_heads * a->head_dim / 2;
    return (double)a->layers * (double)(ch * cols + vdel) * bytes_per_value;
}
