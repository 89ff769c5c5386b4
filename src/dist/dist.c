/* Communicator layer over MPI. Every call checks its arguments, maps zaya's dtype/op to MPI and
 * turns an MPI error into ZAYA_EMPI naming the operation and the sizes. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_mpi.h"
#include "zaya/log.h"

_Static_assert(sizeof(MPI_Request) <= sizeof(((zaya_dist_request *)0)->backend),
               "zaya_dist_request.backend too small for MPI_Request");

static int g_we_initialized = 0;
static int g_refs = 0; /* init/finalize pairs nest: the last finalize shuts MPI down */

/* Read by AddressSanitizer only (unused otherwise): Open MPI's libraries lack frame pointers, so
 * leak reports need the slow unwinder to reach the libmpi frames that tests/lsan.supp suppresses
 * (MPI keeps allocations alive past MPI_Finalize by design). Options in ASAN_OPTIONS still win. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }

size_t zaya_dist_dtype_size(zaya_dist_dtype t) { return t == ZAYA_DIST_BF16 ? 2 : 4; }
const char *zaya_dist_dtype_name(zaya_dist_dtype t) { return t == ZAYA_DIST_BF16 ? "bf16" : "float"; }

const char *zaya_redop_name(zaya_redop op) {
    static const char *names[] = {"sum", "prod", "min", "max", "avg"};
    return (op >= 0 && op < ZAYA_REDOP_COUNT) ? names[op] : "?";
}

zaya_status zaya_dist_dtype_parse(const char *s, zaya_dist_dtype *out) {
    if (!strcmp(s, "float") || !strcmp(s, "f32") || !strcmp(s, "float32")) *out = ZAYA_DIST_F32;
    else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) *out = ZAYA_DIST_BF16;
    else return zaya_error_set(ZAYA_EINVAL, "unknown dtype '%s' (use float or bf16)", s);
    return ZAYA_OK;
}

zaya_status zaya_redop_parse(const char *s, zaya_redop *out) {
    for (int i = 0; i < ZAYA_REDOP_COUNT; i++)
        if (!strcmp(s, zaya_redop_name((zaya_redop)i))) {
            *out = (zaya_redop)i;
            return ZAYA_OK;
        }
    return zaya_error_set(ZAYA_EINVAL, "unknown reduction op '%s' (use sum, prod, min, max or avg)", s);
}

static zaya_status mpi_fail_named(int rc, const char *what, int64_t count, const char *type_name) {
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return zaya_error_set(ZAYA_EMPI, "%s of %lld %s elements failed: %s", what, (long long)count, type_name, msg);
}

static zaya_status mpi_fail(int rc, const char *what, int64_t count, zaya_dist_dtype t) {
    return mpi_fail_named(rc, what, count, zaya_dist_dtype_name(t));
}

#define MPI_CHECK(call, what, count, t)                         \
    do {                                                        \
        int mpi_rc_ = (call);                                   \
        if (mpi_rc_ != MPI_SUCCESS) return mpi_fail(mpi_rc_, what, count, t); \
    } while (0)

/* MPI counts are int: reject what does not fit instead of truncating. */
static zaya_status check_args(const zaya_comm *c, const char *what, int64_t count, int64_t blocks, zaya_dist_dtype t) {
    if (!c) return zaya_error_set(ZAYA_EINVAL, "%s: NULL communicator", what);
    if (t != ZAYA_DIST_F32 && t != ZAYA_DIST_BF16) return zaya_error_set(ZAYA_EINVAL, "%s: bad dtype %d", what, (int)t);
    if (count < 0) return zaya_error_set(ZAYA_EINVAL, "%s: negative count %lld", what, (long long)count);
    if (count > INT_MAX / (blocks > 0 ? blocks : 1))
        return zaya_error_set(ZAYA_ERANGE, "%s: %lld %s elements x %lld blocks exceeds the backend's int count limit",
                              what, (long long)count, zaya_dist_dtype_name(t), (long long)blocks);
    return ZAYA_OK;
}

static zaya_status check_op(const char *what, zaya_redop op) {
    if (op < 0 || op >= ZAYA_REDOP_COUNT) return zaya_error_set(ZAYA_EINVAL, "%s: bad reduction op %d", what, (int)op);
    return ZAYA_OK;
}

static zaya_status check_root(const zaya_comm *c, const char *what, int root) {
    if (root < 0 || root >= c->size)
        return zaya_error_set(ZAYA_EINVAL, "%s: root %d outside communicator of %d ranks", what, root, c->size);
    return ZAYA_OK;
}

int zaya_dist_initialized(void) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

const char *zaya_dist_backend_name(void) { return "mpi"; }

const char *zaya_dist_library_version(void) {
    static char buf[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "?";
    buf[len < (int)sizeof buf ? len : (int)sizeof buf - 1] = 0;
    char *nl = strchr(buf, '\n');
    if (nl) *nl = 0;
    return buf;
}

const char *zaya_dist_mpi_standard(void) {
    static char buf[16];
    int v = 0, sv = 0;
    if (MPI_Get_version(&v, &sv) != MPI_SUCCESS) return "?";
    snprintf(buf, sizeof buf, "%d.%d", v, sv);
    return buf;
}

zaya_status zaya_dist_init(int *argc, char ***argv, zaya_comm **world) {
    *world = NULL;
    int init = 0, fin = 0;
    MPI_Finalized(&fin);
    if (fin) return zaya_error_set(ZAYA_EMPI, "dist init: MPI was already finalized in this process");
    MPI_Initialized(&init);
    if (!init) {
        int provided = 0;
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return zaya_error_set(ZAYA_EMPI, "dist init: MPI_Init_thread failed (code %d)", rc);
        g_we_initialized = 1;
        if (provided < MPI_THREAD_FUNNELED) ZAYA_WARN("MPI provides thread level %d < FUNNELED", provided);
    }
    /* Errors come back as codes so they can be reported with context instead of aborting. */
    g_refs++;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = zaya_dist_bf16_ops_create();
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "dist init: creating bf16 reduction ops", 0, ZAYA_DIST_BF16);
    zaya_comm *c = calloc(1, sizeof *c);
    if (!c) return zaya_error_set(ZAYA_ENOMEM, "dist init: out of memory");
    c->comm = MPI_COMM_WORLD;
    c->is_world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->world_rank = c->rank;
    zaya_log_set_rank(c->rank, c->size);
    *world = c;
    return ZAYA_OK;
}

void zaya_dist_finalize(zaya_comm *world) {
    free(world);
    if (g_refs > 0 && --g_refs > 0) return;
    if (!zaya_dist_initialized()) return;
    zaya_dist_bf16_ops_free();
    if (g_we_initialized) {
        MPI_Finalize();
        g_we_initialized = 0;
    }
}

int zaya_comm_rank(const zaya_comm *c) { return c->rank; }
int zaya_comm_size(const zaya_comm *c) { return c->size; }
int zaya_comm_world_rank(const zaya_comm *c) { return c->world_rank; }

zaya_status zaya_comm_split(const zaya_comm *parent, int color, int key, zaya_comm **out) {
    *out = NULL;
    MPI_Comm sub = MPI_COMM_NULL;
    int rc = MPI_Comm_split(parent->comm, color < 0 ? MPI_UNDEFINED : color, key, &sub);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "comm split", parent->size, ZAYA_DIST_F32);
    if (sub == MPI_COMM_NULL) return ZAYA_OK;
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    zaya_comm *c = calloc(1, sizeof *c);
    if (!c) {
        MPI_Comm_free(&sub);
        return zaya_error_set(ZAYA_ENOMEM, "comm split: out of memory");
    }
    c->comm = sub;
    MPI_Comm_rank(sub, &c->rank);
    MPI_Comm_size(sub, &c->size);
    c->world_rank = parent->world_rank;
    *out = c;
    return ZAYA_OK;
}

void zaya_comm_group_ranks(int parent_size, int k, int strided, int *ranks) {
    int stride = (strided && k > 0) ? parent_size / k : 1;
    if (stride < 1) stride = 1;
    for (int i = 0; i < k; i++) ranks[i] = i * stride;
}

static zaya_status comm_group(const zaya_comm *parent, int k, int strided, zaya_comm **out) {
    if (k < 1 || k > parent->size)
        return zaya_error_set(ZAYA_EINVAL, "comm group: %d ranks requested from a communicator of %d", k, parent->size);
    int stride = strided ? parent->size / k : 1;
    int member = parent->rank % stride == 0 && parent->rank / stride < k;
    return zaya_comm_split(parent, member ? 0 : -1, parent->rank, out);
}

zaya_status zaya_comm_first(const zaya_comm *parent, int k, zaya_comm **out) { return comm_group(parent, k, 0, out); }
zaya_status zaya_comm_strided(const zaya_comm *parent, int k, zaya_comm **out) { return comm_group(parent, k, 1, out); }

void zaya_comm_free(zaya_comm *c) {
    if (!c || c->is_world) return;
    if (zaya_dist_initialized() && c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
    free(c);
}

zaya_status zaya_comm_barrier(const zaya_comm *c) {
    if (!c) return zaya_error_set(ZAYA_EINVAL, "barrier: NULL communicator");
    MPI_CHECK(MPI_Barrier(c->comm), "barrier", 0, ZAYA_DIST_F32);
    return ZAYA_OK;
}

/* ---- blocking ---- */

zaya_status zaya_allreduce(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                           zaya_dist_dtype t, zaya_redop op) {
    ZAYA_TRY(check_args(c, "all-reduce", count, 1, t));
    ZAYA_TRY(check_op("all-reduce", op));
    const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    MPI_CHECK(MPI_Allreduce(sb, recvbuf, (int)count, zaya_dist_mpi_dtype(t), zaya_dist_mpi_op(t, op), c->comm),
              "all-reduce", count, t);
    if (op == ZAYA_REDOP_AVG) zaya_dist_avg_finish(recvbuf, count, t, c->size);
    return ZAYA_OK;
}

/* f64 / i64 all-reduce: the builtin MPI op on the builtin type (no user op, no staging buffer). */
static zaya_status allreduce_host(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                                  zaya_redop op, MPI_Datatype dt, const char *what, const char *type_name) {
    if (!c) return zaya_error_set(ZAYA_EINVAL, "%s: NULL communicator", what);
    ZAYA_TRY(check_op(what, op));
    if (count < 0) return zaya_error_set(ZAYA_EINVAL, "%s: negative count %lld", what, (long long)count);
    if (count > INT_MAX)
        return zaya_error_set(ZAYA_ERANGE, "%s: %lld %s elements exceed the backend's int count limit", what,
                              (long long)count, type_name);
    MPI_Op mop = MPI_SUM; /* sum and avg */
    if (op == ZAYA_REDOP_PROD) mop = MPI_PROD;
    else if (op == ZAYA_REDOP_MIN) mop = MPI_MIN;
    else if (op == ZAYA_REDOP_MAX) mop = MPI_MAX;
    const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    int rc = MPI_Allreduce(sb, recvbuf, (int)count, dt, mop, c->comm);
    if (rc != MPI_SUCCESS) return mpi_fail_named(rc, what, count, type_name);
    return ZAYA_OK;
}

zaya_status zaya_allreduce_f64(const zaya_comm *c, const double *sendbuf, double *recvbuf, int64_t count,
                               zaya_redop op) {
    ZAYA_TRY(allreduce_host(c, sendbuf, recvbuf, count, op, MPI_DOUBLE, "all-reduce (f64)", "f64"));
    if (op == ZAYA_REDOP_AVG)
        for (int64_t i = 0; i < count; i++) recvbuf[i] /= (double)c->size;
    return ZAYA_OK;
}

zaya_status zaya_allreduce_i64(const zaya_comm *c, const int64_t *sendbuf, int64_t *recvbuf, int64_t count,
                               zaya_redop op) {
    if (op == ZAYA_REDOP_AVG)
        return zaya_error_set(ZAYA_EINVAL, "all-reduce (i64): avg of integers is not exact (use sum and divide)");
    return allreduce_host(c, sendbuf, recvbuf, count, op, MPI_INT64_T, "all-reduce (i64)", "i64");
}

zaya_status zaya_reduce_scatter(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                                zaya_dist_dtype t, zaya_redop op) {
    ZAYA_TRY(check_args(c, "reduce-scatter", count, c ? c->size : 1, t));
    ZAYA_TRY(check_op("reduce-scatter", op));
    const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    MPI_CHECK(MPI_Reduce_scatter_block(sb, recvbuf, (int)count, zaya_dist_mpi_dtype(t), zaya_dist_mpi_op(t, op),
                                       c->comm),
              "reduce-scatter", count, t);
    if (op == ZAYA_REDOP_AVG) zaya_dist_avg_finish(recvbuf, count, t, c->size);
    return ZAYA_OK;
}

zaya_status zaya_allgather(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count, zaya_dist_dtype t) {
    ZAYA_TRY(check_args(c, "all-gather", count, c ? c->size : 1, t));
    MPI_Datatype dt = zaya_dist_mpi_dtype(t);
    const char *own = (const char *)recvbuf + (size_t)c->rank * (size_t)count * zaya_dist_dtype_size(t);
    const void *sb = (sendbuf == recvbuf || sendbuf == own) ? MPI_IN_PLACE : sendbuf;
    MPI_CHECK(MPI_Allgather(sb, (int)count, dt, recvbuf, (int)count, dt, c->comm), "all-gather", count, t);
    return ZAYA_OK;
}

zaya_status zaya_gather_bytes(const zaya_comm *c, const void *buf, size_t len, char **all, size_t *lens) {
    if (!c) return zaya_error_set(ZAYA_EINVAL, "byte gather: NULL communicator");
    if (len > INT_MAX) return zaya_error_set(ZAYA_ERANGE, "byte gather: %zu bytes exceed the int limit", len);
    *all = NULL;
    int mine = (int)len, *counts = NULL, *displs = NULL;
    if (c->rank == 0) {
        counts = calloc((size_t)c->size, sizeof(int));
        displs = calloc((size_t)c->size, sizeof(int));
        if (!counts || !displs) {
            free(counts);
            free(displs);
            return zaya_error_set(ZAYA_ENOMEM, "byte gather");
        }
    }
    int rc = MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, c->comm);
    if (rc != MPI_SUCCESS) {
        free(counts);
        free(displs);
        return mpi_fail(rc, "byte gather (lengths)", (int64_t)len, ZAYA_DIST_F32);
    }
    size_t total = 0;
    if (c->rank == 0) {
        for (int r = 0; r < c->size; r++) {
            displs[r] = (int)total;
            total += (size_t)counts[r];
            lens[r] = (size_t)counts[r];
        }
        *all = malloc(total ? total : 1);
        if (!*all || total > INT_MAX) {
            free(*all);
            *all = NULL;
            free(counts);
            free(displs);
            return zaya_error_set(ZAYA_ENOMEM, "byte gather: %zu bytes", total);
        }
    }
    rc = MPI_Gatherv(buf, mine, MPI_BYTE, c->rank == 0 ? *all : NULL, counts, displs, MPI_BYTE, 0, c->comm);
    free(counts);
    free(displs);
    if (rc != MPI_SUCCESS) {
        free(*all);
        *all = NULL;
        return mpi_fail(rc, "byte gather", (int64_t)len, ZAYA_DIST_F32);
    }
    return ZAYA_OK;
}

zaya_status zaya_bcast_bytes(const zaya_comm *c, void *buf, size_t len) {
    if (!c) return zaya_error_set(ZAYA_EINVAL, "byte broadcast: NULL communicator");
    if (len > INT_MAX) return zaya_error_set(ZAYA_ERANGE, "byte broadcast: %zu bytes exceed the int limit", len);
    int rc = MPI_Bcast(buf, (int)len, MPI_BYTE, 0, c->comm);
    return rc == MPI_SUCCESS ? ZAYA_OK : mpi_fail(rc, "byte broadcast", (int64_t)len, ZAYA_DIST_F32);
}

zaya_status zaya_broadcast(const zaya_comm *c, void *buf, int64_t count, zaya_dist_dtype t, int root) {
    ZAYA_TRY(check_args(c, "broadcast", count, 1, t));
    ZAYA_TRY(check_root(c, "broadcast", root));
    MPI_CHECK(MPI_Bcast(buf, (int)count, zaya_dist_mpi_dtype(t), root, c->comm), "broadcast", count, t);
    return ZAYA_OK;
}

zaya_status zaya_reduce(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count, zaya_dist_dtype t,
                        zaya_redop op, int root) {
    ZAYA_TRY(check_args(c, "reduce", count, 1, t));
    ZAYA_TRY(check_op("reduce", op));
    ZAYA_TRY(check_root(c, "reduce", root));
    const void *sb = (c->rank == root && sendbuf == recvbuf) ? MPI_IN_PLACE : sendbuf;
    MPI_CHECK(MPI_Reduce(sb, c->rank == root ? recvbuf : NULL, (int)count, zaya_dist_mpi_dtype(t),
                         zaya_dist_mpi_op(t, op), root, c->comm),
              "reduce", count, t);
    if (op == ZAYA_REDOP_AVG && c->rank == root) zaya_dist_avg_finish(recvbuf, count, t, c->size);
    return ZAYA_OK;
}

zaya_status zaya_alltoall(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count, zaya_dist_dtype t) {
    ZAYA_TRY(check_args(c, "all-to-all", count, c ? c->size : 1, t));
    MPI_Datatype dt = zaya_dist_mpi_dtype(t);
    const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    MPI_CHECK(MPI_Alltoall(sb, (int)count, dt, recvbuf, (int)count, dt, c->comm), "all-to-all", count, t);
    return ZAYA_OK;
}

zaya_status zaya_send(const zaya_comm *c, const void *buf, int64_t count, zaya_dist_dtype t, int dst, int tag) {
    ZAYA_TRY(check_args(c, "send", count, 1, t));
    ZAYA_TRY(check_root(c, "send (destination)", dst));
    MPI_CHECK(MPI_Send(buf, (int)count, zaya_dist_mpi_dtype(t), dst, tag, c->comm), "send", count, t);
    return ZAYA_OK;
}

zaya_status zaya_recv(const zaya_comm *c, void *buf, int64_t count, zaya_dist_dtype t, int src, int tag) {
    ZAYA_TRY(check_args(c, "recv", count, 1, t));
    ZAYA_TRY(check_root(c, "recv (source)", src));
    MPI_Status st;
    MPI_CHECK(MPI_Recv(buf, (int)count, zaya_dist_mpi_dtype(t), src, tag, c->comm, &st), "recv", count, t);
    int got = 0;
    MPI_Get_count(&st, zaya_dist_mpi_dtype(t), &got);
    if (got != count)
        return zaya_error_set(ZAYA_EMPI, "recv: expected %lld %s elements from rank %d, got %d", (long long)count,
                              zaya_dist_dtype_name(t), src, got);
    return ZAYA_OK;
}

zaya_status zaya_sendrecv(const zaya_comm *c, const void *sendbuf, int dst, void *recvbuf, int src, int64_t count,
                          zaya_dist_dtype t, int tag) {
    ZAYA_TRY(check_args(c, "send/recv", count, 1, t));
    ZAYA_TRY(check_root(c, "send/recv (destination)", dst));
    ZAYA_TRY(check_root(c, "send/recv (source)", src));
    MPI_Datatype dt = zaya_dist_mpi_dtype(t);
    if (sendbuf == recvbuf) {
        MPI_CHECK(MPI_Sendrecv_replace(recvbuf, (int)count, dt, dst, tag, src, tag, c->comm, MPI_STATUS_IGNORE),
                  "send/recv (in place)", count, t);
        return ZAYA_OK;
    }
    MPI_CHECK(MPI_Sendrecv(sendbuf, (int)count, dt, dst, tag, recvbuf, (int)count, dt, src, tag, c->comm,
                           MPI_STATUS_IGNORE),
              "send/recv", count, t);
    return ZAYA_OK;
}

/* ---- non-blocking ---- */

static MPI_Request *req_handle(zaya_dist_request *r) { return (MPI_Request *)(void *)r->backend; }

static void req_begin(zaya_dist_request *r, const char *what, void *buf, int64_t count, zaya_dist_dtype t,
                      int op, int nranks) {
    memset(r, 0, sizeof *r);
    *req_handle(r) = MPI_REQUEST_NULL;
    r->what = what;
    r->buf = buf;
    r->count = count;
    r->dtype = (int)t;
    r->op = op;
    r->nranks = nranks;
}

static zaya_status req_started(zaya_dist_request *r, int rc) {
    if (rc != MPI_SUCCESS) return mpi_fail(rc, r->what, r->count, (zaya_dist_dtype)r->dtype);
    r->active = 1;
    return ZAYA_OK;
}

zaya_status zaya_iallreduce(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                            zaya_dist_dtype t, zaya_redop op, zaya_dist_request *req) {
    ZAYA_TRY(check_args(c, "non-blocking all-reduce", count, 1, t));
    ZAYA_TRY(check_op("non-blocking all-reduce", op));
    req_begin(req, "non-blocking all-reduce", recvbuf, count, t, op, c->size);
    const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    return req_started(req, MPI_Iallreduce(sb, recvbuf, (int)count, zaya_dist_mpi_dtype(t), zaya_dist_mpi_op(t, op),
                                           c->comm, req_handle(req)));
}

zaya_status zaya_ireduce_scatter(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                                 zaya_dist_dtype t, zaya_redop op, zaya_dist_request *req) {
    ZAYA_TRY(check_args(c, "non-blocking reduce-scatter", count, c ? c->size : 1, t));
    ZAYA_TRY(check_op("non-blocking reduce-scatter", op));
    req_begin(req, "non-blocking reduce-scatter", recvbuf, count, t, op, c->size);
    const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    return req_started(req, MPI_Ireduce_scatter_block(sb, recvbuf, (int)count, zaya_dist_mpi_dtype(t),
                                                      zaya_dist_mpi_op(t, op), c->comm, req_handle(req)));
}

zaya_status zaya_iallgather(const zaya_comm *c, const void *sendbuf, void *recvbuf, int64_t count,
                            zaya_dist_dtype t, zaya_dist_request *req) {
    ZAYA_TRY(check_args(c, "non-blocking all-gather", count, c ? c->size : 1, t));
    req_begin(req, "non-blocking all-gather", recvbuf, count, t, -1, c->size);
    MPI_Datatype dt = zaya_dist_mpi_dtype(t);
    const char *own = (const char *)recvbuf + (size_t)c->rank * (size_t)count * zaya_dist_dtype_size(t);
    const void *sb = (sendbuf == recvbuf || sendbuf == own) ? MPI_IN_PLACE : sendbuf;
    return req_started(req, MPI_Iallgather(sb, (int)count, dt, recvbuf, (int)count, dt, c->comm, req_handle(req)));
}

zaya_status zaya_ireduce_scatterv(const zaya_comm *c, const void *sendbuf, void *recvbuf, const int *counts,
                                  zaya_dist_dtype t, zaya_redop op, zaya_dist_request *req) {
    ZAYA_TRY(check_args(c, "non-blocking reduce-scatter-v", counts ? counts[c ? c->rank : 0] : 0, 1, t));
    ZAYA_TRY(check_op("non-blocking reduce-scatter-v", op));
    int64_t total = 0;
    for (int r = 0; r < c->size; r++) {
        if (counts[r] < 0) return zaya_error_set(ZAYA_EINVAL, "non-blocking reduce-scatter-v: negative count for rank %d", r);
        total += counts[r];
    }
    if (total > INT_MAX) return zaya_error_set(ZAYA_ERANGE, "non-blocking reduce-scatter-v: %lld elements exceed the int limit", (long long)total);
    if (sendbuf == recvbuf) return zaya_error_set(ZAYA_EINVAL, "non-blocking reduce-scatter-v: in place is not supported");
    req_begin(req, "non-blocking reduce-scatter-v", recvbuf, counts[c->rank], t, op, c->size);
    return req_started(req, MPI_Ireduce_scatter(sendbuf, recvbuf, counts, zaya_dist_mpi_dtype(t), zaya_dist_mpi_op(t, op),
                                                c->comm, req_handle(req)));
}

zaya_status zaya_iallgatherv(const zaya_comm *c, void *buf, const int *counts, const int *displs, zaya_dist_dtype t,
                             zaya_dist_request *req) {
    ZAYA_TRY(check_args(c, "non-blocking all-gather-v", counts ? counts[c ? c->rank : 0] : 0, 1, t));
    for (int r = 0; r < c->size; r++)
        if (counts[r] < 0 || displs[r] < 0)
            return zaya_error_set(ZAYA_EINVAL, "non-blocking all-gather-v: negative count or displacement for rank %d", r);
    req_begin(req, "non-blocking all-gather-v", buf, counts[c->rank], t, -1, c->size);
    MPI_Datatype dt = zaya_dist_mpi_dtype(t);
    return req_started(req, MPI_Iallgatherv(MPI_IN_PLACE, 0, dt, buf, counts, displs, dt, c->comm, req_handle(req)));
}

zaya_status zaya_ibroadcast(const zaya_comm *c, void *buf, int64_t count, zaya_dist_dtype t, int root,
                            zaya_dist_request *req) {
    ZAYA_TRY(check_args(c, "non-blocking broadcast", count, 1, t));
    ZAYA_TRY(check_root(c, "non-blocking broadcast", root));
    req_begin(req, "non-blocking broadcast", buf, count, t, -1, c->size);
    return req_started(req, MPI_Ibcast(buf, (int)count, zaya_dist_mpi_dtype(t), root, c->comm, req_handle(req)));
}

zaya_status zaya_isend(const zaya_comm *c, const void *buf, int64_t count, zaya_dist_dtype t, int dst, int tag,
                       zaya_dist_request *req) {
    ZAYA_TRY(check_args(c, "non-blocking send", count, 1, t));
    ZAYA_TRY(check_root(c, "non-blocking send (destination)", dst));
    req_begin(req, "non-blocking send", NULL, count, t, -1, c->size);
    return req_started(req, MPI_Isend(buf, (int)count, zaya_dist_mpi_dtype(t), dst, tag, c->comm, req_handle(req)));
}

zaya_status zaya_irecv(const zaya_comm *c, void *buf, int64_t count, zaya_dist_dtype t, int src, int tag,
                       zaya_dist_request *req) {
    ZAYA_TRY(check_args(c, "non-blocking receive", count, 1, t));
    ZAYA_TRY(check_root(c, "non-blocking receive (source)", src));
    req_begin(req, "non-blocking receive", NULL, count, t, -1, c->size);
    return req_started(req, MPI_Irecv(buf, (int)count, zaya_dist_mpi_dtype(t), src, tag, c->comm, req_handle(req)));
}

static void req_complete(zaya_dist_request *r) {
    r->active = 0;
    if (r->op == ZAYA_REDOP_AVG) zaya_dist_avg_finish(r->buf, r->count, (zaya_dist_dtype)r->dtype, r->nranks);
}

zaya_status zaya_dist_test(zaya_dist_request *req, int *done) {
    *done = 1;
    if (!req->active) return ZAYA_OK;
    int flag = 0;
    MPI_CHECK(MPI_Test(req_handle(req), &flag, MPI_STATUS_IGNORE), req->what, req->count, (zaya_dist_dtype)req->dtype);
    *done = flag;
    if (flag) req_complete(req);
    return ZAYA_OK;
}

zaya_status zaya_dist_wait(zaya_dist_request *req) {
    if (!req->active) return ZAYA_OK;
    MPI_CHECK(MPI_Wait(req_handle(req), MPI_STATUS_IGNORE), req->what, req->count, (zaya_dist_dtype)req->dtype);
    req_complete(req);
    return ZAYA_OK;
}

zaya_status zaya_dist_waitall(zaya_dist_request *reqs, int n) {
    for (int i = 0; i < n; i++) ZAYA_TRY(zaya_dist_wait(&reqs[i]));
    return ZAYA_OK;
}
