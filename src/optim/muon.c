/* Muon over the owned MUON units: Nesterov momentum, Newton-Schulz orthogonalisation of the whole
 * matrix through zaya_matmul, RMS-matched scaled update with decoupled weight decay.
 *
 * Scheduling: large matrices (NS above cfg.muon_pool_flops) run one after another, each GEMM on the
 * whole pool. Small ones run concurrently, one matrix per thread: oneDNN runs a GEMM called inside an
 * OpenMP region on the calling thread, so there is no fork/join barrier per small GEMM, which on a busy
 * machine made pooled small GEMMs ~10x slower. The GEMM calls themselves are serialised by a mutex
 * (mode 2): the Debian oneDNN 2.6 build lacks DNNL_ENABLE_CONCURRENT_EXEC, and primitives executing
 * at the same time corrupted each other's results (~1% of steps differed). The momentum, normalisation,
 * Newton-Schulz elementwise work and the update still overlap with other threads' GEMMs. Mode 1
 * (no mutex) is for a zaya_matmul that is safe for concurrent calls; mode 0 runs everything pooled.
 * In every mode a matrix's result depends neither on the thread count nor on the schedule. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <string.h>

#include "optim/internal.h"
#include "zaya/alloc.h"
#include "zaya/bf16.h"

/* Quintic coefficients chosen (KellerJordan/Muon) to maximise the slope at 0 while keeping the
 * iteration inside ~[0.7, 1.2] for singular values already near 1. */
#ifndef ZAYA_MUON_CONCURRENT
#define ZAYA_MUON_CONCURRENT 2 /* see above: 0 pooled, 1 concurrent, 2 concurrent with serialised GEMMs */
#endif

#define NS_A 3.4445f
#define NS_B (-4.7750f)
#define NS_C 2.0315f

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int is_large(const zaya_optim *o, const zaya_optim_unit *u) {
    return zaya_muon_ns_flops(u->rows, u->cols, o->cfg.muon_ns_steps) > o->cfg.muon_pool_flops;
}

static const zaya_optim_unit *g_order_units;
static int by_cost(const void *a, const void *b) { /* decreasing cost, then block order */
    int ia = *(const int *)a, ib = *(const int *)b;
    double ca = g_order_units[ia].cost, cb = g_order_units[ib].cost;
    if (ca != cb) return ca > cb ? -1 : 1;
    return ia - ib;
}

static void free_slot(zaya_ns_slot *s) {
    zaya_free(s->x);
    zaya_free(s->y);
    zaya_free(s->a);
    zaya_free(s->b);
    zaya_free(s->xh);
    zaya_free(s->ah);
    zaya_free(s->bh);
}

static int alloc_slot(zaya_ns_slot *s, int64_t mn, int64_t mm, int bf16) {
    size_t f = sizeof(float), h = sizeof(uint16_t);
    s->x = zaya_malloc(f * (size_t)mn);
    s->y = zaya_malloc(f * (size_t)mn);
    s->a = zaya_malloc(f * (size_t)mm);
    s->b = zaya_malloc(f * (size_t)mm);
    if (bf16) {
        s->xh = zaya_malloc(h * (size_t)mn);
        s->ah = zaya_malloc(h * (size_t)mm);
        s->bh = zaya_malloc(h * (size_t)mm);
    }
    return s->x && s->y && s->a && s->b && (!bf16 || (s->xh && s->ah && s->bh));
}

zaya_status zaya_muon_init_scratch(zaya_optim *o) {
    const zaya_optim_plan *p = &o->plan;
    int n = 0;
    int64_t mn_all = 0, mm_all = 0, mn_small = 0, mm_small = 0;
    for (int i = 0; i < p->nunits; i++) {
        const zaya_optim_unit *u = &p->units[i];
        if (u->owner != o->rank || u->kind != ZAYA_UNIT_MUON) continue;
        int64_t m = min64(u->rows, u->cols);
        n++;
        mn_all = max64(mn_all, u->numel);
        mm_all = max64(mm_all, m * m);
        if (is_large(o, u)) {
            o->nmuon_large++;
        } else {
            mn_small = max64(mn_small, u->numel);
            mm_small = max64(mm_small, m * m);
        }
    }
    o->nmuon_small = n - o->nmuon_large;
    if (n == 0) return ZAYA_OK;
    o->muon_order = malloc(sizeof(int) * (size_t)n);
    int threads = ZAYA_MUON_CONCURRENT ? omp_get_max_threads() : 1;
    o->nslots = o->nmuon_small > 1 ? (threads < o->nmuon_small ? threads : o->nmuon_small) : 1;
    o->slots = calloc((size_t)o->nslots, sizeof *o->slots);
    if (!o->muon_order || !o->slots) return zaya_error_set(ZAYA_ENOMEM, "optimizer: cannot allocate Muon tables");
    int bf16 = o->cfg.muon_ns_dtype == ZAYA_DTYPE_BF16;
    for (int s = 0; s < o->nslots; s++)
        if (!alloc_slot(&o->slots[s], s ? mn_small : mn_all, s ? mm_small : mm_all, bf16))
            return zaya_error_set(ZAYA_ENOMEM, "optimizer: cannot allocate Newton-Schulz scratch for thread %d", s);
    /* large units first (in block order), then small ones by decreasing cost for the dynamic schedule */
    int k = 0;
    for (int i = 0; i < p->nunits; i++)
        if (p->units[i].owner == o->rank && p->units[i].kind == ZAYA_UNIT_MUON && is_large(o, &p->units[i]))
            o->muon_order[k++] = i;
    for (int i = 0; i < p->nunits; i++)
        if (p->units[i].owner == o->rank && p->units[i].kind == ZAYA_UNIT_MUON && !is_large(o, &p->units[i]))
            o->muon_order[k++] = i;
    g_order_units = p->units;
    qsort(o->muon_order + o->nmuon_large, (size_t)o->nmuon_small, sizeof(int), by_cost);
    g_order_units = NULL;
    return ZAYA_OK;
}

void zaya_muon_free_scratch(zaya_optim *o) {
    for (int s = 0; s < o->nslots; s++) free_slot(&o->slots[s]);
    free(o->slots);
    free(o->muon_order);
    o->slots = NULL;
    o->muon_order = NULL;
    o->nslots = 0;
}

static pthread_mutex_t g_gemm_mu = PTHREAD_MUTEX_INITIALIZER;

static void mm(zaya_dtype dt, int trans_b, int64_t m, int64_t n, int64_t k, const void *a, const void *b, float *c,
               float alpha, float beta) {
    zaya_matmul_desc d = {0};
    d.dtype = dt;
    d.trans_b = trans_b;
    d.m = m;
    d.n = n;
    d.k = k;
    d.alpha = alpha;
    d.beta = beta;
    const int serial = ZAYA_MUON_CONCURRENT == 2 && omp_in_parallel();
    if (serial) pthread_mutex_lock(&g_gemm_mu);
    zaya_status s = zaya_matmul(&d, a, b, c);
    if (serial) pthread_mutex_unlock(&g_gemm_mu);
    ZAYA_ASSERT(s == ZAYA_OK);
}

static void scale_into(float *dst, const float *src, float s, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; i++) dst[i] = s * src[i];
}

static void to_bf16(uint16_t *dst, const float *src, int64_t n) {
    if (omp_in_parallel()) /* inside the per-unit loop: stay on this thread */
        for (int64_t i = 0; i < n; i++) dst[i] = zaya_f32_to_bf16(src[i]);
    else
        zaya_f32_to_bf16_n(dst, src, (size_t)n);
}

/* slot->x (m x n, m <= n) -> approximately U V^T of its SVD. Returns the buffer holding the result
 * (slot->x or slot->y). */
static float *newton_schulz(const zaya_optim *o, zaya_ns_slot *sl, int64_t m, int64_t n) {
    float *X = sl->x, *Y = sl->y, *A = sl->a, *B = sl->b;
    const int64_t mn = m * n, mm2 = m * m;
    const float denom = (float)(sqrt(zaya_optim_sumsq(X, mn)) + 1e-7);
#pragma omp parallel for schedule(static) if (mn >= 65536)
    for (int64_t i = 0; i < mn; i++) X[i] = X[i] / denom;
    const int bf16 = o->cfg.muon_ns_dtype == ZAYA_DTYPE_BF16;
    for (int it = 0; it < o->cfg.muon_ns_steps; it++) {
        if (bf16) {
            to_bf16(sl->xh, X, mn);
            mm(ZAYA_DTYPE_BF16, 1, m, m, n, sl->xh, sl->xh, A, 1.0f, 0.0f); /* A = X X^T */
            to_bf16(sl->ah, A, mm2);
            scale_into(B, A, NS_B, mm2);
            mm(ZAYA_DTYPE_BF16, 0, m, m, m, sl->ah, sl->ah, B, NS_C, 1.0f); /* B = b A + c A A */
            to_bf16(sl->bh, B, mm2);
            scale_into(Y, X, NS_A, mn);
            mm(ZAYA_DTYPE_BF16, 0, m, n, m, sl->bh, sl->xh, Y, 1.0f, 1.0f); /* Y = a X + B X */
        } else {
            mm(ZAYA_DTYPE_F32, 1, m, m, n, X, X, A, 1.0f, 0.0f);
            scale_into(B, A, NS_B, mm2);
            mm(ZAYA_DTYPE_F32, 0, m, m, m, A, A, B, NS_C, 1.0f);
            scale_into(Y, X, NS_A, mn);
            mm(ZAYA_DTYPE_F32, 0, m, n, m, B, X, Y, 1.0f, 1.0f);
        }
        float *t = X;
        X = Y;
        Y = t;
    }
    return X;
}

void zaya_muon_orthogonalize(zaya_optim *o, const float *g, int64_t rows, int64_t cols, float *out) {
    int64_t cap_mn = 0, cap_mm = 0, m = min64(rows, cols);
    for (int k = 0; k < o->nmuon_large + o->nmuon_small; k++) {
        const zaya_optim_unit *u = &o->plan.units[o->muon_order[k]];
        cap_mn = max64(cap_mn, u->numel);
        cap_mm = max64(cap_mm, min64(u->rows, u->cols) * min64(u->rows, u->cols));
    }
    ZAYA_ASSERT(rows * cols <= cap_mn && m * m <= cap_mm); /* slot 0 fits every owned matrix */
    zaya_ns_slot *sl = &o->slots[0];
    const int tr = rows > cols;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) sl->x[tr ? j * rows + i : i * cols + j] = g[i * cols + j];
    const float *X = newton_schulz(o, sl, tr ? cols : rows, tr ? rows : cols);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) out[i * cols + j] = X[tr ? j * rows + i : i * cols + j];
}

static void step_unit(const zaya_optim *o, int i, zaya_ns_slot *sl, float *params, const float *grads, double lr,
                      float gs) {
    const zaya_optim_config *c = &o->cfg;
    const zaya_optim_unit *u = &o->plan.units[i];
    const float beta = (float)c->muon_momentum, w = (float)(1.0 - c->muon_momentum);
    const int nesterov = c->muon_nesterov;
    const int64_t r = u->rows, cc = u->cols;
    const int tr = r > cc; /* Newton-Schulz on the wide orientation: the Gram matrix is the small one */
    float *p = params + u->offset, *buf = o->momentum[i], *X = sl->x;
    const float *g = grads + u->offset;
#pragma omp parallel for schedule(static) if (u->numel >= 65536)
    for (int64_t a = 0; a < r; a++)
        for (int64_t b = 0; b < cc; b++) {
            const int64_t k = a * cc + b;
            float gk = g[k] * gs;
            float mk = buf[k] + w * (gk - buf[k]); /* lerp(buf, g, 1 - beta) */
            buf[k] = mk;
            float uk = nesterov ? gk + beta * (mk - gk) : mk; /* lerp(g, buf, beta) */
            X[tr ? b * r + a : k] = uk;
        }
    const float *O = newton_schulz(o, sl, tr ? cc : r, tr ? r : cc);
    const float decay = u->decay ? (float)(1.0 - lr * c->weight_decay) : 1.0f;
    const float neg = (float)(-lr * 0.2 * sqrt((double)max64(r, cc)));
#pragma omp parallel for schedule(static) if (u->numel >= 65536)
    for (int64_t a = 0; a < r; a++)
        for (int64_t b = 0; b < cc; b++) {
            const int64_t k = a * cc + b;
            p[k] = p[k] * decay + neg * O[tr ? b * r + a : k];
        }
}

void zaya_optim_step_muon(zaya_optim *o, float *params, const float *grads, double lr, double grad_scale) {
    o->muon_steps++;
    const double mlr = lr * o->cfg.muon_lr_scale;
    const float gs = (float)grad_scale;
    for (int k = 0; k < o->nmuon_large; k++) step_unit(o, o->muon_order[k], &o->slots[0], params, grads, mlr, gs);
    const int *small = o->muon_order + o->nmuon_large;
    const int ns = o->nmuon_small;
    if (ns == 0) return;
#pragma omp parallel num_threads(o->nslots) if (o->nslots > 1)
    {
        zaya_ns_slot *sl = &o->slots[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1)
        for (int k = 0; k < ns; k++) step_unit(o, small[k], sl, params, grads, mlr, gs);
    }
}
