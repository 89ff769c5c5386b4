/* The sweep's shape list for `zaya bench gemm` and the per-shape measurement (a model's list comes
 * from the sizing layer: zaya_gemm_model_fn). */
#include "zaya/bench_gemm.h"

#include <stdio.h>
#include <string.h>


/* ---- shape lists ---- */

typedef struct shape_list {
    zaya_gemm_shape *out;
    int cap, n;
    zaya_dtype dtype;
} shape_list;

static void push(shape_list *L, const char *group, const char *name, const char *pass, int ta, int tb, int64_t m,
                 int64_t n, int64_t k, float beta, double count) {
    if (L->n < L->cap) {
        zaya_gemm_shape *s = &L->out[L->n];
        memset(s, 0, sizeof *s);
        snprintf(s->group, sizeof s->group, "%s", group);
        snprintf(s->name, sizeof s->name, "%s", name);
        snprintf(s->pass, sizeof s->pass, "%s", pass);
        s->dtype = L->dtype;
        s->trans_a = ta, s->trans_b = tb;
        s->m = m, s->n = n, s->k = k;
        s->beta = beta;
        s->count = count;
    }
    L->n++;
}

int zaya_gemm_sweep_shapes(int quick, zaya_dtype dtype, zaya_gemm_shape *out, int cap) {
    shape_list L = {out, cap, 0, dtype};
    static const int64_t sq_full[] = {16, 32, 64, 128, 256, 512, 1024, 1536, 2048};
    static const int64_t sq_quick[] = {32, 128, 512, 1024};
    static const int64_t al_full[] = {255, 256, 257, 383, 384, 385, 511, 512, 513, 767, 768, 769, 1000, 1001, 1023, 1024, 1025};
    static const int64_t al_quick[] = {511, 512, 513, 1023, 1024, 1025};
    static const int64_t am_full[] = {1, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000};
    static const int64_t am_quick[] = {1, 127, 128, 129};
    const int64_t *sq = quick ? sq_quick : sq_full, *al = quick ? al_quick : al_full, *am = quick ? am_quick : am_full;
    int nsq = quick ? 4 : 9, nal = quick ? 6 : 17, nam = quick ? 4 : 12;
    char name[40];
    for (int i = 0; i < nsq; i++) {
        snprintf(name, sizeof name, "n=%lld", (long long)sq[i]);
        push(&L, "square", name, "", 0, 0, sq[i], sq[i], sq[i], 0, 1);
    }
    for (int i = 0; i < nal; i++) {
        snprintf(name, sizeof name, "n=%lld", (long long)al[i]);
        push(&L, "align", name, "", 0, 0, al[i], al[i], al[i], 0, 1);
    }
    /* The model shapes are ZAYA1-8B's (the model's preset): D 2048, q 1024, kv 256, router 256, 16
     * experts of width 2048. */
    zaya_config z;
    zaya_config_preset("zaya1-8b", &z);
    const int64_t D = z.hidden_size, qd = zaya_config_q_dim(&z), kvd = zaya_config_kv_dim(&z), R = z.router_hidden_size,
                  F = z.moe_intermediate_size, E = z.num_experts;
    /* Expert gate|up at a varying number of routed tokens: M is whatever the router produces. */
    for (int i = 0; i < nam; i++) {
        snprintf(name, sizeof name, "expert_fc1 m=%lld", (long long)am[i]);
        push(&L, "align_m", name, "fwd", 0, 1, am[i], 2 * F, D, 0, 1);
    }
    /* Its projections at a representative token count. */
    int64_t t = quick ? 512 : 2048, te = t / E;
    push(&L, "model", "q_proj", "fwd", 0, 1, t, qd, D, 0, 1);
    push(&L, "model", "k_proj", "fwd", 0, 1, t, kvd, D, 0, 1);
    push(&L, "model", "v_proj", "fwd", 0, 1, t, kvd / 2, D, 0, 1);
    push(&L, "model", "o_proj", "fwd", 0, 1, t, D, qd, 0, 1);
    push(&L, "model", "o_proj", "dgrad", 0, 0, t, qd, D, 0, 1);
    push(&L, "model", "q_proj", "wgrad", 1, 0, qd, D, t, 1, 1);
    push(&L, "model", "router_down", "fwd", 0, 1, t, R, D, 0, 1);
    push(&L, "model", "router_mlp", "fwd", 0, 1, t, R, R, 0, 1);
    push(&L, "model", "router_out", "fwd", 0, 1, t, E + 1, R, 0, 1);
    push(&L, "model", "expert_fc1", "fwd", 0, 1, te, 2 * F, D, 0, 1);
    push(&L, "model", "expert_fc2", "fwd", 0, 1, te, D, F, 0, 1);
    push(&L, "model", "expert_fc1", "wgrad", 1, 0, 2 * F, D, te, 1, 1);
    return L.n;
}

/* ---- measurement ---- */

zaya_matmul_desc zaya_gemm_shape_desc(const zaya_gemm_shape *s) {
    return (zaya_matmul_desc){.dtype = s->dtype, .trans_a = s->trans_a, .trans_b = s->trans_b, .m = s->m, .n = s->n,
                              .k = s->k, .beta = s->beta};
}

void zaya_gemm_flags(const zaya_gemm_result *r, char *out, int cap) {
    int n = 0;
    out[0] = '\0';
    if (r->pct_peak > 0 && r->pct_peak < 50.0) n += snprintf(out + n, (size_t)(cap - n), "slow ");
    int64_t d[3] = {r->s.m, r->s.n, r->s.k};
    int not16 = 0, not64 = 0;
    for (int i = 0; i < 3; i++) not16 |= d[i] % 16 != 0, not64 |= d[i] % 64 != 0;
    if (not16 && n < cap) n += snprintf(out + n, (size_t)(cap - n), "dim%%16 ");
    else if (not64 && n < cap) n += snprintf(out + n, (size_t)(cap - n), "dim%%64 ");
    if (n > 0 && n <= cap) out[n - 1] = '\0';
}

zaya_status zaya_gemm_run_shape(const zaya_gemm_shape *s, const zaya_bench_opts *o, double peak, zaya_gemm_result *r) {
    memset(r, 0, sizeof *r);
    r->s = *s;
    zaya_matmul_desc d = zaya_gemm_shape_desc(s);
    const char *impl = "";
    /* Multi-second shapes (the LM head at long sequences) get fewer samples: their timing noise is
     * small relative to the call, and the sweep must finish. */
    zaya_bench_opts ob = o ? *o : (zaya_bench_opts){2, 10, 1e-3, 0};
    if (peak > 0 && zaya_matmul_flops(&d) * 1e-9 / peak > 0.25) {
        if (ob.reps > 3) ob.reps = 3;
        if (ob.warmup > 1) ob.warmup = 1;
    }
    zaya_status st = zaya_matmul_impl_name(&d, &impl);
    if (st == ZAYA_OK) st = zaya_bench_matmul_compare(&d, &ob, &r->wrap, &r->direct);
    if (st != ZAYA_OK)
        return zaya_error_context(st, "%s %s %s m=%lld n=%lld k=%lld", s->dtype == ZAYA_DTYPE_BF16 ? "bf16" : "f32",
                                  s->name, s->pass, (long long)s->m, (long long)s->n, (long long)s->k);
    snprintf(r->impl, sizeof r->impl, "%s", impl);
    r->gflop = zaya_matmul_flops(&d) * 1e-9;
    r->gflops = r->gflop / r->wrap.best_s;
    r->direct_gflops = r->gflop / r->direct.best_s;
    r->ratio = r->gflops / r->direct_gflops;
    r->pct_peak = peak > 0 ? 100.0 * r->gflops / peak : 0;
    zaya_gemm_flags(r, r->flags, sizeof r->flags);
    return ZAYA_OK;
}

/* Is `item` one of the comma-separated names in `list`? */
static int in_list(const char *list, const char *item) {
    size_t len = strlen(item);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && !strncmp(p, item, len)) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

int zaya_gemm_shapes_keep_groups(zaya_gemm_shape *shapes, int n, const char *groups) {
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (in_list(groups, shapes[i].group)) shapes[kept++] = shapes[i];
    return kept;
}

void zaya_gemm_shape_add_json(cJSON *row, const zaya_gemm_shape *s) {
    cJSON_AddStringToObject(row, "group", s->group);
    cJSON_AddStringToObject(row, "name", s->name);
    cJSON_AddStringToObject(row, "pass", s->pass);
    cJSON_AddNumberToObject(row, "trans_a", s->trans_a);
    cJSON_AddNumberToObject(row, "trans_b", s->trans_b);
    cJSON_AddNumberToObject(row, "m", (double)s->m);
    cJSON_AddNumberToObject(row, "n", (double)s->n);
    cJSON_AddNumberToObject(row, "k", (double)s->k);
    cJSON_AddNumberToObject(row, "beta", s->beta);
    cJSON_AddNumberToObject(row, "count", s->count);
}
