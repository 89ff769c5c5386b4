/* Inference weight store: what the inference engine reads, and nothing else (no gradients, no
 * optimizer state, no activations of training).
 *
 * Matrices (every 2-D/3-D projection and the tied embedding; not the conv kernels) are kept in the
 * store's dtype: f32, or bf16 as bf16 (no f32 copy). Vectors (norms, biases, scales, conv kernels,
 * temperatures, balancing biases: a few MiB in all) are always f32. Sources:
 *   - a zaya_model (a view: pointers into its f32 block or its bf16 shadow, nothing copied);
 *   - deterministic random weights (the init of zaya_model_init_weights, generated tensor by tensor
 *     in pieces, so no whole-model f32 array ever exists; bf16 matrices are the rounded f32 values);
 *   - a checkpoint: zaya's own or a Hugging Face directory of safetensors shards (either layout).
 *     A bf16 matrix stored as bf16 in a shard (2-byte aligned) is used in place from the read-only
 *     mapping of the shard; every other tensor is converted tensor by tensor into the store's own
 *     buffers. Every stored shape, dtype, size and offset is validated against the model's tensor
 *     table before any data is read (files are untrusted).
 * See docs/inference.md ("Memory"). */
#ifndef ZAYA_INFER_WEIGHTS_H
#define ZAYA_INFER_WEIGHTS_H

#include <stdint.h>

#include "zaya/config.h"
#include "zaya/dtype.h"
#include "zaya/kernels.h"
#include "zaya/model.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One block's weights. Matrices (const void *) are [out, in] row-major in the store's dtype. */
typedef struct zaya_infer_layer_w {
    const float *in_norm;
    const void *wq, *wk;          /* [q_dim, D], [kv_dim, D] */
    const void *wv_cur, *wv_del;  /* [kv_dim/2, D] each */
    const float *conv0_w, *conv0_b, *conv1_w, *conv1_b, *temp;
    const void *wo;               /* [D, q_dim] */
    const float *att_hs, *att_hb, *att_rs, *att_rb, *post_norm; /* residual scales NULL: plain residual */
    const void *r_down_w;         /* [R, D] */
    const float *r_down_b, *r_eda, *r_norm; /* r_eda NULL in block 0 and without EDA */
    const void *r_fc1_w, *r_fc2_w, *r_out_w;
    const void *r_lin_w;          /* [E, D] linear router (zaya_router "linear") */
    const float *r_fc1_b, *r_fc2_b, *bal_bias;
    const void *gate_up, *down;   /* [E, 2F, D], [E, D, F]; dense MLP: gate_proj [Fd, D], down_proj [D, Fd] */
    const void *up;               /* dense MLP: up_proj [Fd, D] */
    const float *mlp_hs, *mlp_hb, *mlp_rs, *mlp_rb;
} zaya_infer_layer_w;

typedef struct zaya_infer_weights {
    zaya_config cfg;
    zaya_dtype dtype; /* of the matrices */
    int ntensors;
    zaya_tensor_info *tensors; /* the model's tensor table (owned) */
    const void **data;         /* [ntensors]: each tensor's data (matrices in dtype, vectors f32) */
    const void *embed;         /* [V, D] */
    const float *in_scale, *in_bias, *final_norm;
    zaya_infer_layer_w *layers;
    const zaya_rope_table *rope;
    /* accounting */
    int64_t matrix_bytes;  /* every matrix in its dtype */
    int64_t vector_bytes;  /* the f32 vectors */
    int64_t mapped_bytes;  /* of matrix_bytes, used in place from mapped shards */
    int64_t owned_bytes;   /* buffers this store allocated for weights (mapped shards excluded) */
    /* storage (private) */
    zaya_rope_table rope_own;
    float *vec;
    void *mat;
    struct zaya_model_source *src; /* kept open while tensors are used from its mappings */
} zaya_infer_weights;

/* Matrices vs vectors: ndim >= 2 and not a conv kernel. */
int zaya_infer_is_matrix(const zaya_tensor_info *t);

/* A view of a model's weights: matrices from its bf16 shadow (bf16 models) or f32 block. The model
 * must outlive the view; free it with zaya_infer_weights_free (frees only the view). */
zaya_status zaya_infer_weights_view(zaya_infer_weights *w, const zaya_model *m);
/* Deterministic random weights (zaya_model_init_weights' values) for a config. */
zaya_status zaya_infer_weights_random(zaya_infer_weights *w, const zaya_config *cfg, zaya_dtype dtype, uint64_t seed);
/* Weights of a zaya checkpoint (root or step directory) or an HF directory. map = 0 converts every
 * tensor into own buffers even where the mapping could be used (tests compare the two paths). */
zaya_status zaya_infer_weights_load(zaya_infer_weights *w, const char *path, zaya_dtype dtype, int map);
void zaya_infer_weights_free(zaya_infer_weights *w);

/* Bytes of weights one decode step of one token reads: every dense matrix, `experts` experts per
 * block, the tied head (the whole table), the embedding row and the vectors. */
double zaya_infer_weights_token_bytes(const zaya_infer_weights *w, double experts);

#ifdef __cplusplus
}
#endif

#endif
