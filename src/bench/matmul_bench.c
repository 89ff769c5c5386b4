/* Matmul measurements: zaya's wrapper against oneDNN called directly, and the machine peak.
 *
 * The direct path deliberately shares no code with src/kernels/matmul.c beyond the resolved
 * descriptor (ld and stride defaults): its own engine and stream, primitive and memory objects built
 * once, and a loop of bare dnnl_primitive_execute + wait. That is the best a caller of oneDNN can do,
 * so wrapper/direct is the wrapper's cost. */
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "zaya/alloc.h"
#include "zaya/bench.h"
#include "zaya/bf16.h"
#include "zaya/matmul.h"
#include "zaya/rng.h"

double zaya_matmul_flops(const zaya_matmul_desc *d) {
    double batch = d->batch > 1 ? (double)d->batch : 1.0;
    return 2.0 * (double)d->m * (double)d->n * (double)d->k * batch;
}

/* ---- operand buffers ---- */

typedef struct mm_buffers {
    void *a, *b;
    float *c;
} mm_buffers;

static int64_t extent(const zaya_matmul_desc *r, int64_t stride, int64_t rows, int64_t ld) {
    return (r->batch - 1) * stride + rows * ld;
}

static void buffers_free(mm_buffers *bf) {
    zaya_free(bf->a);
    zaya_free(bf->b);
    zaya_free(bf->c);
    memset(bf, 0, sizeof *bf);
}

/* Random inputs in [-1, 1) (bf16-rounded for bf16), C zeroed. r must be resolved. */
static zaya_status buffers_alloc(const zaya_matmul_desc *r, mm_buffers *bf) {
    memset(bf, 0, sizeof *bf);
    int64_t na = extent(r, r->stride_a, r->trans_a ? r->k : r->m, r->lda);
    int64_t nb = extent(r, r->stride_b, r->trans_b ? r->n : r->k, r->ldb);
    int64_t nc = extent(r, r->stride_c, r->m, r->ldc);
    size_t es = r->dtype == ZAYA_DTYPE_BF16 ? 2 : 4;
    bf->a = zaya_malloc((size_t)na * es);
    bf->b = zaya_malloc((size_t)nb * es);
    bf->c = zaya_calloc((size_t)nc, sizeof(float));
    if (!bf->a || !bf->b || !bf->c) {
        buffers_free(bf);
        return zaya_error_set(ZAYA_ENOMEM, "bench: cannot allocate operands for m=%lld n=%lld k=%lld (%.1f MiB)",
                              (long long)r->m, (long long)r->n, (long long)r->k,
                              (double)((na + nb) * (int64_t)es + nc * 4) / (1 << 20));
    }
    float *tmp = es == 2 ? zaya_malloc((size_t)(na > nb ? na : nb) * sizeof(float)) : NULL;
    if (es == 2 && !tmp) {
        buffers_free(bf);
        return zaya_error_set(ZAYA_ENOMEM, "bench: cannot allocate conversion buffer");
    }
    float *fa = es == 2 ? tmp : bf->a;
    zaya_rng_fill_uniform(fa, (size_t)na, 1234, 1, 0, -1.0f, 1.0f);
    if (es == 2) zaya_f32_to_bf16_n(bf->a, fa, (size_t)na);
    float *fb = es == 2 ? tmp : bf->b;
    zaya_rng_fill_uniform(fb, (size_t)nb, 1234, 2, 0, -1.0f, 1.0f);
    if (es == 2) zaya_f32_to_bf16_n(bf->b, fb, (size_t)nb);
    zaya_free(tmp);
    return ZAYA_OK;
}

/* ---- oneDNN called directly ---- */

typedef struct direct_ctx {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3];
    dnnl_exec_arg_t args[3];
    float *wide[2]; /* hosts without a bf16 matmul: the bf16 operands widened once, for the f32 primitive */
} direct_ctx;

static dnnl_status_t md_strided(dnnl_memory_desc_t *md, int64_t batch, int64_t rows, int64_t cols, int trans,
                                int64_t ld, int64_t stride, dnnl_data_type_t dt) {
    if (batch > 1) {
        dnnl_dims_t dims = {batch, rows, cols}, strides = {stride, trans ? 1 : ld, trans ? ld : 1};
        return dnnl_memory_desc_init_by_strides(md, 3, dims, dt, strides);
    }
    dnnl_dims_t dims = {rows, cols}, strides = {trans ? 1 : ld, trans ? ld : 1};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides);
}

static void direct_free(direct_ctx *x) {
    for (int i = 0; i < 3; i++)
        if (x->mem[i]) dnnl_memory_destroy(x->mem[i]);
    if (x->prim) dnnl_primitive_destroy(x->prim);
    if (x->stream) dnnl_stream_destroy(x->stream);
    if (x->eng) dnnl_engine_destroy(x->eng);
    zaya_free(x->wide[0]);
    zaya_free(x->wide[1]);
    memset(x, 0, sizeof *x);
}

static zaya_status direct_init(direct_ctx *x, const zaya_matmul_desc *r, mm_buffers *bf) {
    memset(x, 0, sizeof *x);
    /* Where oneDNN has no bf16 matmul, zaya runs bf16 on the f32 kernels after widening its operands
     * (matmul.c); the direct peer is that f32 primitive on operands widened once, outside the timing. */
    const int widen = r->dtype == ZAYA_DTYPE_BF16 && !zaya_matmul_has_native_bf16();
    dnnl_data_type_t dt = r->dtype == ZAYA_DTYPE_BF16 && !widen ? dnnl_bf16 : dnnl_f32;
    void *pa = bf->a, *pb = bf->b;
    if (widen) {
        const int64_t na = extent(r, r->stride_a, r->trans_a ? r->k : r->m, r->lda);
        const int64_t nb = extent(r, r->stride_b, r->trans_b ? r->n : r->k, r->ldb);
        x->wide[0] = zaya_malloc((size_t)na * sizeof(float));
        x->wide[1] = zaya_malloc((size_t)nb * sizeof(float));
        if (!x->wide[0] || !x->wide[1]) {
            direct_free(x);
            return zaya_error_set(ZAYA_ENOMEM, "bench: cannot allocate the direct peer's widened operands");
        }
        zaya_bf16_to_f32_n(x->wide[0], bf->a, (size_t)na);
        zaya_bf16_to_f32_n(x->wide[1], bf->b, (size_t)nb);
        pa = x->wide[0], pb = x->wide[1];
    }
    dnnl_memory_desc_t ma, mb, mc;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s;
    if ((s = dnnl_engine_create(&x->eng, dnnl_cpu, 0)) != dnnl_success) goto fail;
    if ((s = dnnl_stream_create(&x->stream, x->eng, dnnl_stream_default_flags)) != dnnl_success) goto fail;
    if ((s = md_strided(&ma, r->batch, r->m, r->k, r->trans_a, r->lda, r->stride_a, dt)) != dnnl_success) goto fail;
    if ((s = md_strided(&mb, r->batch, r->k, r->n, r->trans_b, r->ldb, r->stride_b, dt)) != dnnl_success) goto fail;
    if ((s = md_strided(&mc, r->batch, r->m, r->n, 0, r->ldc, r->stride_c, dnnl_f32)) != dnnl_success) goto fail;
    if ((s = dnnl_matmul_desc_init(&md, &ma, &mb, NULL, &mc)) != dnnl_success) goto fail;
    if ((s = dnnl_primitive_attr_create(&attr)) != dnnl_success) goto fail;
    if (r->alpha != 1.0f && (s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &r->alpha)) != dnnl_success) goto fail;
    if (r->beta == 1.0f) {
        if ((s = dnnl_post_ops_create(&ops)) != dnnl_success) goto fail;
        if ((s = dnnl_post_ops_append_sum(ops, 1.0f)) != dnnl_success) goto fail;
        if ((s = dnnl_primitive_attr_set_post_ops(attr, ops)) != dnnl_success) goto fail;
    }
    if ((s = dnnl_primitive_desc_create(&pd, &md, attr, x->eng, NULL)) != dnnl_success) goto fail;
    if ((s = dnnl_primitive_create(&x->prim, pd)) != dnnl_success) goto fail;
    if ((s = dnnl_memory_create(&x->mem[0], &ma, x->eng, pa)) != dnnl_success) goto fail;
    if ((s = dnnl_memory_create(&x->mem[1], &mb, x->eng, pb)) != dnnl_success) goto fail;
    if ((s = dnnl_memory_create(&x->mem[2], &mc, x->eng, bf->c)) != dnnl_success) goto fail;
    x->args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, x->mem[0]};
    x->args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, x->mem[1]};
    x->args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, x->mem[2]};
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(ops);
    dnnl_primitive_attr_destroy(attr);
    return ZAYA_OK;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    direct_free(x);
    return zaya_error_set(ZAYA_EBACKEND, "direct oneDNN matmul m=%lld n=%lld k=%lld: setup failed (status %d)",
                          (long long)r->m, (long long)r->n, (long long)r->k, (int)s);
}

static zaya_status direct_call(void *ctx) {
    direct_ctx *x = ctx;
    if (dnnl_primitive_execute(x->prim, x->stream, 3, x->args) != dnnl_success || dnnl_stream_wait(x->stream) != dnnl_success)
        return zaya_error_set(ZAYA_EBACKEND, "direct oneDNN matmul: execute failed");
    return ZAYA_OK;
}

typedef struct wrapper_ctx {
    const zaya_matmul_desc *d;
    mm_buffers *bf;
} wrapper_ctx;

static zaya_status wrapper_call(void *ctx) {
    wrapper_ctx *w = ctx;
    return zaya_matmul(w->d, w->bf->a, w->bf->b, w->bf->c);
}

zaya_status zaya_bench_matmul_compare(const zaya_matmul_desc *d, const zaya_bench_opts *opts, zaya_bench_stats *wrapper,
                                      zaya_bench_stats *direct) {
    zaya_matmul_desc r;
    ZAYA_TRY(zaya_matmul_resolve(d, &r));
    mm_buffers bf;
    ZAYA_TRY(buffers_alloc(&r, &bf));
    direct_ctx dx = {0};
    wrapper_ctx wx = {&r, &bf};
    zaya_status s = direct ? direct_init(&dx, &r, &bf) : ZAYA_OK;
    if (s == ZAYA_OK) {
        if (wrapper && direct)
            s = zaya_bench_time_pair(wrapper_call, &wx, direct_call, &dx, opts, wrapper, direct);
        else if (wrapper)
            s = zaya_bench_time(wrapper_call, &wx, opts, wrapper);
        else if (direct)
            s = zaya_bench_time(direct_call, &dx, opts, direct);
    }
    direct_free(&dx);
    buffers_free(&bf);
    return s;
}

zaya_status zaya_bench_matmul_direct(const zaya_matmul_desc *d, const zaya_bench_opts *opts, zaya_bench_stats *out) {
    return zaya_bench_matmul_compare(d, opts, NULL, out);
}

struct zaya_bench_matmul_peer {
    zaya_matmul_desc r;
    mm_buffers bf;
    direct_ctx dx;
};

zaya_status zaya_bench_matmul_peer_init(const zaya_matmul_desc *d, zaya_bench_matmul_peer **out) {
    *out = NULL;
    zaya_bench_matmul_peer *p = calloc(1, sizeof *p);
    if (!p) return zaya_error_set(ZAYA_ENOMEM, "bench: matmul peer");
    zaya_status s = zaya_matmul_resolve(d, &p->r);
    if (s == ZAYA_OK) s = buffers_alloc(&p->r, &p->bf);
    if (s == ZAYA_OK) s = direct_init(&p->dx, &p->r, &p->bf);
    if (s != ZAYA_OK) {
        zaya_bench_matmul_peer_free(p);
        return s;
    }
    *out = p;
    return ZAYA_OK;
}

zaya_status zaya_bench_matmul_peer_call(void *peer) { return direct_call(&((zaya_bench_matmul_peer *)peer)->dx); }

double zaya_bench_matmul_peer_flops(const zaya_bench_matmul_peer *p) { return zaya_matmul_flops(&p->r); }

void zaya_bench_matmul_peer_free(zaya_bench_matmul_peer *p) {
    if (!p) return;
    direct_free(&p->dx);
    buffers_free(&p->bf);
    free(p);
}

zaya_status zaya_bench_matmul_peak(zaya_dtype dtype, const int64_t *sizes, int nsizes, const zaya_bench_opts *opts,
                                   double *gflops, int64_t *best_n) {
    static const int64_t defaults[] = {1024, 1536, 2048};
    if (!sizes || nsizes <= 0) sizes = defaults, nsizes = 3;
    zaya_bench_opts o = opts ? *opts : (zaya_bench_opts){2, 5, 0, 0};
    double best = 0;
    int64_t bn = 0;
    for (int i = 0; i < nsizes; i++) {
        zaya_matmul_desc d = {.dtype = dtype, .m = sizes[i], .n = sizes[i], .k = sizes[i]};
        zaya_bench_stats st;
        ZAYA_TRY(zaya_bench_matmul_direct(&d, &o, &st));
        double g = zaya_matmul_flops(&d) / st.best_s * 1e-9;
        if (g > best) best = g, bn = sizes[i];
    }
    *gflops = best;
    if (best_n) *best_n = bn;
    return ZAYA_OK;
}

double zaya_bench_matmul_peak_gflops(zaya_dtype dtype) {
    double g = 0;
    if (zaya_bench_matmul_peak(dtype, NULL, 0, NULL, &g, NULL) != ZAYA_OK) return -1.0;
    return g;
}
