// The CUDA backend's CCA pieces and attention (src/gpu/be_cuda.h).
#include "gpu/be_cuda.h"

/* filled by the CCA kernels */
extern "C" void zaya_cuda_be_install_cca(zaya_backend *be) { (void)be; }
