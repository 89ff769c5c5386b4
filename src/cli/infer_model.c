/* Model setup for the inference commands. */
#include <string.h>

#include "cli/infer_model.h"
#include "zaya/ckpt.h"

/* A zaya checkpoint (root or step directory) or a Hugging Face directory, in f32. */
static zaya_status zaya_cli_load_checkpoint_model(const char *path, zaya_model *m) {
    zaya_config c;
    ZAYA_TRY(zaya_ckpt_load_config(path, &c));
    ZAYA_TRY(zaya_model_init(m, &c, ZAYA_DTYPE_F32));
    zaya_status s = zaya_ckpt_load_model(path, m);
    if (s != ZAYA_OK) zaya_model_free(m);
    return s;
}

zaya_status zaya_cli_model_open(const zaya_cli_model_opts *o, zaya_model *m) {
    zaya_dtype dt;
    if (!strcmp(o->dtype, "f32")) dt = ZAYA_DTYPE_F32;
    else if (!strcmp(o->dtype, "bf16")) dt = ZAYA_DTYPE_BF16;
    else return zaya_error_set(ZAYA_EINVAL, "--dtype must be f32 or bf16 (got '%s')", o->dtype);
    if (o->checkpoint && (o->config || o->random_init >= 0))
        return zaya_error_set(ZAYA_EINVAL, "give either --checkpoint or --config with --random-init, not both");
    if (o->checkpoint) {
        zaya_model f;
        memset(&f, 0, sizeof f);
        ZAYA_TRY(zaya_cli_load_checkpoint_model(o->checkpoint, &f));
        if (dt == ZAYA_DTYPE_F32) {
            *m = f;
            return ZAYA_OK;
        }
        /* bf16 inference: same weights, bf16 shadow */
        zaya_status s = zaya_model_init(m, &f.cfg, dt);
        if (s == ZAYA_OK) {
            memcpy(m->params, f.params, (size_t)f.nfloats * sizeof(float));
            zaya_model_sync_weights(m);
        }
        zaya_model_free(&f);
        return s;
    }
    if (!o->config || o->random_init < 0)
        return zaya_error_set(ZAYA_EINVAL, "no weights: give --checkpoint PATH, or --config SPEC --random-init SEED");
    zaya_config c;
    ZAYA_TRY(zaya_config_resolve(o->config, &c));
    ZAYA_TRY(zaya_model_init(m, &c, dt));
    zaya_model_init_weights(m, (uint64_t)o->random_init);
    zaya_model_sync_weights(m);
    return ZAYA_OK;
}
