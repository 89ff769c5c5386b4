/* Token shards: the on-disk unit of pre-tokenized training data (layout in docs/data-format.md).
 *
 * A shard is one little-endian file: a 128-byte header, the token ids of all its documents back to
 * back (u16 or u32 each), then a document index of doc_count + 1 u64 token offsets (start of every
 * document, then the token count). An xxh3-64 checksum covers everything after the header.
 *
 * The writer streams documents into a temporary file and publishes it atomically (fsync + rename),
 * so a reader never sees a half-written shard. The loader mmaps a shard and validates every header
 * field, offset, index entry and token id once at open: afterwards reads need no checks. */
#ifndef ZAYA_SHARD_H
#define ZAYA_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_SHARD_MAGIC "ZAYATOKS"
#define ZAYA_SHARD_VERSION 1u
#define ZAYA_SHARD_HEADER_SIZE 128u
#define ZAYA_SHARD_EXT ".ztok"
#define ZAYA_SHARD_NO_EOS 0xffffffffu

/* The decoded header (the file stores these fields at fixed offsets, see docs/data-format.md). */
typedef struct zaya_shard_header {
    uint32_t version;
    uint32_t header_size;
    uint32_t token_width; /* bytes per token: 2 or 4 */
    uint32_t eos_id;      /* document separator used by packing; ZAYA_SHARD_NO_EOS if none */
    uint64_t vocab_size;  /* every id is < vocab_size */
    uint64_t token_count;
    uint64_t doc_count;
    uint64_t tokens_offset; /* byte offset of the token array (multiple of 8) */
    uint64_t index_offset;  /* byte offset of the document index (multiple of 8) */
    uint64_t file_size;
    uint64_t tokenizer_hash; /* xxh3-64 of the tokenizer file that produced the ids; 0 = unknown */
    uint64_t payload_xxh3;   /* xxh3-64 of bytes [header_size, file_size) */
    uint64_t header_xxh3;    /* xxh3-64 of header bytes [0, 88) */
} zaya_shard_header;

/* ---- writer ---- */

typedef struct zaya_shard_writer zaya_shard_writer;

/* token_width 0 picks 2 when vocab_size <= 65536, else 4. eos_id may be ZAYA_SHARD_NO_EOS. */
zaya_status zaya_shard_writer_open(const char *path, uint64_t vocab_size, uint32_t token_width, uint32_t eos_id,
                                   uint64_t tokenizer_hash, zaya_shard_writer **out);
/* Appends one document (ids must be in [0, vocab_size)). Empty documents are skipped. */
zaya_status zaya_shard_writer_add(zaya_shard_writer *w, const int32_t *ids, size_t n);
uint64_t zaya_shard_writer_tokens(const zaya_shard_writer *w);
uint64_t zaya_shard_writer_docs(const zaya_shard_writer *w);
/* Writes the index and header, fsyncs and renames into place; frees w either way. */
zaya_status zaya_shard_writer_finish(zaya_shard_writer *w);
/* Discards the temporary file; frees w. Safe on NULL. */
void zaya_shard_writer_abort(zaya_shard_writer *w);

/* ---- reader ---- */

typedef struct zaya_shard {
    char *path;
    const uint8_t *map; /* whole file, read-only */
    size_t map_size;
    zaya_shard_header hdr;
    const void *tokens;         /* u16 or u32 array of hdr.token_count ids */
    const uint64_t *doc_index;  /* hdr.doc_count + 1 entries */
} zaya_shard;

/* Opens, mmaps and validates a shard; verify_checksum also hashes the payload (reads every byte).
 * Errors name the file, the field or entry, and its byte offset. */
zaya_status zaya_shard_open(const char *path, int verify_checksum, zaya_shard *out);
void zaya_shard_close(zaya_shard *s);
zaya_status zaya_shard_verify_checksum(const zaya_shard *s);

static inline uint32_t zaya_shard_token(const zaya_shard *s, uint64_t i) {
    return s->hdr.token_width == 2 ? ((const uint16_t *)s->tokens)[i] : ((const uint32_t *)s->tokens)[i];
}
/* Copies ids [start, start+n) as int32 (bounds are the caller's invariant). */
void zaya_shard_read(const zaya_shard *s, uint64_t start, uint64_t n, int32_t *dst);

#ifdef __cplusplus
}
#endif

#endif
