/* STREAM kernels (copy, scale, add, triad) by STREAM's rules, plus read-only and write-only kernels.
 * Arrays are first touched by the same static schedule that later reads them, so on NUMA machines
 * each thread's pages are local. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/bench_mem.h"
#include "zaya/timer.h"

static const char *g_kernel_names[ZAYA_MEM_KERNELS] = {"copy", "scale", "add", "triad", "read", "write"};
static const int g_words[ZAYA_MEM_KERNELS] = {2, 2, 3, 3, 1, 1};

const char *zaya_mem_kernel_name(zaya_mem_kernel k) { return (k >= 0 && k < ZAYA_MEM_KERNELS) ? g_kernel_names[k] : "?"; }
int zaya_mem_kernel_words(zaya_mem_kernel k) { return (k >= 0 && k < ZAYA_MEM_KERNELS) ? g_words[k] : 0; }

static int64_t parse_cache_size(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v <= 0) return 0;
    if (*end == 'K') v <<= 10;
    else if (*end == 'M') v <<= 20;
    else if (*end == 'G') v <<= 30;
    return v;
}

static int read_line(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    if (ok) buf[strcspn(buf, "\n")] = 0;
    return ok;
}

/* The highest cache level of cpu0 gives the LLC size; it is counted once per distinct instance
 * (shared_cpu_list) across all CPUs, because STREAM's rule is about all caches in use. */
int64_t zaya_mem_llc_bytes(void) {
    int best_level = 0;
    int64_t best_size = 0;
    char path[256], buf[256];
    for (int idx = 0; idx < 16; idx++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
        if (!read_line(path, buf, sizeof buf)) break;
        int level = atoi(buf);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
        if (read_line(path, buf, sizeof buf) && !strcmp(buf, "Instruction")) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        if (!read_line(path, buf, sizeof buf)) continue;
        if (level <= best_level) continue;
        best_level = level;
        /* Count the distinct instances of this cache index over all CPUs. */
        char seen[64][256];
        int nseen = 0;
        int64_t total = 0, size = parse_cache_size(buf);
        for (int cpu = 0; cpu < 4096; cpu++) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, idx);
            if (!read_line(path, buf, sizeof buf)) {
                if (cpu > 0) break;
                total = size;
                break;
            }
            int dup = 0;
            for (int s = 0; s < nseen; s++) dup |= !strcmp(seen[s], buf);
            if (dup) continue;
            if (nseen < 64) snprintf(seen[nseen++], sizeof seen[0], "%s", buf);
            total += size;
        }
        best_size = total;
    }
    return best_size;
}

int64_t zaya_mem_stream_elems(void) {
    int64_t llc = zaya_mem_llc_bytes();
    int64_t n = 4 * llc / 8;
    return n > 10000000 ? n : 10000000;
}

/* Sum of a[lo, hi) with 32 independent partial sums: one running sum is bound by the add latency
 * (about 16 B/cycle), far below cache bandwidth; 32 lanes keep four vector adds in flight. */
static double sum_block(const double *a, int64_t lo, int64_t hi) {
    double acc[32] = {0};
    int64_t j = lo;
    for (; j + 32 <= hi; j += 32)
        for (int k = 0; k < 32; k++) acc[k] += a[j + k];
    double s = 0;
    for (; j < hi; j++) s += a[j];
    for (int k = 0; k < 32; k++) s += acc[k];
    return s;
}

/* Static split of [0, n) over the team, in 8-element (cache-line) units. */
static void chunk(int64_t n, int64_t *lo, int64_t *hi) {
    int tid = omp_get_thread_num(), T = omp_get_num_threads();
    int64_t per = (n / T + 7) & ~(int64_t)7;
    *lo = per * tid < n ? per * tid : n;
    *hi = *lo + per < n ? *lo + per : n;
}

/* STREAM's scalar recurrence: what every element of a, b, c must hold after ntimes rounds. */
static void expected_values(int ntimes, double scalar, double *aj, double *bj, double *cj) {
    double a = 2.0, b = 2.0, c = 0.0; /* a = 1 doubled once before timing, as STREAM does */
    for (int k = 0; k < ntimes; k++) {
        c = a;
        b = scalar * c;
        c = a + b;
        a = b + scalar * c;
    }
    *aj = a;
    *bj = b;
    *cj = c;
}

static double avg_rel_err(const double *x, int64_t n, double want, int nt) {
    double sum = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : sum)
    for (int64_t j = 0; j < n; j++) sum += fabs(x[j] - want);
    return sum / (double)n / fabs(want);
}

zaya_status zaya_bench_stream(int threads, int64_t n, int ntimes, zaya_stream_result *out) {
    memset(out, 0, sizeof *out);
    if (ntimes < 2) return zaya_error_set(ZAYA_EINVAL, "STREAM needs at least 2 repetitions (got %d)", ntimes);
    if (n < 1) return zaya_error_set(ZAYA_EINVAL, "STREAM array size must be positive (got %lld)", (long long)n);
    int nt = threads > 0 ? threads : omp_get_num_procs();
    double *a = zaya_malloc((size_t)n * sizeof(double));
    double *b = zaya_malloc((size_t)n * sizeof(double));
    double *c = zaya_malloc((size_t)n * sizeof(double));
    if (!a || !b || !c) {
        zaya_free(a);
        zaya_free(b);
        zaya_free(c);
        return zaya_error_set(ZAYA_ENOMEM, "STREAM: cannot allocate 3 arrays of %lld doubles (%.1f MiB each)",
                              (long long)n, (double)n * 8 / (1 << 20));
    }
    const double scalar = 3.0;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t j = 0; j < n; j++) a[j] = 2.0 * a[j];

    double times[ZAYA_MEM_KERNELS][64];
    int nt_rec = ntimes < 64 ? ntimes : 64;
    for (int k = 0; k < ntimes; k++) {
        double t[5];
        t[0] = zaya_now_s();
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t j = 0; j < n; j++) c[j] = a[j];
        t[1] = zaya_now_s();
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t j = 0; j < n; j++) b[j] = scalar * c[j];
        t[2] = zaya_now_s();
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t j = 0; j < n; j++) c[j] = a[j] + b[j];
        t[3] = zaya_now_s();
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t j = 0; j < n; j++) a[j] = b[j] + scalar * c[j];
        t[4] = zaya_now_s();
        if (k < nt_rec)
            for (int i = 0; i < 4; i++) times[i][k] = t[i + 1] - t[i];
    }
    double aj, bj, cj;
    expected_values(ntimes, scalar, &aj, &bj, &cj);
    double ea = avg_rel_err(a, n, aj, nt), eb = avg_rel_err(b, n, bj, nt), ec = avg_rel_err(c, n, cj, nt);
    const double eps = 1e-13; /* STREAM's epsilon for 8-byte elements */
    out->max_rel_err = fmax(ea, fmax(eb, ec));
    out->validated = ea <= eps && eb <= eps && ec <= eps;

    /* Read-only and write-only kernels, on arrays whose contents are now known. */
    volatile double sink = 0;
    double read_err = 0;
    for (int k = 0; k < ntimes; k++) {
        double s = 0;
        double t0 = zaya_now_s();
#pragma omp parallel num_threads(nt) reduction(+ : s)
        {
            int64_t lo, hi;
            chunk(n, &lo, &hi);
            s += sum_block(a, lo, hi);
        }
        double t1 = zaya_now_s();
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t j = 0; j < n; j++) c[j] = scalar;
        double t2 = zaya_now_s();
        sink += s;
        read_err = fmax(read_err, fabs(s - (double)n * aj) / fabs((double)n * aj));
        if (k < nt_rec) {
            times[ZAYA_MEM_READ][k] = t1 - t0;
            times[ZAYA_MEM_WRITE][k] = t2 - t1;
        }
    }
    (void)sink;
    double write_err = avg_rel_err(c, n, scalar, nt);
    if (read_err > 1e-9 || write_err > eps) out->validated = 0;
    out->max_rel_err = fmax(out->max_rel_err, write_err);
    out->read_rel_err = read_err;

    out->threads = nt;
    out->elems = n;
    out->ntimes = ntimes;
    for (int kern = 0; kern < ZAYA_MEM_KERNELS; kern++) {
        double mn = 1e300, mx = 0, sum = 0;
        for (int k = 1; k < nt_rec; k++) { /* the first repetition is discarded, as in STREAM */
            mn = fmin(mn, times[kern][k]);
            mx = fmax(mx, times[kern][k]);
            sum += times[kern][k];
        }
        out->min_s[kern] = mn;
        out->max_s[kern] = mx;
        out->avg_s[kern] = sum / (nt_rec - 1);
        out->best_GBps[kern] = (double)g_words[kern] * 8.0 * (double)n / mn / 1e9;
    }
    zaya_free(a);
    zaya_free(b);
    zaya_free(c);
    if (!out->validated)
        return zaya_error_set(ZAYA_ENUMERIC,
                              "STREAM validation failed: avg relative errors a %.3e, b %.3e, c %.3e, read %.3e, write "
                              "%.3e (limit %.0e)",
                              ea, eb, ec, read_err, write_err, eps);
    return ZAYA_OK;
}

double zaya_bench_stream_triad_gbps(int threads) {
    zaya_stream_result r;
    if (zaya_bench_stream(threads, zaya_mem_stream_elems(), 10, &r) != ZAYA_OK) return -1.0;
    return r.best_GBps[ZAYA_MEM_TRIAD];
}

zaya_status zaya_mem_triad_init(zaya_mem_triad *t, int64_t n) {
    memset(t, 0, sizeof *t);
    if (n < 1) return zaya_error_set(ZAYA_EINVAL, "triad arrays need at least one element (got %lld)", (long long)n);
    t->n = n;
    t->a = zaya_malloc((size_t)n * sizeof(double));
    t->b = zaya_malloc((size_t)n * sizeof(double));
    t->c = zaya_malloc((size_t)n * sizeof(double));
    if (!t->a || !t->b || !t->c) {
        zaya_mem_triad_free(t);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate 3 x %.1f MiB triad arrays", (double)n * 8.0 / 1048576.0);
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) t->a[i] = 1.0, t->b[i] = 2.0, t->c[i] = 0.5;
    return ZAYA_OK;
}

void zaya_mem_triad_free(zaya_mem_triad *t) {
    zaya_free(t->a);
    zaya_free(t->b);
    zaya_free(t->c);
    memset(t, 0, sizeof *t);
}

void zaya_mem_triad_pass(zaya_mem_triad *t) {
    double *restrict a = t->a;
    const double *restrict b = t->b, *restrict c = t->c;
    const int64_t n = t->n;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
    __asm__ __volatile__("" ::: "memory");
}

double zaya_mem_triad_gbps(zaya_mem_triad *t, int reps) {
    double best = 1e30;
    for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
        double s = zaya_now_s();
        zaya_mem_triad_pass(t);
        s = zaya_now_s() - s;
        best = s < best ? s : best;
    }
    return 3.0 * 8.0 * (double)t->n / best / 1e9;
}

/* One timed pass: every thread repeats its own static chunk `reps` times inside one parallel
 * region, so small working sets stay in that core's caches and fork/join is paid once. */
static double ws_pass(int nt, zaya_mem_kernel kern, double *a, const double *b, const double *c, int64_t n, int64_t reps) {
    double t0 = zaya_now_s();
    double total = 0;
#pragma omp parallel num_threads(nt) reduction(+ : total)
    {
        int64_t lo, hi;
        chunk(n, &lo, &hi);
        double s = 0;
        for (int64_t r = 0; r < reps; r++) {
            if (kern == ZAYA_MEM_TRIAD) {
                for (int64_t j = lo; j < hi; j++) a[j] = b[j] + 3.0 * c[j];
            } else {
                s += sum_block(a, lo, hi);
            }
            __asm__ __volatile__("" ::: "memory"); /* keep every repetition */
        }
        total += s;
    }
    double t1 = zaya_now_s();
    volatile double sink = total;
    (void)sink;
    return t1 - t0;
}

zaya_status zaya_bench_mem_ws(int threads, zaya_mem_kernel kern, const int64_t *ws, int count, double *gbps) {
    if (kern != ZAYA_MEM_TRIAD && kern != ZAYA_MEM_READ)
        return zaya_error_set(ZAYA_EINVAL, "working-set sweep supports triad and read, not %s", zaya_mem_kernel_name(kern));
    int nt = threads > 0 ? threads : omp_get_num_procs();
    int arrays = kern == ZAYA_MEM_TRIAD ? 3 : 1;
    int64_t max_ws = 0;
    for (int i = 0; i < count; i++) max_ws = ws[i] > max_ws ? ws[i] : max_ws;
    int64_t max_n = max_ws / 8 / arrays + 8;
    double *a = zaya_malloc((size_t)max_n * 8), *b = arrays > 1 ? zaya_malloc((size_t)max_n * 8) : NULL,
           *c = arrays > 1 ? zaya_malloc((size_t)max_n * 8) : NULL;
    if (!a || (arrays > 1 && (!b || !c))) {
        zaya_free(a);
        zaya_free(b);
        zaya_free(c);
        return zaya_error_set(ZAYA_ENOMEM, "working-set sweep: cannot allocate %lld bytes", (long long)max_ws);
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t j = 0; j < max_n; j++) {
        a[j] = 1.0;
        if (b) b[j] = 2.0, c[j] = 0.5;
    }
    for (int i = 0; i < count; i++) {
        int64_t n = ws[i] / 8 / arrays;
        if (n < 8 * nt) n = 8 * nt;
        int64_t bytes = n * 8 * arrays;
        int64_t reps = ((int64_t)256 << 20) / bytes;
        if (reps < 1) reps = 1;
        double best = 1e300;
        for (int m = 0; m < 6; m++) { /* the first pass warms the caches and is discarded */
            double t = ws_pass(nt, kern, a, b, c, n, reps);
            if (m > 0) best = fmin(best, t);
        }
        gbps[i] = (double)bytes * (double)reps / best / 1e9;
    }
    zaya_free(a);
    zaya_free(b);
    zaya_free(c);
    return ZAYA_OK;
}
