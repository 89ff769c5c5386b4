/* A checkpoint manifest.json (zaya_ckpt_open with checksum verification) over a fixed, valid set of
 * safetensors files, then reads of every entry and the model_config section. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "zaya/ckpt.h"
#include "zaya/config.h"

static char g_step[600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    fuzz_quiet();
    char root[400];
    snprintf(root, sizeof root, "%s/ckpt", fuzz_dir());
    if (fuzz_make_checkpoint(root) != ZAYA_OK) {
        fprintf(stderr, "fuzz_ckpt_manifest: fixture: %s\n", zaya_error_message());
        abort();
    }
    snprintf(g_step, sizeof g_step, "ckpt/step-00000001/manifest.json");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    /* Inputs that parse as JSON objects are resealed first (manifest_xxh3 recomputed), so mutations
     * reach the manifest parser instead of stopping at the checksum; the rest go in as they are. */
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    char *text = NULL;
    if (cJSON_IsObject(j) && zaya_ckpt_manifest_seal(j) == ZAYA_OK) text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (text) {
        fuzz_write(g_step, (const uint8_t *)text, strlen(text));
        free(text);
    } else {
        fuzz_write(g_step, data, size);
    }
    char dir[600];
    snprintf(dir, sizeof dir, "%s/ckpt/step-00000001", fuzz_dir());
    zaya_ckpt *c = NULL;
    if (zaya_ckpt_open(&c, dir, 1) != ZAYA_OK) return 0;
    fuzz_accept();
    uint8_t buf[64 * 8];
    for (int i = 0; i < c->nentries; i++) {
        const zaya_ckpt_entry *e = &c->entries[i];
        int64_t n = e->numel < 64 ? e->numel : 64;
        FUZZ_ASSERT(zaya_ckpt_read_raw(c, e->name, 0, n, buf) == ZAYA_OK);
        if (e->numel > 1) FUZZ_ASSERT(zaya_ckpt_read_raw(c, e->name, e->numel - 1, 1, buf) == ZAYA_OK);
    }
    const cJSON *sec = zaya_ckpt_section(c, ZAYA_CKPT_SECTION_MODEL);
    zaya_config cfg;
    if (sec) (void)zaya_config_from_json(sec, &cfg);
    zaya_ckpt_close(c);
    return 0;
}
