/* zaya bench kernels: every kernel of kernels.h and attention.h (forward and backward) and the matmul
 * wrapper at ZAYA1 shapes, against peers measured in the same run.
 *
 * Compute-bound kernels (attention, convolutions) report GFLOP/s and the fraction of the f32 peak:
 * oneDNN matmul called directly at the peak's square shape. Memory-bound kernels report GB/s (reads +
 * writes, no write-allocate traffic, as STREAM counts) and the fraction of a STREAM triad (double
 * arrays >= 4x the last-level cache). Every kernel's samples alternate with its peer's
 * (zaya_bench_time_pair), so load from other processes on a shared machine hits both alike. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/attention.h"
#include "zaya/bench.h"
#include "zaya/bench_kernels.h"
#include "zaya/bench_mem.h"
#include "zaya/config.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/kernels.h"
#include "zaya/progress.h"
#include "zaya/rng.h"
#include "zaya/threads.h"

/* One shape set: the dimensions of a ZAYA block at a batch of B sequences of T tokens. */
typedef struct kshape {
    char label[32];
    int64_t B, T, n; /* n = B*T rows */
    int64_t D, Hq, Hkv, hd, rot, F, E, V, k0, k1;
    int64_t vocab_rows; /* embedding table rows (capped: only the gathered rows are touched) */
    int64_t xent_rows;  /* logits rows of the cross-entropy (capped by memory) */
    int attn_only;
} kshape;

/* Buffers of one shape set, sized for the largest case. */
typedef struct kws {
    const kshape *s;
    float *buf[8], *w, *dw, *bias, *dbias, *rstd, *inv, *lse, *probs, *gate, *losses, *table, *dtable;
    float *conv_ws; /* the grouped convolution's GEMM workspace, as the model plans it */
    int32_t *pos, *ids, *tgt, *idx;
    const float **kc, **vc;
    int64_t *dpos, *drows;
    zaya_rope_table rope;
} kws;

typedef enum { KIND_MEM, KIND_F32 } kkind;

enum {
    K_RMS_F, K_RMS_B, K_ROPE_F, K_ROPE_B, K_L2_F, K_L2_B, K_CDW_F, K_CDW_B, K_CG_F, K_CG_B, K_SILU_F, K_SILU_B,
    K_GELU_F, K_GELU_B, K_SWI_F, K_SWI_B, K_SMAX_F, K_SMAX_B, K_EMB_F, K_EMB_B, K_TOP1, K_XENT, K_ATT_F, K_ATT_B,
    K_DECODE, K_COUNT
};
static const char *k_names[K_COUNT] = {
    "rmsnorm_fwd", "rmsnorm_bwd", "rope_fwd", "rope_bwd", "l2norm_fwd", "l2norm_bwd", "conv_dw_fwd", "conv_dw_bwd",
    "conv_grp_fwd", "conv_grp_bwd", "silu_fwd", "silu_bwd", "gelu_fwd", "gelu_bwd", "swiglu_fwd", "swiglu_bwd",
    "softmax_fwd", "softmax_bwd", "embedding_fwd", "embedding_bwd", "top1_biased", "xent_fwd_bwd", "attention_fwd",
    "attention_bwd", "attention_decode"};

typedef struct kcase {
    int id;
    kws *ws;
    kkind kind;
    double flops, bytes;
    char shape[48];
} kcase;

static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

static zaya_status run_case(void *ctx) {
    const kcase *c = ctx;
    kws *w = c->ws;
    const kshape *s = w->s;
    float **b = w->buf;
    const int64_t n = s->n, H = s->Hq + s->Hkv, C = H * s->hd, pad0 = s->k0 - 1 + s->k1 - 1;
    const float scale = 1.0f / sqrtf((float)s->hd);
    switch (c->id) {
    case K_RMS_F: zaya_rmsnorm_forward(b[1], w->rstd, b[0], w->w, n, s->D, 1e-5f); break;
    case K_RMS_B: zaya_rmsnorm_backward(b[2], w->dw, b[3], b[0], w->w, w->rstd, n, s->D); break;
    case K_ROPE_F: zaya_rope_forward(b[0], &w->rope, w->pos, n, s->Hq, s->hd); break;
    case K_ROPE_B: zaya_rope_backward(b[0], &w->rope, w->pos, n, s->Hq, s->hd); break;
    case K_L2_F: zaya_l2norm_forward(b[1], w->inv, b[0], w->w, sqrtf((float)s->hd), n, H, s->hd, 1e-6f); break;
    case K_L2_B:
        zaya_l2norm_backward(b[2], w->dw, b[3], b[0], w->inv, w->w, sqrtf((float)s->hd), n, H, s->hd);
        break;
    case K_CDW_F: zaya_conv1d_depthwise_forward(b[1], b[0], w->w, w->bias, s->B, s->T, C, s->k0, pad0); break;
    case K_CDW_B:
        zaya_conv1d_depthwise_backward(b[2], w->dw, w->dbias, b[3], b[0], w->w, s->B, s->T, C, s->k0, pad0);
        break;
    case K_CG_F: zaya_conv1d_grouped_forward_ws(b[1], b[0], w->w, w->bias, s->B, s->T, C, H, s->k1, 0, w->conv_ws); break;
    case K_CG_B:
        zaya_conv1d_grouped_backward_ws(b[2], w->dw, w->dbias, b[3], b[0], w->w, s->B, s->T, C, H, s->k1, 0, w->conv_ws);
        break;
    case K_SILU_F: zaya_silu_forward(b[1], b[0], n * 2 * s->F); break;
    case K_SILU_B: zaya_silu_backward(b[2], b[3], b[0], n * 2 * s->F); break;
    case K_GELU_F: zaya_gelu_forward(b[1], b[0], n * 2 * s->F); break;
    case K_GELU_B: zaya_gelu_backward(b[2], b[3], b[0], n * 2 * s->F); break;
    case K_SWI_F: zaya_swiglu_forward(b[1], b[0], n, s->F); break;
    case K_SWI_B: zaya_swiglu_backward(b[2], b[3], b[0], n, s->F); break;
    case K_SMAX_F: zaya_softmax_forward(b[1], b[0], n, s->D); break;
    case K_SMAX_B: zaya_softmax_backward(b[2], b[3], b[1], n, s->D); break;
    case K_EMB_F: zaya_embedding_forward(b[1], w->table, w->ids, n, s->D); break;
    case K_EMB_B: zaya_embedding_backward(w->dtable, b[3], w->ids, n, s->D, s->vocab_rows); break;
    case K_TOP1: zaya_top1_biased(w->idx, w->gate, w->probs, w->bias, n, s->E + 1); break;
    case K_XENT: zaya_xent_forward_backward(b[4], w->losses, w->tgt, s->xent_rows, s->V, 1.0f / (float)s->xent_rows); break;
    case K_ATT_F: zaya_attention_forward(b[3], w->lse, b[0], b[1], b[2], s->B, s->T, s->Hq, s->Hkv, s->hd, scale); break;
    case K_ATT_B:
        zaya_attention_backward(b[5], b[6], b[7], b[4], b[0], b[1], b[2], b[3], w->lse, s->B, s->T, s->Hq, s->Hkv, s->hd,
                                scale);
        break;
    case K_DECODE:
        zaya_attention_decode(b[3], NULL, b[0], w->kc, w->vc, w->dpos, w->drows, s->B, s->Hq, s->Hkv, s->hd, scale);
        break;
    default: return zaya_error_set(ZAYA_EINVAL, "bench kernels: unknown case %d", c->id);
    }
    return ZAYA_OK;
}

/* Bytes (reads + writes) or FLOPs of each case, and its shape label. */
static void describe(kcase *c) {
    const kshape *s = c->ws->s;
    const double n = (double)s->n, D = (double)s->D, H = (double)(s->Hq + s->Hkv), hd = (double)s->hd;
    const double C = H * hd, F = (double)s->F, N2F = n * 2 * F, t_out = (double)(s->T + s->k0 - 1 + s->k1 - 1 - s->k0 + 1);
    const double attn = 4.0 * s->B * s->Hq * hd * (double)s->T * (double)(s->T + 1) / 2; /* causal QK^T + PV */
    c->kind = KIND_MEM;
    c->flops = c->bytes = 0;
    const char *sh = "";
    char tmp[48];
    switch (c->id) {
    case K_RMS_F: c->bytes = 8 * n * D; sh = "[n, D]"; break;
    case K_RMS_B: c->bytes = 12 * n * D; sh = "[n, D]"; break;
    case K_ROPE_F:
    case K_ROPE_B: c->bytes = 8 * n * s->Hq * s->rot + 4 * n * s->rot; sh = "[n, Hq x hd] rotated"; break;
    case K_L2_F: c->bytes = 8 * n * C; sh = "[n, (Hq+Hkv) x hd]"; break;
    case K_L2_B: c->bytes = 12 * n * C; sh = "[n, (Hq+Hkv) x hd]"; break;
    case K_CDW_F: c->kind = KIND_F32; c->flops = 2 * s->B * t_out * C * s->k0; sh = "[B, T, (Hq+Hkv)hd] k0"; break;
    case K_CDW_B: c->kind = KIND_F32; c->flops = 4 * s->B * t_out * C * s->k0; sh = "[B, T, (Hq+Hkv)hd] k0"; break;
    case K_CG_F: c->kind = KIND_F32; c->flops = 2 * s->B * (double)s->T * C * hd * s->k1; sh = "grouped hd, k1"; break;
    case K_CG_B: c->kind = KIND_F32; c->flops = 4 * s->B * (double)s->T * C * hd * s->k1; sh = "grouped hd, k1"; break;
    case K_SILU_F:
    case K_GELU_F: c->bytes = 8 * N2F; sh = "[n, 2F]"; break;
    case K_SILU_B:
    case K_GELU_B: c->bytes = 12 * N2F; sh = "[n, 2F]"; break;
    case K_SWI_F: c->bytes = 12 * n * F; sh = "[n, 2F] -> [n, F]"; break;
    case K_SWI_B: c->bytes = 20 * n * F; sh = "[n, 2F] -> [n, F]"; break;
    case K_SMAX_F: c->bytes = 8 * n * D; sh = "[n, D]"; break;
    case K_SMAX_B: c->bytes = 12 * n * D; sh = "[n, D]"; break;
    case K_EMB_F: c->bytes = 8 * n * D + 4 * n; sh = "n rows of [V, D]"; break;
    case K_EMB_B: c->bytes = 12 * n * D + 4 * n; sh = "n rows of [V, D]"; break;
    case K_TOP1: c->bytes = 4 * n * (double)(s->E + 1) + 12 * n; sh = "[n, E+1]"; break;
    case K_XENT:
        c->bytes = 8 * (double)s->xent_rows * (double)s->V;
        snprintf(tmp, sizeof tmp, "[%lld, V=%lld]", (long long)s->xent_rows, (long long)s->V);
        sh = tmp;
        break;
    case K_ATT_F: c->kind = KIND_F32; c->flops = attn; sh = "causal GQA"; break;
    case K_ATT_B: c->kind = KIND_F32; c->flops = 2.5 * attn; sh = "causal GQA"; break; /* 5 products vs 2 */
    case K_DECODE:
        c->bytes = 8.0 * s->B * (double)s->T * s->Hkv * hd;
        sh = "1 row/seq vs KV cache";
        break;
    }
    snprintf(c->shape, sizeof c->shape, "%s", sh);
}

static float *fbuf(int64_t n, uint64_t stream) {
    float *p = zaya_malloc((size_t)imax(n, 1) * sizeof(float));
    if (p) zaya_rng_fill_uniform(p, (size_t)imax(n, 1), 7, stream, 0, -1.0f, 1.0f);
    return p;
}

static void ws_free(kws *w) {
    for (int i = 0; i < 8; i++) zaya_free(w->buf[i]);
    float *fs[] = {w->w, w->dw, w->bias, w->dbias, w->rstd, w->inv, w->lse, w->probs, w->gate, w->losses, w->table, w->dtable,
                   w->conv_ws};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) zaya_free(fs[i]);
    free(w->pos), free(w->ids), free(w->tgt), free(w->idx), free(w->kc), free(w->vc), free(w->dpos), free(w->drows);
    zaya_rope_table_free(&w->rope);
    memset(w, 0, sizeof *w);
}

static zaya_status ws_init(kws *w, const kshape *s) {
    memset(w, 0, sizeof *w);
    w->s = s;
    const int64_t n = s->n, H = s->Hq + s->Hkv, C = H * s->hd;
    int64_t big = imax(imax(n * 2 * s->F, n * s->D), imax(s->B * (s->T + s->k0 + s->k1) * C, n * s->Hq * s->hd));
    for (int i = 0; i < 8; i++) w->buf[i] = fbuf(i == 4 ? imax(big, s->xent_rows * s->V) : big, (uint64_t)i + 1);
    int64_t wn = imax(imax(C * s->hd * imax(s->k0, s->k1), s->D), H);
    w->w = fbuf(wn, 20), w->dw = fbuf(wn, 21), w->bias = fbuf(imax(C, s->E + 1), 22), w->dbias = fbuf(C, 23);
    w->rstd = fbuf(n, 24), w->inv = fbuf(n * H, 25), w->lse = fbuf(s->B * s->Hq * s->T, 26);
    w->conv_ws = fbuf(zaya_conv1d_grouped_ws_floats(s->B, s->T, C, H, s->k1, 0), 32);
    w->probs = fbuf(n * (s->E + 1), 27), w->gate = fbuf(n, 28), w->losses = fbuf(s->xent_rows, 29);
    w->table = fbuf(s->vocab_rows * s->D, 30), w->dtable = fbuf(s->vocab_rows * s->D, 31);
    w->pos = malloc((size_t)n * sizeof(int32_t)), w->ids = malloc((size_t)n * sizeof(int32_t));
    w->tgt = malloc((size_t)imax(s->xent_rows, 1) * sizeof(int32_t)), w->idx = malloc((size_t)n * sizeof(int32_t));
    w->kc = malloc((size_t)s->B * sizeof(float *)), w->vc = malloc((size_t)s->B * sizeof(float *));
    w->dpos = malloc((size_t)s->B * sizeof(int64_t)), w->drows = malloc((size_t)s->B * sizeof(int64_t));
    int ok = w->conv_ws && w->w && w->dw && w->bias && w->dbias && w->rstd && w->inv && w->lse && w->probs && w->gate && w->losses &&
             w->table && w->dtable && w->pos && w->ids && w->tgt && w->idx && w->kc && w->vc && w->dpos && w->drows;
    for (int i = 0; i < 8; i++) ok = ok && w->buf[i];
    if (!ok) {
        ws_free(w);
        return zaya_error_set(ZAYA_ENOMEM, "bench kernels: cannot allocate the buffers of shape set '%s'", s->label);
    }
    if (zaya_rope_table_init(&w->rope, s->T, s->rot, 10000.0) != 0) {
        ws_free(w);
        return zaya_error_set(ZAYA_ENOMEM, "bench kernels: rope table of '%s'", s->label);
    }
    for (int64_t i = 0; i < n; i++) {
        w->pos[i] = (int32_t)(i % s->T);
        w->ids[i] = (int32_t)((i * 2654435761u) % (uint64_t)s->vocab_rows); /* scattered rows */
        w->idx[i] = 0;
    }
    for (int64_t i = 0; i < s->xent_rows; i++) w->tgt[i] = (int32_t)((i * 40503u) % (uint64_t)s->V);
    for (int64_t i = 0; i < n * s->Hq * s->hd && i < big; i++) w->buf[0][i] *= 0.5f;
    zaya_attention_forward(w->buf[3], w->lse, w->buf[0], w->buf[1], w->buf[2], s->B, s->T, s->Hq, s->Hkv, s->hd,
                           1.0f / sqrtf((float)s->hd)); /* valid out/lse for the backward */
    for (int64_t q = 0; q < s->B; q++) {
        w->kc[q] = w->buf[1] + q * s->T * s->Hkv * s->hd;
        w->vc[q] = w->buf[2] + q * s->T * s->Hkv * s->hd;
        w->dpos[q] = s->T - 1;
        w->drows[q] = 1;
    }
    return ZAYA_OK;
}

/* STREAM triad over double arrays (the bandwidth peer). */
static zaya_status triad_call(void *ctx) {
    zaya_mem_triad_pass(ctx);
    return ZAYA_OK;
}

/* ---- results ---- */

typedef struct krow {
    char set[32], name[40], shape[48], unit[8], peer[12];
    double best_s, value, peer_value, fraction; /* value: GFLOP/s or GB/s */
    double wrapper_gflops, direct_gflops;       /* matmul rows only */
    int in_cache;                               /* memory-bound row whose bytes fit in the LLC */
    int matmul;
} krow;

typedef struct kopts {
    int quick, threads;
    zaya_bench_opts o;
    FILE *out;
} kopts;

static void print_header(FILE *out) {
    fprintf(out, "%-12s %-18s %-24s %10s %9s %-6s %9s %8s\n", "set", "kernel", "shape", "best ms", "rate", "unit", "peer",
           "of peer");
}

static void print_row(const kopts *ko, const krow *r) {
    fprintf(ko->out, "%-12s %-18s %-24s %10.3f %9.1f %-6s %9.1f %7.0f%%\n", r->set, r->name, r->shape, r->best_s * 1e3, r->value,
           r->unit, r->peer_value, 100 * r->fraction);
    fflush(ko->out);
}

static void set_shapes(int quick, kshape *sets, int *nsets) {
    zaya_config sm, big;
    zaya_config_preset("zaya1-small", &sm);
    zaya_config_preset("zaya1-8b", &big);
    const zaya_config *cf[2] = {&sm, &big};
    const char *lab[2] = {"zaya1-small", "8b-block"};
    /* The 8b block at B=2, T=2048 makes the [n, D] activations 32 MiB: larger than a typical LLC. */
    int64_t Bs[2] = {quick ? 2 : 4, quick ? 1 : 2}, Ts[2] = {quick ? 256 : 512, quick ? 512 : 2048};
    int k = 0;
    for (int i = 0; i < 2; i++) {
        kshape *s = &sets[k++];
        memset(s, 0, sizeof *s);
        snprintf(s->label, sizeof s->label, "%s", lab[i]);
        s->B = Bs[i], s->T = Ts[i], s->n = s->B * s->T;
        s->D = cf[i]->hidden_size, s->Hq = cf[i]->num_attention_heads, s->Hkv = cf[i]->num_key_value_heads;
        s->hd = cf[i]->head_dim, s->rot = zaya_config_rot_dims(cf[i]), s->F = cf[i]->moe_intermediate_size;
        s->E = cf[i]->num_experts, s->V = cf[i]->vocab_size, s->k0 = cf[i]->cca_time0, s->k1 = cf[i]->cca_time1;
        s->vocab_rows = s->V < 16384 ? s->V : 16384;
        s->xent_rows = imax(1, (4 * s->n * s->D) / s->V);
        if (s->xent_rows > s->n) s->xent_rows = s->n;
    }
    if (!quick) /* attention of the 8b-like block at shorter sequences */
        for (int64_t T = 512; T <= 1024; T *= 2) {
            kshape *s = &sets[k++];
            *s = sets[1];
            snprintf(s->label, sizeof s->label, "8b-T%d", (int)T);
            s->B = 1, s->T = T, s->n = T, s->attn_only = 1;
            s->xent_rows = imax(1, (4 * s->n * s->D) / s->V);
        }
    *nsets = k;
}

/* Matmul wrapper vs oneDNN directly at the block's GEMM shapes (acceptance rows). */
static zaya_status run_matmuls(const kshape *s, zaya_dtype dt, double peak, const kopts *ko, krow *rows, int *nrows,
                               zaya_progress *prog, int64_t *done) {
    const int64_t n = s->n, ne = imax(1, n / s->E);
    struct { const char *name; int ta, tb; int64_t m, nn, k; } g[] = {
        {"qkv_proj fwd", 0, 1, n, (s->Hq + 2 * s->Hkv) * s->hd, s->D},
        {"o_proj fwd", 0, 1, n, s->D, s->Hq * s->hd},
        {"o_proj dgrad", 0, 0, n, s->Hq * s->hd, s->D},
        {"expert_fc1 fwd", 0, 1, ne, 2 * s->F, s->D},
        {"expert_fc2 fwd", 0, 1, ne, s->D, s->F},
        {"expert_fc1 wgrad", 1, 0, 2 * s->F, s->D, ne},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        zaya_matmul_desc d = {.dtype = dt, .trans_a = g[i].ta, .trans_b = g[i].tb, .m = g[i].m, .n = g[i].nn, .k = g[i].k};
        zaya_bench_stats sw, sd;
        ZAYA_TRY(zaya_bench_matmul_compare(&d, &ko->o, &sw, &sd));
        krow *r = &rows[(*nrows)++];
        memset(r, 0, sizeof *r);
        r->matmul = 1;
        snprintf(r->set, sizeof r->set, "%.31s", s->label);
        snprintf(r->name, sizeof r->name, "matmul %s %s", dt == ZAYA_DTYPE_BF16 ? "bf16" : "f32", g[i].name);
        snprintf(r->shape, sizeof r->shape, "%lldx%lldx%lld%s%s", (long long)g[i].m, (long long)g[i].nn,
                 (long long)g[i].k, g[i].ta ? " tA" : "", g[i].tb ? " tB" : "");
        double fl = zaya_matmul_flops(&d);
        r->best_s = sw.best_s;
        r->wrapper_gflops = r->value = fl / sw.best_s * 1e-9;
        r->direct_gflops = fl / sd.best_s * 1e-9;
        r->peer_value = peak;
        r->fraction = r->value / peak;
        snprintf(r->unit, sizeof r->unit, "GF/s");
        snprintf(r->peer, sizeof r->peer, "peak %s", dt == ZAYA_DTYPE_BF16 ? "bf16" : "f32");
        print_row(ko, r);
        zaya_progress_update(prog, ++*done, r->name);
    }
    return ZAYA_OK;
}

static cJSON *rows_json(const krow *rows, int n, const kopts *ko, double peak[2], int64_t peak_n[2], double stream_gbps,
                        double triad_bytes) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "zaya-bench-kernels");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddNumberToObject(root, "threads", ko->threads);
    cJSON_AddBoolToObject(root, "quick", ko->quick);
    cJSON_AddNumberToObject(root, "reps", ko->o.reps);
    cJSON *pk = cJSON_AddObjectToObject(root, "peak_gflops");
    cJSON_AddNumberToObject(pk, "f32", peak[0]);
    cJSON_AddNumberToObject(pk, "bf16", peak[1]);
    cJSON_AddNumberToObject(pk, "f32_n", (double)peak_n[0]);
    cJSON_AddNumberToObject(pk, "bf16_n", (double)peak_n[1]);
    cJSON_AddNumberToObject(root, "stream_triad_GBps", stream_gbps);
    cJSON_AddNumberToObject(root, "triad_peer_bytes", triad_bytes);
    cJSON *arr = cJSON_AddArrayToObject(root, "kernels");
    for (int i = 0; i < n; i++) {
        const krow *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "set", r->set);
        cJSON_AddStringToObject(o, "kernel", r->name);
        cJSON_AddStringToObject(o, "shape", r->shape);
        cJSON_AddNumberToObject(o, "best_s", r->best_s);
        cJSON_AddStringToObject(o, "unit", r->unit);
        cJSON_AddNumberToObject(o, "rate", r->value);
        cJSON_AddStringToObject(o, "peer", r->peer);
        cJSON_AddNumberToObject(o, "peer_rate", r->peer_value);
        cJSON_AddNumberToObject(o, "fraction", r->fraction);
        if (r->matmul) {
            cJSON_AddNumberToObject(o, "direct_gflops", r->direct_gflops);
            cJSON_AddNumberToObject(o, "wrapper_over_direct", r->wrapper_gflops / r->direct_gflops);
        }
        if (!strcmp(r->unit, "GB/s")) cJSON_AddBoolToObject(o, "fits_in_llc", r->in_cache);
        cJSON_AddItemToArray(arr, o);
    }
    return root;
}

static zaya_status write_outputs(const char *dir, cJSON *root, const krow *rows, int n) {
    char path[4096];
    ZAYA_TRY(zaya_mkdir_p(dir));
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, "kernels.json"));
    ZAYA_TRY(zaya_json_write_file(path, root, 1));
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, "kernels.csv"));
    size_t cap = (size_t)(n + 1) * 256, len = 0;
    char *csv = malloc(cap);
    if (!csv) return zaya_error_set(ZAYA_ENOMEM, "kernels.csv");
    len += (size_t)snprintf(csv + len, cap - len, "set,kernel,shape,best_s,rate,unit,peer,peer_rate,fraction,direct_gflops\n");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(csv + len, cap - len, "%s,%s,%s,%.9g,%.6g,%s,%s,%.6g,%.6g,%.6g\n", rows[i].set,
                                rows[i].name, rows[i].shape, rows[i].best_s, rows[i].value, rows[i].unit, rows[i].peer,
                                rows[i].peer_value, rows[i].fraction, rows[i].direct_gflops);
    zaya_status s = zaya_write_file_atomic(path, csv, len);
    free(csv);
    return s;
}

zaya_status zaya_bench_kernels_run(const zaya_bench_kernels_opts *o, FILE *out) {
    kopts ko = {.quick = o->quick, .threads = o->threads, .out = out};
    const int reps = o->reps;
    const char *outdir = o->out, *only = o->only;
    if (reps < 0 || reps > 1000) return zaya_error_set(ZAYA_EINVAL, "reps must be in 1..1000 (got %d)", reps);
    ko.threads = zaya_threads_init(ko.threads);
    ko.o = (zaya_bench_opts){1, reps ? reps : (ko.quick ? 2 : 5), 2e-3, 0};

    kshape sets[4];
    int nsets = 0;
    set_shapes(ko.quick, sets, &nsets);
    krow *rows = calloc(256, sizeof *rows);
    zaya_mem_triad tri = {0};
    zaya_bench_matmul_peer *peer = NULL;
    kws ws = {0};
    zaya_status st = rows ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "bench kernels: result table");
    double peak[2] = {0, 0};
    int64_t peak_n[2] = {0, 0};
    static const int64_t sizes_full[] = {1024, 1536, 2048}, sizes_quick[] = {1024};
    fprintf(out, "# zaya bench kernels: %d threads, %d samples per kernel%s\n", ko.threads, ko.o.reps, ko.quick ? " (quick)" : "");
    zaya_bench_opts po = {1, ko.quick ? 2 : 4, 0, 0};
    for (int d = 0; d < 2 && st == ZAYA_OK; d++) {
        fprintf(stderr, "# measuring the %s matmul peak (oneDNN directly)\n", d ? "bf16" : "f32");
        st = zaya_bench_matmul_peak((zaya_dtype)d, ko.quick ? sizes_quick : sizes_full, ko.quick ? 1 : 3, &po, &peak[d],
                                    &peak_n[d]);
    }
    double stream = 0;
    if (st == ZAYA_OK) {
        fprintf(stderr, "# measuring STREAM triad\n");
        stream = zaya_bench_stream_triad_gbps(ko.threads);
        if (stream <= 0) st = ZAYA_EBACKEND; /* zaya_bench_stream left the message */
    }
    if (st == ZAYA_OK) {
        fprintf(out, "# peak: f32 %.1f GFLOP/s (n=%lld), bf16 %.1f GFLOP/s (n=%lld); STREAM triad %.2f GB/s\n", peak[0],
               (long long)peak_n[0], peak[1], (long long)peak_n[1], stream);
        st = zaya_mem_triad_init(&tri, zaya_mem_stream_elems());
    }
    if (st == ZAYA_OK) {
        zaya_matmul_desc pd = {.m = peak_n[0], .n = peak_n[0], .k = peak_n[0]};
        st = zaya_bench_matmul_peer_init(&pd, &peer);
    }
    int nrows = 0;
    const int64_t llc = zaya_mem_llc_bytes();
    int64_t total = 0, done = 0;
    for (int i = 0; i < nsets; i++) total += sets[i].attn_only ? 3 : K_COUNT + 12;
    zaya_progress prog;
    zaya_progress_init(&prog, "kernels", "case", total);
    if (st == ZAYA_OK) print_header(out);
    for (int si = 0; si < nsets && st == ZAYA_OK; si++) {
        const kshape *s = &sets[si];
        st = ws_init(&ws, s);
        for (int id = 0; id < K_COUNT && st == ZAYA_OK; id++) {
            if (s->attn_only && id != K_ATT_F && id != K_ATT_B && id != K_DECODE) continue;
            if (only && !strstr(k_names[id], only)) continue;
            kcase c = {.id = id, .ws = &ws};
            describe(&c);
            zaya_bench_stats ks, ps;
            if (c.kind == KIND_MEM) st = zaya_bench_time_pair(run_case, &c, triad_call, &tri, &ko.o, &ks, &ps);
            else st = zaya_bench_time_pair(run_case, &c, zaya_bench_matmul_peer_call, peer, &ko.o, &ks, &ps);
            if (st != ZAYA_OK) break;
            krow *r = &rows[nrows++];
            memset(r, 0, sizeof *r);
            snprintf(r->set, sizeof r->set, "%.31s", s->label);
            snprintf(r->name, sizeof r->name, "%s", k_names[id]);
            snprintf(r->shape, sizeof r->shape, "%s", c.shape);
            r->best_s = ks.best_s;
            if (c.kind == KIND_MEM) {
                r->value = c.bytes / ks.best_s * 1e-9;
                r->peer_value = 24.0 * (double)tri.n / ps.best_s * 1e-9;
                r->in_cache = llc > 0 && c.bytes < 2.0 * (double)llc; /* repeated calls hit the cache */
                snprintf(r->unit, sizeof r->unit, "GB/s"), snprintf(r->peer, sizeof r->peer, "triad");
            } else {
                r->value = c.flops / ks.best_s * 1e-9;
                r->peer_value = zaya_bench_matmul_peer_flops(peer) / ps.best_s * 1e-9;
                if (r->peer_value > peak[0]) peak[0] = r->peer_value; /* the peak is the best seen */
                snprintf(r->unit, sizeof r->unit, "GF/s"), snprintf(r->peer, sizeof r->peer, "peak f32");
            }
            r->fraction = r->value / r->peer_value;
            print_row(&ko, r);
            zaya_progress_update(&prog, ++done, r->name);
        }
        if (st == ZAYA_OK && !s->attn_only && (!only || strstr("matmul", only)))
            for (int d = 0; d < 2 && st == ZAYA_OK; d++)
                st = run_matmuls(s, (zaya_dtype)d, peak[d], &ko, rows, &nrows, &prog, &done);
        ws_free(&ws);
    }
    if (st == ZAYA_OK) {
        zaya_progress_finish(&prog, NULL);
        /* Acceptance summary. */
        double worst_mm = 1e30, worst_mem = 1e30;
        const char *wm = "", *wk = "";
        for (int i = 0; i < nrows; i++) {
            const krow *r = &rows[i];
            if (r->matmul && r->wrapper_gflops / r->direct_gflops < worst_mm)
                worst_mm = r->wrapper_gflops / r->direct_gflops, wm = r->name;
            if (!strcmp(r->unit, "GB/s") && !r->in_cache && r->fraction < worst_mem) worst_mem = r->fraction, wk = r->name;
        }
        fprintf(out, "\n# acceptance: matmul wrapper vs oneDNN called directly (target >= 95%%)\n");
        fprintf(out, "%-12s %-26s %-20s %10s %10s %8s\n", "set", "gemm", "m x n x k", "zaya GF/s", "oneDNN", "ratio");
        for (int i = 0; i < nrows; i++)
            if (rows[i].matmul)
                fprintf(out, "%-12s %-26s %-20s %10.1f %10.1f %7.1f%%\n", rows[i].set, rows[i].name + 7, rows[i].shape,
                       rows[i].wrapper_gflops, rows[i].direct_gflops, 100 * rows[i].wrapper_gflops / rows[i].direct_gflops);
        fprintf(out, "# acceptance: memory-bound kernels vs interleaved STREAM triad (target >= 50%%)\n");
        for (int i = 0; i < nrows; i++)
            if (!strcmp(rows[i].unit, "GB/s"))
                fprintf(out, "%-12s %-18s %7.1f GB/s of %6.1f = %4.0f%% %s%s\n", rows[i].set, rows[i].name, rows[i].value,
                       rows[i].peer_value, 100 * rows[i].fraction, rows[i].fraction >= 0.5 ? "ok" : "BELOW",
                       rows[i].in_cache ? " (fits in the LLC: a cache figure, not DRAM)" : "");
        if (worst_mm < 1e30) fprintf(out, "# worst wrapper/direct: %.1f%% (%s)\n", 100 * worst_mm, wm);
        if (worst_mem < 1e30) fprintf(out, "# worst DRAM-sized memory-bound fraction of triad: %.0f%% (%s)\n", 100 * worst_mem, wk);
        cJSON *root = rows_json(rows, nrows, &ko, peak, peak_n, stream, 24.0 * (double)tri.n);
        st = write_outputs(outdir, root, rows, nrows);
        cJSON_Delete(root);
        if (st == ZAYA_OK) fprintf(out, "# results written to %s (kernels.json, kernels.csv)\n", outdir);
    }
    zaya_bench_matmul_peer_free(peer);
    zaya_mem_triad_free(&tri);
    free(rows);
    return st;
}
