// The CUDA backend's norms, activations, embedding, router, experts and loss (src/gpu/be_cuda.h).
#include "gpu/be_cuda.h"

/* filled by the ops kernels */
extern "C" void zaya_cuda_be_install_ops(zaya_backend *be) { (void)be; }
