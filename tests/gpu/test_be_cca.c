/* The CUDA backend's CCA pieces and attention (src/gpu/be_cca.cu, be_attention.cu) against the CPU:
 * the kernels of kernels.h and attention.h where they are public, a double-precision reference here
 * for the model-private ones (qk mean skip, value shift, qk split/merge of src/model). Inputs are
 * random; outputs that an operation writes start as NaN on the device, so an element it forgets
 * fails; accumulated gradients start non-zero, so a write instead of += fails. Every operation runs
 * twice from the same inputs and must give identical bits (fixed-order reductions). Errors are
 * max |gpu - cpu| / max |cpu| per tensor: <= 1e-5 for the elementwise and convolution pieces, <= 1e-4
 * for attention (there max |cpu| counts as at least 0.1). Exits 77 (skipped) when no CUDA device is visible. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/attention.h"
#include "zaya/backend.h"
#include "zaya/gpu.h"
#include "zaya/kernels.h"

#define TOL_ELEM 1e-5
#define TOL_ATTN 1e-4

static zaya_backend *be;
static double worst_elem, worst_attn;

/* ---- device buffers ---- */

/* at least one float, so that empty tensors still have an address */
static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    zaya_status st = be->alloc(be, &p, bytes > sizeof(float) ? bytes : sizeof(float));
    if (st != ZAYA_OK) {
        fprintf(stderr, "alloc %zu bytes: %s\n", bytes, zaya_error_message());
        exit(1);
    }
    return p;
}

static void dev_put(void *d, const void *h, size_t bytes) {
    if (bytes == 0) return;
    zaya_status st = be->upload(be, d, h, bytes);
    CHECK(st == ZAYA_OK, "upload: %s", zaya_error_message());
}

static void *dev_from(const void *h, size_t bytes) {
    void *d = dev_alloc(bytes);
    dev_put(d, h, bytes);
    return d;
}

static float *dev_f(const float *h, int64_t n) { return dev_from(h, (size_t)n * sizeof(float)); }

/* A device buffer of n floats, every one NaN: what the operation does not write stays NaN. */
static float *dev_nan(int64_t n) {
    float *h = th_alloc(n);
    memset(h, 0xff, (size_t)n * sizeof(float));
    float *d = dev_f(h, n);
    free(h);
    return d;
}

static void fill_nan(float *d, int64_t n) {
    float *h = th_alloc(n);
    memset(h, 0xff, (size_t)n * sizeof(float));
    dev_put(d, h, (size_t)n * sizeof(float));
    free(h);
}

/* Downloads n floats into a new host array (the download waits for the operations and returns the
 * first pending error). */
static float *host_f(const float *d, int64_t n) {
    float *h = th_alloc(n);
    zaya_status st = n > 0 ? be->download(be, h, d, (size_t)n * sizeof(float)) : be->sync(be);
    CHECK(st == ZAYA_OK, "download: %s", zaya_error_message());
    return h;
}

static float *rnd(int64_t n, uint64_t seed, uint64_t stream, float lo, float hi) {
    float *x = th_alloc(n);
    th_fill(x, n, seed, stream, lo, hi);
    return x;
}

static float *dup_f(const float *x, int64_t n) {
    float *y = th_alloc(n);
    memcpy(y, x, (size_t)n * sizeof(float));
    return y;
}

/* Attention's errors are relative to at least ATTN_FLOOR: with T = 1 the gradients dq and dk are
 * pure rounding noise (P = 1, dP = delta), so max |cpu| says nothing about the scale. */
#define ATTN_FLOOR 0.1 /* below the smallest max |cpu| of T >= 77 (about 0.6) */

static void check_close(const char *what, const float *gpu, const float *cpu, int64_t n, double tol) {
    const int attn = tol >= TOL_ATTN;
    double e = th_rel_err_ff(gpu, cpu, n, attn ? ATTN_FLOOR : 1e-30);
    double *worst = attn ? &worst_attn : &worst_elem;
    if (e > *worst || e != e) *worst = e;
    CHECK(e <= tol, "%s: rel err %.3e > %.1e", what, e, tol);
}

static void check_close_d(const char *what, const float *gpu, const double *ref, int64_t n, double tol) {
    double e = th_rel_err(gpu, ref, n, 1e-30);
    if (e > worst_elem || e != e) worst_elem = e;
    CHECK(e <= tol, "%s: rel err %.3e > %.1e", what, e, tol);
}

static void check_same(const char *what, const float *a, const float *b, int64_t n) {
    CHECK(memcmp(a, b, (size_t)n * sizeof(float)) == 0, "%s: two runs differ", what);
}

static void check_exact(const char *what, const float *gpu, const float *ref, int64_t n) {
    CHECK(memcmp(gpu, ref, (size_t)n * sizeof(float)) == 0, "%s: not the same floats", what);
}

/* ---- convolutions ---- */

static int64_t t_out_of(int64_t t_in, int64_t k, int64_t pad) {
    int64_t t = t_in + pad - k + 1;
    return t > 0 ? t : 0;
}

/* grouped == 0: depthwise (w [C, k]); otherwise `groups` groups (w [C, C/groups, k]). */
static void test_conv(int grouped, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad,
                      uint64_t seed) {
    char label[128];
    snprintf(label, sizeof label, "conv %s B=%lld t_in=%lld C=%lld groups=%lld k=%lld pad=%lld",
             grouped ? "grouped" : "depthwise", (long long)B, (long long)t_in, (long long)C, (long long)groups,
             (long long)k, (long long)pad);
    const int64_t t_out = t_out_of(t_in, k, pad), nx = B * t_in * C, ny = B * t_out * C;
    const int64_t nw = grouped ? C * (C / groups) * k : C * k;
    float *x = rnd(nx, seed, 1, -1, 1), *w = rnd(nw, seed, 2, -0.5f, 0.5f), *bias = rnd(C, seed, 3, -1, 1);
    float *dy = rnd(ny, seed, 4, -1, 1), *dw0 = rnd(nw, seed, 5, -1, 1), *db0 = rnd(C, seed, 6, -1, 1);
    float *y_ref = th_alloc(ny), *dx_ref = th_alloc(nx), *dw_ref = dup_f(dw0, nw), *db_ref = dup_f(db0, C);
    if (grouped) {
        zaya_conv1d_grouped_forward(y_ref, x, w, bias, B, t_in, C, groups, k, pad);
        zaya_conv1d_grouped_backward(dx_ref, dw_ref, db_ref, dy, x, w, B, t_in, C, groups, k, pad);
    } else {
        zaya_conv1d_depthwise_forward(y_ref, x, w, bias, B, t_in, C, k, pad);
        zaya_conv1d_depthwise_backward(dx_ref, dw_ref, db_ref, dy, x, w, B, t_in, C, k, pad);
    }
    float *d_x = dev_f(x, nx), *d_w = dev_f(w, nw), *d_bias = dev_f(bias, C), *d_dy = dev_f(dy, ny);
    float *d_y = dev_nan(ny), *d_dx = dev_nan(nx), *d_dw = dev_f(dw0, nw), *d_db = dev_f(db0, C);
    float *runs[2][4];
    for (int run = 0; run < 2; run++) {
        if (run) {
            fill_nan(d_y, ny);
            fill_nan(d_dx, nx);
            dev_put(d_dw, dw0, (size_t)nw * sizeof(float));
            dev_put(d_db, db0, (size_t)C * sizeof(float));
        }
        if (grouped) {
            be->conv_grouped_forward(be, ZAYA_DTYPE_F32, d_y, d_x, d_w, d_bias, B, t_in, C, groups, k, pad);
            be->conv_grouped_backward(be, ZAYA_DTYPE_F32, d_dx, d_dw, d_db, d_dy, d_x, d_w, B, t_in, C, groups, k,
                                      pad);
        } else {
            be->conv_dw_forward(be, d_y, d_x, d_w, d_bias, B, t_in, C, k, pad);
            be->conv_dw_backward(be, d_dx, d_dw, d_db, d_dy, d_x, d_w, B, t_in, C, k, pad);
        }
        runs[run][0] = host_f(d_y, ny);
        runs[run][1] = host_f(d_dx, nx);
        runs[run][2] = host_f(d_dw, nw);
        runs[run][3] = host_f(d_db, C);
    }
    char what[192];
    const char *names[4] = {"y", "dx", "dw", "dbias"};
    const float *refs[4] = {y_ref, dx_ref, dw_ref, db_ref};
    const int64_t ns[4] = {ny, nx, nw, C};
    for (int i = 0; i < 4; i++) {
        snprintf(what, sizeof what, "%s: %s", label, names[i]);
        check_close(what, runs[0][i], refs[i], ns[i], TOL_ELEM);
        check_same(what, runs[0][i], runs[1][i], ns[i]);
        free(runs[0][i]);
        free(runs[1][i]);
    }
    float *dev[] = {d_x, d_w, d_bias, d_dy, d_y, d_dx, d_dw, d_db};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) be->free(be, dev[i]);
    float *host[] = {x, w, bias, dy, dw0, db0, y_ref, dx_ref, dw_ref, db_ref};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

static void test_convs(void) {
    const int64_t B = 2, T = 37, Hq = 4, Hkv = 2;
    /* the model's pair: depthwise k0 over the input padded by (k0 - 1) + (k1 - 1), then grouped k1 over
     * its T + k1 - 1 rows without padding, groups = Hq + Hkv of head_dim channels */
    const int64_t ks[][2] = {{2, 2}, {3, 3}, {4, 4}, {2, 4}};
    for (int hdi = 0; hdi < 2; hdi++) {
        const int64_t hd = hdi ? 128 : 40, C = (Hq + Hkv) * hd;
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            const int64_t k0 = ks[i][0], k1 = ks[i][1], pad = (k0 - 1) + (k1 - 1);
            test_conv(0, B, T, C, 1, k0, pad, 100 + i);
            test_conv(1, B, T + k1 - 1, C, Hq + Hkv, k1, 0, 200 + i);
            test_conv(1, B, T, C, Hq + Hkv, k1, k1 - 1, 300 + i); /* padded grouped */
        }
    }
    test_conv(0, B, T, 240, 1, 3, 0, 400);         /* no padding */
    test_conv(0, 3, 2, 72, 1, 4, 0, 401);          /* t_out = 0: dx all zero, dw and dbias unchanged */
    test_conv(1, 3, 2, 72, 6, 4, 0, 402);
    test_conv(1, B, 70, 96, 3, 2, 1, 403);         /* cg = 32: exact tiles, rows past a tile */
    test_conv(1, 1, 5, 18, 6, 3, 2, 404);          /* cg = 3 */
    test_conv(1, B, 33, 64, 1, 2, 1, 405);         /* one group: a dense conv */
}

/* ---- qk mean skip, value shift, split / merge (double references of cca.c / ops.c) ---- */

static void test_qk_mean_skip(int64_t N, int64_t Hq, int64_t Hkv, int64_t hd, uint64_t seed) {
    const int64_t G = Hq / Hkv, C = (Hq + Hkv) * hd, n = N * C;
    float *pre = rnd(n, seed, 1, -1, 1), *raw0 = rnd(n, seed, 2, -1, 1), *g = rnd(n, seed, 3, -1, 1);
    float *dpre0 = rnd(n, seed, 4, -1, 1);
    double *fwd = th_alloc_d(n), *bwd = th_alloc_d(n);
    for (int64_t r = 0; r < N; r++)
        for (int64_t j = 0; j < Hkv; j++)
            for (int64_t d = 0; d < hd; d++) {
                const int64_t kc = r * C + (Hq + j) * hd + d;
                double sq = 0, sg = 0;
                for (int64_t i = j * G; i < (j + 1) * G; i++) {
                    const int64_t qc = r * C + i * hd + d;
                    fwd[qc] = raw0[qc] + 0.5 * ((double)pre[qc] + pre[kc]);
                    bwd[qc] = dpre0[qc] + 0.5 * g[qc] + 0.5 * g[kc] / (double)G;
                    sq += pre[qc];
                    sg += g[qc];
                }
                fwd[kc] = raw0[kc] + 0.5 * (sq / (double)G + pre[kc]);
                bwd[kc] = dpre0[kc] + 0.5 * sg + 0.5 * g[kc];
            }
    float *d_pre = dev_f(pre, n), *d_g = dev_f(g, n), *d_raw = dev_f(raw0, n), *d_dpre = dev_f(dpre0, n);
    float *out[2][2];
    for (int run = 0; run < 2; run++) {
        dev_put(d_raw, raw0, (size_t)n * sizeof(float));
        dev_put(d_dpre, dpre0, (size_t)n * sizeof(float));
        be->qk_mean_skip_forward(be, d_raw, d_pre, N, Hq, Hkv, hd);
        be->qk_mean_skip_backward(be, d_dpre, d_g, N, Hq, Hkv, hd);
        out[run][0] = host_f(d_raw, n);
        out[run][1] = host_f(d_dpre, n);
    }
    check_close_d("qk_mean_skip_forward", out[0][0], fwd, n, TOL_ELEM);
    check_close_d("qk_mean_skip_backward", out[0][1], bwd, n, TOL_ELEM);
    check_same("qk_mean_skip_forward", out[0][0], out[1][0], n);
    check_same("qk_mean_skip_backward", out[0][1], out[1][1], n);
    for (int i = 0; i < 4; i++) free(out[i / 2][i % 2]);
    be->free(be, d_pre);
    be->free(be, d_g);
    be->free(be, d_raw);
    be->free(be, d_dpre);
    free(pre);
    free(raw0);
    free(g);
    free(dpre0);
    free(fwd);
    free(bwd);
}

/* An odd kvd leaves the last column as it was (the CPU copies two halves of kvd / 2). */
static void test_value_shift(int64_t B, int64_t T, int64_t kvd, uint64_t seed) {
    const int64_t n = B * T * kvd, h = kvd / 2;
    float *vv = rnd(n, seed, 1, -1, 1), *dv = rnd(n, seed, 2, -1, 1), *init = rnd(n, seed, 3, -1, 1);
    float *v_ref = dup_f(init, n), *dvv_ref = dup_f(init, n);
    for (int64_t r = 0; r < B * T; r++)
        for (int64_t c = 0; c < 2 * h; c++) {
            v_ref[r * kvd + c] = c < h ? vv[r * kvd + c] : (r % T == 0 ? 0.0f : vv[(r - 1) * kvd + c]);
            dvv_ref[r * kvd + c] = c < h ? dv[r * kvd + c] : (r % T == T - 1 ? 0.0f : dv[(r + 1) * kvd + c]);
        }
    float *d_vv = dev_f(vv, n), *d_dv = dev_f(dv, n), *d_v = dev_f(init, n), *d_dvv = dev_f(init, n);
    be->value_shift_forward(be, d_v, d_vv, B, T, kvd);
    be->value_shift_backward(be, d_dvv, d_dv, B, T, kvd);
    float *v = host_f(d_v, n), *dvv = host_f(d_dvv, n);
    check_exact("value_shift_forward", v, v_ref, n);
    check_exact("value_shift_backward", dvv, dvv_ref, n);
    be->free(be, d_vv);
    be->free(be, d_dv);
    be->free(be, d_v);
    be->free(be, d_dvv);
    float *host[] = {vv, dv, init, v_ref, dvv_ref, v, dvv};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

static void test_split_merge(int64_t N, int64_t qd, int64_t kvd, uint64_t seed) {
    const int64_t n = N * (qd + kvd);
    float *qk = rnd(n, seed, 1, -1, 1), *q_ref = th_alloc(N * qd), *k_ref = th_alloc(N * kvd);
    for (int64_t r = 0; r < N; r++) {
        memcpy(q_ref + r * qd, qk + r * (qd + kvd), (size_t)qd * sizeof(float));
        memcpy(k_ref + r * kvd, qk + r * (qd + kvd) + qd, (size_t)kvd * sizeof(float));
    }
    float *d_qk = dev_f(qk, n), *d_q = dev_nan(N * qd), *d_k = dev_nan(N * kvd), *d_back = dev_nan(n);
    be->split_qk(be, d_q, d_k, d_qk, N, qd, kvd);
    be->merge_qk(be, d_back, d_q, d_k, N, qd, kvd);
    float *q = host_f(d_q, N * qd), *k = host_f(d_k, N * kvd), *back = host_f(d_back, n);
    check_exact("split_qk q", q, q_ref, N * qd);
    check_exact("split_qk k", k, k_ref, N * kvd);
    check_exact("merge_qk", back, qk, n);
    be->free(be, d_qk);
    be->free(be, d_q);
    be->free(be, d_k);
    be->free(be, d_back);
    float *host[] = {qk, q_ref, k_ref, q, k, back};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

/* ---- L2 norm and rope against kernels.h ---- */

static void test_l2norm(int64_t n, int64_t heads, int64_t hd, int zero_row, uint64_t seed) {
    char label[96];
    snprintf(label, sizeof label, "l2norm n=%lld heads=%lld hd=%lld%s", (long long)n, (long long)heads, (long long)hd,
             zero_row ? " (a zero head)" : "");
    const int64_t nx = n * heads * hd, rows = n * heads;
    const float scale = sqrtf((float)hd), eps = FLT_EPSILON;
    float *x = rnd(nx, seed, 1, -1, 1), *dy = rnd(nx, seed, 2, -1, 1), *mult = rnd(heads, seed, 3, 0.5f, 1.5f);
    float *dm0 = rnd(heads, seed, 4, -1, 1);
    if (zero_row) memset(x + 3 * hd, 0, (size_t)hd * sizeof(float)); /* row-head 3: the norm clamps to eps */
    float *y_ref = th_alloc(nx), *inv_ref = th_alloc(rows), *dx_ref = th_alloc(nx), *dm_ref = dup_f(dm0, heads);
    zaya_l2norm_forward(y_ref, inv_ref, x, mult, scale, n, heads, hd, eps);
    zaya_l2norm_backward(dx_ref, dm_ref, dy, x, inv_ref, mult, scale, n, heads, hd);
    float *d_x = dev_f(x, nx), *d_dy = dev_f(dy, nx), *d_mult = dev_f(mult, heads);
    float *d_y = dev_nan(nx), *d_inv = dev_nan(rows), *d_dx = dev_nan(nx), *d_dm = dev_f(dm0, heads);
    float *out[2][4];
    for (int run = 0; run < 2; run++) {
        if (run) {
            fill_nan(d_y, nx);
            fill_nan(d_inv, rows);
            fill_nan(d_dx, nx);
            dev_put(d_dm, dm0, (size_t)heads * sizeof(float));
        }
        be->l2norm_forward(be, d_y, d_inv, d_x, d_mult, scale, n, heads, hd, eps);
        be->l2norm_backward(be, d_dx, d_dm, d_dy, d_x, d_inv, d_mult, scale, n, heads, hd);
        out[run][0] = host_f(d_y, nx);
        out[run][1] = host_f(d_inv, rows);
        out[run][2] = host_f(d_dx, nx);
        out[run][3] = host_f(d_dm, heads);
    }
    const char *names[4] = {"y", "inv_norm", "dx", "dmult"};
    const float *refs[4] = {y_ref, inv_ref, dx_ref, dm_ref};
    const int64_t ns[4] = {nx, rows, nx, heads};
    char what[160];
    for (int i = 0; i < 4; i++) {
        snprintf(what, sizeof what, "%s: %s", label, names[i]);
        check_close(what, out[0][i], refs[i], ns[i], TOL_ELEM);
        check_same(what, out[0][i], out[1][i], ns[i]);
        free(out[0][i]);
        free(out[1][i]);
    }
    float *dev[] = {d_x, d_dy, d_mult, d_y, d_inv, d_dx, d_dm};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) be->free(be, dev[i]);
    float *host[] = {x, dy, mult, dm0, y_ref, inv_ref, dx_ref, dm_ref};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

static void test_rope(int64_t n, int64_t heads, int64_t hd, int64_t rot_dims, uint64_t seed) {
    char label[96];
    snprintf(label, sizeof label, "rope n=%lld heads=%lld hd=%lld rot=%lld", (long long)n, (long long)heads,
             (long long)hd, (long long)rot_dims);
    const int64_t max_pos = 256, nx = n * heads * hd, half = rot_dims / 2;
    zaya_rope_table tab;
    CHECK(zaya_rope_table_init(&tab, max_pos, rot_dims, 10000.0) == 0, "rope table: %s", zaya_error_message());
    int32_t *pos = malloc((size_t)n * sizeof(int32_t));
    for (int64_t r = 0; r < n; r++) pos[r] = (int32_t)((r * 37 + seed) % max_pos);
    float *x = rnd(nx, seed, 1, -1, 1), *fwd_ref = dup_f(x, nx), *bwd_ref = dup_f(x, nx);
    zaya_rope_forward(fwd_ref, &tab, pos, n, heads, hd);
    zaya_rope_backward(bwd_ref, &tab, pos, n, heads, hd);
    float *d_cos = dev_f(tab.cos, max_pos * half), *d_sin = dev_f(tab.sin, max_pos * half);
    int32_t *d_pos = dev_from(pos, (size_t)n * sizeof(int32_t));
    float *d_x = dev_f(x, nx);
    be->rope_forward(be, d_x, d_cos, d_sin, rot_dims, d_pos, n, heads, hd);
    float *fwd = host_f(d_x, nx);
    dev_put(d_x, x, (size_t)nx * sizeof(float));
    be->rope_backward(be, d_x, d_cos, d_sin, rot_dims, d_pos, n, heads, hd);
    float *bwd = host_f(d_x, nx);
    char what[160];
    snprintf(what, sizeof what, "%s: forward", label);
    check_close(what, fwd, fwd_ref, nx, TOL_ELEM);
    snprintf(what, sizeof what, "%s: backward", label);
    check_close(what, bwd, bwd_ref, nx, TOL_ELEM);
    /* dims past rot_dims are untouched */
    int untouched = 1;
    for (int64_t rh = 0; rh < n * heads; rh++)
        for (int64_t d = rot_dims; d < hd; d++) untouched &= fwd[rh * hd + d] == x[rh * hd + d];
    CHECK(untouched, "%s: dims past rot_dims changed", label);
    be->free(be, d_cos);
    be->free(be, d_sin);
    be->free(be, d_pos);
    be->free(be, d_x);
    zaya_rope_table_free(&tab);
    free(pos);
    free(x);
    free(fwd_ref);
    free(bwd_ref);
    free(fwd);
    free(bwd);
}

/* ---- attention against attention.h ---- */

static void test_attention(int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t D, uint64_t seed) {
    char label[96];
    snprintf(label, sizeof label, "attention B=%lld T=%lld Hq=%lld Hkv=%lld D=%lld", (long long)B, (long long)T,
             (long long)Hq, (long long)Hkv, (long long)D);
    const int64_t nq = B * T * Hq * D, nkv = B * T * Hkv * D, nl = B * Hq * T;
    const float scale = 1.0f / sqrtf((float)D);
    float *q = rnd(nq, seed, 1, -1.5f, 1.5f), *k = rnd(nkv, seed, 2, -1.5f, 1.5f), *v = rnd(nkv, seed, 3, -1, 1);
    float *dout = rnd(nq, seed, 4, -1, 1);
    float *out_ref = th_alloc(nq), *lse_ref = th_alloc(nl);
    float *dq_ref = th_alloc(nq), *dk_ref = th_alloc(nkv), *dv_ref = th_alloc(nkv);
    zaya_attention_forward(out_ref, lse_ref, q, k, v, B, T, Hq, Hkv, D, scale);
    zaya_attention_backward(dq_ref, dk_ref, dv_ref, dout, q, k, v, out_ref, lse_ref, B, T, Hq, Hkv, D, scale);
    float *d_q = dev_f(q, nq), *d_k = dev_f(k, nkv), *d_v = dev_f(v, nkv), *d_dout = dev_f(dout, nq);
    /* the backward reads the CPU's out and lse, so that it is checked on its own */
    float *d_oref = dev_f(out_ref, nq), *d_lref = dev_f(lse_ref, nl);
    float *d_out = dev_nan(nq), *d_lse = dev_nan(nl), *d_dq = dev_nan(nq), *d_dk = dev_nan(nkv), *d_dv = dev_nan(nkv);
    float *res[2][5];
    for (int run = 0; run < 2; run++) {
        if (run) {
            fill_nan(d_out, nq);
            fill_nan(d_lse, nl);
            fill_nan(d_dq, nq);
            fill_nan(d_dk, nkv);
            fill_nan(d_dv, nkv);
        }
        be->attention_forward(be, ZAYA_DTYPE_F32, d_out, d_lse, d_q, d_k, d_v, B, T, Hq, Hkv, D, scale);
        be->attention_backward(be, ZAYA_DTYPE_F32, d_dq, d_dk, d_dv, d_dout, d_q, d_k, d_v, d_oref, d_lref, B, T, Hq,
                               Hkv, D, scale);
        res[run][0] = host_f(d_out, nq);
        res[run][1] = host_f(d_lse, nl);
        res[run][2] = host_f(d_dq, nq);
        res[run][3] = host_f(d_dk, nkv);
        res[run][4] = host_f(d_dv, nkv);
    }
    const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
    const float *refs[5] = {out_ref, lse_ref, dq_ref, dk_ref, dv_ref};
    const int64_t ns[5] = {nq, nl, nq, nkv, nkv};
    char what[160];
    printf("%s:", label);
    for (int i = 0; i < 5; i++) {
        snprintf(what, sizeof what, "%s: %s", label, names[i]);
        printf(" %s %.2e", names[i], th_rel_err_ff(res[0][i], refs[i], ns[i], ATTN_FLOOR));
        check_close(what, res[0][i], refs[i], ns[i], TOL_ATTN);
        check_same(what, res[0][i], res[1][i], ns[i]);
        free(res[0][i]);
        free(res[1][i]);
    }
    printf("\n");
    float *dev[] = {d_q, d_k, d_v, d_dout, d_oref, d_lref, d_out, d_lse, d_dq, d_dk, d_dv};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) be->free(be, dev[i]);
    float *host[] = {q, k, v, dout, out_ref, lse_ref, dq_ref, dk_ref, dv_ref};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}

/* A bad argument is reported by the next sync, naming the operation; the sync after it is clean. */
static void test_errors(void) {
    float *d = dev_nan(16);
    be->attention_forward(be, ZAYA_DTYPE_F32, d, d, d, d, d, 1, 1, 2, 2, ZAYA_ATTENTION_MAX_HEAD_DIM + 1, 1.0f);
    zaya_status st = be->sync(be);
    CHECK(st != ZAYA_OK && strstr(zaya_error_message(), "attention_forward"), "bad head_dim: status %d, '%s'",
          (int)st, zaya_error_message());
    CHECK(be->sync(be) == ZAYA_OK, "the error was not cleared: %s", zaya_error_message());
    be->free(be, d);
}

int main(void) {
    if (zaya_gpu_device_count() == 0) {
        printf("no CUDA device visible (%s backend): skipped\n", zaya_gpu_backend_name());
        return 77;
    }
    zaya_status st = zaya_gpu_backend_init((zaya_device){ZAYA_DEVICE_CUDA, 0}, &be);
    if (st != ZAYA_OK) {
        fprintf(stderr, "backend init: %s\n", zaya_error_message());
        return 1;
    }
    test_convs();
    test_qk_mean_skip(74, 8, 2, 40, 11);
    test_qk_mean_skip(5, 4, 4, 128, 12);
    test_value_shift(2, 37, 80, 13);
    test_value_shift(3, 5, 81, 14);
    test_split_merge(74, 320, 80, 15);
    test_l2norm(74, 10, 40, 0, 16);
    test_l2norm(74, 10, 128, 0, 17);
    test_l2norm(2000, 10, 64, 0, 18); /* more rows than the dmult reduction has row blocks */
    test_l2norm(9, 10, 128, 1, 19);
    test_l2norm(9, 3, 5, 0, 20);
    test_rope(74, 10, 40, 40, 21);
    test_rope(74, 10, 40, 16, 22);
    test_rope(30, 10, 128, 64, 23);
    const int64_t Ts[] = {1, 77, 300}, Ds[] = {64, 96, 128};
    for (int ti = 0; ti < 3; ti++)
        for (int di = 0; di < 3; di++) test_attention(2, Ts[ti], 8, 2, Ds[di], 30 + ti * 3 + di);
    test_attention(1, 77, 4, 1, 40, 40);   /* D not a multiple of 16 or 32 */
    test_attention(1, 100, 2, 2, 256, 41); /* the largest head_dim, no grouping */
    test_attention(1, 65, 6, 3, 200, 42);
    test_attention(2, 64, 8, 2, 128, 43);  /* T a multiple of the tile */
    test_errors();
    CHECK(be->sync(be) == ZAYA_OK, "final sync: %s", zaya_error_message());
    printf("worst rel err: elementwise %.3e (<= %.0e), attention %.3e (<= %.0e)\n", worst_elem, TOL_ELEM, worst_attn,
           TOL_ATTN);
    be->destroy(be);
    return th_finish("test_be_cca");
}
