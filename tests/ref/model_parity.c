/* Parity of the whole ZAYA1 model with the independent PyTorch reference (tests/ref/zaya_ref.py):
 * logits, loss and every parameter gradient, f32 against float64, for several odd tiny configs.
 * Usage: model_parity REF_SCRIPT PYTHON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/model.h"
#include "zaya/rng.h"
#include "zaya/threads.h"

typedef struct parity_case {
    const char *label;
    int64_t D, L, Hq, Hkv, hd, E, F, R, V, k0, k1;
    double rot_factor;
    const char *skip_mode;
    int64_t B, T;
    /* architecture variants (NULL / 0: ZAYA1) */
    const char *router, *mlp;
    int64_t dense_ffn;
    int plain_residual;
    const char *attention; /* zaya_attention; NULL: "cca" */
} parity_case;

/* Random but well-conditioned parameters: every tensor moves away from its init so that a wrong
 * index or a missing term shows up in some gradient. */
static void perturb(zaya_model *m, uint64_t seed) {
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        float *w = m->params + t->offset;
        const char *n = t->name;
        float noise[4096];
        for (int64_t j = 0; j < t->numel; j += 4096) {
            int64_t cnt = t->numel - j < 4096 ? t->numel - j : 4096;
            zaya_rng_fill_uniform(noise, (size_t)cnt, seed, 1000 + (uint64_t)i, (uint64_t)j, -1.0f, 1.0f);
            for (int64_t q = 0; q < cnt; q++) {
                float *x = &w[j + q];
                if (t->opt == ZAYA_OPT_NONE) *x = 0.03f * noise[q];            /* balancing biases; skip may win */
                else if (strstr(n, "temp")) *x = 1.25f + 0.75f * noise[q];
                else if (t->ndim == 1 && strstr(n, "bias")) *x = 0.1f * noise[q];
                else if (t->ndim == 1) *x = 1.0f + 0.25f * noise[q];          /* norms, scales, EDA */
                else if (strstr(n, "conv")) *x += 0.1f * noise[q];
                else *x = 0.15f * noise[q];
            }
        }
    }
    zaya_model_sync_weights(m);
}

static int write_inputs(const char *dir, zaya_model *m, const int32_t *tok, int64_t N) {
    cJSON *cfg = zaya_config_to_json(&m->cfg);
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (zaya_json_write_file(path, cfg, 1) != ZAYA_OK) return -1;
    cJSON_Delete(cfg);
    cJSON *idx = cJSON_CreateObject();
    cJSON_AddNumberToObject(idx, "batch", (double)m->B);
    cJSON_AddNumberToObject(idx, "seq", (double)m->T);
    cJSON *arr = cJSON_AddArrayToObject(idx, "tensors");
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddNumberToObject(o, "offset", (double)t->offset);
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[d]));
        cJSON_AddBoolToObject(o, "trainable", t->opt != ZAYA_OPT_NONE);
        cJSON_AddItemToArray(arr, o);
    }
    snprintf(path, sizeof path, "%s/params.json", dir);
    if (zaya_json_write_file(path, idx, 0) != ZAYA_OK) return -1;
    cJSON_Delete(idx);
    snprintf(path, sizeof path, "%s/params.bin", dir);
    if (zaya_write_file_atomic(path, m->params, (size_t)m->nfloats * sizeof(float)) != ZAYA_OK) return -1;
    snprintf(path, sizeof path, "%s/tokens.bin", dir);
    if (zaya_write_file_atomic(path, tok, (size_t)(2 * N) * sizeof(int32_t)) != ZAYA_OK) return -1;
    return 0;
}

static void run_case(const parity_case *pc, const char *script, const char *python, int *skip_seen) {
    zaya_config c;
    zaya_config_preset("zaya1-tiny", &c);
    c.hidden_size = pc->D;
    c.num_hidden_layers = pc->L;
    c.num_attention_heads = pc->Hq;
    c.num_key_value_heads = pc->Hkv;
    c.head_dim = pc->hd;
    c.num_experts = pc->E;
    c.moe_intermediate_size = pc->F;
    c.router_hidden_size = pc->R;
    c.vocab_size = pc->V;
    c.cca_time0 = pc->k0;
    c.cca_time1 = pc->k1;
    c.partial_rotary_factor = pc->rot_factor;
    c.max_position_embeddings = 64;
    c.skip_mode = !strcmp(pc->skip_mode, "zero") ? ZAYA_SKIP_ZERO : ZAYA_SKIP_IDENTITY;
    if (pc->router && !strcmp(pc->router, "zaya_no_eda")) c.router = ZAYA_ROUTER_NO_EDA;
    if (pc->router && !strcmp(pc->router, "linear")) c.router = ZAYA_ROUTER_LINEAR;
    if (pc->mlp && !strcmp(pc->mlp, "dense")) c.mlp = ZAYA_MLP_DENSE;
    c.dense_intermediate_size = pc->dense_ffn;
    if (pc->plain_residual) c.residual = ZAYA_RESIDUAL_PLAIN;
    c.attention = !pc->attention ? ZAYA_ATTENTION_CCA : !strcmp(pc->attention, "gqa") ? ZAYA_ATTENTION_GQA : ZAYA_ATTENTION_MHA;
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "%s: init: %s", pc->label, zaya_error_message());
    zaya_model_init_weights(&m, 11);
    CHECK(zaya_model_plan(&m, pc->B, pc->T) == ZAYA_OK, "plan");
    const int64_t N = pc->B * pc->T, V = pc->V;
    int32_t *tok = malloc(sizeof(int32_t) * 2 * N);
    float *logits = malloc(sizeof(float) * N * V);
    char dir[] = "/tmp/zaya_parity_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    double margin = 0;
    for (uint64_t seed = 1; seed < 20; seed++) {
        perturb(&m, seed);
        for (int64_t i = 0; i < N; i++) {
            tok[i] = (int32_t)(zaya_rng_u32_at(seed, 7, (uint64_t)i) % (uint32_t)V);
            tok[N + i] = (i % 5 == 3) ? -1 : (int32_t)(zaya_rng_u32_at(seed, 8, (uint64_t)i) % (uint32_t)V);
        }
        CHECK(write_inputs(dir, &m, tok, N) == 0, "write inputs: %s", zaya_error_message());
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "%s %s %s", python, script, dir);
        int rc = system(cmd);
        CHECK(rc == 0, "%s: reference failed (rc %d): %s", pc->label, rc, cmd);
        if (rc != 0) break;
        cJSON *info = NULL;
        char path[600];
        snprintf(path, sizeof path, "%s/ref_info.json", dir);
        CHECK(zaya_json_load_file(path, &info) == ZAYA_OK, "ref_info");
        zaya_json_get_f64(info, "min_margin", &margin, 1);
        cJSON_Delete(info);
        if (margin > 1e-4) break; /* no near-tie in routing: f32 and f64 choose the same experts */
    }
    CHECK(margin > 1e-4, "%s: could not find parameters without near-tied routing", pc->label);

    float loss = 0;
    zaya_model_zero_grad(&m);
    CHECK(zaya_model_forward(&m, tok, tok + N, 1, &loss) == ZAYA_OK, "forward: %s", zaya_error_message());
    zaya_model_backward(&m);
    for (int l = 0; l < pc->L; l++) *skip_seen += m.route_counts[l * (pc->E + 1) + pc->E] > 0;
    CHECK(zaya_model_logits(&m, tok, NULL, logits) == ZAYA_OK, "logits");

    char path[600];
    snprintf(path, sizeof path, "%s/ref_out.bin", dir);
    char *ref_raw;
    size_t ref_len;
    CHECK(zaya_read_file(path, &ref_raw, &ref_len) == ZAYA_OK, "read ref_out");
    CHECK(ref_len == sizeof(float) * (size_t)(1 + N * V + m.nfloats), "ref_out size %zu", ref_len);
    const float *ref = (const float *)ref_raw;
    double lerr = fabs(loss - ref[0]) / fabs(ref[0]);
    printf("%-10s loss zaya %.7f ref %.7f (rel %.2e)\n", pc->label, loss, ref[0], lerr);
    CHECK_ERR("loss", lerr, 1e-5);
    double *tmp = th_alloc_d(N * V);
    for (int64_t i = 0; i < N * V; i++) tmp[i] = ref[1 + i];
    double e = th_rel_err(logits, tmp, N * V, 1e-12);
    printf("%-10s logits max rel err %.2e\n", pc->label, e);
    CHECK_ERR("logits", e, 1e-4);
    free(tmp);
    const float *rg = ref + 1 + N * V;
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < m.ntensors; i++) {
        const zaya_tensor_info *t = &m.tensors[i];
        double *r = th_alloc_d(t->numel);
        for (int64_t j = 0; j < t->numel; j++) r[j] = rg[t->offset + j];
        double te = th_rel_err(m.grads + t->offset, r, t->numel, 1e-20);
        if (t->opt == ZAYA_OPT_NONE) {
            double mx = 0;
            for (int64_t j = 0; j < t->numel; j++) mx = fmax(mx, fabs(m.grads[t->offset + j]));
            CHECK(mx == 0.0, "%s: buffer %s received a gradient", pc->label, t->name);
        } else {
            CHECK(te <= 1e-4, "%s: gradient of %s: rel err %.2e", pc->label, t->name, te);
            if (te > worst) { worst = te; worst_name = t->name; }
        }
        free(r);
    }
    printf("%-10s %d tensors, worst gradient rel err %.2e (%s)\n", pc->label, m.ntensors, worst, worst_name);
    free(ref_raw);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
    free(tok);
    free(logits);
    zaya_model_free(&m);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: model_parity REF_SCRIPT PYTHON\n");
        return 2;
    }
    zaya_threads_init(2);
    const parity_case cases[] = {
        /* label     D   L  Hq Hkv hd  E   F   R   V  k0 k1 rot   skip        B  T  router mlp dense_ffn plain attention */
        {"gqa2",     24, 2, 4, 2,  8,  3, 12, 10, 37, 2, 2, 0.5,  "identity", 2, 11, NULL, NULL, 0, 0, NULL},
        {"gqa3-odd", 21, 3, 3, 1,  6,  4,  9,  7, 29, 3, 2, 1.0,  "identity", 2, 13, NULL, NULL, 0, 0, NULL},
        {"mha-zero", 32, 2, 4, 4,  8,  2, 16,  8, 50, 2, 3, 0.25, "zero",     3, 9,  NULL, NULL, 0, 0, NULL},
        /* architecture variants (docs/model.md "Variants") */
        {"no-eda",   24, 3, 4, 2,  8,  3, 12, 10, 37, 2, 2, 0.5,  "identity", 2, 11, "zaya_no_eda", NULL, 0, 0, NULL},
        {"linear",   21, 3, 3, 1,  6,  4,  9,  7, 29, 3, 2, 1.0,  "identity", 2, 13, "linear", NULL, 0, 0, NULL},
        {"dense",    24, 2, 4, 2,  8,  3, 12, 10, 37, 2, 2, 0.5,  "identity", 2, 11, NULL, "dense", 19, 0, NULL},
        {"plain",    24, 3, 4, 2,  8,  3, 12, 10, 37, 2, 2, 0.5,  "zero",     2, 11, NULL, NULL, 0, 1, NULL},
        {"lin-plain",32, 2, 4, 4,  8,  2, 16,  8, 50, 2, 3, 0.25, "identity", 3, 9,  "linear", NULL, 0, 1, NULL},
        {"dns-plain",21, 3, 3, 1,  6,  4,  9,  7, 29, 3, 2, 1.0,  "identity", 2, 13, NULL, "dense", 0, 1, NULL},
        /* standard softmax attention variants (zaya_attention) */
        {"att-gqa",  24, 2, 4, 2,  8,  3, 12, 10, 37, 2, 2, 0.5,  "identity", 2, 11,  NULL, NULL, 0, 0, "gqa"},
        {"att-mha",  20, 2, 3, 3,  6,  2,  8,  6, 31, 2, 2, 1.0,  "zero",     2, 9,  NULL, NULL, 0, 0, "mha"},
    };
    int skip_seen = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], argv[1], argv[2], &skip_seen);
    CHECK(skip_seen > 0, "no test routed any token to the skip class");
    return th_finish("model_parity");
}
