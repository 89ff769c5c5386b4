/* `ckpt verify` on a model checkpoint: the input is its manifest.json over a fixed, valid checkpoint
 * of a small model (fuzz_make_model_checkpoint). Inputs that parse as JSON objects are resealed so
 * mutations reach the checks behind the checksum: the open (files, pieces, ranks, unique names), the
 * tensor-set check against model_config, every xxh3. When all of them pass, the model loads from it. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "zaya/ckpt.h"
#include "zaya/config.h"
#include "zaya/model.h"

static char g_dir[600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    fuzz_quiet();
    char root[500];
    snprintf(root, sizeof root, "%s/mck", fuzz_dir());
    if (fuzz_make_model_checkpoint(root) != ZAYA_OK) {
        fprintf(stderr, "fuzz_ckpt_verify: fixture: %s\n", zaya_error_message());
        abort();
    }
    snprintf(g_dir, sizeof g_dir, "%s/step-00000001", root);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    char *text = NULL;
    if (cJSON_IsObject(j) && zaya_ckpt_manifest_seal(j) == ZAYA_OK) text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (text) {
        fuzz_write("mck/step-00000001/manifest.json", text, strlen(text));
        free(text);
    } else {
        fuzz_write("mck/step-00000001/manifest.json", data, size);
    }
    zaya_ckpt *c = NULL;
    if (zaya_ckpt_open(&c, g_dir, 0) != ZAYA_OK) return 0;
    if (zaya_ckpt_check_model(c) == ZAYA_OK && zaya_ckpt_verify(c) == ZAYA_OK) {
        zaya_config cfg;
        FUZZ_ASSERT(zaya_config_from_json(zaya_ckpt_section(c, ZAYA_CKPT_SECTION_MODEL), &cfg) == ZAYA_OK);
        zaya_tensor_info *t = NULL;
        int n = 0;
        int64_t nf = 0;
        FUZZ_ASSERT(zaya_layout_build_public(&cfg, &t, &n, &nf) == ZAYA_OK);
        /* the check promised every tensor of the layout, with its shape: reading each one works */
        float *buf = malloc((size_t)nf * sizeof *buf + 4);
        FUZZ_ASSERT(buf != NULL);
        for (int i = 0; i < n; i++) FUZZ_ASSERT(zaya_ckpt_read_f32(c, t[i].name, 0, t[i].numel, buf + t[i].offset) == ZAYA_OK);
        free(buf);
        free(t);
        fuzz_accept();
    }
    zaya_ckpt_close(c);
    return 0;
}
