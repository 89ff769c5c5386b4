/* The training engine: the ZAYA1 model's forward and backward and its optimizer step (AdamW + Muon) as
 * operations of a compute backend (zaya/backend.h), with parameters, gradients, optimizer state and
 * activations in the backend's memory (src/engine, docs/gpu.md).
 *
 * It runs the same math, in the same order, as the CPU model (zaya/model.h) and optimizer
 * (zaya/optim.h): with the CPU backend it reproduces them bit for bit (tests/test_engine.c). It is the
 * step of `zaya train` (the CPU backend by default, the CUDA backend with `--device cuda`), `zaya
 * study` and `zaya bench model|train`.
 *
 * Ownership. An engine is built over a host zaya_model (config, tensor table, RoPE table) and, for
 * training, a host zaya_optim (the unit plan, the state layout, the step counters): those stay the
 * checkpoint's view. On a host backend (the CPU one) the engine works on the host model's parameter,
 * gradient and bf16-shadow blocks and the host optimizer's state block themselves: pull and push only
 * refresh the shadow, and the host model's on_grads_ready hook runs during the backward at
 * zaya_model_backward's points. A device backend holds working copies; zaya_engine_pull() refreshes the host copies
 * (parameters, optimizer state) before a checkpoint, a sample or an evaluation on the host, and
 * zaya_engine_push() loads them after a resume. The balancing biases (ZAYA_OPT_NONE buffers) are the
 * exception: the host copy is the master (the balancer updates it) and the engine uploads a block's
 * biases before each selection.
 *
 * Scope: CCA or softmax (GQA / MHA) attention, the ZAYA router (with or without EDA) or the linear
 * router, top-1 MoE or the dense MLP, scaled or plain residuals, f32 or bf16 GEMM operands. Context
 * parallelism is not supported on an engine yet (zaya_engine_init refuses a model with cp.size > 1). */
#ifndef ZAYA_ENGINE_H
#define ZAYA_ENGINE_H

#include <stdint.h>

#include "zaya/backend.h"
#include "zaya/gpu.h"
#include "zaya/model.h"
#include "zaya/optim.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_engine zaya_engine;

/* The backend of a device: the CPU reference backend for ZAYA_DEVICE_CPU, the CUDA backend for a CUDA
 * device (errors name the device; a build without CUDA says so). Freed with zaya_backend_free. */
zaya_status zaya_engine_backend_open(zaya_device d, zaya_backend **out);
/* The matmul peak MFU is measured against, in GFLOP/s: for a CUDA backend the best of ten 8192^3 bf16
 * cuBLASLt GEMMs (bf16), or the datasheet's FP32 rate (f32: the engine's f32 GEMMs use no TF32); 0
 * for the CPU backend (the caller measures the CPU's own). */
zaya_status zaya_engine_backend_peak(zaya_backend *be, zaya_dtype dt, double *gflops);

/* Whether backend `be` can run the training step of config c: the operation table's version, then
 * every operation the config's forward, backward and optimizer call (ZAYA_EUNSUPPORTED naming the
 * backend, the first missing operation and the part of the config that needs it). zaya_engine_init
 * runs it first, so a run is refused before its first step. */
zaya_status zaya_engine_check_backend(const zaya_backend *be, const zaya_config *c);
/* Uploads the host model's parameters (and their bf16 shadow in bf16) to a new engine on `be` (the
 * backend stays the caller's). Refused: context parallelism, a backend that lacks an operation the
 * config needs (zaya_engine_check_backend). */
zaya_status zaya_engine_init(zaya_engine **out, zaya_backend *be, zaya_model *host);
void zaya_engine_free(zaya_engine *e);
zaya_backend *zaya_engine_backend(const zaya_engine *e);
/* Activations for batches of B sequences of T tokens (frees a previous plan); the bytes planned. */
zaya_status zaya_engine_plan(zaya_engine *e, int64_t B, int64_t T);
size_t zaya_engine_activation_bytes(const zaya_engine *e);

/* As zaya_model_forward / zaya_model_backward, with ids and targets in host memory (validated). */
zaya_status zaya_engine_forward(zaya_engine *e, const int32_t *ids, const int32_t *targets, int backward_ready,
                                float *loss);
zaya_status zaya_engine_backward(zaya_engine *e);
zaya_status zaya_engine_zero_grad(zaya_engine *e);
/* grads *= s (gradient accumulation's mean). */
zaya_status zaya_engine_scale_grads(zaya_engine *e, float s);

/* Routing of the last forward, as the host model's fields: counts [L * (E+1)], spread [L], psum [L * E]. */
const int64_t *zaya_engine_route_counts(const zaya_engine *e);
const double *zaya_engine_route_spread(const zaya_engine *e);
const double *zaya_engine_route_psum(const zaya_engine *e);
/* Called in each MoE block of a forward after the scores and their statistics and before the
 * selection (as zaya_model's route_hook); the hook may change the host biases and recount. */
void zaya_engine_set_route_hook(zaya_engine *e, void (*hook)(void *ctx, zaya_engine *e, int layer), void *ctx);
/* As zaya_model_route_count_layer / zaya_model_route_recount, with the host's current biases. */
zaya_status zaya_engine_route_count_layer(zaya_engine *e, int layer, int64_t *counts);
zaya_status zaya_engine_route_recount(zaya_engine *e, int64_t *counts);

/* The optimizer on the backend, over the units `opt` owns, its state laid out as opt's state block. */
zaya_status zaya_engine_optim_init(zaya_engine *e, zaya_optim *opt);
/* As zaya_optim_grad_sqnorm_local (ZAYA_ENUMERIC naming the first non-finite tensor). */
zaya_status zaya_engine_grad_sqnorm(zaya_engine *e, double *sqnorm);
/* As zaya_optim_step (both kinds), then the bf16 shadow refresh; advances opt's step counters. */
zaya_status zaya_engine_optim_step(zaya_engine *e, double lr, double grad_scale);

/* Data parallelism over a caller's in-place sum of n floats in the backend's memory (MPI on the CPU
 * backend's host memory, NCCL on a device's): the gradients summed then divided by the world size
 * (as the CPU trainer's reduction), and, under ZeRO-1 (an optimizer owning only its rank's units),
 * every rank's updated units shared with all (each rank contributes its own units, zeros elsewhere,
 * to one sum) and the bf16 shadow refreshed. */
typedef zaya_status (*zaya_engine_allreduce_fn)(void *ctx, float *buf, int64_t n);
zaya_status zaya_engine_reduce_grads(zaya_engine *e, zaya_engine_allreduce_fn sum, void *ctx, int world);
zaya_status zaya_engine_share_params(zaya_engine *e, zaya_engine_allreduce_fn sum, void *ctx);
/* The backend's parameter / gradient blocks (host->nfloats floats each). */
float *zaya_engine_params(zaya_engine *e);
float *zaya_engine_grads(zaya_engine *e);

/* Host <-> backend copies of the parameters (the biases excepted, see above) and, once
 * zaya_engine_optim_init ran, the optimizer state. */
zaya_status zaya_engine_pull(zaya_engine *e);
zaya_status zaya_engine_push(zaya_engine *e);
/* Gradients into a host block of host->nfloats floats (tests). */
zaya_status zaya_engine_pull_grads(zaya_engine *e, float *dst);

/* The phase profile of zaya_model_profile_attach (zaya/model.h) for the engine's forward and backward:
 * the same phases, spans, matmul seconds (bf16 staging included), staging seconds and FLOPs. On a
 * device backend each phase boundary waits for the backend's queue. NULL detaches. */
void zaya_engine_profile_attach(zaya_engine *e, zaya_model_profile *prof);

/* Loss / targets counted of the last forward. */
float zaya_engine_last_loss(const zaya_engine *e);
int64_t zaya_engine_last_tokens(const zaya_engine *e);

#ifdef __cplusplus
}
#endif

#endif
