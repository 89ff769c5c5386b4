/* Token shards: the on-disk unit of pre-tokenized training data (layout in docs/data-format.md).
 *
 * A shard is one little-endian file: a 128-byte header, the token ids of all its documents back to
 * back (u16 or u32 each), then a document index of doc_count + 1 u64 token offsets (start of every
 * document, then the token count). An xxh3-64 checksum covers everything after the header.
 *
 * The writer streams documents into a temporary file and publishes it atomically (fsync + rename),
 * so a reader never sees a half-written shard. The loader mmaps a shard and validates every header
 * field, offset, index entry and token id once at open: afterwards reads need no checks.
 *
 * The same reader opens token files written by other trainers in place (no conversion): Megatron-LM
 * indexed datasets (PREFIX.bin + PREFIX.idx) and llm.c .bin token files. Their documents are mapped
 * onto the shard view (docs/data-format.md, "Other trainers' token files"). */
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

typedef enum zaya_shard_format {
    ZAYA_SHARD_ZTOK = 0,     /* zaya's own .ztok */
    ZAYA_SHARD_MEGATRON = 1, /* Megatron-LM indexed dataset: PREFIX.idx ("MMIDIDX") + PREFIX.bin */
    ZAYA_SHARD_LLMC = 2,     /* llm.c token file: 256 x int32 header, then u16 or u32 ids */
} zaya_shard_format;

/* Element types of token arrays: Megatron's dtype codes 1-8, plus u32 (llm.c version 7). */
typedef enum zaya_token_dtype {
    ZAYA_TOKEN_U8 = 1, ZAYA_TOKEN_I8 = 2, ZAYA_TOKEN_I16 = 3, ZAYA_TOKEN_I32 = 4, ZAYA_TOKEN_I64 = 5,
    ZAYA_TOKEN_F64 = 6, ZAYA_TOKEN_F32 = 7, ZAYA_TOKEN_U16 = 8, ZAYA_TOKEN_U32 = 9,
} zaya_token_dtype;
const char *zaya_token_dtype_name(int dtype);   /* "uint16", ...; "?" when unknown */
size_t zaya_token_dtype_size(int dtype);        /* bytes per element; 0 when unknown */
/* Ids the type holds exactly: [0, limit) (e.g. 65536 for uint16, 2^24 + 1 for float32). */
uint64_t zaya_token_dtype_id_limit(int dtype);

typedef struct zaya_shard {
    char *path;
    const uint8_t *map; /* whole file, read-only (for Megatron: the .bin) */
    size_t map_size;
    zaya_shard_header hdr;
    const void *tokens;         /* the file's token array (dtype elements) */
    const uint64_t *doc_index;  /* hdr.doc_count + 1 entries: document d is ids [index[d], index[d+1]) */
    /* Other trainers' files (zero for .ztok): the file position of id k of document d is
     * token_base + index[d] + sep_stride * d + k, because separators stored in the file (llm.c's EOT
     * before every document, Megatron's appended EOD) are not part of the documents. */
    int format;                 /* zaya_shard_format */
    int dtype;                  /* zaya_token_dtype of the token array */
    uint64_t token_base, sep_stride;
    uint64_t file_tokens;       /* elements in the file's token array, separators included */
    uint64_t sequences;         /* Megatron: sequences in the .idx (documents group them) */
    uint32_t file_version;      /* Megatron .idx version / llm.c header version */
    const uint8_t *idx_map;     /* Megatron: the .idx file */
    size_t idx_size;
    uint64_t *owned_index;      /* the document index built at open (foreign files) */
} zaya_shard;

/* What opening needs beyond the file: other trainers' files carry neither a vocabulary size nor an
 * end-of-document id, so both come from the caller (run file keys, --vocab-size / --eos-id). */
typedef struct zaya_shard_open_opts {
    int verify_checksum;  /* .ztok: also hash the payload */
    uint64_t vocab_size;  /* foreign files: required; every id must be below it */
    uint32_t eos_id;      /* foreign files: the document separator (required: packing needs one) */
} zaya_shard_open_opts;

/* Opens, mmaps and validates a shard; verify_checksum also hashes the payload (reads every byte).
 * Errors name the file, the field or entry, and its byte offset. A path that names a Megatron
 * dataset (PREFIX, PREFIX.idx or PREFIX.bin with PREFIX.idx beside it) or an llm.c token file is
 * refused here: it needs zaya_shard_open_ext with a vocabulary size and an eos id. */
zaya_status zaya_shard_open(const char *path, int verify_checksum, zaya_shard *out);
/* Opens a .ztok shard, a Megatron indexed dataset or an llm.c token file (detected from the path
 * and the magic numbers) and validates every size, offset, index entry and id once. */
zaya_status zaya_shard_open_ext(const char *path, const zaya_shard_open_opts *opts, zaya_shard *out);
/* The foreign half of zaya_shard_open_ext, for a path of format fmt (MEGATRON or LLMC). */
zaya_status zaya_shard_open_foreign(const char *path, zaya_shard_format fmt, const zaya_shard_open_opts *opts,
                                    zaya_shard *out);
/* Which format a path names (ZAYA_SHARD_ZTOK when it is neither foreign format). */
zaya_shard_format zaya_shard_detect(const char *path);
void zaya_shard_close(zaya_shard *s);
zaya_status zaya_shard_verify_checksum(const zaya_shard *s);

/* Element i of the file's token array, as an id (validated at open). */
uint32_t zaya_shard_token(const zaya_shard *s, uint64_t i);
/* File position of the first id of document d. */
static inline uint64_t zaya_shard_doc_start(const zaya_shard *s, uint64_t d) {
    return s->token_base + s->doc_index[d] + s->sep_stride * d;
}
/* Copies n elements of the file's token array from file position start as int32 ids (bounds are
 * the caller's invariant). For .ztok the file position is the id's index. */
void zaya_shard_read(const zaya_shard *s, uint64_t start, uint64_t n, int32_t *dst);

/* ---- parsers of the foreign headers (memory only; also the fuzzing entry points) ---- */

/* A Megatron .idx image: "MMIDIDX\0\0", u64 version (1), u8 dtype code, u64 sequence count N,
 * u64 document-index count D, int32 lengths[N], int64 byte pointers[N], int64 document indices[D],
 * optionally int8 modes[N]. Every count, pointer (contiguous, in order) and document index
 * (0, non-decreasing, ending at N) is checked; errors name the offset. */
typedef struct zaya_megatron_idx {
    uint64_t version;
    int dtype;
    uint64_t sequences, documents; /* documents = D - 1 */
    uint64_t tokens;               /* sum of the lengths: elements the .bin must hold */
    int has_modes;
    const uint8_t *lengths, *pointers, *doc_indices; /* inside the image (unaligned: read with memcpy) */
} zaya_megatron_idx;
zaya_status zaya_megatron_idx_parse(const char *name, const uint8_t *buf, size_t size, zaya_megatron_idx *out);
/* Token position (not byte) where Megatron document d starts (d <= documents). */
uint64_t zaya_megatron_doc_token(const zaya_megatron_idx *ix, uint64_t d);

/* An llm.c token file: 256 int32 header entries (magic 20240520 with version 1: uint16 ids; magic
 * 20240801 with version 7: uint32 ids; entry 2: the token count), then the ids. size is the file's. */
#define ZAYA_LLMC_HEADER_BYTES 1024u
typedef struct zaya_llmc_header {
    uint32_t magic, version;
    int dtype;
    uint64_t tokens;
} zaya_llmc_header;
zaya_status zaya_llmc_header_parse(const char *name, const uint8_t *buf, size_t size, zaya_llmc_header *out);

#ifdef __cplusplus
}
#endif

#endif
