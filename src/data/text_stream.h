/* Lines of a plain, gzip (zlib) or zstd (libzstd) file, decompressed as they are read: the input of
 * `zaya data prepare` for .jsonl, .jsonl.gz and .jsonl.zst. The codec follows the file name and is
 * checked against the file's magic bytes; a compressed file that ends inside a frame (truncated) or
 * holds bytes its codec rejects is an error naming the file and the byte offset in it. */
#ifndef ZAYA_DATA_TEXT_STREAM_H
#define ZAYA_DATA_TEXT_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/status.h"

typedef enum zaya_stream_codec {
    ZAYA_STREAM_PLAIN,
    ZAYA_STREAM_GZIP, /* *.gz: one or more gzip members */
    ZAYA_STREAM_ZSTD, /* *.zst: one or more zstd frames */
} zaya_stream_codec;

/* The codec of a path by its final suffix (.gz, .zst, anything else plain). */
zaya_stream_codec zaya_stream_codec_of(const char *path);
/* The path without its compression suffix ("a.jsonl.gz" -> length of "a.jsonl"). */
size_t zaya_stream_base_len(const char *path);

typedef struct zaya_text_stream zaya_text_stream;

/* Budgets (docs/limits.md): a line longer than max_line bytes is an error as soon as that many bytes
 * of it are decompressed (memory: the line cap plus a fixed window, never the whole line), and
 * compressed input whose decompressed size passes max_ratio times the compressed bytes read (after
 * the first 64 MiB) is an error. */
#define ZAYA_TEXT_STREAM_MAX_LINE ((size_t)1 << 30)
#define ZAYA_TEXT_STREAM_MAX_RATIO 1000u

/* Opens path (a regular file: zaya_open_regular) with the default limits. */
zaya_status zaya_text_stream_open(const char *path, zaya_text_stream **out);
/* max_line 0: ZAYA_TEXT_STREAM_MAX_LINE; max_ratio 0: no expansion limit. */
void zaya_text_stream_set_limits(zaya_text_stream *s, size_t max_line, uint64_t max_ratio);
/* The next line, without its '\n' (a last line without one is returned as well); *line stays valid
 * until the next call. At the end of the data *line is NULL and ZAYA_OK is returned. */
zaya_status zaya_text_stream_next(zaya_text_stream *s, const char **line, size_t *len);
uint64_t zaya_text_stream_line_no(const zaya_text_stream *s);   /* of the line last returned, 1-based */
uint64_t zaya_text_stream_file_offset(const zaya_text_stream *s); /* bytes of the file consumed */
uint64_t zaya_text_stream_data_bytes(const zaya_text_stream *s);  /* decompressed bytes produced */
void zaya_text_stream_close(zaya_text_stream *s);

#endif
