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

zaya_status zaya_text_stream_open(const char *path, zaya_text_stream **out);
/* The next line, without its '\n' (a last line without one is returned as well); *line stays valid
 * until the next call. At the end of the data *line is NULL and ZAYA_OK is returned. */
zaya_status zaya_text_stream_next(zaya_text_stream *s, const char **line, size_t *len);
uint64_t zaya_text_stream_line_no(const zaya_text_stream *s);   /* of the line last returned, 1-based */
uint64_t zaya_text_stream_file_offset(const zaya_text_stream *s); /* bytes of the file consumed */
uint64_t zaya_text_stream_data_bytes(const zaya_text_stream *s);  /* decompressed bytes produced */
void zaya_text_stream_close(zaya_text_stream *s);

#endif
