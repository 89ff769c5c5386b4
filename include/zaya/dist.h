/* Communicator layer: the collectives data-parallel training and `zaya bench coll` need.
 *
 * Backend-neutral on purpose: this header names no MPI, CUDA or NCCL type. Host buffers go over
 * MPI (Open MPI); device buffers over the NCCL (RCCL) communicator declared at the end (src/dist/ is
 * the only place that talks to either transport).
 *
 * Process model: zaya_dist_init() initialises the backend (MPI_Init_thread with
 * MPI_THREAD_FUNNELED requested; an MPI already initialised by the caller is used as it is) and
 * returns the world communicator. Running without mpirun gives a world of one rank, and every
 * collective is then a local copy. Init/finalize pairs nest (a benchmark driver may init while a
 * component it calls does too); the last finalize frees the bf16 ops and finalises MPI, and only if
 * init started it.
 *
 * Buffers hold `count` elements of `dtype`: f32 (float) or bf16 (uint16_t storage, see bf16.h).
 * "In place" is requested by passing sendbuf == recvbuf (for reduce-scatter: sendbuf == recvbuf
 * and the full count*size array lives there, the result lands in its first `count` elements; for
 * all-gather: recvbuf holds size*count elements and this rank's block is already at rank*count).
 *
 * Reductions (ZAYA_REDOP_*):
 *  - f32: sum/prod/min/max are the backend's own; avg = sum, then each element divided by the
 *    number of ranks (one more f32 rounding).
 *  - bf16: a pairwise combine of two bf16 values a, b is rne_bf16(f32(a) op f32(b)). For prod the
 *    f32 product of two 8-bit significands is exact; for sum it is exact whenever the exponents
 *    differ by at most 16, and otherwise the smaller operand is below a sixteenth of the larger one's
 *    bf16 rounding radius so the result is the same. Hence every combine is the correctly rounded
 *    (round-to-nearest-even) bf16 value of the exact result: error <= 2^-8 relative (half an ulp).
 *    An n-rank sum does n-1 such combines in an order the backend chooses (ring, tree, ...), so
 *    |result - exact| <= gamma_{n-1} * sum_r |x_r| with gamma_k = k u / (1 - k u), u = 2^-8, and the
 *    bits may differ between algorithms (message size, rank count) but are reproducible for a fixed
 *    size, rank count and library. Sums of integers of magnitude <= 256 (partial sums included) are
 *    exact. min/max are exact. avg = that sum, then rne_bf16(f32(sum) / n).
 *
 * Every failure returns ZAYA_EMPI (or ZAYA_EINVAL for bad arguments) with a message naming the
 * operation, the element count, the dtype and the backend's error string. */
#ifndef ZAYA_DIST_H
#define ZAYA_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_comm zaya_comm;

typedef enum zaya_dist_dtype { ZAYA_DIST_F32 = 0, ZAYA_DIST_BF16 = 1 } zaya_dist_dtype;

typedef enum zaya_redop {
    ZAYA_REDOP_SUM = 0,
    ZAYA_REDOP_PROD,
    ZAYA_REDOP_MIN,
    ZAYA_REDOP_MAX,
    ZAYA_REDOP_AVG,
    ZAYA_REDOP_COUNT
} zaya_redop;

size_t zaya_dist_dtype_size(zaya_dist_dtype t);
const char *zaya_dist_dtype_name(zaya_dist_dtype t); /* "float", "bf16" (nccl-tests names) */
const char *zaya_redop_name(zaya_redop op);          /* "sum", "prod", "min", "max", "avg" */
/* Parses the names above (and "f32"/"float32"/"bfloat16"); ZAYA_EINVAL naming the bad word. */
zaya_status zaya_dist_dtype_parse(const char *s, zaya_dist_dtype *out);
zaya_status zaya_redop_parse(const char *s, zaya_redop *out);

/* ---- lifetime ---- */
zaya_status zaya_dist_init(int *argc, char ***argv, zaya_comm **world);
/* Frees the world returned by init (free sub-communicators first) and finalises the backend if
 * init started it. */
void zaya_dist_finalize(zaya_comm *world);
int zaya_dist_initialized(void);
const char *zaya_dist_backend_name(void); /* "mpi" */
/* The MPI library's own version line (MPI_Get_library_version, first line: "Open MPI v4.1.4, package: ...")
 * and the MPI standard it implements ("3.1"); callable before init. */
const char *zaya_dist_library_version(void);
const char *zaya_dist_mpi_standard(void);

int zaya_comm_rank(const zaya_comm *c);
int zaya_comm_size(const zaya_comm *c);
/* Rank of this process in the world communicator (for labels and logs). */
int zaya_comm_world_rank(const zaya_comm *c);

/* ---- sub-communicators (collective over the parent: every rank of `parent` must call) ----
 * Ranks passing color < 0 get *out = NULL. Ranks are ordered by key, ties by parent rank. */
zaya_status zaya_comm_split(const zaya_comm *parent, int color, int key, zaya_comm **out);
/* The first k ranks of parent (packed), or k ranks spaced size/k apart: 0, s, 2s, ... (spread). */
zaya_status zaya_comm_first(const zaya_comm *parent, int k, zaya_comm **out);
zaya_status zaya_comm_strided(const zaya_comm *parent, int k, zaya_comm **out);
/* Writes the parent ranks a k-rank group would contain (packed or strided) into ranks[k]. */
void zaya_comm_group_ranks(int parent_size, int k, int strided, int *ranks);
void zaya_comm_free(zaya_comm *c); /* NULL is fine; never frees the world (finalize does) */

zaya_status zaya_comm_barrier(const zaya_comm *c);

/* ---- blocking collectives (count = elements per rank unless stated) ---- */
zaya_status zaya_allreduce(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                           zaya_dist_dtype t, zaya_redop op);
/* sendbuf: size*count elements; recvbuf: count elements (this rank's block of the reduction). */
zaya_status zaya_reduce_scatter(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                                zaya_dist_dtype t, zaya_redop op);
/* sendbuf: count elements; recvbuf: size*count elements, rank r's block at r*count. */
zaya_status zaya_allgather(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count, zaya_dist_dtype t);
/* buf: count elements; root's values are copied to every rank. */
zaya_status zaya_broadcast(const zaya_comm *c, void *buf, int64_t count, zaya_dist_dtype t, int root);
/* recvbuf is written on root only (may be NULL elsewhere). */
zaya_status zaya_reduce(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count, zaya_dist_dtype t,
                        zaya_redop op, int root);
/* sendbuf, recvbuf: size*count elements; block j of sendbuf goes to rank j. */
zaya_status zaya_alltoall(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count, zaya_dist_dtype t);
zaya_status zaya_send(const zaya_comm *c, const void *buf, int64_t count, zaya_dist_dtype t, int dst, int tag);
zaya_status zaya_recv(const zaya_comm *c, void *buf, int64_t count, zaya_dist_dtype t, int src, int tag);
/* Sends to dst and receives from src in one call (deadlock-free ring exchange); sendbuf == recvbuf
 * replaces the buffer's contents. */
zaya_status zaya_sendrecv(const zaya_comm *c, const void *sendbuf, int dst, void *recvbuf, int src, int64_t count,
                          zaya_dist_dtype t, int tag);

/* Exact host reductions of small arrays (loss sums, squared norms, token counts): f64 reduces in
 * double (the backend's MPI_DOUBLE), i64 in 64-bit integers (MPI_INT64_T), never through f32. sum,
 * prod, min and max are the backend's own; avg (f64 only) = sum, then divided by the number of ranks;
 * i64 avg is refused (ZAYA_EINVAL). In place when sendbuf == recvbuf. Nothing is allocated. */
zaya_status zaya_allreduce_f64(const zaya_comm *c, const double *sendbuf, double *recvbuf, int64_t count,
                               zaya_redop op);
zaya_status zaya_allreduce_i64(const zaya_comm *c, const int64_t *sendbuf, int64_t *recvbuf, int64_t count,
                               zaya_redop op);

/* Control-plane helpers (checkpoint coordination): rank 0 receives every rank's bytes concatenated
 * in rank order (*all malloc'd, lens[world] filled; other ranks get NULL); and a byte broadcast
 * from rank 0. */
zaya_status zaya_gather_bytes(const zaya_comm *c, const void *buf, size_t len, char **all, size_t *lens);
zaya_status zaya_bcast_bytes(const zaya_comm *c, void *buf, size_t len);

/* ---- non-blocking collectives ----
 * The request lives in caller storage (no allocation per call). Buffers must stay untouched until
 * zaya_dist_wait() returns or zaya_dist_test() reports completion. zaya_dist_test() also drives
 * progress, so a compute loop that calls it now and then overlaps communication. */
typedef struct zaya_dist_request {
    unsigned char backend[16]; /* the backend's request handle */
    void *buf;                 /* result buffer needing post-processing (avg) */
    int64_t count;
    int dtype, op, nranks;
    int active;
    const char *what;
} zaya_dist_request;

zaya_status zaya_iallreduce(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                            zaya_dist_dtype t, zaya_redop op, zaya_dist_request *req);
zaya_status zaya_ireduce_scatter(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                                 zaya_dist_dtype t, zaya_redop op, zaya_dist_request *req);
zaya_status zaya_iallgather(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                            zaya_dist_dtype t, zaya_dist_request *req);
zaya_status zaya_ibroadcast(const zaya_comm *c, void *buf, int64_t count, zaya_dist_dtype t, int root,
                            zaya_dist_request *req);
/* Variable counts: rank r receives the reduction of elements [sum(counts[<r]), +counts[r]) of every
 * rank's sendbuf (not in place). */
zaya_status zaya_ireduce_scatterv(const zaya_comm *c, const void *sendbuf, void *recvbuf, const int *counts,
                                  zaya_dist_dtype t, zaya_redop op, zaya_dist_request *req);
/* In place: rank r's counts[r] elements at buf + displs[r] are copied to every rank's buf. */
zaya_status zaya_iallgatherv(const zaya_comm *c, void *buf, const int *counts, const int *displs, zaya_dist_dtype t,
                             zaya_dist_request *req);
/* Point to point (halo exchanges of context parallelism): buf stays untouched until the wait. */
zaya_status zaya_isend(const zaya_comm *c, const void *buf, int64_t count, zaya_dist_dtype t, int dst, int tag,
                       zaya_dist_request *req);
zaya_status zaya_irecv(const zaya_comm *c, void *buf, int64_t count, zaya_dist_dtype t, int src, int tag,
                       zaya_dist_request *req);
/* *done = 1 once complete (post-processing done); an inactive request is complete. */
zaya_status zaya_dist_test(zaya_dist_request *req, int *done);
zaya_status zaya_dist_wait(zaya_dist_request *req);
zaya_status zaya_dist_waitall(zaya_dist_request *reqs, int n);

/* ---- element-wise bf16 combine, exactly as the reductions above apply it (for tests, checks) ---- */
uint16_t zaya_bf16_combine(uint16_t a, uint16_t b, zaya_redop op); /* op: sum, prod, min, max */

/* ---- NCCL (RCCL) communicator over device buffers (src/dist/nccl.c) ----
 * One NCCL rank per local device: a process drives ndev devices (single-process multi-GPU) and the
 * MPI world's processes together make world_size x ndev ranks; rank = world_rank x ndev + local
 * index. Rank 0 creates the ncclUniqueId and broadcasts it over `c` (MPI), so `mpirun -np N` with
 * one device per process and one process with N devices are the same code. Operations enqueue on
 * the local device's own stream (zaya_nccl_stream) and return without waiting; with ndev > 1 wrap
 * the per-device calls of one collective in zaya_nccl_group_start / end. Pointers are device
 * pointers. dtype and op as above (NCCL's own f32 / bf16 arithmetic: avg is its premultiplied sum,
 * exact for power-of-two rank counts on the check's inputs). A build without NCCL fails init with
 * ZAYA_EUNSUPPORTED "built without NCCL". */
typedef struct zaya_nccl zaya_nccl;
struct zaya_gpu_stream;
int zaya_nccl_built(void);
zaya_status zaya_nccl_init(const zaya_comm *c, int ndev, const int *devices, zaya_nccl **out);
void zaya_nccl_free(zaya_nccl *n);
int zaya_nccl_size(const zaya_nccl *n);
int zaya_nccl_local_count(const zaya_nccl *n);
int zaya_nccl_rank(const zaya_nccl *n, int local);
int zaya_nccl_device(const zaya_nccl *n, int local);
struct zaya_gpu_stream *zaya_nccl_stream(const zaya_nccl *n, int local);
/* The library version as "2.27.7". */
const char *zaya_nccl_version(void);
zaya_status zaya_nccl_group_start(void);
zaya_status zaya_nccl_group_end(void);
zaya_status zaya_nccl_allreduce(const zaya_nccl *n, int local, const void *sendbuf, void *recvbuf, int64_t count,
                                zaya_dist_dtype t, zaya_redop op);
/* recvbuf receives `count` elements; in place when recvbuf == sendbuf + rank x count. */
zaya_status zaya_nccl_reduce_scatter(const zaya_nccl *n, int local, const void *sendbuf, void *recvbuf, int64_t count,
                                     zaya_dist_dtype t, zaya_redop op);
zaya_status zaya_nccl_allgather(const zaya_nccl *n, int local, const void *sendbuf, void *recvbuf, int64_t count,
                                zaya_dist_dtype t);
zaya_status zaya_nccl_broadcast(const zaya_nccl *n, int local, const void *sendbuf, void *recvbuf, int64_t count,
                                zaya_dist_dtype t, int root);
zaya_status zaya_nccl_reduce(const zaya_nccl *n, int local, const void *sendbuf, void *recvbuf, int64_t count,
                             zaya_dist_dtype t, zaya_redop op, int root);
/* count elements to and from every rank (block r of sendbuf goes to rank r). */
zaya_status zaya_nccl_alltoall(const zaya_nccl *n, int local, const void *sendbuf, void *recvbuf, int64_t count,
                               zaya_dist_dtype t);
zaya_status zaya_nccl_sendrecv(const zaya_nccl *n, int local, const void *sendbuf, int dst, void *recvbuf, int src,
                               int64_t count, zaya_dist_dtype t);

#ifdef __cplusplus
}
#endif

#endif
