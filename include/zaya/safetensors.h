/* The safetensors file format: an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}),
 * then the data section. Offsets are relative to the data section.
 *
 * The reader maps the file and validates everything before handing out a pointer: header length
 * within the file, JSON shape of every entry, known dtype, shape product times element size equal
 * to the byte range, ranges inside the data section, sorted without overlap and covering it exactly
 * (the rules of the reference implementation). Errors name the file, the tensor and the offset.
 *
 * The writer streams: tensors are declared with a pointer to their data, the header is written,
 * then the data in large writes (f32 sources may be stored as bf16, rounded to nearest even), with
 * an xxh3-64 of every tensor's stored bytes computed on the way. Optionally atomic (temp + fsync +
 * rename + fsync of the directory). */
#ifndef ZAYA_SAFETENSORS_H
#define ZAYA_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zaya_st_dtype {
    ZAYA_ST_BOOL, ZAYA_ST_U8, ZAYA_ST_I8, ZAYA_ST_I16, ZAYA_ST_U16, ZAYA_ST_F16, ZAYA_ST_BF16,
    ZAYA_ST_I32, ZAYA_ST_U32, ZAYA_ST_F32, ZAYA_ST_I64, ZAYA_ST_U64, ZAYA_ST_F64,
    ZAYA_ST_NDTYPES
} zaya_st_dtype;

#define ZAYA_ST_MAX_DIMS 8
#define ZAYA_ST_MAX_HEADER (100u << 20) /* same cap as the reference implementation */

const char *zaya_st_dtype_name(zaya_st_dtype d); /* "F32", "BF16", ... */
int zaya_st_dtype_size(zaya_st_dtype d);         /* bytes per element */
/* Returns 0 and sets *d for a known name, -1 otherwise. */
int zaya_st_dtype_parse(const char *name, zaya_st_dtype *d);

typedef struct zaya_st_tensor {
    char *name;
    zaya_st_dtype dtype;
    int ndim;
    int64_t shape[ZAYA_ST_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end;  /* byte range within the data section */
    uint64_t file_offset; /* absolute byte offset of the data in the file */
    const uint8_t *data;  /* into the mapping (unaligned for odd offsets: use memcpy) */
} zaya_st_tensor;

typedef struct zaya_st_file {
    char *path;
    void *map;
    size_t size;
    int mapped;              /* 1: map is an mmap of the file; 0: borrowed buffer */
    uint64_t data_start;     /* 8 + header length */
    int ntensors;
    zaya_st_tensor *tensors; /* in data order */
    int *by_name;            /* indices sorted by name */
    int nmeta;
    char **meta_keys, **meta_vals;
} zaya_st_file;

zaya_status zaya_st_open(zaya_st_file *f, const char *path);
/* Validates an in-memory image (borrowed; must outlive f). `what` names it in errors. */
zaya_status zaya_st_parse(zaya_st_file *f, const void *buf, size_t size, const char *what);
void zaya_st_close(zaya_st_file *f);
const zaya_st_tensor *zaya_st_find(const zaya_st_file *f, const char *name);
const char *zaya_st_meta(const zaya_st_file *f, const char *key); /* NULL when absent */
/* Converts count elements starting at element `start` of a F32, BF16 or F16 tensor to f32. */
zaya_status zaya_st_read_f32(const zaya_st_file *f, const zaya_st_tensor *t, int64_t start, int64_t count, float *dst);

/* ---- writer ---- */
typedef struct zaya_st_writer zaya_st_writer;

/* atomic: write path.tmp.<pid> and rename at the end; otherwise write path directly. */
zaya_status zaya_st_writer_init(zaya_st_writer **w, const char *path, int atomic);
zaya_status zaya_st_writer_meta(zaya_st_writer *w, const char *key, const char *value);
/* Declares a tensor stored as `dtype` whose data is read from src (in src_dtype) when the file is
 * written; src must stay valid until finish. Conversions: F32 -> BF16; otherwise dtypes must match. */
zaya_status zaya_st_writer_add(zaya_st_writer *w, const char *name, zaya_st_dtype dtype, int ndim,
                               const int64_t *shape, const void *src, zaya_st_dtype src_dtype);
/* Produces count f32 values of a tensor starting at element `start` into dst (count <= 2^20). */
typedef zaya_status (*zaya_st_fill_fn)(void *ctx, int64_t start, int64_t count, float *dst);
/* Declares a tensor stored as `dtype` (F32 or BF16) whose values are produced piece by piece by
 * fill(ctx, ...) when the file is written: nothing of the tensor is held in memory beyond one piece.
 * ctx must stay valid until finish; an error of fill fails finish (the partial file is removed). */
zaya_status zaya_st_writer_add_source(zaya_st_writer *w, const char *name, zaya_st_dtype dtype, int ndim,
                                      const int64_t *shape, zaya_st_fill_fn fill, void *ctx);
/* Writes header and data, fsyncs, renames (atomic mode), frees w. checksums[i] (optional) receives
 * the xxh3-64 of tensor i's stored bytes, offsets[i] (optional) its absolute file offset, both in
 * the order of add. *bytes (optional): file size. On failure the partial file is removed. */
zaya_status zaya_st_writer_finish(zaya_st_writer *w, uint64_t *checksums, uint64_t *offsets, uint64_t *bytes);
void zaya_st_writer_abort(zaya_st_writer *w);

/* Fault injection for tests: after `bytes` more bytes written by this module (all threads),
 * writes fail with ENOSPC. A negative value disables it (the default). */
void zaya_st_inject_write_failure(int64_t bytes);
/* write() loop with EINTR handling and the fault-injection hook; errors name path. */
zaya_status zaya_st_write_all(int fd, const void *buf, size_t len, const char *path);

#ifdef __cplusplus
}
#endif

#endif
