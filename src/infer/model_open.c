/* The model an inference run reads (zaya/infer_model.h). */
#include <string.h>

#include "zaya/infer_model.h"
#include "zaya/ckpt.h"

/* A zaya checkpoint (root or step directory) or a Hugging Face directory, in f32. */
static zaya_status load_checkpoint_model(const char *path, zaya_model *m) {
    zaya_config c;
    ZAYA_TRY(zaya_ckpt_load_config(path, &c));
    ZAYA_TRY(zaya_model_init(m, &c, ZAYA_DTYPE_F32));
    zaya_status s = zaya_ckpt_load_model(path, m);
    if (s != ZAYA_OK) zaya_model_free(m);
    return s;
}

static zaya_status open_f32(const zaya_infer_model_opts *o, zaya_infer_model *cm) {
    if (o->checkpoint) {
        ZAYA_TRY(load_checkpoint_model(o->checkpoint, &cm->m));
    } else {
        zaya_config c;
        ZAYA_TRY(zaya_config_resolve(o->config, &c));
        ZAYA_TRY(zaya_model_init(&cm->m, &c, ZAYA_DTYPE_F32));
        zaya_model_init_weights(&cm->m, (uint64_t)o->random_init);
    }
    cm->has_model = 1;
    zaya_status s = zaya_infer_weights_view(&cm->w, &cm->m);
    if (s != ZAYA_OK) zaya_infer_model_close(cm);
    return s;
}

zaya_status zaya_infer_model_open(const zaya_infer_model_opts *o, zaya_infer_model *cm) {
    memset(cm, 0, sizeof *cm);
    zaya_dtype dt;
    if (!strcmp(o->dtype, "f32")) dt = ZAYA_DTYPE_F32;
    else if (!strcmp(o->dtype, "bf16")) dt = ZAYA_DTYPE_BF16;
    else return zaya_error_set(ZAYA_EINVAL, "--dtype must be f32 or bf16 (got '%s')", o->dtype);
    if (o->checkpoint && (o->config || o->random_init >= 0))
        return zaya_error_set(ZAYA_EINVAL, "give either --checkpoint or --config with --random-init, not both");
    if (!o->checkpoint && (!o->config || o->random_init < 0))
        return zaya_error_set(ZAYA_EINVAL, "no weights: give --checkpoint PATH, or --config SPEC --random-init SEED");
    if (dt == ZAYA_DTYPE_F32) return open_f32(o, cm);
    if (o->checkpoint) return zaya_infer_weights_load(&cm->w, o->checkpoint, dt, 1);
    zaya_config c;
    ZAYA_TRY(zaya_config_resolve(o->config, &c));
    return zaya_infer_weights_random(&cm->w, &c, dt, (uint64_t)o->random_init);
}

void zaya_infer_model_close(zaya_infer_model *cm) {
    zaya_infer_weights_free(&cm->w);
    if (cm->has_model) zaya_model_free(&cm->m);
    memset(cm, 0, sizeof *cm);
}
