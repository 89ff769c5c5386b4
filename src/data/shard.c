/* Token shard writer (streaming, atomic) and loader (mmap, validated once at open). */
#include "zaya/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "zaya/fs.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token shards are little-endian and mmapped in place: big-endian hosts are not supported"
#endif

/* Byte offsets of the header fields (docs/data-format.md). */
enum {
    OFF_MAGIC = 0, OFF_VERSION = 8, OFF_HEADER_SIZE = 12, OFF_WIDTH = 16, OFF_EOS = 20, OFF_VOCAB = 24,
    OFF_TOKENS = 32, OFF_DOCS = 40, OFF_TOKENS_OFF = 48, OFF_INDEX_OFF = 56, OFF_FILE_SIZE = 64,
    OFF_TOKENIZER = 72, OFF_PAYLOAD_XXH = 80, OFF_HEADER_XXH = 88, HEADER_HASHED = 88, OFF_RESERVED = 96,
};

static uint64_t align8(uint64_t x) { return (x + 7u) & ~(uint64_t)7u; }

static void put_u32(uint8_t *b, size_t off, uint32_t v) { memcpy(b + off, &v, 4); }
static void put_u64(uint8_t *b, size_t off, uint64_t v) { memcpy(b + off, &v, 8); }
static uint32_t get_u32(const uint8_t *b, size_t off) { uint32_t v; memcpy(&v, b + off, 4); return v; }
static uint64_t get_u64(const uint8_t *b, size_t off) { uint64_t v; memcpy(&v, b + off, 8); return v; }

static void encode_header(const zaya_shard_header *h, uint8_t b[ZAYA_SHARD_HEADER_SIZE]) {
    memset(b, 0, ZAYA_SHARD_HEADER_SIZE);
    memcpy(b + OFF_MAGIC, ZAYA_SHARD_MAGIC, 8);
    put_u32(b, OFF_VERSION, h->version);
    put_u32(b, OFF_HEADER_SIZE, h->header_size);
    put_u32(b, OFF_WIDTH, h->token_width);
    put_u32(b, OFF_EOS, h->eos_id);
    put_u64(b, OFF_VOCAB, h->vocab_size);
    put_u64(b, OFF_TOKENS, h->token_count);
    put_u64(b, OFF_DOCS, h->doc_count);
    put_u64(b, OFF_TOKENS_OFF, h->tokens_offset);
    put_u64(b, OFF_INDEX_OFF, h->index_offset);
    put_u64(b, OFF_FILE_SIZE, h->file_size);
    put_u64(b, OFF_TOKENIZER, h->tokenizer_hash);
    put_u64(b, OFF_PAYLOAD_XXH, h->payload_xxh3);
    put_u64(b, OFF_HEADER_XXH, XXH3_64bits(b, HEADER_HASHED));
}

/* ---------------------------------------------------------------- writer */

struct zaya_shard_writer {
    char *path, *tmp;
    FILE *f;
    XXH3_state_t *hash;
    zaya_shard_header hdr;
    uint64_t *index; /* doc starts, grown geometrically */
    size_t index_cap;
    uint8_t buf[16384];
};

static zaya_status writer_put(zaya_shard_writer *w, const void *p, size_t n) {
    if (fwrite(p, 1, n, w->f) != n) return zaya_error_set(ZAYA_EIO, "writing '%s' failed: %s", w->tmp, strerror(errno));
    XXH3_64bits_update(w->hash, p, n);
    return ZAYA_OK;
}

zaya_status zaya_shard_writer_open(const char *path, uint64_t vocab_size, uint32_t token_width, uint32_t eos_id,
                                   uint64_t tokenizer_hash, zaya_shard_writer **out) {
    *out = NULL;
    if (token_width == 0) token_width = vocab_size <= 65536 ? 2 : 4;
    if (token_width != 2 && token_width != 4)
        return zaya_error_set(ZAYA_EINVAL, "shard '%s': token width must be 2 or 4, got %u", path, token_width);
    if (vocab_size == 0 || vocab_size > (token_width == 2 ? 65536ull : 2147483648ull))
        return zaya_error_set(ZAYA_EINVAL, "shard '%s': vocab size %llu does not fit %u-byte tokens", path,
                              (unsigned long long)vocab_size, token_width);
    if (eos_id != ZAYA_SHARD_NO_EOS && eos_id >= vocab_size)
        return zaya_error_set(ZAYA_EINVAL, "shard '%s': eos id %u >= vocab size %llu", path, eos_id,
                              (unsigned long long)vocab_size);
    zaya_shard_writer *w = calloc(1, sizeof *w);
    if (!w) return zaya_error_set(ZAYA_ENOMEM, "shard '%s': out of memory", path);
    size_t tl = strlen(path) + 32;
    w->path = strdup(path);
    w->tmp = malloc(tl);
    w->hash = XXH3_createState();
    w->index_cap = 1024;
    w->index = malloc(w->index_cap * sizeof *w->index);
    if (!w->path || !w->tmp || !w->hash || !w->index) {
        zaya_shard_writer_abort(w);
        return zaya_error_set(ZAYA_ENOMEM, "shard '%s': out of memory", path);
    }
    zaya_status ts = zaya_atomic_tmp_name(path, w->tmp, tl);
    if (ts != ZAYA_OK) {
        free(w->tmp);
        w->tmp = NULL;
        zaya_shard_writer_abort(w);
        return ts;
    }
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        zaya_status s = zaya_error_set(ZAYA_EIO, "cannot create '%s': %s", w->tmp, strerror(errno));
        free(w->tmp);
        w->tmp = NULL; /* nothing to unlink */
        zaya_shard_writer_abort(w);
        return s;
    }
    XXH3_64bits_reset(w->hash);
    w->hdr.version = ZAYA_SHARD_VERSION;
    w->hdr.header_size = ZAYA_SHARD_HEADER_SIZE;
    w->hdr.token_width = token_width;
    w->hdr.eos_id = eos_id;
    w->hdr.vocab_size = vocab_size;
    w->hdr.tokens_offset = ZAYA_SHARD_HEADER_SIZE;
    w->hdr.tokenizer_hash = tokenizer_hash;
    uint8_t zero[ZAYA_SHARD_HEADER_SIZE] = {0}; /* header space, filled in by finish once counts are known */
    if (fwrite(zero, 1, sizeof zero, w->f) != sizeof zero) {
        zaya_status s = zaya_error_set(ZAYA_EIO, "writing '%s' failed: %s", w->tmp, strerror(errno));
        zaya_shard_writer_abort(w);
        return s;
    }
    *out = w;
    return ZAYA_OK;
}

zaya_status zaya_shard_writer_add(zaya_shard_writer *w, const int32_t *ids, size_t n) {
    if (n == 0) return ZAYA_OK;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint64_t)ids[i] >= w->hdr.vocab_size)
            return zaya_error_set(ZAYA_EINVAL, "shard '%s': document %llu, token %zu: id %d outside [0, %llu)", w->path,
                                  (unsigned long long)w->hdr.doc_count, i, ids[i],
                                  (unsigned long long)w->hdr.vocab_size);
    }
    if (w->hdr.doc_count + 1 >= w->index_cap) {
        uint64_t *p = realloc(w->index, 2 * w->index_cap * sizeof *p);
        if (!p) return zaya_error_set(ZAYA_ENOMEM, "shard '%s': out of memory for the document index", w->path);
        w->index = p;
        w->index_cap *= 2;
    }
    w->index[w->hdr.doc_count++] = w->hdr.token_count;
    size_t per = sizeof w->buf / w->hdr.token_width;
    for (size_t i = 0; i < n; i += per) {
        size_t m = n - i < per ? n - i : per;
        if (w->hdr.token_width == 2) {
            uint16_t *b = (uint16_t *)(void *)w->buf;
            for (size_t j = 0; j < m; j++) b[j] = (uint16_t)ids[i + j];
        } else {
            uint32_t *b = (uint32_t *)(void *)w->buf;
            for (size_t j = 0; j < m; j++) b[j] = (uint32_t)ids[i + j];
        }
        ZAYA_TRY(writer_put(w, w->buf, m * w->hdr.token_width));
    }
    w->hdr.token_count += n;
    return ZAYA_OK;
}

uint64_t zaya_shard_writer_tokens(const zaya_shard_writer *w) { return w->hdr.token_count; }
uint64_t zaya_shard_writer_docs(const zaya_shard_writer *w) { return w->hdr.doc_count; }

static zaya_status writer_finish(zaya_shard_writer *w) {
    zaya_shard_header *h = &w->hdr;
    uint64_t tokens_end = h->tokens_offset + h->token_count * h->token_width;
    h->index_offset = align8(tokens_end);
    static const uint8_t pad[8] = {0};
    ZAYA_TRY(writer_put(w, pad, h->index_offset - tokens_end));
    w->index[h->doc_count] = h->token_count;
    ZAYA_TRY(writer_put(w, w->index, (h->doc_count + 1) * sizeof(uint64_t)));
    h->file_size = h->index_offset + (h->doc_count + 1) * sizeof(uint64_t);
    h->payload_xxh3 = XXH3_64bits_digest(w->hash);
    uint8_t b[ZAYA_SHARD_HEADER_SIZE];
    encode_header(h, b);
    if (fseek(w->f, 0, SEEK_SET) != 0 || fwrite(b, 1, sizeof b, w->f) != sizeof b || fflush(w->f) != 0)
        return zaya_error_set(ZAYA_EIO, "writing the header of '%s' failed: %s", w->tmp, strerror(errno));
    if (fsync(fileno(w->f)) != 0) return zaya_error_set(ZAYA_EIO, "fsync of '%s' failed: %s", w->tmp, strerror(errno));
    int rc = fclose(w->f);
    w->f = NULL;
    if (rc != 0) return zaya_error_set(ZAYA_EIO, "closing '%s' failed: %s", w->tmp, strerror(errno));
    zaya_status s = zaya_atomic_publish(w->tmp, w->path);
    free(w->tmp);
    w->tmp = NULL; /* published, or removed by the failed publish: abort has nothing to unlink */
    return s;
}

zaya_status zaya_shard_writer_finish(zaya_shard_writer *w) {
    zaya_status s = writer_finish(w);
    zaya_shard_writer_abort(w);
    return s;
}

void zaya_shard_writer_abort(zaya_shard_writer *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    if (w->tmp) unlink(w->tmp);
    if (w->hash) XXH3_freeState(w->hash);
    free(w->tmp);
    free(w->path);
    free(w->index);
    free(w);
}

/* ---------------------------------------------------------------- loader */

#define BAD(...) zaya_error_set(ZAYA_EFORMAT, __VA_ARGS__)
#define ULL(x) ((unsigned long long)(x))

static zaya_status validate_header(const char *path, const uint8_t *b, uint64_t size, zaya_shard_header *h) {
    if (memcmp(b + OFF_MAGIC, ZAYA_SHARD_MAGIC, 8) != 0)
        return BAD("shard '%s': bad magic at offset 0 (expected \"%s\"): not a zaya token shard", path, ZAYA_SHARD_MAGIC);
    h->version = get_u32(b, OFF_VERSION);
    if (h->version != ZAYA_SHARD_VERSION)
        return BAD("shard '%s': field 'version' (offset %d) = %u, this build reads version %u", path, OFF_VERSION,
                   h->version, ZAYA_SHARD_VERSION);
    h->header_size = get_u32(b, OFF_HEADER_SIZE);
    if (h->header_size != ZAYA_SHARD_HEADER_SIZE)
        return BAD("shard '%s': field 'header_size' (offset %d) = %u, expected %u", path, OFF_HEADER_SIZE,
                   h->header_size, ZAYA_SHARD_HEADER_SIZE);
    h->header_xxh3 = get_u64(b, OFF_HEADER_XXH);
    uint64_t hh = XXH3_64bits(b, HEADER_HASHED);
    if (hh != h->header_xxh3)
        return BAD("shard '%s': field 'header_xxh3' (offset %d) = %016llx but the header hashes to %016llx: corrupted "
                   "header", path, OFF_HEADER_XXH, ULL(h->header_xxh3), ULL(hh));
    for (int i = OFF_RESERVED; i < (int)ZAYA_SHARD_HEADER_SIZE; i++)
        if (b[i]) return BAD("shard '%s': reserved header byte at offset %d is %u, must be 0", path, i, b[i]);
    h->token_width = get_u32(b, OFF_WIDTH);
    h->eos_id = get_u32(b, OFF_EOS);
    h->vocab_size = get_u64(b, OFF_VOCAB);
    h->token_count = get_u64(b, OFF_TOKENS);
    h->doc_count = get_u64(b, OFF_DOCS);
    h->tokens_offset = get_u64(b, OFF_TOKENS_OFF);
    h->index_offset = get_u64(b, OFF_INDEX_OFF);
    h->file_size = get_u64(b, OFF_FILE_SIZE);
    h->tokenizer_hash = get_u64(b, OFF_TOKENIZER);
    h->payload_xxh3 = get_u64(b, OFF_PAYLOAD_XXH);
    if (h->token_width != 2 && h->token_width != 4)
        return BAD("shard '%s': field 'token_width' (offset %d) = %u, must be 2 or 4", path, OFF_WIDTH, h->token_width);
    uint64_t max_vocab = h->token_width == 2 ? 65536ull : 2147483648ull; /* ids are handed out as int32 */
    if (h->vocab_size == 0 || h->vocab_size > max_vocab)
        return BAD("shard '%s': field 'vocab_size' (offset %d) = %llu, must be in [1, %llu] for %u-byte tokens", path,
                   OFF_VOCAB, ULL(h->vocab_size), ULL(max_vocab), h->token_width);
    if (h->eos_id != ZAYA_SHARD_NO_EOS && h->eos_id >= h->vocab_size)
        return BAD("shard '%s': field 'eos_id' (offset %d) = %u >= vocab_size %llu", path, OFF_EOS, h->eos_id,
                   ULL(h->vocab_size));
    if (h->file_size != size)
        return BAD("shard '%s': field 'file_size' (offset %d) = %llu but the file has %llu bytes (%s)", path,
                   OFF_FILE_SIZE, ULL(h->file_size), ULL(size), size < h->file_size ? "truncated" : "trailing bytes");
    if (h->tokens_offset != h->header_size)
        return BAD("shard '%s': field 'tokens_offset' (offset %d) = %llu, expected %u (right after the header)", path,
                   OFF_TOKENS_OFF, ULL(h->tokens_offset), h->header_size);
    if (h->token_count > (size - h->tokens_offset) / h->token_width)
        return BAD("shard '%s': field 'token_count' (offset %d) = %llu: %u-byte tokens from offset %llu run past the "
                   "end of the file (%llu bytes)", path, OFF_TOKENS, ULL(h->token_count), h->token_width,
                   ULL(h->tokens_offset), ULL(size));
    uint64_t tokens_end = h->tokens_offset + h->token_count * h->token_width;
    if (h->index_offset != align8(tokens_end))
        return BAD("shard '%s': field 'index_offset' (offset %d) = %llu, expected %llu (end of the tokens rounded up to "
                   "8)", path, OFF_INDEX_OFF, ULL(h->index_offset), ULL(align8(tokens_end)));
    if (h->index_offset > size || h->doc_count >= (size - h->index_offset) / 8 + 1 ||
        h->index_offset + (h->doc_count + 1) * 8 != size)
        return BAD("shard '%s': field 'doc_count' (offset %d) = %llu: an index of %llu+1 entries at offset %llu does not "
                   "end at the file size %llu", path, OFF_DOCS, ULL(h->doc_count), ULL(h->doc_count),
                   ULL(h->index_offset), ULL(size));
    return ZAYA_OK;
}

static zaya_status validate_body(const zaya_shard *s) {
    const zaya_shard_header *h = &s->hdr;
    const uint64_t *ix = s->doc_index;
    if (ix[0] != 0)
        return BAD("shard '%s': document index entry 0 (offset %llu) = %llu, must be 0", s->path, ULL(h->index_offset),
                   ULL(ix[0]));
    for (uint64_t d = 0; d < h->doc_count; d++) {
        if (ix[d + 1] < ix[d] || ix[d + 1] > h->token_count)
            return BAD("shard '%s': document index entry %llu (offset %llu) = %llu: out of order or beyond the token "
                       "count %llu (previous entry %llu)", s->path, ULL(d + 1), ULL(h->index_offset + 8 * (d + 1)),
                       ULL(ix[d + 1]), ULL(h->token_count), ULL(ix[d]));
    }
    if (ix[h->doc_count] != h->token_count)
        return BAD("shard '%s': last document index entry %llu (offset %llu) = %llu, must equal token_count %llu",
                   s->path, ULL(h->doc_count), ULL(h->index_offset + 8 * h->doc_count), ULL(ix[h->doc_count]),
                   ULL(h->token_count));
    /* Ids are checked once here so that packing and training never index outside the embedding. */
    uint64_t n = h->token_count, bad = n;
    uint32_t worst = 0;
    if (h->token_width == 2) {
        const uint16_t *t = s->tokens;
        uint32_t mx = 0;
        for (uint64_t i = 0; i < n; i++) mx = t[i] > mx ? t[i] : mx;
        if (mx >= h->vocab_size)
            for (bad = 0; t[bad] < h->vocab_size; bad++) {}
        if (bad < n) worst = t[bad];
    } else {
        const uint32_t *t = s->tokens;
        uint32_t mx = 0;
        for (uint64_t i = 0; i < n; i++) mx = t[i] > mx ? t[i] : mx;
        if (mx >= h->vocab_size)
            for (bad = 0; t[bad] < h->vocab_size; bad++) {}
        if (bad < n) worst = t[bad];
    }
    if (bad < n)
        return BAD("shard '%s': token %llu (offset %llu) has id %u >= vocab_size %llu", s->path, ULL(bad),
                   ULL(h->tokens_offset + bad * h->token_width), worst, ULL(h->vocab_size));
    return ZAYA_OK;
}

zaya_status zaya_shard_verify_checksum(const zaya_shard *s) {
    if (s->format != ZAYA_SHARD_ZTOK) return ZAYA_OK; /* foreign formats store no checksum; ids were checked */
    uint64_t got = XXH3_64bits(s->map + s->hdr.header_size, s->map_size - s->hdr.header_size);
    if (got != s->hdr.payload_xxh3)
        return BAD("shard '%s': field 'payload_xxh3' (offset %d) = %016llx but bytes [%u, %llu) hash to %016llx: "
                   "corrupted payload", s->path, OFF_PAYLOAD_XXH, ULL(s->hdr.payload_xxh3), s->hdr.header_size,
                   ULL(s->map_size), ULL(got));
    return ZAYA_OK;
}

static zaya_status open_ztok(const char *path, int verify_checksum, zaya_shard *out);

zaya_status zaya_shard_open(const char *path, int verify_checksum, zaya_shard *out) {
    memset(out, 0, sizeof *out);
    zaya_shard_format f = zaya_shard_detect(path);
    if (f != ZAYA_SHARD_ZTOK)
        return zaya_error_set(ZAYA_EINVAL, "'%s' is %s, not a .ztok shard: it needs a vocabulary size and an eos id "
                              "(zaya_shard_open_ext)", path,
                              f == ZAYA_SHARD_MEGATRON ? "a Megatron indexed dataset" : "an llm.c token file");
    return open_ztok(path, verify_checksum, out);
}

zaya_status zaya_shard_open_ext(const char *path, const zaya_shard_open_opts *opts, zaya_shard *out) {
    memset(out, 0, sizeof *out);
    zaya_shard_format f = zaya_shard_detect(path);
    if (f != ZAYA_SHARD_ZTOK) return zaya_shard_open_foreign(path, f, opts, out);
    return open_ztok(path, opts ? opts->verify_checksum : 0, out);
}

static zaya_status open_ztok(const char *path, int verify_checksum, zaya_shard *out) {
    memset(out, 0, sizeof *out);
    int fd;
    uint64_t size;
    zaya_status os = zaya_open_regular(path, &fd, &size);
    if (os != ZAYA_OK) return zaya_error_context(os, "shard");
    if (size < ZAYA_SHARD_HEADER_SIZE) {
        close(fd);
        return BAD("shard '%s': truncated: %llu bytes, shorter than the %u-byte header", path, ULL(size),
                   ZAYA_SHARD_HEADER_SIZE);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return zaya_error_set(ZAYA_EIO, "cannot mmap shard '%s': %s", path, strerror(errno));
    out->map = map;
    out->map_size = size;
    out->path = strdup(path);
    if (!out->path) {
        zaya_shard_close(out);
        return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    }
    zaya_status s = validate_header(path, out->map, size, &out->hdr);
    if (s == ZAYA_OK) {
        out->tokens = out->map + out->hdr.tokens_offset;
        out->dtype = out->hdr.token_width == 2 ? ZAYA_TOKEN_U16 : ZAYA_TOKEN_U32;
        out->file_tokens = out->hdr.token_count;
        out->doc_index = (const uint64_t *)(const void *)(out->map + out->hdr.index_offset);
        s = validate_body(out);
    }
    if (s == ZAYA_OK && verify_checksum) s = zaya_shard_verify_checksum(out);
    if (s != ZAYA_OK) {
        zaya_shard_close(out);
        return s;
    }
    madvise(map, size, MADV_RANDOM); /* packed reads jump around after the shuffle */
    return ZAYA_OK;
}

void zaya_shard_close(zaya_shard *s) {
    if (s->map) munmap((void *)s->map, s->map_size);
    if (s->idx_map) munmap((void *)s->idx_map, s->idx_size);
    free(s->owned_index);
    free(s->path);
    memset(s, 0, sizeof *s);
}
