/* Warmup + repeated samples with an inner count calibrated so each sample spans min_sample_s. */
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/bench.h"
#include "zaya/timer.h"

static zaya_bench_opts resolve_opts(const zaya_bench_opts *o) {
    zaya_bench_opts r = {2, 10, 1e-3, 0};
    if (o) {
        r.thread_cpu = o->thread_cpu;
        if (o->warmup >= 0) r.warmup = o->warmup;
        if (o->reps > 0) r.reps = o->reps;
        if (o->min_sample_s > 0) r.min_sample_s = o->min_sample_s;
    }
    return r;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static _Thread_local int tl_thread_cpu;

static uint64_t clock_ns(void) {
    if (!tl_thread_cpu) return zaya_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One run of `inner` calls; returns seconds per call in *t. */
static zaya_status sample(zaya_bench_fn fn, void *ctx, int64_t inner, double *t) {
    uint64_t t0 = clock_ns();
    for (int64_t i = 0; i < inner; i++) ZAYA_TRY(fn(ctx));
    *t = (double)(clock_ns() - t0) * 1e-9 / (double)inner;
    return ZAYA_OK;
}

/* Warmup, then pick `inner` so that a sample spans min_sample_s. The fastest of the warmup calls
 * (at least two unless warmup is 0) sets it: one descheduled call on a shared machine must not shrink the count. */
static zaya_status calibrate(zaya_bench_fn fn, void *ctx, const zaya_bench_opts *o, int64_t *inner) {
    double t = 0, best = 1e30;
    int probes = o->warmup > 2 ? o->warmup : o->warmup == 0 ? 1 : 2;
    for (int i = 0; i < probes; i++) {
        ZAYA_TRY(sample(fn, ctx, 1, &t));
        if (t < best) best = t;
    }
    double n = o->min_sample_s / (best > 1e-9 ? best : 1e-9);
    *inner = n < 1 ? 1 : n > (1 << 20) ? (1 << 20) : (int64_t)n + 1;
    if (*inner > 1) ZAYA_TRY(sample(fn, ctx, *inner, &t)); /* warms whatever the batched loop touches */
    return ZAYA_OK;
}

static void summarize(double *t, int reps, int64_t inner, zaya_bench_stats *out) {
    double sum = 0;
    for (int i = 0; i < reps; i++) sum += t[i];
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    out->best_s = t[0];
    out->median_s = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    out->mean_s = sum / reps;
    out->reps = reps;
    out->inner = inner;
}

zaya_status zaya_bench_time_pair(zaya_bench_fn fa, void *ca, zaya_bench_fn fb, void *cb, const zaya_bench_opts *opts,
                                 zaya_bench_stats *sa, zaya_bench_stats *sb) {
    zaya_bench_opts o = resolve_opts(opts);
    tl_thread_cpu = o.thread_cpu;
    int64_t na = 0, nb = 0;
    ZAYA_TRY(calibrate(fa, ca, &o, &na));
    if (fb) ZAYA_TRY(calibrate(fb, cb, &o, &nb));
    double *ta = zaya_calloc((size_t)o.reps * 2, sizeof(double));
    if (!ta) return zaya_error_set(ZAYA_ENOMEM, "bench: cannot allocate %d samples", o.reps);
    double *tb = ta + o.reps;
    zaya_status s = ZAYA_OK;
    for (int r = 0; r < o.reps && s == ZAYA_OK; r++) {
        /* Alternate which side goes first so neither always runs on a cache the other warmed. */
        if (fb && (r & 1)) s = sample(fb, cb, nb, &tb[r]);
        if (s == ZAYA_OK) s = sample(fa, ca, na, &ta[r]);
        if (s == ZAYA_OK && fb && !(r & 1)) s = sample(fb, cb, nb, &tb[r]);
    }
    if (s == ZAYA_OK) {
        summarize(ta, o.reps, na, sa);
        if (fb) summarize(tb, o.reps, nb, sb);
    }
    zaya_free(ta);
    return s;
}

zaya_status zaya_bench_time(zaya_bench_fn fn, void *ctx, const zaya_bench_opts *opts, zaya_bench_stats *out) {
    return zaya_bench_time_pair(fn, ctx, NULL, NULL, opts, out, NULL);
}
