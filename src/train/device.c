/* The trainer's step runs on the engine (zaya/engine.h) over a backend: the CPU backend by default
 * (working on the host model's own blocks), a CUDA device with `--device cuda[:N]`. The step loop is
 * trainer.c's; here the backend is opened, the engine built over the resumed model and optimizer, the
 * data-parallel reduction and parameter sharing chosen for the backend's memory, and the device's
 * matmul peak measured for MFU. A context-parallel phase (CPU only) runs its forward and backward on
 * the CPU model (src/model; the engine has no CP yet) over the same blocks; the rest of its step
 * (gradient norm, optimizer, sharing) is the engine's. */
#include <string.h>

#include "train/internal.h"
#include "zaya/dist.h"
#include "zaya/gpu.h"
#include "zaya/log.h"

zaya_status zaya_train_engine_probe(const zaya_train_opts *o) {
    zaya_device d = {ZAYA_DEVICE_CPU, 0};
    if (o->device) ZAYA_TRY(zaya_device_parse(o->device, &d));
    if (d.kind == ZAYA_DEVICE_CPU) return ZAYA_OK;
    if (!zaya_gpu_built())
        return zaya_error_set(ZAYA_EUNSUPPORTED, "--device %s: zaya was built without CUDA", o->device);
    /* The CUDA module and the libraries it links, opened now: a missing one ends the run before step 0. */
    if (zaya_gpu_load() != ZAYA_OK) return zaya_error_context(ZAYA_EBACKEND, "--device %s", o->device);
    const int n = zaya_gpu_device_count();
    if (d.index >= n && strchr(o->device, ':'))
        return zaya_error_set(ZAYA_EBACKEND, "device cuda:%d: %d CUDA devices visible", d.index, n);
    if (n < 1) return zaya_error_set(ZAYA_EBACKEND, "--device %s: 0 CUDA devices visible", o->device);
    return ZAYA_OK;
}

zaya_status zaya_train_engine_start(zaya_trainer *t) {
    const zaya_train_opts *o = t->opts;
    zaya_device d = {ZAYA_DEVICE_CPU, 0};
    if (o->device) ZAYA_TRY(zaya_device_parse(o->device, &d));
    if (o->engine && t->rank == 0)
        ZAYA_WARN("--engine is the default now (every step runs on the engine); the flag does nothing and will go");
    char name[32];
    zaya_device_format(d, name, sizeof name);
    if (d.kind == ZAYA_DEVICE_CUDA && t->world > 1 && !strchr(o->device, ':')) {
        /* one rank per GPU: rank r of the world takes device r mod (visible devices) */
        const int n = zaya_gpu_device_count();
        if (n < 1) return zaya_error_set(ZAYA_EBACKEND, "--device %s: 0 CUDA devices visible", o->device);
        d.index = t->rank % n;
        zaya_device_format(d, name, sizeof name);
    }
    for (int p = 0; p < t->run.nphases && d.kind != ZAYA_DEVICE_CPU; p++)
        if (t->run.phases[p].cp > 1 || o->cp > 1)
            return zaya_error_set(ZAYA_EUNSUPPORTED, "--device %s: context parallelism (phase '%s') runs on the CPU "
                                  "only", name, t->run.phases[p].name);
    ZAYA_TRY(zaya_engine_backend_open(d, &t->be));
    ZAYA_TRY(zaya_engine_init(&t->eng, t->be, &t->model));
    ZAYA_TRY(zaya_engine_optim_init(t->eng, &t->opt));
    if (t->world > 1 && d.kind == ZAYA_DEVICE_CUDA) ZAYA_TRY(zaya_nccl_init(t->comm, 1, &d.index, &t->nccl));
    ZAYA_INFO("the step runs on the engine over backend %s", t->be->name);
    return ZAYA_OK;
}

/* The engine's data-parallel sum: MPI on the CPU backend's host memory, NCCL on a device's (after the
 * backend's stream drained; NCCL runs on its own stream, waited for before the engine goes on). */
zaya_status zaya_train_engine_allreduce(void *ctx, float *buf, int64_t n) {
    zaya_trainer *t = ctx;
    const int64_t chunk = (int64_t)1 << 30; /* MPI counts are ints */
    for (int64_t i = 0; i < n; i += chunk) {
        const int64_t c = n - i < chunk ? n - i : chunk;
        if (t->be->is_host) ZAYA_TRY(zaya_allreduce(t->comm, buf + i, buf + i, c, ZAYA_DIST_F32, ZAYA_REDOP_SUM));
        else ZAYA_TRY(zaya_nccl_allreduce(t->nccl, 0, buf + i, buf + i, c, ZAYA_DIST_F32, ZAYA_REDOP_SUM));
    }
    return t->be->is_host ? ZAYA_OK : zaya_gpu_stream_sync(zaya_nccl_stream(t->nccl, 0));
}

/* Data parallelism: on host memory (no engine, or the engine over the CPU backend, whose gradient block
 * is the host model's) the buckets are reduced during the backward (dp.c's gradients-ready hook);
 * on a device, after it, over NCCL. */
void zaya_train_grads_arm(zaya_trainer *t) {
    if (t->be->is_host) zaya_dp_arm(&t->dp);
}

zaya_status zaya_train_grads_finish(zaya_trainer *t) {
    if (t->be->is_host) return zaya_dp_finish_grads(&t->dp);
    return zaya_engine_reduce_grads(t->eng, zaya_train_engine_allreduce, t, t->world);
}

/* After the optimizer step: under ZeRO-1 every rank's updated units to all, then (engine, bf16) the
 * shadow of what came in. */
zaya_status zaya_train_params_share(zaya_trainer *t) {
    if (!t->be->is_host) return zaya_engine_share_params(t->eng, zaya_train_engine_allreduce, t);
    ZAYA_TRY(zaya_dp_gather_params(&t->dp));
    /* the engine refreshed the shadow of its own units; gathered ones need theirs */
    if (t->dp.mode == ZAYA_DP_ZERO1 && t->world > 1) return zaya_engine_push(t->eng);
    return ZAYA_OK;
}

zaya_status zaya_train_engine_peak(zaya_trainer *t, double *gflops) {
    *gflops = 0;
    return t->be ? zaya_engine_backend_peak(t->be, t->opts->dtype, gflops) : ZAYA_OK;
}
