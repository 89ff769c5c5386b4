/* Inference engine: logits of batched prefill + incremental decode equal the training forward
 * (zaya_model_logits over each whole sequence) at every position, across conv kernel sizes, skip
 * modes, odd widths, prompt lengths 1..beyond the conv window, batches of unequal sequences, and
 * steps split into pieces. Also: error cases leave the caches unchanged, and the memory plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/infer.h"
#include "zaya/rng.h"

static void small_config(zaya_config *c, int64_t k0, int64_t k1, zaya_skip_mode mode, int64_t D) {
    zaya_config_preset("zaya1-tiny", c);
    c->hidden_size = D;
    c->num_hidden_layers = 3; /* EDA crosses two layer boundaries */
    c->num_attention_heads = 4;
    c->num_key_value_heads = 2;
    c->head_dim = 8;
    c->num_experts = 3;
    c->moe_intermediate_size = 10;
    c->router_hidden_size = 6;
    c->vocab_size = 29;
    c->max_position_embeddings = 40;
    c->cca_time0 = k0;
    c->cca_time1 = k1;
    c->skip_mode = mode;
}

/* Every parameter and buffer random (as tests/test_model.c): scales around 1, biases, temperatures,
 * balancing biases all non-trivial. */

/* max over a row of |a - b| / max|b| */
static double row_err(const float *a, const float *b, int64_t V) {
    double mx = 1e-30, e = 0;
    for (int64_t i = 0; i < V; i++) mx = fmax(mx, fabs(b[i]));
    for (int64_t i = 0; i < V; i++) e = fmax(e, fabs((double)a[i] - b[i]));
    return e / mx;
}

#define NSEQ 4

/* Sequences of lengths total[s], prefilled with prompt[s] tokens in one batched step, then decoded
 * one token per active sequence per step; every produced row compared with the full forward. */
static void check_config(const zaya_config *c, const int64_t *prompt, const int64_t *total, int64_t step_cap,
                         int gemv, const char *label) {
    zaya_model m;
    CHECK(zaya_model_init(&m, c, ZAYA_DTYPE_F32) == ZAYA_OK, "init %s", zaya_error_message());
    zaya_model_init_weights(&m, 1);
    th_randomize_model(&m, 7);
    const int skips = c->mlp == ZAYA_MLP_MOE && c->router != ZAYA_ROUTER_LINEAR; /* routers with a skip class */
    if (skips) m.p.layers[1].bal_bias[c->num_experts] = 0.2f; /* make the skip class win for some tokens */
    zaya_model_sync_weights(&m);
    const int64_t V = c->vocab_size;
    int64_t Tmax = 0;
    for (int s = 0; s < NSEQ; s++) Tmax = total[s] > Tmax ? total[s] : Tmax;
    int32_t ids[NSEQ][64];
    float *ref[NSEQ];
    int64_t skipped = 0;
    for (int s = 0; s < NSEQ; s++) {
        for (int64_t t = 0; t < total[s]; t++) ids[s][t] = (int32_t)(zaya_rng_u32_at(3, (uint64_t)s, (uint64_t)t) % (uint32_t)V);
        ref[s] = th_alloc(total[s] * V);
        CHECK(zaya_model_plan(&m, 1, total[s]) == ZAYA_OK, "plan");
        CHECK(zaya_model_logits(&m, ids[s], NULL, ref[s]) == ZAYA_OK, "reference logits");
        for (int64_t l = 0; l < c->num_hidden_layers; l++) skipped += m.route_counts[l * (c->num_experts + 1) + c->num_experts];
    }
    CHECK(skips ? skipped > 0 : skipped == 0, "%s: %lld tokens took the skip class", label, (long long)skipped);

    zaya_infer *e = NULL;
    zaya_infer_opts o = {.max_seqs = NSEQ, .max_len = Tmax, .max_step_tokens = step_cap, .gemv = gemv};
    CHECK(zaya_infer_init(&e, &m, &o) == ZAYA_OK, "infer init: %s", zaya_error_message());
    for (int s = 0; s < NSEQ; s++) zaya_infer_reset(e, s);

    /* prefill, all rows: slots in reverse order to exercise the slot mapping */
    int64_t slots[NSEQ], n[NSEQ], sum = 0;
    int32_t flat[NSEQ * 64];
    for (int s = 0; s < NSEQ; s++) {
        slots[s] = NSEQ - 1 - s;
        n[s] = prompt[s];
        memcpy(flat + sum, ids[s], (size_t)prompt[s] * sizeof(int32_t));
        sum += prompt[s];
    }
    float *lg = th_alloc((sum + NSEQ) * V);
    CHECK(zaya_infer_step(e, NSEQ, slots, n, flat, lg, 1) == ZAYA_OK, "prefill: %s", zaya_error_message());
    double worst = 0;
    int64_t row = 0;
    for (int s = 0; s < NSEQ; s++)
        for (int64_t t = 0; t < prompt[s]; t++, row++) worst = fmax(worst, row_err(lg + row * V, ref[s] + t * V, V));

    /* decode: every sequence that still has tokens gets one per step; logits of the last row only */
    for (int64_t t = 1; t < Tmax; t++) {
        int64_t ns = 0, seqs[NSEQ];
        int32_t tok[NSEQ];
        for (int s = 0; s < NSEQ; s++) {
            if (t < prompt[s] || t >= total[s]) continue;
            seqs[ns] = s;
            slots[ns] = NSEQ - 1 - s;
            n[ns] = 1;
            tok[ns++] = ids[s][t];
        }
        if (ns == 0) continue;
        CHECK(zaya_infer_step(e, ns, slots, n, tok, lg, 0) == ZAYA_OK, "decode: %s", zaya_error_message());
        for (int64_t j = 0; j < ns; j++) {
            const int s = (int)seqs[j];
            CHECK(zaya_infer_len(e, slots[j]) == t + 1, "length");
            worst = fmax(worst, row_err(lg + j * V, ref[s] + t * V, V));
        }
    }
    CHECK_ERR(label, worst, 1e-5);
    printf("%-44s max row-relative error %.2e\n", label, worst);

    /* errors change nothing: an id outside the vocabulary, a sequence over max_len */
    int64_t len0 = zaya_infer_len(e, 0), one = 1, big = Tmax + 1, slot0 = 0;
    int32_t bad = (int32_t)V;
    CHECK(zaya_infer_step(e, 1, &slot0, &one, &bad, lg, 0) == ZAYA_ERANGE, "bad id accepted");
    int32_t *many = calloc((size_t)big, sizeof(int32_t));
    CHECK(zaya_infer_step(e, 1, &slot0, &big, many, lg, 0) == ZAYA_ERANGE, "overlong sequence accepted");
    CHECK(zaya_infer_len(e, 0) == len0, "a failed step changed the cache");
    free(many);

    zaya_infer_free(e);
    for (int s = 0; s < NSEQ; s++) free(ref[s]);
    free(lg);
    zaya_model_free(&m);
}

/* The architecture variants (docs/model.md "Variants") through prefill and decode. */
static void test_variants(void) {
    const int64_t prompt[NSEQ] = {1, 2, 5, 9}, total[NSEQ] = {11, 6, 5, 14};
    for (int v = 0; v < 5; v++) {
        zaya_config c;
        small_config(&c, 2, 3, ZAYA_SKIP_IDENTITY, 16);
        const char *label = "router zaya_no_eda";
        if (v == 0) c.router = ZAYA_ROUTER_NO_EDA;
        if (v == 1) c.router = ZAYA_ROUTER_LINEAR, label = "router linear";
        if (v == 2) c.mlp = ZAYA_MLP_DENSE, c.dense_intermediate_size = 7, label = "mlp dense (width 7)";
        if (v == 3) c.residual = ZAYA_RESIDUAL_PLAIN, label = "residual scaling off";
        if (v == 4) c.mlp = ZAYA_MLP_DENSE, c.residual = ZAYA_RESIDUAL_PLAIN, label = "mlp dense, residual scaling off";
        check_config(&c, prompt, total, 0, 1, label);
        check_config(&c, prompt, total, 4, 0, label);
    }
}

static void test_equivalence(void) {
    const int64_t prompt_a[NSEQ] = {1, 2, 5, 9}, total_a[NSEQ] = {11, 6, 5, 14};
    const int64_t prompt_b[NSEQ] = {3, 1, 12, 4}, total_b[NSEQ] = {9, 13, 15, 4};
    const int64_t ks[][2] = {{2, 2}, {3, 3}, {2, 3}, {3, 2}};
    for (int i = 0; i < 4; i++)
        for (int mode = 0; mode < 2; mode++) {
            zaya_config c;
            small_config(&c, ks[i][0], ks[i][1], (zaya_skip_mode)mode, i % 2 ? 21 : 16);
            char label[96];
            snprintf(label, sizeof label, "k=(%lld,%lld) %s D=%lld", (long long)ks[i][0], (long long)ks[i][1],
                     mode ? "zero" : "identity", (long long)c.hidden_size);
            check_config(&c, prompt_a, total_a, 0, 1, label);
            /* small step capacity: prefill split across pieces, including mid-sequence splits; oneDNN path */
            strcat(label, " cap=4 onednn");
            check_config(&c, prompt_b, total_b, 4, 0, label);
        }
}

static void test_plan(void) {
    zaya_config c;
    small_config(&c, 3, 2, ZAYA_SKIP_IDENTITY, 21);
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    zaya_infer *e = NULL;
    zaya_infer_opts o = {.max_seqs = 2, .max_len = 40, .gemv = 1};
    CHECK(zaya_infer_init(&e, &m, &o) == ZAYA_OK, "init");
    const int64_t kvd = 2 * 8, C = 6 * 8, W = 2 + 1;
    CHECK(zaya_infer_kv_bytes_per_token(e) == 3 * 2 * kvd * 4, "kv bytes %lld", (long long)zaya_infer_kv_bytes_per_token(e));
    CHECK(zaya_infer_state_bytes_per_seq(e) == 3 * (W * C + kvd / 2) * 4, "state bytes");
    zaya_model_costs mc = zaya_model_costs_at(&c, 16, 4);
    CHECK(mc.kv_bytes_per_token == zaya_infer_kv_bytes_per_token(e), "kv bytes disagree with the model accounting");
    CHECK(mc.state_bytes_per_seq == zaya_infer_state_bytes_per_seq(e), "state bytes disagree with the model accounting");
    zaya_infer_free(e);
    o.max_len = 41;
    CHECK(zaya_infer_init(&e, &m, &o) == ZAYA_ERANGE && e == NULL, "max_len over max_position_embeddings accepted");
    zaya_model_free(&m);
}

/* bf16 weights: decode (own bf16 GEMV, and oneDNN) tracks the bf16 training forward; the rounding of
 * activations differs only in summation order, so agreement is at bf16 level, not bitwise. */
static void test_bf16(void) {
    zaya_config c;
    small_config(&c, 3, 2, ZAYA_SKIP_IDENTITY, 64);
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_BF16) == ZAYA_OK, "init");
    th_randomize_model(&m, 3);
    const int64_t T = 12, V = c.vocab_size;
    int32_t ids[12];
    for (int t = 0; t < T; t++) ids[t] = (int32_t)((t * 7 + 5) % V);
    float *ref = th_alloc(T * V), *lg = th_alloc(T * V);
    CHECK(zaya_model_plan(&m, 1, T) == ZAYA_OK, "plan");
    CHECK(zaya_model_logits(&m, ids, NULL, ref) == ZAYA_OK, "logits");
    for (int gemv = 0; gemv < 2; gemv++) {
        zaya_infer *e = NULL;
        zaya_infer_opts o = {.max_seqs = 1, .max_len = T, .gemv = gemv};
        CHECK(zaya_infer_init(&e, &m, &o) == ZAYA_OK, "engine");
        int64_t slot = 0, n = 3;
        CHECK(zaya_infer_step(e, 1, &slot, &n, ids, lg, 1) == ZAYA_OK, "prefill");
        n = 1;
        for (int64_t t = 3; t < T; t++) CHECK(zaya_infer_step(e, 1, &slot, &n, ids + t, lg + t * V, 0) == ZAYA_OK, "decode");
        double worst = 0;
        for (int64_t t = 0; t < T; t++) worst = fmax(worst, row_err(lg + t * V, ref + t * V, V));
        CHECK_ERR(gemv ? "bf16 decode, own GEMV" : "bf16 decode, oneDNN", worst, 3e-2);
        printf("bf16 %-39s max row-relative error %.2e\n", gemv ? "own GEMV" : "oneDNN", worst);
        zaya_infer_free(e);
    }
    free(ref);
    free(lg);
    zaya_model_free(&m);
}

int main(void) {
    test_bf16();
    test_plan();
    test_equivalence();
    test_variants();
    return th_finish("test_infer");
}
