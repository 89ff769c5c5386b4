/* Token files written by other trainers, read in place: Megatron-LM indexed datasets (.idx + .bin)
 * and llm.c .bin token files. Every size, count, pointer, document index and id is validated once at
 * open; afterwards the file is read through the same zaya_shard view as a .ztok shard. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "zaya/fs.h"
#include "zaya/shard.h"

#define ULL(x) ((unsigned long long)(x))
#define BAD(...) zaya_error_set(ZAYA_EFORMAT, __VA_ARGS__)

/* ---------------------------------------------------------------- element types */

const char *zaya_token_dtype_name(int dtype) {
    static const char *const names[] = {"?", "uint8", "int8", "int16", "int32", "int64", "float64", "float32",
                                        "uint16", "uint32"};
    return dtype >= 1 && dtype <= ZAYA_TOKEN_U32 ? names[dtype] : "?";
}

size_t zaya_token_dtype_size(int dtype) {
    static const size_t sizes[] = {0, 1, 1, 2, 4, 8, 8, 4, 2, 4};
    return dtype >= 1 && dtype <= ZAYA_TOKEN_U32 ? sizes[dtype] : 0;
}

uint64_t zaya_token_dtype_id_limit(int dtype) {
    switch (dtype) {
    case ZAYA_TOKEN_U8: return 1ull << 8;
    case ZAYA_TOKEN_I8: return 1ull << 7;
    case ZAYA_TOKEN_I16: return 1ull << 15;
    case ZAYA_TOKEN_I32: return 1ull << 31;
    case ZAYA_TOKEN_I64: return 1ull << 63;
    case ZAYA_TOKEN_F64: return (1ull << 53) + 1; /* every integer up to 2^53 is exact */
    case ZAYA_TOKEN_F32: return (1ull << 24) + 1;
    case ZAYA_TOKEN_U16: return 1ull << 16;
    case ZAYA_TOKEN_U32: return 1ull << 32;
    default: return 0;
    }
}

static uint32_t rd_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static int32_t rd_i32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static int64_t rd_i64(const uint8_t *p) { int64_t v; memcpy(&v, p, 8); return v; }

/* ---------------------------------------------------------------- Megatron .idx */

static const uint8_t MEGATRON_MAGIC[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
enum { MG_OFF_VERSION = 9, MG_OFF_DTYPE = 17, MG_OFF_NSEQ = 18, MG_OFF_NDOC = 26, MG_HEADER = 34 };

zaya_status zaya_megatron_idx_parse(const char *name, const uint8_t *buf, size_t size, zaya_megatron_idx *out) {
    memset(out, 0, sizeof *out);
    if (size < MG_HEADER)
        return BAD("megatron index '%s': truncated: %llu bytes, the header alone is %d (magic, version, dtype, "
                   "two counts)", name, ULL(size), MG_HEADER);
    if (memcmp(buf, MEGATRON_MAGIC, sizeof MEGATRON_MAGIC) != 0)
        return BAD("megatron index '%s': bytes 0-8 are not the magic \"MMIDIDX\\0\\0\"", name);
    out->version = rd_u64(buf + MG_OFF_VERSION);
    if (out->version != 1)
        return BAD("megatron index '%s': version %llu at offset %d, only version 1 is known", name, ULL(out->version),
                   MG_OFF_VERSION);
    out->dtype = buf[MG_OFF_DTYPE];
    if (out->dtype < ZAYA_TOKEN_U8 || out->dtype > ZAYA_TOKEN_U16)
        return BAD("megatron index '%s': dtype code %d at offset %d is not one of Megatron's 1-8", name, out->dtype,
                   MG_OFF_DTYPE);
    const uint64_t n = rd_u64(buf + MG_OFF_NSEQ), d = rd_u64(buf + MG_OFF_NDOC);
    const uint64_t body = size - MG_HEADER;
    /* lengths (4 N) + pointers (8 N) + document indices (8 D) [+ modes (N)]: bound N and D before any product. */
    if (n > body / 12)
        return BAD("megatron index '%s': sequence count %llu (offset %d) needs %s bytes of lengths and pointers, the "
                   "file has %llu after the header: truncated or inconsistent", name, ULL(n), MG_OFF_NSEQ,
                   n > UINT64_MAX / 12 ? "more than 2^64" : "more", ULL(body));
    if (d > (body - 12 * n) / 8)
        return BAD("megatron index '%s': document index count %llu (offset %d) does not fit the %llu bytes left after "
                   "%llu sequences' lengths and pointers: truncated or inconsistent", name, ULL(d), MG_OFF_NDOC,
                   ULL(body - 12 * n), ULL(n));
    if (d < 1)
        return BAD("megatron index '%s': document index count 0 (offset %d): the list must hold at least the "
                   "leading 0", name, MG_OFF_NDOC);
    const uint64_t want = MG_HEADER + 12 * n + 8 * d;
    if (size == want + n && n > 0) out->has_modes = 1;
    else if (size != want)
        return BAD("megatron index '%s': %llu sequences and %llu document indices give %llu bytes (or %llu with "
                   "per-sequence modes), the file has %llu: %s", name, ULL(n), ULL(d), ULL(want), ULL(want + n),
                   ULL(size), size < want ? "truncated" : "trailing bytes");
    out->sequences = n;
    out->documents = d - 1;
    out->lengths = buf + MG_HEADER;
    out->pointers = out->lengths + 4 * n;
    out->doc_indices = out->pointers + 8 * n;
    const uint64_t item = zaya_token_dtype_size(out->dtype);
    const uint64_t max_tokens = (uint64_t)INT64_MAX / item;
    uint64_t tok = 0;
    for (uint64_t i = 0; i < n; i++) {
        const int32_t len = rd_i32(out->lengths + 4 * i);
        const int64_t ptr = rd_i64(out->pointers + 8 * i);
        if (len < 0)
            return BAD("megatron index '%s': sequence %llu has length %d (offset %llu)", name, ULL(i), len,
                       ULL(MG_HEADER + 4 * i));
        if (ptr < 0 || (uint64_t)ptr != tok * item)
            return BAD("megatron index '%s': sequence %llu's pointer %lld (offset %llu) is not byte %llu, where the "
                       "lengths before it end (%s x %llu bytes): inconsistent index", name, ULL(i), (long long)ptr,
                       ULL(MG_HEADER + 4 * n + 8 * i), ULL(tok * item), zaya_token_dtype_name(out->dtype), ULL(item));
        if ((uint64_t)len > max_tokens - tok)
            return BAD("megatron index '%s': the lengths overflow at sequence %llu (offset %llu)", name, ULL(i),
                       ULL(MG_HEADER + 4 * i));
        tok += (uint64_t)len;
    }
    out->tokens = tok;
    int64_t prev = 0;
    for (uint64_t k = 0; k < d; k++) {
        const int64_t v = rd_i64(out->doc_indices + 8 * k);
        const uint64_t off = MG_HEADER + 12 * n + 8 * k;
        if (k == 0 && v != 0)
            return BAD("megatron index '%s': document index 0 (offset %llu) is %lld, must be 0", name, ULL(off),
                       (long long)v);
        if (v < prev || (uint64_t)v > n)
            return BAD("megatron index '%s': document index %llu (offset %llu) is %lld: must be in [%lld, %llu] "
                       "(previous entry, sequence count)", name, ULL(k), ULL(off), (long long)v, (long long)prev, ULL(n));
        prev = v;
    }
    if ((uint64_t)prev != n)
        return BAD("megatron index '%s': the last document index (entry %llu, offset %llu) is %lld, must equal the "
                   "sequence count %llu", name, ULL(d - 1), ULL(MG_HEADER + 12 * n + 8 * (d - 1)), (long long)prev,
                   ULL(n));
    return ZAYA_OK;
}

uint64_t zaya_megatron_doc_token(const zaya_megatron_idx *ix, uint64_t d) {
    const uint64_t seq = (uint64_t)rd_i64(ix->doc_indices + 8 * d);
    if (seq == ix->sequences) return ix->tokens;
    return (uint64_t)rd_i64(ix->pointers + 8 * seq) / zaya_token_dtype_size(ix->dtype);
}

/* ---------------------------------------------------------------- llm.c header */

enum { LLMC_MAGIC_GPT2 = 20240520, LLMC_MAGIC_LLAMA3 = 20240801 };

zaya_status zaya_llmc_header_parse(const char *name, const uint8_t *buf, size_t size, zaya_llmc_header *out) {
    memset(out, 0, sizeof *out);
    if (size < ZAYA_LLMC_HEADER_BYTES)
        return BAD("llm.c token file '%s': truncated: %llu bytes, shorter than the %u-byte header", name, ULL(size),
                   ZAYA_LLMC_HEADER_BYTES);
    out->magic = rd_u32(buf);
    out->version = rd_u32(buf + 4);
    if (out->magic == LLMC_MAGIC_GPT2 && out->version == 1) out->dtype = ZAYA_TOKEN_U16;
    else if (out->magic == LLMC_MAGIC_LLAMA3 && out->version == 7) out->dtype = ZAYA_TOKEN_U32;
    else if (out->magic != LLMC_MAGIC_GPT2 && out->magic != LLMC_MAGIC_LLAMA3)
        return BAD("llm.c token file '%s': magic %u at offset 0 is neither %d (uint16 ids) nor %d (uint32 ids)", name,
                   out->magic, LLMC_MAGIC_GPT2, LLMC_MAGIC_LLAMA3);
    else
        return BAD("llm.c token file '%s': version %u at offset 4 does not go with magic %u (expected %d)", name,
                   out->version, out->magic, out->magic == LLMC_MAGIC_GPT2 ? 1 : 7);
    const int32_t count = rd_i32(buf + 8);
    if (count < 0) return BAD("llm.c token file '%s': token count %d at offset 8 is negative", name, count);
    out->tokens = (uint64_t)count;
    const uint64_t want = ZAYA_LLMC_HEADER_BYTES + out->tokens * zaya_token_dtype_size(out->dtype);
    if (size != want)
        return BAD("llm.c token file '%s': the header (offset 8) says %llu %s tokens = %llu bytes in all, the file has "
                   "%llu: %s", name, ULL(out->tokens), zaya_token_dtype_name(out->dtype), ULL(want), ULL(size),
                   size < want ? "truncated" : "trailing bytes");
    return ZAYA_OK;
}

/* ---------------------------------------------------------------- opening */

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* The Megatron prefix of path (PREFIX, PREFIX.idx or PREFIX.bin), or 0 when path is not one. */
static int megatron_prefix(const char *path, char *out, size_t cap) {
    char idx[4200];
    size_t n = strlen(path);
    if (ends_with(path, ".idx") || ends_with(path, ".bin")) {
        if (n - 4 >= cap) return 0;
        memcpy(out, path, n - 4);
        out[n - 4] = 0;
        if (ends_with(path, ".idx")) return 1;
    } else {
        if (n >= cap) return 0;
        memcpy(out, path, n + 1);
    }
    if ((size_t)snprintf(idx, sizeof idx, "%s.idx", out) >= sizeof idx) return 0;
    return file_exists(idx);
}

zaya_shard_format zaya_shard_detect(const char *path) {
    char prefix[4096];
    if (ends_with(path, ZAYA_SHARD_EXT)) return ZAYA_SHARD_ZTOK;
    if (megatron_prefix(path, prefix, sizeof prefix)) return ZAYA_SHARD_MEGATRON;
    if (ends_with(path, ".bin")) return ZAYA_SHARD_LLMC;
    return ZAYA_SHARD_ZTOK;
}

/* mmaps a whole regular file read-only (size 0: no mapping, *map = NULL). */
static zaya_status map_file(const char *path, const uint8_t **map, size_t *size) {
    *map = NULL;
    *size = 0;
    int fd;
    uint64_t fsize;
    ZAYA_TRY(zaya_open_regular(path, &fd, &fsize)); /* a FIFO or a device cannot block it */
    if (fsize > SIZE_MAX) {
        close(fd);
        return zaya_error_set(ZAYA_EINVAL, "'%s': %llu bytes do not fit this address space", path, (unsigned long long)fsize);
    }
    if (fsize > 0) {
        void *m = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            return zaya_error_set(ZAYA_EIO, "cannot mmap '%s': %s", path, strerror(errno));
        }
        *map = m;
    }
    close(fd);
    *size = (size_t)fsize;
    return ZAYA_OK;
}

/* Checks that every element of the token array is an id below vocab (floats: integral); the first one
 * that is not is named with its byte offset. */
static zaya_status check_ids(const char *file, uint64_t base_off, const void *tokens, int dtype, uint64_t n,
                             uint64_t vocab) {
    const size_t w = zaya_token_dtype_size(dtype);
    for (uint64_t i = 0; i < n; i++) {
        int ok;
        long double v;
        switch (dtype) {
        case ZAYA_TOKEN_U8: v = ((const uint8_t *)tokens)[i]; ok = 1; break;
        case ZAYA_TOKEN_I8: v = ((const int8_t *)tokens)[i]; ok = 1; break;
        case ZAYA_TOKEN_I16: v = ((const int16_t *)tokens)[i]; ok = 1; break;
        case ZAYA_TOKEN_U16: v = ((const uint16_t *)tokens)[i]; ok = 1; break;
        case ZAYA_TOKEN_I32: v = ((const int32_t *)tokens)[i]; ok = 1; break;
        case ZAYA_TOKEN_U32: v = ((const uint32_t *)tokens)[i]; ok = 1; break;
        case ZAYA_TOKEN_I64: v = (long double)((const int64_t *)tokens)[i]; ok = 1; break;
        case ZAYA_TOKEN_F32: v = ((const float *)tokens)[i]; ok = isfinite(v) && v == floorl(v); break;
        default: v = ((const double *)tokens)[i]; ok = isfinite(v) && v == floorl(v); break;
        }
        if (ok && v >= 0 && v < (long double)vocab) continue;
        char shown[64];
        if (dtype == ZAYA_TOKEN_F32 || dtype == ZAYA_TOKEN_F64) snprintf(shown, sizeof shown, "%.17Lg", v);
        else if (dtype == ZAYA_TOKEN_I64) snprintf(shown, sizeof shown, "%lld", (long long)((const int64_t *)tokens)[i]);
        else snprintf(shown, sizeof shown, "%.0Lf", v);
        return BAD("'%s': token %llu (byte offset %llu) is %s, not an id in [0, vocab_size %llu)", file, ULL(i),
                   ULL(base_off + i * w), shown, ULL(vocab));
    }
    return ZAYA_OK;
}

static uint32_t token_at(const void *t, int dtype, uint64_t i) {
    switch (dtype) {
    case ZAYA_TOKEN_U8: return ((const uint8_t *)t)[i];
    case ZAYA_TOKEN_I8: return (uint32_t)((const int8_t *)t)[i];
    case ZAYA_TOKEN_I16: return (uint32_t)((const int16_t *)t)[i];
    case ZAYA_TOKEN_U16: return ((const uint16_t *)t)[i];
    case ZAYA_TOKEN_I32: return (uint32_t)((const int32_t *)t)[i];
    case ZAYA_TOKEN_U32: return ((const uint32_t *)t)[i];
    case ZAYA_TOKEN_I64: return (uint32_t)((const int64_t *)t)[i];
    case ZAYA_TOKEN_F32: return (uint32_t)((const float *)t)[i];
    default: return (uint32_t)((const double *)t)[i];
    }
}

uint32_t zaya_shard_token(const zaya_shard *s, uint64_t i) { return token_at(s->tokens, s->dtype, i); }

void zaya_shard_read(const zaya_shard *s, uint64_t start, uint64_t n, int32_t *dst) {
    if (n == 0) return; /* an empty foreign .bin is not mapped: no pointer arithmetic on NULL */
    switch (s->dtype) {
    case ZAYA_TOKEN_U16: {
        const uint16_t *t = (const uint16_t *)s->tokens + start;
        for (uint64_t i = 0; i < n; i++) dst[i] = t[i];
        break;
    }
    case ZAYA_TOKEN_U32:
    case ZAYA_TOKEN_I32: { /* validated: every id is in [0, 2^31) */
        const uint32_t *t = (const uint32_t *)s->tokens + start;
        for (uint64_t i = 0; i < n; i++) dst[i] = (int32_t)t[i];
        break;
    }
    default:
        for (uint64_t i = 0; i < n; i++) dst[i] = (int32_t)token_at(s->tokens, s->dtype, start + i);
    }
}

static zaya_status check_opts(const char *path, const zaya_shard_open_opts *o, int dtype, const char *where) {
    if (!o || o->vocab_size == 0)
        return zaya_error_set(ZAYA_EINVAL, "'%s' is a %s token file, which stores no vocabulary size: give one "
                              "(run file key 'vocab_size', --vocab-size)", path,
                              dtype ? where : "foreign");
    if (o->vocab_size > (1ull << 31))
        return zaya_error_set(ZAYA_EINVAL, "'%s': vocab_size %llu is above zaya's 2^31 ids", path, ULL(o->vocab_size));
    if (o->eos_id == ZAYA_SHARD_NO_EOS || o->eos_id >= o->vocab_size)
        return zaya_error_set(ZAYA_EINVAL, "'%s': a %s token file needs an eos id below vocab_size %llu (run file key "
                              "'eos_id', --eos-id): it separates the documents%s", path, where, ULL(o->vocab_size),
                              o->eos_id == ZAYA_SHARD_NO_EOS ? "" : ", and the one given is not below it");
    return ZAYA_OK;
}

static zaya_status dtype_fits(const char *file, const char *field, int dtype, uint64_t vocab) {
    const uint64_t lim = zaya_token_dtype_id_limit(dtype);
    if (vocab > lim)
        return zaya_error_set(ZAYA_ERANGE, "'%s': dtype %s (%s) holds ids below %llu, but the vocabulary has %llu ids",
                              file, zaya_token_dtype_name(dtype), field, ULL(lim), ULL(vocab));
    return ZAYA_OK;
}

static zaya_status alloc_index(zaya_shard *s, uint64_t entries) {
    if (entries > SIZE_MAX / sizeof(uint64_t)) return zaya_error_set(ZAYA_ENOMEM, "document index too large");
    s->owned_index = malloc((size_t)entries * sizeof(uint64_t));
    if (!s->owned_index)
        return zaya_error_set(ZAYA_ENOMEM, "'%s': cannot hold a %llu-entry document index", s->path, ULL(entries));
    s->doc_index = s->owned_index;
    return ZAYA_OK;
}

static zaya_status open_megatron(const char *path, const zaya_shard_open_opts *o, zaya_shard *s) {
    char prefix[4096], idx[4200], bin[4200];
    if (!megatron_prefix(path, prefix, sizeof prefix))
        return zaya_error_set(ZAYA_EIO, "'%s': no Megatron index (.idx) beside it", path);
    snprintf(idx, sizeof idx, "%s.idx", prefix);
    snprintf(bin, sizeof bin, "%s.bin", prefix);
    ZAYA_TRY(check_opts(path, o, 1, "Megatron"));
    ZAYA_TRY(map_file(idx, &s->idx_map, &s->idx_size));
    zaya_megatron_idx ix;
    ZAYA_TRY(zaya_megatron_idx_parse(idx, s->idx_map, s->idx_size, &ix));
    char field[64];
    snprintf(field, sizeof field, "code %d at offset %d of the .idx", ix.dtype, MG_OFF_DTYPE);
    ZAYA_TRY(dtype_fits(idx, field, ix.dtype, o->vocab_size));
    ZAYA_TRY(map_file(bin, &s->map, &s->map_size));
    const uint64_t item = zaya_token_dtype_size(ix.dtype);
    if ((uint64_t)s->map_size != ix.tokens * item)
        return zaya_error_set(ZAYA_EFORMAT, "megatron dataset '%s': the index says %llu %s tokens = %llu bytes, '%s' "
                              "has %llu bytes: the .idx and the .bin disagree", prefix, ULL(ix.tokens),
                              zaya_token_dtype_name(ix.dtype), ULL(ix.tokens * item), bin, ULL(s->map_size));
    s->format = ZAYA_SHARD_MEGATRON;
    s->dtype = ix.dtype;
    s->tokens = s->map;
    s->file_tokens = ix.tokens;
    s->sequences = ix.sequences;
    s->file_version = (uint32_t)ix.version;
    ZAYA_TRY(check_ids(bin, 0, s->tokens, s->dtype, ix.tokens, o->vocab_size));
    ZAYA_TRY(alloc_index(s, ix.documents + 1));
    /* Documents that all end with the eos id (preprocess_data.py --append-eod) keep it as their separator:
     * packing then gives exactly the file's token stream. Otherwise documents are read whole. */
    int stripped = ix.documents > 0;
    for (uint64_t d = 0; d < ix.documents && stripped; d++) {
        uint64_t a = zaya_megatron_doc_token(&ix, d), b = zaya_megatron_doc_token(&ix, d + 1);
        stripped = b > a && token_at(s->tokens, s->dtype, b - 1) == o->eos_id;
    }
    s->sep_stride = (uint64_t)stripped;
    for (uint64_t d = 0; d <= ix.documents; d++) s->owned_index[d] = zaya_megatron_doc_token(&ix, d) - s->sep_stride * d;
    s->hdr.doc_count = ix.documents;
    s->hdr.token_count = ix.tokens - s->sep_stride * ix.documents;
    s->hdr.header_size = 0;
    s->hdr.tokens_offset = 0;
    s->hdr.file_size = s->map_size;
    /* Hash of index and tokens: the source fingerprint a resumed run compares. */
    XXH3_state_t *h = XXH3_createState();
    if (!h) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    XXH3_64bits_reset(h);
    XXH3_64bits_update(h, s->idx_map, s->idx_size);
    if (s->map_size) XXH3_64bits_update(h, s->map, s->map_size);
    s->hdr.payload_xxh3 = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return ZAYA_OK;
}

static zaya_status open_llmc(const char *path, const zaya_shard_open_opts *o, zaya_shard *s) {
    ZAYA_TRY(map_file(path, &s->map, &s->map_size));
    zaya_llmc_header h;
    ZAYA_TRY(zaya_llmc_header_parse(path, s->map, s->map_size, &h));
    ZAYA_TRY(check_opts(path, o, 1, "llm.c"));
    char field[64];
    snprintf(field, sizeof field, "magic %u, version %u", h.magic, h.version);
    ZAYA_TRY(dtype_fits(path, field, h.dtype, o->vocab_size));
    s->format = ZAYA_SHARD_LLMC;
    s->dtype = h.dtype;
    s->file_version = h.version;
    s->tokens = s->map + ZAYA_LLMC_HEADER_BYTES;
    s->file_tokens = h.tokens;
    ZAYA_TRY(check_ids(path, ZAYA_LLMC_HEADER_BYTES, s->tokens, s->dtype, h.tokens, o->vocab_size));
    /* llm.c's writers put the EOT id before every document: documents are the runs between them (ids before
     * the first EOT, if any, form document 0), and the EOTs are the separators packing puts back. */
    uint64_t neos = 0, n = h.tokens;
    for (uint64_t i = 0; i < n; i++) neos += token_at(s->tokens, s->dtype, i) == o->eos_id;
    const int lead = n > 0 && token_at(s->tokens, s->dtype, 0) == o->eos_id;
    const uint64_t docs = n == 0 ? 0 : neos + (uint64_t)!lead;
    ZAYA_TRY(alloc_index(s, docs + 1));
    s->token_base = (uint64_t)lead;
    s->sep_stride = 1;
    uint64_t d = 0;
    if (n > 0) s->owned_index[d++] = 0;
    for (uint64_t i = (uint64_t)lead; i < n; i++)
        if (token_at(s->tokens, s->dtype, i) == o->eos_id) {
            s->owned_index[d] = i + 1 - s->token_base - d; /* file position i + 1 = base + index[d] + d */
            d++;
        }
    s->owned_index[docs] = n - neos;
    s->hdr.doc_count = docs;
    s->hdr.token_count = n - neos;
    s->hdr.header_size = ZAYA_LLMC_HEADER_BYTES;
    s->hdr.tokens_offset = ZAYA_LLMC_HEADER_BYTES;
    s->hdr.file_size = s->map_size;
    s->hdr.payload_xxh3 = XXH3_64bits(s->map, s->map_size);
    return ZAYA_OK;
}

zaya_status zaya_shard_open_foreign(const char *path, zaya_shard_format fmt, const zaya_shard_open_opts *o,
                                    zaya_shard *s) {
    memset(s, 0, sizeof *s);
    if (!(s->path = strdup(path))) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    zaya_status st = fmt == ZAYA_SHARD_MEGATRON ? open_megatron(path, o, s) : open_llmc(path, o, s);
    if (st != ZAYA_OK) {
        zaya_shard_close(s);
        return st;
    }
    s->hdr.version = s->file_version;
    s->hdr.token_width = (uint32_t)zaya_token_dtype_size(s->dtype);
    s->hdr.vocab_size = o->vocab_size;
    s->hdr.eos_id = o->eos_id;
    s->hdr.index_offset = 0;
    if (s->map && s->map_size) madvise((void *)s->map, s->map_size, MADV_RANDOM);
    return ZAYA_OK;
}
