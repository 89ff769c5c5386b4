/* Step-time and inference-latency model.
 *
 * Training step per rank = GEMMs (forward, input and weight gradients; grouped experts) + attention
 * (FLOPs at a fused-kernel efficiency) + memory-bound ops (bytes over achievable bandwidth, with a
 * launch per op on GPUs) + optimizer update (streaming the optimizer state; Muon adds Newton-Schulz
 * GEMMs, batched by shape as src/optim/muon.c runs them) + exposed data-parallel communication (from the collective curves or the link model).
 * Decode per token = (active weight bytes touched by the batch + KV bytes) / bandwidth, bounded below
 * by its FLOPs, plus routing and per-layer launches. */
#include <math.h>
#include <string.h>

#include "zaya/optim.h" /* ZAYA_MUON_THREAD_FLOATS: the Newton-Schulz batch */
#include "zaya/size.h"

void zaya_size_step_opts_default(zaya_size_step_opts *o) {
    memset(o, 0, sizeof *o);
    o->batch = 1;
    o->seq = 4096;
    o->dp = 1;
    o->cp = 1;
    o->zero_stage = 1;
    o->optimizer = ZAYA_SIZE_OPT_ADAMW;
    o->grad_comm_bytes = 4;
}

/* CPU kernels that are not oneDNN GEMMs (src/kernels) compute and store in f32 whatever the GEMM dtype:
 * attention, the CCA convolutions and every elementwise op. The grouped CCA convolution is a direct loop
 * nest; `zaya bench kernels` measures it at 30-38% of the f32 matmul peak (conv_grp_fwd/bwd). */
#define CPU_CONV_EFF 0.35

static double peak_of(const zaya_size_hw *hw) { return hw->act_bf16 ? hw->peak_bf16 : hw->peak_f32; }

/* The profile viewed at f32 (CPU non-GEMM kernels); itself when it has no f32 peak. */
static zaya_size_hw f32_view(const zaya_size_hw *hw) {
    zaya_size_hw h = *hw;
    if (h.peak_f32 > 0) h.act_bf16 = 0;
    return h;
}
static double bw_of(const zaya_size_hw *hw) { return hw->mem_bw * hw->mem_eff; }

/* Achieved attention FLOP/s: a fraction of peak on GPUs; on CPUs a fraction of the measured GEMM rate
 * at the (T x T x head_dim) score shape. */
static double attn_rate(const zaya_size_hw *hw, int64_t seq, int64_t head_dim) {
    if (hw->is_gpu) return peak_of(hw) * hw->attn_eff;
    zaya_size_gemm_est e;
    zaya_size_hw h32 = f32_view(hw);
    zaya_size_gemm_estimate(&h32, seq, seq, head_dim, &e);
    return e.flops / e.time_s * hw->attn_eff;
}

/* Values read + written per token per layer by the elementwise / normalization / routing kernels of the
 * forward pass, and the number of such kernels. */
static void memops_per_layer(const zaya_size_arch *a, double *values, double *kernels) {
    double D = (double)a->hidden, d = (double)a->head_dim;
    double q = (double)a->heads * d, kv = (double)a->kv_heads * d;
    double v = 0, k = 0;
    v += 2 * 2 * D; k += 2;               /* two RMSNorms: read, write */
    v += 2 * 3 * D; k += 2;               /* two residual merges: read 2, write 1 */
    if (a->residual_scales) v += 2 * D;   /* scale/bias vectors and fp32 stream */
    v += 2 * (q + kv); k += 1;            /* RoPE on q and k */
    if (a->qk_norm != ZAYA_SIZE_QK_NORM_NONE || a->attn == ZAYA_SIZE_ATTN_CCA) { v += 2 * (q + kv); k += 1; }
    if (a->attn == ZAYA_SIZE_ATTN_CCA) {
        v += 4 * (q + kv); k += 3;        /* depthwise conv, qk-mean, value shift */
    }
    double moe_frac = a->layers ? (double)a->n_moe_layers / (double)a->layers : 0;
    if (a->experts > 0) {
        double F = (double)a->expert_ffn, kk = (double)a->top_k;
        double mv = kk * 3 * F + kk * 2 * D + 2.0 * a->experts; /* SwiGLU, dispatch + combine, softmax */
        if (a->shared_experts) mv += 3.0 * a->shared_ffn * a->shared_experts;
        v += moe_frac * mv;
        k += moe_frac * 5;
    }
    if (a->layers > a->n_moe_layers) { v += (1 - moe_frac) * 3 * (double)a->dense_ffn; k += (1 - moe_frac); }
    *values = v;
    *kernels = k;
}

/* Newton-Schulz FLOPs for one m x n matrix (5 quintic iterations on the smaller Gram matrix). */
static double ns_flops(double m, double n) {
    double s = m < n ? m : n, l = m < n ? n : m;
    return 5 * (4 * s * s * l + 2 * s * s * s);
}

/* Seconds of Newton-Schulz for `count` matrices of one shape m x n on this rank (count: the shape's
 * matrices over the ZeRO shards, so it may be fractional). GPUs: the FLOPs at the best GEMM efficiency.
 * CPUs, as src/optim/muon.c runs them: the matrices of one Newton-Schulz shape (s x l, s <= l) form a
 * group run in equal batches of up to compute_units x ZAYA_MUON_THREAD_FLOATS iterate floats (at least
 * one matrix); per batch and iteration the three products A = X X^T (s x s x l), B = bA + cA^2
 * (s x s x s) and X <- aX + B X (s x l x s) are one batched call each on the whole pool (the pool
 * schedule, the faster one when the cores are not shared): every matrix at the profiled rate of its
 * shapes, one launch per batched call. */
static double ns_group_time(const zaya_size_hw *hw, int64_t m, int64_t n, double count) {
    if (count <= 0) return 0;
    if (hw->is_gpu) return count * ns_flops((double)m, (double)n) / (peak_of(hw) * hw->gemm_eff_max);
    int64_t s = m < n ? m : n, l = m < n ? n : m;
    zaya_size_gemm_est e1, e2, e3;
    zaya_size_gemm_estimate(hw, s, s, l, &e1);
    zaya_size_gemm_estimate(hw, s, s, s, &e2);
    zaya_size_gemm_estimate(hw, s, l, s, &e3);
    double per_matrix = e1.time_s + e2.time_s + e3.time_s - 3 * hw->launch_s;
    int64_t cap = (int64_t)(hw->compute_units > 0 ? hw->compute_units : 1) * ZAYA_MUON_THREAD_FLOATS;
    int64_t fit = cap / (s * l) > 0 ? cap / (s * l) : 1, mats = (int64_t)ceil(count - 1e-9);
    int64_t batches = (mats + fit - 1) / fit;
    return 5 * (count * per_matrix + (double)batches * 3 * hw->launch_s);
}

/* Muon's Newton-Schulz seconds per step: the 2-D non-embedding matrices grouped by their shape (m x n
 * and n x m together), each group's matrices shared over `shard` ranks. */
static double ns_time(const zaya_size_hw *hw, const zaya_size_params *pc, double shard) {
    int64_t gs[ZAYA_SIZE_MAX_ROWS], gl[ZAYA_SIZE_MAX_ROWS];
    double gc[ZAYA_SIZE_MAX_ROWS];
    int ng = 0;
    for (int i = 0; i < pc->nrows; i++) {
        const zaya_size_param_row *r = &pc->rows[i];
        if (!r->matrix || r->embedding) continue;
        int64_t s = r->rows_ < r->cols_ ? r->rows_ : r->cols_, l = r->rows_ < r->cols_ ? r->cols_ : r->rows_;
        int g = 0;
        while (g < ng && (gs[g] != s || gl[g] != l)) g++;
        if (g == ng) gs[ng] = s, gl[ng] = l, gc[ng++] = 0;
        gc[g] += (double)r->instances;
    }
    double t = 0;
    for (int g = 0; g < ng; g++) t += ns_group_time(hw, gs[g], gl[g], gc[g] / shard);
    return t;
}

zaya_status zaya_size_predict_step(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_step_opts *o, zaya_size_step_pred *p) {
    memset(p, 0, sizeof *p);
    if (o->batch <= 0 || o->seq <= 0 || o->dp <= 0)
        return zaya_error_set(ZAYA_EINVAL, "batch, seq and dp must be positive (got %lld, %lld, %d)", (long long)o->batch,
                              (long long)o->seq, o->dp);
    if (o->zero_stage < 0 || o->zero_stage > 3) return zaya_error_set(ZAYA_EINVAL, "ZeRO stage %d (0..3)", o->zero_stage);
    const int cp = o->cp > 0 ? o->cp : 1;
    if (o->seq % cp != 0)
        return zaya_error_set(ZAYA_EINVAL, "seq %lld is not divisible by cp %d", (long long)o->seq, cp);
    const int64_t halo = a->attn == ZAYA_SIZE_ATTN_CCA ? (a->cca_time0 - 1) + (a->cca_time1 - 1) : 0;
    if (cp > 1 && o->seq / cp < halo)
        return zaya_error_set(ZAYA_EINVAL, "with cp %d a chunk has %lld tokens, fewer than the convolution halo of %lld",
                              cp, (long long)(o->seq / cp), (long long)halo);
    /* T: the tokens this rank holds (its chunk of each sequence) */
    double T = (double)o->batch * (double)o->seq / cp, elt = hw->act_bf16 && hw->is_gpu ? 2 : 4;
    zaya_size_hw h32 = f32_view(hw);
    zaya_size_run run = {o->batch, o->seq / cp, 1};

    /* GEMMs; with recomputation the forward GEMMs run twice */
    zaya_size_gemm_shape g[ZAYA_SIZE_MAX_GEMMS];
    int n = zaya_size_list_gemms(a, &run, g, ZAYA_SIZE_MAX_GEMMS);
    double gemm_flops = 0, stage_values = 0;
    for (int i = 0; i < n; i++) {
        zaya_size_gemm_est e;
        int conv = !hw->is_gpu && g[i].conv;
        if (conv) {
            zaya_size_gemm_estimate_grouped(&h32, g[i].groups, g[i].m, g[i].n, g[i].k, &e);
            e.time_s = e.flops / (h32.peak_f32 > 0 ? h32.peak_f32 : peak_of(hw)) / CPU_CONV_EFF;
        } else zaya_size_gemm_estimate_grouped(hw, g[i].groups, g[i].m, g[i].n, g[i].k, &e);
        double reps = (double)g[i].count * (o->recompute && !strcmp(g[i].pass, "fwd") ? 2 : 1);
        p->gemm_s += e.time_s * reps;
        /* bf16 on a CPU (src/model/linear.c): the f32 activation operands of every call are rounded into
         * staging buffers (A; for the weight gradient A and B); weights come from a bf16 shadow */
        if (!hw->is_gpu && hw->act_bf16 && !conv)
            stage_values += (double)g[i].groups * reps *
                            ((double)g[i].m * (double)g[i].k + (strcmp(g[i].pass, "wgrad") ? 0 : (double)g[i].k * (double)g[i].n));
        gemm_flops += e.flops * reps;
    }
    p->gemm_eff = gemm_flops / (p->gemm_s * peak_of(hw));

    /* attention: forward 2 products, backward 5 (dV, dP, dS recompute, dQ, dK) -> 3.5x forward */
    zaya_size_flops f;
    zaya_size_count_flops(a, o->seq, &f);
    /* contiguous chunks do unequal causal work: chunk r's queries see (r + 1/2) chunks of keys on
     * average, so the last does (2cp - 1)/cp of the mean and sets the step's pace; zig-zag pairs
     * (r, 2cp-1-r) are equal */
    p->cp_attn_imbalance = cp > 1 && o->cp_contiguous ? (2.0 * cp - 1.0) / cp : 1.0;
    double attn_fwd = f.attn_fwd * T * p->cp_attn_imbalance;
    p->attn_s = attn_fwd * (3.5 + (o->recompute ? 1 : 0)) / attn_rate(hw, o->seq, a->head_dim);

    /* memory-bound ops: backward moves about twice the forward traffic */
    double vals, kernels;
    memops_per_layer(a, &vals, &kernels);
    double passes = 3 + (o->recompute ? 1 : 0);
    double mem_bytes = vals * elt * T * (double)a->layers * passes + T * (double)a->vocab * 4 * 3; /* + fp32 softmax/CE */
    mem_bytes += stage_values * (4 + 2);
    p->memop_s = mem_bytes / bw_of(hw) + (hw->is_gpu ? kernels * (double)a->layers * passes * hw->launch_s : 0);

    /* optimizer: streams the (sharded) state once per step */
    zaya_size_params pc;
    zaya_size_count_params(a, &pc);
    const int world = o->dp * cp; /* gradients are reduced, and ZeRO shards, over every rank */
    double P = (double)pc.total, shard = o->zero_stage >= 1 ? (double)world : 1;
    double adam_b = 32, muon_b = 22;
    double opt_bytes = o->optimizer == ZAYA_SIZE_OPT_MUON ? (muon_b * (double)pc.matrix_total + adam_b * (P - (double)pc.matrix_total))
                                                     : adam_b * P;
    if (!hw->is_gpu && hw->act_bf16) opt_bytes += (4 + 2) * P; /* refresh of the bf16 weight shadow */
    p->optimizer_s = opt_bytes / shard / bw_of(hw);
    if (o->optimizer == ZAYA_SIZE_OPT_MUON) {
        p->optimizer_ns_s = ns_time(hw, &pc, shard);
        p->optimizer_s += p->optimizer_ns_s;
    }

    /* context-parallel exchanges: per attention layer an all-gather of every chunk's K/V (forward, and
     * again in backward), a reduce-scatter of dK/dV, and the halo rows to the next rank, all f32 */
    if (cp > 1) {
        const double kv = (double)a->kv_heads * (double)a->head_dim, whole = (double)o->batch * (double)o->seq;
        const double buf = whole * 2 * kv * 4; /* the gathered K|V of a layer */
        p->cp_gather_bytes = 2 * buf * (cp - 1) / cp;
        p->cp_scatter_bytes = buf * (cp - 1) / cp;
        p->cp_halo_bytes = (o->cp_contiguous ? 2 : 4) * (double)o->batch * /* zig-zag: two pieces */ ((double)halo * (double)(a->heads + a->kv_heads) * (double)a->head_dim +
                                                   (a->attn == ZAYA_SIZE_ATTN_CCA ? kv / 2 : 0)) * 4;
        p->cp_mha_gather_bytes = 2 * whole * 2 * (double)a->hidden * 4 * (cp - 1) / cp;
        const double ag = zaya_size_coll_time(hw, ZAYA_SIZE_COLL_ALL_GATHER, cp, buf);
        const double rs = zaya_size_coll_time(hw, ZAYA_SIZE_COLL_REDUCE_SCATTER, cp, buf);
        if (ag < 0 || rs < 0)
            return zaya_error_set(ZAYA_EUNSUPPORTED,
                                  "profile '%s' has no collective measurements for CP %d; run `zaya bench all` on "
                                  "%d ranks or use a built-in GPU profile", hw->name, cp, cp);
        p->cp_comm_s = (2 * ag + rs) * (double)a->layers;
    }

    /* data-parallel communication: gradients over the whole world */
    if (world > 1) {
        double gb = P * (o->grad_comm_bytes > 0 ? o->grad_comm_bytes : 4), wb = P * 2;
        double t;
        if (o->zero_stage == 0) t = zaya_size_coll_time(hw, ZAYA_SIZE_COLL_ALLREDUCE, world, gb);
        else {
            double rs = zaya_size_coll_time(hw, ZAYA_SIZE_COLL_REDUCE_SCATTER, world, gb);
            double ag = zaya_size_coll_time(hw, ZAYA_SIZE_COLL_ALL_GATHER, world, wb);
            if (rs < 0 || ag < 0) t = -1;
            else t = rs + ag * (o->zero_stage >= 3 ? 3 : 1); /* ZeRO-3 gathers weights for fwd and bwd too */
        }
        if (t < 0)
            return zaya_error_set(ZAYA_EUNSUPPORTED,
                                  "profile '%s' has no collective measurements for %d ranks; run `zaya bench all` on "
                                  "%d ranks or use a built-in GPU profile", hw->name, world, world);
        p->comm_s = t;
        double bwd = (p->gemm_s + p->attn_s + p->memop_s) * 2.0 / 3.0;
        double hidden = o->overlap * t;
        if (hidden > bwd) hidden = bwd;
        p->comm_exposed_s = t - hidden;
    }
    p->step_s = p->gemm_s + p->attn_s + p->memop_s + p->optimizer_s + p->comm_exposed_s + p->cp_comm_s;
    p->tokens_per_s_rank = T / p->step_s;
    p->tokens_per_s_global = p->tokens_per_s_rank * world;
    p->model_flops = f.train * T;
    p->mfu = p->model_flops / (p->step_s * peak_of(hw));
    return ZAYA_OK;
}

void zaya_size_predict_infer(const zaya_size_arch *a, const zaya_size_hw *hw, int64_t batch, int64_t context, zaya_size_infer_pred *p) {
    zaya_size_predict_infer_weights(a, hw, batch, context, NULL, p);
}

void zaya_size_predict_infer_weights(const zaya_size_arch *a, const zaya_size_hw *hw, int64_t batch, int64_t context,
                                     const zaya_size_weights *w, zaya_size_infer_pred *p) {
    memset(p, 0, sizeof *p);
    p->batch = batch;
    p->context = context;
    double elt = hw->act_bf16 ? 2 : 4;
    zaya_size_params pc;
    zaya_size_count_params(a, &pc);
    zaya_size_flops f;
    zaya_size_count_flops(a, context, &f);

    /* Prefill: forward GEMMs for batch x context tokens + attention + memory-bound ops. */
    zaya_size_run run = {batch, context, 1};
    zaya_size_gemm_shape g[ZAYA_SIZE_MAX_GEMMS];
    int n = zaya_size_list_gemms(a, &run, g, ZAYA_SIZE_MAX_GEMMS);
    double T = (double)batch * (double)context;
    for (int i = 0; i < n; i++) {
        if (strcmp(g[i].pass, "fwd")) continue;
        zaya_size_gemm_est e;
        /* only the last position's logits are needed */
        int64_t m = !strcmp(g[i].name, "lm_head") ? batch : g[i].m;
        zaya_size_gemm_estimate_grouped(hw, g[i].groups, m, g[i].n, g[i].k, &e);
        p->prefill_s += e.time_s * (double)g[i].count;
    }
    double vals, kernels;
    memops_per_layer(a, &vals, &kernels);
    p->prefill_s += f.attn_fwd * T / attn_rate(hw, context, a->head_dim);
    p->prefill_s += vals * elt * T * (double)a->layers / bw_of(hw) + (hw->is_gpu ? kernels * a->layers * hw->launch_s : 0);

    /* Decode: expected distinct experts a batch touches per MoE layer: E (1 - (1 - k/E)^b). */
    /* bytes per tensor in the stored format (the compute dtype, or w's with the rest bf16) */
    const int quant = w && w->format != ZAYA_SIZE_WF_DEFAULT;
    const double kept = quant ? 2 : elt;
    double expert_each = 0, other = 0;
    for (int i = 0; i < pc.nrows; i++) {
        const zaya_size_param_row *r = &pc.rows[i];
        const double each = quant ? zaya_size_weights_row_bytes(w, a, r, kept) : (double)r->each * elt;
        if (!strncmp(r->name, "experts.", 8)) expert_each += each;
        else if (r->embedding) {
            /* the head is read in full; the input table only for the batch's rows (negligible) */
            if (r->matmul || a->tied_embeddings) other += (double)(a->vocab * a->hidden) * kept;
        }
        else other += each * (double)r->instances;
    }
    double touched = 0;
    if (a->experts > 0) {
        double E = (double)a->experts, k = (double)a->top_k;
        touched = E * (1 - pow(1 - k / E, (double)batch)) * (double)a->n_moe_layers;
    }
    p->decode_weight_bytes = other + expert_each * touched;
    p->decode_kv_bytes = zaya_size_kv_bytes(a, context, (int)elt) * (double)batch +
                         zaya_size_kv_state_bytes(a, (int)elt) * (double)batch;
    double t_bytes = (p->decode_weight_bytes + p->decode_kv_bytes) / bw_of(hw);
    double t_flops = f.fwd * (double)batch / peak_of(hw);
    /* routing: router GEMMs + top-k + dispatch are a dependent chain of small kernels per MoE layer */
    p->decode_route_s = a->experts > 0 ? (double)a->n_moe_layers * 4 * (hw->is_gpu ? hw->launch_s : 2e-6) : 0;
    double launches = hw->is_gpu ? (double)a->layers * (kernels + 8) * hw->launch_s : 0;
    p->decode_bytes_s = t_bytes;
    p->decode_flops_s = t_flops;
    p->decode_launch_s = launches;
    p->decode_s = (t_bytes > t_flops ? t_bytes : t_flops) + p->decode_route_s + launches;
    p->decode_tokens_per_s = (double)batch / p->decode_s;
}
