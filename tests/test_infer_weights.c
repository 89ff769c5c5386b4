/* Inference weight store and bf16 inference: random bf16 weights are the rounded values of the
 * model's init; a bf16 store (mapped HF shards, converted HF shards, a bf16 zaya checkpoint used in
 * place, an f32 zaya checkpoint converted) gives the same logits whichever way it was filled; bf16
 * inference (bf16 weights, bf16 activations into the products, bf16 KV cache) follows the f32 engine
 * on the same bf16-rounded weights within a measured tolerance, with the same greedy tokens; the
 * store's own allocations hold no f32 matrix; bad checkpoints are errors that name the problem. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/bf16.h"
#include "zaya/ckpt.h"
#include "zaya/infer.h"
#include "zaya/infer_weights.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/model.h"
#include "zaya/rng.h"

static char g_root[256];

static zaya_config cfg_small(void) {
    zaya_config c;
    zaya_config_preset("zaya1-tiny", &c);
    c.vocab_size = 61;
    c.hidden_size = 48;
    c.num_hidden_layers = 3;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 8;
    c.num_experts = 3;
    c.moe_intermediate_size = 16;
    c.router_hidden_size = 8;
    c.max_position_embeddings = 64;
    c.skip_mode = ZAYA_SKIP_IDENTITY;
    return c;
}

#define PROMPT 9
#define STEPS 6

/* Prefill PROMPT tokens (every row's logits), then STEPS decode steps fed with `feed` (teacher
 * forcing, so both engines see the same inputs); logits [(PROMPT + STEPS) , V]. */
static void run(zaya_infer *e, const int32_t *prompt, const int32_t *feed, float *logits, int64_t V) {
    int64_t slot = 0, n = PROMPT;
    zaya_infer_reset(e, 0);
    CHECK(zaya_infer_step(e, 1, &slot, &n, prompt, logits, 1) == ZAYA_OK, "prefill: %s", zaya_error_message());
    n = 1;
    for (int i = 0; i < STEPS; i++)
        CHECK(zaya_infer_step(e, 1, &slot, &n, feed + i, logits + (PROMPT + i) * V, 0) == ZAYA_OK, "decode: %s",
              zaya_error_message());
}

/* cap: rows per internal step (> ZAYA_INFER_GEMV_ROWS: the prefill goes through oneDNN) */
static void run_weights(const zaya_infer_weights *w, const int32_t *prompt, const int32_t *feed, float *logits,
                        int64_t cap) {
    zaya_infer *e = NULL;
    zaya_infer_opts o = {.max_seqs = 1, .max_len = PROMPT + STEPS + 1, .max_step_tokens = cap, .gemv = 1};
    CHECK(zaya_infer_init_weights(&e, w, &o) == ZAYA_OK, "engine: %s", zaya_error_message());
    if (!e) return;
    run(e, prompt, feed, logits, w->cfg.vocab_size);
    zaya_infer_free(e);
}

static int64_t matrix_numel(const zaya_infer_weights *w) {
    int64_t n = 0;
    for (int i = 0; i < w->ntensors; i++)
        if (zaya_infer_is_matrix(&w->tensors[i])) n += w->tensors[i].numel;
    return n;
}

/* Random bf16 weights: bit for bit the rounded f32 init; vectors exact; own buffers only. */
static void test_random(const zaya_config *c) {
    zaya_model m;
    CHECK(zaya_model_init(&m, c, ZAYA_DTYPE_F32) == ZAYA_OK, "model");
    zaya_model_init_weights(&m, 5);
    zaya_infer_weights w;
    CHECK(zaya_infer_weights_random(&w, c, ZAYA_DTYPE_BF16, 5) == ZAYA_OK, "random store: %s", zaya_error_message());
    int64_t bad = 0;
    for (int i = 0; i < w.ntensors; i++) {
        const zaya_tensor_info *t = &w.tensors[i];
        const float *ref = m.params + m.tensors[i].offset;
        for (int64_t j = 0; j < t->numel; j++) {
            if (zaya_infer_is_matrix(t)) bad += ((const uint16_t *)w.data[i])[j] != zaya_f32_to_bf16(ref[j]);
            else bad += ((const float *)w.data[i])[j] != ref[j];
        }
    }
    CHECK(bad == 0, "%lld random values differ from the model's init", (long long)bad);
    CHECK(w.matrix_bytes == 2 * matrix_numel(&w), "matrix bytes %lld are bf16", (long long)w.matrix_bytes);
    CHECK(w.owned_bytes >= w.matrix_bytes + w.vector_bytes &&
              w.owned_bytes <= w.matrix_bytes + w.vector_bytes + 64 * (int64_t)w.ntensors,
          "owned %lld = bf16 matrices %lld + f32 vectors %lld (+ alignment): no f32 matrix", (long long)w.owned_bytes,
          (long long)w.matrix_bytes, (long long)w.vector_bytes);
    CHECK(w.mapped_bytes == 0, "nothing mapped");
    zaya_infer_weights_free(&w);
    zaya_model_free(&m);
}

static void save(const zaya_model *m, const char *root, zaya_st_dtype dt) {
    zaya_ckpt_options o = zaya_ckpt_default_options();
    o.model_dtype = dt;
    zaya_ckpt_writer *w;
    CHECK(zaya_ckpt_writer_init(&w, root, 1, 0, &o, NULL) == ZAYA_OK, "writer");
    zaya_ckpt_writer_add_model_params(w, m);
    CHECK(zaya_ckpt_writer_commit(w, NULL) == ZAYA_OK, "save: %s", zaya_error_message());
}

static double max_rel(const float *a, const float *b, int64_t n) {
    double mx = 1e-30, e = 0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs(b[i]));
    for (int64_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - b[i]));
    return e / mx;
}

static void test_sources_and_parity(const zaya_config *c) {
    const int64_t V = c->vocab_size, rows = PROMPT + STEPS;
    zaya_model m;
    CHECK(zaya_model_init(&m, c, ZAYA_DTYPE_F32) == ZAYA_OK, "model");
    zaya_model_init_weights(&m, 1);
    th_randomize_model(&m, 3); /* every tensor non-trivial: a mis-bound pointer shows */
    zaya_round_bf16_n(m.params, (size_t)m.nfloats); /* the weights bf16 storage holds */

    int32_t prompt[PROMPT], feed[STEPS];
    for (int i = 0; i < PROMPT; i++) prompt[i] = (int32_t)(zaya_rng_u32_at(9, 0, (uint64_t)i) % (uint32_t)V);
    /* f32 engine on the rounded weights: the reference; its greedy tokens are fed to every engine */
    float *ref = th_alloc(rows * V);
    {
        zaya_infer *e = NULL;
        zaya_infer_opts o = {.max_seqs = 1, .max_len = PROMPT + STEPS + 1, .max_step_tokens = 16, .gemv = 1};
        CHECK(zaya_infer_init(&e, &m, &o) == ZAYA_OK, "f32 engine");
        int64_t slot = 0, n = PROMPT;
        zaya_infer_reset(e, 0);
        zaya_infer_step(e, 1, &slot, &n, prompt, ref, 1);
        n = 1;
        for (int i = 0; i < STEPS; i++) {
            feed[i] = zaya_argmax(ref + (PROMPT - 1 + i) * V, V);
            zaya_infer_step(e, 1, &slot, &n, feed + i, ref + (PROMPT + i) * V, 0);
        }
        zaya_infer_free(e);
    }

    char ck32[300], ck16[300], hf[300];
    snprintf(ck32, sizeof ck32, "%s/ck32", g_root);
    snprintf(ck16, sizeof ck16, "%s/ck16", g_root);
    snprintf(hf, sizeof hf, "%s/hf16", g_root);
    save(&m, ck32, ZAYA_ST_F32);
    save(&m, ck16, ZAYA_ST_BF16);
    zaya_hf_export_opts xo = {ZAYA_ST_BF16, 6000, NULL}; /* several shards */
    int nshards = 0;
    CHECK(zaya_ckpt_export_hf(ck32, hf, &xo, &nshards) == ZAYA_OK && nshards > 2, "bf16 HF export (%d shards): %s",
          nshards, zaya_error_message());

    struct { const char *path; int map; int mapped; const char *what; } src[] = {
        {hf, 1, 1, "HF bf16 shards, mapped"},
        {hf, 0, 0, "HF bf16 shards, converted"},
        {ck16, 1, 1, "bf16 zaya checkpoint, mapped"},
        {ck32, 1, 0, "f32 zaya checkpoint, converted"},
    };
    float *out[4];
    for (int k = 0; k < 4; k++) {
        out[k] = th_alloc(rows * V);
        zaya_infer_weights w;
        CHECK(zaya_infer_weights_load(&w, src[k].path, ZAYA_DTYPE_BF16, src[k].map) == ZAYA_OK, "%s: %s", src[k].what,
              zaya_error_message());
        if (!w.tensors) continue;
        if (src[k].mapped) {
            CHECK(w.mapped_bytes == w.matrix_bytes && w.owned_bytes <= w.vector_bytes + 64 * (int64_t)w.ntensors,
                  "%s: every matrix in place (%lld of %lld B), owned %lld B", src[k].what, (long long)w.mapped_bytes,
                  (long long)w.matrix_bytes, (long long)w.owned_bytes);
        } else {
            CHECK(w.mapped_bytes == 0 && w.owned_bytes <= w.matrix_bytes + w.vector_bytes + 64 * (int64_t)w.ntensors,
                  "%s: converted into bf16 buffers (owned %lld B)", src[k].what, (long long)w.owned_bytes);
        }
        run_weights(&w, prompt, feed, out[k], 16);
        zaya_infer_weights_free(&w);
    }
    /* the same bf16 values whichever way they were stored: the same logits, bit for bit */
    for (int k = 1; k < 4; k++)
        CHECK(!memcmp(out[k], out[0], (size_t)(rows * V) * sizeof(float)), "%s: logits differ from %s (%.3e)",
              src[k].what, src[0].what, max_rel(out[k], out[0], rows * V));

    /* bf16 inference vs the f32 engine on the same weights (measured: ~5e-3 of the logit range; the
     * bf16 rounding of activations and K/V is the whole difference) */
    double worst = 0;
    for (int64_t r = 0; r < rows; r++) worst = fmax(worst, max_rel(out[0] + r * V, ref + r * V, V));
    CHECK_ERR("bf16 vs f32 engine logits", worst, 3e-2);
    CHECK(worst > 0, "bf16 inference is exactly f32 (are the products really bf16?)");
    for (int i = 0; i < STEPS; i++) {
        const int32_t a = zaya_argmax(out[0] + (PROMPT - 1 + i) * V, V), b = zaya_argmax(ref + (PROMPT - 1 + i) * V, V);
        CHECK(a == b, "greedy token %d: bf16 %d, f32 %d", i, a, b);
    }
    fprintf(stderr, "bf16 vs f32 engine: max relative logit error %.3e over %lld rows\n", worst, (long long)rows);

    /* a config that does not fit the shards: the tensor and the shapes are named, nothing is kept */
    char cfgp[400];
    snprintf(cfgp, sizeof cfgp, "%s/config.json", hf);
    cJSON *cj = NULL;
    CHECK(zaya_json_load_file(cfgp, &cj) == ZAYA_OK, "config.json");
    if (cj) {
        cJSON_ReplaceItemInObject(cj, "moe_intermediate_size", cJSON_CreateNumber(17));
        CHECK(zaya_json_write_file(cfgp, cj, 1) == ZAYA_OK, "write config");
        cJSON_Delete(cj);
        zaya_infer_weights w;
        CHECK(zaya_infer_weights_load(&w, hf, ZAYA_DTYPE_BF16, 1) == ZAYA_EFORMAT &&
                  strstr(zaya_error_message(), "experts.gate_up_proj") && strstr(zaya_error_message(), "has shape"),
              "shape mismatch: %s", zaya_error_message());
        CHECK(w.tensors == NULL && w.data == NULL, "failed load leaves an empty store");
    }
    /* a truncated shard: the reader's validation names the file */
    char shard[400];
    snprintf(shard, sizeof shard, "%s/model-00001-of-%05d.safetensors", hf, nshards);
    CHECK(truncate(shard, 100) == 0, "truncate");
    {
        char hf2[300];
        snprintf(hf2, sizeof hf2, "%s", hf);
        zaya_infer_weights w;
        CHECK(zaya_infer_weights_load(&w, hf2, ZAYA_DTYPE_BF16, 1) != ZAYA_OK && strstr(zaya_error_message(), "model-00001"),
              "truncated shard: %s", zaya_error_message());
    }
    for (int k = 0; k < 4; k++) free(out[k]);
    free(ref);
    zaya_model_free(&m);
}

/* A bf16 store over a model's view: the same as a bf16 model through zaya_infer_init. */
static void test_view(const zaya_config *c) {
    zaya_model m;
    CHECK(zaya_model_init(&m, c, ZAYA_DTYPE_BF16) == ZAYA_OK, "bf16 model");
    zaya_model_init_weights(&m, 2);
    zaya_infer_weights w;
    CHECK(zaya_infer_weights_view(&w, &m) == ZAYA_OK, "view");
    CHECK(w.dtype == ZAYA_DTYPE_BF16 && w.owned_bytes == 0 && w.embed == (const void *)m.params_bf16 &&
              w.layers[1].in_norm == m.p.layers[1].in_norm,
          "view points into the model");
    zaya_infer_weights r;
    CHECK(zaya_infer_weights_random(&r, c, ZAYA_DTYPE_BF16, 2) == ZAYA_OK, "random");
    int32_t prompt[PROMPT], feed[STEPS];
    for (int i = 0; i < PROMPT; i++) prompt[i] = (int32_t)(i * 7 % c->vocab_size);
    for (int i = 0; i < STEPS; i++) feed[i] = (int32_t)(i * 5 % c->vocab_size);
    const int64_t n = (PROMPT + STEPS) * c->vocab_size;
    float *a = th_alloc(n), *b = th_alloc(n);
    /* GEMV rows only: one fused q|k product (view) and two (store) then give the same bits */
    run_weights(&w, prompt, feed, a, 4);
    run_weights(&r, prompt, feed, b, 4);
    CHECK(!memcmp(a, b, (size_t)n * sizeof(float)), "model view and random store differ (%.3e)", max_rel(a, b, n));
    free(a), free(b);
    zaya_infer_weights_free(&r);
    zaya_infer_weights_free(&w);
    zaya_model_free(&m);
}

/* Bytes a batch-1 decode step reads: every dense matrix once (the tied head whole), the embedding
 * row, the experts that got the token (a whole number of them, at most one per block) and every
 * cached K/V row; and the bound computed from them. */
static void test_bytes_read(const zaya_config *c) {
    zaya_infer_weights w;
    CHECK(zaya_infer_weights_random(&w, c, ZAYA_DTYPE_BF16, 4) == ZAYA_OK, "random");
    zaya_infer *e = NULL;
    zaya_infer_opts o = {.max_seqs = 1, .max_len = 8, .max_step_tokens = 8, .gemv = 1};
    CHECK(zaya_infer_init_weights(&e, &w, &o) == ZAYA_OK, "engine");
    if (!e) return;
    const int64_t D = c->hidden_size, F = c->moe_intermediate_size, L = c->num_hidden_layers;
    const int64_t kvd = c->num_key_value_heads * c->head_dim;
    int64_t dense = 0;
    for (int i = 0; i < w.ntensors; i++)
        if (zaya_infer_is_matrix(&w.tensors[i]) && w.tensors[i].nmatrix == 1) dense += 2 * w.tensors[i].numel;
    const int64_t expert = 2 * 3 * F * D;
    int64_t slot = 0, n = 3;
    const int32_t ids[4] = {1, 2, 3, 4};
    CHECK(zaya_infer_step(e, 1, &slot, &n, ids, NULL, 0) == ZAYA_OK, "prefill");
    const int64_t b0 = zaya_infer_bytes_read(e);
    n = 1;
    float *lg = th_alloc(c->vocab_size);
    CHECK(zaya_infer_step(e, 1, &slot, &n, ids + 3, lg, 0) == ZAYA_OK, "decode");
    const int64_t got = zaya_infer_bytes_read(e) - b0, kv = L * 2 * 4 * kvd * 2; /* 4 cached positions, bf16 */
    const int64_t rest = got - dense - 2 * D - kv;
    CHECK(rest >= 0 && rest % expert == 0 && rest / expert <= L, "decode step read %lld B: dense %lld + row %lld + KV "
          "%lld + %lld experts of %lld B", (long long)got, (long long)dense, (long long)(2 * D), (long long)kv,
          (long long)(expert ? rest / expert : -1), (long long)expert);
    const zaya_decode_bound b = zaya_infer_decode_bound(got * 10, 10, 0.5, 2.0);
    CHECK(fabs(b.bytes_per_token - (double)got) < 1e-6 && fabs(b.tps - 20.0) < 1e-9 &&
              fabs(b.bound_tps - 2e9 / (double)got) < 1e-6 && fabs(b.fraction - 20.0 * (double)got / 2e9) < 1e-12,
          "decode bound arithmetic");
    free(lg);
    zaya_infer_free(e);
    zaya_infer_weights_free(&w);
}

/* An HF directory exported from the random init (streamed, several shards, f32 and bf16) holds the
 * random store's values bit for bit; the bf16 one is used in place from its shards. Bad requests
 * write nothing. */
static void test_export_random(const zaya_config *c) {
    zaya_infer_weights r[2];
    const zaya_dtype dts[2] = {ZAYA_DTYPE_F32, ZAYA_DTYPE_BF16};
    const zaya_st_dtype sts[2] = {ZAYA_ST_F32, ZAYA_ST_BF16};
    for (int k = 0; k < 2; k++) {
        CHECK(zaya_infer_weights_random(&r[k], c, dts[k], 11) == ZAYA_OK, "random store");
        char dir[300];
        snprintf(dir, sizeof dir, "%s/hf_random_%d", g_root, k);
        zaya_hf_export_opts xo = {sts[k], 3000, NULL};
        int nshards = 0;
        CHECK(zaya_ckpt_export_hf_random(c, 11, dir, &xo, &nshards) == ZAYA_OK && nshards > 2,
              "random export (%d shards): %s", nshards, zaya_error_message());
        zaya_infer_weights w;
        CHECK(zaya_infer_weights_load(&w, dir, dts[k], 1) == ZAYA_OK, "load export: %s", zaya_error_message());
        if (!w.data) continue;
        int64_t bad = 0;
        for (int i = 0; i < w.ntensors; i++) {
            const zaya_tensor_info *t = &w.tensors[i];
            if (zaya_infer_is_matrix(t) || k == 0) {
                const int64_t esz = zaya_infer_is_matrix(t) && k == 1 ? 2 : 4;
                bad += memcmp(w.data[i], r[k].data[i], (size_t)(t->numel * esz)) != 0;
                continue;
            }
            const float *a = w.data[i], *b = r[k].data[i]; /* vectors: stored bf16, read back as f32 */
            for (int64_t j = 0; j < t->numel; j++)
                if (a[j] != zaya_bf16_to_f32(zaya_f32_to_bf16(b[j]))) {
                    bad++;
                    break;
                }
        }
        CHECK(bad == 0, "%s export: %lld tensors differ from the random store", k ? "bf16" : "f32", (long long)bad);
        CHECK(k == 0 || w.mapped_bytes == w.matrix_bytes, "bf16 export used in place (%lld of %lld bytes mapped)",
              (long long)w.mapped_bytes, (long long)w.matrix_bytes);
        zaya_infer_weights_free(&w);
        zaya_infer_weights_free(&r[k]);
    }
    zaya_config bad = *c;
    bad.num_experts = 0;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/hf_random_bad", g_root);
    CHECK(zaya_ckpt_export_hf_random(&bad, 1, dir, NULL, NULL) == ZAYA_EINVAL && strstr(zaya_error_message(), "num_experts"),
          "invalid config refused naming the key: %s", zaya_error_message());
    CHECK(access(dir, F_OK) != 0, "nothing written for an invalid config");
}

int main(void) {
    zaya_log_set_level(ZAYA_LOG_ERROR);
    snprintf(g_root, sizeof g_root, "/tmp/zaya_test_infer_weights_%d", (int)getpid());
    const zaya_config c = cfg_small();
    test_random(&c);
    test_sources_and_parity(&c);
    test_view(&c);
    test_bytes_read(&c);
    test_export_random(&c);
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_root);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", g_root);
    return th_finish("test_infer_weights");
}
