/* "Why this shape": compares the search's choice with a reference shape (or the runner-up) term by term
 * of the step-time and decode models, so the preference is explained in numbers, not asserted. */
#include <math.h>
#include <string.h>

#include "zaya/size.h"

static void describe(const zaya_size_candidate *c, char *buf, size_t cap) {
    snprintf(buf, cap, "hidden %lld, %lld layers, %lld experts x %lld, top-%lld, %lld/%lld heads", (long long)c->hidden,
             (long long)c->layers, (long long)c->experts, (long long)c->expert_ffn, (long long)c->top_k,
             (long long)c->heads, (long long)c->kv_heads);
}

/* Re-evaluates a shape with the search's own settings (zaya_size_search_eval), so both sides of every
 * comparison are priced the same way. */
static void terms(const zaya_size_hw *hw, const zaya_size_search_opts *o, const zaya_size_candidate *c, zaya_size_step_pred *sp,
                  zaya_size_infer_pred *ip, int *recompute) {
    zaya_size_arch a;
    zaya_size_arch_zaya_like(&a, c->hidden, c->layers, c->experts, c->expert_ffn, c->top_k, o->vocab);
    if (zaya_size_search_eval(hw, o, &a, recompute, sp, ip) != ZAYA_OK) {
        memset(sp, 0, sizeof *sp);
        memset(ip, 0, sizeof *ip);
    }
}

static void compare(const zaya_size_hw *hw, const zaya_size_search_opts *o, const zaya_size_candidate *win, const char *wname,
                    const zaya_size_candidate *ref, const char *rname, FILE *f) {
    zaya_size_step_pred sw, sr;
    zaya_size_infer_pred iw, ir;
    int rw = 0, rr = 0;
    terms(hw, o, win, &sw, &iw, &rw);
    terms(hw, o, ref, &sr, &ir, &rr);
    fprintf(f, "  %-22s %12s %12s\n", "", wname, rname);
    fprintf(f, "  %-22s %12.0f %12.0f  (%+.1f%%)\n", "train tokens/s/rank", sw.tokens_per_s_rank, sr.tokens_per_s_rank,
            100 * (sw.tokens_per_s_rank / sr.tokens_per_s_rank - 1));
    fprintf(f, "  %-22s %12.1f %12.1f\n", "  step (ms)", 1e3 * sw.step_s, 1e3 * sr.step_s);
    fprintf(f, "  %-22s %12s %12s\n", "  recomputation", rw ? "yes" : "no", rr ? "yes" : "no");
    fprintf(f, "  %-22s %12.1f %12.1f\n", "  GEMM time (ms)", 1e3 * sw.gemm_s, 1e3 * sr.gemm_s);
    fprintf(f, "  %-22s %11.1f%% %11.1f%%\n", "  GEMM efficiency", 100 * sw.gemm_eff, 100 * sr.gemm_eff);
    fprintf(f, "  %-22s %12.1f %12.1f\n", "  attention (ms)", 1e3 * sw.attn_s, 1e3 * sr.attn_s);
    fprintf(f, "  %-22s %12.1f %12.1f\n", "  memory-bound ops (ms)", 1e3 * sw.memop_s, 1e3 * sr.memop_s);
    fprintf(f, "  %-22s %12.1f %12.1f\n", "  optimizer (ms)", 1e3 * sw.optimizer_s, 1e3 * sr.optimizer_s);
    fprintf(f, "  %-22s %12.1f %12.1f\n", "  exposed DP comm (ms)", 1e3 * sw.comm_exposed_s, 1e3 * sr.comm_exposed_s);
    fprintf(f, "  %-22s %12.3f %12.3f  (%+.1f%%)\n", "decode ms/token (b=1)", 1e3 * iw.decode_s, 1e3 * ir.decode_s,
            100 * (iw.decode_s / ir.decode_s - 1));
    fprintf(f, "  %-22s %12.1f %12.1f\n", "  weight+KV MB read", (iw.decode_weight_bytes + iw.decode_kv_bytes) / 1e6,
            (ir.decode_weight_bytes + ir.decode_kv_bytes) / 1e6);
    fprintf(f, "  %-22s %12.3f %12.3f\n", "  read time (ms)", 1e3 * iw.decode_bytes_s, 1e3 * ir.decode_bytes_s);
    fprintf(f, "  %-22s %12.3f %12.3f\n", "  launches+routing (ms)", 1e3 * (iw.decode_launch_s + iw.decode_route_s),
            1e3 * (ir.decode_launch_s + ir.decode_route_s));
    fprintf(f, "  %-22s %12lld %12lld\n", "  layers (launch chain)", (long long)win->layers, (long long)ref->layers);
    /* name the dominant terms in words */
    zaya_size_step_diff d;
    zaya_size_diff_step(&sw, &sr, &d);
    double d_read = (ir.decode_bytes_s - iw.decode_bytes_s) * 1e3;
    double d_launch = (ir.decode_launch_s + ir.decode_route_s - iw.decode_launch_s - iw.decode_route_s) * 1e3;
    double d_dec = (ir.decode_s - iw.decode_s) * 1e3;
    /* decode = max(reads, FLOPs) + routing + launches: what the reads and the chain do not explain is a
     * side bounded by its FLOPs */
    double d_flops_bound = d_dec - d_read - d_launch;
    fprintf(f, "  why: %s's step is %.1f ms %s = GEMMs %+.1f + attention/memory-bound ops %+.1f + optimizer %+.1f + exposed DP comm %+.1f ms;\n"
               "       its decoded token is %.3f ms %s = weight/KV reads %+.3f + kernel chain %+.3f ms (%lld vs %lld layers)\n",
            wname, 1e3 * fabs(d.step), d.step >= 0 ? "shorter" : "longer", 1e3 * d.gemm, 1e3 * d.attn_mem, 1e3 * d.optimizer,
            1e3 * d.comm, fabs(d_dec), d_dec >= 0 ? "faster" : "slower", d_read, d_launch,
            (long long)win->layers, (long long)ref->layers);
    if (fabs(d_flops_bound) > 0.0005)
        fprintf(f, "       (+ %.3f ms where a side's decode is bounded by FLOPs, not reads)\n", d_flops_bound);
    int still = iw.decode_bytes_s <= ir.decode_bytes_s;
    fprintf(f, "       with a fully fused decode (no per-kernel cost) the reads alone decide: %.3f vs %.3f ms, %s %s\n",
            1e3 * iw.decode_bytes_s, 1e3 * ir.decode_bytes_s, still ? "still in favour of" : "in favour of", still ? wname : rname);
}

void zaya_size_search_explain(const zaya_size_hw *hw, const zaya_size_search_opts *o, const zaya_size_search_result *r, FILE *f) {
    if (r->n == 0) return;
    char d[160];
    const zaya_size_candidate *best = &r->c[0];
    describe(best, d, sizeof d);
    fprintf(f, "\nexplanation (%s, batch %lld x seq %lld per rank, DP %d):\n", hw->name, (long long)o->batch,
            (long long)o->seq, o->dp);
    fprintf(f, "  highest training throughput: %s\n", d);
    if (!o->ref_valid) {
        if (r->n > 1) {
            describe(&r->c[1], d, sizeof d);
            fprintf(f, "  runner-up: %s\n", d);
            compare(hw, o, best, "best", &r->c[1], "runner-up", f);
        }
        return;
    }
    /* locate the reference shape among the candidates: same widths, nearest layer count */
    const zaya_size_arch *ra = &o->ref;
    int ri = -1;
    for (int i = 0; i < r->n; i++) {
        const zaya_size_candidate *c = &r->c[i];
        if (c->hidden != ra->hidden || c->experts != ra->experts || c->expert_ffn != ra->expert_ffn || c->top_k != ra->top_k)
            continue;
        if (ri < 0 || llabs(c->layers - ra->layers) < llabs(r->c[ri].layers - ra->layers)) ri = i;
    }
    zaya_size_candidate refc;
    if (ri < 0) {
        /* outside the budget window: evaluate it directly */
        zaya_size_arch a;
        zaya_size_arch_zaya_like(&a, ra->hidden, ra->layers, ra->experts, ra->expert_ffn, ra->top_k, o->vocab);
        zaya_size_params p;
        zaya_size_count_params(&a, &p);
        zaya_size_step_pred sp;
        zaya_size_infer_pred ip;
        memset(&refc, 0, sizeof refc);
        refc = (zaya_size_candidate){a.hidden, a.layers, a.experts, a.expert_ffn, a.top_k, a.heads, a.kv_heads,
                                (double)p.non_embedding, (double)p.active_non_embedding, 0, 0, 0, 0, 0, 0};
        terms(hw, o, &refc, &sp, &ip, &refc.recompute);
        refc.train_tok_s = sp.tokens_per_s_rank;
        refc.decode_s = ip.decode_s;
        refc.gemm_eff = sp.gemm_eff;
        char t[32], ac[32];
        describe(&refc, d, sizeof d);
        fprintf(f, "  reference (%s) is outside the budget window (total %s, active %s)\n", d,
                zaya_size_fmt_count(refc.total, t, sizeof t), zaya_size_fmt_count(refc.active, ac, sizeof ac));
    } else {
        refc = r->c[ri];
        describe(&refc, d, sizeof d);
        fprintf(f, "  reference shape: %s: rank %d of %d by training tokens/s (%.1f%% of the best), %s the Pareto front\n",
                d, ri + 1, r->n, 100 * refc.train_tok_s / best->train_tok_s, refc.pareto ? "ON" : "not on");
        if (refc.pareto) {
            fprintf(f, "  it is Pareto-optimal: no candidate trains faster without a slower decode.\n");
            if (ri > 0) compare(hw, o, best, "best", &refc, "reference", f);
            return;
        }
    }
    /* the front candidate that dominates the reference with the highest throughput */
    const zaya_size_candidate *dom = NULL;
    for (int i = 0; i < r->n; i++) {
        const zaya_size_candidate *c = &r->c[i];
        if (!c->pareto) continue;
        if (c->train_tok_s >= refc.train_tok_s && c->decode_s <= refc.decode_s) { dom = c; break; }
    }
    if (!dom) dom = best;
    describe(dom, d, sizeof d);
    fprintf(f, "  preferred instead: %s\n", d);
    compare(hw, o, dom, "preferred", &refc, "reference", f);
    fprintf(f, "  the model prices throughput and latency only; expert granularity's effect on quality (ZAYA1's reason\n"
               "  for 16 fine-grained experts) is outside it. Candidates within a few percent are equivalent to it.\n");
}
