/* AdamW over the owned ADAMW units (one unit per thread: large tensors are split into row ranges at
 * planning, so units stay small enough to balance), in torch.optim.AdamW's operation order so that results agree
 * to rounding: decay, m lerp, v update, bias-corrected step. */
#include <math.h>

#include "optim/internal.h"

void zaya_optim_step_adamw(zaya_optim *o, float *params, const float *grads, double lr, double grad_scale) {
    const zaya_optim_config *c = &o->cfg;
    const int64_t t = ++o->adamw_steps;
    const double bc1 = 1.0 - pow(c->adam_beta1, (double)t), bc2 = 1.0 - pow(c->adam_beta2, (double)t);
    const float w1 = (float)(1.0 - c->adam_beta1), b2 = (float)c->adam_beta2, w2 = (float)(1.0 - c->adam_beta2);
    const float neg_step = (float)(-lr / bc1), bc2_sqrt = (float)sqrt(bc2), eps = (float)c->adam_eps;
    const float gs = (float)grad_scale;
    const int n = o->nadamw;
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < n; k++) {
        const int i = o->adamw_order[k];
        const zaya_optim_unit *u = &o->plan.units[i];
        const float decay = u->decay ? (float)(1.0 - lr * c->weight_decay) : 1.0f;
        float *p = params + u->offset, *m = o->exp_avg[i], *v = o->exp_avg_sq[i];
        const float *g = grads + u->offset;
        zaya_adamw_update(p, g, m, v, u->numel, gs, w1, b2, w2, neg_step, bc2_sqrt, eps, decay);
    }
}
