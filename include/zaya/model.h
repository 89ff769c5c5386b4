/* The ZAYA1 model: parameters, planned activations, forward and backward on the CPU.
 *
 * All parameters (and the balancing-bias buffers) live in one contiguous f32 block described by a
 * tensor table with Hugging Face names; gradients mirror it. Activations for a fixed (batch, seq)
 * are planned and allocated once by zaya_model_plan(); forward/backward never allocate.
 * See docs/model.md for the math, the init and the skip-class semantics. */
#ifndef ZAYA_MODEL_H
#define ZAYA_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "zaya/alloc.h"
#include "zaya/attention.h"
#include "zaya/config.h"
#include "zaya/kernels.h"
#include "zaya/matmul.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zaya_opt_class {
    ZAYA_OPT_ADAMW = 0, /* embeddings, norms, biases, scales, conv kernels, temperatures */
    ZAYA_OPT_MUON = 1,  /* 2-D hidden matrices (each expert's matrices separately) */
    ZAYA_OPT_NONE = 2,  /* buffers: balancing biases (updated by the balancer, not by backprop) */
} zaya_opt_class;

typedef struct zaya_tensor_info {
    char name[96]; /* Hugging Face name */
    int ndim;
    int64_t shape[3];
    int64_t offset; /* in floats from the start of the parameter block */
    int64_t numel;
    zaya_opt_class opt;
    int layer;    /* block index, -1 for model-level tensors */
    int nmatrix;  /* independent matrices stacked along dim 0 (experts), else 1 */
    int embedding;/* 1 for the (tied) embedding table */
} zaya_tensor_info;

/* Pointers of one block into a parameter (or gradient) block. */
typedef struct zaya_layer_params {
    float *in_norm;
    float *wqk;     /* [q_dim + kv_dim, D]: q_proj rows then k_proj rows (adjacent tensors) */
    float *wv;      /* [kv_dim, D]: v_proj_current rows then v_proj_delayed rows */
    float *conv0_w, *conv0_b; /* depthwise [C, k0], [C] */
    float *conv1_w, *conv1_b; /* grouped [C, head_dim, k1], [C] */
    float *temp;              /* [kv_heads] */
    float *wo;                /* [D, q_dim] */
    float *att_hs, *att_hb, *att_rs, *att_rb; /* post_attention_residual_scale (NULL: plain residual) */
    float *post_norm;
    float *r_down_w, *r_down_b; /* [R, D], [R] (ZAYA routers) */
    float *r_eda;               /* [R], NULL in block 0 and without EDA */
    float *r_norm;              /* [R] */
    float *r_fc1_w, *r_fc1_b, *r_fc2_w, *r_fc2_b; /* [R, R], [R] */
    float *r_out_w;             /* [E+1, R] */
    float *r_lin_w;             /* [E, D] linear router (zaya_router "linear") */
    float *bal_bias;            /* [E+1] buffer (MoE only) */
    float *gate_up;             /* [E, 2F, D]; dense MLP: gate_proj|up_proj [2 Fd, D] */
    float *down;                /* [E, D, F]; dense MLP: down_proj [D, Fd] */
    float *mlp_hs, *mlp_hb, *mlp_rs, *mlp_rb; /* post_mlp_residual_scale (NULL: plain residual) */
} zaya_layer_params;

typedef struct zaya_params {
    float *embed;              /* [V, D] */
    float *in_scale, *in_bias; /* [D] */
    zaya_layer_params *layers;
    float *final_norm;         /* [D] */
} zaya_params;

typedef struct zaya_layer_acts zaya_layer_acts; /* private, see src/model/internal.h */

/* Context parallelism (docs/parallelism.md): a CP group of `size` ranks splits every sequence of a
 * batch into chunks. Contiguous layout: `size` chunks, rank r holds chunk r. Zig-zag layout (causal
 * load balance): 2 * size chunks, rank r holds chunks r and 2*size-1-r, so every rank's queries see
 * the same number of keys. A model planned for T tokens per sequence (its share) keeps its pieces in
 * that order: rows [p*T/P, (p+1)*T/P) of each sequence are piece p (P = 1 or 2). Attention reaches the
 * other chunks through these exchanges, implemented by the caller (the trainer, over zaya/dist.h):
 * the model names no transport. All ranks of the group make the same calls in the same order. Every
 * function returns ZAYA_OK or an error with its message set. */
typedef struct zaya_cp_ops {
    int rank, size;
    int zigzag; /* 0: contiguous chunks, 1: zig-zag pairs */
    void *ctx;
    /* Starts exchange `slot` (0..3): sends `count` floats of send to rank dst and receives `count`
     * floats from rank src into recv; -1 skips that half. send and recv stay untouched until
     * halo_wait(slot). */
    zaya_status (*halo_start)(void *ctx, int slot, int dst, const float *send, int src, float *recv, int64_t count);
    zaya_status (*halo_wait)(void *ctx, int slot);
    /* recv[size * count]: every rank's send[count], in rank order. */
    zaya_status (*allgather)(void *ctx, const float *send, float *recv, int64_t count);
    /* recv[count]: the sum over ranks of block `rank` of their send[size * count]. */
    zaya_status (*reduce_scatter)(void *ctx, const float *send, float *recv, int64_t count);
} zaya_cp_ops;

/* Pieces per rank (1 contiguous, 2 zig-zag) and the global chunk (of size * pieces) piece p of rank r
 * holds: its positions are [chunk * Tp, (chunk + 1) * Tp) with Tp = T / pieces. */
int zaya_cp_pieces(const zaya_cp_ops *cp);
int64_t zaya_cp_chunk(const zaya_cp_ops *cp, int rank, int piece);

/* Bytes one rank sent in each kind of CP exchange since the counters were last cleared. */
typedef struct zaya_cp_traffic {
    double halo_bytes, gather_bytes, scatter_bytes;
} zaya_cp_traffic;

typedef struct zaya_model {
    zaya_config cfg;
    zaya_dtype dtype;
    int ntensors;
    zaya_tensor_info *tensors;
    int64_t nfloats; /* size of the parameter block, buffers included */
    float *params, *grads;
    uint16_t *params_bf16; /* bf16 shadow used by bf16 matmuls (NULL in f32) */
    zaya_params p, g;
    /* plan for (B, T) */
    int64_t B, T;
    zaya_arena arena;
    size_t activation_bytes;
    zaya_layer_acts *acts;
    struct zaya_model_work *work;
    zaya_rope_table rope;
    /* routing statistics of the last forward: counts[l * (E+1) + e] tokens routed to class e */
    int64_t *route_counts;
    /* route_spread[l]: sum over tokens and experts of (p_e - batch mean of p_e)^2, the token-to-token
     * variation of the expert scores (the balancer's unit of bias step, see zaya/balance.h) */
    double *route_spread;
    /* route_psum[l * E + e]: sum over tokens of expert e's probability (the batch-mean score the
     * balancer's drift compensation follows) */
    double *route_psum;
    float last_loss;
    int64_t last_tokens; /* targets counted in the last loss */
    /* Called by zaya_model_backward as soon as gradients become final: with the block index l after
     * block l's backward, with num_hidden_layers after the final norm, and with -1 at the very end
     * (embedding and input affine). Data parallelism starts reducing those gradients meanwhile. */
    void (*on_grads_ready)(void *ctx, int layer);
    void *on_grads_ready_ctx;
    /* Called by zaya_model_forward in each MoE block after the router's scores (acts[l].probs,
     * route_spread[l], route_psum) and before the biased top-1 selection of block l; NULL: none. The
     * trainer balances the batch on its own scores here (zaya/balance.h, balancing in the forward). */
    void (*route_hook)(void *ctx, struct zaya_model *m, int layer);
    void *route_hook_ctx;
    /* context parallelism (zaya_model_set_cp); cp.size == 1: none */
    zaya_cp_ops cp;
    zaya_cp_traffic cp_traffic;
    zaya_status cp_status; /* first failed exchange of the last forward/backward (ZAYA_OK: none) */
    /* phase profile (zaya_model_profile_attach): the record, the pass (0 forward, 1 backward), the
     * phase being charged (-1: none) and when its span began */
    struct zaya_model_profile *prof;
    int prof_pass, prof_phase;
    uint64_t prof_t0;
} zaya_model;

zaya_status zaya_model_init(zaya_model *m, const zaya_config *cfg, zaya_dtype dtype);
void zaya_model_free(zaya_model *m);
/* Deterministic init from (seed): see docs/model.md. */
void zaya_model_init_weights(zaya_model *m, uint64_t seed);
/* The same init for elements [start, start + count) of tensor `index` (t = its table entry) alone:
 * weights can be generated tensor by tensor, in pieces, without a whole-model f32 block. */
void zaya_model_init_tensor(const zaya_config *c, const zaya_tensor_info *t, int index, uint64_t seed, int64_t start,
                            int64_t count, float *dst);
/* Allocates activations for batches of B sequences of T tokens (frees a previous plan). */
zaya_status zaya_model_plan(zaya_model *m, int64_t B, int64_t T);
/* Context parallelism for the next zaya_model_plan (NULL or size 1: none). The plan's T is then this
 * rank's share of each sequence: positions, RoPE and the causal mask follow each piece's global
 * position, the convolutions and the value shift take their left context from the rank holding the
 * previous chunk, attention sees the keys of every earlier position. Refused (ZAYA_EINVAL, naming the
 * sizes) when T does not split into the layout's pieces, a piece is shorter than the convolution halo
 * (cca_time0 + cca_time1 - 2 tokens) or the whole sequence exceeds max_position_embeddings. The
 * forward's loss is then this rank's chunk's mean, and backward leaves this rank's share of every
 * gradient: the caller sums both over the group. */
zaya_status zaya_model_set_cp(zaya_model *m, const zaya_cp_ops *cp);
/* Rows of left context one chunk takes from the previous one: cca_time0 + cca_time1 - 2 (CCA), 0 (GQA/MHA). */
int64_t zaya_cp_halo_rows(const zaya_config *c);
/* Refreshes the bf16 weight shadow after the f32 master weights changed (no-op in f32). */
void zaya_model_sync_weights(zaya_model *m);
void zaya_model_zero_grad(zaya_model *m);
/* Rebuilds the RoPE table for a new base (context-extension phases raise theta). */
zaya_status zaya_model_set_rope_theta(zaya_model *m, double theta);

/* Forward over ids[B*T]. With targets (entries < 0 ignored) it returns the mean loss and, when
 * `backward_ready`, also leaves d(loss)/d(final hidden) and the tied-head gradient in place so that
 * zaya_model_backward() can follow. Token ids are validated (< vocab). */
/* Re-runs the top-1 selection of the last forward with the current balancing biases: counts[l * (E+1)
 * + e] tokens of that forward (its last micro-batch) that would now go to class e. Exact integer
 * counts (the same for any thread count); the balancer iterates on them within a step. */
void zaya_model_route_recount(const zaya_model *m, int64_t *counts);
/* The same for block l alone: counts[e], e < E + 1 (inside a route_hook: the current forward's scores). */
void zaya_model_route_count_layer(const zaya_model *m, int layer, int64_t *counts);
zaya_status zaya_model_forward(zaya_model *m, const int32_t *ids, const int32_t *targets, int backward_ready,
                               float *loss);
/* Accumulates parameter gradients of the mean loss of the last forward (grads += ...). */
void zaya_model_backward(zaya_model *m);
/* Logits [B*T, V] (or only rows where row_mask[i] != 0 when row_mask is given, packed in order). */
zaya_status zaya_model_logits(zaya_model *m, const int32_t *ids, const uint8_t *row_mask, float *logits);

/* Where forward and backward spend their time. Each pass is cut into consecutive spans, each charged
 * to the phase it belongs to, so a pass's phases add up to its wall time; matmul calls (their bf16
 * operand staging included) are timed again inside their phase. Off unless zaya_model_profile_attach
 * was given a record; accumulates until detached (NULL) or cleared by the caller. */
typedef enum zaya_prof_phase {
    ZAYA_PROF_EMBED,       /* token embedding and input affine (backward: its gradients) */
    ZAYA_PROF_NORM,        /* RMSNorms and the residual-scaling merges */
    ZAYA_PROF_ATTN_PROJ,   /* q|k, v and o projections (GEMMs), q/k split and merge */
    ZAYA_PROF_CONV,        /* CCA: value shift, depthwise + grouped convolutions, QK-mean terms */
    ZAYA_PROF_QKNORM_ROPE, /* L2 QK norm with temperature, RoPE */
    ZAYA_PROF_ATTENTION,   /* the causal attention kernel (and context-parallel K/V exchanges) */
    ZAYA_PROF_ROUTER,      /* router: down-projection, EDA, norm, MLP, softmax (and its scores' statistics) */
    ZAYA_PROF_DISPATCH,    /* top-1 selection, dispatch, gather to expert order, gate and combine */
    ZAYA_PROF_EXPERTS,     /* expert GEMMs and SwiGLU (or the dense MLP) */
    ZAYA_PROF_HEAD,        /* tied LM head and the chunked cross-entropy */
    ZAYA_PROF_NPHASES
} zaya_prof_phase;
typedef struct zaya_model_profile {
    double s[2][ZAYA_PROF_NPHASES];       /* seconds per [forward, backward][phase] */
    double gemm_s[2][ZAYA_PROF_NPHASES];  /* of which in matmul calls, bf16 staging included */
    double stage_s[2][ZAYA_PROF_NPHASES]; /* of which converting operands to bf16 */
    double flop[2][ZAYA_PROF_NPHASES];    /* matmul FLOPs (2 m n k per call) */
} zaya_model_profile;
/* NULL detaches. The record is the caller's; the model only adds to it. */
void zaya_model_profile_attach(zaya_model *m, zaya_model_profile *prof);
const char *zaya_prof_phase_name(zaya_prof_phase phase);

const zaya_tensor_info *zaya_model_find_tensor(const zaya_model *m, const char *name);
/* Binds p->layers[l] (an array of num_hidden_layers entries the caller owns) and the model-level
 * pointers to the tensors of a block of m->nfloats floats at base, laid out as m's parameter block (a
 * gradient block, or a copy in another memory: the pointers are only computed, never dereferenced). */
void zaya_model_bind(const zaya_model *m, float *base, zaya_params *p);
/* Token ids of a batch of N rows within [0, vocab) and targets below vocab (negative: ignored); the
 * error names the first bad position. */
zaya_status zaya_model_check_tokens(const zaya_config *c, const int32_t *ids, const int32_t *targets, int64_t N);
/* The tensor table of a config without allocating a model (caller frees *tensors). */
zaya_status zaya_layout_build_public(const zaya_config *c, zaya_tensor_info **tensors, int *ntensors, int64_t *nfloats);

/* Counts (exact integers). */
typedef struct zaya_param_counts {
    int64_t total;             /* stored parameters, embedding included, buffers excluded */
    int64_t embedding;
    int64_t non_embedding;
    int64_t active_non_embedding; /* one expert per block */
    int64_t buffers;
} zaya_param_counts;
zaya_param_counts zaya_model_count_params(const zaya_config *cfg);


/* Compute and memory accounting (src/model/accounting.c). FLOPs count a multiply-add as 2; the
 * attention term averages the causal key count over a sequence of length T; experts count one
 * expert per token (top-1; tokens routed to the skip class would cost less). Training = 3x forward. */
typedef struct zaya_model_costs {
    double matmul_flops;    /* per token, forward: every dense GEMM incl. router, one expert, LM head */
    double conv_flops;      /* per token, forward: depthwise + grouped CCA convolutions */
    double attention_flops; /* per token, forward, at length T */
    double forward_flops, training_flops;
    int64_t kv_bytes_per_token;  /* compressed K and V of every block, in the given element size */
    int64_t state_bytes_per_seq; /* conv state + delayed value per block, per sequence */
} zaya_model_costs;
zaya_model_costs zaya_model_costs_at(const zaya_config *cfg, int64_t T, int elem_bytes);

/* `zaya model info`: the config, parameter counts with a per-component breakdown (total and active),
 * KV cache and FLOPs per token at length seq, as a table or (json) as JSON on out; with out_dir also
 * model_info.json there. */
zaya_status zaya_model_info_report(const char *config, int64_t seq, int json, const char *out_dir, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
