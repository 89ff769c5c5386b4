/* A Hugging Face directory (the loader behind import-hf and generate --checkpoint DIR): the input is
 * a bundle of files, each a record [1 byte kind][4 bytes little-endian length][bytes]: kind 0 is
 * model.safetensors.index.json, 1 config.json, 2+k the shard model-0000k-of-0000N.safetensors (k+1 and N
 * the number of shard records, k taken mod 8). The directory
 * is opened as a model source (every shard validated, tensors unique across shards, the index checked
 * against them); when config.json also loads and the model is small, every tensor is read. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "zaya/ckpt.h"
#include "zaya/config.h"
#include "zaya/fs.h"
#include "zaya/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    char dir[600];
    snprintf(dir, sizeof dir, "%s/hf", fuzz_dir());
    if (zaya_mkdir_p(dir) != ZAYA_OK) abort();
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) { /* empty the directory of the previous input */
        if (e->d_name[0] == '.') continue;
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    int nshards = 0; /* shards are named model-0000k-of-0000N.safetensors, N their number in the bundle */
    for (size_t at = 0; at + 5 <= size && nshards < 12;) {
        uint32_t len = (uint32_t)data[at + 1] | (uint32_t)data[at + 2] << 8 | (uint32_t)data[at + 3] << 16 | (uint32_t)data[at + 4] << 24;
        nshards += data[at] >= 2;
        at += 5;
        at += len > size - at ? size - at : len;
    }
    size_t at = 0;
    int nfiles = 0;
    while (at + 5 <= size && nfiles < 12) {
        const int kind = data[at];
        uint32_t len = (uint32_t)data[at + 1] | (uint32_t)data[at + 2] << 8 | (uint32_t)data[at + 3] << 16 | (uint32_t)data[at + 4] << 24;
        at += 5;
        if (len > size - at) len = (uint32_t)(size - at);
        char name[64];
        if (kind == 0) snprintf(name, sizeof name, "hf/model.safetensors.index.json");
        else if (kind == 1) snprintf(name, sizeof name, "hf/config.json");
        else snprintf(name, sizeof name, "hf/model-%05d-of-%05d.safetensors", (kind - 2) % 8 + 1, nshards);
        fuzz_write(name, data + at, len);
        at += len;
        nfiles++;
    }
    if (!nfiles) return 0;
    zaya_model_source *src = NULL;
    if (zaya_model_source_open(&src, dir) != ZAYA_OK) return 0;
    zaya_config cfg;
    zaya_tensor_info *t = NULL;
    int n = 0;
    int64_t nf = 0;
    if (zaya_ckpt_load_config(dir, &cfg) == ZAYA_OK && zaya_layout_build_public(&cfg, &t, &n, &nf) == ZAYA_OK && nf <= (1 << 20)) {
        float *buf = malloc((size_t)(nf > 0 ? nf : 1) * sizeof *buf);
        int all = buf != NULL;
        for (int i = 0; i < n && buf; i++) {
            if (zaya_model_source_read_f32(src, &t[i], cfg.num_hidden_layers, 0, t[i].numel, buf) != ZAYA_OK) {
                all = 0;
                continue;
            }
            /* a read that succeeds is of the whole tensor: a second, partial read agrees */
            if (t[i].numel > 1) {
                float last;
                FUZZ_ASSERT(zaya_model_source_read_f32(src, &t[i], cfg.num_hidden_layers, t[i].numel - 1, 1, &last) == ZAYA_OK);
                FUZZ_ASSERT(memcmp(&last, &buf[t[i].numel - 1], sizeof last) == 0 || (isnan(last) && isnan(buf[t[i].numel - 1])));
            }
        }
        if (all) fuzz_accept();
        free(buf);
    }
    free(t);
    zaya_model_source_close(src);
    return 0;
}
