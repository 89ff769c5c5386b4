/* Inference weights from a checkpoint: bf16 matrices stored as bf16 are used in place from the
 * read-only mapping of their shard; everything else is converted tensor by tensor, in pieces, into
 * the store's buffers. Shapes are checked against the model's table (zaya_model_source_find) before
 * anything is read; the safetensors reader has validated every size and offset of every file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "infer/weights_internal.h"
#include "zaya/alloc.h"
#include "zaya/bf16.h"
#include "zaya/ckpt.h"

#define CHUNK ((int64_t)1 << 20)

void zaya_infer_weights_close_sources(zaya_infer_weights *w) {
    zaya_model_source_close(w->src);
    w->src = NULL;
}

static zaya_status fill(zaya_infer_weights *w, const unsigned char *mapped, float *buf) {
    const int64_t L = w->cfg.num_hidden_layers;
    for (int i = 0; i < w->ntensors; i++) {
        const zaya_tensor_info *t = &w->tensors[i];
        if (mapped[i]) continue;
        const int bf = w->dtype == ZAYA_DTYPE_BF16 && zaya_infer_is_matrix(t);
        if (!bf) { /* straight into the f32 buffer */
            ZAYA_TRY(zaya_model_source_read_f32(w->src, t, L, 0, t->numel, (float *)w->data[i]));
            continue;
        }
        uint16_t *dst = (uint16_t *)w->data[i];
        for (int64_t at = 0; at < t->numel; at += CHUNK) {
            const int64_t n = t->numel - at < CHUNK ? t->numel - at : CHUNK;
            ZAYA_TRY(zaya_model_source_read_f32(w->src, t, L, at, n, buf));
            zaya_f32_to_bf16_n(dst + at, buf, (size_t)n); /* exact for bf16 storage */
        }
    }
    return ZAYA_OK;
}

/* Page-table entries for a tensor used in place, made at load rather than at its first use: a decode
 * step touches experts it has not met before for many tokens, and each first touch of a 4 KiB page is
 * a fault (measured on ZAYA1-8B: 64% of the bandwidth bound over 31 decode tokens without this, 78%
 * over 95). Pages already in the page cache cost no I/O; others are read once, here. */
static void prefault(const void *p, int64_t bytes) {
    const uintptr_t page = 4096, a = (uintptr_t)p & ~(page - 1), e = (uintptr_t)p + (uintptr_t)bytes;
#ifdef MADV_POPULATE_READ
    if (madvise((void *)a, e - a, MADV_POPULATE_READ) == 0) return;
#endif
    volatile const unsigned char *b = (const unsigned char *)a; /* older kernels: touch every page */
    for (uintptr_t off = 0; a + off < e; off += page) (void)b[off];
}

zaya_status zaya_infer_weights_load(zaya_infer_weights *w, const char *path, zaya_dtype dtype, int map) {
    zaya_config cfg;
    ZAYA_TRY(zaya_ckpt_load_config(path, &cfg));
    ZAYA_TRY(zaya_infer_weights_table(w, &cfg, dtype));
    unsigned char *mapped = calloc((size_t)w->ntensors, 1);
    float *buf = NULL;
    zaya_status s = mapped ? zaya_model_source_open(&w->src, path) : zaya_error_set(ZAYA_ENOMEM, "weight table");
    /* every tensor present with the model's shape before any allocation or read */
    for (int i = 0; i < w->ntensors && s == ZAYA_OK; i++) {
        const zaya_tensor_info *t = &w->tensors[i];
        zaya_st_dtype sd = ZAYA_ST_F32;
        const void *raw = NULL;
        s = zaya_model_source_find(w->src, t, cfg.num_hidden_layers, &sd, &raw);
        if (s == ZAYA_OK && map && raw && dtype == ZAYA_DTYPE_BF16 && zaya_infer_is_matrix(t) && sd == ZAYA_ST_BF16 &&
            ((uintptr_t)raw % sizeof(uint16_t)) == 0) {
            mapped[i] = 1;
            w->data[i] = raw;
            w->mapped_bytes += t->numel * (int64_t)sizeof(uint16_t);
        }
    }
    if (s == ZAYA_OK) s = zaya_infer_weights_alloc(w, mapped);
    if (s == ZAYA_OK && !(buf = zaya_malloc((size_t)CHUNK * sizeof(float))))
        s = zaya_error_set(ZAYA_ENOMEM, "conversion buffer");
    if (s == ZAYA_OK) s = fill(w, mapped, buf);
    zaya_free(buf);
    for (int i = 0; i < w->ntensors && s == ZAYA_OK && w->mapped_bytes > 0; i++)
        if (mapped[i]) prefault(w->data[i], w->tensors[i].numel * (int64_t)sizeof(uint16_t));
    free(mapped);
    if (s == ZAYA_OK && w->mapped_bytes == 0) zaya_infer_weights_close_sources(w); /* nothing used in place */
    if (s == ZAYA_OK) s = zaya_infer_weights_finish(w);
    if (s != ZAYA_OK) {
        zaya_error_context(s, "%s", path);
        zaya_infer_weights_free(w);
    }
    return s;
}
