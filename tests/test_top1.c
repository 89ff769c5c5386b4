/* Top-1 selection with additive bias: ties, bias flipping the winner, unbiased gate, random rows, and
 * the counting variant. */
#include <stdlib.h>

#include "kernel_check.h"
#include "zaya/kernels.h"

int main(void) {
    int32_t idx[4];
    float gate[4];
    /* Ties resolve to the lowest index, with and without bias. */
    float tie[6] = {0.1f, 0.3f, 0.3f, 0.1f, 0.0f, 0.2f};
    zaya_top1_biased(idx, gate, tie, NULL, 1, 6);
    CHECK(idx[0] == 1 && gate[0] == 0.3f, "tie -> lowest index (got %d)", idx[0]);
    float flat[6] = {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f}, zb[6] = {0};
    zaya_top1_biased(idx, gate, flat, zb, 1, 6);
    CHECK(idx[0] == 0, "all equal -> 0 (got %d)", idx[0]);
    /* A bias flips the winner; the gate stays the unbiased probability of the chosen expert. */
    float p[3] = {0.5f, 0.3f, 0.2f}, b[3] = {0.0f, 0.25f, 0.0f};
    zaya_top1_biased(idx, gate, p, b, 1, 3);
    CHECK(idx[0] == 1 && gate[0] == 0.3f, "bias flips winner to 1 with gate 0.3 (got %d, %g)", idx[0], gate[0]);
    float skip_bias[3] = {0.0f, 0.0f, -1.0f}, ps[3] = {0.2f, 0.1f, 0.7f};
    zaya_top1_biased(idx, gate, ps, skip_bias, 1, 3);
    CHECK(idx[0] == 0 && gate[0] == 0.2f, "skip bias -1 suppresses class 2 (got %d)", idx[0]);
    float e1 = 0.9f;
    zaya_top1_biased(idx, gate, &e1, NULL, 1, 1);
    CHECK(idx[0] == 0 && gate[0] == 0.9f, "single expert");

    /* Random rows against a naive double argmax (large enough for the parallel path). */
    const int64_t n = 3000, e = 17;
    float *probs = th_alloc(n * e), *bias = th_alloc(e), *g = th_alloc(n);
    int32_t *id = malloc((size_t)n * sizeof(int32_t));
    th_fill(probs, n * e, 1, 1, 0.0f, 1.0f);
    th_fill(bias, e, 1, 2, -0.3f, 0.3f);
    zaya_top1_biased(id, g, probs, bias, n, e);
    int bad = 0;
    for (int64_t r = 0; r < n; r++) {
        int64_t best = 0;
        for (int64_t j = 1; j < e; j++)
            if ((float)(probs[r * e + j] + bias[j]) > (float)(probs[r * e + best] + bias[best])) best = j;
        bad += id[r] != best || g[r] != probs[r * e + best];
    }
    CHECK(bad == 0, "random rows: %d mismatches", bad);
    /* The counting variant selects exactly the same classes. */
    int64_t cnt[17], want[17] = {0};
    for (int64_t r = 0; r < n; r++) want[id[r]]++;
    zaya_top1_biased_count(cnt, probs, bias, n, e);
    int same = 1;
    for (int64_t j = 0; j < e; j++) same &= cnt[j] == want[j];
    CHECK(same, "zaya_top1_biased_count differs from the selection of zaya_top1_biased");
    free(probs), free(bias), free(g), free(id);
    return th_finish("test_top1");
}
