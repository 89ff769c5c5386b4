/* data prepare over one JSONL input: plain, or gzip / zstd (the input compressed here, so mutations
 * reach the JSONL reader, or given raw, so they reach the decoders). The first byte picks the case:
 * bits 0-1 plain / gzip / zstd / raw compressed (bit 2: raw is gzip, else zstd), bit 3 a metadata
 * filter, bit 4 a validation split, bit 5 strict. Then every line is a document or counted as skipped. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "fuzz_common.h"
#include "zaya/data.h"

static zaya_status byte_encode(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap) {
    (void)ctx;
    if (*n + len > *cap) {
        size_t c = (*n + len) * 2 + 16;
        int32_t *p = realloc(*ids, c * sizeof *p);
        if (!p) return zaya_error_set(ZAYA_ENOMEM, "ids");
        *ids = p;
        *cap = c;
    }
    for (size_t i = 0; i < len; i++) (*ids)[(*n)++] = (unsigned char)text[i];
    return ZAYA_OK;
}

static void *gzip_bytes(const uint8_t *d, size_t n, size_t *out) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&z, (uLong)n);
    unsigned char *b = malloc(cap);
    z.next_in = (Bytef *)d;
    z.avail_in = (uInt)n;
    z.next_out = b;
    z.avail_out = (uInt)cap;
    if (!b || deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    *out = cap - z.avail_out;
    deflateEnd(&z);
    return b;
}

static void *zstd_bytes(const uint8_t *d, size_t n, size_t *out) {
    size_t cap = ZSTD_compressBound(n);
    void *b = malloc(cap ? cap : 1);
    size_t z = b ? ZSTD_compress(b, cap, d, n, 1) : 0;
    if (!b || ZSTD_isError(z)) abort();
    *out = z;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    if (size < 1) return 0;
    const int mode = data[0];
    data++, size--;
    static const char *const names[4] = {"in.jsonl", "in.jsonl.gz", "in.jsonl.zst", NULL};
    const char *name = names[mode & 3] ? names[mode & 3] : (mode & 4) ? "in.jsonl.gz" : "in.jsonl.zst";
    void *packed = NULL;
    size_t plen = size;
    if ((mode & 3) == 1) packed = gzip_bytes(data, size, &plen);
    else if ((mode & 3) == 2) packed = zstd_bytes(data, size, &plen);
    const char *path = fuzz_write(name, packed ? packed : data, plen);
    free(packed);
    char out[600];
    snprintf(out, sizeof out, "%s/prep-out", fuzz_dir());
    const char *filters[1] = {"lang!=xx"};
    int calls = 0;
    void *ctx[1] = {&calls};
    zaya_prepare_opts o = {.name = "f", .out_dir = out, .vocab_size = 257, .eos_id = 256, .shard_tokens = 64,
                           .jsonl_filters = filters, .njsonl_filters = (mode & 8) ? 1 : 0,
                           .val_fraction = (mode & 16) ? 0.25 : 0, .strict = (mode & 32) != 0, .overwrite = 1,
                           .max_line_bytes = 1u << 16, .max_expansion = 1000};
    zaya_prepare_stats st;
    const char *inputs[1] = {path};
    if (zaya_data_prepare(inputs, 1, &o, byte_encode, ctx, 1, &st) != ZAYA_OK) return 0;
    fuzz_accept();
    uint64_t skipped = 0;
    for (int r = 1; r < ZAYA_SKIP_LINE_NREASONS; r++) skipped += st.skipped_lines[r];
    FUZZ_ASSERT(st.docs == st.train_docs + st.val_docs && st.train_docs >= 1);
    FUZZ_ASSERT(st.jsonl_lines == st.docs + skipped);
    FUZZ_ASSERT(st.train_tokens + st.val_tokens <= st.bytes);
    FUZZ_ASSERT(st.train_shards >= 1);
    return 0;
}
