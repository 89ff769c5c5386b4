/* Optimizer state for the units one rank owns, the combined step, and the gradient norm. */
#include <math.h>
#include <string.h>

#include "optim/internal.h"
#include "zaya/alloc.h"

void zaya_optim_config_default(zaya_optim_config *c) {
    memset(c, 0, sizeof *c);
    c->weight_decay = 0.1;
    c->adam_beta1 = 0.9;
    c->adam_beta2 = 0.95;
    c->adam_eps = 1e-8;
    c->muon_momentum = 0.95;
    c->muon_nesterov = 1;
    c->muon_ns_steps = 5;
    c->muon_lr_scale = 1.0;
    c->muon_ns_dtype = ZAYA_DTYPE_F32;
    c->muon_batch_floats = 0;
}

static zaya_status check_config(const zaya_optim_config *c) {
    if (!(c->adam_beta1 >= 0 && c->adam_beta1 < 1) || !(c->adam_beta2 >= 0 && c->adam_beta2 < 1))
        return zaya_error_set(ZAYA_EINVAL, "optimizer: AdamW betas (%g, %g) must lie in [0, 1)", c->adam_beta1,
                              c->adam_beta2);
    if (!(c->adam_eps > 0)) return zaya_error_set(ZAYA_EINVAL, "optimizer: AdamW eps %g must be > 0", c->adam_eps);
    if (!(c->weight_decay >= 0)) return zaya_error_set(ZAYA_EINVAL, "optimizer: weight decay %g < 0", c->weight_decay);
    if (!(c->muon_momentum >= 0 && c->muon_momentum < 1))
        return zaya_error_set(ZAYA_EINVAL, "optimizer: Muon momentum %g must lie in [0, 1)", c->muon_momentum);
    if (c->muon_ns_steps < 1 || c->muon_ns_steps > 20)
        return zaya_error_set(ZAYA_EINVAL, "optimizer: Newton-Schulz steps %d outside [1, 20]", c->muon_ns_steps);
    if (c->muon_ns_dtype != ZAYA_DTYPE_F32 && c->muon_ns_dtype != ZAYA_DTYPE_BF16)
        return zaya_error_set(ZAYA_EINVAL, "optimizer: Newton-Schulz dtype must be f32 or bf16");
    if (c->muon_schedule < ZAYA_MUON_SCHEDULE_AUTO || c->muon_schedule > ZAYA_MUON_SCHEDULE_THREADS)
        return zaya_error_set(ZAYA_EINVAL, "optimizer: Muon schedule %d is not auto (0), pool (1) or threads (2)",
                              c->muon_schedule);
    if (c->muon_batch_floats < 0)
        return zaya_error_set(ZAYA_EINVAL, "optimizer: Newton-Schulz batch of %lld floats must be >= 0 (0: automatic)",
                              (long long)c->muon_batch_floats);
    return ZAYA_OK;
}

static const zaya_optim_unit *g_size_units;
static int by_size(const void *a, const void *b) { /* decreasing size, then block order */
    int ia = *(const int *)a, ib = *(const int *)b;
    int64_t na = g_size_units[ia].numel, nb = g_size_units[ib].numel;
    if (na != nb) return na > nb ? -1 : 1;
    return ia - ib;
}

zaya_status zaya_optim_init(zaya_optim *o, const zaya_optim_plan *plan, const zaya_optim_config *cfg, int rank) {
    memset(o, 0, sizeof *o);
    ZAYA_TRY(check_config(cfg));
    if (rank < 0 || rank >= plan->world_size)
        return zaya_error_set(ZAYA_EINVAL, "optimizer: rank %d outside world of %d", rank, plan->world_size);
    o->cfg = *cfg;
    o->rank = rank;
    zaya_optim_plan *p = &o->plan;
    *p = *plan;
    const int n = plan->nunits, w = plan->world_size;
    p->units = malloc(sizeof *p->units * (size_t)(n > 0 ? n : 1));
    p->rank_cost = malloc(sizeof *p->rank_cost * (size_t)w);
    p->rank_elems = malloc(sizeof *p->rank_elems * (size_t)w);
    p->rank_units = malloc(sizeof *p->rank_units * (size_t)w);
    o->exp_avg = calloc((size_t)(n > 0 ? n : 1), sizeof(float *));
    o->exp_avg_sq = calloc((size_t)(n > 0 ? n : 1), sizeof(float *));
    o->momentum = calloc((size_t)(n > 0 ? n : 1), sizeof(float *));
    if (!p->units || !p->rank_cost || !p->rank_elems || !p->rank_units || !o->exp_avg || !o->exp_avg_sq ||
        !o->momentum) {
        zaya_optim_free(o);
        return zaya_error_set(ZAYA_ENOMEM, "optimizer: cannot allocate tables for %d units", n);
    }
    memcpy(p->units, plan->units, sizeof *p->units * (size_t)n);
    memcpy(p->rank_cost, plan->rank_cost, sizeof *p->rank_cost * (size_t)w);
    memcpy(p->rank_elems, plan->rank_elems, sizeof *p->rank_elems * (size_t)w);
    memcpy(p->rank_units, plan->rank_units, sizeof *p->rank_units * (size_t)w);

    int64_t floats = 0;
    for (int i = 0; i < n; i++) {
        const zaya_optim_unit *u = &p->units[i];
        if (u->owner != rank) continue;
        floats += u->kind == ZAYA_UNIT_MUON ? u->numel : 2 * u->numel;
        if (u->kind == ZAYA_UNIT_ADAMW) o->nadamw++;
    }
    o->state_floats = floats;
    o->state_block = floats ? zaya_calloc((size_t)floats, sizeof(float)) : NULL;
    o->unit_sums = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    o->adamw_order = malloc(sizeof(int) * (size_t)(o->nadamw > 0 ? o->nadamw : 1));
    if ((floats && !o->state_block) || !o->unit_sums || !o->adamw_order) {
        zaya_optim_free(o);
        return zaya_error_set(ZAYA_ENOMEM, "optimizer: cannot allocate %lld state floats for rank %d",
                              (long long)floats, rank);
    }
    for (int i = 0, k = 0; i < n; i++)
        if (p->units[i].owner == rank && p->units[i].kind == ZAYA_UNIT_ADAMW) o->adamw_order[k++] = i;
    g_size_units = p->units;
    qsort(o->adamw_order, (size_t)o->nadamw, sizeof(int), by_size);
    g_size_units = NULL;
    zaya_status st = zaya_muon_init_scratch(o);
    if (st != ZAYA_OK) {
        zaya_optim_free(o);
        return st;
    }
    float *at = o->state_block;
    for (int i = 0; i < n; i++) {
        const zaya_optim_unit *u = &p->units[i];
        if (u->owner != rank) continue;
        if (u->kind == ZAYA_UNIT_MUON) {
            o->momentum[i] = at;
            at += u->numel;
        } else {
            o->exp_avg[i] = at;
            o->exp_avg_sq[i] = at + u->numel;
            at += 2 * u->numel;
        }
    }
    return ZAYA_OK;
}

void zaya_optim_free(zaya_optim *o) {
    free(o->plan.units);
    free(o->plan.rank_cost);
    free(o->plan.rank_elems);
    free(o->plan.rank_units);
    free(o->exp_avg);
    free(o->exp_avg_sq);
    free(o->momentum);
    zaya_free(o->state_block);
    free(o->unit_sums);
    free(o->adamw_order);
    zaya_muon_free_scratch(o);
    memset(o, 0, sizeof *o);
}

void zaya_optim_step(zaya_optim *o, float *params, const float *grads, double lr, double grad_scale) {
    zaya_optim_step_adamw(o, params, grads, lr, grad_scale);
    zaya_optim_step_muon(o, params, grads, lr, grad_scale);
}

zaya_status zaya_optim_grad_sqnorm_local(zaya_optim *o, const float *grads, double *sqnorm) {
    const int n = o->plan.nunits;
#pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < n; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        o->unit_sums[i] = u->owner == o->rank ? zaya_sumsq_f64(grads + u->offset, u->numel) : 0.0;
    }
    double total = 0;
    for (int i = 0; i < n; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner != o->rank) continue;
        total += o->unit_sums[i];
        if (isfinite(o->unit_sums[i])) continue;
        *sqnorm = total;
        const float *g = grads + u->offset;
        for (int64_t j = 0; j < u->numel; j++) {
            if (isfinite(g[j])) continue;
            int64_t el = u->start + j;
            if (u->expert >= 0)
                return zaya_error_set(ZAYA_ENUMERIC, "non-finite gradient (%s) in tensor '%s' expert %d element %lld",
                                      isnan(g[j]) ? "NaN" : "Inf", u->tensor_name, u->expert, (long long)el);
            return zaya_error_set(ZAYA_ENUMERIC, "non-finite gradient (%s) in tensor '%s' element %lld",
                                  isnan(g[j]) ? "NaN" : "Inf", u->tensor_name, (long long)el);
        }
        /* finite f32 values cannot overflow a double sum of squares */
        return zaya_error_set(ZAYA_ENUMERIC, "gradient norm of tensor '%s' overflows", u->tensor_name);
    }
    *sqnorm = total;
    return ZAYA_OK;
}

double zaya_optim_clip_scale(double norm, double max_norm) {
    if (!(max_norm > 0)) return 1.0;
    double s = max_norm / (norm + 1e-6);
    return s < 1.0 ? s : 1.0;
}
