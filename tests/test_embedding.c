/* Embedding lookup and race-free scatter-add backward with repeated ids. */
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "zaya/kernels.h"

typedef struct {
    float *table, *y, *r;
    const int32_t *ids;
    int64_t n, d;
} ctx_t;

static double loss(void *p) {
    ctx_t *c = p;
    zaya_embedding_forward(c->y, c->table, c->ids, c->n, c->d);
    return th_dot(c->y, c->r, c->n * c->d);
}

static void run(int64_t n, int64_t d, int64_t vocab, int all_same, uint64_t seed) {
    char label[80];
    snprintf(label, sizeof label, "embedding n=%lld d=%lld vocab=%lld same=%d", (long long)n, (long long)d,
             (long long)vocab, all_same);
    float *table = th_alloc(vocab * d), *y = th_alloc(n * d), *r = th_alloc(n * d), *dt = th_alloc(vocab * d),
          *dt0 = th_alloc(vocab * d), *g = th_alloc(vocab * d);
    int32_t *ids = malloc((size_t)n * sizeof(int32_t));
    double *ref = th_alloc_d(vocab * d);
    /* Few distinct ids so almost every id repeats. */
    for (int64_t i = 0; i < n; i++) ids[i] = all_same ? (int32_t)(vocab - 1) : (int32_t)(zaya_rng_u32_at(seed, 5, (uint64_t)i) % (uint64_t)vocab);
    th_fill(table, vocab * d, seed, 1, -1, 1);
    th_fill(r, n * d, seed, 2, -1, 1);
    th_fill(dt0, vocab * d, seed, 3, -1, 1);
    memcpy(dt, dt0, (size_t)(vocab * d) * sizeof(float));

    zaya_embedding_forward(y, table, ids, n, d);
    int exact = 1;
    for (int64_t i = 0; i < n; i++) exact &= memcmp(y + i * d, table + (int64_t)ids[i] * d, (size_t)d * 4) == 0;
    CHECK(exact, "%s: forward copies rows", label);

    zaya_embedding_backward(dt, r, ids, n, d, vocab);
    for (int64_t i = 0; i < vocab * d; i++) ref[i] = dt0[i];
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < d; c++) ref[(int64_t)ids[i] * d + c] += r[i * d + c];
    CHECK_ERR(label, th_rel_err(dt, ref, vocab * d, 1e-6), 2e-6);

    for (int64_t i = 0; i < vocab * d; i++) g[i] = dt[i] - dt0[i];
    ctx_t c = {table, y, r, ids, n, d};
    kc_fd_check(label, loss, &c, table, vocab * d, g, 16, 1e-2, 1e-3, seed);
    free(table), free(y), free(r), free(dt), free(dt0), free(g), free(ids), free(ref);
}

int main(void) {
    run(1, 1, 1, 0, 1);
    run(3, 17, 5, 0, 2);
    run(17, 3, 4, 0, 3);
    run(129, 129, 7, 0, 4);
    run(300, 129, 37, 0, 5); /* parallel path */
    run(300, 130, 37, 1, 6); /* every token the same id */
    run(64, 2048, 11, 0, 7);
    return th_finish("test_embedding");
}
