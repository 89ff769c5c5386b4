/* FLOP and KV-cache accounting derived from the configuration (see model.h for the conventions). */
#include "zaya/model.h"

zaya_model_costs zaya_model_costs_at(const zaya_config *c, int64_t T, int elem_bytes) {
    zaya_model_costs k = {0};
    const double D = (double)c->hidden_size, R = (double)c->router_hidden_size, F = (double)c->moe_intermediate_size;
    const double qd = (double)zaya_config_q_dim(c), kvd = (double)zaya_config_kv_dim(c), C = qd + kvd;
    const double E1 = (double)(c->num_experts + 1), L = (double)c->num_hidden_layers, hd = (double)c->head_dim;
    double router = D * R + 2 * R * R + R * E1;      /* ZAYA router */
    if (c->router == ZAYA_ROUTER_LINEAR) router = D * (double)c->num_experts;
    double mlp = 2 * F * D + F * D;                   /* one SwiGLU expert */
    if (c->mlp == ZAYA_MLP_DENSE) {                   /* the dense SwiGLU MLP, no router */
        const double Fd = (double)zaya_config_dense_ffn(c);
        router = 0;
        mlp = 3 * Fd * D;
    }
    double per_block = D * C            /* q|k projections */
                       + D * kvd        /* v current|delayed */
                       + qd * D         /* o_proj */
                       + router + mlp;
    k.matmul_flops = 2.0 * (L * per_block + D * (double)c->vocab_size);
    /* GQA / MHA have the same projection shapes (q|k, v, o) and no convolutions or conv state. */
    const int cca = c->attention == ZAYA_ATTENTION_CCA;
    k.conv_flops = cca ? 2.0 * L * (C * (double)c->cca_time0 + C * hd * (double)c->cca_time1) : 0.0;
    /* QK^T and PV: 2 * 2 * q_dim multiply-adds per visible key; (T + 1) / 2 keys on average. */
    k.attention_flops = L * 4.0 * qd * ((double)T + 1.0) / 2.0;
    k.forward_flops = k.matmul_flops + k.conv_flops + k.attention_flops;
    k.training_flops = 3.0 * k.forward_flops;
    k.kv_bytes_per_token = (int64_t)c->num_hidden_layers * 2 * zaya_config_kv_dim(c) * elem_bytes;
    k.state_bytes_per_seq = !cca ? 0 : (int64_t)c->num_hidden_layers *
                            ((zaya_config_q_dim(c) + zaya_config_kv_dim(c)) * (c->cca_time0 + c->cca_time1 - 2) +
                             zaya_config_kv_dim(c) / 2) * elem_bytes;
    return k;
}
