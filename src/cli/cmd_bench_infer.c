/* zaya bench infer: llama-bench-style prefill (pp) and decode (tg) throughput of the inference engine
 * at several context depths and batch sizes, against the memory-bandwidth bound of decoding: the
 * bytes of active weights + KV cache read per decode step divided by a STREAM triad bandwidth
 * measured in the same run. Tokenization and sampling are excluded (fixed token ids are fed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/infer_model.h"
#include "zaya/alloc.h"
#include "zaya/bench_mem.h"
#include "zaya/fs.h"
#include "zaya/infer.h"
#include "zaya/infer_weights.h"
#include "zaya/sysinfo.h"
#include "zaya/json.h"
#include "zaya/plot.h"
#include "zaya/rng.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

#define MAXL 16

static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    while (*s && n < max) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0) return -1;
        out[n++] = v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return n;
}

typedef struct row {
    char dtype[8], test[16], kernel[8];
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
static void plot_decode(const row *rows, int nrows, const char *out) {
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
        printf("plot: %s\n", png);
}

int zaya_cmd_bench_infer(int argc, char **argv) {
    zaya_infer_model_opts mo = {.config = "zaya1-small", .random_init = 0};
    const char *dtypes = "f32,bf16", *plist = "128", *dlist = "0,512", *blist = "1,4", *out = "results/bench-infer";
    int64_t ntg = 32, triad_mib = 128;
    int reps = 3, threads = 0, gemv_only = 0;
    zaya_flag flags[] = {
        {"config", 'c', ZAYA_FLAG_STRING, &mo.config, "SPEC", "preset or config.json (default: zaya1-small)"},
        {"checkpoint", 0, ZAYA_FLAG_STRING, &mo.checkpoint, "PATH", "model checkpoint instead of random weights"},
        {"dtype", 0, ZAYA_FLAG_STRING, &dtypes, "LIST", "weight dtypes (default: f32,bf16)"},
        {"prompt", 'p', ZAYA_FLAG_STRING, &plist, "LIST", "prompt lengths for prefill (default: 128)"},
        {"gen", 'n', ZAYA_FLAG_I64, &ntg, "N", "decoded tokens per decode test (default: 32)"},
        {"depth", 'd', ZAYA_FLAG_STRING, &dlist, "LIST", "context already cached before each test (default: 0,512)"},
        {"batch", 'b', ZAYA_FLAG_STRING, &blist, "LIST", "sequences per step (default: 1,4)"},
        {"reps", 'r', ZAYA_FLAG_INT, &reps, "R", "repetitions, mean +- stddev (default: 3)"},
        {"triad-mib", 0, ZAYA_FLAG_I64, &triad_mib, "MIB", "size of each STREAM triad array (default: 128)"},
        {"gemv-only", 0, ZAYA_FLAG_BOOL, &gemv_only, NULL, "decode with the own GEMV only (skip the oneDNN M=1 rows)"},
        ZAYA_FLAG_OUTDIR(&out, "results/bench-infer"),
        ZAYA_FLAG_THREADS(&threads),
    };
    zaya_cmd_spec spec = {"bench infer", "prefill and decode tokens/s vs the memory-bandwidth bound", "[options]",
                          "pp<P>: prefill P tokens per sequence; tg<N>: N decode steps; both after <depth> cached "
                          "tokens. Decode rows report the bound = batch / ((active weight bytes + KV bytes read) / "
                          "triad bandwidth) and the fraction of it achieved, with the own GEMV and with oneDNN at M=1.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    int64_t P[MAXL], Dp[MAXL], Bs[MAXL];
    int np = parse_list(plist, P, MAXL), nd = parse_list(dlist, Dp, MAXL), nb = parse_list(blist, Bs, MAXL);
    if (np <= 0 || nd <= 0 || nb <= 0) return zaya_flags_usage_error(&spec, "-p, -d and -b take comma-separated integers");
    for (int i = 0; i < nb; i++)
        if (Bs[i] < 1) return zaya_flags_usage_error(&spec, "batch sizes must be >= 1");
    for (int i = 0; i < np; i++)
        if (P[i] < 1) return zaya_flags_usage_error(&spec, "prompt lengths must be >= 1");
    if (2 * nb * nd * (np + 2) > 1024) return zaya_flags_usage_error(&spec, "too many combinations of -p, -d and -b");
    if (ntg < 1 || reps < 1 || triad_mib < 1) return zaya_flags_usage_error(&spec, "-n, -r and --triad-mib must be >= 1");
    if (mo.checkpoint) mo.config = NULL, mo.random_init = -1;
    const char *dts[2];
    int ndt = 0;
    if (strstr(dtypes, "f32")) dts[ndt++] = "f32";
    if (strstr(dtypes, "bf16")) dts[ndt++] = "bf16";
    if (ndt == 0) return zaya_flags_usage_error(&spec, "--dtype takes f32, bf16 or f32,bf16");
    const int nth = zaya_threads_init(threads);
    if (zaya_mkdir_p(out) != ZAYA_OK) return zaya_cli_error("bench infer", "output directory: %s", zaya_error_message());

    int64_t maxp = 0, maxd = 0, maxb = 0;
    for (int i = 0; i < np; i++) maxp = P[i] > maxp ? P[i] : maxp;
    for (int i = 0; i < nd; i++) maxd = Dp[i] > maxd ? Dp[i] : maxd;
    for (int i = 0; i < nb; i++) maxb = Bs[i] > maxb ? Bs[i] : maxb;

    /* the bandwidth is measured before, between and after the dtypes; the best is the bound (the
     * machine may be shared, and a noisy low triad would flatter the fractions) */
    fprintf(stderr, "measuring STREAM triad (%lld MiB arrays, %d threads)...\n", (long long)triad_mib, nth);
    zaya_mem_triad tri;
    if (zaya_mem_triad_init(&tri, triad_mib * 1048576 / 8) != ZAYA_OK) {
        return zaya_cli_error("bench infer", NULL);
    }
    double bw = zaya_mem_triad_gbps(&tri, 5), bws[3] = {bw, 0, 0};
    double *fr = malloc(sizeof(double) * (size_t)reps), *bwr = malloc(sizeof(double) * (size_t)reps);

    row rows[1024];
    int nrows = 0, code = 1, err = 0;
    for (int di = 0; di < ndt; di++) {
        zaya_infer_model cm;
        mo.dtype = dts[di];
        if (zaya_infer_model_open(&mo, &cm) != ZAYA_OK) {
            err = zaya_cli_error("bench infer", "model: %s", zaya_error_message());
            break;
        }
        const zaya_config *c = &cm.w.cfg;
        const int64_t tmax = maxd + (maxp > ntg ? maxp : ntg);
        if (tmax > c->max_position_embeddings) {
            zaya_error_set(ZAYA_ERANGE, "depth %lld + %lld tokens exceeds max_position_embeddings %lld",
                           (long long)maxd, (long long)(tmax - maxd), (long long)c->max_position_embeddings);
            zaya_infer_model_close(&cm);
            err = zaya_cli_error("bench infer", NULL);
            break;
        }
        bench b = {0};
        zaya_infer_opts io = {.max_seqs = maxb, .max_len = tmax, .max_step_tokens = maxb * (maxp > maxd ? maxp : maxd),
                              .gemv = 1};
        if (zaya_infer_init_weights(&b.e, &cm.w, &io) != ZAYA_OK) {
            zaya_infer_model_close(&cm);
            err = zaya_cli_error("bench infer", "engine: %s", zaya_error_message());
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
            err = zaya_cli_error("bench infer", "benchmark step: %s", zaya_error_message());
            break;
        }
        bws[1 + (di > 0)] = zaya_mem_triad_gbps(&tri, 5);
        bw = bws[1 + (di > 0)] > bw ? bws[1 + (di > 0)] : bw;
    }
    zaya_mem_triad_free(&tri);
    free(fr), free(bwr);
    if (err) return err;
    const double rss = (double)zaya_sysinfo_peak_rss_bytes();

    /* table, infer.json, infer.csv */
    printf("model %s, %d threads, STREAM triad %.1f GB/s (best of %.1f / %.1f / %.1f measured before, between, after)\n"
           "decode rows: triad measured next to every repetition; bound at the mean triad, fraction = mean of the\n"
           "per-repetition fractions\n",
           mo.checkpoint ? mo.checkpoint : mo.config, nth, bw, bws[0], bws[1], bws[2]);
    printf("peak RSS %.1f MiB (the largest dtype's weights + engine + the triad arrays)\n\n", rss / 1048576.0);
    printf("| dtype | test  | kernel | batch | depth |          t/s | triad GB/s | bound t/s |   of bound |\n");
    printf("|-------|-------|--------|------:|------:|-------------:|-----------:|----------:|-----------:|\n");
    for (int i = 0; i < nrows; i++) {
        const row *w = &rows[i];
        char bound[16] = "", frac[24] = "", tb[16] = "";
        if (w->bound > 0) {
            snprintf(bound, sizeof bound, "%.1f", w->bound);
            snprintf(frac, sizeof frac, "%.0f%% ± %.0f", 100 * w->frac, 100 * w->frac_sd);
            snprintf(tb, sizeof tb, "%.1f", w->bw);
        }
        printf("| %-5s | %-5s | %-6s | %5lld | %5lld | %7.1f ± %4.1f | %10s | %9s | %10s |\n", w->dtype, w->test,
               w->kernel, (long long)w->batch, (long long)w->depth, w->mean, w->sd, tb, bound, frac);
    }
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "results");
    cJSON_AddStringToObject(root, "model", mo.checkpoint ? mo.checkpoint : mo.config);
    cJSON_AddNumberToObject(root, "threads", nth);
    cJSON_AddNumberToObject(root, "triad_gbps", bw);
    cJSON_AddNumberToObject(root, "peak_rss_bytes", rss);
    cJSON *tr = cJSON_AddArrayToObject(root, "triad_samples_gbps");
    for (int i = 0; i < 3; i++) cJSON_AddItemToArray(tr, cJSON_CreateNumber(bws[i]));
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
    if (zaya_path_join(pj, sizeof pj, out, "infer.json") != ZAYA_OK || zaya_json_write_file(pj, root, 1) != ZAYA_OK ||
        zaya_path_join(pc, sizeof pc, out, "infer.csv") != ZAYA_OK ||
        zaya_write_file_atomic(pc, csv, o < sizeof csv ? o : sizeof csv - 1) != ZAYA_OK) {
        zaya_cli_error("bench infer", "writing results: %s", zaya_error_message());
    } else {
        printf("\nresults: %s, %s\n", pj, pc);
        code = 0;
    }
    cJSON_Delete(root);
    if (code == 0) plot_decode(rows, nrows, out);
    return code;
}
