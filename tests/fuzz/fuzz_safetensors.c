/* A .safetensors image (zaya_st_parse): header JSON, dtypes, shapes, data ranges; then every
 * tensor is looked up by name and its first elements converted. */
#include <string.h>

#include "fuzz_common.h"
#include "zaya/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    zaya_st_file f;
    memset(&f, 0, sizeof f);
    if (zaya_st_parse(&f, data, size, "fuzz.safetensors") != ZAYA_OK) return 0;
    fuzz_accept();
    float buf[64];
    for (int i = 0; i < f.ntensors; i++) {
        const zaya_st_tensor *t = &f.tensors[i];
        FUZZ_ASSERT(t->numel >= 0 && t->begin <= t->end && f.data_start + t->end <= size);
        FUZZ_ASSERT(zaya_st_find(&f, t->name) != NULL);
        if (t->dtype == ZAYA_ST_F32 || t->dtype == ZAYA_ST_BF16 || t->dtype == ZAYA_ST_F16) {
            int64_t n = t->numel < 64 ? t->numel : 64;
            FUZZ_ASSERT(zaya_st_read_f32(&f, t, 0, n, buf) == ZAYA_OK);
        }
    }
    for (int i = 0; i < f.nmeta; i++) FUZZ_ASSERT(zaya_st_meta(&f, f.meta_keys[i]) != NULL);
    zaya_st_close(&f);
    return 0;
}
