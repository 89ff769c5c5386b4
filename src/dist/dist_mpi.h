/* Internal: the MPI side of a zaya_comm. Only src/dist and benchmarks that time MPI itself as a
 * reference (the bare-loop overhead check) include this; the public header stays MPI-free. */
#ifndef ZAYA_DIST_MPI_H
#define ZAYA_DIST_MPI_H

#include <mpi.h>

#include "zaya/dist.h"

struct zaya_comm {
    MPI_Comm comm;
    int rank, size, world_rank;
    int is_world;
};

MPI_Datatype zaya_dist_mpi_dtype(zaya_dist_dtype t);
/* The MPI_Op that implements op for dtype t (avg maps to the sum; the caller divides). */
MPI_Op zaya_dist_mpi_op(zaya_dist_dtype t, zaya_redop op);
/* Registers / frees the bf16 user operations (called by init/finalize). */
int zaya_dist_bf16_ops_create(void);
void zaya_dist_bf16_ops_free(void);
/* Divides count elements by n in place (the second half of avg). */
void zaya_dist_avg_finish(void *buf, int64_t count, zaya_dist_dtype t, int n);

#endif
