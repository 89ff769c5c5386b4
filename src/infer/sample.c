/* Token sampling: greedy, temperature, top-k, top-p (nucleus). A draw is a pure function of
 * (seed, stream, counter) through Philox, so a seed reproduces a generation exactly. */
#include <math.h>
#include <stdlib.h>

#include "zaya/alloc.h"
#include "zaya/infer.h"

zaya_status zaya_sampler_init(zaya_sampler *s, const zaya_sampler_opts *o, int64_t vocab) {
    s->o = *o;
    s->vocab = vocab;
    s->prob = zaya_malloc((size_t)vocab * sizeof(float));
    s->order = zaya_malloc((size_t)vocab * sizeof(int32_t));
    if (!s->prob || !s->order) {
        zaya_sampler_free(s);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate sampler scratch for %lld tokens", (long long)vocab);
    }
    return ZAYA_OK;
}

void zaya_sampler_free(zaya_sampler *s) {
    zaya_free(s->prob);
    zaya_free(s->order);
    s->prob = NULL;
    s->order = NULL;
}

int32_t zaya_argmax(const float *x, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

/* Descending by value, ties by id, so the order (and the sample) is deterministic. */
static _Thread_local const float *g_sort_key; /* qsort has no context argument in C17 */
static int by_value_desc(const void *a, const void *b) {
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    float x = g_sort_key[i], y = g_sort_key[j];
    if (x != y) return x > y ? -1 : 1;
    return (i > j) - (i < j);
}

static int worse(const float *v, int32_t i, int32_t j) { return v[i] < v[j] || (v[i] == v[j] && i > j); }

/* Min-heap of the k best ids (the root is the worst kept). */
static void sift_down(int32_t *h, int64_t k, int64_t i, const float *v) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < k && worse(v, h[l], h[m])) m = l;
        if (r < k && worse(v, h[r], h[m])) m = r;
        if (m == i) return;
        int32_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static int64_t select_top_k(int32_t *out, const float *v, int64_t V, int64_t k) {
    for (int64_t i = 0; i < k; i++) out[i] = (int32_t)i;
    for (int64_t i = k / 2 - 1; i >= 0; i--) sift_down(out, k, i, v);
    for (int64_t i = k; i < V; i++)
        if (worse(v, out[0], (int32_t)i)) {
            out[0] = (int32_t)i;
            sift_down(out, k, 0, v);
        }
    return k;
}

int32_t zaya_sampler_sample(zaya_sampler *s, const float *logits, uint64_t stream, uint64_t counter) {
    const int64_t V = s->vocab;
    const zaya_sampler_opts *o = &s->o;
    if (o->temperature <= 0.0) return zaya_argmax(logits, V);
    const int top_p = o->top_p > 0.0 && o->top_p < 1.0;
    int64_t n = V;
    int sorted = 0;
    if (o->top_k > 0 && o->top_k < V) {
        n = select_top_k(s->order, logits, V, o->top_k);
    } else {
        for (int64_t i = 0; i < V; i++) s->order[i] = (int32_t)i;
    }
    if (top_p || n < V) { /* candidates in descending order: nucleus needs it, top-k gets determinism */
        g_sort_key = logits;
        qsort(s->order, (size_t)n, sizeof(int32_t), by_value_desc);
        sorted = 1;
    }
    /* softmax over the candidates at the temperature, in double */
    const double inv_t = 1.0 / o->temperature;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, (double)logits[s->order[i]]);
    for (int64_t i = 0; i < n; i++) {
        double p = exp(((double)logits[s->order[i]] - mx) * inv_t);
        s->prob[i] = (float)p;
        sum += p;
    }
    if (top_p && sorted) { /* smallest prefix whose mass reaches top_p (at least one token) */
        double c = 0.0;
        int64_t keep = n;
        for (int64_t i = 0; i < n; i++) {
            c += s->prob[i] / sum;
            if (c >= o->top_p) {
                keep = i + 1;
                break;
            }
        }
        double kept = 0.0;
        for (int64_t i = 0; i < keep; i++) kept += s->prob[i];
        n = keep;
        sum = kept;
    }
    const double u = (double)zaya_rng_uniform_at(o->seed, stream, counter) * sum;
    double c = 0.0;
    for (int64_t i = 0; i < n; i++) {
        c += s->prob[i];
        if (u < c) return s->order[i];
    }
    return s->order[n - 1]; /* u within rounding of the total */
}
