/* Expert load balancing by bias control (ZAYA1's PID-like scheme) and per-layer load statistics.
 *
 * After each step, per MoE layer l and expert e: p_e = tokens routed to e / all tokens of the global
 * batch (skip-class tokens included in the denominator), g_e = p_e - 1/E, and the balancing bias
 * b_e gets an Adam update b_e <- b_e - lr * mhat / (sqrt(vhat) + eps) with bias-corrected moments of
 * g_e (no weight decay). Over-used experts get lower biases. Adam's momentum acts as the integral
 * term and its normalisation as gain control, so the controller settles quickly whatever the scale of
 * the imbalance.
 *
 * The skip class bias is never updated: it stays at its init, -1.0. Released ZAYA1 checkpoints keep it
 * exactly -1, which means it was frozen; counting skip tokens in the denominator lets the expert
 * biases drift up while the skip class is used, so skip use shrinks unless the router's own scores
 * favour it strongly (matching the checkpoints, where some expert bias is > 0 in every layer).
 *
 * Routing counts come from zaya_model.route_counts (layer-major, E+1 classes per layer); under MPI the
 * trainer sums them over ranks first, so every rank applies the identical update to its replica. */
#ifndef ZAYA_BALANCE_H
#define ZAYA_BALANCE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "zaya/model.h"
#include "zaya/state.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_balancer_config {
    double lr;           /* 1e-2 */
    double beta1, beta2; /* 0.9, 0.999 */
    double eps;          /* 1e-8 */
} zaya_balancer_config;

void zaya_balancer_config_default(zaya_balancer_config *c);

/* Load of one layer over its experts (skip tokens excluded from the shares, reported separately). */
typedef struct zaya_load_stats {
    double max_share, min_share; /* of expert-routed tokens; uniform = 1/E */
    double entropy;              /* of the expert shares, normalised by log(E): 1 = uniform */
    double cv;                   /* coefficient of variation (std / mean) of per-expert counts */
    double skip_share;           /* of all tokens */
    int64_t tokens;              /* all tokens of the layer, skip included */
} zaya_load_stats;

/* counts: E + 1 classes (E experts, then skip). */
void zaya_load_stats_compute(const int64_t *counts, int num_experts, zaya_load_stats *out);

typedef struct zaya_balancer {
    zaya_balancer_config cfg;
    int layers, num_experts;
    int64_t *bias_offset; /* [layers]: float offset of each layer's balancing biases in the parameter block */
    float *m, *v;         /* [layers * E] Adam moments */
    int64_t steps;
    zaya_load_stats *stats; /* [layers]: of the counts given to the last update */
} zaya_balancer;

/* Finds the balancing-bias buffers in the tensor table (one per layer, E + 1 entries). */
zaya_status zaya_balancer_init(zaya_balancer *b, const zaya_tensor_info *tensors, int ntensors,
                               const zaya_balancer_config *cfg);
void zaya_balancer_free(zaya_balancer *b);
/* One update of the biases inside `params` from counts[layers * (E + 1)] (global batch). Layers that
 * routed no token are left unchanged (their moments too). Fills b->stats. */
void zaya_balancer_update(zaya_balancer *b, const int64_t *counts, float *params);

/* Checkpoint hooks: "balancer.exp_avg" / "balancer.exp_avg_sq" ([layers * E]) and {"steps": n}. */
zaya_status zaya_balancer_state_export(const zaya_balancer *b, zaya_state_set *set, int copy, cJSON **scalars);
zaya_status zaya_balancer_state_import(zaya_balancer *b, const zaya_state_set *set, const cJSON *scalars);

#ifdef __cplusplus
}
#endif

#endif
