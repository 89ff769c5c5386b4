/* `zaya size validate` (zaya_size_validate_step): the step-time model against a real measurement. Predicts one training step of
 * CONFIG on a profile, then runs a short `zaya train` of this same binary (a child process, so the
 * trainer owns its thread pool and allocations exactly as in production) on a one-phase run file with a
 * constant batch, and compares the median measured step (after warm-up steps) with the prediction.
 * On a shared machine every rate drops with the load, so the oneDNN matmul peak is also measured just
 * before and after the run: profile peak / current peak is the slowdown the model cannot know, and the
 * load-adjusted ratio divides it out. Exits 0 whatever the ratio: it is a measurement, not a test. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zaya/bench.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/proc.h"
#include "zaya/size.h"
#include "zaya/threads.h"

#define MAX_SOURCES 16
#define MAX_STEPS ZAYA_SIZE_VALIDATE_MAX_STEPS

/* Source names of DIR: every NAME with a NAME-train-00000.ztok shard. */
static zaya_status find_sources(const char *dir, char names[][64], int *n) {
    DIR *d = opendir(dir);
    if (!d) return zaya_error_set(ZAYA_EIO, "--data '%s': %s", dir, strerror(errno));
    static const char suffix[] = "-train-00000.ztok";
    const size_t ls = sizeof suffix - 1;
    *n = 0;
    for (struct dirent *e; (e = readdir(d)) && *n < MAX_SOURCES;) {
        size_t l = strlen(e->d_name);
        if (l <= ls || l - ls >= 64 || strcmp(e->d_name + l - ls, suffix)) continue;
        memcpy(names[*n], e->d_name, l - ls);
        names[(*n)++][l - ls] = 0;
    }
    closedir(d);
    if (*n == 0) return zaya_error_set(ZAYA_EINVAL, "--data '%s' holds no NAME-train-00000.ztok shards (run `zaya data prepare` or `zaya train` once)", dir);
    return ZAYA_OK;
}

/* The run must start from step 0 with no checkpoint in the way: refuse an -o that already holds one. */
static zaya_status fresh(const char *train_dir) {
    struct stat sb;
    if (stat(train_dir, &sb) == 0)
        return zaya_error_set(ZAYA_EINVAL, "'%s' exists (an earlier measurement); choose a new -o DIR", train_dir);
    return ZAYA_OK;
}

/* One phase, constant batch, flat learning rate, enough tokens for the steps. */
static zaya_status write_run(const char *path, char names[][64], int n, int64_t batch, int64_t seq, int64_t steps) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "name", "size-validate");
    cJSON_AddNumberToObject(root, "seed", 1234);
    cJSON_AddNumberToObject(root, "seq_multiple", 1);
    cJSON_AddNumberToObject(root, "batch_multiple", 1);
    cJSON *ph = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "phases"), ph);
    cJSON_AddStringToObject(ph, "name", "measure");
    cJSON_AddNumberToObject(ph, "tokens", (double)(batch * seq * (steps + 1)));
    cJSON *src = cJSON_AddObjectToObject(ph, "sources");
    for (int i = 0; i < n; i++) cJSON_AddNumberToObject(src, names[i], 1.0 / n);
    cJSON_AddNumberToObject(ph, "seq_len", (double)seq);
    cJSON_AddNumberToObject(ph, "batch", (double)batch);
    cJSON_AddNumberToObject(ph, "rope_theta", 10000);
    cJSON *lr = cJSON_AddObjectToObject(ph, "lr");
    cJSON_AddNumberToObject(lr, "peak", 1e-3);
    cJSON_AddNumberToObject(lr, "final", 1e-3);
    cJSON_AddNumberToObject(lr, "warmup_tokens", 0);
    cJSON_AddStringToObject(lr, "decay", "wsd");
    cJSON_AddNumberToObject(lr, "decay_fraction", 0);
    zaya_status s = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    return s;
}

/* Runs argv with stdout and stderr into log; the exit status or an error. */
static zaya_status run_child(char *const argv[], const char *log) {
    zaya_proc_opts po = {.log_path = log};
    zaya_proc_result r;
    ZAYA_TRY(zaya_proc_run(argv, &po, 0, &r));
    char why[32];
    if (!zaya_proc_ok(&r))
        return zaya_error_set(ZAYA_EIO, "the training run failed (%s); see %s", zaya_proc_describe(&r, why, sizeof why), log);
    return ZAYA_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Step times (ms) of metrics.jsonl training lines with step >= warmup, checking the batch. */
static zaya_status read_steps(const char *path, int64_t warmup, int64_t batch, double *ms, int *n) {
    char *text;
    size_t len;
    ZAYA_TRY(zaya_read_file(path, &text, &len));
    *n = 0;
    int line = 0;
    zaya_status s = ZAYA_OK;
    for (char *p = text, *e; p && *p && s == ZAYA_OK; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        if (e) *e = 0;
        line++;
        cJSON *o = cJSON_Parse(p);
        if (!o) { s = zaya_error_set(ZAYA_EFORMAT, "%s line %d: not JSON", path, line); break; }
        const cJSON *jms = cJSON_GetObjectItemCaseSensitive(o, "ms"), *jstep = cJSON_GetObjectItemCaseSensitive(o, "step"),
                    *jb = cJSON_GetObjectItemCaseSensitive(o, "batch");
        if (cJSON_IsNumber(jms) && cJSON_IsNumber(jstep) && jstep->valuedouble >= (double)warmup && *n < MAX_STEPS) {
            if (cJSON_IsNumber(jb) && (int64_t)jb->valuedouble != batch)
                s = zaya_error_set(ZAYA_EFORMAT, "%s line %d: batch %g, expected %lld", path, line, jb->valuedouble, (long long)batch);
            else ms[(*n)++] = jms->valuedouble;
        }
        cJSON_Delete(o);
    }
    free(text);
    if (s == ZAYA_OK && *n == 0) s = zaya_error_set(ZAYA_EFORMAT, "%s: no training steps after the %lld warm-up steps", path, (long long)warmup);
    return s;
}

zaya_status zaya_size_validate_step(const zaya_size_validate_opts *o, FILE *out) {
    const char *path = o->config, *dtype = o->dtype, *optname = o->optimizer, *data = o->data;
    int64_t batch = o->batch, seq = o->seq, micro = o->micro_batch > 0 ? o->micro_batch : o->batch, steps = o->steps,
            warmup = o->warmup;
    int threads = o->threads;
    zaya_size_step_opts so;
    zaya_size_step_opts_default(&so);
    if (!strcmp(optname, "muon")) so.optimizer = ZAYA_SIZE_OPT_MUON;
    else if (strcmp(optname, "adamw")) return zaya_error_set(ZAYA_EINVAL, "--optimizer '%s' (use adamw or muon)", optname);
    if (strcmp(dtype, "bf16") && strcmp(dtype, "f32")) return zaya_error_set(ZAYA_EINVAL, "--dtype '%s' (use bf16 or f32)", dtype);
    so.batch = micro;
    so.seq = seq;

    zaya_size_arch a;
    zaya_size_hw hw;
    ZAYA_TRY(zaya_size_arch_load(path, &a));
    ZAYA_TRY(zaya_size_hw_get(o->hw, o->profile, &hw));
    zaya_size_step_pred p;
    zaya_status s;
    if ((s = zaya_size_hw_set_dtype(&hw, dtype)) != ZAYA_OK || (s = zaya_size_predict_step(&a, &hw, &so, &p)) != ZAYA_OK) {
        zaya_size_hw_free(&hw);
        return s;
    }
    /* Gradient accumulation repeats everything but the optimizer step. */
    double accum = (double)(batch / micro), fb = p.gemm_s + p.attn_s + p.memop_s;
    double pred_s = accum * fb + p.optimizer_s;

    char names[MAX_SOURCES][64], run_path[1024], train_dir[1024], log[1024], metrics[1024], exe[1024];
    int nsrc = 0;
    if ((s = find_sources(data, names, &nsrc)) != ZAYA_OK || (s = zaya_mkdir_p(o->out)) != ZAYA_OK ||
        (s = zaya_path_join(run_path, sizeof run_path, o->out, "run.json")) != ZAYA_OK ||
        (s = zaya_path_join(train_dir, sizeof train_dir, o->out, "train")) != ZAYA_OK ||
        (s = fresh(train_dir)) != ZAYA_OK || (s = zaya_path_join(log, sizeof log, o->out, "train.log")) != ZAYA_OK ||
        (s = zaya_path_join(metrics, sizeof metrics, train_dir, "metrics.jsonl")) != ZAYA_OK ||
        (s = write_run(run_path, names, nsrc, batch, seq, steps)) != ZAYA_OK) {
        zaya_size_hw_free(&hw);
        return s;
    }
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el <= 0) {
        zaya_size_hw_free(&hw);
        return zaya_error_set(ZAYA_EIO, "/proc/self/exe: %s", strerror(errno));
    }
    exe[el] = 0;
    char nsteps[32], nmicro[32], nthreads[32];
    snprintf(nsteps, sizeof nsteps, "%lld", (long long)steps);
    snprintf(nmicro, sizeof nmicro, "%lld", (long long)micro);
    snprintf(nthreads, sizeof nthreads, "%d", threads);
    char *cargv[] = {exe, "train", "-o", train_dir, "-c", (char *)path, "--run", run_path, "--data", (char *)data,
                     "--max-steps", nsteps, "--micro-batch", nmicro, "--dtype", (char *)dtype, "--optimizer",
                     (char *)optname, "--eval-every", "0", "--eval-batches", "1", "--samples", "0", "--no-resume", "-q",
                     threads > 0 ? "--threads" : NULL, nthreads, NULL};
    zaya_threads_init(threads);
    zaya_dtype dt = !strcmp(dtype, "bf16") ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32;
    double peak_before = zaya_bench_matmul_peak_gflops(dt);
    fprintf(out, "measuring: %s train ... (%lld steps of %lld x %lld, micro-batch %lld, %s, %s); log %s\n", exe,
           (long long)steps, (long long)batch, (long long)seq, (long long)micro, dtype, optname, log);
    fflush(out);
    double *ms = malloc(MAX_STEPS * sizeof *ms);
    int n = 0;
    if (!ms) s = zaya_error_set(ZAYA_ENOMEM, "size validate: step times");
    if (s != ZAYA_OK || (s = run_child(cargv, log)) != ZAYA_OK || (s = read_steps(metrics, warmup, batch, ms, &n)) != ZAYA_OK) {
        free(ms);
        zaya_size_hw_free(&hw);
        return s;
    }
    double peak_after = zaya_bench_matmul_peak_gflops(dt);
    double peak_now = peak_before > 0 && peak_after > 0 ? 0.5 * (peak_before + peak_after) : 0;
    double peak_prof = (hw.act_bf16 ? hw.peak_bf16 : hw.peak_f32) / 1e9;
    double load = peak_now > 0 ? peak_prof / peak_now : 1;
    double mean = 0;
    for (int i = 0; i < n; i++) mean += ms[i];
    mean /= n;
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    double ratio = 1e3 * pred_s / median;

    fprintf(out, "%s on %s (%s), %s GEMMs, %s\n", path, hw.name, hw.source, dtype, optname);
    fprintf(out, "predicted step: %.1f ms = %.0f x (GEMMs %.1f at %.1f%% of peak + attention %.1f + memory-bound %.1f) + "
           "optimizer %.1f (Newton-Schulz %.1f)\n",
           1e3 * pred_s, accum, 1e3 * p.gemm_s, 100 * p.gemm_eff, 1e3 * p.attn_s, 1e3 * p.memop_s, 1e3 * p.optimizer_s,
           1e3 * p.optimizer_ns_s);
    fprintf(out, "measured step:  %.1f ms median over steps %lld..%lld (mean %.1f, min %.1f, max %.1f)\n", median,
           (long long)warmup, (long long)steps - 1, mean, ms[0], ms[n - 1]);
    fprintf(out, "predicted / measured: %.2f (%s the 25%% target)\n", ratio, ratio >= 0.75 && ratio <= 1.25 ? "within" : "outside");
    fprintf(out, "matmul peak: profile %.1f GFLOP/s, now %.1f (before %.1f, after %.1f): machine %.2fx slower than profiled;\n"
           "load-adjusted predicted / measured: %.2f\n",
           peak_prof, peak_now, peak_before, peak_after, load, ratio * load);

    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "config", path);
    cJSON_AddStringToObject(root, "profile", hw.source);
    cJSON_AddStringToObject(root, "dtype", dtype);
    cJSON_AddStringToObject(root, "optimizer", optname);
    cJSON_AddNumberToObject(root, "batch", (double)batch);
    cJSON_AddNumberToObject(root, "micro_batch", (double)micro);
    cJSON_AddNumberToObject(root, "seq", (double)seq);
    cJSON_AddNumberToObject(root, "steps", (double)steps);
    cJSON_AddNumberToObject(root, "warmup", (double)warmup);
    cJSON *pj = cJSON_AddObjectToObject(root, "predicted");
    cJSON_AddNumberToObject(pj, "step_ms", 1e3 * pred_s);
    cJSON_AddNumberToObject(pj, "accumulation", accum);
    cJSON_AddNumberToObject(pj, "gemm_ms", 1e3 * p.gemm_s);
    cJSON_AddNumberToObject(pj, "gemm_eff", p.gemm_eff);
    cJSON_AddNumberToObject(pj, "attention_ms", 1e3 * p.attn_s);
    cJSON_AddNumberToObject(pj, "memory_ops_ms", 1e3 * p.memop_s);
    cJSON_AddNumberToObject(pj, "optimizer_ms", 1e3 * p.optimizer_s);
    cJSON_AddNumberToObject(pj, "newton_schulz_ms", 1e3 * p.optimizer_ns_s);
    cJSON *mj = cJSON_AddObjectToObject(root, "measured");
    cJSON_AddNumberToObject(mj, "step_ms_median", median);
    cJSON_AddNumberToObject(mj, "step_ms_mean", mean);
    cJSON_AddNumberToObject(mj, "step_ms_min", ms[0]);
    cJSON_AddNumberToObject(mj, "step_ms_max", ms[n - 1]);
    cJSON_AddNumberToObject(mj, "samples", n);
    cJSON_AddNumberToObject(root, "ratio", ratio);
    cJSON *lj = cJSON_AddObjectToObject(root, "load");
    cJSON_AddNumberToObject(lj, "profile_peak_gflops", peak_prof);
    cJSON_AddNumberToObject(lj, "peak_gflops_before", peak_before);
    cJSON_AddNumberToObject(lj, "peak_gflops_after", peak_after);
    cJSON_AddNumberToObject(lj, "slowdown", load);
    cJSON_AddNumberToObject(lj, "adjusted_ratio", ratio * load);
    char jpath[1024];
    s = zaya_path_join(jpath, sizeof jpath, o->out, "validate.json");
    if (s == ZAYA_OK) s = zaya_json_write_file(jpath, root, 1);
    cJSON_Delete(root);
    zaya_size_hw_free(&hw);
    free(ms);
    ZAYA_TRY(s);
    fprintf(out, "wrote %s\n", jpath);
    return ZAYA_OK;
}
