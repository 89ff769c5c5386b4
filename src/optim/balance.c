/* Bias balancing of the expert router and load statistics (see zaya/balance.h). */
#include <math.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/balance.h"
#include "zaya/json.h"

void zaya_balancer_config_default(zaya_balancer_config *c) {
    c->lr = 0.25;
    c->rule = ZAYA_BALANCE_ADAM;
    c->units = ZAYA_BALANCE_SPREAD;
    c->beta1 = 0.5;
    c->beta2 = 0.999;
    c->eps = 1e-8;
    c->drift = 1.0;
    c->refine_tol = 2e-3;
}

void zaya_load_stats_compute(const int64_t *counts, int E, zaya_load_stats *s) {
    memset(s, 0, sizeof *s);
    int64_t routed = 0;
    for (int e = 0; e < E; e++) routed += counts[e];
    s->tokens = routed + counts[E];
    s->skip_share = s->tokens ? (double)counts[E] / (double)s->tokens : 0.0;
    if (routed == 0 || E < 1) return;
    double mx = 0, mn = 1, h = 0, mean = (double)routed / E, var = 0;
    for (int e = 0; e < E; e++) {
        double p = (double)counts[e] / (double)routed;
        mx = fmax(mx, p);
        mn = fmin(mn, p);
        if (p > 0) h -= p * log(p);
        var += ((double)counts[e] - mean) * ((double)counts[e] - mean);
    }
    s->max_share = mx;
    s->min_share = mn;
    s->entropy = E > 1 ? h / log((double)E) : 1.0;
    s->cv = sqrt(var / E) / mean;
    s->max_vio = mx * E - 1.0;
}

zaya_status zaya_balance_rule_parse(const char *s, zaya_balance_rule *out) {
    if (!strcmp(s, "adam")) *out = ZAYA_BALANCE_ADAM;
    else if (!strcmp(s, "sign")) *out = ZAYA_BALANCE_SIGN;
    else return zaya_error_set(ZAYA_EINVAL, "unknown balancing rule '%s' (adam, sign)", s);
    return ZAYA_OK;
}

zaya_status zaya_balance_mode_parse(const char *s, zaya_balance_mode *out) {
    if (!strcmp(s, "forward")) *out = ZAYA_BALANCE_FORWARD;
    else if (!strcmp(s, "step")) *out = ZAYA_BALANCE_STEP;
    else return zaya_error_set(ZAYA_EINVAL, "unknown balancing mode '%s' (forward, step)", s);
    return ZAYA_OK;
}

const char *zaya_balance_mode_name(zaya_balance_mode m) { return m == ZAYA_BALANCE_STEP ? "step" : "forward"; }

zaya_status zaya_balance_units_parse(const char *s, zaya_balance_units *out) {
    if (!strcmp(s, "spread")) *out = ZAYA_BALANCE_SPREAD;
    else if (!strcmp(s, "absolute")) *out = ZAYA_BALANCE_ABSOLUTE;
    else return zaya_error_set(ZAYA_EINVAL, "unknown balancing step units '%s' (spread, absolute)", s);
    return ZAYA_OK;
}

const char *zaya_balance_rule_name(zaya_balance_rule r) { return r == ZAYA_BALANCE_SIGN ? "sign" : "adam"; }
const char *zaya_balance_units_name(zaya_balance_units u) { return u == ZAYA_BALANCE_ABSOLUTE ? "absolute" : "spread"; }

zaya_status zaya_balancer_init(zaya_balancer *b, const zaya_tensor_info *t, int n, const zaya_balancer_config *cfg) {
    memset(b, 0, sizeof *b);
    if (!(cfg->lr >= 0) || !(cfg->beta1 >= 0 && cfg->beta1 < 1) || !(cfg->beta2 >= 0 && cfg->beta2 < 1) ||
        !(cfg->eps > 0) || !(cfg->drift >= 0 && cfg->drift <= 2) || !(cfg->refine_tol >= 0 && cfg->refine_tol < 1) || (cfg->rule != ZAYA_BALANCE_ADAM && cfg->rule != ZAYA_BALANCE_SIGN) ||
        (cfg->units != ZAYA_BALANCE_SPREAD && cfg->units != ZAYA_BALANCE_ABSOLUTE))
        return zaya_error_set(ZAYA_EINVAL, "balancer: lr %g must be >= 0, betas (%g, %g) in [0, 1), eps %g > 0, drift %g in [0, 2], refine_tol %g in [0, 1), a known rule and units",
                              cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->drift, cfg->refine_tol);
    b->cfg = *cfg;
    int layers = 0, E = -1;
    for (int i = 0; i < n; i++) {
        if (t[i].opt != ZAYA_OPT_NONE || !strstr(t[i].name, "balancing_biases")) continue;
        if (t[i].layer != layers)
            return zaya_error_set(ZAYA_EINVAL, "balancer: '%s' belongs to layer %d, expected layer %d", t[i].name,
                                  t[i].layer, layers);
        if (E >= 0 && t[i].numel != E + 1)
            return zaya_error_set(ZAYA_EINVAL, "balancer: '%s' has %lld entries, expected %d", t[i].name,
                                  (long long)t[i].numel, E + 1);
        if (t[i].numel < 2)
            return zaya_error_set(ZAYA_EINVAL, "balancer: '%s' has %lld entries (needs experts + skip)", t[i].name,
                                  (long long)t[i].numel);
        E = (int)t[i].numel - 1;
        layers++;
    }
    if (layers == 0) return zaya_error_set(ZAYA_EINVAL, "balancer: no balancing_biases buffer in the tensor table");
    b->layers = layers;
    b->num_experts = E;
    b->bias_offset = calloc((size_t)layers, sizeof *b->bias_offset);
    b->stats = calloc((size_t)layers, sizeof *b->stats);
    b->m = zaya_calloc((size_t)layers * (size_t)E, sizeof(float));
    b->v = zaya_calloc((size_t)layers * (size_t)E, sizeof(float));
    b->score_mean = zaya_calloc((size_t)layers * (size_t)E, sizeof(double));
    b->mean_f32 = zaya_calloc((size_t)layers * (size_t)E * 2, sizeof(float));
    if (!b->bias_offset || !b->stats || !b->m || !b->v || !b->score_mean || !b->mean_f32) {
        zaya_balancer_free(b);
        return zaya_error_set(ZAYA_ENOMEM, "balancer: cannot allocate state for %d layers", layers);
    }
    for (int i = 0, l = 0; i < n; i++)
        if (t[i].opt == ZAYA_OPT_NONE && strstr(t[i].name, "balancing_biases")) b->bias_offset[l++] = t[i].offset;
    return ZAYA_OK;
}

void zaya_balancer_free(zaya_balancer *b) {
    free(b->bias_offset);
    free(b->stats);
    zaya_free(b->m);
    zaya_free(b->v);
    zaya_free(b->score_mean);
    zaya_free(b->mean_f32);
    memset(b, 0, sizeof *b);
}

void zaya_balancer_spread_units(const double *spread_sums, const int64_t *counts, int layers, int num_experts,
                                double *sigma) {
    for (int l = 0; l < layers; l++) {
        int64_t tokens = 0;
        for (int e = 0; e <= num_experts; e++) tokens += counts[(int64_t)l * (num_experts + 1) + e];
        sigma[l] = tokens > 0 ? sqrt(spread_sums[l] / ((double)tokens * num_experts)) : 0.0;
    }
}

void zaya_balancer_update_layer(zaya_balancer *b, int l, const int64_t *cnt, double sigma, float *params, int64_t t) {
    const int E = b->num_experts;
    const zaya_balancer_config *c = &b->cfg;
    zaya_load_stats_compute(cnt, E, &b->stats[l]);
    const int64_t tokens = b->stats[l].tokens;
    if (tokens == 0) return;
    const double bc1 = 1.0 - pow(c->beta1, (double)t), bc2 = 1.0 - pow(c->beta2, (double)t);
    const double step = c->units == ZAYA_BALANCE_SPREAD ? c->lr * sigma : c->lr;
    float *bias = params + b->bias_offset[l], *m = b->m + (int64_t)l * E, *v = b->v + (int64_t)l * E;
    for (int e = 0; e < E; e++) { /* bias[E], the skip class, stays fixed */
        double g = (double)cnt[e] / (double)tokens - 1.0 / E;
        double mj = c->beta1 * m[e] + (1 - c->beta1) * g;
        double vj = c->beta2 * v[e] + (1 - c->beta2) * g * g;
        m[e] = (float)mj;
        v[e] = (float)vj;
        double d = c->rule == ZAYA_BALANCE_SIGN ? (g > 0) - (g < 0) : (mj / bc1) / (sqrt(vj / bc2) + c->eps);
        bias[e] = (float)(bias[e] - step * d);
    }
}

void zaya_balancer_refine_begin(zaya_balancer *b, double step0) {
    zaya_balance_refine *r = &b->refine;
    memset(r, 0, sizeof *r);
    r->expert = -1;
    r->step0 = step0 > 0 ? step0 : 1e-6;
}

/* Bounds of expert e's bias: at max_{k != e} b_k - 1 it wins no token (p <= 1), at + 1 every token
 * (its score then beats every other expert's and the skip class's, whose bias stays below). */
static double refine_bound(const float *bias, int E, int e, int dir) {
    double mx = -INFINITY;
    for (int k = 0; k < E; k++)
        if (k != e && bias[k] > mx) mx = bias[k];
    return dir > 0 ? mx + 1.0 : mx - 1.0;
}

int zaya_balancer_refine_layer(zaya_balancer *b, int l, const int64_t *cnt, float *params) {
    enum { MAX_SWEEPS = 8 };
    const int E = b->num_experts;
    zaya_balance_refine *r = &b->refine;
    int64_t routed = 0;
    for (int e = 0; e < E; e++) routed += cnt[e];
    if (routed == 0 || E < 2) return 1;
    const double target = (double)routed / E, tol = fmax(0.5, b->cfg.refine_tol * target);
    float *bias = params + b->bias_offset[l];
    if (r->expert >= 0) { /* the counts of the value just tried */
        const int e = r->expert;
        const double x = bias[e], f = (double)cnt[e] - target;
        if (fabs(f) > tol) {
            if (f > 0) r->hi = x, r->f_hi = f;
            else r->lo = x, r->f_lo = f;
            if (!r->bracketed && (f > 0) == (r->dir < 0)) { /* still on the starting side: step further */
                r->step *= 2.0;
                const double bound = refine_bound(bias, E, e, r->dir);
                double nx = x + r->dir * r->step;
                if ((r->dir > 0 && nx >= bound) || (r->dir < 0 && nx <= bound)) nx = bound;
                if ((float)nx != (float)x) {
                    bias[e] = (float)nx;
                    return 0;
                }
                r->expert = -1; /* at the bound already: nothing further this way */
            } else {
                r->bracketed = 1;
                const double mid = 0.5 * (r->lo + r->hi);
                if ((float)mid != (float)r->lo && (float)mid != (float)r->hi) {
                    bias[e] = (float)mid;
                    return 0;
                }
                /* adjacent floats enclose the balance point: keep the closer side */
                bias[e] = (float)(fabs(r->f_lo) <= fabs(r->f_hi) ? r->lo : r->hi);
                r->expert = -1;
                return 0; /* recount at that value before the next expert */
            }
        }
        r->expert = -1;
    }
    /* between experts: the counts are those of the current biases */
    for (;;) {
        for (int e = r->next; e < E; e++) {
            const double f = (double)cnt[e] - target;
            if (fabs(f) <= tol) continue;
            r->expert = e;
            r->next = e + 1;
            r->bracketed = 0;
            r->dir = f > 0 ? -1 : 1;
            r->step = r->step0;
            if (f > 0) r->hi = bias[e], r->f_hi = f;
            else r->lo = bias[e], r->f_lo = f;
            const double bound = refine_bound(bias, E, e, r->dir);
            double nx = (double)bias[e] + r->dir * r->step;
            if ((r->dir > 0 && nx >= bound) || (r->dir < 0 && nx <= bound)) nx = bound;
            if ((float)nx == bias[e]) continue; /* at its bound already: leave it */
            bias[e] = (float)nx;
            return 0;
        }
        int off = 0;
        for (int e = 0; e < E; e++) off |= fabs((double)cnt[e] - target) > tol;
        if (!off || ++r->sweep >= MAX_SWEEPS) return 1;
        r->next = 0;
    }
}

void zaya_balancer_update(zaya_balancer *b, const int64_t *counts, const double *sigma, float *params) {
    const int64_t t = ++b->steps;
    for (int l = 0; l < b->layers; l++)
        zaya_balancer_update_layer(b, l, counts + (int64_t)l * (b->num_experts + 1), sigma ? sigma[l] : 0.0, params, t);
}

void zaya_balancer_follow_drift_layer(zaya_balancer *b, int l, const double *psum, double tokens, float *params) {
    const int E = b->num_experts;
    if (!(b->cfg.drift > 0) || !(tokens > 0)) return;
    float *bias = params + b->bias_offset[l];
    double *mean = b->score_mean + (int64_t)l * E;
    for (int e = 0; e < E; e++) {
        double now = psum[e] / tokens;
        if (b->drift_ready) bias[e] = (float)((double)bias[e] - b->cfg.drift * (now - mean[e]));
        mean[e] = now;
    }
}

void zaya_balancer_follow_drift(zaya_balancer *b, const double *psums, const int64_t *counts, float *params) {
    const int E = b->num_experts;
    if (!(b->cfg.drift > 0)) return;
    for (int l = 0; l < b->layers; l++) {
        int64_t tokens = 0;
        for (int e = 0; e <= E; e++) tokens += counts[(int64_t)l * (E + 1) + e];
        zaya_balancer_follow_drift_layer(b, l, psums + (int64_t)l * E, (double)tokens, params);
    }
    b->drift_ready = 1;
}

zaya_status zaya_balancer_state_export(const zaya_balancer *b, zaya_state_set *set, int copy, cJSON **scalars) {
    int64_t n = (int64_t)b->layers * b->num_experts;
    ZAYA_TRY(zaya_state_set_add(set, "balancer.exp_avg", 0, n, n, b->m, copy));
    ZAYA_TRY(zaya_state_set_add(set, "balancer.exp_avg_sq", 0, n, n, b->v, copy));
    /* the drift reference as float pairs (hi, lo) so it survives the f32 state arrays bit-exactly */
    for (int64_t i = 0; i < n; i++) {
        b->mean_f32[2 * i] = (float)b->score_mean[i];
        b->mean_f32[2 * i + 1] = (float)(b->score_mean[i] - (double)b->mean_f32[2 * i]);
    }
    ZAYA_TRY(zaya_state_set_add(set, "balancer.score_mean", 0, 2 * n, 2 * n, b->mean_f32, copy));
    cJSON *j = cJSON_CreateObject();
    if (!j) return zaya_error_set(ZAYA_ENOMEM, "balancer state: cannot build JSON");
    cJSON_AddNumberToObject(j, "steps", (double)b->steps);
    cJSON_AddNumberToObject(j, "layers", b->layers);
    cJSON_AddNumberToObject(j, "num_experts", b->num_experts);
    cJSON_AddNumberToObject(j, "lr", b->cfg.lr);
    cJSON_AddNumberToObject(j, "beta1", b->cfg.beta1);
    cJSON_AddNumberToObject(j, "beta2", b->cfg.beta2);
    cJSON_AddNumberToObject(j, "eps", b->cfg.eps);
    cJSON_AddStringToObject(j, "rule", zaya_balance_rule_name(b->cfg.rule));
    cJSON_AddStringToObject(j, "units", zaya_balance_units_name(b->cfg.units));
    cJSON_AddNumberToObject(j, "drift", b->cfg.drift);
    cJSON_AddBoolToObject(j, "drift_ready", b->drift_ready);
    *scalars = j;
    return ZAYA_OK;
}

zaya_status zaya_balancer_state_import(zaya_balancer *b, const zaya_state_set *set, const cJSON *scalars) {
    int64_t steps = 0;
    int layers = 0, E = 0;
    zaya_status s = zaya_json_get_i64(scalars, "steps", &steps, 1);
    if (s == ZAYA_OK) s = zaya_json_get_int(scalars, "layers", &layers, 1);
    if (s == ZAYA_OK) s = zaya_json_get_int(scalars, "num_experts", &E, 1);
    if (s != ZAYA_OK) return zaya_error_context(s, "balancer state");
    if (layers != b->layers || E != b->num_experts)
        return zaya_error_set(ZAYA_EFORMAT, "balancer state: %d layers x %d experts stored, model has %d x %d", layers,
                              E, b->layers, b->num_experts);
    if (steps < 0) return zaya_error_set(ZAYA_EFORMAT, "balancer state: negative step count %lld", (long long)steps);
    int64_t n = (int64_t)layers * E;
    s = zaya_state_set_read(set, "balancer.exp_avg", 0, n, n, b->m);
    if (s == ZAYA_OK) s = zaya_state_set_read(set, "balancer.exp_avg_sq", 0, n, n, b->v);
    if (s != ZAYA_OK) return zaya_error_context(s, "balancer state");
    const cJSON *ready = cJSON_GetObjectItemCaseSensitive(scalars, "drift_ready");
    b->drift_ready = 0;
    if (cJSON_IsTrue(ready) && zaya_state_set_find(set, "balancer.score_mean", 0, 2 * n)) {
        ZAYA_TRY(zaya_state_set_read(set, "balancer.score_mean", 0, 2 * n, 2 * n, b->mean_f32));
        for (int64_t i = 0; i < n; i++) b->score_mean[i] = (double)b->mean_f32[2 * i] + (double)b->mean_f32[2 * i + 1];
        b->drift_ready = 1;
    }
    b->steps = steps;
    return ZAYA_OK;
}
