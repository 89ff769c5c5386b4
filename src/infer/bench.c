/* `zaya bench infer` (zaya_infer_bench_run): llama-bench-style prefill (pp) and decode (tg) throughput of the inference engine
 * at several context depths and batch sizes, against the memory-bandwidth bound of decoding: the
 * bytes of active weights + KV cache read per decode step divided by a STREAM triad bandwidth
 * measured in the same run. Tokenization and sampling are excluded (fixed token ids are fed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/bench_mem.h"
#include "zaya/fs.h"
#include "zaya/infer.h"
#include "zaya/infer_bench.h"
#include "zaya/infer_model.h"
#include "zaya/infer_weights.h"
#include "zaya/sysinfo.h"
#include "zaya/json.h"
#include "zaya/plot.h"
#include "zaya/rng.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

#define MAXL ZAYA_INFER_BENCH_MAX_LIST

typedef struct row {
    char dtype[8], test[24], kernel[8];
    int64_t batch, depth, tokens;
    double mean, sd, bound, frac; /* tok/s; bound and fraction for decode rows (0 otherwise) */
    double bytes;                 /* bytes read per decode step */
    double frac_sd, bw;           /* spread of the per-repetition fractions; mean triad GB/s beside them */
} row;

typedef struct bench {
    zaya_infer *e;
    int32_t *toks;
    int64_t *slots, *n;
    int64_t V;
} bench;

/* Fills every slot of the batch with `depth` tokens (untimed). */
static zaya_status fill_depth(bench *b, int64_t batch, int64_t depth) {
    for (int64_t s = 0; s < batch; s++) {
        zaya_infer_reset(b->e, s);
        b->slots[s] = s;
        b->n[s] = depth;
    }
    if (depth == 0) return ZAYA_OK;
    return zaya_infer_step(b->e, batch, b->slots, b->n, b->toks, NULL, 0);
}

static void stats(const double *x, int n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = s / n;
    for (int i = 0; i < n; i++) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0.0;
}

/* decode.png: decode tokens/s against depth, one line per (dtype, kernel, batch). */
static void plot_decode(const row *rows, int nrows, const char *out, FILE *outf) {
    enum { MAXS = 32 };
    double xs[MAXS][MAXL], ys[MAXS][MAXL];
    char titles[MAXS][48];
    zaya_plot_series sr[MAXS];
    int ns = 0;
    for (int i = 0; i < nrows; i++) {
        const row *w = &rows[i];
        if (w->bound <= 0) continue;
        char t[48];
        snprintf(t, sizeof t, "%.7s %.7s b=%lld", w->dtype, w->kernel, (long long)w->batch);
        int k = 0;
        while (k < ns && strcmp(titles[k], t)) k++;
        if (k == ns) {
            if (ns == MAXS) continue;
            snprintf(titles[ns], sizeof titles[ns], "%s", t);
            sr[ns] = (zaya_plot_series){titles[ns], xs[ns], ys[ns], 0};
            ns++;
        }
        if (sr[k].n < MAXL) {
            xs[k][sr[k].n] = (double)w->depth;
            ys[k][sr[k].n++] = w->mean;
        }
    }
    char png[1024];
    zaya_plot_opts po = {"decode throughput", "context depth (tokens)", "tokens/s", 0, 0, 1};
    if (ns == 0 || zaya_path_join(png, sizeof png, out, "decode.png") != ZAYA_OK) return;
    if (zaya_plot_lines(png, &po, sr, ns) != ZAYA_OK)
        fprintf(stderr, "zaya bench infer: warning: no plot: %s\n", zaya_error_message());
    else
        fprintf(outf, "plot: %s\n", png);
}

zaya_status zaya_infer_bench_run(const zaya_infer_bench_opts *opt, FILE *outf) {
    zaya_infer_model_opts mo = {.checkpoint = opt->checkpoint, .config = opt->config, .random_init = opt->checkpoint ? -1 : 0};
    if (opt->checkpoint) mo.config = NULL;
    const char *out = opt->out;
    const int64_t ntg = opt->gen, triad_mib = opt->triad_mib;
    const int reps = opt->reps, threads = opt->threads, gemv_only = opt->gemv_only;
    const int np = opt->nprompt, nd = opt->ndepth, nb = opt->nbatch;
    const int64_t *P = opt->prompt, *Dp = opt->depth, *Bs = opt->batch;
    if (np < 1 || nd < 1 || nb < 1 || np > MAXL || nd > MAXL || nb > MAXL || 2 * nb * nd * (np + 2) > 1024 || ntg < 1 ||
        reps < 1 || triad_mib < 1 || (!opt->f32 && !opt->bf16))
        return zaya_error_set(ZAYA_EINVAL, "bench infer: 1..%d prompt lengths, depths and batch sizes (at most 1024 rows), "
                              "gen, reps and triad_mib >= 1, and a dtype", MAXL);
    const char *dts[2];
    int ndt = 0;
    if (opt->f32) dts[ndt++] = "f32";
    if (opt->bf16) dts[ndt++] = "bf16";
    const int nth = zaya_threads_init(threads);
    zaya_status ms = zaya_mkdir_p(out);
    if (ms != ZAYA_OK) return zaya_error_context(ms, "output directory");

    int64_t maxp = 0, maxd = 0, maxb = 0;
    for (int i = 0; i < np; i++) maxp = P[i] > maxp ? P[i] : maxp;
    for (int i = 0; i < nd; i++) maxd = Dp[i] > maxd ? Dp[i] : maxd;
    for (int i = 0; i < nb; i++) maxb = Bs[i] > maxb ? Bs[i] : maxb;

    /* the bandwidth is measured before, between and after the dtypes; the best is the bound (the
     * machine may be shared, and a noisy low triad would flatter the fractions) */
    fprintf(stderr, "measuring STREAM triad (%lld MiB arrays, %d threads)...\n", (long long)triad_mib, nth);
    zaya_mem_triad tri;
    ZAYA_TRY(zaya_mem_triad_init(&tri, triad_mib * 1048576 / 8));
    double bw = zaya_mem_triad_gbps(&tri, 5), bws[3] = {bw, NAN, NAN}; /* NAN: not measured (one dtype) */
    double *fr = malloc(sizeof(double) * (size_t)reps), *bwr = malloc(sizeof(double) * (size_t)reps);

    row rows[1024];
    int nrows = 0;
    zaya_status err = ZAYA_OK;
    for (int di = 0; di < ndt; di++) {
        zaya_infer_model cm;
        mo.dtype = dts[di];
        if ((err = zaya_infer_model_open(&mo, &cm)) != ZAYA_OK) {
            err = zaya_error_context(err, "model");
            break;
        }
        const zaya_config *c = &cm.w.cfg;
        const int64_t tmax = maxd + (maxp > ntg ? maxp : ntg);
        if (tmax > c->max_position_embeddings) {
            err = zaya_error_set(ZAYA_ERANGE, "depth %lld + %lld tokens exceeds max_position_embeddings %lld",
                                 (long long)maxd, (long long)(tmax - maxd), (long long)c->max_position_embeddings);
            zaya_infer_model_close(&cm);
            break;
        }
        bench b = {0};
        zaya_infer_opts io = {.max_seqs = maxb, .max_len = tmax, .max_step_tokens = maxb * (maxp > maxd ? maxp : maxd),
                              .gemv = 1};
        if ((err = zaya_infer_init_weights(&b.e, &cm.w, &io)) != ZAYA_OK) {
            zaya_infer_model_close(&cm);
            err = zaya_error_context(err, "engine");
            break;
        }
        b.V = c->vocab_size;
        b.toks = malloc(sizeof(int32_t) * (size_t)(maxb * tmax));
        b.slots = malloc(sizeof(int64_t) * (size_t)maxb);
        b.n = malloc(sizeof(int64_t) * (size_t)maxb);
        float *logits = zaya_malloc(sizeof(float) * (size_t)(maxb * b.V));
        double *samples = malloc(sizeof(double) * (size_t)reps);
        for (int64_t i = 0; i < maxb * tmax; i++) b.toks[i] = (int32_t)(zaya_rng_u32_at(1, 0, (uint64_t)i) % (uint32_t)b.V);
        const double kv_tok = (double)zaya_infer_kv_bytes_per_token(b.e);
        fprintf(stderr, "%s %s: %.1f MiB active weights per token (1 expert/block), KV %lld B/token, state %lld B/seq\n",
                c->name, dts[di], zaya_infer_weights_token_bytes(&cm.w, 1.0) / 1048576.0, (long long)zaya_infer_kv_bytes_per_token(b.e),
                (long long)zaya_infer_state_bytes_per_seq(b.e));
        zaya_status st = ZAYA_OK;
        for (int bi = 0; bi < nb && st == ZAYA_OK; bi++)
            for (int dd = 0; dd < nd && st == ZAYA_OK; dd++) {
                const int64_t B = Bs[bi], d = Dp[dd];
                /* prefill */
                for (int pi = 0; pi < np && st == ZAYA_OK; pi++) {
                    if (d + P[pi] > tmax) continue;
                    for (int r = 0; r < reps && st == ZAYA_OK; r++) {
                        st = fill_depth(&b, B, d);
                        for (int64_t s = 0; s < B; s++) b.n[s] = P[pi];
                        double t = zaya_now_s();
                        if (st == ZAYA_OK) st = zaya_infer_step(b.e, B, b.slots, b.n, b.toks, logits, 0);
                        samples[r] = (double)(B * P[pi]) / (zaya_now_s() - t);
                    }
                    row *w = &rows[nrows++];
                    *w = (row){.batch = B, .depth = d, .tokens = P[pi]};
                    snprintf(w->dtype, sizeof w->dtype, "%s", dts[di]);
                    snprintf(w->test, sizeof w->test, "pp%lld", (long long)P[pi]);
                    snprintf(w->kernel, sizeof w->kernel, "onednn");
                    stats(samples, reps, &w->mean, &w->sd);
                }
                /* decode: own GEMV, then oneDNN at M = batch */
                for (int k = 0; k < (gemv_only ? 1 : 2) && st == ZAYA_OK; k++) {
                    zaya_infer_set_gemv(b.e, k == 0);
                    for (int r = 0; r < reps && st == ZAYA_OK; r++) {
                        st = fill_depth(&b, B, d);
                        for (int64_t s = 0; s < B; s++) b.n[s] = 1;
                        bwr[r] = zaya_mem_triad_gbps(&tri, 2); /* bandwidth now, next to this sample */
                        double t = zaya_now_s();
                        for (int64_t i = 0; i < ntg && st == ZAYA_OK; i++)
                            st = zaya_infer_step(b.e, B, b.slots, b.n, b.toks + i * B, logits, 0);
                        samples[r] = (double)(B * ntg) / (zaya_now_s() - t);
                    }
                    row *w = &rows[nrows++];
                    *w = (row){.batch = B, .depth = d, .tokens = ntg};
                    snprintf(w->dtype, sizeof w->dtype, "%s", dts[di]);
                    snprintf(w->test, sizeof w->test, "tg%lld", (long long)ntg);
                    snprintf(w->kernel, sizeof w->kernel, "%s", k == 0 ? "gemv" : "onednn");
                    stats(samples, reps, &w->mean, &w->sd);
                    /* bytes per step: weights (distinct experts expected under uniform routing) + KV of
                     * every sequence at the mean context of the test */
                    const double E = (double)c->num_experts;
                    const double experts = E * (1.0 - pow(1.0 - 1.0 / E, (double)B));
                    const double ctx = (double)d + (double)(ntg + 1) / 2.0;
                    const double bytes = zaya_infer_weights_token_bytes(&cm.w, experts) + (double)B * ctx * kv_tok;
                    w->bytes = bytes;
                    for (int r = 0; r < reps; r++) fr[r] = samples[r] / ((double)B / (bytes / (bwr[r] * 1e9)));
                    double fm, bm, bsd;
                    stats(fr, reps, &fm, &w->frac_sd);
                    stats(bwr, reps, &bm, &bsd);
                    w->frac = fm;
                    w->bw = bm;
                    w->bound = (double)B / (bytes / (bm * 1e9));
                }
                zaya_infer_set_gemv(b.e, 1);
            }
        free(b.toks), free(b.slots), free(b.n), free(samples);
        zaya_free(logits);
        zaya_infer_free(b.e);
        zaya_infer_model_close(&cm);
        if (st != ZAYA_OK) {
            err = zaya_error_context(st, "benchmark step");
            break;
        }
        bws[1 + (di > 0)] = zaya_mem_triad_gbps(&tri, 5);
        bw = bws[1 + (di > 0)] > bw ? bws[1 + (di > 0)] : bw;
    }
    zaya_mem_triad_free(&tri);
    free(fr), free(bwr);
    ZAYA_TRY(err);
    const double rss = (double)zaya_sysinfo_peak_rss_bytes();

    /* table, infer.json, infer.csv */
    char bwt[3][16];
    for (int i = 0; i < 3; i++) snprintf(bwt[i], sizeof bwt[i], isnan(bws[i]) ? "-" : "%.1f", bws[i]);
    fprintf(outf, "model %s, %d threads, STREAM triad %.1f GB/s (best of %s / %s / %s measured before, between, after;\n"
           "-: not measured, one dtype ran); decode rows: triad measured next to every repetition; bound at the mean\n"
           "triad, fraction = mean of the per-repetition fractions\n",
           mo.checkpoint ? mo.checkpoint : mo.config, nth, bw, bwt[0], bwt[1], bwt[2]);
    fprintf(outf, "peak RSS %.1f MiB (the largest dtype's weights + engine + the triad arrays)\n\n", rss / 1048576.0);
    fprintf(outf, "| dtype | test  | kernel | batch | depth |          t/s | triad GB/s | bound t/s |   of bound |\n");
    fprintf(outf, "|-------|-------|--------|------:|------:|-------------:|-----------:|----------:|-----------:|\n");
    for (int i = 0; i < nrows; i++) {
        const row *w = &rows[i];
        char bound[16] = "", frac[24] = "", tb[16] = "";
        if (w->bound > 0) {
            snprintf(bound, sizeof bound, "%.1f", w->bound);
            snprintf(frac, sizeof frac, "%.0f%% ± %.0f", 100 * w->frac, 100 * w->frac_sd);
            snprintf(tb, sizeof tb, "%.1f", w->bw);
        }
        fprintf(outf, "| %-5s | %-5s | %-6s | %5lld | %5lld | %7.1f ± %4.1f | %10s | %9s | %10s |\n", w->dtype, w->test,
               w->kernel, (long long)w->batch, (long long)w->depth, w->mean, w->sd, tb, bound, frac);
    }
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "results");
    cJSON_AddStringToObject(root, "model", mo.checkpoint ? mo.checkpoint : mo.config);
    cJSON_AddNumberToObject(root, "threads", nth);
    cJSON_AddNumberToObject(root, "triad_gbps", bw);
    cJSON_AddNumberToObject(root, "peak_rss_bytes", rss);
    cJSON *tr = cJSON_AddArrayToObject(root, "triad_samples_gbps");
    for (int i = 0; i < 3; i++) cJSON_AddItemToArray(tr, isnan(bws[i]) ? cJSON_CreateNull() : cJSON_CreateNumber(bws[i]));
    cJSON_AddNumberToObject(root, "reps", reps);
    char csv[65536];
    size_t o = (size_t)snprintf(csv, sizeof csv, "dtype,test,kernel,batch,depth,tokens,tps_mean,tps_stddev,triad_gbps,bound_tps,fraction,fraction_stddev\n");
    for (int i = 0; i < nrows; i++) {
        const row *w = &rows[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "dtype", w->dtype);
        cJSON_AddStringToObject(j, "test", w->test);
        cJSON_AddStringToObject(j, "kernel", w->kernel);
        cJSON_AddNumberToObject(j, "batch", (double)w->batch);
        cJSON_AddNumberToObject(j, "depth", (double)w->depth);
        cJSON_AddNumberToObject(j, "tokens", (double)w->tokens);
        cJSON_AddNumberToObject(j, "tps_mean", w->mean);
        cJSON_AddNumberToObject(j, "tps_stddev", w->sd);
        if (w->bound > 0) {
            cJSON_AddNumberToObject(j, "bound_tps", w->bound);
            cJSON_AddNumberToObject(j, "fraction_of_bound", w->frac);
            cJSON_AddNumberToObject(j, "fraction_stddev", w->frac_sd);
            cJSON_AddNumberToObject(j, "triad_gbps", w->bw);
        }
        cJSON_AddItemToArray(arr, j);
        if (o < sizeof csv)
            o += (size_t)snprintf(csv + o, sizeof csv - o, "%s,%s,%s,%lld,%lld,%lld,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f\n",
                                  w->dtype, w->test, w->kernel, (long long)w->batch, (long long)w->depth,
                                  (long long)w->tokens, w->mean, w->sd, w->bw, w->bound, w->frac, w->frac_sd);
    }
    char pj[1024], pc[1024];
    zaya_status ws;
    if ((ws = zaya_path_join(pj, sizeof pj, out, "infer.json")) != ZAYA_OK || (ws = zaya_json_write_file(pj, root, 1)) != ZAYA_OK ||
        (ws = zaya_path_join(pc, sizeof pc, out, "infer.csv")) != ZAYA_OK ||
        (ws = zaya_write_file_atomic(pc, csv, o < sizeof csv ? o : sizeof csv - 1)) != ZAYA_OK) {
        ws = zaya_error_context(ws, "writing results");
    } else {
        fprintf(outf, "\nresults: %s, %s\n", pj, pc);
    }
    cJSON_Delete(root);
    if (ws == ZAYA_OK) plot_decode(rows, nrows, out, outf);
    return ws;
}
