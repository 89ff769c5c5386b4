/* Shared by the optimizer sources. */
#ifndef ZAYA_OPTIM_INTERNAL_H
#define ZAYA_OPTIM_INTERNAL_H

#include <stdint.h>

#include "zaya/optim.h"

/* The elementwise updates and the deterministic sum of squares (zaya_sumsq_f64) are kernels. */
#include "zaya/model_ops.h"

/* Newton-Schulz scratch and the Muon work order for the owned units (muon.c). */
zaya_status zaya_muon_init_scratch(zaya_optim *o);
void zaya_muon_free_scratch(zaya_optim *o);

#endif
