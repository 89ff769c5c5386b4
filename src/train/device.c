/* The trainer on the engine (zaya/engine.h): `zaya train --device cuda[:N]`, or `--engine` for the
 * engine over the CPU reference backend (the device path checked end to end without a device). The
 * step loop is trainer.c's; here the backend is opened, the engine built over the resumed model and
 * optimizer, and the device's matmul peak measured for MFU. */
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
    if (d.kind == ZAYA_DEVICE_CPU && !o->engine) return ZAYA_OK; /* the CPU trainer */
    char name[32];
    zaya_device_format(d, name, sizeof name);
    if (d.kind == ZAYA_DEVICE_CUDA && t->world > 1 && !strchr(o->device, ':')) {
        /* one rank per GPU: rank r of the world takes device r mod (visible devices) */
        const int n = zaya_gpu_device_count();
        if (n < 1) return zaya_error_set(ZAYA_EBACKEND, "--device %s: 0 CUDA devices visible", o->device);
        d.index = t->rank % n;
        zaya_device_format(d, name, sizeof name);
    }
    char who[64];
    if (d.kind == ZAYA_DEVICE_CPU) snprintf(who, sizeof who, "--engine");
    else snprintf(who, sizeof who, "--device %s", name);
    if (o->cp > 1)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: context parallelism (--cp %d) runs on the CPU trainer only (%s)",
                              who, o->cp, d.kind == ZAYA_DEVICE_CPU ? "drop --engine" : "use --device cpu");
    for (int p = 0; p < t->run.nphases; p++)
        if (t->run.phases[p].cp > 1)
            return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: context parallelism (phase '%s' sets \"cp\": %lld) runs on the "
                                  "CPU trainer only (%s)", who, t->run.phases[p].name, (long long)t->run.phases[p].cp,
                                  d.kind == ZAYA_DEVICE_CPU ? "drop --engine" : "use --device cpu");
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

zaya_status zaya_train_engine_peak(zaya_trainer *t, double *gflops) {
    *gflops = 0;
    return t->be ? zaya_engine_backend_peak(t->be, t->opts->dtype, gflops) : ZAYA_OK;
}
