/* `zaya bench gemm --device cuda` (zaya_bench_gemm_gpu_run): the same shape lists as the CPU path
 * (the sweep, or every GEMM of a model config) through cuBLASLt in bf16 / f16 / TF32, against the
 * peak measured in the same run at large squares and the device's datasheet peak; every shape's
 * output is checked on sampled entries against a reference kernel (src/gpu/gemm.cu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/bench_gemm.h"
#include "zaya/fs.h"
#include "zaya/gpu.h"
#include "zaya/json.h"
#include "zaya/progress.h"

typedef struct gpu_row {
    zaya_gemm_shape s;
    zaya_gpu_dtype t;
    double best_ms, mean_ms, tflops, pct_measured, pct_datasheet, max_rel;
    int64_t bad;
    char algo[128];
} gpu_row;


static zaya_status time_shape(const zaya_gemm_shape *s, zaya_gpu_dtype t, const zaya_bench_gemm_opts *o, int samples,
                              gpu_row *r) {
    memset(r, 0, sizeof *r);
    r->s = *s;
    r->t = t;
    zaya_gpu_gemm *g = NULL;
    zaya_status st = zaya_gpu_gemm_init(&g, t, s->trans_a, s->trans_b, s->m, s->n, s->k, 1234);
    if (st == ZAYA_OK) st = zaya_gpu_gemm_time(g, o->warmup, o->iters, &r->best_ms, &r->mean_ms);
    if (st == ZAYA_OK && samples > 0) st = zaya_gpu_gemm_verify(g, samples, &r->max_rel, &r->bad);
    if (st == ZAYA_OK) {
        snprintf(r->algo, sizeof r->algo, "%s", zaya_gpu_gemm_algo(g));
        r->tflops = 2.0 * (double)s->m * (double)s->n * (double)s->k / (r->best_ms * 1e-3) / 1e12;
    }
    zaya_gpu_gemm_free(g);
    if (st != ZAYA_OK)
        return zaya_error_context(st, "%s GEMM %s/%s %lldx%lldx%lld", zaya_gpu_dtype_name(t), s->group, s->name,
                                  (long long)s->m, (long long)s->n, (long long)s->k);
    return ZAYA_OK;
}

static zaya_status write_outputs(const zaya_bench_gemm_opts *o, const zaya_gpu_props *p, const zaya_gpu_datasheet *ds,
                                 const zaya_gpu_dtype *dts, int ndt, const double *peak, const int64_t *peak_n,
                                 const gpu_row *rows, int n) {
    char path[4096];
    ZAYA_TRY(zaya_mkdir_p(o->out));
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "gemm");
    cJSON_AddStringToObject(root, "device", "cuda");
    cJSON *dev = cJSON_AddObjectToObject(root, "gpu");
    cJSON_AddStringToObject(dev, "name", p->name);
    cJSON_AddNumberToObject(dev, "index", p->index);
    cJSON_AddNumberToObject(dev, "sm_count", p->sm_count);
    cJSON_AddNumberToObject(dev, "compute_capability", p->cc_major * 10 + p->cc_minor);
    cJSON_AddNumberToObject(dev, "runtime_version", p->runtime_version);
    cJSON_AddNumberToObject(dev, "driver_version", p->driver_version);
    cJSON_AddStringToObject(dev, "datasheet", ds ? ds->name : "unknown");
    cJSON_AddNumberToObject(root, "iterations", o->iters);
    cJSON_AddNumberToObject(root, "warmup", o->warmup);
    cJSON_AddBoolToObject(root, "quick", o->quick);
    cJSON *pk = cJSON_AddObjectToObject(root, "peak_tflops_measured");
    cJSON *pn = cJSON_AddObjectToObject(root, "peak_n");
    cJSON *pd = cJSON_AddObjectToObject(root, "peak_tflops_datasheet");
    for (int i = 0; i < ndt; i++) {
        cJSON_AddNumberToObject(pk, zaya_gpu_dtype_name(dts[i]), peak[i]);
        cJSON_AddNumberToObject(pn, zaya_gpu_dtype_name(dts[i]), (double)peak_n[i]);
        cJSON_AddNumberToObject(pd, zaya_gpu_dtype_name(dts[i]), zaya_gpu_datasheet_tflops(ds, dts[i]));
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    int64_t bad = 0;
    for (int i = 0; i < n; i++) {
        const gpu_row *r = &rows[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "dtype", zaya_gpu_dtype_name(r->t));
        zaya_gemm_shape ran = r->s;
        ran.beta = 0.0f; /* device GEMMs run with beta = 0 */
        zaya_gemm_shape_add_json(e, &ran);
        cJSON_AddNumberToObject(e, "best_ms", r->best_ms);
        cJSON_AddNumberToObject(e, "mean_ms", r->mean_ms);
        cJSON_AddNumberToObject(e, "tflops", r->tflops);
        cJSON_AddNumberToObject(e, "pct_measured_peak", r->pct_measured);
        cJSON_AddNumberToObject(e, "pct_datasheet_peak", r->pct_datasheet);
        cJSON_AddStringToObject(e, "algo", r->algo);
        cJSON_AddNumberToObject(e, "verify_max_rel_err", r->max_rel);
        cJSON_AddNumberToObject(e, "verify_bad", (double)r->bad);
        cJSON_AddItemToArray(arr, e);
        bad += r->bad;
    }
    cJSON_AddNumberToObject(root, "wrong_total", (double)bad);
    zaya_status st = zaya_path_join(path, sizeof path, o->out, "gemm.json");
    if (st == ZAYA_OK) st = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    ZAYA_TRY(st);
    size_t cap = 256 + (size_t)n * 320, len = 0;
    char *buf = malloc(cap);
    if (!buf) return zaya_error_set(ZAYA_ENOMEM, "bench gemm: out of memory for gemm.csv");
    len += (size_t)snprintf(buf, cap, "dtype,group,name,pass,trans_a,trans_b,m,n,k,best_ms,mean_ms,tflops,"
                                      "pct_measured,pct_datasheet,verify_max_rel,verify_bad,algo\n");
    for (int i = 0; i < n; i++) {
        const gpu_row *r = &rows[i];
        len += (size_t)snprintf(buf + len, cap - len, "%s,%s,%s,%s,%d,%d,%lld,%lld,%lld,%.6f,%.6f,%.3f,%.2f,%.2f,%.3e,%lld,%s\n",
                                zaya_gpu_dtype_name(r->t), r->s.group, r->s.name, r->s.pass, r->s.trans_a, r->s.trans_b,
                                (long long)r->s.m, (long long)r->s.n, (long long)r->s.k, r->best_ms, r->mean_ms, r->tflops,
                                r->pct_measured, r->pct_datasheet, r->max_rel, (long long)r->bad, r->algo);
    }
    st = zaya_path_join(path, sizeof path, o->out, "gemm.csv");
    if (st == ZAYA_OK) st = zaya_write_file_atomic(path, buf, len);
    free(buf);
    return st;
}

zaya_status zaya_bench_gemm_gpu_run(const zaya_bench_gemm_opts *o, zaya_device dev, FILE *out) {
    zaya_gpu_dtype dts[ZAYA_GPU_DTYPE_COUNT];
    int ndt = 0;
    if (!strcmp(o->dtype, "all")) {
        for (int i = 0; i < ZAYA_GPU_DTYPE_COUNT; i++) dts[ndt++] = (zaya_gpu_dtype)i;
    } else {
        ZAYA_TRY(zaya_gpu_dtype_parse(o->dtype, &dts[0]));
        ndt = 1;
    }
    if (o->iters < 1 || o->warmup < 0) return zaya_error_set(ZAYA_EINVAL, "bench gemm: iters >= 1 and warmup >= 0");
    ZAYA_TRY(zaya_gpu_select(dev));
    zaya_gpu_props p;
    ZAYA_TRY(zaya_gpu_props_get(dev.index, &p));
    const zaya_gpu_datasheet *ds = zaya_gpu_datasheet_find(p.name);
    fprintf(out, "# device cuda:%d %s (sm_%d%d, %d SMs, %.1f GiB), datasheet: %s\n", dev.index, p.name, p.cc_major,
            p.cc_minor, p.sm_count, (double)p.total_mem / (1 << 30), ds ? ds->name : "unknown (no % of datasheet)");

    /* Shapes: the CPU path's lists (their dtype field is replaced by each GPU dtype). */
    zaya_config cfg;
    int model = o->config != NULL;
    if (model && !o->model_shapes) return zaya_error_set(ZAYA_EINVAL, "bench gemm: a model config needs its GEMM list (model_shapes)");
    if (model) ZAYA_TRY(zaya_config_resolve(o->config, &cfg));
    int64_t tokens = o->batch * o->seq;
    int ns = model ? o->model_shapes(&cfg, tokens, ZAYA_DTYPE_BF16, NULL, 0)
                   : zaya_gemm_sweep_shapes(o->quick, ZAYA_DTYPE_BF16, NULL, 0);
    zaya_gemm_shape *shapes = calloc((size_t)ns + 1, sizeof *shapes);
    gpu_row *rows = calloc(((size_t)ns + 2) * (size_t)ndt + 1, sizeof *rows);
    zaya_status st = (shapes && rows) ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "bench gemm: out of memory");
    if (st == ZAYA_OK) {
        if (model) o->model_shapes(&cfg, tokens, ZAYA_DTYPE_BF16, shapes, ns);
        else zaya_gemm_sweep_shapes(o->quick, ZAYA_DTYPE_BF16, shapes, ns);
        if (o->only) {
            ns = zaya_gemm_shapes_keep_groups(shapes, ns, o->only);
            if (!ns) st = zaya_error_set(ZAYA_EINVAL, "--only '%s' selects no shapes", o->only);
        }
    }
    /* Measured peak: the best rate at two large squares (8192^3 and 16384^3; --quick 4096^3 and 8192^3),
     * D = A B^T as the model's forward GEMMs. These rows are verified and reported like the others. */
    double peak[ZAYA_GPU_DTYPE_COUNT] = {0};
    int64_t peak_n[ZAYA_GPU_DTYPE_COUNT] = {0};
    const int64_t sizes[2][2] = {{8192, 16384}, {4096, 8192}};
    int nr = 0;
    int64_t bad = 0;
    zaya_progress prog;
    zaya_progress_init(&prog, "gemm", "shape", (int64_t)(ns + 2) * ndt);
    for (int d = 0; st == ZAYA_OK && d < ndt; d++)
        for (int i = 0; st == ZAYA_OK && i < 2; i++) {
            int64_t sz = sizes[o->quick ? 1 : 0][i];
            zaya_gemm_shape sq = {.group = "peak", .pass = "fwd", .trans_b = 1, .m = sz, .n = sz, .k = sz, .count = 1};
            snprintf(sq.name, sizeof sq.name, "n=%lld", (long long)sz);
            st = time_shape(&sq, dts[d], o, 64, &rows[nr]);
            if (st != ZAYA_OK) break;
            if (rows[nr].tflops > peak[d]) peak[d] = rows[nr].tflops, peak_n[d] = sz;
            nr++;
            zaya_progress_update(&prog, nr, sq.name);
        }
    if (st == ZAYA_OK)
        for (int d = 0; d < ndt; d++)
            fprintf(out, "# %s peak: measured %.1f TFLOP/s at %lld^3 (A B^T), datasheet %.1f TFLOP/s dense\n",
                    zaya_gpu_dtype_name(dts[d]), peak[d], (long long)peak_n[d], zaya_gpu_datasheet_tflops(ds, dts[d]));
    if (st == ZAYA_OK)
        fprintf(out, "%-5s %-8s %-24s %-5s %2s %2s %7s %7s %7s %9s %8s %7s %7s %9s %s\n", "dtype", "group", "name", "pass",
                "tA", "tB", "m", "n", "k", "best(ms)", "TFLOP/s", "%meas", "%sheet", "max_rel", "algo");
    int npeak = nr;
    for (int d = 0; st == ZAYA_OK && d < ndt; d++)
        for (int i = 0; st == ZAYA_OK && i < ns + 1; i++) {
            /* i == 0 prints this dtype's peak rows (already timed), then the shapes. */
            int first = nr, last;
            if (i == 0) {
                first = 2 * d;
                last = first + 2;
            } else {
                st = time_shape(&shapes[i - 1], dts[d], o, 64, &rows[nr]);
                if (st != ZAYA_OK) break;
                last = ++nr;
                zaya_progress_update(&prog, nr, shapes[i - 1].name);
            }
            for (int j = first; j < last && j < (i == 0 ? npeak : nr); j++) {
                gpu_row *r = &rows[j];
                double sheet = zaya_gpu_datasheet_tflops(ds, dts[d]);
                r->pct_measured = peak[d] > 0 ? 100.0 * r->tflops / peak[d] : 0;
                r->pct_datasheet = sheet > 0 ? 100.0 * r->tflops / sheet : 0;
                bad += r->bad;
                fprintf(out, "%-5s %-8s %-24s %-5s %2d %2d %7lld %7lld %7lld %9.4f %8.1f %7.1f %7.1f %9.2e %s%s\n",
                        zaya_gpu_dtype_name(r->t), r->s.group, r->s.name, r->s.pass, r->s.trans_a, r->s.trans_b,
                        (long long)r->s.m, (long long)r->s.n, (long long)r->s.k, r->best_ms, r->tflops, r->pct_measured,
                        r->pct_datasheet, r->max_rel, r->algo, r->bad ? "  WRONG" : "");
            }
            fflush(out);
        }
    zaya_progress_finish(&prog, NULL);
    if (st == ZAYA_OK) st = write_outputs(o, &p, ds, dts, ndt, peak, peak_n, rows, nr);
    if (st == ZAYA_OK) {
        fprintf(out, "# %d GEMMs verified on 64 sampled entries each against the f32 reference kernel: %lld wrong\n", nr,
                (long long)bad);
        fprintf(out, "results: %s/gemm.json, %s/gemm.csv\n", o->out, o->out);
        if (bad) st = zaya_error_set(ZAYA_ENUMERIC, "bench gemm: %lld sampled entries outside the reference bound", (long long)bad);
    }
    free(shapes);
    free(rows);
    return st;
}
