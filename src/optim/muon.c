/* Muon over the owned MUON units: Nesterov momentum, Newton-Schulz orthogonalisation of the whole
 * matrix, RMS-matched scaled update with decoupled weight decay.
 *
 * Batching: the owned matrices are grouped at init by their Newton-Schulz shape m x n (m <= n; a tall
 * matrix is transposed), so all experts of a layer and every same-shape matrix of the other layers
 * form one group, run in batches: per batch and iteration the three GEMMs are single batched oneDNN
 * matmuls (zaya_matmul_batched) and the elementwise work (momentum and packing, normalisation, bf16
 * conversion, the a/b terms, the update) is a few fused passes over the whole batch.
 *
 * Two schedules (zaya_muon_schedule), same bits: POOL runs batches of threads x ZAYA_MUON_THREAD_FLOATS
 * (about one expert matrix per thread, so that each thread's matrices stay in its cache through all
 * iterations; a whole 32-matrix group at once streamed 16 MiB iterates through memory on every pass
 * and was ~2x slower) one after another, every GEMM and pass on the whole pool. THREADS gives each
 * thread whole batches of ZAYA_MUON_THREAD_FLOATS, run single-threaded with the GEMMs serialised by a
 * mutex (see mm()), with no barrier inside the step: on a machine shared with other jobs POOL's
 * barrier per GEMM and pass cost a descheduled thread's time slice each. AUTO times both and keeps
 * the faster. Scratch for every batch is allocated at init; a step allocates nothing (oneDNN
 * primitives are created once per shape).
 *
 * Same math as one matrix at a time: every element goes through the same operations in the same
 * order, each matrix's sum of squares is zaya_sumsq_f64 over its packed iterate, and each batched
 * product is bit-identical to the single product on the same operands (the oneDNN kernels neither
 * split nor reorder the k reduction across the batch; tests/test_matmul.c and tests/test_optim.c check
 * this), so a matrix's result depends neither on the batch it runs in nor on the thread count. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <string.h>

#include "optim/internal.h"
#include "zaya/alloc.h"
#include "zaya/bf16.h"
#include "zaya/timer.h"

/* Quintic coefficients chosen (KellerJordan/Muon) to maximise the slope at 0 while keeping the
 * iteration inside ~[0.7, 1.2] for singular values already near 1. */
#define NS_A 3.4445f
#define NS_B (-4.7750f)
#define NS_C 2.0315f

/* Elementwise passes below this many elements stay on the calling thread. */
#define PAR_MIN 65536

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t ns_rows(const zaya_optim_unit *u) { return min64(u->rows, u->cols); }
static int64_t ns_cols(const zaya_optim_unit *u) { return max64(u->rows, u->cols); }

/* Equal batches of at most cap iterate floats (at least one matrix). */
static int batch_size(const zaya_ns_group *gr, int64_t cap) {
    const int64_t fit = max64(1, cap / (gr->m * gr->n)), nb = (gr->count + fit - 1) / fit;
    return (int)((gr->count + nb - 1) / nb);
}

static void fit_scratch(zaya_ns_scratch *s, const zaya_ns_group *gr, int batch) {
    s->cap_mn = max64(s->cap_mn, batch * gr->m * gr->n);
    s->cap_mm = max64(s->cap_mm, batch * gr->m * gr->m);
    if (batch > s->cap_mats) s->cap_mats = batch;
}

static zaya_status alloc_scratch(zaya_ns_scratch *s, int bf16) {
    const size_t f = sizeof(float), h = sizeof(uint16_t), mn = (size_t)s->cap_mn, mm = (size_t)s->cap_mm;
    s->x = zaya_malloc(f * mn);
    s->y = zaya_malloc(f * mn);
    s->a = zaya_malloc(f * mm);
    s->b = zaya_malloc(f * mm);
    s->denom = zaya_malloc(f * (size_t)s->cap_mats);
    int ok = s->x && s->y && s->a && s->b && s->denom;
    if (bf16) {
        s->xh = zaya_malloc(h * mn);
        s->ah = zaya_malloc(h * mm);
        s->bh = zaya_malloc(h * mm);
        ok = ok && s->xh && s->ah && s->bh;
    }
    if (!ok)
        return zaya_error_set(ZAYA_ENOMEM, "optimizer: cannot allocate Newton-Schulz scratch (%lld + %lld floats)",
                              (long long)s->cap_mn, (long long)s->cap_mm);
    return ZAYA_OK;
}

static void free_scratch(zaya_ns_scratch *s) {
    zaya_free(s->x);
    zaya_free(s->y);
    zaya_free(s->a);
    zaya_free(s->b);
    zaya_free(s->xh);
    zaya_free(s->ah);
    zaya_free(s->bh);
    zaya_free(s->denom);
    memset(s, 0, sizeof *s);
}

static int by_cost(const void *a, const void *b) { /* decreasing cost, then (group, first) order */
    const zaya_ns_task *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    if (x->group != y->group) return x->group - y->group;
    return x->first - y->first;
}

zaya_status zaya_muon_init_scratch(zaya_optim *o) {
    const zaya_optim_plan *p = &o->plan;
    int n = 0;
    for (int i = 0; i < p->nunits; i++) n += p->units[i].owner == o->rank && p->units[i].kind == ZAYA_UNIT_MUON;
    if (n == 0) return ZAYA_OK;
    o->ns_units = malloc(sizeof(int) * (size_t)n);
    o->ns_groups = calloc((size_t)n, sizeof *o->ns_groups);
    if (!o->ns_units || !o->ns_groups) return zaya_error_set(ZAYA_ENOMEM, "optimizer: cannot allocate Muon tables");
    /* groups in order of first appearance, units in block order within a group */
    int ng = 0;
    for (int i = 0; i < p->nunits; i++) {
        const zaya_optim_unit *u = &p->units[i];
        if (u->owner != o->rank || u->kind != ZAYA_UNIT_MUON) continue;
        int g = 0;
        while (g < ng && !(o->ns_groups[g].m == ns_rows(u) && o->ns_groups[g].n == ns_cols(u))) g++;
        if (g == ng) {
            o->ns_groups[ng].m = ns_rows(u);
            o->ns_groups[ng].n = ns_cols(u);
            ng++;
        }
        o->ns_groups[g].count++;
    }
    o->nns_groups = ng;
    int *at = o->ns_units;
    for (int g = 0; g < ng; g++) {
        zaya_ns_group *gr = &o->ns_groups[g];
        gr->units = at;
        at += gr->count;
        gr->count = 0;
    }
    for (int i = 0; i < p->nunits; i++) {
        const zaya_optim_unit *u = &p->units[i];
        if (u->owner != o->rank || u->kind != ZAYA_UNIT_MUON) continue;
        for (int g = 0; g < ng; g++) {
            zaya_ns_group *gr = &o->ns_groups[g];
            if (gr->m == ns_rows(u) && gr->n == ns_cols(u)) {
                gr->units[gr->count++] = i;
                break;
            }
        }
    }
    /* batches of equal size under each schedule's cap, scratch for the largest, the per-thread tasks */
    const int threads = omp_get_max_threads();
    const int64_t tcap = o->cfg.muon_batch_floats > 0 ? o->cfg.muon_batch_floats : ZAYA_MUON_THREAD_FLOATS;
    const int64_t pcap = o->cfg.muon_batch_floats > 0 ? o->cfg.muon_batch_floats : threads * ZAYA_MUON_THREAD_FLOATS;
    int ntasks = 0;
    for (int g = 0; g < ng; g++) {
        zaya_ns_group *gr = &o->ns_groups[g];
        gr->batch = batch_size(gr, pcap);
        gr->tbatch = batch_size(gr, tcap);
        ntasks += (gr->count + gr->tbatch - 1) / gr->tbatch;
        fit_scratch(&o->ns, gr, gr->batch);
    }
    o->nns_slots = threads > 1 ? threads : 0;
    o->ns_slots = o->nns_slots ? calloc((size_t)o->nns_slots, sizeof *o->ns_slots) : NULL;
    o->ns_tasks = malloc(sizeof *o->ns_tasks * (size_t)ntasks);
    if ((o->nns_slots && !o->ns_slots) || !o->ns_tasks)
        return zaya_error_set(ZAYA_ENOMEM, "optimizer: cannot allocate Muon tables");
    o->nns_tasks = ntasks;
    int k = 0;
    for (int g = 0; g < ng; g++) {
        zaya_ns_group *gr = &o->ns_groups[g];
        for (int j0 = 0; j0 < gr->count; j0 += gr->tbatch) {
            o->ns_tasks[k].group = g;
            o->ns_tasks[k].first = j0;
            o->ns_tasks[k].mats = gr->count - j0 < gr->tbatch ? gr->count - j0 : gr->tbatch;
            o->ns_tasks[k].cost = (double)o->ns_tasks[k].mats * zaya_muon_ns_flops(gr->m, gr->n, 1);
            k++;
        }
        for (int t = 0; t < o->nns_slots; t++) fit_scratch(&o->ns_slots[t], gr, gr->tbatch);
    }
    qsort(o->ns_tasks, (size_t)ntasks, sizeof *o->ns_tasks, by_cost);
    const int bf16 = o->cfg.muon_ns_dtype == ZAYA_DTYPE_BF16;
    ZAYA_TRY(alloc_scratch(&o->ns, bf16));
    for (int t = 0; t < o->nns_slots; t++) ZAYA_TRY(alloc_scratch(&o->ns_slots[t], bf16));
    return ZAYA_OK;
}

void zaya_muon_free_scratch(zaya_optim *o) {
    free_scratch(&o->ns);
    for (int t = 0; t < o->nns_slots; t++) free_scratch(&o->ns_slots[t]);
    free(o->ns_slots);
    free(o->ns_tasks);
    o->ns_slots = NULL;
    o->ns_tasks = NULL;
    o->nns_slots = o->nns_tasks = 0;
    free(o->ns_groups);
    free(o->ns_units);
    o->ns_groups = NULL;
    o->ns_units = NULL;
    o->nns_groups = 0;
}

static pthread_mutex_t g_gemm_mu = PTHREAD_MUTEX_INITIALIZER;

/* Inside the per-thread schedule the GEMM runs on the calling thread, serialised: the Debian oneDNN 2.6
 * build lacks DNNL_ENABLE_CONCURRENT_EXEC, and primitives executing at the same time corrupted each
 * other's results (~1% of steps differed). */
static void mm(zaya_dtype dt, int trans_b, int64_t batch, int64_t m, int64_t n, int64_t k, const void *a, const void *b,
               float *c, float alpha, float beta) {
    const int serial = omp_in_parallel();
    if (serial) pthread_mutex_lock(&g_gemm_mu);
    zaya_matmul_batched(dt, 0, trans_b, batch, m, n, k, a, b, c, alpha, beta);
    if (serial) pthread_mutex_unlock(&g_gemm_mu);
}

/* x <- x / denom[matrix] (when denom), xh = bf16(x) (when xh), y = a * x, over `mats` m x n matrices. */
static void prep_x(float *x, uint16_t *xh, float *y, const float *denom, int mats, int64_t mn) {
    const int64_t total = (int64_t)mats * mn;
#pragma omp parallel for schedule(static) if (total >= PAR_MIN)
    for (int64_t i = 0; i < total; i++) {
        float v = x[i];
        if (denom) x[i] = v = v / denom[i / mn];
        if (xh) xh[i] = zaya_f32_to_bf16(v);
        y[i] = NS_A * v;
    }
}

/* ah = bf16(a) (when ah), b = NS_B * a. */
static void prep_a(const float *a, uint16_t *ah, float *b, int64_t total) {
#pragma omp parallel for schedule(static) if (total >= PAR_MIN)
    for (int64_t i = 0; i < total; i++) {
        if (ah) ah[i] = zaya_f32_to_bf16(a[i]);
        b[i] = NS_B * a[i];
    }
}

static void to_bf16(uint16_t *dst, const float *src, int64_t total) {
#pragma omp parallel for schedule(static) if (total >= PAR_MIN)
    for (int64_t i = 0; i < total; i++) dst[i] = zaya_f32_to_bf16(src[i]);
}

/* Orthogonalises the `mats` packed m x n matrices of s->x (m <= n) in place; the result is in s->x. */
static void newton_schulz(const zaya_optim *o, zaya_ns_scratch *s, int mats, int64_t m, int64_t n) {
    const int64_t mn = m * n, mm2 = m * m;
    float *X = s->x, *Y = s->y, *A = s->a, *B = s->b;
#pragma omp parallel for schedule(static) if (mats > 1 && (int64_t)mats * mn >= PAR_MIN)
    for (int j = 0; j < mats; j++) s->denom[j] = (float)(sqrt(zaya_sumsq_f64(X + (int64_t)j * mn, mn)) + 1e-7);
    const int bf16 = o->cfg.muon_ns_dtype == ZAYA_DTYPE_BF16;
    const zaya_dtype dt = bf16 ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32;
    for (int it = 0; it < o->cfg.muon_ns_steps; it++) {
        prep_x(X, bf16 ? s->xh : NULL, Y, it == 0 ? s->denom : NULL, mats, mn); /* Y = a X */
        const void *xa = bf16 ? (const void *)s->xh : (const void *)X;
        mm(dt, 1, mats, m, m, n, xa, xa, A, 1.0f, 0.0f); /* A = X X^T */
        prep_a(A, bf16 ? s->ah : NULL, B, (int64_t)mats * mm2);
        const void *aa = bf16 ? (const void *)s->ah : (const void *)A;
        mm(dt, 0, mats, m, m, m, aa, aa, B, NS_C, 1.0f); /* B = b A + c A A */
        if (bf16) to_bf16(s->bh, B, (int64_t)mats * mm2);
        const void *ba = bf16 ? (const void *)s->bh : (const void *)B;
        mm(dt, 0, mats, m, n, m, ba, xa, Y, 1.0f, 1.0f); /* Y = a X + B X */
        float *t = X;
        X = Y;
        Y = t;
    }
    if (X != s->x) {
        const int64_t total = (int64_t)mats * mn;
        float *dst = s->x;
#pragma omp parallel for schedule(static) if (total >= PAR_MIN)
        for (int64_t i = 0; i < total; i++) dst[i] = X[i];
    }
}

/* X[j] (m x n, m <= n) <-> a rows x cols unit: element (a, b) of the unit is X[a*cols + b], or X[b*rows + a]
 * when the unit is tall (rows > cols, transposed into the wide orientation). */
static int64_t packed_at(int64_t rows, int64_t cols, int64_t a, int64_t b) { return rows > cols ? b * rows + a : a * cols + b; }

void zaya_muon_orthogonalize(zaya_optim *o, const float *g, int64_t rows, int64_t cols, float *out) {
    const int64_t m = min64(rows, cols), n = max64(rows, cols);
    ZAYA_ASSERT(m * n <= o->ns.cap_mn && m * m <= o->ns.cap_mm); /* fits the largest owned batch */
    float *x = o->ns.x;
    for (int64_t a = 0; a < rows; a++)
        for (int64_t b = 0; b < cols; b++) x[packed_at(rows, cols, a, b)] = g[a * cols + b];
    newton_schulz(o, &o->ns, 1, m, n);
    for (int64_t a = 0; a < rows; a++)
        for (int64_t b = 0; b < cols; b++) out[a * cols + b] = x[packed_at(rows, cols, a, b)];
}

/* Unit rows per task of the packing and update loops: a tall unit's rows land in columns of its
 * iterate, so a block of rows writes (reads) runs of RB consecutive floats there. */
#define RB 16

/* Momentum update of units[0..mats) into the packed iterates, in blocks of RB unit rows (a unit has at
 * most n rows; block q covers rows [(q % nblk) * RB, + RB) of unit q / nblk). */
static void pack_momentum(const zaya_optim *o, float *X, const int *units, int mats, int64_t m, int64_t n,
                          const float *grads, float gs) {
    const zaya_optim_config *c = &o->cfg;
    const float beta = (float)c->muon_momentum, w = (float)(1.0 - c->muon_momentum);
    const int nesterov = c->muon_nesterov;
    const int64_t nblk = (n + RB - 1) / RB, tasks = (int64_t)mats * nblk;
#pragma omp parallel for schedule(static) if ((int64_t)mats * m * n >= PAR_MIN)
    for (int64_t q = 0; q < tasks; q++) {
        const int j = (int)(q / nblk);
        const zaya_optim_unit *u = &o->plan.units[units[j]];
        const int64_t r = u->rows, cc = u->cols, a0 = (q % nblk) * RB, a1 = a0 + RB < r ? a0 + RB : r;
        const float *g = grads + u->offset;
        float *buf = o->momentum[units[j]], *x = X + (int64_t)j * m * n;
        if (r > cc) { /* tall: X[b, a] */
            for (int64_t b = 0; b < cc; b++)
                for (int64_t a = a0; a < a1; a++) {
                    const int64_t k = a * cc + b;
                    float gk = g[k] * gs;
                    float mk = buf[k] + w * (gk - buf[k]); /* lerp(buf, g, 1 - beta) */
                    buf[k] = mk;
                    x[b * r + a] = nesterov ? gk + beta * (mk - gk) : mk; /* lerp(g, buf, beta) */
                }
        } else {
            const int64_t k0 = a0 * cc;
            zaya_muon_momentum(x + k0, buf + k0, g + k0, (a1 - a0) * cc, gs, beta, w, nesterov);
        }
    }
}

/* p <- p * decay - lr * 0.2 * sqrt(max(rows, cols)) * O for units[0..mats), in the blocks above. */
static void apply_update(const zaya_optim *o, const float *X, const int *units, int mats, int64_t m, int64_t n,
                         float *params, double lr) {
    const float neg = (float)(-lr * 0.2 * sqrt((double)n));
    const float wdecay = (float)(1.0 - lr * o->cfg.weight_decay);
    const int64_t nblk = (n + RB - 1) / RB, tasks = (int64_t)mats * nblk;
#pragma omp parallel for schedule(static) if ((int64_t)mats * m * n >= PAR_MIN)
    for (int64_t q = 0; q < tasks; q++) {
        const int j = (int)(q / nblk);
        const zaya_optim_unit *u = &o->plan.units[units[j]];
        const int64_t r = u->rows, cc = u->cols, a0 = (q % nblk) * RB, a1 = a0 + RB < r ? a0 + RB : r;
        float *p = params + u->offset;
        const float *x = X + (int64_t)j * m * n;
        const float decay = u->decay ? wdecay : 1.0f;
        if (r > cc) {
            for (int64_t b = 0; b < cc; b++)
                for (int64_t a = a0; a < a1; a++) p[a * cc + b] = p[a * cc + b] * decay + neg * x[b * r + a];
        } else {
            zaya_muon_apply(p + a0 * cc, x + a0 * cc, (a1 - a0) * cc, decay, neg);
        }
    }
}

/* One batch: momentum and packing, Newton-Schulz, update. Returns the Newton-Schulz seconds. */
static double run_batch(const zaya_optim *o, zaya_ns_scratch *sc, const zaya_ns_group *gr, int first, int mats,
                        float *params, const float *grads, double lr, float gs) {
    pack_momentum(o, sc->x, gr->units + first, mats, gr->m, gr->n, grads, gs);
    const double t0 = zaya_now_s();
    newton_schulz(o, sc, mats, gr->m, gr->n);
    const double t = zaya_now_s() - t0;
    apply_update(o, sc->x, gr->units + first, mats, gr->m, gr->n, params, lr);
    return t;
}

/* Pool schedule: batches one after another, every GEMM and elementwise pass on the whole pool. */
static void step_pool(zaya_optim *o, float *params, const float *grads, double lr, float gs) {
    for (int g = 0; g < o->nns_groups; g++) {
        const zaya_ns_group *gr = &o->ns_groups[g];
        for (int j0 = 0; j0 < gr->count; j0 += gr->batch) {
            const int mats = gr->count - j0 < gr->batch ? gr->count - j0 : gr->batch;
            o->muon_ns_s += run_batch(o, &o->ns, gr, j0, mats, params, grads, lr, gs);
        }
    }
}

/* Per-thread schedule: each thread takes whole (smaller) batches, largest first, and runs them on its
 * own scratch with single-threaded work and serialised GEMMs: no barrier inside the step. */
static void step_threads(zaya_optim *o, float *params, const float *grads, double lr, float gs) {
    double ns = 0;
#pragma omp parallel num_threads(o->nns_slots) reduction(+ : ns)
    {
        zaya_ns_scratch *sc = &o->ns_slots[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < o->nns_tasks; t++) {
            const zaya_ns_task *k = &o->ns_tasks[t];
            ns += run_batch(o, sc, &o->ns_groups[k->group], k->first, k->mats, params, grads, lr, gs);
        }
    }
    o->muon_ns_s = ns / o->nns_slots; /* thread-averaged: the Newton-Schulz work overlaps the rest */
}

/* The schedule of this step: forced by the config, or (ZAYA_MUON_SCHEDULE_AUTO) the one measured faster.
 * Both give the same bits, so the choice only moves time: steps 1 and 2 create each schedule's
 * primitives, 3 and 4 time them, and every 16th step after that re-times the other one. */
static int pick_schedule(const zaya_optim *o) {
    if (o->nns_slots == 0) return ZAYA_MUON_SCHEDULE_POOL;
    if (o->cfg.muon_schedule != ZAYA_MUON_SCHEDULE_AUTO) return o->cfg.muon_schedule;
    const int64_t s = o->muon_steps; /* already counts this step */
    if (s <= 4) return s % 2 ? ZAYA_MUON_SCHEDULE_POOL : ZAYA_MUON_SCHEDULE_THREADS;
    const int best = o->muon_sched_s[0] <= o->muon_sched_s[1] ? ZAYA_MUON_SCHEDULE_POOL : ZAYA_MUON_SCHEDULE_THREADS;
    if (s % 16 == 0) return best == ZAYA_MUON_SCHEDULE_POOL ? ZAYA_MUON_SCHEDULE_THREADS : ZAYA_MUON_SCHEDULE_POOL;
    return best;
}

void zaya_optim_step_muon(zaya_optim *o, float *params, const float *grads, double lr, double grad_scale) {
    o->muon_steps++;
    o->muon_ns_s = 0;
    if (o->nns_groups == 0) return;
    const double mlr = lr * o->cfg.muon_lr_scale;
    const float gs = (float)grad_scale;
    const int sched = pick_schedule(o);
    const double t0 = zaya_now_s();
    if (sched == ZAYA_MUON_SCHEDULE_THREADS) step_threads(o, params, grads, mlr, gs);
    else step_pool(o, params, grads, mlr, gs);
    o->muon_sched_s[sched == ZAYA_MUON_SCHEDULE_THREADS] = zaya_now_s() - t0;
    o->muon_last_schedule = sched;
}
