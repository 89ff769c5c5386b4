/* The compute dtype of matmul inputs (weights and activations as the GEMMs read them): shared by the
 * kernels, the model, the optimizer, the benchmarks and the trainer's options. */
#ifndef ZAYA_DTYPE_H
#define ZAYA_DTYPE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zaya_dtype { ZAYA_DTYPE_F32 = 0, ZAYA_DTYPE_BF16 = 1 } zaya_dtype;

#ifdef __cplusplus
}
#endif

#endif
