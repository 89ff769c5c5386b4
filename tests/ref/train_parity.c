/* Training parity with PyTorch (tests/ref/train_ref.py): the same init and the same batches, 20 steps
 * of forward, backward, gradient clipping, optimizer (Muon + AdamW, then AdamW only) and bias
 * balancing, after the step (as `--balance-mode step`) and inside the forward (the default: drift
 * compensation and the controller's update per MoE block on the batch's own scores before it routes);
 * the loss of every step must agree within 1e-4 relative (f32 here, float64 there). The refinement
 * steps that follow the update in the trainer walk the biases to the batch's balance point, i.e. onto
 * near-ties of some tokens, where f32 and float64 selections legitimately differ: they are checked
 * against a double reference in test_optim instead, so this case runs BAL_ITERS = 1.
 * Usage: train_parity REF_SCRIPT PYTHON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/balance.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/model.h"
#include "zaya/optim.h"
#include "zaya/rng.h"
#include "zaya/threads.h"

#define STEPS 20
#define B 2
#define T 12

static void config(zaya_config *c) {
    zaya_config_preset("zaya1-tiny", c);
    c->hidden_size = 24;
    c->num_hidden_layers = 2;
    c->num_attention_heads = 4;
    c->num_key_value_heads = 2;
    c->head_dim = 8;
    c->num_experts = 3;
    c->moe_intermediate_size = 16;
    c->router_hidden_size = 12;
    c->vocab_size = 40;
    c->max_position_embeddings = 32;
    c->bos_token_id = 1;
    c->eos_token_id = 2;
}

/* Router weights large enough that routing margins stay far above f32/f64 rounding during the run. */
static void init(zaya_model *m, uint64_t seed) {
    zaya_model_init_weights(m, seed);
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        if (!strstr(t->name, "router_mlp") || t->ndim != 2) continue;
        zaya_rng_fill_normal(m->params + t->offset, (size_t)t->numel, seed, 500 + (uint64_t)i, 0, 0.0f, 0.6f);
    }
    zaya_model_sync_weights(m);
}

#define BAL_ITERS 1

/* Balancing in the forward, as the trainer's route hook does at world 1. */
typedef struct fwd_balance {
    zaya_balancer *bal;
    int64_t step;
} fwd_balance;

static void balance_hook(void *ctx, zaya_model *m, int l) {
    fwd_balance *f = ctx;
    const int64_t E = m->cfg.num_experts, N = (int64_t)B * T; /* the planned batch */
    const double sigma = sqrt(m->route_spread[l] / ((double)N * (double)E));
    int64_t cnt[64];
    zaya_balancer_follow_drift_layer(f->bal, l, m->route_psum + (int64_t)l * E, (double)N, m->params);
    for (int k = 0; k < BAL_ITERS; k++) {
        zaya_model_route_count_layer(m, l, cnt);
        if (k == 0) {
            zaya_balancer_update_layer(f->bal, l, cnt, sigma, m->params, f->step + 1);
            zaya_balancer_refine_begin(f->bal, f->bal->cfg.lr * sigma);
        } else {
            zaya_balancer_refine_layer(f->bal, l, cnt, m->params);
        }
    }
}

static int run_case(const char *label, int muon, int in_forward, const char *script, const char *python) {
    zaya_config c;
    config(&c);
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    init(&m, 3);
    CHECK(zaya_model_plan(&m, B, T) == ZAYA_OK, "plan");
    zaya_tensor_info *tab = malloc(sizeof *tab * (size_t)m.ntensors);
    memcpy(tab, m.tensors, sizeof *tab * (size_t)m.ntensors);
    if (!muon)
        for (int i = 0; i < m.ntensors; i++)
            if (tab[i].opt == ZAYA_OPT_MUON) tab[i].opt = ZAYA_OPT_ADAMW;
    zaya_optim_plan plan;
    zaya_optim opt;
    zaya_optim_config oc;
    zaya_optim_config_default(&oc);
    CHECK(zaya_optim_plan_build(tab, m.ntensors, 1, 0, &plan) == ZAYA_OK, "plan");
    CHECK(zaya_optim_init(&opt, &plan, &oc, 0) == ZAYA_OK, "optim");
    zaya_balancer bal;
    zaya_balancer_config bc;
    zaya_balancer_config_default(&bc);
    CHECK(zaya_balancer_init(&bal, m.tensors, m.ntensors, &bc) == ZAYA_OK, "balancer");

    char dir[] = "/tmp/zaya_train_parity_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[512];
    /* inputs for the reference: config, tensor table with optimizer kinds, initial params, batches */
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddItemToObject(meta, "config", zaya_config_to_json(&c));
    cJSON_AddNumberToObject(meta, "batch", B);
    cJSON_AddNumberToObject(meta, "seq", T);
    cJSON_AddNumberToObject(meta, "steps", STEPS);
    cJSON_AddNumberToObject(meta, "weight_decay", oc.weight_decay);
    cJSON_AddNumberToObject(meta, "adam_beta1", oc.adam_beta1);
    cJSON_AddNumberToObject(meta, "adam_beta2", oc.adam_beta2);
    cJSON_AddNumberToObject(meta, "adam_eps", oc.adam_eps);
    cJSON_AddNumberToObject(meta, "muon_momentum", oc.muon_momentum);
    cJSON_AddNumberToObject(meta, "balance_lr", bc.lr);
    cJSON_AddNumberToObject(meta, "balance_beta1", bc.beta1);
    cJSON_AddNumberToObject(meta, "balance_beta2", bc.beta2);
    cJSON_AddNumberToObject(meta, "balance_eps", bc.eps);
    cJSON_AddNumberToObject(meta, "balance_drift", bc.drift);
    cJSON_AddStringToObject(meta, "balance_mode", in_forward ? "forward" : "step");
    cJSON_AddNumberToObject(meta, "balance_iters", BAL_ITERS);
    cJSON_AddNumberToObject(meta, "clip", 1.0);
    cJSON *lrs = cJSON_AddArrayToObject(meta, "lr");
    double lr[STEPS];
    for (int s = 0; s < STEPS; s++) {
        lr[s] = 0.02 * (s < 4 ? (s + 1) / 4.0 : 1.0 - 0.5 * (s - 4) / (STEPS - 4.0));
        cJSON_AddItemToArray(lrs, cJSON_CreateNumber(lr[s]));
    }
    cJSON *tl = cJSON_AddArrayToObject(meta, "tensors");
    for (int i = 0; i < m.ntensors; i++) {
        const zaya_tensor_info *t = &m.tensors[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddNumberToObject(o, "offset", (double)t->offset);
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[d]));
        const char *kind = tab[i].opt == ZAYA_OPT_MUON ? "muon" : tab[i].opt == ZAYA_OPT_ADAMW ? "adamw" : "none";
        cJSON_AddStringToObject(o, "kind", kind);
        int decay = 0;
        for (int u = 0; u < plan.nunits; u++)
            if (plan.units[u].tensor == i) decay = plan.units[u].decay;
        cJSON_AddBoolToObject(o, "decay", decay);
        cJSON_AddBoolToObject(o, "trainable", t->opt != ZAYA_OPT_NONE);
        cJSON_AddItemToArray(tl, o);
    }
    snprintf(path, sizeof path, "%s/meta.json", dir);
    CHECK(zaya_json_write_file(path, meta, 0) == ZAYA_OK, "meta");
    cJSON_Delete(meta);
    snprintf(path, sizeof path, "%s/params0.bin", dir);
    CHECK(zaya_write_file_atomic(path, m.params, sizeof(float) * (size_t)m.nfloats) == ZAYA_OK, "params");
    int32_t tok[STEPS][2 * B * T];
    /* Learnable batches: each sequence follows x' = (3x + 1) mod V from a random start, and the
     * targets are the inputs shifted by one. */
    for (int s = 0; s < STEPS; s++)
        for (int b = 0; b < B; b++) {
            int32_t x = (int32_t)(zaya_rng_u32_at(9, (uint64_t)s, (uint64_t)b) % (uint32_t)c.vocab_size);
            for (int i = 0; i < T; i++) {
                int32_t next = (int32_t)((3 * x + 1) % c.vocab_size);
                tok[s][b * T + i] = x;
                tok[s][B * T + b * T + i] = next;
                x = next;
            }
        }
    snprintf(path, sizeof path, "%s/tokens.bin", dir);
    CHECK(zaya_write_file_atomic(path, tok, sizeof tok) == ZAYA_OK, "tokens");

    /* zaya: the trainer's step sequence */
    double loss[STEPS];
    const int64_t E1 = c.num_experts + 1;
    fwd_balance fb = {&bal, 0};
    for (int s = 0; s < STEPS; s++) {
        float l;
        zaya_model_zero_grad(&m);
        fb.step = s;
        m.route_hook = in_forward ? balance_hook : NULL;
        m.route_hook_ctx = &fb;
        CHECK(zaya_model_forward(&m, tok[s], tok[s] + B * T, 1, &l) == ZAYA_OK, "forward");
        m.route_hook = NULL;
        if (in_forward) bal.drift_ready = 1;
        zaya_model_backward(&m);
        double sq = 0;
        CHECK(zaya_optim_grad_sqnorm_local(&opt, m.grads, &sq) == ZAYA_OK, "norm");
        zaya_optim_step(&opt, m.params, m.grads, lr[s], zaya_optim_clip_scale(sqrt(sq), 1.0));
        if (!in_forward) {
            double sigma[64];
            zaya_balancer_spread_units(m.route_spread, m.route_counts, (int)c.num_hidden_layers, (int)c.num_experts, sigma);
            zaya_balancer_update(&bal, m.route_counts, sigma, m.params);
            zaya_balancer_follow_drift(&bal, m.route_psum, m.route_counts, m.params);
        }
        zaya_model_sync_weights(&m);
        loss[s] = l;
        (void)E1;
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s %s", python, script, dir);
    int rc = system(cmd);
    CHECK(rc == 0, "%s: reference failed: %s", label, cmd);
    snprintf(path, sizeof path, "%s/losses.json", dir);
    cJSON *ref = NULL;
    if (rc == 0 && zaya_json_load_file(path, &ref) == ZAYA_OK) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(ref, "loss");
        double margin = 0;
        zaya_json_get_f64(ref, "min_margin", &margin, 1);
        double worst = 0;
        for (int s = 0; s < STEPS && arr; s++) {
            double r = cJSON_GetArrayItem(arr, s)->valuedouble, e = fabs(loss[s] - r) / fabs(r);
            if (e > worst) worst = e;
            CHECK(e <= 1e-4, "%s step %d: loss zaya %.7f vs torch %.7f (rel %.2e)", label, s, loss[s], r, e);
        }
        printf("%-8s 20 steps: loss %.4f -> %.4f, worst relative difference %.2e (min routing margin %.2e)\n", label,
               loss[0], loss[STEPS - 1], worst, margin);
        CHECK(loss[STEPS - 1] < loss[0] - 0.3, "%s: training did not reduce the loss", label);
        cJSON_Delete(ref);
    } else {
        CHECK(0, "%s: no reference losses", label);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    free(tab);
    zaya_balancer_free(&bal);
    zaya_optim_free(&opt);
    zaya_optim_plan_free(&plan);
    zaya_model_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: train_parity REF_SCRIPT PYTHON\n");
        return 2;
    }
    zaya_threads_init(2);
    run_case("muon", 1, 0, argv[1], argv[2]);
    run_case("adamw", 0, 0, argv[1], argv[2]);
    run_case("muon+fwd", 1, 1, argv[1], argv[2]);
    return th_finish("train_parity");
}
