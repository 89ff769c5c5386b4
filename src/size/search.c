/* MoE shape search: enumerate ZAYA1-structured candidates (hidden, layers, experts, expert width, top-k;
 * heads follow hidden at head_dim 128) within the parameter budgets, keep those that obey the structural
 * sizing rules and fit in device memory, predict training tokens/s and decode latency, and mark the
 * Pareto front. When nothing survives, the constraint that emptied the set is reported with the
 * closest miss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/size.h"

void zaya_size_search_opts_default(zaya_size_search_opts *o) {
    memset(o, 0, sizeof *o);
    o->tolerance = 0.03;
    o->seq = 4096;
    o->batch = 4;
    o->vocab = 262272;
    o->dp = 1;
    o->hidden_min = 1024;
    o->hidden_max = 8192;
    o->hidden_step = 256;
    o->layers_max = 128;
}

void zaya_size_search_result_free(zaya_size_search_result *r) {
    free(r->c);
    memset(r, 0, sizeof *r);
}

/* Training memory per rank of one shape under the search's layout (DP, micro-batch, sequence). */
static void search_memory(const zaya_size_search_opts *o, const zaya_size_arch *a, zaya_size_mem *mem) {
    zaya_size_mem_opts mo;
    zaya_size_mem_opts_default(&mo);
    mo.dp = o->dp;
    mo.micro_batch = o->batch;
    mo.seq = o->seq;
    zaya_size_train_memory(a, &mo, mem);
}

zaya_status zaya_size_search_eval(const zaya_size_hw *hw, const zaya_size_search_opts *o, const zaya_size_arch *a, int *recompute,
                                  zaya_size_step_pred *sp, zaya_size_infer_pred *ip) {
    zaya_size_mem mem;
    search_memory(o, a, &mem);
    zaya_size_step_opts so;
    zaya_size_step_opts_default(&so);
    so.batch = o->batch;
    so.seq = o->seq;
    so.dp = o->dp;
    so.recompute = hw->mem_bytes > 0 && mem.total > hw->mem_bytes;
    *recompute = so.recompute;
    ZAYA_TRY(zaya_size_predict_step(a, hw, &so, sp));
    zaya_size_predict_infer(a, hw, 1, o->seq, ip);
    return ZAYA_OK;
}

void zaya_size_diff_step(const zaya_size_step_pred *c, const zaya_size_step_pred *r, zaya_size_step_diff *d) {
    d->gemm = r->gemm_s - c->gemm_s;
    d->attn_mem = (r->attn_s + r->memop_s) - (c->attn_s + c->memop_s);
    d->optimizer = r->optimizer_s - c->optimizer_s;
    d->comm = r->comm_exposed_s - c->comm_exposed_s;
    d->step = d->gemm + d->attn_mem + d->optimizer + d->comm;
}

static const int64_t expert_counts[] = {4, 8, 16, 32, 64, 128, 256};
static const int64_t topks[] = {1, 2, 4, 8};

static int by_tokens(const void *x, const void *y) {
    const zaya_size_candidate *a = x, *b = y;
    if (a->train_tok_s != b->train_tok_s) return a->train_tok_s < b->train_tok_s ? 1 : -1;
    return a->decode_s < b->decode_s ? -1 : a->decode_s > b->decode_s;
}

static int structural_ok(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run) {
    zaya_size_rule_hit h[32];
    int n = 0;
    for (int i = 0; i < zaya_size_nrules; i++) {
        const zaya_size_rule *r = &zaya_size_rules[i];
        /* efficiency rules are priced by the step model instead of filtering */
        if (!r->check || !strcmp(r->id, "tile_quant") || !strcmp(r->id, "tokens_tile")) continue;
        int got = r->check(a, hw, run, h, 32);
        for (int j = 0; j < got && j < 32; j++)
            if (h[j].severity >= 2) n++;
    }
    return n == 0;
}

typedef struct miss {
    int64_t pass;
    double best_err;
    char best[200];
} miss;

static void note_miss(miss *m, double err, const zaya_size_arch *a, double total, double active) {
    if (err >= m->best_err) return;
    m->best_err = err;
    char t[32], ac[32];
    snprintf(m->best, sizeof m->best, "hidden %lld, %lld layers, %lld experts x %lld, top-%lld: total %s, active %s",
             (long long)a->hidden, (long long)a->layers, (long long)a->experts, (long long)a->expert_ffn,
             (long long)a->top_k, zaya_size_fmt_count(total, t, sizeof t), zaya_size_fmt_count(active, ac, sizeof ac));
}

static zaya_status push(zaya_size_search_result *r, const zaya_size_candidate *c) {
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 256;
        zaya_size_candidate *nc = realloc(r->c, (size_t)cap * sizeof *nc);
        if (!nc) return zaya_error_set(ZAYA_ENOMEM, "search: %d candidates", cap);
        r->c = nc;
        r->cap = cap;
    }
    r->c[r->n++] = *c;
    return ZAYA_OK;
}

zaya_status zaya_size_search(const zaya_size_hw *hw, const zaya_size_search_opts *o, zaya_size_search_result *r) {
    memset(r, 0, sizeof *r);
    char X[32], Y[32];
    zaya_size_fmt_count(o->total_params, X, sizeof X);
    zaya_size_fmt_count(o->active_params, Y, sizeof Y);
    if (!(o->total_params > 0) || !(o->active_params > 0))
        return zaya_error_set(ZAYA_EINVAL, "--total-params and --active-params must be positive");
    if (o->active_params > o->total_params * (1 + o->tolerance)) {
        snprintf(r->fail, sizeof r->fail, "no candidate satisfies active params %s <= total params %s", Y, X);
        return ZAYA_OK;
    }
    double tol = o->tolerance;
    zaya_size_run run = {o->batch, o->seq, 1};
    miss m_total = {0, INFINITY, ""}, m_active = {0, INFINITY, ""}, m_rules = {0, INFINITY, ""}, m_mem = {0, INFINITY, ""};
    for (int64_t h = o->hidden_min; h <= o->hidden_max; h += o->hidden_step)
        for (size_t ei = 0; ei < sizeof expert_counts / sizeof *expert_counts; ei++)
            for (size_t ki = 0; ki < sizeof topks / sizeof *topks; ki++) {
                int64_t E = expert_counts[ei], k = topks[ki];
                if (k >= E) continue;
                for (int64_t F = 256; F <= 4 * h; F += 256) {
                    zaya_size_arch a1, a2;
                    zaya_size_params p1, p2;
                    zaya_size_arch_zaya_like(&a1, h, 1, E, F, k, o->vocab);
                    zaya_size_arch_zaya_like(&a2, h, 2, E, F, k, o->vocab);
                    zaya_size_count_params(&a1, &p1);
                    zaya_size_count_params(&a2, &p2);
                    double t1 = (double)p1.non_embedding, st = (double)p2.non_embedding - t1;
                    double a1c = (double)p1.active_non_embedding, sa = (double)p2.active_non_embedding - a1c;
                    /* counts are affine in the layer count: solve for the layers that hit the total */
                    int64_t lo = (int64_t)ceil((o->total_params * (1 - tol) - t1) / st) + 1;
                    int64_t hi = (int64_t)floor((o->total_params * (1 + tol) - t1) / st) + 1;
                    if (lo < 2) lo = 2;
                    if (hi > o->layers_max) hi = o->layers_max;
                    r->examined++;
                    if (lo > hi) {
                        int64_t L = (int64_t)llround((o->total_params - t1) / st) + 1;
                        if (L < 2) L = 2;
                        if (L > o->layers_max) L = o->layers_max;
                        double tot = t1 + st * (double)(L - 1);
                        a1.layers = L;
                        note_miss(&m_total, fabs(tot / o->total_params - 1), &a1, tot, a1c + sa * (double)(L - 1));
                        continue;
                    }
                    m_total.pass++;
                    for (int64_t L = lo; L <= hi; L++) {
                        double tot = t1 + st * (double)(L - 1), act = a1c + sa * (double)(L - 1);
                        zaya_size_arch a;
                        zaya_size_arch_zaya_like(&a, h, L, E, F, k, o->vocab);
                        double aerr = fabs(act / o->active_params - 1);
                        if (aerr > tol) { note_miss(&m_active, aerr, &a, tot, act); continue; }
                        m_active.pass++;
                        if (!structural_ok(&a, hw, &run)) { note_miss(&m_rules, 0, &a, tot, act); continue; }
                        m_rules.pass++;
                        zaya_size_mem mem;
                        search_memory(o, &a, &mem);
                        if (hw->mem_bytes > 0 && mem.total_recompute > hw->mem_bytes) {
                            note_miss(&m_mem, mem.total_recompute / hw->mem_bytes, &a, tot, act);
                            continue;
                        }
                        m_mem.pass++;
                        zaya_size_step_pred sp;
                        zaya_size_infer_pred ip;
                        int rec = 0;
                        ZAYA_TRY(zaya_size_search_eval(hw, o, &a, &rec, &sp, &ip));
                        zaya_size_candidate c = {h, L, E, F, k, a.heads, a.kv_heads, tot, act, sp.tokens_per_s_rank,
                                            ip.decode_s, sp.gemm_eff, (rec ? mem.total_recompute : mem.total) / 1e9, 0, rec};
                        ZAYA_TRY(push(r, &c));
                    }
                }
            }
    if (r->n == 0) {
        if (m_total.pass == 0)
            snprintf(r->fail, sizeof r->fail,
                     "no candidate satisfies total params %s +/-%.0f%% (hidden %lld..%lld, <= %lld layers); closest: %.200s",
                     X, 100 * tol, (long long)o->hidden_min, (long long)o->hidden_max, (long long)o->layers_max, m_total.best);
        else if (m_active.pass == 0)
            snprintf(r->fail, sizeof r->fail,
                     "no candidate satisfies active params %s +/-%.0f%% at total %s; closest of %lld shapes: %.200s", Y,
                     100 * tol, X, (long long)m_total.pass, m_active.best);
        else if (m_rules.pass == 0)
            snprintf(r->fail, sizeof r->fail, "no candidate satisfies the sizing rules (e.g. vocab %lld); first: %s",
                     (long long)o->vocab, m_rules.best);
        else
            snprintf(r->fail, sizeof r->fail,
                     "no candidate satisfies device memory %.0f GB (ZeRO-1, DP %d, recomputation); smallest needs %.2fx: %s",
                     hw->mem_bytes / 1e9, o->dp, m_mem.best_err, m_mem.best);
        return ZAYA_OK;
    }
    qsort(r->c, (size_t)r->n, sizeof *r->c, by_tokens);
    double best_dec = INFINITY;
    for (int i = 0; i < r->n; i++)
        if (r->c[i].decode_s < best_dec) {
            best_dec = r->c[i].decode_s;
            r->c[i].pareto = 1;
        }
    return ZAYA_OK;
}
