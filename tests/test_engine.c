/* The training engine (zaya/engine.h) on the CPU reference backend against the CPU model and
 * optimizer it mirrors, bit for bit (the backend runs the model's own kernels and primitives): loss,
 * every parameter gradient, routing, the route hook, two optimizer steps (AdamW and Muon, tall and
 * wide matrices), host <-> backend copies, determinism, and the refusals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_cases.h"
#include "testutil.h"
#include "zaya/engine.h"
#include "zaya/rng.h"
#include "zaya/timer.h"

static int hook_calls;
static void count_hook(void *ctx, zaya_engine *e, int layer) {
    (void)ctx;
    int64_t cnt[8];
    CHECK(zaya_engine_route_count_layer(e, layer, cnt) == ZAYA_OK, "recount in the hook: %s", zaya_error_message());
    hook_calls++;
}

static void compare_model(int variant, zaya_dtype dt, double grad_tol, double step_tol) {
    char name[64];
    snprintf(name, sizeof name, "%s %s", variant_name(variant), dt == ZAYA_DTYPE_F32 ? "f32" : "bf16");
    zaya_config c;
    variant_config(variant, &c);
    zaya_model ref, mod;
    CHECK(zaya_model_init(&ref, &c, dt) == ZAYA_OK && zaya_model_init(&mod, &c, dt) == ZAYA_OK, "init");
    zaya_model_init_weights(&ref, 7);
    zaya_model_init_weights(&mod, 7);
    /* the skip class back to a neutral bias so every class gets tokens */
    for (int l = 0; l < (int)c.num_hidden_layers && zaya_config_is_moe(&c); l++) {
        ref.p.layers[l].bal_bias[c.num_experts] = 0.0f;
        mod.p.layers[l].bal_bias[c.num_experts] = 0.0f;
    }
    zaya_model_sync_weights(&ref);
    zaya_model_sync_weights(&mod);
    const int64_t B = 2, T = 13, N = B * T;
    CHECK(zaya_model_plan(&ref, B, T) == ZAYA_OK, "plan");
    zaya_backend *be = NULL;
    CHECK(zaya_backend_cpu_init(&be) == ZAYA_OK, "cpu backend: %s", zaya_error_message());
    zaya_engine *e = NULL;
    CHECK(zaya_engine_init(&e, be, &mod) == ZAYA_OK, "engine: %s", zaya_error_message());
    if (!e) return;
    CHECK(zaya_engine_plan(e, B, T) == ZAYA_OK, "engine plan: %s", zaya_error_message());
    int32_t ids[N], tg[N];
    engine_batch(ids, tg, N, c.vocab_size, 11);

    float lr_ = 0, le = 0;
    zaya_model_zero_grad(&ref);
    CHECK(zaya_model_forward(&ref, ids, tg, 1, &lr_) == ZAYA_OK, "ref forward");
    zaya_model_backward(&ref);
    hook_calls = 0;
    zaya_engine_set_route_hook(e, count_hook, NULL);
    CHECK(zaya_engine_zero_grad(e) == ZAYA_OK, "zero");
    CHECK(zaya_engine_forward(e, ids, tg, 1, &le) == ZAYA_OK, "engine forward: %s", zaya_error_message());
    CHECK(zaya_engine_backward(e) == ZAYA_OK, "engine backward: %s", zaya_error_message());
    zaya_engine_set_route_hook(e, NULL, NULL);
    CHECK(hook_calls == (zaya_config_is_moe(&c) ? (int)c.num_hidden_layers : 0), "%s: route hook ran %d times", name,
          hook_calls);
    CHECK(lr_ == le, "%s: loss %.9g vs %.9g", name, le, lr_);
    CHECK(zaya_engine_last_tokens(e) == ref.last_tokens, "tokens");
    /* routing: the same classes, counts and statistics */
    const int64_t E1 = c.num_experts + 1, L = c.num_hidden_layers;
    const int64_t *rc = zaya_engine_route_counts(e);
    int routed = 0;
    for (int64_t i = 0; i < L * E1; i++) {
        CHECK(rc[i] == ref.route_counts[i], "%s: route count %lld: %lld vs %lld", name, (long long)i, (long long)rc[i],
              (long long)ref.route_counts[i]);
        routed += i % E1 < c.num_experts && rc[i] > 0;
    }
    if (zaya_config_is_moe(&c))
        CHECK(routed >= 2 * (int)L, "%s: the batch exercises several experts per block (%d)", name, routed);
    for (int64_t l = 0; l < L; l++)
        CHECK(fabs(zaya_engine_route_spread(e)[l] - ref.route_spread[l]) <= 1e-9 * (1 + ref.route_spread[l]),
              "%s: spread %lld", name, (long long)l);
    /* every parameter tensor's gradient */
    float *g = malloc(sizeof(float) * (size_t)mod.nfloats);
    CHECK(zaya_engine_pull_grads(e, g) == ZAYA_OK, "pull grads");
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < ref.ntensors; i++) {
        const zaya_tensor_info *t = &ref.tensors[i];
        if (t->opt == ZAYA_OPT_NONE) continue;
        double err = engine_tensor_err(g + t->offset, ref.grads + t->offset, t->numel);
        if (err > worst) {
            worst = err;
            worst_name = t->name;
        }
        CHECK(err <= grad_tol, "%s: gradient of %s: rel err %.3e > %.1e", name, t->name, err, grad_tol);
    }
    printf("engine %s: loss %.7f (model %.7f), worst gradient rel err %.2e (%s)\n", name, le, lr_, worst, worst_name);

    /* determinism: the same forward/backward again gives the same bits */
    float *g2 = malloc(sizeof(float) * (size_t)mod.nfloats);
    zaya_engine_zero_grad(e);
    CHECK(zaya_engine_forward(e, ids, tg, 1, &le) == ZAYA_OK, "again");
    CHECK(zaya_engine_backward(e) == ZAYA_OK, "again");
    zaya_engine_pull_grads(e, g2);
    CHECK(!memcmp(g, g2, sizeof(float) * (size_t)mod.nfloats), "%s: a second run gives the same gradient bits", name);
    if (variant != V_ZAYA1) { /* the variants change the step's forward and backward, not the optimizer */
        free(g);
        free(g2);
        zaya_engine_free(e);
        zaya_backend_free(be);
        zaya_model_free(&ref);
        zaya_model_free(&mod);
        return;
    }

    /* two optimizer steps from the same gradients on both sides */
    zaya_optim_plan plan;
    CHECK(zaya_optim_plan_build(ref.tensors, ref.ntensors, 1, 0, &plan) == ZAYA_OK, "plan");
    zaya_optim_config oc;
    zaya_optim_config_default(&oc);
    zaya_optim ho, eo;
    CHECK(zaya_optim_init(&ho, &plan, &oc, 0) == ZAYA_OK && zaya_optim_init(&eo, &plan, &oc, 0) == ZAYA_OK, "optim");
    CHECK(zaya_engine_optim_init(e, &eo) == ZAYA_OK, "engine optim: %s", zaya_error_message());
    int tall = 0;
    for (int i = 0; i < plan.nunits; i++) tall += plan.units[i].kind == ZAYA_UNIT_MUON && plan.units[i].rows > plan.units[i].cols;
    CHECK(tall > 0, "the config has tall Muon matrices");
    for (int s = 0; s < 2; s++) {
        double sq_h = 0, sq_e = 0;
        CHECK(zaya_optim_grad_sqnorm_local(&ho, ref.grads, &sq_h) == ZAYA_OK, "host sqnorm");
        CHECK(zaya_engine_grad_sqnorm(e, &sq_e) == ZAYA_OK, "engine sqnorm");
        CHECK(sq_h == sq_e, "%s: sqnorm %.17g vs %.17g", name, sq_e, sq_h);
        zaya_optim_step(&ho, ref.params, ref.grads, 0.02, 0.8);
        zaya_model_sync_weights(&ref);
        CHECK(zaya_engine_optim_step(e, 0.02, 0.8) == ZAYA_OK, "engine step: %s", zaya_error_message());
    }
    CHECK(eo.adamw_steps == 2 && eo.muon_steps == 2, "the host optimizer's counters advance");
    CHECK(zaya_engine_pull(e) == ZAYA_OK, "pull: %s", zaya_error_message());
    worst = 0;
    for (int i = 0; i < ref.ntensors; i++) {
        const zaya_tensor_info *t = &ref.tensors[i];
        double err = engine_tensor_err(mod.params + t->offset, ref.params + t->offset, t->numel);
        if (err > worst) worst = err;
        CHECK(err <= step_tol, "%s: %s after two steps: rel err %.3e > %.1e", name, t->name, err, step_tol);
    }
    double serr = engine_tensor_err(eo.state_block, ho.state_block, ho.state_floats);
    CHECK(serr <= step_tol, "%s: optimizer state after two steps: rel err %.3e", name, serr);
    printf("engine %s: after two optimizer steps, worst parameter rel err %.2e, state %.2e\n", name, worst, serr);

    /* the CPU backend works on the host's own blocks: no copies to go stale */
    CHECK(zaya_engine_params(e) == mod.params && zaya_engine_grads(e) == mod.grads, "the host blocks are the engine's");
    CHECK(zaya_engine_push(e) == ZAYA_OK && zaya_engine_pull(e) == ZAYA_OK, "push / pull");

    /* bad input: an id outside the vocabulary is named, nothing runs */
    ids[5] = (int32_t)c.vocab_size;
    zaya_status st = zaya_engine_forward(e, ids, tg, 1, &le);
    CHECK(st == ZAYA_ERANGE && strstr(zaya_error_message(), "position 5"), "bad id: %s", zaya_error_message());

    free(g);
    free(g2);
    zaya_optim_free(&ho);
    zaya_optim_free(&eo);
    zaya_optim_plan_free(&plan);
    zaya_engine_free(e);
    zaya_backend_free(be);
    zaya_model_free(&ref);
    zaya_model_free(&mod);
}

/* The host model's gradients-ready hook, called by the engine's backward as zaya_model_backward calls
 * it: after the final norm (L), after each block (L-1 .. 0), at the end (-1); at each call the gradients
 * it announces are final (equal to the finished backward's). */
typedef struct ready_rec {
    int calls, order_ok, layers;
    const zaya_model *m;
    const float *final_grads;
    int final_ok;
} ready_rec;
static void on_ready(void *ctx, int layer) {
    ready_rec *r = ctx;
    const int want = r->calls == 0 ? r->layers : r->layers - r->calls;
    r->order_ok &= layer == (want < 0 ? -1 : want) || (r->calls == r->layers + 1 && layer == -1);
    r->calls++;
    if (!r->final_grads) return;
    for (int i = 0; i < r->m->ntensors; i++) {
        const zaya_tensor_info *t = &r->m->tensors[i];
        const int bucket = t->layer >= 0 ? t->layer : !strcmp(t->name, "model.norm.weight") ? r->layers : -1;
        if (bucket != layer) continue;
        r->final_ok &= !memcmp(r->m->grads + t->offset, r->final_grads + t->offset, sizeof(float) * (size_t)t->numel);
    }
}

static void hooks_and_profile(void) {
    zaya_config c;
    engine_small_config(&c);
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    zaya_model_init_weights(&m, 5);
    zaya_backend *be = NULL;
    zaya_engine *e = NULL;
    CHECK(zaya_backend_cpu_init(&be) == ZAYA_OK && zaya_engine_init(&e, be, &m) == ZAYA_OK, "engine: %s",
          zaya_error_message());
    if (!e) return;
    const int64_t B = 2, T = 16, N = B * T, L = c.num_hidden_layers, V = c.vocab_size;
    CHECK(zaya_engine_plan(e, B, T) == ZAYA_OK, "plan");
    int32_t ids[32], tg[32];
    engine_batch(ids, tg, N, V, 3);
    /* a reference backward, then the same again with the hook checking each announced block */
    float *final = malloc(sizeof(float) * (size_t)m.nfloats);
    zaya_engine_zero_grad(e);
    CHECK(zaya_engine_forward(e, ids, tg, 1, NULL) == ZAYA_OK && zaya_engine_backward(e) == ZAYA_OK, "step");
    memcpy(final, m.grads, sizeof(float) * (size_t)m.nfloats);
    ready_rec r = {0, 1, (int)L, &m, final, 1};
    m.on_grads_ready = on_ready;
    m.on_grads_ready_ctx = &r;
    zaya_engine_zero_grad(e);
    CHECK(zaya_engine_forward(e, ids, tg, 1, NULL) == ZAYA_OK && zaya_engine_backward(e) == ZAYA_OK, "hooked step");
    m.on_grads_ready = NULL;
    CHECK(r.calls == (int)L + 2 && r.order_ok, "gradients-ready hook: %d calls, order %s", r.calls,
          r.order_ok ? "ok" : "wrong");
    CHECK(r.final_ok, "every announced gradient is final when announced");
    free(final);

    /* the phase profile: every phase with work charged, phases within the passes' wall time, the
     * projection and head FLOPs exactly the products the step runs; detached: unchanged */
    zaya_model_profile p;
    memset(&p, 0, sizeof p);
    zaya_engine_profile_attach(e, &p);
    zaya_engine_zero_grad(e);
    const double t0 = zaya_now_s();
    CHECK(zaya_engine_forward(e, ids, tg, 1, NULL) == ZAYA_OK, "profiled forward");
    const double t1 = zaya_now_s();
    CHECK(zaya_engine_backward(e) == ZAYA_OK, "profiled backward");
    const double t2 = zaya_now_s();
    zaya_engine_profile_attach(e, NULL);
    double sum[2] = {0, 0};
    for (int ph = 0; ph < ZAYA_PROF_NPHASES; ph++) {
        sum[0] += p.s[0][ph], sum[1] += p.s[1][ph];
        CHECK(p.s[0][ph] > 0, "forward phase %s not charged", zaya_prof_phase_name((zaya_prof_phase)ph));
        if (ph != ZAYA_PROF_HEAD)
            CHECK(p.s[1][ph] > 0, "backward phase %s not charged", zaya_prof_phase_name((zaya_prof_phase)ph));
        CHECK(p.gemm_s[0][ph] <= p.s[0][ph] && p.gemm_s[1][ph] <= p.s[1][ph], "phase %s: matmul time above its wall",
              zaya_prof_phase_name((zaya_prof_phase)ph));
    }
    CHECK(sum[0] <= t1 - t0 && sum[1] <= t2 - t1, "phases %.6f / %.6f s within passes of %.6f / %.6f s", sum[0], sum[1],
          t1 - t0, t2 - t1);
    const double D = (double)c.hidden_size, qd = (double)zaya_config_q_dim(&c), kvd = (double)zaya_config_kv_dim(&c);
    const double proj = 2.0 * (double)N * (D * (qd + kvd) + D * kvd + qd * D) * (double)L;
    CHECK(p.flop[0][ZAYA_PROF_ATTN_PROJ] == proj && p.flop[1][ZAYA_PROF_ATTN_PROJ] == 2 * proj,
          "projection FLOPs %.0f / %.0f, want %.0f / %.0f", p.flop[0][ZAYA_PROF_ATTN_PROJ], p.flop[1][ZAYA_PROF_ATTN_PROJ],
          proj, 2 * proj);
    CHECK(p.flop[0][ZAYA_PROF_HEAD] == 3 * 2.0 * (double)N * D * (double)V, "head FLOPs %.0f", p.flop[0][ZAYA_PROF_HEAD]);
    const zaya_model_profile before = p;
    CHECK(zaya_engine_forward(e, ids, tg, 0, NULL) == ZAYA_OK, "detached forward");
    CHECK(!memcmp(&before, &p, sizeof p), "a detached profile changed");
    zaya_engine_free(e);
    zaya_backend_free(be);
    zaya_model_free(&m);
}

static void refusals(void) {
    zaya_backend *be = NULL;
    CHECK(zaya_backend_cpu_init(&be) == ZAYA_OK, "cpu backend");
    zaya_config c;
    /* a backend without an operation the config needs is refused at init, naming backend and operation;
     * a config that does not call it runs */
    zaya_backend holed = *be;
    snprintf(holed.name, sizeof holed.name, "cpu-without-softmax-ld");
    holed.softmax_ld_forward = NULL;
    variant_config(V_LINEAR_ROUTER, &c);
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    zaya_engine *e = (zaya_engine *)1;
    CHECK(zaya_engine_init(&e, &holed, &m) == ZAYA_EUNSUPPORTED && e == NULL &&
              strstr(zaya_error_message(), "backend cpu-without-softmax-ld does not implement softmax_ld_forward") &&
              strstr(zaya_error_message(), "linear router"),
          "a missing operation refused: %s", zaya_error_message());
    zaya_model_free(&m);
    variant_config(V_ZAYA1, &c);
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    CHECK(zaya_engine_init(&e, &holed, &m) == ZAYA_OK, "the ZAYA router does not need it: %s", zaya_error_message());
    zaya_engine_free(e);
    holed.version = ZAYA_BACKEND_VERSION - 1;
    CHECK(zaya_engine_init(&e, &holed, &m) == ZAYA_EUNSUPPORTED && strstr(zaya_error_message(), "table version"),
          "another table version refused: %s", zaya_error_message());
    zaya_model_free(&m);
    engine_small_config(&c);
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    CHECK(zaya_engine_init(&e, be, &m) == ZAYA_OK, "init");
    float loss;
    int32_t ids[4] = {0}, tg[4] = {0};
    CHECK(zaya_engine_forward(e, ids, tg, 1, &loss) == ZAYA_EINVAL, "forward before plan");
    CHECK(zaya_engine_plan(e, 1, 33) == ZAYA_EINVAL && strstr(zaya_error_message(), "max_position"), "too long");
    CHECK(zaya_engine_grad_sqnorm(e, &(double){0}) == ZAYA_EINVAL, "optimizer before init");
    /* a backward needs a backward-ready forward: an evaluation forward leaves no head gradient */
    CHECK(zaya_engine_plan(e, 1, 4) == ZAYA_OK, "plan");
    CHECK(zaya_engine_forward(e, ids, tg, 0, &loss) == ZAYA_OK, "evaluation forward: %s", zaya_error_message());
    CHECK(zaya_engine_backward(e) == ZAYA_EINVAL && strstr(zaya_error_message(), "backward-ready"),
          "backward after an evaluation forward refused: %s", zaya_error_message());
    CHECK(zaya_engine_forward(e, ids, tg, 1, &loss) == ZAYA_OK && zaya_engine_backward(e) == ZAYA_OK,
          "forward + backward: %s", zaya_error_message());
    zaya_engine_free(e);
    zaya_model_free(&m);
    zaya_backend_free(be);
}

int main(void) {
    /* The CPU backend runs the CPU model's own kernels and primitives (backend.h): bit-identical. */
    refusals();
    hooks_and_profile();
    for (int v = 0; v < V_COUNT; v++) compare_model(v, ZAYA_DTYPE_F32, 0.0, 0.0);
    for (int v = 0; v < V_COUNT; v++) compare_model(v, ZAYA_DTYPE_BF16, 0.0, 0.0);
    return th_finish("engine");
}
