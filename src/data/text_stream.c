/* Streaming line reader over plain, gzip and zstd files (see text_stream.h). Decompressed bytes go to
 * one growing window; lines are cut from it and the window is compacted before it is refilled. */
#include "data/text_stream.h"

#include "zaya/fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

enum { IN_CAP = 1 << 18, BUF_INIT = 1 << 20, MIN_FREE = 1 << 16 };

struct zaya_text_stream {
    char *path;
    FILE *f;
    zaya_stream_codec codec;
    z_stream z;
    int z_init;
    int in_frame; /* inside a gzip member / zstd frame that has not ended */
    int fed;      /* any input given to the decoder */
    ZSTD_DStream *zs;
    unsigned char *in;
    size_t in_len, in_pos;
    int eof;
    uint64_t file_read;
    char *buf;
    size_t cap, start, end, scan; /* unread data buf[start, end); no '\n' in buf[start, scan) */
    int done;
    uint64_t line_no, data_bytes;
    size_t max_line;      /* longest line accepted */
    uint64_t max_ratio;   /* decompressed bytes per compressed byte, past RATIO_FLOOR */
};

#define RATIO_FLOOR ((uint64_t)64 << 20)

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

zaya_stream_codec zaya_stream_codec_of(const char *path) {
    if (ends_with(path, ".gz")) return ZAYA_STREAM_GZIP;
    if (ends_with(path, ".zst")) return ZAYA_STREAM_ZSTD;
    return ZAYA_STREAM_PLAIN;
}

size_t zaya_stream_base_len(const char *path) {
    size_t n = strlen(path);
    switch (zaya_stream_codec_of(path)) {
    case ZAYA_STREAM_GZIP: return n - 3;
    case ZAYA_STREAM_ZSTD: return n - 4;
    default: return n;
    }
}

static const char *codec_name(zaya_stream_codec c) {
    return c == ZAYA_STREAM_GZIP ? "gzip" : c == ZAYA_STREAM_ZSTD ? "zstd" : "plain";
}

uint64_t zaya_text_stream_line_no(const zaya_text_stream *s) { return s->line_no; }
uint64_t zaya_text_stream_data_bytes(const zaya_text_stream *s) { return s->data_bytes; }
uint64_t zaya_text_stream_file_offset(const zaya_text_stream *s) {
    return s->codec == ZAYA_STREAM_PLAIN ? s->file_read : s->file_read - (s->in_len - s->in_pos);
}

static zaya_status read_input(zaya_text_stream *s) {
    if (s->in_pos < s->in_len || s->eof) return ZAYA_OK;
    size_t n = fread(s->in, 1, IN_CAP, s->f);
    if (n == 0) {
        if (ferror(s->f)) return zaya_error_set(ZAYA_EIO, "reading '%s' failed: %s", s->path, strerror(errno));
        s->eof = 1;
    }
    s->in_len = n;
    s->in_pos = 0;
    s->file_read += n;
    return ZAYA_OK;
}

static zaya_status truncated(const zaya_text_stream *s) {
    return zaya_error_set(ZAYA_EFORMAT,
                          "'%s': truncated %s data: the file ends at byte offset %llu inside a %s (%llu bytes "
                          "decompressed so far)",
                          s->path, codec_name(s->codec), (unsigned long long)s->file_read,
                          s->codec == ZAYA_STREAM_GZIP ? "gzip member" : "zstd frame", (unsigned long long)s->data_bytes);
}

/* Decompresses (or reads) into buf[end, cap); *produced = 0 only at the end of the data. */
static zaya_status fill_gzip(zaya_text_stream *s, size_t *produced) {
    *produced = 0;
    for (;;) {
        ZAYA_TRY(read_input(s));
        if (s->in_pos == s->in_len) { /* end of file */
            if (s->in_frame) return truncated(s);
            s->done = 1;
            return ZAYA_OK;
        }
        if (!s->in_frame) { /* another member follows the last one */
            if (inflateReset(&s->z) != Z_OK) return zaya_error_set(ZAYA_EFORMAT, "'%s': zlib reset failed", s->path);
            s->in_frame = 1;
        }
        s->z.next_in = s->in + s->in_pos;
        s->z.avail_in = (uInt)(s->in_len - s->in_pos);
        s->z.next_out = (Bytef *)s->buf + s->end;
        s->z.avail_out = (uInt)(s->cap - s->end);
        int rc = inflate(&s->z, Z_NO_FLUSH);
        size_t used = (s->in_len - s->in_pos) - s->z.avail_in, out = (s->cap - s->end) - s->z.avail_out;
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
            return zaya_error_set(ZAYA_EFORMAT, "'%s': corrupt gzip data near byte offset %llu: %s", s->path,
                                  (unsigned long long)(zaya_text_stream_file_offset(s) + used),
                                  s->z.msg ? s->z.msg : "inflate failed");
        s->in_pos += used;
        s->end += out;
        if (rc == Z_STREAM_END) s->in_frame = 0;
        if (out) {
            *produced = out;
            return ZAYA_OK;
        }
    }
}

static zaya_status fill_zstd(zaya_text_stream *s, size_t *produced) {
    *produced = 0;
    for (;;) {
        ZAYA_TRY(read_input(s));
        if (s->in_pos == s->in_len) {
            if (s->in_frame) return truncated(s);
            s->done = 1;
            return ZAYA_OK;
        }
        ZSTD_inBuffer ib = {s->in, s->in_len, s->in_pos};
        ZSTD_outBuffer ob = {s->buf, s->cap, s->end};
        size_t r = ZSTD_decompressStream(s->zs, &ob, &ib);
        if (ZSTD_isError(r))
            return zaya_error_set(ZAYA_EFORMAT, "'%s': corrupt zstd data near byte offset %llu: %s", s->path,
                                  (unsigned long long)(s->file_read - (s->in_len - ib.pos)), ZSTD_getErrorName(r));
        size_t out = ob.pos - s->end;
        s->in_pos = ib.pos;
        s->end = ob.pos;
        s->in_frame = r != 0; /* 0: a frame ended and everything it holds has been flushed */
        if (out) {
            *produced = out;
            return ZAYA_OK;
        }
    }
}

static zaya_status fill_plain(zaya_text_stream *s, size_t *produced) {
    size_t n = fread(s->buf + s->end, 1, s->cap - s->end, s->f);
    if (n == 0 && ferror(s->f)) return zaya_error_set(ZAYA_EIO, "reading '%s' failed: %s", s->path, strerror(errno));
    if (n == 0) s->done = 1;
    s->file_read += n;
    s->end += n;
    *produced = n;
    return ZAYA_OK;
}

static zaya_status line_too_long(const zaya_text_stream *s) {
    return zaya_error_set(ZAYA_ERANGE, "'%s': line %llu is longer than %zu bytes (the line cap; data prepare --max-line-bytes)",
                          s->path, (unsigned long long)s->line_no + 1, s->max_line);
}

/* Compressed input that expands by more than max_ratio (after the first RATIO_FLOOR bytes) is refused
 * before it costs minutes: real text compresses well below 1000:1 (gzip cannot exceed ~1032:1),
 * while 10 GiB of newlines fit in 320 KB of zstd. */
static zaya_status check_ratio(const zaya_text_stream *s) {
    if (s->codec == ZAYA_STREAM_PLAIN || !s->max_ratio || s->data_bytes <= RATIO_FLOOR) return ZAYA_OK;
    const uint64_t in = zaya_text_stream_file_offset(s);
    if (s->data_bytes / s->max_ratio <= in) return ZAYA_OK;
    return zaya_error_set(ZAYA_ERANGE,
                          "'%s': %llu compressed bytes decompressed to %llu bytes, more than %llu times their size (a "
                          "compression bomb? data prepare --max-expansion raises the limit)",
                          s->path, (unsigned long long)in, (unsigned long long)s->data_bytes, (unsigned long long)s->max_ratio);
}

static zaya_status refill(zaya_text_stream *s) {
    if (s->start > 0) { /* compact */
        memmove(s->buf, s->buf + s->start, s->end - s->start);
        s->end -= s->start;
        s->scan -= s->start;
        s->start = 0;
    }
    /* buf[0, end) holds no newline: it is the start of one line. Memory stays within the cap. */
    if (s->end > s->max_line) return line_too_long(s);
    if (s->cap - s->end < MIN_FREE) {
        const size_t limit = s->max_line + 1 + MIN_FREE;
        const size_t ncap = s->cap * 2 < limit ? s->cap * 2 : limit;
        char *b = ncap > s->cap ? realloc(s->buf, ncap) : NULL;
        if (!b) return zaya_error_set(ZAYA_ENOMEM, "'%s': cannot allocate %zu bytes for line %llu", s->path, ncap,
                                      (unsigned long long)s->line_no + 1);
        s->buf = b;
        s->cap = ncap;
    }
    size_t produced = 0;
    switch (s->codec) {
    case ZAYA_STREAM_GZIP: ZAYA_TRY(fill_gzip(s, &produced)); break;
    case ZAYA_STREAM_ZSTD: ZAYA_TRY(fill_zstd(s, &produced)); break;
    default: ZAYA_TRY(fill_plain(s, &produced)); break;
    }
    s->data_bytes += produced;
    return check_ratio(s);
}

void zaya_text_stream_set_limits(zaya_text_stream *s, size_t max_line, uint64_t max_ratio) {
    s->max_line = max_line ? max_line : ZAYA_TEXT_STREAM_MAX_LINE;
    s->max_ratio = max_ratio;
}

zaya_status zaya_text_stream_next(zaya_text_stream *s, const char **line, size_t *len) {
    *line = NULL;
    *len = 0;
    for (;;) {
        char *nl = memchr(s->buf + s->scan, '\n', s->end - s->scan);
        if (nl) {
            size_t at = (size_t)(nl - s->buf);
            if (at - s->start > s->max_line) return line_too_long(s);
            *line = s->buf + s->start;
            *len = at - s->start;
            s->start = s->scan = at + 1;
            s->line_no++;
            return ZAYA_OK;
        }
        s->scan = s->end;
        if (s->done) {
            if (s->start < s->end) {
                if (s->end - s->start > s->max_line) return line_too_long(s);
                *line = s->buf + s->start;
                *len = s->end - s->start;
                s->start = s->scan = s->end;
                s->line_no++;
            }
            return ZAYA_OK;
        }
        ZAYA_TRY(refill(s));
    }
}

void zaya_text_stream_close(zaya_text_stream *s) {
    if (!s) return;
    if (s->f) fclose(s->f);
    if (s->z_init) inflateEnd(&s->z);
    ZSTD_freeDStream(s->zs);
    free(s->in);
    free(s->buf);
    free(s->path);
    free(s);
}

zaya_status zaya_text_stream_open(const char *path, zaya_text_stream **out) {
    *out = NULL;
    zaya_text_stream *s = calloc(1, sizeof *s);
    if (!s) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    s->codec = zaya_stream_codec_of(path);
    s->path = strdup(path);
    s->max_line = ZAYA_TEXT_STREAM_MAX_LINE;
    s->max_ratio = ZAYA_TEXT_STREAM_MAX_RATIO;
    s->cap = BUF_INIT;
    s->buf = malloc(s->cap);
    s->in = s->codec == ZAYA_STREAM_PLAIN ? NULL : malloc(IN_CAP);
    zaya_status st = ZAYA_OK;
    if (!s->path || !s->buf || (s->codec != ZAYA_STREAM_PLAIN && !s->in)) st = zaya_error_set(ZAYA_ENOMEM, "out of memory");
    else st = zaya_fopen_regular(path, &s->f, NULL);
    if (st == ZAYA_OK && s->codec != ZAYA_STREAM_PLAIN) {
        st = read_input(s);
        const unsigned char *m = s->in;
        size_t n = s->in_len;
        if (st == ZAYA_OK && s->codec == ZAYA_STREAM_GZIP && !(n >= 2 && m[0] == 0x1f && m[1] == 0x8b))
            st = zaya_error_set(ZAYA_EFORMAT, "'%s' is not gzip data (%s; expected the magic bytes 1f 8b at offset 0)",
                                path, n ? "other bytes" : "empty file");
        uint32_t magic = n >= 4 ? (uint32_t)m[0] | (uint32_t)m[1] << 8 | (uint32_t)m[2] << 16 | (uint32_t)m[3] << 24 : 0;
        if (st == ZAYA_OK && s->codec == ZAYA_STREAM_ZSTD && magic != 0xFD2FB528u && (magic & 0xFFFFFFF0u) != 0x184D2A50u)
            st = zaya_error_set(ZAYA_EFORMAT, "'%s' is not zstd data (%s; expected the magic bytes 28 b5 2f fd at offset 0)",
                                path, n ? "other bytes" : "empty file");
    }
    if (st == ZAYA_OK && s->codec == ZAYA_STREAM_GZIP) {
        if (inflateInit2(&s->z, 15 + 16) != Z_OK) st = zaya_error_set(ZAYA_ENOMEM, "zlib init failed");
        else s->z_init = s->in_frame = 1;
    }
    if (st == ZAYA_OK && s->codec == ZAYA_STREAM_ZSTD) {
        s->zs = ZSTD_createDStream();
        if (!s->zs || ZSTD_isError(ZSTD_initDStream(s->zs))) st = zaya_error_set(ZAYA_ENOMEM, "zstd init failed");
        else s->in_frame = 1;
    }
    if (st != ZAYA_OK) {
        zaya_text_stream_close(s);
        return st;
    }
    *out = s;
    return ZAYA_OK;
}
