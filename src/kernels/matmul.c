/* zaya_matmul on oneDNN: one matmul primitive per distinct descriptor, kept in a hash table.
 *
 * op(A), op(B), leading dimensions and batch strides all become strides of oneDNN memory
 * descriptors, so no operand is ever copied or transposed by us. alpha is a static output scale and
 * beta = 1 a sum post-op, both baked into the primitive (they are part of the cache key).
 *
 * Per-call cost is a lock-free hash lookup plus dnnl_primitive_execute. Each cache entry owns
 * three memory objects whose data handles are swapped in per call; a spin flag gives one caller at a
 * time exclusive use of them, and a concurrent caller of the same shape falls back to creating
 * short-lived memory objects of its own.
 *
 * Hosts whose oneDNN has no bf16 matmul (no AVX-512 / AMX: oneDNN implements bf16 only there) run a
 * bf16 descriptor on the f32 primitive of the same shape and strides, the bf16 operands widened to
 * f32 first. The arithmetic is the same: a product of two bf16 values is exact in f32 (8 x 8
 * significand bits), and the sums are f32 as in oneDNN's bf16 kernels, so only the summation order,
 * as between any two oneDNN kernels, can differ.
 *
 * A product's bits are a function of its descriptor alone, whatever the thread count: some oneDNN
 * kernels (the AVX2 gemm driver at small outputs with a long k, e.g. 64 x 64 x 256) split the k sum
 * over threads, so their result would change with the pool size, and between a call on the whole pool
 * and one from inside a parallel region (one thread). The first call of a fixed-shape entry outside a
 * parallel region therefore runs the primitive on generated operands with 1 thread and with 2, 3, 4 and
 * the pool's count; where any result differs the entry is marked serial and always runs on one thread,
 * which is the result every other count then reproduces. A run-time-shape entry (which splits k too,
 * e.g. 64 x 64 with k = 3000 tokens) keeps the same verdict per call shape in a table of its own
 * (DYN_SHAPES shapes; a shape beyond it runs on one thread). tests/test_matmul.c checks both kinds.
 *
 * Likewise a batched product equals, bit for bit, one product per matrix (Muon's batches may be cut
 * differently from one schedule to the next): the first call of a batched entry compares the two on
 * generated operands, and where they differ (the AVX2 kernels at small matrices and odd batches, e.g.
 * 7 x 18 x 18 x 18) the entry runs as one product per matrix. */
#include "zaya/matmul.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <xxhash.h>

#include "zaya/alloc.h"

/* ---- process-wide engine and stream ---- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;
static dnnl_status_t g_init_status = dnnl_success;

static void init_engine(void) {
    g_init_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
    if (g_init_status == dnnl_success) g_init_status = dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags);
}

static const char *dnnl_status_str(dnnl_status_t s) {
    switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "unimplemented (no implementation for this shape/layout/dtype)";
    case dnnl_iterator_ends: return "iterator ends";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
    default: return "unknown status";
    }
}

/* ---- cache ---- */

/* The key is the resolved descriptor with alpha/beta as bit patterns; zeroed before filling so that
 * struct padding hashes and compares deterministically. */
typedef struct matmul_key {
    int32_t dtype, trans_a, trans_b, beta_one;
    uint32_t alpha_bits, dynamic;
    int64_t m, n, k, lda, ldb, ldc, batch, stride_a, stride_b, stride_c;
} matmul_key;

typedef struct matmul_entry {
    matmul_key key;
    uint64_t hash;
    dnnl_primitive_t prim;
    dnnl_memory_t mem_a, mem_b, mem_c;
    dnnl_memory_desc_t md_a, md_b, md_c;
    atomic_flag busy;
    /* bf16 descriptor run on an f32 primitive (the host's oneDNN has no bf16 matmul): the operands
     * are widened into ws (grown to the largest call; guarded by busy) before each call. */
    int widen;
    float *ws;
    size_t ws_elems;
    /* thread-count check of a fixed-shape entry: SPLIT_UNKNOWN until its first call outside a parallel
     * region, then SPLIT_PARALLEL (every thread count gives the same bits) or SPLIT_SERIAL */
    atomic_int split;
    atomic_int batch_state; /* batched entries: BATCH_UNKNOWN, BATCH_CHECKING, BATCH_SAME or BATCH_UNBATCH */
    /* run-time-shape entries: the verdict per call shape (open addressing on m, n, k; under g_split_mu) */
    uint64_t *dyn_keys;
    uint8_t *dyn_state;
    int dyn_count;
    char impl[80];
    struct matmul_entry *next;
} matmul_entry;

#define CACHE_BUCKETS 1024
static pthread_mutex_t g_cache_mu = PTHREAD_MUTEX_INITIALIZER;
/* Readers walk the buckets without the lock: an entry is fully built (next included) before a
 * release store publishes it at a bucket head, and entries are only freed by cache_clear, which
 * must not run concurrently with calls. Writers serialize on g_cache_mu. */
static _Atomic(matmul_entry *) g_buckets[CACHE_BUCKETS];
static int g_cache_count;
static atomic_int g_reuse_memory = 1;
static atomic_llong g_aux_allocs; /* allocations outside primitive creation: zaya_matmul_aux_allocs */

void zaya_matmul_set_reuse_memory(int on) { atomic_store(&g_reuse_memory, on ? 1 : 0); }

int zaya_matmul_cache_size(void) {
    pthread_mutex_lock(&g_cache_mu);
    int n = g_cache_count;
    pthread_mutex_unlock(&g_cache_mu);
    return n;
}

static void entry_free(matmul_entry *e) {
    if (!e) return;
    if (e->mem_a) dnnl_memory_destroy(e->mem_a);
    if (e->mem_b) dnnl_memory_destroy(e->mem_b);
    if (e->mem_c) dnnl_memory_destroy(e->mem_c);
    if (e->prim) dnnl_primitive_destroy(e->prim);
    zaya_free(e->ws);
    zaya_free(e->dyn_keys);
    zaya_free(e->dyn_state);
    zaya_free(e);
}

void zaya_matmul_cache_clear(void) {
    pthread_mutex_lock(&g_cache_mu);
    for (int i = 0; i < CACHE_BUCKETS; i++) {
        matmul_entry *e = atomic_exchange(&g_buckets[i], NULL);
        while (e) {
            matmul_entry *next = e->next;
            entry_free(e);
            e = next;
        }
    }
    g_cache_count = 0;
    pthread_mutex_unlock(&g_cache_mu);
}

/* ---- validation ---- */

static const char *dtype_name(zaya_dtype t) { return t == ZAYA_DTYPE_BF16 ? "bf16" : "f32"; }

zaya_status zaya_matmul_resolve(const zaya_matmul_desc *d, zaya_matmul_desc *o) {
    if (!d) return zaya_error_set(ZAYA_EINVAL, "matmul: descriptor is NULL");
    *o = *d;
    if (d->dtype != ZAYA_DTYPE_F32 && d->dtype != ZAYA_DTYPE_BF16)
        return zaya_error_set(ZAYA_EINVAL, "matmul: dtype %d is not f32 or bf16", (int)d->dtype);
    if (d->trans_a != 0 && d->trans_a != 1) return zaya_error_set(ZAYA_EINVAL, "matmul: trans_a must be 0 or 1, got %d", d->trans_a);
    if (d->trans_b != 0 && d->trans_b != 1) return zaya_error_set(ZAYA_EINVAL, "matmul: trans_b must be 0 or 1, got %d", d->trans_b);
    if (d->m <= 0) return zaya_error_set(ZAYA_EINVAL, "matmul: m must be positive, got %lld", (long long)d->m);
    if (d->n <= 0) return zaya_error_set(ZAYA_EINVAL, "matmul: n must be positive, got %lld", (long long)d->n);
    if (d->k <= 0) return zaya_error_set(ZAYA_EINVAL, "matmul: k must be positive, got %lld", (long long)d->k);
    if (d->batch < 0) return zaya_error_set(ZAYA_EINVAL, "matmul: batch must be >= 0, got %lld", (long long)d->batch);
    if (d->beta != 0.0f && d->beta != 1.0f)
        return zaya_error_set(ZAYA_EINVAL, "matmul: beta must be 0 or 1, got %g", (double)d->beta);
    if (!isfinite(d->alpha)) return zaya_error_set(ZAYA_EINVAL, "matmul: alpha must be finite, got %g", (double)d->alpha);
    if (d->dynamic & ~(ZAYA_MATMUL_DYN_M | ZAYA_MATMUL_DYN_N | ZAYA_MATMUL_DYN_K))
        return zaya_error_set(ZAYA_EINVAL, "matmul: dynamic has unknown bits 0x%x", (unsigned)d->dynamic);
    if (d->dynamic && d->batch > 1)
        return zaya_error_set(ZAYA_EINVAL, "matmul: dynamic dimensions need a single product, got batch=%lld", (long long)d->batch);
    if (o->alpha == 0.0f) o->alpha = 1.0f;
    if (o->batch == 0) o->batch = 1;

    /* Stored shapes (rows x cols) of A, B, C as row-major matrices. */
    int64_t ra = d->trans_a ? d->k : d->m, ca = d->trans_a ? d->m : d->k;
    int64_t rb = d->trans_b ? d->n : d->k, cb = d->trans_b ? d->k : d->n;
    struct { const char *name; int64_t *ld; int64_t rows, cols; } lds[3] = {
        {"lda", &o->lda, ra, ca}, {"ldb", &o->ldb, rb, cb}, {"ldc", &o->ldc, d->m, d->n}};
    for (int i = 0; i < 3; i++) {
        if (*lds[i].ld == 0) *lds[i].ld = lds[i].cols;
        if (*lds[i].ld < lds[i].cols)
            return zaya_error_set(ZAYA_EINVAL, "matmul: %s = %lld is smaller than the %lld columns it spans (m=%lld n=%lld k=%lld trans_a=%d trans_b=%d)",
                                  lds[i].name, (long long)*lds[i].ld, (long long)lds[i].cols, (long long)d->m,
                                  (long long)d->n, (long long)d->k, d->trans_a, d->trans_b);
    }
    struct { const char *name; int64_t *stride; int64_t rows, cols, ld; } st[3] = {
        {"stride_a", &o->stride_a, ra, ca, o->lda}, {"stride_b", &o->stride_b, rb, cb, o->ldb},
        {"stride_c", &o->stride_c, d->m, d->n, o->ldc}};
    for (int i = 0; i < 3; i++) {
        if (o->batch == 1) { *st[i].stride = 0; continue; } /* unused: keeps cache keys canonical */
        int64_t footprint = (st[i].rows - 1) * st[i].ld + st[i].cols;
        if (*st[i].stride == 0) *st[i].stride = st[i].rows * st[i].ld;
        if (*st[i].stride < footprint)
            return zaya_error_set(ZAYA_EINVAL, "matmul: %s = %lld is smaller than one matrix (%lld elements); batch elements would overlap",
                                  st[i].name, (long long)*st[i].stride, (long long)footprint);
    }
    return ZAYA_OK;
}

/* ---- primitive creation ---- */

static zaya_status backend_error(const zaya_matmul_desc *d, const char *what, dnnl_status_t s) {
    return zaya_error_set(ZAYA_EBACKEND, "oneDNN matmul %s m=%lld n=%lld k=%lld batch=%lld trans_a=%d trans_b=%d lda=%lld ldb=%lld ldc=%lld: %s failed: %s",
                          dtype_name(d->dtype), (long long)d->m, (long long)d->n, (long long)d->k, (long long)d->batch,
                          d->trans_a, d->trans_b, (long long)d->lda, (long long)d->ldb, (long long)d->ldc, what,
                          dnnl_status_str(s));
}

/* Logical dims [batch,] rows x cols with element strides for a matrix whose op() is (rows x cols).
 * A negative rows/cols (DYN) is left to run time. */
#define DYN (-1)
static dnnl_status_t init_md(dnnl_memory_desc_t *md, int64_t batch, int64_t rows, int64_t cols, int trans, int64_t ld,
                             int64_t stride, dnnl_data_type_t dt) {
    if (rows < 0) rows = DNNL_RUNTIME_DIM_VAL;
    if (cols < 0) cols = DNNL_RUNTIME_DIM_VAL;
    dnnl_dims_t dims, strides;
    int nd = 0;
    if (batch > 1) {
        dims[nd] = batch;
        strides[nd++] = stride;
    }
    dims[nd] = rows;
    strides[nd++] = trans ? 1 : ld;
    dims[nd] = cols;
    strides[nd++] = trans ? ld : 1;
    return dnnl_memory_desc_init_by_strides(md, nd, dims, dt, strides);
}

/* Whether this host's oneDNN creates a bf16 matmul: probed once with a small product. */
static pthread_once_t g_bf16_once = PTHREAD_ONCE_INIT;
static int g_bf16_native;

static void probe_bf16(void) {
    pthread_once(&g_once, init_engine);
    if (g_init_status != dnnl_success) return;
    dnnl_memory_desc_t ma, mb, mc;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    if (init_md(&ma, 1, 16, 16, 0, 16, 0, dnnl_bf16) != dnnl_success) return;
    if (init_md(&mb, 1, 16, 16, 0, 16, 0, dnnl_bf16) != dnnl_success) return;
    if (init_md(&mc, 1, 16, 16, 0, 16, 0, dnnl_f32) != dnnl_success) return;
    if (dnnl_matmul_desc_init(&md, &ma, &mb, NULL, &mc) != dnnl_success) return;
    if (dnnl_primitive_desc_create(&pd, &md, NULL, g_engine, NULL) == dnnl_success) {
        g_bf16_native = 1;
        dnnl_primitive_desc_destroy(pd);
    }
}

int zaya_matmul_has_native_bf16(void) {
    pthread_once(&g_bf16_once, probe_bf16);
    return g_bf16_native;
}

/* Elements an operand of `rows` x `cols` (row stride ld, `batch` matrices `stride` apart) spans. */
static size_t operand_extent(int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    return (size_t)((batch - 1) * stride + (rows - 1) * ld + cols);
}

static void widen_bf16(float *dst, const uint16_t *src, size_t n) {
#pragma omp parallel for schedule(static) if (n >= ((size_t)1 << 18))
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, sizeof u);
    }
}

static zaya_status create_entry(const zaya_matmul_desc *d, const matmul_key *key, uint64_t hash, matmul_entry **out) {
    pthread_once(&g_once, init_engine);
    if (g_init_status != dnnl_success) return backend_error(d, "engine/stream creation", g_init_status);

    matmul_entry *e = zaya_calloc(1, sizeof *e);
    if (!e) return zaya_error_set(ZAYA_ENOMEM, "matmul: cannot allocate a cache entry");
    e->key = *key;
    e->hash = hash;
    atomic_flag_clear(&e->busy);

    e->widen = d->dtype == ZAYA_DTYPE_BF16 && !zaya_matmul_has_native_bf16();
    dnnl_data_type_t in_dt = d->dtype == ZAYA_DTYPE_BF16 && !e->widen ? dnnl_bf16 : dnnl_f32;
    dnnl_status_t s;
    const char *what = "memory descriptor";
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    const int64_t m = d->dynamic & ZAYA_MATMUL_DYN_M ? DYN : d->m, n = d->dynamic & ZAYA_MATMUL_DYN_N ? DYN : d->n;
    const int64_t k = d->dynamic & ZAYA_MATMUL_DYN_K ? DYN : d->k;
    if ((s = init_md(&e->md_a, d->batch, m, k, d->trans_a, d->lda, d->stride_a, in_dt)) != dnnl_success) goto fail;
    if ((s = init_md(&e->md_b, d->batch, k, n, d->trans_b, d->ldb, d->stride_b, in_dt)) != dnnl_success) goto fail;
    if ((s = init_md(&e->md_c, d->batch, m, n, 0, d->ldc, d->stride_c, dnnl_f32)) != dnnl_success) goto fail;

    dnnl_matmul_desc_t md;
    what = "matmul descriptor";
    if ((s = dnnl_matmul_desc_init(&md, &e->md_a, &e->md_b, NULL, &e->md_c)) != dnnl_success) goto fail;
    what = "primitive attributes";
    if ((s = dnnl_primitive_attr_create(&attr)) != dnnl_success) goto fail;
    if (d->alpha != 1.0f) {
        float alpha = d->alpha;
        if ((s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha)) != dnnl_success) goto fail;
    }
    if (d->beta == 1.0f) {
        if ((s = dnnl_post_ops_create(&ops)) != dnnl_success) goto fail;
        if ((s = dnnl_post_ops_append_sum(ops, 1.0f)) != dnnl_success) goto fail;
        if ((s = dnnl_primitive_attr_set_post_ops(attr, ops)) != dnnl_success) goto fail;
    }
    what = "primitive descriptor";
    if ((s = dnnl_primitive_desc_create(&pd, &md, attr, g_engine, NULL)) != dnnl_success) goto fail;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        snprintf(e->impl, sizeof e->impl, "%s%s", impl, e->widen ? " (bf16 widened to f32)" : "");
    what = "primitive";
    if ((s = dnnl_primitive_create(&e->prim, pd)) != dnnl_success) goto fail;
    what = "memory object";
    if (!d->dynamic) { /* a dynamic entry's memory objects are made per call, with that call's dimensions */
        if ((s = dnnl_memory_create(&e->mem_a, &e->md_a, g_engine, DNNL_MEMORY_NONE)) != dnnl_success) goto fail;
        if ((s = dnnl_memory_create(&e->mem_b, &e->md_b, g_engine, DNNL_MEMORY_NONE)) != dnnl_success) goto fail;
        if ((s = dnnl_memory_create(&e->mem_c, &e->md_c, g_engine, DNNL_MEMORY_NONE)) != dnnl_success) goto fail;
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(ops);
    dnnl_primitive_attr_destroy(attr);
    *out = e;
    return ZAYA_OK;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    entry_free(e);
    return backend_error(d, what, s);
}

static void make_key(const zaya_matmul_desc *r, matmul_key *k) {
    memset(k, 0, sizeof *k);
    k->dtype = (int32_t)r->dtype;
    k->trans_a = r->trans_a;
    k->trans_b = r->trans_b;
    k->beta_one = r->beta == 1.0f;
    memcpy(&k->alpha_bits, &r->alpha, sizeof k->alpha_bits);
    k->dynamic = (uint32_t)r->dynamic;
    /* a dimension left to run time is not part of the key: one entry serves every value */
    k->m = r->dynamic & ZAYA_MATMUL_DYN_M ? 0 : r->m;
    k->n = r->dynamic & ZAYA_MATMUL_DYN_N ? 0 : r->n;
    k->k = r->dynamic & ZAYA_MATMUL_DYN_K ? 0 : r->k;
    k->lda = r->lda, k->ldb = r->ldb, k->ldc = r->ldc;
    k->batch = r->batch;
    k->stride_a = r->stride_a, k->stride_b = r->stride_b, k->stride_c = r->stride_c;
}

static matmul_entry *find(size_t b, uint64_t h, const matmul_key *key) {
    for (matmul_entry *e = atomic_load_explicit(&g_buckets[b], memory_order_acquire); e; e = e->next)
        if (e->hash == h && !memcmp(&e->key, key, sizeof *key)) return e;
    return NULL;
}

/* Finds or creates the entry for a resolved descriptor. */
static zaya_status lookup(const zaya_matmul_desc *r, matmul_entry **out) {
    matmul_key key;
    make_key(r, &key);
    uint64_t h = XXH3_64bits(&key, sizeof key);
    size_t b = (size_t)(h & (CACHE_BUCKETS - 1));
    if ((*out = find(b, h, &key))) return ZAYA_OK;

    /* Creation (milliseconds) happens outside the lock; a racing creator of the same key loses. */
    matmul_entry *fresh;
    ZAYA_TRY(create_entry(r, &key, h, &fresh));
    pthread_mutex_lock(&g_cache_mu);
    matmul_entry *e = find(b, h, &key);
    if (!e) {
        fresh->next = atomic_load_explicit(&g_buckets[b], memory_order_relaxed);
        atomic_store_explicit(&g_buckets[b], fresh, memory_order_release);
        g_cache_count++;
    }
    pthread_mutex_unlock(&g_cache_mu);
    if (e) entry_free(fresh);
    *out = e ? e : fresh;
    return ZAYA_OK;
}

zaya_status zaya_matmul_impl_name(const zaya_matmul_desc *d, const char **name) {
    zaya_matmul_desc r;
    ZAYA_TRY(zaya_matmul_resolve(d, &r));
    matmul_entry *e;
    ZAYA_TRY(lookup(&r, &e));
    *name = e->impl[0] ? e->impl : "unknown";
    return ZAYA_OK;
}

/* ---- execution ---- */

static zaya_status execute_prim(const zaya_matmul_desc *r, matmul_entry *e, const void *a, const void *b, float *c,
                                int held);

/* A bf16 call on a widened entry: the operands converted to f32 in the entry's workspace (or, when a
 * concurrent caller holds it, in one of this call's own), then the f32 primitive. */
static zaya_status execute_widened(const zaya_matmul_desc *r, matmul_entry *e, const void *a, const void *b, float *c) {
    const int64_t ra = r->trans_a ? r->k : r->m, ca = r->trans_a ? r->m : r->k;
    const int64_t rb = r->trans_b ? r->n : r->k, cb = r->trans_b ? r->k : r->n;
    const size_t na = operand_extent(r->batch, ra, ca, r->lda, r->stride_a);
    const size_t nb = operand_extent(r->batch, rb, cb, r->ldb, r->stride_b);
    const int own = atomic_flag_test_and_set(&e->busy);
    float *ws = NULL;
    if (!own) {
        if (e->ws_elems < na + nb) {
            zaya_free(e->ws);
            e->ws_elems = 0;
            atomic_fetch_add(&g_aux_allocs, 1);
            if (!(e->ws = zaya_malloc((na + nb) * sizeof(float)))) {
                atomic_flag_clear(&e->busy);
                return zaya_error_set(ZAYA_ENOMEM, "matmul: cannot allocate %zu floats to widen bf16 operands", na + nb);
            }
            e->ws_elems = na + nb;
        }
        ws = e->ws;
    } else if (atomic_fetch_add(&g_aux_allocs, 1) < 0 || !(ws = zaya_malloc((na + nb) * sizeof(float)))) {
        return zaya_error_set(ZAYA_ENOMEM, "matmul: cannot allocate %zu floats to widen bf16 operands", na + nb);
    }
    widen_bf16(ws, a, na);
    widen_bf16(ws + na, b, nb);
    zaya_matmul_desc f = *r;
    f.dtype = ZAYA_DTYPE_F32;
    zaya_status st = execute_prim(&f, e, ws, ws + na, c, !own);
    if (own) zaya_free(ws);
    else atomic_flag_clear(&e->busy);
    return st;
}

enum { SPLIT_UNKNOWN = 0, SPLIT_CHECKING, SPLIT_PARALLEL, SPLIT_SERIAL };

static zaya_status execute_any(const zaya_matmul_desc *r, matmul_entry *e, const void *a, const void *b, float *c) {
    if (e->widen) return execute_widened(r, e, a, b, c);
    return execute_prim(r, e, a, b, c, 0);
}

static zaya_status execute_threads(const zaya_matmul_desc *r, matmul_entry *e, const void *a, const void *b, float *c,
                                   int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    zaya_status s = execute_any(r, e, a, b, c);
    omp_set_num_threads(saved);
    return s;
}

/* Generated operands in [-1, 1) (a 32-bit xorshift), as f32 or as bf16 bit patterns. */
static void fill_pattern(void *x, size_t n, int bf16, uint32_t seed) {
    uint32_t st = seed | 1u;
    for (size_t i = 0; i < n; i++) {
        st ^= st << 13, st ^= st >> 17, st ^= st << 5;
        const float v = (float)(st >> 8) * (1.0f / 8388608.0f) - 1.0f;
        if (bf16) {
            uint32_t u;
            memcpy(&u, &v, sizeof u);
            ((uint16_t *)x)[i] = (uint16_t)(u >> 16);
        } else {
            ((float *)x)[i] = v;
        }
    }
}

/* Scratch of the one-time checks: one buffer per kind of check (a batch check runs split checks inside
 * it), grown to the largest check and kept, so that a check allocates only when it needs more. */
typedef struct check_scratch {
    pthread_mutex_t mu;
    char *buf;
    size_t bytes;
} check_scratch;
static check_scratch g_split_scratch = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};
static check_scratch g_batch_scratch = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

long long zaya_matmul_aux_allocs(void) { return atomic_load(&g_aux_allocs); }

/* Locks sc and returns its buffer of at least `bytes` (NULL, unlocked, when it cannot grow). */
static char *scratch_take(check_scratch *sc, size_t bytes) {
    pthread_mutex_lock(&sc->mu);
    if (sc->bytes < bytes) {
        zaya_free(sc->buf);
        sc->bytes = 0;
        if (!(sc->buf = zaya_malloc(bytes))) {
            pthread_mutex_unlock(&sc->mu);
            return NULL;
        }
        atomic_fetch_add(&g_aux_allocs, 1);
        sc->bytes = bytes;
    }
    return sc->buf;
}

/* Rounds a byte count up to 64 so that the scratch's parts stay aligned. */
static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The generated operands of a one-time check of r: A, B and C (filled), and a second C, all in sc's
 * scratch, which stays locked until check_release. */
typedef struct check_operands {
    void *a, *b;
    float *c1, *c2;
    size_t nc;
    check_scratch *sc;
} check_operands;

static zaya_status check_setup(const zaya_matmul_desc *r, check_scratch *sc, const char *what, check_operands *op) {
    const int bf16 = r->dtype == ZAYA_DTYPE_BF16;
    const size_t es = bf16 ? sizeof(uint16_t) : sizeof(float);
    const int64_t ra = r->trans_a ? r->k : r->m, ca = r->trans_a ? r->m : r->k;
    const int64_t rb = r->trans_b ? r->n : r->k, cb = r->trans_b ? r->k : r->n;
    const size_t na = operand_extent(r->batch, ra, ca, r->lda, r->stride_a);
    const size_t nb = operand_extent(r->batch, rb, cb, r->ldb, r->stride_b);
    const size_t nc = operand_extent(r->batch, r->m, r->n, r->ldc, r->stride_c);
    const size_t ba = up64(na * es), bb = up64(nb * es), bc = up64(nc * sizeof(float));
    char *buf = scratch_take(sc, ba + bb + 2 * bc);
    if (!buf)
        return zaya_error_set(ZAYA_ENOMEM, "matmul: cannot allocate the %s check of batch=%lld m=%lld n=%lld k=%lld", what,
                              (long long)r->batch, (long long)r->m, (long long)r->n, (long long)r->k);
    *op = (check_operands){buf, buf + ba, (float *)(buf + ba + bb), (float *)(buf + ba + bb + bc), nc, sc};
    fill_pattern(op->a, na, bf16, 0x9e3779b9u);
    fill_pattern(op->b, nb, bf16, 0x7f4a7c15u);
    fill_pattern(op->c1, nc, 0, 0x2545f491u);
    return ZAYA_OK;
}

static void check_release(check_operands *op) { pthread_mutex_unlock(&op->sc->mu); }

/* SPLIT_SERIAL when some thread count changes the bits of e's product (see the file comment). */
static zaya_status check_split(const zaya_matmul_desc *r, matmul_entry *e, int *serial) {
    *serial = 0;
    check_operands op;
    ZAYA_TRY(check_setup(r, &g_split_scratch, "thread-count", &op));
    const size_t cbytes = op.nc * sizeof(float);
    zaya_status s = execute_threads(r, e, op.a, op.b, op.c1, 1);
    const int pool = omp_get_max_threads(), counts[] = {2, 3, 4, pool};
    for (int i = 0; i < 4 && s == ZAYA_OK && !*serial; i++) {
        if (counts[i] < 2 || (i == 3 && pool <= 4)) continue;
        fill_pattern(op.c2, op.nc, 0, 0x2545f491u);
        if ((s = execute_threads(r, e, op.a, op.b, op.c2, counts[i])) == ZAYA_OK) *serial = memcmp(op.c1, op.c2, cbytes) != 0;
    }
    check_release(&op);
    return s;
}

#define DYN_SHAPES 4096 /* a power of two */
static pthread_mutex_t g_split_mu = PTHREAD_MUTEX_INITIALIZER;

/* The verdict slot of a run-time-shape call: its state, or SPLIT_UNKNOWN with *mine set when this caller
 * claimed the shape (it then checks it and stores the verdict with dyn_store); SPLIT_SERIAL when the
 * table is full or the dimensions do not fit the key. */
static int dyn_lookup(matmul_entry *e, const zaya_matmul_desc *r, int *slot, int *mine) {
    *mine = 0;
    const int64_t lim = (int64_t)1 << 21;
    if (r->m >= lim || r->n >= lim || r->k >= lim) return SPLIT_SERIAL;
    const uint64_t key = ((uint64_t)r->m << 42 | (uint64_t)r->n << 21 | (uint64_t)r->k) + 1; /* 0: empty */
    int st = SPLIT_SERIAL;
    pthread_mutex_lock(&g_split_mu);
    if (!e->dyn_keys) {
        e->dyn_keys = zaya_calloc(DYN_SHAPES, sizeof *e->dyn_keys);
        e->dyn_state = zaya_calloc(DYN_SHAPES, sizeof *e->dyn_state);
        atomic_fetch_add(&g_aux_allocs, 2);
    }
    if (e->dyn_keys && e->dyn_state) {
        uint32_t h = (uint32_t)(XXH3_64bits(&key, sizeof key) & (DYN_SHAPES - 1));
        for (int probe = 0; probe < DYN_SHAPES; probe++, h = (h + 1) & (DYN_SHAPES - 1)) {
            if (e->dyn_keys[h] == key) {
                st = e->dyn_state[h];
                break;
            }
            if (e->dyn_keys[h] == 0) {
                if (e->dyn_count < DYN_SHAPES / 2) { /* keep probes short */
                    e->dyn_keys[h] = key;
                    e->dyn_state[h] = SPLIT_CHECKING;
                    e->dyn_count++;
                    *slot = (int)h;
                    *mine = 1;
                    st = SPLIT_UNKNOWN;
                }
                break;
            }
        }
    }
    pthread_mutex_unlock(&g_split_mu);
    return st;
}

static void dyn_store(matmul_entry *e, int slot, int state) {
    pthread_mutex_lock(&g_split_mu);
    e->dyn_state[slot] = (uint8_t)state;
    pthread_mutex_unlock(&g_split_mu);
}

static zaya_status execute(const zaya_matmul_desc *r, matmul_entry *e, const void *a, const void *b, float *c) {
    /* AVX-512 / AMX hosts run oneDNN's brgemm kernels, which neither split k nor depend on the batch:
     * no check there (and the pool's result, as before) */
    if (zaya_matmul_has_native_bf16()) return execute_any(r, e, a, b, c);
    /* inside a parallel region a call runs on one thread; its thread-count setting is made 1 as well,
     * since oneDNN would otherwise partition the work for the pool and run the parts in sequence */
    if (omp_in_parallel()) return execute_threads(r, e, a, b, c, 1);
    if (r->dynamic) {
        int slot = 0, mine = 0;
        int st = dyn_lookup(e, r, &slot, &mine);
        if (mine) {
            int serial = 1;
            zaya_status s = check_split(r, e, &serial);
            st = s != ZAYA_OK ? SPLIT_SERIAL : serial ? SPLIT_SERIAL : SPLIT_PARALLEL;
            dyn_store(e, slot, st);
            if (s != ZAYA_OK) return s;
        }
        if (st != SPLIT_PARALLEL) return execute_threads(r, e, a, b, c, 1);
        return execute_any(r, e, a, b, c);
    }
    int st = atomic_load_explicit(&e->split, memory_order_acquire);
    if (st == SPLIT_UNKNOWN) {
        int expect = SPLIT_UNKNOWN;
        if (atomic_compare_exchange_strong(&e->split, &expect, SPLIT_CHECKING)) {
            int serial = 1;
            zaya_status s = check_split(r, e, &serial);
            atomic_store_explicit(&e->split, s != ZAYA_OK ? SPLIT_UNKNOWN : serial ? SPLIT_SERIAL : SPLIT_PARALLEL,
                                  memory_order_release);
            if (s != ZAYA_OK) return s;
        }
        st = atomic_load_explicit(&e->split, memory_order_acquire);
    }
    /* serial, or still being checked by another caller: one thread gives the canonical bits */
    if (st != SPLIT_PARALLEL) return execute_threads(r, e, a, b, c, 1);
    return execute_any(r, e, a, b, c);
}

/* held: the caller holds e->busy (the widened path), so the entry's memory objects are free to use. */
static zaya_status execute_prim(const zaya_matmul_desc *r, matmul_entry *e, const void *a, const void *b, float *c,
                                int held) {
    dnnl_exec_arg_t args[3];
    dnnl_memory_t own[3] = {NULL, NULL, NULL};
    dnnl_status_t s;
    const char *what = "memory object";
    int reuse = !r->dynamic && atomic_load_explicit(&g_reuse_memory, memory_order_relaxed);
    int took = 0;
    if (reuse && !held) reuse = took = !atomic_flag_test_and_set(&e->busy);
    if (r->dynamic) { /* this call's dimensions in place of the run-time ones */
        dnnl_memory_desc_t md[3];
        const dnnl_data_type_t in_dt = r->dtype == ZAYA_DTYPE_BF16 ? dnnl_bf16 : dnnl_f32;
        what = "memory descriptor";
        if ((s = init_md(&md[0], 1, r->m, r->k, r->trans_a, r->lda, 0, in_dt)) != dnnl_success) goto fail;
        if ((s = init_md(&md[1], 1, r->k, r->n, r->trans_b, r->ldb, 0, in_dt)) != dnnl_success) goto fail;
        if ((s = init_md(&md[2], 1, r->m, r->n, 0, r->ldc, 0, dnnl_f32)) != dnnl_success) goto fail;
        what = "memory object";
        void *ptr[3] = {(void *)a, (void *)b, c};
        static const int arg[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
        for (int i = 0; i < 3; i++) {
            if ((s = dnnl_memory_create(&own[i], &md[i], g_engine, ptr[i])) != dnnl_success) goto fail;
            args[i] = (dnnl_exec_arg_t){arg[i], own[i]};
        }
    } else if (reuse) {
        /* Plain CPU layouts need no padding, so swapping the handle is just a pointer store. */
        if ((s = dnnl_memory_set_data_handle(e->mem_a, (void *)a)) != dnnl_success) goto fail;
        if ((s = dnnl_memory_set_data_handle(e->mem_b, (void *)b)) != dnnl_success) goto fail;
        if ((s = dnnl_memory_set_data_handle(e->mem_c, c)) != dnnl_success) goto fail;
        args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, e->mem_a};
        args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, e->mem_b};
        args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, e->mem_c};
    } else {
        if ((s = dnnl_memory_create(&own[0], &e->md_a, g_engine, (void *)a)) != dnnl_success) goto fail;
        if ((s = dnnl_memory_create(&own[1], &e->md_b, g_engine, (void *)b)) != dnnl_success) goto fail;
        if ((s = dnnl_memory_create(&own[2], &e->md_c, g_engine, c)) != dnnl_success) goto fail;
        args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, own[0]};
        args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, own[1]};
        args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, own[2]};
    }
    what = "execute";
    if ((s = dnnl_primitive_execute(e->prim, g_stream, 3, args)) != dnnl_success) goto fail;
    what = "stream wait";
    if ((s = dnnl_stream_wait(g_stream)) != dnnl_success) goto fail;
    s = dnnl_success;
fail:
    if (took) atomic_flag_clear(&e->busy);
    for (int i = 0; i < 3; i++)
        if (own[i]) dnnl_memory_destroy(own[i]);
    return s == dnnl_success ? ZAYA_OK : backend_error(r, what, s);
}

enum { BATCH_UNKNOWN = 0, BATCH_CHECKING, BATCH_SAME, BATCH_UNBATCH };

/* A resolved batched descriptor run as one product per matrix. */
static zaya_status run_unbatched(const zaya_matmul_desc *r, const void *a, const void *b, float *c) {
    const size_t es = r->dtype == ZAYA_DTYPE_BF16 ? sizeof(uint16_t) : sizeof(float);
    zaya_matmul_desc one = *r;
    one.batch = 1;
    one.stride_a = one.stride_b = one.stride_c = 0;
    for (int64_t i = 0; i < r->batch; i++)
        ZAYA_TRY(zaya_matmul(&one, (const char *)a + (size_t)(i * r->stride_a) * es,
                             (const char *)b + (size_t)(i * r->stride_b) * es, c + i * r->stride_c));
    return ZAYA_OK;
}

/* Whether e's batched kernel gives the bits of one product per matrix, on generated operands. */
static zaya_status check_batch(const zaya_matmul_desc *r, matmul_entry *e, int *same) {
    *same = 0;
    check_operands op;
    ZAYA_TRY(check_setup(r, &g_batch_scratch, "batch", &op));
    memcpy(op.c2, op.c1, op.nc * sizeof(float));
    zaya_status s = execute(r, e, op.a, op.b, op.c1);
    if (s == ZAYA_OK) s = run_unbatched(r, op.a, op.b, op.c2);
    if (s == ZAYA_OK) *same = !memcmp(op.c1, op.c2, op.nc * sizeof(float));
    check_release(&op);
    return s;
}

zaya_status zaya_matmul(const zaya_matmul_desc *d, const void *a, const void *b, float *c) {
    zaya_matmul_desc r;
    ZAYA_TRY(zaya_matmul_resolve(d, &r));
    if (!a) return zaya_error_set(ZAYA_EINVAL, "matmul: a is NULL");
    if (!b) return zaya_error_set(ZAYA_EINVAL, "matmul: b is NULL");
    if (!c) return zaya_error_set(ZAYA_EINVAL, "matmul: c is NULL");
    matmul_entry *e;
    ZAYA_TRY(lookup(&r, &e));
    if (r.batch > 1 && !zaya_matmul_has_native_bf16()) {
        int st = atomic_load_explicit(&e->batch_state, memory_order_acquire);
        if (st == BATCH_UNKNOWN) {
            int expect = BATCH_UNKNOWN;
            if (atomic_compare_exchange_strong(&e->batch_state, &expect, BATCH_CHECKING)) {
                int same = 0;
                zaya_status s = check_batch(&r, e, &same);
                atomic_store_explicit(&e->batch_state, s != ZAYA_OK ? BATCH_UNKNOWN : same ? BATCH_SAME : BATCH_UNBATCH,
                                      memory_order_release);
                if (s != ZAYA_OK) return s;
            }
            st = atomic_load_explicit(&e->batch_state, memory_order_acquire);
        }
        /* one product per matrix is the canonical result (also while another caller checks) */
        if (st != BATCH_SAME) return run_unbatched(&r, a, b, c);
    }
    return execute(&r, e, a, b, c);
}

static void dense_batched(zaya_dtype dt, int trans_a, int trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                          const void *a, const void *b, float *c, float alpha, float beta) {
    zaya_matmul_desc d = {.dtype = dt, .trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k,
                          .batch = batch, .alpha = alpha, .beta = beta};
    zaya_status s = zaya_matmul(&d, a, b, c);
    if (s != ZAYA_OK) {
        fprintf(stderr, "zaya: internal error: %s\n", zaya_error_message());
        ZAYA_ASSERT(s == ZAYA_OK);
    }
}

static void dense(zaya_dtype dt, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const void *a,
                  const void *b, float *c, float beta) {
    dense_batched(dt, trans_a, trans_b, 1, m, n, k, a, b, c, 1.0f, beta);
}

void zaya_matmul_batched(zaya_dtype dtype, int trans_a, int trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                         const void *a, const void *b, float *c, float alpha, float beta) {
    dense_batched(dtype, trans_a, trans_b, batch, m, n, k, a, b, c, alpha, beta);
}

void zaya_matmul_dynamic(zaya_dtype dtype, int dynamic, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                         const void *a, const void *b, float *c, float beta) {
    zaya_matmul_desc d = {.dtype = dtype, .trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k,
                          .beta = beta, .dynamic = dynamic};
    zaya_status s = zaya_matmul(&d, a, b, c);
    if (s != ZAYA_OK) {
        fprintf(stderr, "zaya: internal error: %s\n", zaya_error_message());
        ZAYA_ASSERT(s == ZAYA_OK);
    }
}

void zaya_matmul_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                     float *c, float beta) {
    dense(ZAYA_DTYPE_F32, trans_a, trans_b, m, n, k, a, b, c, beta);
}

void zaya_matmul_bf16(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                      const uint16_t *b, float *c, float beta) {
    dense(ZAYA_DTYPE_BF16, trans_a, trans_b, m, n, k, a, b, c, beta);
}
