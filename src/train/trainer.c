/* The training loop: curriculum steps over the mixture loader, forward/backward with gradient
 * accumulation over micro-batches, clipping and the spike guard, Muon + AdamW, bias balancing,
 * validation, metrics and the end-of-run report. See docs/architecture.md for the path of one step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <unistd.h>

#include "train/ft.h"
#include "train/internal.h"
#include "zaya/bench.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/progress.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

void zaya_train_opts_default(zaya_train_opts *o) {
    memset(o, 0, sizeof *o);
    o->config = "zaya1-tiny";
    o->seed = -1;
    o->out_dir = "out/train";
    o->dtype = ZAYA_DTYPE_BF16; /* bf16 GEMM operands, f32 master weights, optimizer state and statistics */
    o->optimizer_muon = 1;
    o->lr_scale = 1.0;
    o->weight_decay = 0.1;
    o->clip = 1.0;
    o->spike_z = 6.0;
    /* Bias steps in units of the token-to-token spread of the router's scores, iterated on each
     * step's own scores, with drift compensation (docs/model.md, "Why routers collapse"). */
    o->balance_lr = 0.25;
    o->balance_drift = 1.0;
    o->balance_warmup = 0;
    o->balance_rule = ZAYA_BALANCE_ADAM;
    o->balance_units = ZAYA_BALANCE_SPREAD;
    o->balance_mode = ZAYA_BALANCE_FORWARD;
    o->balance_iters = 0; /* the mode's default: ZAYA_TRAIN_BALANCE_ITERS_FORWARD or _STEP */
    o->eval_every = 100;
    o->eval_batches = 4;
    o->log_every = 10;
    o->samples = 3;
    o->keep_last = 3;
    o->async_save = 1;
    o->sample_tokens = 96;
}

/* ---------------------------------------------------------------- setup */

static zaya_status open_data(zaya_trainer *t) {
    const zaya_train_opts *o = t->opts;
    if (o->run_path) {
        /* A run file names its data directory; --data overrides it. */
        cJSON *j = NULL;
        ZAYA_TRY(zaya_json_load_file_max(o->run_path, ZAYA_JSON_RUN_MAX_BYTES, "a run file", &j));
        if (o->data_dir) {
            cJSON_DeleteItemFromObjectCaseSensitive(j, "data_dir");
            cJSON_AddStringToObject(j, "data_dir", o->data_dir);
        }
        zaya_status s = zaya_run_parse(j, o->run_path, &t->run);
        cJSON_Delete(j);
        ZAYA_TRY(s);
        snprintf(t->data_dir, sizeof t->data_dir, "%s", t->run.data_dir);
    } else {
        if (o->data_dir) {
            snprintf(t->data_dir, sizeof t->data_dir, "%s", o->data_dir);
        } else {
            ZAYA_TRY(zaya_path_join(t->data_dir, sizeof t->data_dir, o->out_dir, "data"));
            ZAYA_TRY(zaya_train_prepare_builtin_data(t->data_dir, 4096));
        }
        ZAYA_TRY(zaya_run_default(t->data_dir, &t->run));
    }
    ZAYA_TRY(zaya_run_open_dataset(&t->run, 0, 0, &t->train_ds));
    ZAYA_TRY(zaya_run_open_dataset(&t->run, 1, 0, &t->val_ds));
    if (o->seed >= 0) t->run.seed = (uint64_t)o->seed; /* --seed over the run file's */
    ZAYA_TRY(zaya_loader_init(&t->loader, &t->train_ds, t->run.seed));
    char tok[4096];
    ZAYA_TRY(zaya_path_join(tok, sizeof tok, t->data_dir, "tokenizer.json"));
    if (access(tok, R_OK) == 0) {
        ZAYA_TRY(zaya_tokenizer_load(tok, &t->tokenizer));
        snprintf(t->tokenizer_path, sizeof t->tokenizer_path, "%s", tok);
    }
    return ZAYA_OK;
}

static zaya_status setup_model(zaya_trainer *t) {
    const zaya_train_opts *o = t->opts;
    zaya_config c;
    ZAYA_TRY(zaya_config_resolve(o->config, &c));
    /* The data decides the vocabulary: ids must fit, and the special tokens come from the tokenizer. */
    int64_t V = (int64_t)t->train_ds.src[0].vocab_size;
    if (c.vocab_size != V) {
        ZAYA_INFO("model vocab_size %lld -> %lld (from the data)", (long long)c.vocab_size, (long long)V);
        c.vocab_size = V;
    }
    if (t->tokenizer) {
        int32_t bos = zaya_tokenizer_special_id(t->tokenizer, "bos"), eos = zaya_tokenizer_special_id(t->tokenizer, "eos");
        int32_t pad = zaya_tokenizer_special_id(t->tokenizer, "pad");
        if (bos >= 0) c.bos_token_id = bos;
        if (eos >= 0) c.eos_token_id = eos;
        if (pad >= 0) c.pad_token_id = pad;
    } else {
        c.eos_token_id = t->train_ds.src[0].eos_id;
        if (c.bos_token_id >= V) c.bos_token_id = c.eos_token_id;
        if (c.pad_token_id >= V) c.pad_token_id = c.eos_token_id;
    }
    int64_t max_seq = 0;
    for (int p = 0; p < t->run.nphases; p++)
        if (t->run.phases[p].seq_len > max_seq) max_seq = t->run.phases[p].seq_len;
    if (c.max_position_embeddings < max_seq) c.max_position_embeddings = max_seq;
    c.rope_theta = t->run.phases[0].rope_theta;
    ZAYA_TRY(zaya_model_init(&t->model, &c, o->dtype));
    zaya_model_init_weights(&t->model, t->run.seed);
    return ZAYA_OK;
}

static zaya_status setup_optimizer(zaya_trainer *t) {
    const zaya_train_opts *o = t->opts;
    zaya_tensor_info *tensors = t->model.tensors;
    int n = t->model.ntensors;
    /* AdamW everywhere: reclassify the Muon tensors of a private copy of the table. */
    zaya_tensor_info *copy = NULL;
    if (!o->optimizer_muon) {
        copy = malloc(sizeof *copy * (size_t)n);
        if (!copy) return zaya_error_set(ZAYA_ENOMEM, "optimizer plan");
        memcpy(copy, tensors, sizeof *copy * (size_t)n);
        for (int i = 0; i < n; i++)
            if (copy[i].opt == ZAYA_OPT_MUON) copy[i].opt = ZAYA_OPT_ADAMW;
        tensors = copy;
    }
    const zaya_dp_mode mode = o->dp_allreduce ? ZAYA_DP_ALLREDUCE : ZAYA_DP_ZERO1;
    zaya_status s = zaya_optim_plan_build(tensors, n, mode == ZAYA_DP_ZERO1 ? t->world : 1, 0, &t->plan);
    free(copy);
    ZAYA_TRY(s);
    /* Buckets and ownership: rank r owns a contiguous segment of every bucket (ZeRO-1). */
    ZAYA_TRY(zaya_dp_init(&t->dp, t->comm, mode, &t->model, &t->plan));
    zaya_optim_config oc;
    zaya_optim_config_default(&oc);
    oc.weight_decay = o->weight_decay;
    oc.muon_ns_dtype = o->dtype; /* bf16 runs orthogonalize with bf16 GEMM inputs too (f32 accumulation) */
    ZAYA_TRY(zaya_optim_init(&t->opt, &t->plan, &oc, mode == ZAYA_DP_ZERO1 ? t->rank : 0));
    zaya_balancer_config bc;
    zaya_balancer_config_default(&bc);
    bc.lr = o->balance_lr;
    bc.rule = (zaya_balance_rule)o->balance_rule;
    bc.drift = o->balance_drift;
    bc.units = (zaya_balance_units)o->balance_units;
    /* A dense-MLP model (zaya_mlp "dense") has no router and no balancing biases: the balancer stays
     * empty (no layers), its updates do nothing and checkpoints carry no balancer state. */
    if (zaya_config_is_moe(&t->model.cfg))
        ZAYA_TRY(zaya_balancer_init(&t->balancer, t->model.tensors, t->model.ntensors, &bc));
    else
        memset(&t->balancer, 0, sizeof t->balancer);
    t->bal_iters = o->balance_iters > 0 ? o->balance_iters
                   : o->balance_mode == ZAYA_BALANCE_FORWARD ? ZAYA_TRAIN_BALANCE_ITERS_FORWARD : ZAYA_TRAIN_BALANCE_ITERS_STEP;
    zaya_spike_config sc;
    zaya_spike_config_default(&sc);
    if (o->spike_z > 0) sc.threshold = o->spike_z;
    ZAYA_TRY(zaya_spike_guard_init(&t->guard_loss, &sc));
    ZAYA_TRY(zaya_spike_guard_init(&t->guard_gnorm, &sc));
    return ZAYA_OK;
}

/* The phase's context parallelism: cp consecutive ranks of the world share every sequence (rank r of
 * a group holds chunk r % cp); the world / cp groups are the data-parallel replicas. Collective. */
static zaya_status check_phase_cp(const zaya_trainer *t, const zaya_phase *p, int cp) {
    const char *name = p->name;
    const int64_t seq = p->seq_len, pieces = cp > 1 && !t->opts->cp_contiguous ? 2 : 1, chunks = cp * pieces;
    if (t->world % cp != 0)
        return zaya_error_set(ZAYA_EINVAL, "phase '%s': cp %d does not divide the world of %d ranks (world = DP x CP)",
                              name, cp, t->world);
    if (seq % chunks != 0)
        return zaya_error_set(ZAYA_EINVAL, "phase '%s': seq_len %lld does not split into %lld equal chunks (cp %d%s)",
                              name, (long long)seq, (long long)chunks, cp, pieces == 2 ? ", zig-zag: 2 per rank" : "");
    const int64_t halo = zaya_cp_halo_rows(&t->model.cfg);
    if (cp > 1 && seq / chunks < halo)
        return zaya_error_set(ZAYA_EINVAL,
                              "phase '%s': with cp %d a chunk has %lld tokens, fewer than the convolution halo of %lld "
                              "(cca_time0 + cca_time1 - 2); use a smaller cp",
                              name, cp, (long long)(seq / chunks), (long long)halo);
    return ZAYA_OK;
}

static int phase_cp(const zaya_trainer *t, int64_t phase_cp_key) {
    return phase_cp_key > 0 ? (int)phase_cp_key : (t->opts->cp > 1 ? t->opts->cp : 1);
}

/* Every phase's split, before anything is trained. */
static zaya_status check_run_cp(const zaya_trainer *t) {
    for (int p = 0; p < t->run.nphases; p++) {
        const int cp = phase_cp(t, t->run.phases[p].cp);
        ZAYA_TRY(check_phase_cp(t, &t->run.phases[p], cp));
        /* every batch of the phase splits evenly over its data-parallel groups */
        ZAYA_TRY(zaya_run_check_world(&t->run, t->world / cp));
    }
    return ZAYA_OK;
}

static zaya_status set_phase_cp(zaya_trainer *t, const zaya_step_info *si, int *changed) {
    const int cp = phase_cp(t, si->cp);
    *changed = cp != t->cp;
    if (!*changed) return ZAYA_OK;
    ZAYA_TRY(check_phase_cp(t, &t->run.phases[si->phase], cp));
    zaya_comm_free(t->cp_comm);
    t->cp_comm = NULL;
    zaya_model_set_cp(&t->model, NULL);
    if (cp > 1) {
        ZAYA_TRY(zaya_comm_split(t->comm, t->rank / cp, t->rank % cp, &t->cp_comm));
        zaya_cp_ops ops;
        zaya_cp_link_init(&t->cp_link, t->cp_comm, !t->opts->cp_contiguous, &ops);
        ZAYA_TRY(zaya_model_set_cp(&t->model, &ops));
    }
    t->cp = cp;
    t->dp_size = t->world / cp;
    t->dp_rank = t->rank / cp;
    return ZAYA_OK;
}

/* Plans activations for a phase's shape: the local batch is split into micro-batches, and under
 * context parallelism the model holds one chunk of each sequence. */
static zaya_status plan_phase(zaya_trainer *t, const zaya_step_info *si) {
    int cp_changed = 0;
    ZAYA_TRY(set_phase_cp(t, si, &cp_changed));
    if (si->global_batch % t->dp_size != 0)
        return zaya_error_set(ZAYA_EINVAL, "global batch %lld is not divisible by the %d data-parallel groups",
                              (long long)si->global_batch, t->dp_size);
    int64_t local = si->global_batch / t->dp_size, Tc = si->seq_len / t->cp;
    int64_t micro = t->opts->micro_batch > 0 ? t->opts->micro_batch : local;
    if (micro > local) micro = local;
    while (local % micro) micro--;
    if (t->cp > 1 && (cp_changed || t->model.B != micro || t->model.T != Tc))
        ZAYA_TRY(zaya_model_plan(&t->model, micro, Tc)); /* context parallelism: the CPU model's passes */
    else if (t->cp == 1 && (cp_changed || t->micro != micro || t->plan_T != Tc))
        ZAYA_TRY(zaya_engine_plan(t->eng, micro, Tc));
    ZAYA_TRY(zaya_model_set_rope_theta(&t->model, si->rope_theta)); /* the engine follows the host's table */
    t->plan_T = Tc;
    t->micro = micro;
    t->accum = local / micro;
    t->planned_batch = si->global_batch;
    size_t need = (size_t)(local * (si->seq_len + 1));
    if (need > t->batch_cap) {
        free(t->batch);
        free(t->inputs);
        free(t->targets);
        t->batch = malloc(need * sizeof(int32_t));
        t->inputs = malloc((size_t)(micro * Tc) * sizeof(int32_t));
        t->targets = malloc((size_t)(micro * Tc) * sizeof(int32_t));
        if (!t->batch || !t->inputs || !t->targets) return zaya_error_set(ZAYA_ENOMEM, "batch buffers");
        t->batch_cap = need;
    } else {
        int32_t *ni = realloc(t->inputs, (size_t)(micro * Tc) * sizeof(int32_t));
        int32_t *nt = realloc(t->targets, (size_t)(micro * Tc) * sizeof(int32_t));
        if (!ni || !nt) return zaya_error_set(ZAYA_ENOMEM, "batch buffers");
        t->inputs = ni;
        t->targets = nt;
    }
    ZAYA_TRY(zaya_run_set_loader_phase(&t->run, si->phase, &t->loader));
    zaya_hb_regime(si->phase, si->seq_len);
    char cpnote[96] = "";
    if (t->cp > 1)
        snprintf(cpnote, sizeof cpnote, ", context parallel %d x %lld tokens (DP %d x CP %d)", t->cp, (long long)Tc,
                 t->dp_size, t->cp);
    ZAYA_INFO("phase %d '%s': seq %lld, global batch %lld (micro-batch %lld x %lld)%s, RoPE theta %g, %.1f MiB of activations",
              si->phase, t->run.phases[si->phase].name, (long long)si->seq_len, (long long)si->global_batch,
              (long long)micro, (long long)t->accum, cpnote, si->rope_theta,
              (double)(t->cp > 1 ? t->model.activation_bytes : zaya_engine_activation_bytes(t->eng)) / 1048576.0);
    return ZAYA_OK;
}

/* Rows of seq_len + 1 ids -> inputs (first T) and targets (last T) of micro-batch mb; under context
 * parallelism only this rank's pieces of them, in the model's order (zaya_cp_chunk). */
static void split_micro(zaya_trainer *t, int64_t mb, int64_t T) {
    const int P = zaya_cp_pieces(&t->model.cp);
    const int64_t Tc = T / t->cp, Tp = Tc / P;
    for (int64_t r = 0; r < t->micro; r++) {
        const int32_t *row = t->batch + (mb * t->micro + r) * (T + 1);
        for (int p = 0; p < P; p++) {
            const int64_t off = t->cp > 1 ? zaya_cp_chunk(&t->model.cp, t->model.cp.rank, p) * Tp : 0;
            memcpy(t->inputs + r * Tc + p * Tp, row + off, (size_t)Tp * sizeof(int32_t));
            memcpy(t->targets + r * Tc + p * Tp, row + off + 1, (size_t)Tp * sizeof(int32_t));
        }
    }
}

/* ---------------------------------------------------------------- one step */

static void summarize_load(zaya_trainer *t, zaya_balance_stats *b) {
    const int L = (int)t->model.cfg.num_hidden_layers, E = (int)t->model.cfg.num_experts;
    b->max_share = 0;
    b->min_share = 1;
    b->max_vio = 0;
    b->entropy = 0;
    for (int l = 0; l < L; l++) {
        const int64_t *cnt = t->route_counts + (int64_t)l * (E + 1);
        zaya_load_stats *ls = &t->layer_load[l];
        zaya_load_stats_compute(cnt, E, ls);
        int64_t routed = ls->tokens - cnt[E];
        for (int e = 0; e < E; e++)
            t->expert_share[(int64_t)l * E + e] = routed > 0 ? (double)cnt[e] / (double)routed : 0.0;
        t->layer_max_share[l] = ls->max_share;
        if (ls->max_share > b->max_share) b->max_share = ls->max_share;
        if (ls->min_share < b->min_share) b->min_share = ls->min_share;
        if (ls->max_vio > b->max_vio) b->max_vio = ls->max_vio;
        b->entropy += ls->entropy / L;
    }
    b->layer_max_share = t->layer_max_share;
    b->layer = t->layer_load;
    b->expert_share = t->expert_share;
}

/* The model's route hook in training forwards (ZAYA_BALANCE_FORWARD): before block l chooses its
 * experts, the controller's update and then the refinement (at most balance_iters - 1 recounts, until
 * it reports the batch balanced) on this batch's own scores, each counting the selection the current
 * biases would make (summed over the data-parallel ranks, so every rank moves its biases alike), then
 * the block routes with the result. The step unit is this batch's score spread. */
/* The selection block l's biases would make now, counted (host model or engine). */
static zaya_status count_layer(zaya_trainer *t, int l, int64_t *cnt) {
    if (t->cp == 1) return zaya_engine_route_count_layer(t->eng, l, cnt);
    zaya_model_route_count_layer(&t->model, l, cnt);
    return ZAYA_OK;
}

static void balance_layer(zaya_trainer *t, int l, double spread, const double *psum, double n) {
    zaya_model *m = &t->model;
    if (t->bal_status != ZAYA_OK) return;
    const int64_t E = m->cfg.num_experts, E1 = E + 1;
    int64_t *cnt = t->recount + (int64_t)l * E1;
    double *sp = t->bal_scratch; /* [spread, tokens, E expert-score sums, E of their squares / tokens] */
    sp[0] = spread;
    sp[1] = n;
    memcpy(sp + 2, psum, sizeof(double) * (size_t)E);
    for (int64_t e = 0; e < E; e++) sp[2 + E + e] = sp[2 + e] * sp[2 + e] / n;
    /* the all-reduces wait for the other ranks: reported as communication (a rank hung elsewhere is
     * not blamed on this one) and left out of the busy time (stragglers) */
    const double w0 = t->world > 1 ? zaya_now_s() : 0;
    if (t->world > 1) zaya_hb_section(ZAYA_FT_COMM, t->step);
    zaya_status s = zaya_dp_allreduce_sum_f64(&t->dp, sp, (int)(2 * E + 2));
    /* Each rank's spread is about its own batch mean; about the global mean it is larger by
     * sum_ranks n_r (mean_r - mean)^2 = sum_r psum_r^2 / n_r - psum^2 / N per expert (Chan et al.'s
     * pairwise variance). On one rank that term is exactly 0: the same operations on the same values. */
    if (s == ZAYA_OK && sp[1] > 0)
        for (int64_t e = 0; e < E; e++) sp[0] += sp[2 + E + e] - sp[2 + e] * sp[2 + e] / sp[1];
    const double sigma = sp[1] > 0 ? sqrt(sp[0] / (sp[1] * (double)E)) : 0.0;
    /* first the shift of the batch-mean scores since the previous batch (drift compensation), then
     * the controller on what is left */
    if (s == ZAYA_OK) zaya_balancer_follow_drift_layer(&t->balancer, l, sp + 2, sp[1], m->params);
    /* ZAYA1's controller update (Adam, the run's state), then at most balance_iters - 1 refinement
     * steps on this batch, each from the selection the current biases make; the counts are the same
     * on every rank, so every rank stops the refinement at the same step */
    const int K = t->bal_iters;
    for (int k = 0; k < K && s == ZAYA_OK; k++) {
        s = count_layer(t, l, cnt);
        if (s == ZAYA_OK) s = zaya_dp_allreduce_counts(&t->dp, cnt, (int)E1);
        if (s != ZAYA_OK) break;
        if (k == 0) {
            zaya_balancer_update_layer(&t->balancer, l, cnt, sigma, m->params, t->bal_t0 + t->bal_mb + 1);
            zaya_balancer_refine_begin(&t->balancer, t->balancer.cfg.lr * sigma);
        } else if (zaya_balancer_refine_layer(&t->balancer, l, cnt, m->params)) {
            break; /* balanced: the biases are final */
        }
    }
    if (t->world > 1) {
        zaya_hb_section(ZAYA_FT_FORWARD, t->step);
        t->bal_wait_s += zaya_now_s() - w0;
    }
    t->bal_status = s;
}

static void balance_in_forward(void *ctx, zaya_model *m, int l) {
    balance_layer(ctx, l, m->route_spread[l], m->route_psum + (int64_t)l * m->cfg.num_experts, (double)(m->B * m->T));
}

static void balance_in_engine(void *ctx, zaya_engine *e, int l) {
    zaya_trainer *t = ctx;
    balance_layer(t, l, zaya_engine_route_spread(e)[l], zaya_engine_route_psum(e) + (int64_t)l * t->model.cfg.num_experts,
                  (double)(t->micro * t->plan_T));
}

static zaya_status train_step(zaya_trainer *t, const zaya_step_info *si, zaya_step_metrics *sm) {
    zaya_model *m = &t->model;
    const int64_t T = si->seq_len;
    double t0 = zaya_now_s();
    zaya_ft_enter(t, ZAYA_FT_DATA);
    ZAYA_TRY(zaya_loader_next(&t->loader, si->global_batch, t->dp_rank, t->dp_size, t->batch, NULL));
    ZAYA_TRY(zaya_engine_zero_grad(t->eng));
    t->cp_link.wait_s = 0;
    memset(&m->cp_traffic, 0, sizeof m->cp_traffic);
    const int64_t E1 = m->cfg.num_experts + 1, L = m->cfg.num_hidden_layers;
    memset(t->route_counts, 0, sizeof(int64_t) * (size_t)(L * E1));
    memset(t->route_stats, 0, sizeof(double) * (size_t)(L * E1));
    double loss_sum = 0;
    const int in_forward = t->opts->balance_mode == ZAYA_BALANCE_FORWARD;
    /* the controller's step of this step (ramped over balance_warmup steps), in either mode */
    const double ramp = t->opts->balance_warmup > 0 ? (double)(t->step + 1) / (double)t->opts->balance_warmup : 1.0;
    t->balancer.cfg.lr = t->opts->balance_lr * (ramp < 1.0 ? ramp : 1.0);
    if (in_forward) {
        t->bal_t0 = t->balancer.steps;
        t->bal_status = ZAYA_OK;
        t->bal_wait_s = 0;
    }
    for (int64_t mb = 0; mb < t->accum; mb++) {
        split_micro(t, mb, T);
        float loss = 0;
        zaya_ft_enter(t, ZAYA_FT_FORWARD);
        t->bal_mb = mb;
        zaya_status fs;
        if (t->cp == 1) {
            zaya_engine_set_route_hook(t->eng, in_forward ? balance_in_engine : NULL, t);
            fs = zaya_engine_forward(t->eng, t->inputs, t->targets, 1, &loss);
            zaya_engine_set_route_hook(t->eng, NULL, NULL);
        } else {
            m->route_hook = in_forward ? balance_in_forward : NULL;
            m->route_hook_ctx = t;
            fs = zaya_model_forward(m, t->inputs, t->targets, 1, &loss);
            m->route_hook = NULL; /* validation and sampling forwards route with the biases as they are */
        }
        ZAYA_TRY(fs);
        ZAYA_TRY(t->bal_status);
        if (in_forward) t->balancer.drift_ready = 1;
        /* The last micro-batch's backward launches the gradient reductions bucket by bucket. */
        if (mb == t->accum - 1) zaya_train_grads_arm(t);
        zaya_ft_enter(t, ZAYA_FT_BACKWARD);
        if (t->cp == 1) {
            ZAYA_TRY(zaya_engine_backward(t->eng));
        } else {
            zaya_model_backward(m);
            ZAYA_TRY(m->cp_status);
        }
        loss_sum += loss;
        const int64_t *rc = t->cp == 1 ? zaya_engine_route_counts(t->eng) : m->route_counts;
        const double *rs = t->cp == 1 ? zaya_engine_route_spread(t->eng) : m->route_spread;
        const double *rp = t->cp == 1 ? zaya_engine_route_psum(t->eng) : m->route_psum;
        for (int64_t i = 0; i < L * E1; i++) t->route_counts[i] += rc[i];
        for (int64_t l = 0; l < L; l++) t->route_stats[l] += rs[l];
        for (int64_t i = 0; i < L * (E1 - 1); i++) t->route_stats[L + i] += rp[i];
    }
    zaya_ft_enter(t, ZAYA_FT_COMM);
    ZAYA_TRY(zaya_train_grads_finish(t));
    zaya_ft_inject_grads(t);
    /* Each micro-batch's loss is a mean over its tokens: average the accumulated gradients too. */
    if (t->accum > 1) ZAYA_TRY(zaya_engine_scale_grads(t->eng, 1.0f / (float)t->accum));
    double sq = 0;
    zaya_status gs = zaya_engine_grad_sqnorm(t->eng, &sq);
    /* Every rank sees the same global loss, norm, finiteness and routing counts, so every rank makes
     * the same skip decision and the same balancing update. */
    double red[3] = {loss_sum / (double)t->accum, t->dp.mode == ZAYA_DP_ZERO1 ? sq : 0.0, gs != ZAYA_OK ? 1.0 : 0.0};
    ZAYA_TRY(zaya_dp_allreduce_sum_f64(&t->dp, red, 3));
    sm->loss = red[0] / t->world;
    if (t->dp.mode == ZAYA_DP_ZERO1) sq = red[1];
    int nonfinite = red[2] > 0 || !isfinite(sq);
    ZAYA_TRY(zaya_dp_allreduce_counts(&t->dp, t->route_counts, (int)(L * E1)));
    ZAYA_TRY(zaya_dp_allreduce_sum_f64(&t->dp, t->route_stats, (int)(L * E1)));
    sm->grad_norm = sqrt(sq);
    sm->skipped = 0;
    if (zaya_ft_skip_forced(t)) {
        sm->skipped = 2; /* the supervisor rolled back past a numeric fault at this step */
    } else if (nonfinite || !isfinite(sm->loss)) {
        ZAYA_WARN("step %lld: non-finite %s (%s); update skipped", (long long)t->step,
                  isfinite(sm->loss) ? "gradient" : "loss", gs != ZAYA_OK ? zaya_error_message() : "on another rank");
        sm->skipped = 1;
    } else if (t->opts->spike_z > 0 && (zaya_spike_guard_check(&t->guard_loss, sm->loss) |
                                        zaya_spike_guard_check(&t->guard_gnorm, sm->grad_norm))) {
        ZAYA_WARN("step %lld: loss %.4f / grad norm %.3g is a spike (robust z > %.1f); update skipped",
                  (long long)t->step, sm->loss, sm->grad_norm, t->opts->spike_z);
        sm->skipped = 1;
    }
    sm->lr = si->lr * t->opts->lr_scale * zaya_ft_lr_factor(t);
    if (in_forward) /* the biases moved inside the forwards, skipped step or not (selection reads the f32 biases) */
        t->balancer.steps = t->bal_t0 + t->accum;
    if (!sm->skipped) {
        zaya_ft_enter(t, ZAYA_FT_OPTIMIZER);
        double scale = zaya_optim_clip_scale(sm->grad_norm, t->opts->clip);
        ZAYA_TRY(zaya_engine_optim_step(t->eng, sm->lr, scale));
        ZAYA_TRY(zaya_train_params_share(t));
        if (!in_forward) {
            /* the step unit of the whole step's tokens, also for the recounts of its last micro-batch */
            zaya_balancer_spread_units(t->route_stats, t->route_counts, (int)L, (int)(E1 - 1), t->route_sigma);
            zaya_balancer_update(&t->balancer, t->route_counts, t->route_sigma, m->params);
            /* Further controller iterations on this step's own scores: recount the selection with the
             * new biases and update again, so that an overshoot is seen at once instead of a step later. */
            for (int k = 1; k < t->bal_iters; k++) {
                if (t->cp == 1) ZAYA_TRY(zaya_engine_route_recount(t->eng, t->recount));
                else zaya_model_route_recount(m, t->recount);
                ZAYA_TRY(zaya_dp_allreduce_counts(&t->dp, t->recount, (int)(L * E1)));
                zaya_balancer_update(&t->balancer, t->recount, t->route_sigma, m->params);
            }
            zaya_balancer_follow_drift(&t->balancer, t->route_stats + L, t->route_counts, m->params);
        }
    } else {
        t->skipped++;
    }
    summarize_load(t, &sm->balance);
    sm->seconds = zaya_now_s() - t0;
    sm->tokens = si->global_batch * T;
    sm->cp = t->cp;
    sm->cp_traffic = m->cp_traffic;
    sm->cp_wait_s = t->cp > 1 ? t->cp_link.wait_s : 0.0;
    sm->comm_wait_s = t->dp.wait_s + (in_forward ? t->bal_wait_s : 0.0) + sm->cp_wait_s;
    sm->gather_s = t->dp.gather_s;
    t->comm_wait_s += sm->comm_wait_s;
    t->gather_s += t->dp.gather_s;
    return ZAYA_OK;
}

/* ---------------------------------------------------------------- validation */

/* Mean loss over eval_batches fixed batches of every source's validation shards (the same sequences
 * each time: a fresh loader with a fixed seed). */
zaya_status zaya_train_validate(zaya_trainer *t, const zaya_step_info *si, double *per_source, double *mean) {
    zaya_model *m = &t->model;
    const int64_t T = si->seq_len, B = t->micro;
    double total = 0;
    int counted = 0;
    for (int s = 0; s < t->val_ds.nsources; s++) {
        zaya_loader vl;
        ZAYA_TRY(zaya_loader_init(&vl, &t->val_ds, 4242));
        const char *name = t->val_ds.src[s].name;
        double w = 1.0;
        ZAYA_TRY(zaya_loader_set_mixture(&vl, T, &name, &w, 1));
        double sum = 0;
        for (int64_t b = 0; b < t->opts->eval_batches; b++) {
            ZAYA_TRY(zaya_loader_next(&vl, B, 0, 1, t->batch, NULL));
            split_micro(t, 0, T); /* t->micro == B: the model is planned for one micro-batch */
            float loss = 0;
            if (t->cp == 1) ZAYA_TRY(zaya_engine_forward(t->eng, t->inputs, t->targets, 0, &loss));
            else ZAYA_TRY(zaya_model_forward(m, t->inputs, t->targets, 0, &loss));
            zaya_hb_tick(); /* each batch is progress: the eval timeout need not cover the whole evaluation */
            double l = loss;
            if (t->cp > 1) ZAYA_TRY(zaya_allreduce_f64(t->cp_comm, &l, &l, 1, ZAYA_REDOP_AVG)); /* the chunks' mean */
            sum += l;
        }
        per_source[s] = sum / (double)t->opts->eval_batches;
        total += per_source[s];
        counted++;
    }
    *mean = counted ? total / counted : NAN;
    return ZAYA_OK;
}

/* A validation and its record (report.c). */
static zaya_status eval_and_log(zaya_trainer *t, const zaya_step_info *si, double run_t0) {
    double per[ZAYA_DATA_MAX_SOURCES], mean = 0, t0 = zaya_now_s();
    ZAYA_TRY(zaya_train_validate(t, si, per, &mean));
    if (t->rank == 0) zaya_train_log_eval(t, per, mean, zaya_now_s() - t0, run_t0);
    return ZAYA_OK;
}

/* ---------------------------------------------------------------- run */

static void trainer_free(zaya_trainer *t) {
    zaya_train_checkpoint_wait(t);
    zaya_ckpt_snapshot_free(&t->snapshot);
    zaya_dp_free(&t->dp);
    zaya_comm_free(t->cp_comm);
    t->cp_comm = NULL;
    zaya_engine_free(t->eng);
    zaya_backend_free(t->be);
    zaya_nccl_free(t->nccl);
    t->nccl = NULL;
    t->eng = NULL;
    t->be = NULL;
    zaya_model_free(&t->model);
    zaya_optim_free(&t->opt);
    zaya_optim_plan_free(&t->plan);
    zaya_balancer_free(&t->balancer);
    zaya_dataset_free(&t->train_ds);
    zaya_dataset_free(&t->val_ds);
    zaya_run_free(&t->run);
    zaya_tokenizer_free(t->tokenizer);
    free(t->batch);
    free(t->inputs);
    free(t->targets);
    free(t->route_counts);
    free(t->route_stats);
    free(t->route_sigma);
    free(t->recount);
    free(t->bal_scratch);
    free(t->layer_max_share);
    free(t->layer_load);
    free(t->expert_share);
    if (t->metrics) fclose(t->metrics);
    zaya_train_history_free(&t->hist);
    zaya_train_unlock_outputs(t);
    zaya_hb_close(); /* normally closed by zaya_ft_finish; early failures end here */
}

zaya_status zaya_train_run(const zaya_train_opts *o, zaya_train_result *res) {
    zaya_trainer tr;
    memset(&tr, 0, sizeof tr);
    zaya_trainer *t = &tr;
    t->opts = o;
    memset(res, 0, sizeof *res);
    /* Under mpirun every rank runs this; without it the world is one rank. */
    zaya_ft_lifeline_start(); /* under a supervisor: die with it */
    zaya_status s = zaya_dist_init(NULL, NULL, &t->comm);
    if (s != ZAYA_OK) return s;
    t->world = zaya_comm_size(t->comm);
    t->rank = zaya_comm_rank(t->comm);
    t->cp = 1, t->dp_size = t->world, t->dp_rank = t->rank; /* until a phase asks for context parallelism */
    /* Ranks of one node share its cores: by default each rank takes its share of them. */
    int want = o->threads;
    if (want <= 0 && t->world > 1) {
        want = omp_get_num_procs() / t->world;
        if (want < 1) want = 1;
    }
    int threads = zaya_threads_init(want);
    zaya_train_opts ro = *o;
    if (t->rank != 0) ro.quiet = 1; /* only rank 0 prints and writes results */
    t->opts = o = &ro;
    t->lock_fd = t->ckpt_lock_fd = -1;
    if (o->ckpt_dir) snprintf(t->ckpt_dir, sizeof t->ckpt_dir, "%s", o->ckpt_dir);
    else zaya_path_join(t->ckpt_dir, sizeof t->ckpt_dir, o->out_dir, "ckpt");
    zaya_hb_open(t->rank, t->world);
    s = zaya_train_engine_probe(o); /* a missing device fails before anything is written */
    if (s == ZAYA_OK) s = t->rank == 0 ? zaya_mkdir_p(o->out_dir) : ZAYA_OK;
    if (s == ZAYA_OK) s = zaya_train_lock_outputs(t); /* before anything is written there */
    if (s == ZAYA_OK) s = open_data(t);
    if (s == ZAYA_OK) s = setup_model(t);
    if (s == ZAYA_OK) s = check_run_cp(t);
    if (s == ZAYA_OK) s = setup_optimizer(t);
    if (s == ZAYA_OK && t->rank == 0) s = zaya_run_write_resolved(&t->run, o->out_dir);
    if (s != ZAYA_OK) {
        trainer_free(t);
        zaya_dist_finalize(t->comm);
        return s;
    }
    const int64_t L = t->model.cfg.num_hidden_layers, E1 = t->model.cfg.num_experts + 1;
    t->route_counts = calloc((size_t)(L * E1), sizeof(int64_t));
    t->route_stats = calloc((size_t)(L * E1), sizeof(double));
    t->route_sigma = calloc((size_t)L, sizeof(double));
    t->recount = calloc((size_t)(L * E1), sizeof(int64_t));
    t->bal_scratch = calloc((size_t)(2 * E1), sizeof(double));
    t->layer_max_share = calloc((size_t)L, sizeof(double));
    t->layer_load = calloc((size_t)L, sizeof(zaya_load_stats));
    t->expert_share = calloc((size_t)(L * (E1 - 1)), sizeof(double));
    /* Resume from the newest good checkpoint unless told otherwise. */
    int64_t tokens = 0;
    int resumed = 0;
    zaya_ft_init(t);
    if (!o->no_resume) s = zaya_train_checkpoint_resume(t, &tokens, &resumed);
    if (s == ZAYA_OK) s = zaya_train_engine_start(t); /* the resumed weights and state go up with it */
    if (s == ZAYA_OK) zaya_ft_resumed(t, resumed);
    if (s != ZAYA_OK) {
        trainer_free(t);
        zaya_dist_finalize(t->comm);
        return s;
    }
    const int64_t start = t->step, start_tokens = tokens;
    char path[4096];
    zaya_path_join(path, sizeof path, o->out_dir, "metrics.jsonl");
    if (resumed && t->rank == 0) zaya_train_history_load(t, path, start); /* the summary covers the whole run */
    t->metrics = t->rank == 0 ? fopen(path, resumed ? "a" : "w") : fopen("/dev/null", "w");
    if (!t->metrics || !t->route_counts || !t->layer_max_share || !t->layer_load || !t->expert_share ||
        !t->route_stats || !t->route_sigma || !t->recount || !t->bal_scratch) {
        trainer_free(t);
        zaya_dist_finalize(t->comm);
        return zaya_error_set(ZAYA_EIO, "cannot open '%s' for writing", path);
    }
    zaya_param_counts pc = zaya_model_count_params(&t->model.cfg);
    double peak = o->peak_gflops;
    char peak_src[1400] = "given by --peak-gflops";
    if (peak <= 0) s = zaya_train_engine_peak(t, &peak); /* a device's; 0 on the CPU backend */
    if (peak > 0 && o->peak_gflops <= 0) snprintf(peak_src, sizeof peak_src, "the device's, measured at start-up");
    if (peak <= 0 && s == ZAYA_OK) s = zaya_train_peak_resolve(o, t->rank, &peak, peak_src, sizeof peak_src);
    if (s != ZAYA_OK) {
        trainer_free(t);
        zaya_dist_finalize(t->comm);
        return s;
    }
    t->peak_gflops = peak;
    int64_t total = t->run.total_steps;
    if (o->max_steps > 0 && o->max_steps < total) total = o->max_steps;
    if (!o->quiet) {
        printf("zaya train: %s, %lld parameters (%lld active non-embedding), %s matmuls, %d threads x %d rank%s (%s)%s%s\n",
               t->model.cfg.name, (long long)pc.total, (long long)pc.active_non_embedding,
               o->dtype == ZAYA_DTYPE_BF16 ? "bf16" : "f32", threads, t->world, t->world > 1 ? "s" : "",
               t->dp.mode == ZAYA_DP_ZERO1 ? "ZeRO-1" : "all-reduce", ", step on the engine over backend ", t->be->name);
        printf("run '%s': %d phases, %lld steps, %lld tokens; data %s\n", t->run.name, t->run.nphases,
               (long long)t->run.total_steps, (long long)t->run.total_tokens, t->data_dir);
        printf("MFU against a matmul peak of %.0f GFLOP/s: %s\n", peak, peak_src);
        zaya_optim_plan_print(&t->plan, stdout);
        fflush(stdout);
    }

    zaya_progress prog;
    zaya_progress_init(&prog, "train", "step", total);
    double run_t0 = zaya_now_s();
    zaya_step_info si;
    memset(&si, 0, sizeof si);
    for (; t->step < total; t->step++) {
        s = zaya_run_step(&t->run, t->step, &si);
        if (s != ZAYA_OK) break;
        /* Phase starts change length and mixture; a batch ramp changes the batch within a phase. */
        if (si.phase_start || t->step == start || si.global_batch != t->planned_batch ||
            si.seq_len != t->plan_T * t->cp) {
            s = plan_phase(t, &si);
            if (s != ZAYA_OK) break;
        }
        if (si.phase_start) {
            /* a new phase is a deliberate change of regime: the spike guard starts over */
            zaya_spike_guard_reset(&t->guard_loss);
            zaya_spike_guard_reset(&t->guard_gnorm);
        }
        int want_eval = t->step == 0 || (o->eval_every > 0 && t->step % o->eval_every == 0) || si.phase_start;
        if (want_eval && t->dp_rank == 0) { /* rank 0, with the rest of its CP group */
            zaya_ft_enter(t, ZAYA_FT_EVAL);
            s = eval_and_log(t, &si, run_t0);
            if (s != ZAYA_OK) break;
        }
        zaya_step_metrics sm;
        memset(&sm, 0, sizeof sm);
        s = train_step(t, &si, &sm);
        if (s != ZAYA_OK) break;
        zaya_ft_step_done(t, sm.seconds, sm.seconds - sm.comm_wait_s - sm.gather_s, sm.skipped, sm.loss, sm.grad_norm);
        if ((s = zaya_train_checkpoint_poll(t)) != ZAYA_OK) break; /* a failed background save stops the run now */
        tokens += sm.tokens;
        zaya_train_log_step(t, &si, &sm, tokens, run_t0);
        char note[96];
        snprintf(note, sizeof note, "loss %.3f  %.0f tok/s", sm.loss, (double)sm.tokens / sm.seconds);
        if (!o->quiet) zaya_progress_update(&prog, t->step + 1, note);
        if (zaya_ft_stop_agreed(t)) { /* preemption: the save after the loop keeps this step */
            t->step++;
            break;
        }
        if (o->save_every > 0 && (t->step + 1) % o->save_every == 0 && t->step + 1 < total) {
            zaya_ft_saving(t, t->step + 1);
            s = zaya_train_checkpoint_save(t, t->step + 1, tokens);
            if (s != ZAYA_OK) break;
            zaya_ft_saved(t, t->step + 1);
        }
    }
    if (s == ZAYA_OK && t->step > start) {
        zaya_ft_saving(t, t->step);
        s = zaya_train_checkpoint_save(t, t->step, tokens);
        if (s == ZAYA_OK) zaya_ft_saved(t, t->step);
    }
    if (s == ZAYA_OK) s = zaya_train_checkpoint_wait(t);
    else zaya_train_checkpoint_wait(t);
    if (s == ZAYA_OK && total > 0 && !zaya_ft_preempted()) { /* a stop request exits after its checkpoint */
        zaya_run_step(&t->run, total - 1, &si);
        if (t->step == start) s = plan_phase(t, &si); /* nothing left to train: plan for the evaluation */
        if (s == ZAYA_OK && t->dp_rank == 0) s = eval_and_log(t, &si, run_t0);
    }
    if (!o->quiet && s == ZAYA_OK && !zaya_ft_preempted()) zaya_progress_finish(&prog, NULL);
    else if (!o->quiet) zaya_progress_stop(&prog, t->step, s == ZAYA_OK ? "stopped on request: checkpoint saved" : "failed");
    double seconds = zaya_now_s() - run_t0;
    double blocking = s == ZAYA_OK ? zaya_dp_blocking_comm_seconds(&t->dp) : 0;
    if (s == ZAYA_OK && t->rank == 0) s = zaya_train_report(t, &si);
    res->checkpoint_stall_s = t->ckpt_saves ? t->ckpt_stall_s / (double)t->ckpt_saves : 0;
    res->steps = t->step - start; /* in this invocation */
    res->tokens = tokens - start_tokens; /* in this invocation */
    res->skipped_updates = t->skipped;
    res->seconds = seconds;
    res->tokens_per_s = seconds > 0 ? (double)(tokens - start_tokens) / seconds : 0;
    res->run_steps = t->step;
    res->run_tokens = tokens;
    res->start_step = start;
    res->world = t->world;
    res->rank = t->rank;
    res->dp_size = t->dp_size;
    res->cp = t->cp;
    res->comm_wait_s = t->comm_wait_s;
    res->gather_s = t->gather_s;
    res->comm_blocking_s = blocking * (double)t->step; /* per-step cost measured once, as a total */
    zaya_train_history_summary(&t->hist, res);
    res->preempted = zaya_ft_preempted();
    zaya_ft_finish(t, s == ZAYA_OK);
    trainer_free(t);
    zaya_dist_finalize(t->comm);
    return s;
}
