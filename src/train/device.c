/* The trainer on the engine (zaya/engine.h): `zaya train --device cuda[:N]`, or `--engine` for the
 * engine over the CPU reference backend (the device path checked end to end without a device). The
 * step loop is trainer.c's; here the backend is opened, the engine built over the resumed model and
 * optimizer, and the device's matmul peak measured for MFU. */
#include <string.h>

#include "train/internal.h"
#include "zaya/gpu.h"
#include "zaya/log.h"

zaya_status zaya_train_engine_start(zaya_trainer *t) {
    const zaya_train_opts *o = t->opts;
    zaya_device d = {ZAYA_DEVICE_CPU, 0};
    if (o->device) ZAYA_TRY(zaya_device_parse(o->device, &d));
    if (d.kind == ZAYA_DEVICE_CPU && !o->engine) return ZAYA_OK; /* the CPU trainer */
    char name[32];
    zaya_device_format(d, name, sizeof name);
    if (t->world > 1)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "--device %s: the engine trains on one device per run (world %d); run "
                              "data parallelism with the CPU trainer", name, t->world);
    for (int p = 0; p < t->run.nphases; p++)
        if (t->run.phases[p].cp > 1 || o->cp > 1)
            return zaya_error_set(ZAYA_EUNSUPPORTED, "--device %s: context parallelism (phase '%s') runs on the CPU "
                                  "trainer only", name, t->run.phases[p].name);
    ZAYA_TRY(zaya_engine_backend_open(d, &t->be));
    ZAYA_TRY(zaya_engine_init(&t->eng, t->be, &t->model));
    ZAYA_TRY(zaya_engine_optim_init(t->eng, &t->opt));
    ZAYA_INFO("the step runs on the engine over backend %s", t->be->name);
    return ZAYA_OK;
}

zaya_status zaya_train_engine_peak(zaya_trainer *t, double *gflops) {
    *gflops = 0;
    return t->be ? zaya_engine_backend_peak(t->be, t->opts->dtype, gflops) : ZAYA_OK;
}
