/* Context parallelism of the model: under mpirun (tests/cp.cmake, 2 and 4 ranks) every rank runs the
 * whole sequences on its own (the reference) and its chunk through zaya_model_set_cp over the world;
 * the chunks' mean loss and summed gradients must equal the reference's. Cases: the default kernels
 * (halo 2), odd kernel sizes (halo 3 and 4), a chunk exactly as long as the halo, GQA attention, bf16.
 * Alone (one process, ctest unit) it checks the refusals: a chunk shorter than the halo, a sequence
 * over max_position_embeddings, missing exchange functions. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/cp_link.h"
#include "zaya/dist.h"
#include "zaya/model.h"

static int g_rank;

static void small_config(zaya_config *c) {
    zaya_config_preset("zaya1-tiny", c);
    c->hidden_size = 24;
    c->num_hidden_layers = 2;
    c->num_attention_heads = 4;
    c->num_key_value_heads = 2;
    c->head_dim = 8;
    c->num_experts = 3;
    c->moe_intermediate_size = 8;
    c->router_hidden_size = 8;
    c->vocab_size = 29;
    c->max_position_embeddings = 256;
}

static void fill_ids(int32_t *ids, int32_t *targets, int64_t n, int64_t V, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int32_t)(x % (uint64_t)V);
        targets[i] = (int32_t)((x >> 20) % (uint64_t)V);
    }
}

/* One comparison: B sequences of S * Tc tokens, whole vs chunked. */
static void compare(const zaya_comm *world, const char *label0, const zaya_config *cfg, int64_t B, int64_t Tc,
                    int zigzag, zaya_dtype dt, double tol_loss, double tol_grad) {
    const int S = zaya_comm_size(world), r = zaya_comm_rank(world);
    const int64_t T = S * Tc, V = cfg->vocab_size;
    char label[96];
    snprintf(label, sizeof label, "%.60s, %s", label0, zigzag ? "zig-zag" : "contiguous");
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(B * T)), *tg = malloc(sizeof(int32_t) * (size_t)(B * T));
    fill_ids(ids, tg, B * T, V, 11 + (uint64_t)Tc);

    zaya_model ref, cp;
    CHECK(zaya_model_init(&ref, cfg, dt) == ZAYA_OK, "%s: init", label);
    zaya_model_init_weights(&ref, 5);
    th_randomize_model(&ref, 9); /* scales, biases, temperatures away from their init */
    zaya_model_sync_weights(&ref);
    CHECK(zaya_model_plan(&ref, B, T) == ZAYA_OK, "%s: plan whole", label);
    float loss_ref = 0;
    CHECK(zaya_model_forward(&ref, ids, tg, 1, &loss_ref) == ZAYA_OK, "%s: forward whole", label);
    zaya_model_zero_grad(&ref);
    zaya_model_backward(&ref);

    CHECK(zaya_model_init(&cp, cfg, dt) == ZAYA_OK, "%s: init cp", label);
    memcpy(cp.params, ref.params, sizeof(float) * (size_t)ref.nfloats);
    zaya_model_sync_weights(&cp);
    zaya_cp_link link;
    zaya_cp_ops ops;
    zaya_cp_link_init(&link, world, zigzag, &ops);
    CHECK(zaya_model_set_cp(&cp, &ops) == ZAYA_OK, "%s: set cp", label);
    CHECK(zaya_model_plan(&cp, B, Tc) == ZAYA_OK, "%s: plan chunk: %s", label, zaya_error_message());
    int32_t *ci = malloc(sizeof(int32_t) * (size_t)(B * Tc)), *ct = malloc(sizeof(int32_t) * (size_t)(B * Tc));
    const int P = zaya_cp_pieces(&ops);
    const int64_t Tp = Tc / P;
    for (int64_t b = 0; b < B; b++)
        for (int p = 0; p < P; p++) { /* this rank's pieces, in the model's order */
            const int64_t c = zaya_cp_chunk(&ops, r, p);
            memcpy(ci + b * Tc + p * Tp, ids + b * T + c * Tp, sizeof(int32_t) * (size_t)Tp);
            memcpy(ct + b * Tc + p * Tp, tg + b * T + c * Tp, sizeof(int32_t) * (size_t)Tp);
        }
    float loss_local = 0;
    CHECK(zaya_model_forward(&cp, ci, ct, 1, &loss_local) == ZAYA_OK, "%s: forward chunk: %s", label,
          zaya_error_message());
    zaya_model_zero_grad(&cp);
    zaya_model_backward(&cp);
    CHECK(cp.cp_status == ZAYA_OK, "%s: backward exchanges", label);

    double loss = loss_local;
    zaya_allreduce_f64(world, &loss, &loss, 1, ZAYA_REDOP_AVG);
    zaya_allreduce(world, cp.grads, cp.grads, cp.nfloats, ZAYA_DIST_F32, ZAYA_REDOP_SUM);
    for (int64_t i = 0; i < cp.nfloats; i++) cp.grads[i] /= (float)S;
    const double el = fabs(loss - loss_ref) / fabs((double)loss_ref);
    /* every tensor's gradient relative to that tensor's largest entry */
    double eg = 0;
    const char *worst = "";
    for (int i = 0; i < ref.ntensors; i++) {
        const zaya_tensor_info *t = &ref.tensors[i];
        if (t->opt == ZAYA_OPT_NONE) continue;
        const double e = th_rel_err_ff(cp.grads + t->offset, ref.grads + t->offset, t->numel, 1e-6);
        if (e > eg) eg = e, worst = t->name;
    }
    if (g_rank == 0)
        printf("%-56s S=%d B=%lld T=%lld: loss rel %.2e, worst gradient rel %.2e (%s); halo %.0f B, gather %.0f B\n",
               label, S, (long long)B, (long long)T, el, eg, worst, cp.cp_traffic.halo_bytes,
               cp.cp_traffic.gather_bytes);
    char l2[192];
    snprintf(l2, sizeof l2, "%s: loss", label);
    CHECK_ERR(l2, el, tol_loss);
    snprintf(l2, sizeof l2, "%.96s: gradients (%.80s)", label, worst);
    CHECK_ERR(l2, eg, tol_grad);
    zaya_model_free(&ref);
    zaya_model_free(&cp);
    free(ids), free(tg), free(ci), free(ct);
}

static zaya_status no_halo(void *ctx, int slot, int dst, const float *s, int src, float *r, int64_t n) {
    (void)ctx, (void)slot, (void)dst, (void)s, (void)src, (void)r, (void)n;
    return ZAYA_OK;
}
static zaya_status no_wait(void *ctx, int slot) { return (void)ctx, (void)slot, ZAYA_OK; }
static zaya_status no_coll(void *ctx, const float *s, float *r, int64_t n) {
    return (void)ctx, (void)s, (void)r, (void)n, ZAYA_OK;
}

static void refusals(void) {
    zaya_config c;
    small_config(&c);
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    zaya_cp_ops ops = {.rank = 0, .size = 2, .halo_start = no_halo};
    CHECK(zaya_model_set_cp(&m, &ops) == ZAYA_EINVAL && strstr(zaya_error_message(), "missing"),
          "missing exchange functions refused");
    ops = (zaya_cp_ops){.rank = 0, .size = 4, .halo_start = no_halo, .halo_wait = no_wait, .allgather = no_coll,
                        .reduce_scatter = no_coll};
    CHECK(zaya_model_set_cp(&m, &ops) == ZAYA_OK, "set cp");
    /* halo of the default kernels: 2 rows; a chunk of 1 token is refused, naming the sizes */
    CHECK(zaya_model_plan(&m, 2, 1) == ZAYA_EINVAL && strstr(zaya_error_message(), "shorter than the convolution halo"),
          "chunk shorter than the halo refused: %s", zaya_error_message());
    CHECK(zaya_model_plan(&m, 2, 65) == ZAYA_EINVAL && strstr(zaya_error_message(), "max_position_embeddings"),
          "whole sequence past max_position_embeddings refused: %s", zaya_error_message());
    ops.rank = 4;
    CHECK(zaya_model_set_cp(&m, &ops) == ZAYA_EINVAL, "rank outside the group refused");
    CHECK(zaya_model_set_cp(&m, NULL) == ZAYA_OK && m.cp.size == 1, "cp off");
    zaya_model_free(&m);
}

int main(int argc, char **argv) {
    zaya_comm *world = NULL;
    if (zaya_dist_init(&argc, &argv, &world) != ZAYA_OK) {
        fprintf(stderr, "test_cp: %s\n", zaya_error_message());
        return 1;
    }
    g_rank = zaya_comm_rank(world);
    if (zaya_comm_size(world) == 1) {
        refusals();
    } else {
        zaya_config c;
        for (int zz = 0; zz < 2; zz++) {
            small_config(&c);
            compare(world, "cca k0=2 k1=2 (halo 2)", &c, 2, 16, zz, ZAYA_DTYPE_F32, 1e-6, 1e-5);
            compare(world, "cca, chunk = halo", &c, 3, zz ? 4 : 2, zz, ZAYA_DTYPE_F32, 1e-6, 1e-5);
            c.cca_time0 = 3;
            compare(world, "cca k0=3 k1=2 (halo 3)", &c, 2, zz ? 14 : 13, zz, ZAYA_DTYPE_F32, 1e-6, 1e-5);
            c.cca_time1 = 3;
            compare(world, "cca k0=3 k1=3 (halo 4)", &c, 1, zz ? 8 : 7, zz, ZAYA_DTYPE_F32, 1e-6, 1e-5);
            c.cca_time0 = 1, c.cca_time1 = 1;
            compare(world, "cca k0=1 k1=1 (no halo, value shift only)", &c, 2, 6, zz, ZAYA_DTYPE_F32, 1e-6, 1e-5);
            small_config(&c);
            c.attention = ZAYA_ATTENTION_GQA;
            compare(world, "gqa", &c, 2, 16, zz, ZAYA_DTYPE_F32, 1e-6, 1e-5);
            small_config(&c);
            compare(world, "cca bf16", &c, 2, 32, zz, ZAYA_DTYPE_BF16, 1e-3, 2e-2);
        }
        /* a zig-zag piece shorter than the halo is refused with the sizes */
        small_config(&c);
        zaya_model m;
        zaya_cp_link link;
        zaya_cp_ops ops;
        zaya_cp_link_init(&link, world, 1, &ops);
        CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK && zaya_model_set_cp(&m, &ops) == ZAYA_OK, "init");
        CHECK(zaya_model_plan(&m, 1, 2) == ZAYA_EINVAL && strstr(zaya_error_message(), "shorter than the convolution halo"),
              "zig-zag piece of 1 token refused: %s", zaya_error_message());
        CHECK(zaya_model_plan(&m, 1, 5) == ZAYA_EINVAL && strstr(zaya_error_message(), "do not split into 2 chunks"),
              "odd share refused under zig-zag: %s", zaya_error_message());
        zaya_model_free(&m);
    }
    int rc = th_finish("test_cp");
    zaya_dist_finalize(world);
    return rc;
}
