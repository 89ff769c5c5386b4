/* Sizing rules as data: a statement, the reason, and a check parameterized by the hardware profile and
 * the run shape. Each hit names the dimension, the numbers, and the nearest compliant value(s). */
#include <stdarg.h>
#include <string.h>

#include "zaya/size.h"

int64_t zaya_size_round_to(int64_t x, int64_t q) {
    if (q <= 0) return x;
    int64_t lo = x / q * q, hi = lo + q;
    int64_t r = (x - lo < hi - x) ? lo : hi;
    return r < q ? q : r;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

typedef struct hits {
    zaya_size_rule_hit *h;
    int n, cap;
} hits;

__attribute__((format(printf, 5, 6))) static void hit(hits *H, const char *id, int severity, const char *what,
                                                     const char *fmt, ...) {
    if (H->n >= H->cap) { H->n++; return; }
    zaya_size_rule_hit *x = &H->h[H->n++];
    memset(x, 0, sizeof *x);
    x->rule_id = id;
    x->severity = severity;
    snprintf(x->what, sizeof x->what, "%s", what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->detail, sizeof x->detail, fmt, ap);
    va_end(ap);
}

static void fix(hits *H, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fix(hits *H, const char *fmt, ...) {
    if (H->n > H->cap || H->n == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(H->h[H->n - 1].fix, sizeof H->h[H->n - 1].fix, fmt, ap);
    va_end(ap);
}

static int rule_head_dim(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run, zaya_size_rule_hit *h, int cap) {
    hits H = {h, 0, cap};
    if (a->head_dim % 64) {
        hit(&H, "head_dim", 2, "head_dim", "head_dim %lld is not a multiple of 64", (long long)a->head_dim);
        int64_t lo = a->head_dim / 64 * 64;
        if (lo > 0) fix(&H, "head_dim %lld or %lld", (long long)lo, (long long)(lo + 64));
        else fix(&H, "head_dim 64");
    } else if (a->head_dim % 128) {
        hit(&H, "head_dim", 1, "head_dim", "head_dim %lld is a multiple of 64 but not of the preferred 128",
            (long long)a->head_dim);
        fix(&H, "head_dim %lld", (long long)zaya_size_round_to(a->head_dim, 128));
    }
    return H.n;
}

static void width(hits *H, const char *name, int64_t v, int64_t q) {
    if (v <= 0 || v % q == 0) return;
    hit(H, "width_tile", 2, name, "%s = %lld is not a multiple of the %lld-wide GEMM tile", name, (long long)v, (long long)q);
    int64_t lo = v / q * q;
    if (lo > 0) fix(H, "%s %lld or %lld", name, (long long)lo, (long long)(lo + q));
    else fix(H, "%s %lld", name, (long long)q);
}

static int rule_widths(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run, zaya_size_rule_hit *h, int cap) {
    hits H = {h, 0, cap};
    int64_t q = hw->align;
    width(&H, "hidden", a->hidden, q);
    width(&H, "heads*head_dim", a->heads * a->head_dim, q);
    width(&H, "kv_heads*head_dim", a->kv_heads * a->head_dim, q);
    if (a->layers > a->n_moe_layers) width(&H, "intermediate_size", a->dense_ffn, q);
    if (a->experts > 0) width(&H, "expert_ffn", a->expert_ffn, q);
    if (a->shared_experts > 0) width(&H, "shared_ffn", a->shared_ffn, q);
    if (a->router == ZAYA_SIZE_ROUTER_ZAYA) width(&H, "router_hidden", a->router_hidden, q);
    return H.n;
}

static int rule_vocab(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run, zaya_size_rule_hit *h, int cap) {
    hits H = {h, 0, cap};
    if (a->vocab % 128) {
        hit(&H, "vocab_128", 2, "vocab", "vocab %lld is not padded to a multiple of 128", (long long)a->vocab);
        fix(&H, "vocab %lld (pad %lld rows)", (long long)(cdiv(a->vocab, 128) * 128),
            (long long)(cdiv(a->vocab, 128) * 128 - a->vocab));
    }
    return H.n;
}

static int rule_tokens(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run, zaya_size_rule_hit *h, int cap) {
    hits H = {h, 0, cap};
    int64_t T = run->batch * run->seq, tm = hw->tile_m;
    if (T % tm) {
        hit(&H, "tokens_tile", 2, "batch*seq", "batch x seq = %lld tokens is not a multiple of the %lld-row tile",
            (long long)T, (long long)tm);
        fix(&H, "batch*seq %lld", (long long)zaya_size_round_to(T, tm));
    }
    if (a->experts > 0) {
        int64_t per = T * a->top_k / a->experts;
        if ((T * a->top_k) % a->experts || per % tm) {
            hit(&H, "tokens_tile", 1, "tokens/expert",
                "balanced tokens per expert %lld (= %lld x top-%lld / %lld) is not a multiple of the %lld-row tile",
                (long long)per, (long long)T, (long long)a->top_k, (long long)a->experts, (long long)tm);
            int64_t want = zaya_size_round_to(per < tm ? tm : per, tm) * a->experts;
            fix(&H, "batch*seq %lld", (long long)(want % a->top_k ? want : want / a->top_k));
        }
    }
    return H.n;
}

static int rule_tp(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run, zaya_size_rule_hit *h, int cap) {
    hits H = {h, 0, cap};
    int tp = run->tp > 0 ? run->tp : 1;
    char ok[96] = "";
    int n = 0;
    for (int t = 1; t <= 64; t *= 2)
        if (a->heads % t == 0 && (a->kv_heads % t == 0 || t % a->kv_heads == 0))
            n += snprintf(ok + n, sizeof ok - (size_t)n, "%s%d", n ? "," : "", t);
    if (a->heads % tp || (a->kv_heads % tp && tp % a->kv_heads)) {
        hit(&H, "kv_heads_tp", 2, "kv_heads", "%lld query / %lld KV heads cannot be split over TP %d",
            (long long)a->heads, (long long)a->kv_heads, tp);
        fix(&H, "TP in {%s}", ok);
    } else if (a->kv_heads % tp) {
        hit(&H, "kv_heads_tp", 1, "kv_heads", "TP %d > %lld KV heads: each KV head is replicated %lld times",
            tp, (long long)a->kv_heads, (long long)(tp / a->kv_heads));
        fix(&H, "kv_heads %d (= TP)", tp);
    }
    return H.n;
}

/* Nearest value to v (a multiple of q, within v/2..2v) whose tile count fills waves to >= 90 %. */
static int64_t wave_friendly(const zaya_size_hw *hw, int64_t v, int64_t q, int64_t other_tiles, int64_t groups) {
    int64_t per_wave = (int64_t)hw->compute_units * hw->tiles_per_cu, best = 0;
    for (int64_t c = q; c <= 2 * v; c += q) {
        if (c < v / 2) continue;
        int64_t tiles = cdiv(c, q) * other_tiles * groups;
        double eff = (double)tiles / ((double)cdiv(tiles, per_wave) * per_wave);
        if (eff >= 0.9 && (!best || llabs(c - v) < llabs(best - v))) best = c;
    }
    return best;
}

static int rule_quant(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run, zaya_size_rule_hit *h, int cap) {
    hits H = {h, 0, cap};
    if (!hw->is_gpu) return 0;
    zaya_size_gemm_shape g[ZAYA_SIZE_MAX_GEMMS];
    int n = zaya_size_list_gemms(a, run, g, ZAYA_SIZE_MAX_GEMMS);
    for (int i = 0; i < n; i++) {
        zaya_size_gemm_est e;
        zaya_size_gemm_estimate_grouped(hw, g[i].groups, g[i].m, g[i].n, g[i].k, &e);
        if (e.mem_bound) continue; /* bandwidth-bound: padding and idle units cost nothing */
        char what[96];
        snprintf(what, sizeof what, "%.39s %.5s (%lldx%lldx%lld%s)", g[i].name, g[i].pass, (long long)g[i].m,
                 (long long)g[i].n, (long long)g[i].k, g[i].groups > 1 ? " grouped" : "");
        double tq = e.tile_eff * e.k_eff;
        if (tq < 0.9) {
            hit(&H, "tile_quant", 2, what, "tiles %lldx%lldx%lld leave %.0f%% of the tile work idle (M %s, N %s, K %s)",
                (long long)hw->tile_m, (long long)hw->tile_n, (long long)hw->tile_k, 100 * (1 - tq), g[i].dim[0],
                g[i].dim[1], g[i].dim[2]);
            fix(&H, "M %lld, N %lld, K %lld", (long long)zaya_size_round_to(g[i].m, hw->tile_m),
                (long long)zaya_size_round_to(g[i].n, hw->tile_n), (long long)zaya_size_round_to(g[i].k, hw->tile_k));
        }
        /* Wave quantization matters when few waves run: the last one is a large share of the time. */
        if (e.wave_eff < 0.75 && e.waves <= 4) {
            hit(&H, "wave_quant", 2, what, "%lld tiles in %lld wave(s) of %d: the GPU is %.0f%% busy", (long long)e.tiles,
                (long long)e.waves, hw->compute_units * hw->tiles_per_cu, 100 * e.wave_eff);
            int64_t tn = cdiv(g[i].n, hw->tile_n), tm = cdiv(g[i].m, hw->tile_m);
            int64_t nm = wave_friendly(hw, g[i].m, hw->tile_m, tn, g[i].groups);
            int64_t nn = wave_friendly(hw, g[i].n, hw->tile_n, tm, g[i].groups);
            if (nm && nn) fix(&H, "M (%s) %lld or N (%s) %lld", g[i].dim[0], (long long)nm, g[i].dim[1], (long long)nn);
            else if (nm) fix(&H, "M (%s) %lld", g[i].dim[0], (long long)nm);
            else if (nn) fix(&H, "N (%s) %lld", g[i].dim[1], (long long)nn);
            else fix(&H, "more tokens per GEMM (larger micro-batch)");
        }
    }
    return H.n;
}

const zaya_size_rule zaya_size_rules[] = {
    {"head_dim", "head_dim is a multiple of 64; 128 preferred",
     "attention kernels tile the head dimension in 64-wide blocks; 128 fills the matrix units per instruction "
     "and halves the softmax/rescale overhead per FLOP", rule_head_dim},
    {"width_tile", "hidden, attention, MLP, expert and router widths are multiples of the GEMM tile granularity",
     "a width that is not a tile multiple pads its last tile with zeros: that work is paid for and discarded", rule_widths},
    {"vocab_128", "the vocabulary is padded to a multiple of 128",
     "the LM head is the largest single GEMM; an odd vocab breaks its N tiling and vector loads", rule_vocab},
    {"tokens_tile", "batch x sequence (and the balanced tokens per expert) are multiples of the tile's M",
     "token count is the M dimension of every projection; a partial last row-tile is wasted", rule_tokens},
    {"tile_quant", "every GEMM of forward and backward wastes < 10% in padded tiles (GPU profiles)",
     "tile quantization: work in padded tile rows/columns is computed and thrown away", rule_quant},
    {"wave_quant", "GEMMs that run in few waves keep the last wave >= 75% full (GPU profiles)",
     "tiles run in waves of compute_units x tiles_per_unit; one tile past a full wave costs a whole wave", NULL},
    {"kv_heads_tp", "query and KV head counts split evenly over the intended tensor-parallel degree",
     "TP shards attention by heads; KV heads not divisible by TP must be replicated, wasting KV cache and "
     "projection FLOPs", rule_tp},
};
const int zaya_size_nrules = (int)(sizeof zaya_size_rules / sizeof zaya_size_rules[0]);

int zaya_size_check_rules(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run, zaya_size_rule_hit *hits,
                          int cap) {
    int n = 0;
    for (int i = 0; i < zaya_size_nrules; i++) {
        if (!zaya_size_rules[i].check) continue; /* checked together with another rule */
        int got = zaya_size_rules[i].check(a, hw, run, hits + (n < cap ? n : cap), n < cap ? cap - n : 0);
        n += got;
    }
    return n;
}
