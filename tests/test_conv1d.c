/* Causal depthwise and grouped conv1d (PyTorch Conv1d semantics) against a double reference built
 * on an explicitly zero-padded input, finite differences, and the CCA depthwise -> grouped chain. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "zaya/bf16.h"
#include "zaya/kernels.h"

/* groups == 0 selects the depthwise kernel (w [C, k]); otherwise grouped (w [C, C/groups, k]). */
typedef struct {
    float *x, *w, *bias, *y, *r;
    int64_t B, t_in, C, groups, k, pad, t_out;
    float *ws; /* grouped: the GEMM path's workspace, NULL for the tiled kernels */
    int bf16;  /* grouped on the workspace with bf16 operands */
} ctx_t;

/* the bf16 path's operands: rounded to bf16 values */
static double op(const ctx_t *c, float x) { return c->bf16 ? (double)zaya_bf16_to_f32(zaya_f32_to_bf16(x)) : (double)x; }

static void fwd(ctx_t *c) {
    if (c->groups == 0)
        zaya_conv1d_depthwise_forward(c->y, c->x, c->w, c->bias, c->B, c->t_in, c->C, c->k, c->pad);
    else
        zaya_conv1d_grouped_forward_dt(c->bf16 ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32, c->y, c->x, c->w, c->bias, c->B,
                                       c->t_in, c->C, c->groups, c->k, c->pad, c->ws);
}

static double loss(void *p) {
    ctx_t *c = p;
    fwd(c);
    return th_dot(c->y, c->r, c->B * c->t_out * c->C);
}

/* y[b,t,o] = bias[o] + sum_{j,i} w[o,i,j] xpad[b,t+j,g*cg+i]; depthwise is cg = 1 with input o. */
static void ref_forward(double *y, const ctx_t *c) {
    int64_t B = c->B, T = c->t_in, C = c->C, k = c->k, pad = c->pad, tp = T + pad;
    int64_t cg = c->groups ? C / c->groups : 1;
    double *xp = th_alloc_d(B * tp * C);
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < T; s++)
            for (int64_t ch = 0; ch < C; ch++) xp[(b * tp + s + pad) * C + ch] = op(c, c->x[(b * T + s) * C + ch]);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < c->t_out; t++)
            for (int64_t o = 0; o < C; o++) {
                double acc = c->bias ? c->bias[o] : 0.0;
                int64_t in0 = c->groups ? (o / cg) * cg : o;
                for (int64_t i = 0; i < cg; i++)
                    for (int64_t j = 0; j < k; j++) acc += op(c, c->w[(o * cg + i) * k + j]) * xp[(b * tp + t + j) * C + in0 + i];
                y[(b * c->t_out + t) * C + o] = acc;
            }
    free(xp);
}

/* Backward reference by linearity: the gradient of sum(y * r) w.r.t. each input is the sum over
 * outputs of r times the coefficient the forward formula gives it. */
static void ref_backward(double *dx, double *dw, double *db, const ctx_t *c) {
    int64_t B = c->B, T = c->t_in, C = c->C, k = c->k, pad = c->pad;
    int64_t cg = c->groups ? C / c->groups : 1;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < c->t_out; t++)
            for (int64_t o = 0; o < C; o++) {
                double g = op(c, c->r[(b * c->t_out + t) * C + o]);
                db[o] += c->r[(b * c->t_out + t) * C + o];
                int64_t in0 = c->groups ? (o / cg) * cg : o;
                for (int64_t i = 0; i < cg; i++)
                    for (int64_t j = 0; j < k; j++) {
                        int64_t s = t + j - pad;
                        if (s < 0 || s >= T) continue;
                        dx[(b * T + s) * C + in0 + i] += g * op(c, c->w[(o * cg + i) * k + j]);
                        dw[(o * cg + i) * k + j] += g * op(c, c->x[(b * T + s) * C + in0 + i]);
                    }
            }
}

static void run_path(int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad, int with_bias,
                     uint64_t seed, int gemm) {
    char label[128];
    snprintf(label, sizeof label, "conv %s%s B=%lld T=%lld C=%lld groups=%lld k=%lld pad=%lld bias=%d",
             groups ? "grouped" : "depthwise", gemm == 2 ? " (gemm, bf16)" : gemm ? " (gemm)" : "", (long long)B, (long long)t_in, (long long)C,
             (long long)groups, (long long)k, (long long)pad, with_bias);
    int64_t t_out = t_in + pad - k + 1, cg = groups ? C / groups : 1;
    int64_t nx = B * t_in * C, ny = B * t_out * C, nw = C * cg * k;
    ctx_t c = {th_alloc(nx), th_alloc(nw), with_bias ? th_alloc(C) : NULL, th_alloc(ny), th_alloc(ny),
               B, t_in, C, groups, k, pad, t_out, NULL, gemm == 2};
    if (gemm) { /* NaN-filled: the kernel must write before it reads */
        const int64_t nws = zaya_conv1d_grouped_ws_floats(B, t_in, C, groups, k, pad);
        c.ws = th_alloc(nws);
        for (int64_t i = 0; i < nws; i++) c.ws[i] = NAN;
    }
    th_fill(c.x, nx, seed, 1, -1.0f, 1.0f);
    th_fill(c.w, nw, seed, 2, -1.0f, 1.0f);
    if (c.bias) th_fill(c.bias, C, seed, 3, -1.0f, 1.0f);
    th_fill(c.r, ny, seed, 4, -1.0f, 1.0f);

    fwd(&c);
    double *yref = th_alloc_d(ny);
    ref_forward(yref, &c);
    CHECK_ERR(label, th_rel_err(c.y, yref, ny, 1e-6), 1e-5);

    float *dx = th_alloc(nx), *dw = th_alloc(nw), *db = th_alloc(C), *dw0 = th_alloc(nw), *db0 = th_alloc(C);
    th_fill(dw0, nw, seed, 5, -1.0f, 1.0f);
    th_fill(db0, C, seed, 6, -1.0f, 1.0f);
    memcpy(dw, dw0, (size_t)nw * sizeof(float));
    memcpy(db, db0, (size_t)C * sizeof(float));
    for (int64_t i = 0; i < nx; i++) dx[i] = NAN; /* dx is written, not accumulated */
    if (groups == 0)
        zaya_conv1d_depthwise_backward(dx, dw, with_bias ? db : NULL, c.r, c.x, c.w, B, t_in, C, k, pad);
    else
        zaya_conv1d_grouped_backward_dt(c.bf16 ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32, dx, dw, with_bias ? db : NULL, c.r, c.x,
                                        c.w, B, t_in, C, groups, k, pad, c.ws);
    double *dxref = th_alloc_d(nx), *dwref = th_alloc_d(nw), *dbref = th_alloc_d(C);
    for (int64_t i = 0; i < nw; i++) dwref[i] = dw0[i];
    for (int64_t i = 0; i < C; i++) dbref[i] = db0[i];
    ref_backward(dxref, dwref, dbref, &c);
    CHECK_ERR(label, th_rel_err(dx, dxref, nx, 1e-6), 1e-5);
    CHECK_ERR(label, th_rel_err(dw, dwref, nw, 1e-6), 1e-5);
    if (with_bias)
        CHECK_ERR(label, th_rel_err(db, dbref, C, 1e-6), 1e-5);
    else
        CHECK(memcmp(db, db0, (size_t)C * sizeof(float)) == 0, "%s: dbias NULL leaves buffer alone", label);

    /* Finite differences (the loss is linear in each input, so h can be large); not of the bf16 path,
     * whose rounded operands make the loss a step function at this scale. */
    float *gw = th_alloc(nw), *gb = th_alloc(C);
    if (c.bf16) goto done;
    for (int64_t i = 0; i < nw; i++) gw[i] = dw[i] - dw0[i];
    for (int64_t i = 0; i < C; i++) gb[i] = db[i] - db0[i];
    kc_fd_check(label, loss, &c, c.x, nx, dx, 16, 1e-2, 1e-3, seed);
    kc_fd_check(label, loss, &c, c.w, nw, gw, 16, 1e-2, 1e-3, seed + 1);
    if (c.bias) kc_fd_check(label, loss, &c, c.bias, C, gb, 8, 1e-2, 1e-3, seed + 2);
done:

    free(c.x), free(c.w), free(c.bias), free(c.y), free(c.r), free(dx), free(dw), free(db), free(dw0), free(db0);
    free(gw), free(gb), free(yref), free(dxref), free(dwref), free(dbref), free(c.ws);
}

/* Depthwise once; grouped through the tiled kernels and the GEMM path, in f32 and with bf16 operands. */
static void run(int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad, int with_bias, uint64_t seed) {
    run_path(B, t_in, C, groups, k, pad, with_bias, seed, 0);
    if (groups) run_path(B, t_in, C, groups, k, pad, with_bias, seed, 1);
    if (groups) run_path(B, t_in, C, groups, k, pad, with_bias, seed, 2);
}

/* CCA: depthwise k=2 with pad 2 gives T+1 rows whose first row is the bias alone, then grouped k=2
 * pad 0 brings it back to T rows; output t depends on inputs t-2..t only. */
static void test_cca_chain(void) {
    const int64_t B = 2, T = 9, heads = 3, hd = 8, C = heads * hd, k = 2;
    float *x = th_alloc(B * T * C), *w0 = th_alloc(C * k), *b0 = th_alloc(C), *w1 = th_alloc(C * hd * k),
          *b1 = th_alloc(C), *y1 = th_alloc(B * (T + 1) * C), *y2 = th_alloc(B * T * C);
    th_fill(x, B * T * C, 7, 1, -1, 1);
    th_fill(w0, C * k, 7, 2, -1, 1);
    th_fill(b0, C, 7, 3, -1, 1);
    th_fill(w1, C * hd * k, 7, 4, -1, 1);
    th_fill(b1, C, 7, 5, -1, 1);
    zaya_conv1d_depthwise_forward(y1, x, w0, b0, B, T, C, k, 2);
    zaya_conv1d_grouped_forward(y2, y1, w1, b1, B, T + 1, C, heads, k, 0);
    CHECK(memcmp(y1, b0, (size_t)C * sizeof(float)) == 0, "cca: first depthwise row equals the bias");
    /* Causality and receptive field: perturbing input row 4 changes outputs 4..6 and nothing else. */
    float *y2b = th_alloc(B * T * C);
    x[4 * C + 5] += 1.0f;
    zaya_conv1d_depthwise_forward(y1, x, w0, b0, B, T, C, k, 2);
    zaya_conv1d_grouped_forward(y2b, y1, w1, b1, B, T + 1, C, heads, k, 0);
    int causal = 1, changed = 0;
    for (int64_t t = 0; t < T; t++)
        for (int64_t ch = 0; ch < C; ch++) {
            int diff = y2[t * C + ch] != y2b[t * C + ch];
            if (t < 4 || t > 6) causal &= !diff;
            else changed |= diff;
        }
    CHECK(causal && changed, "cca: input row 4 influences exactly outputs 4..6 (causal=%d changed=%d)", causal, changed);
    free(x), free(w0), free(b0), free(w1), free(b1), free(y1), free(y2), free(y2b);
}

/* Weight gradients are reduced per owned channel block in row order: thread-count invariant. */
static void test_thread_invariance(void) {
    const int64_t B = 2, T = 40, C = 320, groups = 10, cg = C / groups, k = 2;
    float *x = th_alloc(B * T * C), *dy = th_alloc(B * (T + 1) * C), *w = th_alloc(C * cg * k);
    float *dx = th_alloc(B * T * C), *dw[2] = {th_alloc(C * cg * k), th_alloc(C * cg * k)}, *db[2] = {th_alloc(C), th_alloc(C)};
    float *dwd[2] = {th_alloc(C * k), th_alloc(C * k)}, *dbd[2] = {th_alloc(C), th_alloc(C)};
    th_fill(x, B * T * C, 8, 1, -1, 1);
    th_fill(dy, B * (T + 1) * C, 8, 2, -1, 1);
    th_fill(w, C * cg * k, 8, 3, -1, 1);
    int saved = omp_get_max_threads();
    for (int v = 0; v < 2; v++) {
        omp_set_num_threads(v ? 3 : 1);
        zaya_conv1d_grouped_backward(dx, dw[v], db[v], dy, x, w, B, T, C, groups, k, 2);
        zaya_conv1d_depthwise_backward(dx, dwd[v], dbd[v], dy, x, w, B, T, C, k, 2);
    }
    omp_set_num_threads(saved);
    CHECK(memcmp(dw[0], dw[1], (size_t)(C * cg * k) * 4) == 0 && memcmp(db[0], db[1], (size_t)C * 4) == 0,
          "grouped conv dw/dbias differ between 1 and 3 threads");
    CHECK(memcmp(dwd[0], dwd[1], (size_t)(C * k) * 4) == 0 && memcmp(dbd[0], dbd[1], (size_t)C * 4) == 0,
          "depthwise conv dw/dbias differ between 1 and 3 threads");
    /* the GEMM path: oneDNN's reductions, reported rather than required */
    float *ws = th_alloc(zaya_conv1d_grouped_ws_floats(B, T, C, groups, k, 2));
    for (int v = 0; v < 2; v++) {
        omp_set_num_threads(v ? 3 : 1);
        memset(dw[v], 0, (size_t)(C * cg * k) * 4);
        zaya_conv1d_grouped_backward_ws(dx, dw[v], db[v], dy, x, w, B, T, C, groups, k, 2, ws);
    }
    omp_set_num_threads(saved);
    printf("grouped conv (gemm) dw between 1 and 3 threads: %s\n",
           memcmp(dw[0], dw[1], (size_t)(C * cg * k) * 4) ? "differs in the last bits" : "identical");
    free(ws);
    free(x), free(dy), free(w), free(dx);
    for (int v = 0; v < 2; v++) free(dw[v]), free(db[v]), free(dwd[v]), free(dbd[v]);
}

int main(void) {
    test_thread_invariance();
    uint64_t seed = 1;
    const int64_t Cs[] = {1, 3, 17, 129};
    for (int64_t k = 1; k <= 3; k++)
        for (int p = 0; p < 2; p++) {
            int64_t pad = p ? 2 * (k - 1) : k - 1;
            for (size_t ci = 0; ci < 4; ci++) run(1 + (int64_t)ci % 3, 1 + 4 * (int64_t)ci, Cs[ci], 0, k, pad, 1, seed++);
            run(2, 5, 12, 1, k, pad, 1, seed++);   /* one group: dense over channels */
            run(3, 17, 12, 3, k, pad, 1, seed++);  /* cg = 4 */
            run(2, 6, 17, 17, k, pad, 1, seed++);  /* cg = 1 */
            run(1, 3, 40, 2, k, pad, 1, seed++);   /* cg = 20: output-channel blocks split inside a group */
        }
    run(2, 7, 5, 0, 2, 1, 0, seed++); /* bias NULL */
    run(2, 7, 6, 2, 2, 1, 0, seed++);
    run(2, 5, 600, 1, 3, 4, 1, seed++);  /* cg * k too big for one weight tile: chunked */
    run(1, 9, 300, 2, 2, 1, 1, seed++);
    run(2, 64, 1280, 0, 2, 2, 1, seed++); /* CCA shapes: parallel paths */
    run(1, 33, 1280, 10, 2, 0, 1, seed++);
    test_cca_chain();
    return th_finish("test_conv1d");
}
