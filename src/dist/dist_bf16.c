/* bf16 reductions as MPI user operations: each pairwise combine widens both operands to f32, applies
 * the operation once and rounds once (RNE) back to bf16. See dist.h for the accuracy this gives. */
#include <math.h>

#include "dist/dist_mpi.h"
#include "zaya/bf16.h"

static MPI_Op g_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

uint16_t zaya_bf16_combine(uint16_t a, uint16_t b, zaya_redop op) {
    float x = zaya_bf16_to_f32(a), y = zaya_bf16_to_f32(b);
    switch (op) {
    case ZAYA_REDOP_SUM:
    case ZAYA_REDOP_AVG: return zaya_f32_to_bf16(x + y);
    case ZAYA_REDOP_PROD: return zaya_f32_to_bf16(x * y);
    case ZAYA_REDOP_MIN: return (y < x || isnan(y)) ? b : a; /* NaN propagates, like fminf would not */
    case ZAYA_REDOP_MAX: return (y > x || isnan(y)) ? b : a;
    default: break;
    }
    return a;
}

/* MPI calls these with inout = in (op) inout; in comes from the lower rank, but every op here is
 * commutative (rounding is symmetric), so the order of the two operands never matters. */
#define ZAYA_BF16_OP(name, OP)                                                                 \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type) {                    \
        (void)type;                                                                            \
        const uint16_t *a = in;                                                                \
        uint16_t *b = inout;                                                                   \
        for (int i = 0; i < *len; i++) b[i] = zaya_bf16_combine(a[i], b[i], OP);               \
    }
ZAYA_BF16_OP(bf16_sum, ZAYA_REDOP_SUM)
ZAYA_BF16_OP(bf16_prod, ZAYA_REDOP_PROD)
ZAYA_BF16_OP(bf16_min, ZAYA_REDOP_MIN)
ZAYA_BF16_OP(bf16_max, ZAYA_REDOP_MAX)

int zaya_dist_bf16_ops_create(void) {
    MPI_User_function *fns[4] = {bf16_sum, bf16_prod, bf16_min, bf16_max};
    for (int i = 0; i < 4; i++) {
        if (g_ops[i] != MPI_OP_NULL) continue;
        int rc = MPI_Op_create(fns[i], 1, &g_ops[i]);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

void zaya_dist_bf16_ops_free(void) {
    for (int i = 0; i < 4; i++)
        if (g_ops[i] != MPI_OP_NULL) MPI_Op_free(&g_ops[i]);
}

MPI_Datatype zaya_dist_mpi_dtype(zaya_dist_dtype t) { return t == ZAYA_DIST_BF16 ? MPI_UINT16_T : MPI_FLOAT; }

MPI_Op zaya_dist_mpi_op(zaya_dist_dtype t, zaya_redop op) {
    if (t == ZAYA_DIST_BF16) {
        switch (op) {
        case ZAYA_REDOP_SUM:
        case ZAYA_REDOP_AVG: return g_ops[0];
        case ZAYA_REDOP_PROD: return g_ops[1];
        case ZAYA_REDOP_MIN: return g_ops[2];
        case ZAYA_REDOP_MAX: return g_ops[3];
        default: return MPI_OP_NULL;
        }
    }
    switch (op) {
    case ZAYA_REDOP_SUM:
    case ZAYA_REDOP_AVG: return MPI_SUM;
    case ZAYA_REDOP_PROD: return MPI_PROD;
    case ZAYA_REDOP_MIN: return MPI_MIN;
    case ZAYA_REDOP_MAX: return MPI_MAX;
    default: return MPI_OP_NULL;
    }
}

void zaya_dist_avg_finish(void *buf, int64_t count, zaya_dist_dtype t, int n) {
    if (t == ZAYA_DIST_BF16) {
        uint16_t *b = buf;
        for (int64_t i = 0; i < count; i++) b[i] = zaya_f32_to_bf16(zaya_bf16_to_f32(b[i]) / (float)n);
    } else {
        float *f = buf;
        for (int64_t i = 0; i < count; i++) f[i] /= (float)n;
    }
}
