/* Shared by the optimizer sources. */
#ifndef ZAYA_OPTIM_INTERNAL_H
#define ZAYA_OPTIM_INTERNAL_H

#include <stdint.h>

#include "zaya/optim.h"

/* Elements per block of the deterministic sums of squares. */
#define ZAYA_OPTIM_SUM_BLOCK 4096

/* Sum of x^2 in double over fixed blocks, on the calling thread. */
double zaya_optim_sumsq(const float *x, int64_t n);

/* Newton-Schulz scratch and the Muon work order for the owned units (muon.c). */
zaya_status zaya_muon_init_scratch(zaya_optim *o);
void zaya_muon_free_scratch(zaya_optim *o);

#endif
