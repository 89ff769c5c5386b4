/* `zaya bench gemm` (zaya_bench_gemm_run): GEMM throughput sweep, or every GEMM of a model config, against the measured peak
 * and against oneDNN called directly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/bench_gemm.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/plot.h"
#include "zaya/progress.h"
#include "zaya/threads.h"

typedef zaya_bench_gemm_opts gemm_opts;

static const char *dt_name(zaya_dtype t) { return t == ZAYA_DTYPE_BF16 ? "bf16" : "f32"; }

/* Results of the whole run, per dtype. */
typedef struct gemm_run {
    zaya_dtype dtypes[2];
    int ndt;
    double peak[2], peak_run[2][2]; /* final = max of the runs before and after the sweep */
    int64_t peak_n[2], peak_run_n[2][2];
    zaya_gemm_result *res;
    int nres;
    int model;
    zaya_config cfg;
    int64_t tokens;
    int thread_cpu;
    FILE *out;
    double overhead_us[3]; /* wrapper reusing memory objects, wrapper creating them, direct; 32^3 f32 */
} gemm_run;

static int dt_index(const gemm_run *R, zaya_dtype t) { return R->ndt == 2 ? (int)t : 0; }

/* Rows of an expert GEMM: the balanced share of the routed tokens (top-k copies of each token). */
static int64_t tokens_per_expert(const gemm_run *R) {
    int64_t e = R->cfg.num_experts > 0 ? R->cfg.num_experts : 1;
    return (R->tokens * R->cfg.num_experts_per_tok + e - 1) / e;
}

/* ---- measurement ---- */

static zaya_status measure_overhead(gemm_run *R, const zaya_bench_opts *o) {
    zaya_matmul_desc d = {.m = 32, .n = 32, .k = 32};
    zaya_bench_stats reuse, fresh, direct;
    zaya_matmul_set_reuse_memory(0);
    zaya_status s = zaya_bench_matmul_compare(&d, o, &fresh, NULL);
    zaya_matmul_set_reuse_memory(1);
    ZAYA_TRY(s);
    ZAYA_TRY(zaya_bench_matmul_compare(&d, o, &reuse, &direct));
    R->overhead_us[0] = reuse.best_s * 1e6;
    R->overhead_us[1] = fresh.best_s * 1e6;
    R->overhead_us[2] = direct.best_s * 1e6;
    return ZAYA_OK;
}

/* Peak of every dtype; pass 0 before the sweep, pass 1 after it. */
static zaya_status measure_peaks(gemm_run *R, const gemm_opts *g, int pass) {
    static const int64_t quick_sizes[] = {1024, 2048};
    zaya_bench_opts po = {g->warmup, g->quick ? 3 : 5, 0, g->thread_cpu};
    zaya_progress prog;
    zaya_progress_init(&prog, pass ? "peak (again)" : "peak", "dtype", R->ndt);
    for (int i = 0; i < R->ndt; i++) {
        zaya_status s = zaya_bench_matmul_peak(R->dtypes[i], g->quick ? quick_sizes : NULL, g->quick ? 2 : 0, &po,
                                               &R->peak_run[pass][i], &R->peak_run_n[pass][i]);
        if (s != ZAYA_OK) return zaya_error_context(s, "measuring the %s peak", dt_name(R->dtypes[i]));
        zaya_progress_update(&prog, i + 1, dt_name(R->dtypes[i]));
    }
    zaya_progress_finish(&prog, NULL);
    return ZAYA_OK;
}

static int same_shape(const zaya_gemm_shape *a, const zaya_gemm_shape *b) {
    return a->dtype == b->dtype && a->trans_a == b->trans_a && a->trans_b == b->trans_b && a->m == b->m &&
           a->n == b->n && a->k == b->k && a->beta == b->beta;
}


static zaya_status run_all(gemm_run *R, const gemm_opts *g) {
    zaya_bench_opts o = {g->warmup, g->iters, 1e-3, g->thread_cpu};
    zaya_gemm_shape *shapes = NULL;
    int n = 0;
    for (int i = 0; i < R->ndt; i++) {
        int c = R->model ? g->model_shapes(&R->cfg, R->tokens, R->dtypes[i], NULL, 0)
                         : zaya_gemm_sweep_shapes(g->quick, R->dtypes[i], NULL, 0);
        zaya_gemm_shape *grown = realloc(shapes, sizeof *shapes * (size_t)(n + c));
        if (!grown) {
            free(shapes);
            return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the shape list");
        }
        shapes = grown;
        if (R->model) g->model_shapes(&R->cfg, R->tokens, R->dtypes[i], shapes + n, c);
        else zaya_gemm_sweep_shapes(g->quick, R->dtypes[i], shapes + n, c);
        n += c;
    }
    if (g->only) {
        n = zaya_gemm_shapes_keep_groups(shapes, n, g->only);
    }
    if (n == 0) {
        free(shapes);
        return zaya_error_set(ZAYA_EINVAL, "--only '%s' selects no shapes (groups: %s)", g->only,
                              R->model ? "attn, router, expert, mlp, head" : "square, align, align_m, model");
    }
    R->res = calloc((size_t)n, sizeof *R->res);
    if (!R->res) {
        free(shapes);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate results");
    }

    zaya_progress prog;
    zaya_status s = measure_peaks(R, g, 0);
    if (s != ZAYA_OK) {
        free(shapes);
        return s;
    }
    s = measure_overhead(R, &o);
    if (s != ZAYA_OK) {
        free(shapes);
        return zaya_error_context(s, "measuring per-call overhead");
    }

    zaya_progress_init(&prog, "gemm", "shape", n);
    for (int i = 0; i < n && s == ZAYA_OK; i++) {
        char note[96];
        snprintf(note, sizeof note, "%s %s %s %lldx%lldx%lld", dt_name(shapes[i].dtype), shapes[i].name, shapes[i].pass,
                 (long long)shapes[i].m, (long long)shapes[i].n, (long long)shapes[i].k);
        zaya_progress_update(&prog, i, note);
        double peak = R->peak[dt_index(R, shapes[i].dtype)];
        int dup = -1;
        for (int j = 0; j < i && dup < 0; j++)
            if (same_shape(&shapes[j], &shapes[i])) dup = j;
        if (dup >= 0) { /* one shape under two names (e.g. a square router GEMM's passes): measured once */
            R->res[i] = R->res[dup];
            R->res[i].s = shapes[i];
        } else {
            s = zaya_gemm_run_shape(&shapes[i], &o, peak, &R->res[i]);
        }
        R->nres = i + 1;
    }
    zaya_progress_finish(&prog, NULL);
    free(shapes);
    /* Peak again after the sweep; the larger one stands (contention only ever lowers a rate). */
    if (s == ZAYA_OK) s = measure_peaks(R, g, 1);
    if (s != ZAYA_OK) return s;
    for (int i = 0; i < R->ndt; i++) {
        int better = R->peak_run[1][i] > R->peak_run[0][i];
        R->peak[i] = R->peak_run[better][i];
        R->peak_n[i] = R->peak_run_n[better][i];
    }
    for (int i = 0; i < R->nres; i++) {
        zaya_gemm_result *r = &R->res[i];
        r->pct_peak = 100.0 * r->gflops / R->peak[dt_index(R, r->s.dtype)];
        zaya_gemm_flags(r, r->flags, sizeof r->flags);
    }
    return ZAYA_OK;
}

/* ---- reporting ---- */

static void print_table(const gemm_run *R) {
    fprintf(R->out, "\n%-5s %-8s %-24s %-5s %2s %2s %7s %7s %7s %9s %6s %9s %6s %9s  %-22s %s\n", "dtype", "group", "name", "pass",
           "tA", "tB", "M", "N", "K", "GFLOP/s", "%peak", "oneDNN", "ratio", "best_us", "impl", "flags");
    for (int i = 0; i < R->nres; i++) {
        const zaya_gemm_result *r = &R->res[i];
        fprintf(R->out, "%-5s %-8s %-24s %-5s %2d %2d %7lld %7lld %7lld %9.1f %5.1f%% %9.1f %6.3f %9.1f  %-22s %s\n",
               dt_name(r->s.dtype), r->s.group, r->s.name, r->s.pass, r->s.trans_a, r->s.trans_b, (long long)r->s.m,
               (long long)r->s.n, (long long)r->s.k, r->gflops, r->pct_peak, r->direct_gflops, r->ratio,
               r->wrap.best_s * 1e6, r->impl, r->flags);
    }
}

typedef struct model_total {
    double time_s, gflop, group_s[5], pass_s[3];
    int group_n[5]; /* shapes of each group */
} model_total;

#define NGROUPS 5
static const char *k_groups[NGROUPS] = {"attn", "router", "expert", "mlp", "head"};
static const char *k_passes[3] = {"fwd", "dgrad", "wgrad"};

static model_total model_totals(const gemm_run *R, zaya_dtype dt) {
    model_total t = {0};
    for (int i = 0; i < R->nres; i++) {
        const zaya_gemm_result *r = &R->res[i];
        if (r->s.dtype != dt) continue;
        /* Best samples: on a shared machine the median mostly measures the other tenants. */
        double ts = r->s.count * r->wrap.best_s;
        t.time_s += ts;
        t.gflop += r->s.count * r->gflop;
        for (int g = 0; g < NGROUPS; g++)
            if (!strcmp(r->s.group, k_groups[g])) t.group_s[g] += ts, t.group_n[g]++;
        for (int p = 0; p < 3; p++)
            if (!strcmp(r->s.pass, k_passes[p])) t.pass_s[p] += ts;
    }
    return t;
}

/* Flagged shapes, largest share of the step first; the rest are in gemm.csv. */
static void print_flagged(const gemm_run *R, zaya_dtype dt, double step_s) {
    int *idx = malloc(sizeof(int) * (size_t)(R->nres + 1));
    if (!idx) return;
    int total = 0;
    for (int j = 0; j < R->nres; j++) {
        const zaya_gemm_result *r = &R->res[j];
        if (r->s.dtype != dt || !r->flags[0]) continue;
        double share = r->s.count * r->wrap.best_s;
        int at = total++;
        while (at > 0 && R->res[idx[at - 1]].s.count * R->res[idx[at - 1]].wrap.best_s < share) {
            idx[at] = idx[at - 1];
            at--;
        }
        idx[at] = j;
    }
    for (int i = 0; i < total && i < 8; i++) {
        const zaya_gemm_result *r = &R->res[idx[i]];
        fprintf(R->out, "\n    %-24s %-5s %6lldx%-6lldx%-6lld %5.1f%% of step  %5.1f%% of peak  %s", r->s.name, r->s.pass,
               (long long)r->s.m, (long long)r->s.n, (long long)r->s.k, 100 * r->s.count * r->wrap.best_s / step_s,
               r->pct_peak, r->flags);
    }
    if (total > 8) fprintf(R->out, "\n    ... %d more in gemm.csv", total - 8);
    fprintf(R->out, "%s\n", total ? "" : " none");
    free(idx);
}

static void print_summary(const gemm_run *R) {
    fprintf(R->out, "\npeak (best oneDNN matmul, square, measured before and after the sweep, %d threads, %s):", zaya_threads_get(),
           R->thread_cpu ? "thread CPU time" : "wall time");
    for (int i = 0; i < R->ndt; i++)
        fprintf(R->out, "  %s %.1f GFLOP/s (n=%lld; runs %.1f, %.1f)", dt_name(R->dtypes[i]), R->peak[i], (long long)R->peak_n[i],
               R->peak_run[0][i], R->peak_run[1][i]);
    fprintf(R->out, "\nper-call cost at 32x32x32 f32: zaya %.2f us (memory objects reused), %.2f us (created per call), oneDNN direct %.2f us\n",
           R->overhead_us[0], R->overhead_us[1], R->overhead_us[2]);
    for (int i = 0; i < R->ndt; i++) {
        double lo = 1e9, sum = 0;
        int cnt = 0;
        for (int j = 0; j < R->nres; j++)
            if (R->res[j].s.dtype == R->dtypes[i]) {
                double x = R->res[j].ratio;
                lo = x < lo ? x : lo;
                sum += x, cnt++;
            }
        if (cnt) fprintf(R->out, "zaya/oneDNN-direct %s: mean %.3f, min %.3f over %d shapes\n", dt_name(R->dtypes[i]), sum / cnt, lo, cnt);
    }
    if (!R->model) return;
    fprintf(R->out, "\nmodel: hidden %lld, layers %lld, heads %lld/%lld x %lld, experts %lld x %lld, router %lld, vocab %lld; "
           "%lld tokens per step, %lld per expert\n(linear layers only: attention scores and values run in the attention kernel)\n",
           (long long)R->cfg.hidden_size, (long long)R->cfg.num_hidden_layers, (long long)R->cfg.num_attention_heads,
           (long long)R->cfg.num_key_value_heads, (long long)R->cfg.head_dim, (long long)R->cfg.num_experts,
           (long long)R->cfg.moe_intermediate_size, (long long)R->cfg.router_hidden_size, (long long)R->cfg.vocab_size,
           (long long)R->tokens, (long long)tokens_per_expert(R));
    for (int i = 0; i < R->ndt; i++) {
        model_total t = model_totals(R, R->dtypes[i]);
        fprintf(R->out, "%s: predicted GEMM time per step (best samples) %.3f s for %.1f TFLOP (%.1f GFLOP/s, %.1f%% of peak)\n", dt_name(R->dtypes[i]),
               t.time_s, t.gflop * 1e-3, t.gflop / t.time_s, 100.0 * t.gflop / t.time_s / R->peak[i]);
        fprintf(R->out, "  by part:");
        for (int g = 0; g < NGROUPS; g++)
            if (t.group_n[g]) fprintf(R->out, "  %s %.3f s (%.0f%%)", k_groups[g], t.group_s[g], 100 * t.group_s[g] / t.time_s);
        fprintf(R->out, "\n  by pass:");
        for (int p = 0; p < 3; p++) fprintf(R->out, "  %s %.3f s", k_passes[p], t.pass_s[p]);
        fprintf(R->out, "\n  flagged (by share of the step):");
        print_flagged(R, R->dtypes[i], t.time_s);
    }
}

static zaya_status write_csv(const gemm_run *R, const char *dir) {
    char path[4096];
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, "gemm.csv"));
    size_t cap = 256 + (size_t)R->nres * 320, len = 0;
    char *buf = malloc(cap);
    if (!buf) return zaya_error_set(ZAYA_ENOMEM, "cannot allocate CSV buffer");
    len += (size_t)snprintf(buf + len, cap - len,
                            "dtype,group,name,pass,trans_a,trans_b,m,n,k,beta,count,gflop,best_us,median_us,gflops,pct_peak,"
                            "direct_gflops,ratio,impl,flags\n");
    for (int i = 0; i < R->nres; i++) {
        const zaya_gemm_result *r = &R->res[i];
        len += (size_t)snprintf(buf + len, cap - len, "%s,%s,%s,%s,%d,%d,%lld,%lld,%lld,%g,%g,%.6g,%.3f,%.3f,%.2f,%.2f,%.2f,%.4f,%s,%s\n",
                                dt_name(r->s.dtype), r->s.group, r->s.name, r->s.pass, r->s.trans_a, r->s.trans_b,
                                (long long)r->s.m, (long long)r->s.n, (long long)r->s.k, (double)r->s.beta, r->s.count,
                                r->gflop, r->wrap.best_s * 1e6, r->wrap.median_s * 1e6, r->gflops, r->pct_peak,
                                r->direct_gflops, r->ratio, r->impl, r->flags);
    }
    zaya_status s = zaya_write_file_atomic(path, buf, len);
    free(buf);
    return s;
}

static zaya_status write_json(const gemm_run *R, const gemm_opts *g, const char *dir) {
    char path[4096];
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, "gemm.json"));
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "gemm");
    cJSON_AddNumberToObject(root, "threads", zaya_threads_get());
    cJSON_AddNumberToObject(root, "iterations", g->iters);
    cJSON_AddNumberToObject(root, "warmup", g->warmup);
    cJSON_AddBoolToObject(root, "quick", g->quick);
    cJSON_AddStringToObject(root, "clock", g->thread_cpu ? "thread_cpu" : "wall");
    cJSON *peak = cJSON_AddObjectToObject(root, "peak_gflops");
    cJSON *peak_n = cJSON_AddObjectToObject(root, "peak_n");
    for (int i = 0; i < R->ndt; i++) {
        cJSON_AddNumberToObject(peak, dt_name(R->dtypes[i]), R->peak[i]);
        cJSON_AddNumberToObject(peak_n, dt_name(R->dtypes[i]), (double)R->peak_n[i]);
    }
    cJSON *runs = cJSON_AddObjectToObject(root, "peak_gflops_before_after");
    for (int i = 0; i < R->ndt; i++) {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(R->peak_run[0][i]));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(R->peak_run[1][i]));
        cJSON_AddItemToObject(runs, dt_name(R->dtypes[i]), pair);
    }
    cJSON *ov = cJSON_AddObjectToObject(root, "overhead_32cubed_f32_us");
    cJSON_AddNumberToObject(ov, "zaya_reuse_memory", R->overhead_us[0]);
    cJSON_AddNumberToObject(ov, "zaya_memory_per_call", R->overhead_us[1]);
    cJSON_AddNumberToObject(ov, "onednn_direct", R->overhead_us[2]);
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (int i = 0; i < R->nres; i++) {
        const zaya_gemm_result *r = &R->res[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "dtype", dt_name(r->s.dtype));
        zaya_gemm_shape_add_json(o, &r->s);
        cJSON_AddNumberToObject(o, "gflop", r->gflop);
        cJSON_AddNumberToObject(o, "best_us", r->wrap.best_s * 1e6);
        cJSON_AddNumberToObject(o, "median_us", r->wrap.median_s * 1e6);
        cJSON_AddNumberToObject(o, "direct_best_us", r->direct.best_s * 1e6);
        cJSON_AddNumberToObject(o, "direct_median_us", r->direct.median_s * 1e6);
        cJSON_AddNumberToObject(o, "gflops", r->gflops);
        cJSON_AddNumberToObject(o, "direct_gflops", r->direct_gflops);
        cJSON_AddNumberToObject(o, "ratio", r->ratio);
        cJSON_AddNumberToObject(o, "pct_peak", r->pct_peak);
        cJSON_AddStringToObject(o, "impl", r->impl);
        cJSON_AddStringToObject(o, "flags", r->flags);
        cJSON_AddItemToArray(arr, o);
    }
    if (R->model) {
        cJSON *m = cJSON_AddObjectToObject(root, "model");
        cJSON_AddStringToObject(m, "config", g->config);
        cJSON_AddNumberToObject(m, "batch", (double)g->batch);
        cJSON_AddNumberToObject(m, "seq", (double)g->seq);
        cJSON_AddNumberToObject(m, "tokens", (double)R->tokens);
        cJSON_AddNumberToObject(m, "tokens_per_expert", (double)tokens_per_expert(R));
        for (int i = 0; i < R->ndt; i++) {
            model_total t = model_totals(R, R->dtypes[i]);
            cJSON *d = cJSON_AddObjectToObject(m, dt_name(R->dtypes[i]));
            cJSON_AddNumberToObject(d, "step_gemm_s", t.time_s);
            cJSON_AddNumberToObject(d, "step_tflop", t.gflop * 1e-3);
            cJSON_AddNumberToObject(d, "gflops", t.gflop / t.time_s);
            for (int k = 0; k < 4; k++) cJSON_AddNumberToObject(d, k_groups[k], t.group_s[k]);
            for (int k = 0; k < 3; k++) cJSON_AddNumberToObject(d, k_passes[k], t.pass_s[k]);
        }
    }
    zaya_status s = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    return s;
}

/* One series per dtype for zaya and one for oneDNN direct over the results of `group`. Returns OK
 * with *written = 0 when the group was not run. */
static zaya_status plot_group(const gemm_run *R, const char *dir, const char *file, const char *group, const char *title,
                              const char *xlabel, int use_m, int logx, int *written) {
    *written = 0;
    double *buf = calloc((size_t)R->ndt * 3 * (size_t)R->nres + 1, sizeof(double));
    if (!buf) return zaya_error_set(ZAYA_ENOMEM, "plot buffer");
    zaya_plot_series series[4];
    char titles[4][32];
    int ns = 0, total = 0;
    for (int i = 0; i < R->ndt; i++) {
        double *x = buf + (size_t)i * 3 * (size_t)R->nres, *y = x + R->nres, *yd = y + R->nres;
        int n = 0;
        for (int j = 0; j < R->nres; j++) {
            const zaya_gemm_result *r = &R->res[j];
            if (r->s.dtype != R->dtypes[i] || strcmp(r->s.group, group)) continue;
            x[n] = (double)(use_m ? r->s.m : r->s.n);
            y[n] = r->gflops;
            yd[n] = r->direct_gflops;
            n++;
        }
        total += n;
        snprintf(titles[ns], sizeof titles[ns], "%s zaya", dt_name(R->dtypes[i]));
        series[ns] = (zaya_plot_series){titles[ns], x, y, n};
        ns++;
        snprintf(titles[ns], sizeof titles[ns], "%s oneDNN direct", dt_name(R->dtypes[i]));
        series[ns] = (zaya_plot_series){titles[ns], x, yd, n};
        ns++;
    }
    zaya_status s = ZAYA_OK;
    if (total > 0) {
        char path[4096];
        s = zaya_path_join(path, sizeof path, dir, file);
        zaya_plot_opts po = {title, xlabel, "GFLOP/s", logx, 0, 1};
        if (s == ZAYA_OK) s = zaya_plot_lines(path, &po, series, ns);
        *written = s == ZAYA_OK;
    }
    free(buf);
    return s;
}

/* Renders the sweep's plots (model runs are listed, not plotted along one axis) and names the
 * files written in `names`. Plots are optional output: failures only warn. */
static void write_plots(const gemm_run *R, const char *dir, char *names, size_t cap) {
    static const struct { const char *file, *group, *title, *xlabel; int use_m, logx; } plots[] = {
        {"gemm_size.png", "square", "GEMM throughput vs size (M=N=K)", "n", 0, 2},
        {"gemm_alignment.png", "align", "Alignment effect: M=N=K around multiples of 64/128/256", "n", 0, 0},
        {"gemm_alignment_m.png", "align_m", "Expert fc1 (N=4096, K=2048) vs routed tokens M", "M", 1, 2}};
    names[0] = '\0';
    if (R->model) return;
    size_t len = 0;
    for (size_t i = 0; i < sizeof plots / sizeof plots[0]; i++) {
        int written = 0;
        if (plot_group(R, dir, plots[i].file, plots[i].group, plots[i].title, plots[i].xlabel, plots[i].use_m,
                       plots[i].logx, &written) != ZAYA_OK) {
            fprintf(stderr, "zaya bench gemm: warning: plot %s skipped: %s\n", plots[i].file, zaya_error_message());
            continue;
        }
        if (written && len < cap) len += (size_t)snprintf(names + len, cap - len, ", %s", plots[i].file);
    }
}

/* ---- the run ---- */

zaya_status zaya_bench_gemm_run(const zaya_bench_gemm_opts *opts, FILE *out) {
    const zaya_bench_gemm_opts g = *opts;
    if (g.device) {
        zaya_device dev;
        ZAYA_TRY(zaya_device_parse(g.device, &dev));
        if (dev.kind == ZAYA_DEVICE_CUDA) return zaya_bench_gemm_gpu_run(&g, dev, out);
    }
    gemm_run R = {0};
    R.thread_cpu = g.thread_cpu;
    R.out = out;
    if (!strcmp(g.dtype, "f32")) R.dtypes[0] = ZAYA_DTYPE_F32, R.ndt = 1;
    else if (!strcmp(g.dtype, "bf16")) R.dtypes[0] = ZAYA_DTYPE_BF16, R.ndt = 1;
    else if (!strcmp(g.dtype, "all")) R.dtypes[0] = ZAYA_DTYPE_F32, R.dtypes[1] = ZAYA_DTYPE_BF16, R.ndt = 2;
    else return zaya_error_set(ZAYA_EINVAL, "dtype '%s' is not f32, bf16 or all", g.dtype);
    if (g.iters < 1 || g.warmup < 0 || g.batch < 1 || g.seq < 1 || g.batch * g.seq > (1 << 24))
        return zaya_error_set(ZAYA_EINVAL, "bench gemm: iters >= 1, warmup >= 0 and 1 <= batch x seq <= 16M");
    if (g.thread_cpu && g.threads != 1) return zaya_error_set(ZAYA_EINVAL, "CPU-time measurement needs 1 thread");
    zaya_threads_init(g.threads);

    if (g.config) {
        if (!g.model_shapes) return zaya_error_set(ZAYA_EINVAL, "bench gemm: a model config needs its GEMM list (model_shapes)");
        ZAYA_TRY(zaya_config_resolve(g.config, &R.cfg)); /* the model's own reader: errors name the file and key */
        R.model = 1;
        R.tokens = g.batch * g.seq;
    }
    zaya_status s = zaya_mkdir_p(g.out);
    if (s == ZAYA_OK) s = run_all(&R, &g);
    if (s == ZAYA_OK) {
        print_table(&R);
        print_summary(&R);
        s = write_json(&R, &g, g.out);
    }
    if (s == ZAYA_OK) s = write_csv(&R, g.out);
    char plots[256] = "";
    if (s == ZAYA_OK) write_plots(&R, g.out, plots, sizeof plots);
    free(R.res);
    zaya_matmul_cache_clear();
    ZAYA_TRY(s);
    fprintf(out, "\nresults: %s/gemm.json, %s/gemm.csv%s\n", g.out, g.out, plots);
    return ZAYA_OK;
}
