/* `zaya bench model` / `bench train` (zaya_bench_model_run): forward and forward+backward of the ZAYA1 model, tokens/s, achieved GFLOP/s and
 * MFU against the matmul peak measured in the same run, and the same for the independent PyTorch
 * reference (tests/ref/zaya_ref.py --bench, PyTorch eager f32) on the same thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zaya/attention.h"
#include "zaya/bench.h"
#include "zaya/bench_model.h"
#include "zaya/config.h"
#include "zaya/engine.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/model.h"
#include "zaya/optim.h"
#include "zaya/proc.h"
#include "zaya/progress.h"
#include "zaya/threads.h"

#ifndef ZAYA_SOURCE_DIR
#define ZAYA_SOURCE_DIR "."
#endif
#define TORCH_PYTHON ZAYA_BENCH_MODEL_PYTHON

/* One timed step on the engine, over the CPU backend or a device's (bench train: a whole training step,
 * clipped Muon + AdamW update included). */
typedef struct engine_step_ctx {
    zaya_engine *e;
    const int32_t *ids, *tgt;
    int backward, train;
} engine_step_ctx;

static zaya_status engine_step_call(void *ctx) {
    engine_step_ctx *s = ctx;
    float loss = 0;
    if (s->backward) ZAYA_TRY(zaya_engine_zero_grad(s->e));
    ZAYA_TRY(zaya_engine_forward(s->e, s->ids, s->tgt, s->backward, &loss));
    if (s->backward) ZAYA_TRY(zaya_engine_backward(s->e));
    if (s->backward && s->train) {
        double sq = 0;
        ZAYA_TRY(zaya_engine_grad_sqnorm(s->e, &sq));
        ZAYA_TRY(zaya_engine_optim_step(s->e, 1e-4, zaya_optim_clip_scale(sqrt(sq), 1.0)));
    }
    return ZAYA_OK;
}

/* One side's figures. */
typedef struct mres {
    char who[16], dtype[8];
    double fwd_s, fwdbwd_s, peak; /* peak: GFLOP/s of the dtype, 0 when not applicable */
    double skip;                  /* zaya: fraction of token-blocks routed to the skip class */
    int ok;
} mres;

typedef struct mbench {
    int train; /* 1: `bench train` (steps include the optimizer) */
    zaya_backend *be; /* the engine's backend: the CPU one, or --device cuda's */
    int adamw_only; /* train: AdamW everywhere instead of Muon for the hidden matrices */
    FILE *out;
    const char *name; /* "bench model" or "bench train" */
    zaya_config cfg;
    int64_t B, T;
    int threads, reps, warmup;
    double fwd_flops, train_flops; /* per step */
} mbench;

static zaya_status run_zaya(const mbench *mb, zaya_dtype dt, mres *r) {
    zaya_model m;
    ZAYA_TRY(zaya_model_init(&m, &mb->cfg, dt));
    zaya_model_init_weights(&m, 1234);
    zaya_model_sync_weights(&m);
    zaya_status st = ZAYA_OK;
    int64_t n = mb->B * mb->T;
    int32_t *ids = malloc((size_t)n * sizeof(int32_t)), *tgt = malloc((size_t)n * sizeof(int32_t));
    if (st == ZAYA_OK && (!ids || !tgt)) st = zaya_error_set(ZAYA_ENOMEM, "bench model: token buffers");
    if (st == ZAYA_OK) {
        for (int64_t i = 0; i < n; i++) {
            ids[i] = (int32_t)((i * 2654435761u) % (uint64_t)mb->cfg.vocab_size);
            tgt[i] = (int32_t)((i * 40503u + 7) % (uint64_t)mb->cfg.vocab_size);
        }
        zaya_bench_opts o = {mb->warmup, mb->reps, 0, 0};
        zaya_bench_stats f, fb;
        zaya_optim_plan plan;
        zaya_optim opt;
        memset(&plan, 0, sizeof plan);
        memset(&opt, 0, sizeof opt);
        if (mb->train) {
            zaya_optim_config oc;
            zaya_optim_config_default(&oc);
            oc.muon_ns_dtype = dt;
            /* AdamW everywhere: the Muon tensors reclassified in a private copy of the table (as the trainer) */
            zaya_tensor_info *tensors = m.tensors, *copy = NULL;
            if (mb->adamw_only) {
                copy = malloc(sizeof *copy * (size_t)m.ntensors);
                if (!copy) st = zaya_error_set(ZAYA_ENOMEM, "bench train: optimizer plan");
                else memcpy(copy, m.tensors, sizeof *copy * (size_t)m.ntensors);
                for (int i = 0; copy && i < m.ntensors; i++)
                    if (copy[i].opt == ZAYA_OPT_MUON) copy[i].opt = ZAYA_OPT_ADAMW;
                tensors = copy;
            }
            if (st == ZAYA_OK) st = zaya_optim_plan_build(tensors, m.ntensors, 1, 0, &plan);
            free(copy);
            if (st == ZAYA_OK) st = zaya_optim_init(&opt, &plan, &oc, 0);
        }
        zaya_engine *eng = NULL;
        if (st == ZAYA_OK) {
            st = zaya_engine_init(&eng, mb->be, &m);
            if (st == ZAYA_OK) st = zaya_engine_plan(eng, mb->B, mb->T);
            if (st == ZAYA_OK && mb->train) st = zaya_engine_optim_init(eng, &opt);
        }
        engine_step_ctx ef = {eng, ids, tgt, 0, 0}, eb = {eng, ids, tgt, 1, mb->train};
        if (st == ZAYA_OK) st = zaya_bench_time(engine_step_call, &ef, &o, &f);
        if (st == ZAYA_OK) st = zaya_bench_time(engine_step_call, &eb, &o, &fb);
        if (st == ZAYA_OK) r->fwd_s = f.best_s, r->fwdbwd_s = fb.best_s, r->ok = 1;
        if (st == ZAYA_OK) memcpy(m.route_counts, zaya_engine_route_counts(eng),
                                         sizeof(int64_t) * (size_t)(mb->cfg.num_hidden_layers * (mb->cfg.num_experts + 1)));
        zaya_engine_free(eng);
        if (mb->train) {
            zaya_optim_free(&opt);
            zaya_optim_plan_free(&plan);
        }
        /* FLOPs count one expert per token; tokens routed to the skip class do less work. */
        const int64_t E1 = mb->cfg.num_experts + 1, L = mb->cfg.num_hidden_layers;
        double skipped = 0;
        for (int64_t l = 0; l < L && st == ZAYA_OK; l++) skipped += (double)m.route_counts[l * E1 + E1 - 1];
        r->skip = skipped / (double)(L * n);
    }
    free(ids), free(tgt);
    zaya_model_free(&m);
    return st;
}

/* The PyTorch peer: eager f32 and the variants the script ran, PyTorch's version and matmul rates. */
typedef struct torch_peer {
    mres eager;                /* eager f32 */
    mres var[3];               /* eager bf16 (autocast), torch.compile f32, torch.compile bf16 */
    char var_note[3][240];     /* why a variant has no figure */
    char version[32], python[4096];
    double mm_f32, mm_bf16;    /* torch.mm 2048^3 GFLOP/s */
    int fallback;              /* PyTorch < 2 (Debian's): not a fair peer */
} torch_peer;

static const char *const g_var_key[3] = {"eager_bf16", "compile_f32", "compile_bf16"};

static const char *peer_python(const zaya_bench_model_opts *o, char *buf, size_t cap) {
    if (o->torch_python) return o->torch_python;
    snprintf(buf, cap, "%s", ZAYA_SOURCE_DIR "/build/hfvenv/bin/python");
    return access(buf, X_OK) == 0 ? buf : TORCH_PYTHON;
}

/* Runs the PyTorch reference; on any failure leaves tp->eager.ok = 0 and writes a note. */
static void run_torch(const mbench *mb, const zaya_bench_model_opts *o, const char *script, const char *tmpdir,
                      torch_peer *tp, char *note, size_t cap) {
    mres *r = &tp->eager;
    r->ok = 0;
    char pybuf[4096];
    const char *python = peer_python(o, pybuf, sizeof pybuf);
    snprintf(tp->python, sizeof tp->python, "%s", python);
    if (access(python, X_OK) != 0) {
        snprintf(note, cap, "%s not found: reporting zaya only", python);
        return;
    }
    if (access(script, R_OK) != 0) {
        snprintf(note, cap, "PyTorch reference %s not found (use --torch-script): reporting zaya only", script);
        return;
    }
    char cfgpath[4096];
    cJSON *cj = zaya_config_to_json(&mb->cfg);
    if (!cj || zaya_path_join(cfgpath, sizeof cfgpath, tmpdir, "bench_model_config.json") != ZAYA_OK ||
        zaya_json_write_file(cfgpath, cj, 1) != ZAYA_OK) {
        cJSON_Delete(cj);
        snprintf(note, cap, "cannot write the config for PyTorch: %s", zaya_error_message());
        return;
    }
    cJSON_Delete(cj);
    char sB[24], sT[24], sreps[16], swarm[16], sthr[16], svar[96] = "variants=", stmo[32];
    snprintf(sB, sizeof sB, "%lld", (long long)mb->B);
    snprintf(sT, sizeof sT, "%lld", (long long)mb->T);
    snprintf(sreps, sizeof sreps, "%d", mb->reps);
    snprintf(swarm, sizeof swarm, "%d", mb->warmup);
    snprintf(sthr, sizeof sthr, "%d", mb->threads);
    snprintf(stmo, sizeof stmo, "timeout=%d", o->torch_timeout_s > 0 ? o->torch_timeout_s : 600);
    /* the variants of the dtypes zaya runs: bf16 autocast for a bf16 row, compile for both */
    const int want[3] = {o->bf16, o->f32 && !o->no_compile, o->bf16 && !o->no_compile};
    for (int v = 0; v < 3; v++)
        if (want[v]) snprintf(svar + strlen(svar), sizeof svar - strlen(svar), "%s%s", svar[9] ? "," : "", g_var_key[v]);
    char *argv[16] = {(char *)python, (char *)script, "--bench", cfgpath, sB, sT, sreps, swarm, sthr,
                      mb->train ? "train" : "fwdbwd", svar, stmo};
    int argc = 12;
    if (mb->adamw_only) argv[argc++] = "adamw";
    if (mb->be && !mb->be->is_host) argv[argc++] = "device=cuda"; /* the peer on the same GPU */
    argv[argc] = NULL;
    zaya_proc_opts po = {.capture_stderr = 1};
    zaya_proc_result pr;
    char *text = NULL;
    if (zaya_proc_capture(argv, &po, 1 << 22, &text, NULL, &pr) != ZAYA_OK) {
        snprintf(note, cap, "cannot start %s: %s", python, zaya_error_message());
        remove(cfgpath);
        return;
    }
    remove(cfgpath);
    char last[4096] = "", json[16384] = "";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '{') snprintf(json, sizeof json, "%s", line);
        else if (line[0]) snprintf(last, sizeof last, "%s", line);
    }
    free(text);
    int rc = zaya_proc_ok(&pr) ? 0 : 1;
    cJSON *j = json[0] ? cJSON_Parse(json) : NULL;
    double f = 0, fb = 0;
    if (rc != 0 || !j || zaya_json_get_f64(j, "forward_s", &f, 1) != ZAYA_OK ||
        zaya_json_get_f64(j, "fwdbwd_s", &fb, 1) != ZAYA_OK || f <= 0 || fb <= 0) {
        snprintf(note, cap, "PyTorch reference failed (%s): reporting zaya only", last[0] ? last : "no output");
        cJSON_Delete(j);
        return;
    }
    r->fwd_s = f, r->fwdbwd_s = fb, r->ok = 1;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "torch");
    snprintf(tp->version, sizeof tp->version, "%s", cJSON_IsString(ver) ? ver->valuestring : "?");
    tp->fallback = tp->version[0] < '2' && tp->version[1] == '.';
    zaya_json_get_f64(j, "mm_gflops_f32", &tp->mm_f32, 0);
    zaya_json_get_f64(j, "mm_gflops_bf16", &tp->mm_bf16, 0);
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(j, "variants");
    static const char *const who[3] = {"torch", "torch.compile", "torch.compile"};
    static const char *const dt[3] = {"bf16", "f32", "bf16"};
    for (int v = 0; v < 3; v++) {
        mres *m = &tp->var[v];
        memset(m, 0, sizeof *m);
        snprintf(m->who, sizeof m->who, "%s", who[v]);
        snprintf(m->dtype, sizeof m->dtype, "%s", dt[v]);
        if (!want[v]) continue;
        const cJSON *o1 = cJSON_GetObjectItemCaseSensitive(vars, g_var_key[v]);
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(o1, "error");
        double vf = 0, vb = 0;
        if (cJSON_IsString(err))
            snprintf(tp->var_note[v], sizeof tp->var_note[v], "%s", err->valuestring);
        else if (!o1 || zaya_json_get_f64(o1, "forward_s", &vf, 1) != ZAYA_OK ||
                 zaya_json_get_f64(o1, "fwdbwd_s", &vb, 1) != ZAYA_OK || vf <= 0 || vb <= 0)
            snprintf(tp->var_note[v], sizeof tp->var_note[v], "no figure in the reference's output");
        else
            m->fwd_s = vf, m->fwdbwd_s = vb, m->ok = 1;
    }
    cJSON_Delete(j);
}

static void print_res(const mbench *mb, const mres *r) {
    double tok = (double)(mb->B * mb->T);
    double gf = mb->fwd_flops / r->fwd_s * 1e-9, gt = mb->train_flops / r->fwdbwd_s * 1e-9;
    FILE *out = mb->out;
    fprintf(out, "%-13s %-5s %10.2f %12.0f %9.1f %10.2f %12.0f %9.1f", r->who, r->dtype, r->fwd_s * 1e3, tok / r->fwd_s, gf,
           r->fwdbwd_s * 1e3, tok / r->fwdbwd_s, gt);
    if (r->peak > 0) fprintf(out, " %6.1f%% %6.1f%%\n", 100 * gf / r->peak, 100 * gt / r->peak);
    else fprintf(out, " %7s %7s\n", "-", "-");
    fflush(out);
}

static cJSON *res_json(const mbench *mb, const mres *r) {
    double tok = (double)(mb->B * mb->T);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "impl", r->who);
    cJSON_AddStringToObject(o, "dtype", r->dtype);
    cJSON_AddNumberToObject(o, "forward_s", r->fwd_s);
    cJSON_AddNumberToObject(o, "fwdbwd_s", r->fwdbwd_s);
    cJSON_AddNumberToObject(o, "forward_tokens_per_s", tok / r->fwd_s);
    cJSON_AddNumberToObject(o, "fwdbwd_tokens_per_s", tok / r->fwdbwd_s);
    cJSON_AddNumberToObject(o, "forward_gflops", mb->fwd_flops / r->fwd_s * 1e-9);
    cJSON_AddNumberToObject(o, "fwdbwd_gflops", mb->train_flops / r->fwdbwd_s * 1e-9);
    if (!strcmp(r->who, "zaya")) cJSON_AddNumberToObject(o, "skip_fraction", r->skip);
    if (r->peak > 0) {
        cJSON_AddNumberToObject(o, "peak_gflops", r->peak);
        cJSON_AddNumberToObject(o, "forward_mfu", mb->fwd_flops / r->fwd_s * 1e-9 / r->peak);
        cJSON_AddNumberToObject(o, "fwdbwd_mfu", mb->train_flops / r->fwdbwd_s * 1e-9 / r->peak);
    }
    return o;
}

zaya_status zaya_bench_model_run(const zaya_bench_model_opts *o, FILE *out) {
    mbench mb = {0};
    const int train = o->train;
    mb.train = train;
    mb.adamw_only = train && o->adamw_only;
    mb.out = out;
    mb.name = train ? "bench train" : "bench model";
    const char *config = o->config, *outdir = o->out;
    const char *script = o->torch_script ? o->torch_script : ZAYA_SOURCE_DIR "/tests/ref/zaya_ref.py";
    const int64_t B = o->batch, T = o->seq;
    const int reps = o->iters, no_torch = o->no_torch;
    const int want[2] = {o->f32, o->bf16};
    if (B < 1 || T < 1 || reps < 1 || (!want[0] && !want[1]))
        return zaya_error_set(ZAYA_EINVAL, "%s: batch, seq and iters must be >= 1 and a dtype chosen", mb.name);
    ZAYA_TRY(zaya_config_resolve(config, &mb.cfg));
    if (T > mb.cfg.max_position_embeddings)
        return zaya_error_set(ZAYA_EINVAL, "--seq %lld exceeds max_position_embeddings %lld of %s", (long long)T,
                              (long long)mb.cfg.max_position_embeddings, config);
    mb.B = B, mb.T = T, mb.reps = reps, mb.warmup = 1;
    mb.threads = zaya_threads_init(o->threads);
    zaya_model_costs c = zaya_model_costs_at(&mb.cfg, T, 4);
    mb.fwd_flops = c.forward_flops * (double)(B * T);
    mb.train_flops = c.training_flops * (double)(B * T);

    zaya_status st = zaya_mkdir_p(outdir);
    mres res[8];
    int nres = 0;
    double peak[2] = {0, 0};
    char note[4200] = "";
    zaya_progress prog;
    zaya_progress_init(&prog, mb.name, "part", (want[0] + want[1]) * 2 + !no_torch);
    int64_t done = 0;
    static const int64_t psz[] = {1024, 1536};
    zaya_bench_opts po = {1, 3, 0, 0};
    zaya_device dev = {ZAYA_DEVICE_CPU, 0};
    if (st == ZAYA_OK && o->device) st = zaya_device_parse(o->device, &dev);
    if (o->engine) ZAYA_WARN("--engine is the default now (zaya's steps always run on the engine); the flag will go");
    if (st == ZAYA_OK) st = zaya_engine_backend_open(dev, &mb.be);
    for (int d = 0; d < 2 && st == ZAYA_OK; d++) {
        if (!want[d]) continue;
        if (mb.be) st = zaya_engine_backend_peak(mb.be, (zaya_dtype)d, &peak[d]);
        if (st == ZAYA_OK && peak[d] <= 0) st = zaya_bench_matmul_peak((zaya_dtype)d, psz, 2, &po, &peak[d], NULL);
        zaya_progress_update(&prog, ++done, d ? "bf16 peak" : "f32 peak");
        if (st != ZAYA_OK) break;
        mres *r = &res[nres++];
        memset(r, 0, sizeof *r);
        snprintf(r->who, sizeof r->who, "zaya"), snprintf(r->dtype, sizeof r->dtype, "%s", d ? "bf16" : "f32");
        r->peak = peak[d];
        st = run_zaya(&mb, (zaya_dtype)d, r);
        zaya_progress_update(&prog, ++done, d ? "zaya bf16" : "zaya f32");
    }
    torch_peer tp;
    memset(&tp, 0, sizeof tp);
    mres *tr = &tp.eager;
    snprintf(tr->who, sizeof tr->who, "torch"), snprintf(tr->dtype, sizeof tr->dtype, "f32");
    if (st == ZAYA_OK && !no_torch) {
        run_torch(&mb, o, script, outdir, &tp, note, sizeof note);
        tr->peak = peak[0];
        zaya_progress_update(&prog, ++done, "torch");
        if (tr->ok) res[nres++] = *tr;
        for (int v = 0; v < 3 && tr->ok; v++) {
            tp.var[v].peak = peak[strcmp(tp.var[v].dtype, "bf16") ? 0 : 1];
            if (tp.var[v].ok) res[nres++] = tp.var[v];
        }
    }
    if (st != ZAYA_OK) {
        zaya_backend_free(mb.be);
        return st;
    }
    zaya_progress_finish(&prog, NULL);
    fprintf(out, "# zaya %s: %s, batch %lld x seq %lld = %lld tokens, %d threads, best of %d\n", mb.name, mb.cfg.name,
           (long long)B, (long long)T, (long long)(B * T), mb.threads, reps);
    if (train)
        fprintf(out, "# \"f+b\" columns are whole training steps (forward, backward, optimizer update: %s)\n",
                mb.adamw_only ? "AdamW everywhere" : "Muon for hidden matrices + AdamW");
    fprintf(out, "# zaya rows: the engine on backend %s%s\n", mb.be->name,
                mb.be->is_host ? " (the CPU reference backend)" : "; peak: measured 8192^3 bf16 cuBLASLt GEMM (bf16), datasheet FP32 (f32)");
    fprintf(out, "# FLOPs per step: forward %.3f GFLOP, forward+backward %.3f GFLOP; peak f32 %.1f, bf16 %.1f GFLOP/s\n",
           mb.fwd_flops * 1e-9, mb.train_flops * 1e-9, peak[0], peak[1]);
    fprintf(out, "%-13s %-5s %10s %12s %9s %10s %12s %9s %7s %7s\n", "impl", "dtype", "fwd ms", "fwd tok/s", "fwd GF/s",
           "f+b ms", "f+b tok/s", "f+b GF/s", "fwd MFU", "f+b MFU");
    for (int i = 0; i < nres; i++) print_res(&mb, &res[i]);
    for (int i = 0; i < nres; i++)
        if (!strcmp(res[i].who, "zaya"))
            fprintf(out, "# zaya %s: %.1f%% of token-blocks took the skip class (FLOPs count one expert for every token)%s%s\n",
                   res[i].dtype, 100 * res[i].skip, strcmp(res[i].dtype, "bf16") || !mb.be->is_host ? "" : "; attention kernel: ",
                   strcmp(res[i].dtype, "bf16") || !mb.be->is_host ? "" : zaya_attention_bf16_impl(mb.cfg.head_dim));
    if (tr->ok) {
        fprintf(out, "# peer: PyTorch %s (%s), %s; its torch.mm at 2048^3: f32 %.1f, bf16 %.1f GFLOP/s (zaya's oneDNN "
                     "peak above)%s\n",
                tp.version, tp.python, "bf16 rows under torch.autocast", tp.mm_f32, tp.mm_bf16,
                tp.fallback ? "; FALLBACK PEER: PyTorch < 2 (Debian's, OpenBLAS) is not a fair peer: install PyTorch "
                              ">= 2.6 with `scripts/setup.sh --hf` or pass --torch-python"
                            : "");
        for (int v = 0; v < 3; v++)
            if (tp.var_note[v][0]) fprintf(out, "# peer %s %s: %s\n", tp.var[v].who, tp.var[v].dtype, tp.var_note[v]);
    }
    if (note[0]) fprintf(out, "# note: %s\n", note);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", train ? "zaya-bench-train" : "zaya-bench-model");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "config", mb.cfg.name);
    if (train) cJSON_AddStringToObject(root, "optimizer", mb.adamw_only ? "adamw" : "muon");
    cJSON_AddNumberToObject(root, "batch", (double)B);
    cJSON_AddNumberToObject(root, "seq", (double)T);
    cJSON_AddNumberToObject(root, "threads", mb.threads);
    cJSON_AddStringToObject(root, "backend", mb.be ? mb.be->name : "cpu-model");
    cJSON_AddNumberToObject(root, "iters", reps);
    cJSON_AddNumberToObject(root, "forward_flops", mb.fwd_flops);
    cJSON_AddNumberToObject(root, "fwdbwd_flops", mb.train_flops);
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (int i = 0; i < nres; i++) cJSON_AddItemToArray(arr, res_json(&mb, &res[i]));
    if (note[0]) cJSON_AddStringToObject(root, "note", note);
    cJSON *ratios = cJSON_AddArrayToObject(root, "torch_over_zaya");
    char csv[4096];
    size_t len = (size_t)snprintf(csv, sizeof csv, "impl,dtype,forward_s,fwdbwd_s,forward_tokens_per_s,fwdbwd_tokens_per_s\n");
    for (int i = 0; i < nres && len < sizeof csv; i++)
        len += (size_t)snprintf(csv + len, sizeof csv - len, "%s,%s,%.9g,%.9g,%.6g,%.6g\n", res[i].who, res[i].dtype,
                                res[i].fwd_s, res[i].fwdbwd_s, (double)(B * T) / res[i].fwd_s,
                                (double)(B * T) / res[i].fwdbwd_s);
    if (tr->ok) {
        cJSON_AddStringToObject(root, "torch_version", tp.version);
        cJSON_AddStringToObject(root, "torch_python", tp.python);
        cJSON_AddBoolToObject(root, "torch_fallback", tp.fallback);
        cJSON_AddNumberToObject(root, "torch_mm_gflops_f32", tp.mm_f32);
        cJSON_AddNumberToObject(root, "torch_mm_gflops_bf16", tp.mm_bf16);
        fprintf(out, "# speed-up over PyTorch (torch time / zaya time), %s:\n", train ? "training step" : "forward+backward");
        for (int i = 0; i < nres; i++) {
            if (strcmp(res[i].who, "zaya")) continue;
            for (int k = 0; k < nres; k++) {
                if (!strncmp(res[k].who, "zaya", 4) || (strcmp(res[k].dtype, res[i].dtype) && strcmp(res[k].dtype, "f32")))
                    continue; /* each zaya dtype against the same dtype and against eager/compiled f32 */
                double rf = res[k].fwd_s / res[i].fwd_s, rb = res[k].fwdbwd_s / res[i].fwdbwd_s;
                fprintf(out, "#   zaya %-4s vs %-13s %-4s: forward %.2fx, %s %.2fx\n", res[i].dtype, res[k].who,
                        res[k].dtype, rf, train ? "training step" : "forward+backward", rb);
                cJSON *q = cJSON_CreateObject();
                cJSON_AddStringToObject(q, "zaya_dtype", res[i].dtype);
                cJSON_AddStringToObject(q, "peer", res[k].who);
                cJSON_AddStringToObject(q, "peer_dtype", res[k].dtype);
                cJSON_AddNumberToObject(q, "forward", rf);
                cJSON_AddNumberToObject(q, "fwdbwd", rb);
                cJSON_AddItemToArray(ratios, q);
            }
        }
    }
    char path[4096];
    st = zaya_path_join(path, sizeof path, outdir, train ? "train.json" : "model.json");
    if (st == ZAYA_OK) st = zaya_json_write_file(path, root, 1);
    if (st == ZAYA_OK) st = zaya_path_join(path, sizeof path, outdir, train ? "train.csv" : "model.csv");
    if (st == ZAYA_OK) st = zaya_write_file_atomic(path, csv, strlen(csv));
    cJSON_Delete(root);
    zaya_backend_free(mb.be);
    ZAYA_TRY(st);
    fprintf(out, "# results written to %s (%s)\n", outdir, train ? "train.json, train.csv" : "model.json, model.csv");
    return ZAYA_OK;
}
