/* Expert load balancing by bias control (ZAYA1's PID-like scheme) and per-layer load statistics.
 *
 * After each step, per MoE layer l and expert e: p_e = tokens routed to e / all tokens of the global
 * batch (skip-class tokens included in the denominator) and g_e = p_e - 1/E. The default rule
 * (ZAYA_BALANCE_ADAM, ZAYA1's) gives b_e an Adam update b_e <- b_e - step * mhat / (sqrt(vhat) + eps)
 * with bias-corrected moments of g_e (no weight decay): Adam's momentum acts as the integral term and
 * its normalisation as gain control. ZAYA_BALANCE_SIGN is DeepSeek-V3's loss-free rule,
 * b_e <- b_e - step * sign(g_e), offered for comparison.
 *
 * The step is measured in the router's own units (ZAYA_BALANCE_SPREAD, default): step = lr * sigma_l,
 * sigma_l^2 = mean over the experts of the variance over the batch's tokens of their probability
 * (zaya_model.route_spread). A bias step of sigma moves a comparable fraction of tokens whether the
 * scores differ by 1e-4 between tokens (a freshly initialised router) or by 0.2 (a trained one); the
 * part of the scores common to all tokens, which the biases exist to cancel, is left out.
 * ZAYA_BALANCE_ABSOLUTE uses step = lr in probability units, which cannot serve both: see
 * docs/model.md, "Why routers collapse".
 *
 * Where the trainer runs it (zaya_train_opts.balance_mode):
 * - ZAYA_BALANCE_FORWARD (default): inside every training forward, in each MoE block between the
 *   router's scores and the selection (the model's route hook): drift compensation against the
 *   previous batch (zaya_balancer_follow_drift_layer), the controller's update
 *   (zaya_balancer_update_layer), then the refinement (zaya_balancer_refine_layer, at most
 *   balance_iters - 1 recounts), each step from the selection the current biases make of this
 *   batch's scores (zaya_model_route_count_layer, summed over the ranks); the block then routes with
 *   the result. The batch is balanced on its own scores, with no step of lag, and whatever the router
 *   learnt since the last batch (phase changes included) is absorbed before the experts are chosen.
 * - ZAYA_BALANCE_STEP: after the step, balance_iters updates on the step's own scores recounted with
 *   the new biases in between (zaya_model_route_recount), then drift compensation: the biases
 *   balance the batch they were measured on, for the next one.
 *
 * Drift compensation (the derivative term; gain cfg.drift, default 1): the router's scores move
 * between steps as it trains, and the part of that move shared by all tokens, the change of the
 * batch-mean score of each expert, shifts the selection wholesale. After the step's updates,
 * zaya_balancer_follow_drift moves b_e by -(mean score of e now - at the previous step): selection
 * is argmax(p + b), so a shift of every token's p_e by delta is undone exactly by b_e -= delta, and
 * the biases enter the next step already following the router's trend.
 *
 * The skip class bias is never updated: it stays at its init, -1.0. Released ZAYA1 checkpoints keep it
 * exactly -1, which means it was frozen; counting skip tokens in the denominator lets the expert
 * biases drift up while the skip class is used, so skip use shrinks unless the router's own scores
 * favour it strongly (matching the checkpoints, where some expert bias is > 0 in every layer).
 *
 * Routing counts and spreads come from zaya_model.route_counts / route_spread; under MPI the trainer
 * sums them over ranks first, so every rank applies the identical update to its replica. */
#ifndef ZAYA_BALANCE_H
#define ZAYA_BALANCE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "zaya/model.h"
#include "zaya/state.h"
#include "zaya/status.h"

typedef enum zaya_balance_rule { ZAYA_BALANCE_ADAM = 0, ZAYA_BALANCE_SIGN = 1 } zaya_balance_rule;
typedef enum zaya_balance_units { ZAYA_BALANCE_SPREAD = 0, ZAYA_BALANCE_ABSOLUTE = 1 } zaya_balance_units;
/* When the trainer runs the controller: inside every training forward, per MoE block between the
 * router's scores and the selection, on that batch's own scores (default), or after the step. */
typedef enum zaya_balance_mode { ZAYA_BALANCE_FORWARD = 0, ZAYA_BALANCE_STEP = 1 } zaya_balance_mode;

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_balancer_config {
    double lr;           /* 0.5 (spread units) */
    zaya_balance_rule rule;
    zaya_balance_units units;
    double beta1, beta2; /* 0.9, 0.999 */
    double eps;          /* 1e-8 */
    double drift;        /* gain of the drift compensation, 1 = full, 0 = off */
    double refine_tol;   /* the refinement stops when every expert's load is within (1 +- tol) of the mean */
} zaya_balancer_config;

void zaya_balancer_config_default(zaya_balancer_config *c);

/* Load of one layer over its experts (skip tokens excluded from the shares, reported separately). */
typedef struct zaya_load_stats {
    double max_share, min_share; /* of expert-routed tokens; uniform = 1/E */
    double entropy;              /* of the expert shares, normalised by log(E): 1 = uniform */
    double max_vio;              /* MaxVio = max_e(load_e) / mean_e(load_e) - 1: 0 = uniform */
    double cv;                   /* coefficient of variation (std / mean) of per-expert counts */
    double skip_share;           /* of all tokens */
    int64_t tokens;              /* all tokens of the layer, skip included */
} zaya_load_stats;

/* counts: E + 1 classes (E experts, then skip). */
void zaya_load_stats_compute(const int64_t *counts, int num_experts, zaya_load_stats *out);

/* State of one refinement (zaya_balancer_refine_layer): the expert whose bias is being searched, its
 * bracket and the sweep over the experts. Not state of the run. */
typedef struct zaya_balance_refine {
    int expert;        /* -1: between two experts */
    int next;          /* next expert of this sweep to look at */
    int sweep;
    int bracketed;     /* lo and hi enclose the balance point */
    int dir;           /* +1: the bias must rise (too few tokens), -1: fall */
    double lo, hi;     /* bias bracket (f_lo < 0 < f_hi) */
    double f_lo, f_hi; /* load errors (tokens) at lo and hi */
    double step, step0;
} zaya_balance_refine;

typedef struct zaya_balancer {
    zaya_balancer_config cfg;
    int layers, num_experts;
    int64_t *bias_offset; /* [layers]: float offset of each layer's balancing biases in the parameter block */
    float *m, *v;         /* [layers * E] Adam moments */
    int64_t steps;
    double *score_mean;   /* [layers * E]: batch-mean expert scores of the previous update */
    float *mean_f32;      /* [layers * E * 2]: score_mean as (hi, lo) floats for checkpoints */
    int drift_ready;      /* score_mean holds a previous batch */
    zaya_load_stats *stats; /* [layers]: of the counts given to the last update */
    zaya_balance_refine refine; /* the refinement in progress (one layer and batch at a time) */
} zaya_balancer;

/* Finds the balancing-bias buffers in the tensor table (one per layer, E + 1 entries). */
zaya_status zaya_balancer_init(zaya_balancer *b, const zaya_tensor_info *tensors, int ntensors,
                               const zaya_balancer_config *cfg);
void zaya_balancer_free(zaya_balancer *b);
/* Parses "adam" | "sign" and "spread" | "absolute" (error names the value). */
zaya_status zaya_balance_rule_parse(const char *s, zaya_balance_rule *out);
zaya_status zaya_balance_units_parse(const char *s, zaya_balance_units *out);
zaya_status zaya_balance_mode_parse(const char *s, zaya_balance_mode *out); /* "forward" | "step" */
const char *zaya_balance_mode_name(zaya_balance_mode m);
const char *zaya_balance_rule_name(zaya_balance_rule r);
const char *zaya_balance_units_name(zaya_balance_units u);
/* The step unit sigma[l] = sqrt(spread_sums[l] / (tokens_l E)) from zaya_model.route_spread and
 * route_counts summed over the same tokens (the global batch). */
void zaya_balancer_spread_units(const double *spread_sums, const int64_t *counts, int layers, int num_experts,
                                double *sigma);
/* One update of the biases inside `params` from counts[layers * (E + 1)] and the step units
 * sigma[layers] (zaya_balancer_spread_units; may be NULL only in absolute units). Layers that routed
 * no token are left unchanged (their moments too). Fills b->stats. */
void zaya_balancer_update(zaya_balancer *b, const int64_t *counts, const double *sigma, float *params);
/* One update of layer l alone from its counts[E + 1] and step unit sigma, as the t-th update of its
 * moments (Adam's bias correction; b->steps is left to the caller). Fills b->stats[l]. */
void zaya_balancer_update_layer(zaya_balancer *b, int layer, const int64_t *counts, double sigma, float *params, int64_t t);
/* Refinement on one batch (balancing in the forward, after the controller's update): a coordinate
 * search of the biases on this batch's own scores. One expert at a time, in sweeps over the experts,
 * the expert whose load is off by more than cfg.refine_tol of the mean load of the routed tokens has
 * its bias searched with the others fixed: steps of step0 doubling away from the current value until
 * the load error changes sign (bounded by max_{k != e} b_k +- 1, where the expert gets no token /
 * every token), then bisection down to the tolerance or to adjacent floats. Each expert's load is a
 * monotone step function of its own bias, so the search needs no assumption on how the scores are
 * spread: it works as well when a large cluster of tokens has near-equal scores (a saturated router:
 * their non-favourite probabilities all ~1e-3) as on smooth scores, where fixed or shrinking sign
 * steps move the whole cluster at once and oscillate (docs/model.md, "the layer-7 episode"). Stops
 * after 8 sweeps at most.
 *
 * Protocol: zaya_balancer_refine_begin, then zaya_balancer_refine_layer with the counts[E + 1] the
 * current biases give (summed over the ranks) until it returns 1 (every expert within tolerance, or
 * the sweeps exhausted; the biases are then final), recounting in between: it changes at most one bias
 * per call. Deterministic (integer counts, fixed arithmetic). */
void zaya_balancer_refine_begin(zaya_balancer *b, double step0);
int zaya_balancer_refine_layer(zaya_balancer *b, int layer, const int64_t *counts, float *params);
/* Drift compensation, after the step's updates: psums[layers * E] (zaya_model.route_psum summed over
 * the global batch) gives each expert's batch-mean score; its change since the previous call is
 * subtracted from the bias (times cfg.drift). counts gives the token totals. */
void zaya_balancer_follow_drift(zaya_balancer *b, const double *psums, const int64_t *counts, float *params);
/* The same for layer l alone: psum[E] summed over `tokens` tokens. The reference of every layer is in
 * use once b->drift_ready is set (the caller sets it after the first batch's layers). */
void zaya_balancer_follow_drift_layer(zaya_balancer *b, int layer, const double *psum, double tokens, float *params);

/* Checkpoint hooks: "balancer.exp_avg" / "balancer.exp_avg_sq" ([layers * E]), "balancer.score_mean"
 * ([layers * E * 2], the drift reference) and {"steps": n, "drift_ready": b, ...}. A checkpoint
 * without the drift reference restarts the compensation at the next update. */
zaya_status zaya_balancer_state_export(const zaya_balancer *b, zaya_state_set *set, int copy, cJSON **scalars);
zaya_status zaya_balancer_state_import(zaya_balancer *b, const zaya_state_set *set, const cJSON *scalars);

#ifdef __cplusplus
}
#endif

#endif
