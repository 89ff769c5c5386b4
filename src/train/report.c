/* Trainer output: per-step lines and metrics.jsonl, validation passes, the end-of-run plots,
 * generated samples and summary.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/internal.h"
#include "zaya/fs.h"
#include "zaya/infer.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/plot.h"
#include "zaya/timer.h"

static void series_add(zaya_series *s, double x, double y) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        double *nx = realloc(s->x, sizeof(double) * (size_t)cap), *ny = realloc(s->y, sizeof(double) * (size_t)cap);
        if (!nx || !ny) {
            free(nx ? nx : s->x);
            free(ny ? ny : s->y);
            memset(s, 0, sizeof *s);
            return;
        }
        s->x = nx;
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->n++;
}

/* One row of L * E expert shares per logged step (the heatmap's columns). */
static void share_rows_add(zaya_train_history *h, double step, const double *share, int L, int E) {
    const size_t row = (size_t)L * (size_t)E;
    if (h->nshare == h->share_cap) {
        int cap = h->share_cap ? 2 * h->share_cap : 256;
        double *r = realloc(h->share_rows, sizeof(double) * row * (size_t)cap);
        if (!r) return;
        h->share_rows = r;
        double *st = realloc(h->share_steps, sizeof(double) * (size_t)cap);
        if (!st) return;
        h->share_steps = st;
        h->share_cap = cap;
    }
    h->num_experts = E;
    memcpy(h->share_rows + row * (size_t)h->nshare, share, sizeof(double) * row);
    h->share_steps[h->nshare++] = step;
}

static void series_free(zaya_series *s) {
    free(s->x);
    free(s->y);
    memset(s, 0, sizeof *s);
}

void zaya_train_history_free(zaya_train_history *h) {
    series_free(&h->loss);
    series_free(&h->lr);
    series_free(&h->tok_s);
    series_free(&h->val_mean);
    for (int i = 0; i < ZAYA_DATA_MAX_SOURCES; i++) series_free(&h->val[i]);
    for (int i = 0; i < h->nlayers; i++) series_free(&h->layer_max_share[i]);
    free(h->layer_max_share);
    free(h->share_rows);
    free(h->share_steps);
    memset(h, 0, sizeof *h);
}

/* A resumed run's history so far, from the metrics.jsonl its earlier attempts wrote: steps before
 * START (the last record of a step wins: an attempt that died after its last checkpoint logged steps
 * the next one redid) and validations up to START. Best effort: without the file the history starts
 * at START, as before. */
void zaya_train_history_load(zaya_trainer *t, const char *path, int64_t start) {
    FILE *f = fopen(path, "r");
    if (!f || start <= 0) {
        if (f) fclose(f);
        return;
    }
    const int ns = t->val_ds.nsources;
    const size_t n = (size_t)start + 1;
    double *loss = malloc(n * sizeof(double)), *lr = malloc(n * sizeof(double)), *tok = malloc(n * sizeof(double));
    double *val = malloc(n * (size_t)(ns + 1) * sizeof(double));
    char *have = calloc(n, 2);
    char *line = NULL;
    size_t cap = 0;
    while (loss && lr && tok && val && have && getline(&line, &cap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "step");
        const double sv = cJSON_IsNumber(st) ? st->valuedouble : -1;
        const cJSON *vl = cJSON_GetObjectItemCaseSensitive(j, "val_loss"), *l = cJSON_GetObjectItemCaseSensitive(j, "loss");
        if (sv >= 0 && sv <= (double)start && cJSON_IsNumber(vl)) {
            const size_t k = (size_t)sv;
            val[k * (size_t)(ns + 1)] = vl->valuedouble;
            for (int i = 0; i < ns; i++) {
                char key[96];
                snprintf(key, sizeof key, "val_%s", t->val_ds.src[i].name);
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
                val[k * (size_t)(ns + 1) + 1 + (size_t)i] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            }
            have[2 * k + 1] = 1;
        } else if (sv >= 0 && sv < (double)start && cJSON_IsNumber(l)) {
            const size_t k = (size_t)sv;
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "lr"), *b = cJSON_GetObjectItemCaseSensitive(j, "tok_s");
            loss[k] = l->valuedouble;
            lr[k] = cJSON_IsNumber(a) ? a->valuedouble : NAN;
            tok[k] = cJSON_IsNumber(b) ? b->valuedouble : NAN;
            have[2 * k] = 1;
        }
        cJSON_Delete(j);
    }
    fclose(f);
    zaya_train_history *h = &t->hist;
    for (size_t k = 0; have && loss && lr && tok && val && k < n; k++) {
        if (have[2 * k]) {
            series_add(&h->loss, (double)k, loss[k]);
            series_add(&h->lr, (double)k, lr[k]);
            series_add(&h->tok_s, (double)k, tok[k]);
        }
        if (have[2 * k + 1]) {
            series_add(&h->val_mean, (double)k, val[k * (size_t)(ns + 1)]);
            for (int i = 0; i < ns; i++) series_add(&h->val[i], (double)k, val[k * (size_t)(ns + 1) + 1 + (size_t)i]);
        }
    }
    free(line);
    free(loss);
    free(lr);
    free(tok);
    free(val);
    free(have);
}

void zaya_train_history_summary(const zaya_train_history *h, zaya_train_result *res) {
    if (h->val_mean.n) {
        res->first_val_loss = h->val_mean.y[0];
        res->last_val_loss = h->val_mean.y[h->val_mean.n - 1];
    }
    if (h->loss.n) {
        res->first_train_loss = h->loss.y[0];
        res->last_train_loss = h->loss.y[h->loss.n - 1];
    }
}

void zaya_train_log_step(zaya_trainer *t, const zaya_step_info *si, const zaya_step_metrics *sm, int64_t tokens,
                         double run_t0) {
    zaya_model_costs k = zaya_model_costs_at(&t->model.cfg, si->seq_len, 4);
    double tok_s = (double)sm->tokens / sm->seconds;
    double mfu = t->peak_gflops > 0 ? k.training_flops * tok_s / (t->peak_gflops * 1e9) : 0;
    const zaya_balance_stats *b = &sm->balance;
    const int L = (int)t->model.cfg.num_hidden_layers, E = (int)t->model.cfg.num_experts;
    const int moe = zaya_config_is_moe(&t->model.cfg); /* a dense-MLP model routes nothing: no load fields */
    fprintf(t->metrics,
            "{\"step\":%lld,\"phase\":%d,\"loss\":%.9g,\"grad_norm\":%.9g,\"lr\":%.6g,\"tokens\":%lld,\"tok_s\":%.1f,"
            "\"mfu\":%.4f,\"ms\":%.2f,\"skipped\":%d,\"seq\":%lld,\"batch\":%lld",
            (long long)t->step, si->phase, sm->loss, sm->grad_norm, sm->lr, (long long)tokens, tok_s, mfu,
            sm->seconds * 1e3, sm->skipped, (long long)si->seq_len, (long long)si->global_batch);
    if (moe) {
        fprintf(t->metrics,
                ",\"balance_max_share\":%.4f,\"balance_min_share\":%.4f,\"balance_max_vio\":%.4f,\"balance_entropy\":%.4f,"
                "\"layer_max_share\":[",
                b->max_share, b->min_share, b->max_vio, b->entropy);
        for (int l = 0; l < L; l++) fprintf(t->metrics, "%s%.4f", l ? "," : "", b->layer_max_share[l]);
        fprintf(t->metrics, "],\"layer_min_share\":[");
        for (int l = 0; l < L; l++) fprintf(t->metrics, "%s%.4f", l ? "," : "", b->layer[l].min_share);
        fprintf(t->metrics, "],\"layer_max_vio\":[");
        for (int l = 0; l < L; l++) fprintf(t->metrics, "%s%.4f", l ? "," : "", b->layer[l].max_vio);
        fprintf(t->metrics, "],\"layer_skip_share\":[");
        for (int l = 0; l < L; l++) fprintf(t->metrics, "%s%.4f", l ? "," : "", b->layer[l].skip_share);
        fprintf(t->metrics, "],\"expert_share\":[");
        for (int l = 0; l < L; l++) {
            fprintf(t->metrics, "%s[", l ? "," : "");
            for (int e = 0; e < E; e++) fprintf(t->metrics, "%s%.4f", e ? "," : "", b->expert_share[(int64_t)l * E + e]);
            fprintf(t->metrics, "]");
        }
        fprintf(t->metrics, "]");
    }
    if (sm->cp > 1)
        fprintf(t->metrics,
                ",\"cp\":%d,\"cp_halo_bytes\":%.0f,\"cp_gather_bytes\":%.0f,\"cp_scatter_bytes\":%.0f,\"cp_wait_ms\":%.3f",
                sm->cp, sm->cp_traffic.halo_bytes, sm->cp_traffic.gather_bytes, sm->cp_traffic.scatter_bytes,
                sm->cp_wait_s * 1e3);
    fprintf(t->metrics, ",\"comm_wait_ms\":%.3f,\"gather_ms\":%.3f,\"elapsed_s\":%.3f}\n", sm->comm_wait_s * 1e3,
            sm->gather_s * 1e3, zaya_now_s() - run_t0);
    fflush(t->metrics);

    zaya_train_history *h = &t->hist;
    if (moe && !h->layer_max_share) {
        h->layer_max_share = calloc((size_t)L, sizeof(zaya_series));
        h->nlayers = h->layer_max_share ? L : 0;
    }
    series_add(&h->loss, (double)t->step, sm->loss);
    series_add(&h->lr, (double)t->step, sm->lr);
    series_add(&h->tok_s, (double)t->step, tok_s);
    for (int l = 0; l < h->nlayers; l++) series_add(&h->layer_max_share[l], (double)t->step, b->layer_max_share[l]);
    if (moe) share_rows_add(h, (double)t->step, b->expert_share, L, E);

    if (!t->opts->quiet && (t->step % t->opts->log_every == 0 || sm->skipped)) {
        char comm[64];
        snprintf(comm, sizeof comm, " | comm wait %.0f ms", (sm->comm_wait_s + sm->gather_s) * 1e3);
        char load[96];
        if (moe) snprintf(load, sizeof load, "experts max %.2f min %.2f vio %.2f", b->max_share, b->min_share, b->max_vio);
        else snprintf(load, sizeof load, "dense MLP");
        printf("step %6lld | %-17.17s | loss %7.4f | gnorm %7.3f | lr %.2e | %7.0f tok/s | MFU %5.1f%% | %6.0f ms | "
               "%s%s%s\n",
               (long long)t->step, t->run.phases[si->phase].name, sm->loss, sm->grad_norm, sm->lr, tok_s, 100 * mfu,
               sm->seconds * 1e3, load, t->world > 1 ? comm : "", sm->skipped ? " | SKIPPED" : "");
        fflush(stdout);
    }
}

void zaya_train_log_eval(zaya_trainer *t, const double *per, double mean, double seconds, double run_t0) {
    zaya_train_history *h = &t->hist;
    /* a resumed run validates again at the step its history ends with: that record replaces the old one */
    const int again = h->val_mean.n > 0 && h->val_mean.x[h->val_mean.n - 1] == (double)t->step;
    if (again) {
        h->val_mean.n--;
        for (int s = 0; s < t->val_ds.nsources; s++)
            if (h->val[s].n > 0) h->val[s].n--;
    }
    series_add(&h->val_mean, (double)t->step, mean);
    fprintf(t->metrics, "{\"step\":%lld,\"val_loss\":%.6f", (long long)t->step, mean);
    for (int s = 0; s < t->val_ds.nsources; s++) {
        series_add(&h->val[s], (double)t->step, per[s]);
        fprintf(t->metrics, ",\"val_%s\":%.6f", t->val_ds.src[s].name, per[s]);
    }
    fprintf(t->metrics, ",\"elapsed_s\":%.3f}\n", zaya_now_s() - run_t0);
    fflush(t->metrics);
    if (!t->opts->quiet) {
        printf("validation at step %lld: loss %.4f (", (long long)t->step, mean);
        for (int s = 0; s < t->val_ds.nsources; s++)
            printf("%s%s %.4f", s ? ", " : "", t->val_ds.src[s].name, per[s]);
        printf(") in %.1f s\n", seconds);
        fflush(stdout);
    }
}

/* ---------------------------------------------------------------- samples */

/* A few samples of the trained model through the inference engine (compressed KV cache), top-k 40
 * at temperature 0.8, one sequence per prompt, decoded with the run's tokenizer. */
static zaya_status write_samples(zaya_trainer *t) {
    if (!t->tokenizer || t->opts->samples <= 0) return ZAYA_OK;
    if (t->model.cfg.attention != ZAYA_ATTENTION_CCA) { /* the inference engine is CCA's */
        ZAYA_WARN("no samples: the inference engine supports zaya_attention \"cca\" only (this model: \"%s\")",
                  zaya_config_attention_name(t->model.cfg.attention));
        return ZAYA_OK;
    }
    static const char *prompts[] = {"The ", "#include <", "A man ", "static int ", "Love is "};
    const int64_t n = t->opts->samples < 5 ? t->opts->samples : 5;
    int64_t max_len = 16 + t->opts->sample_tokens;
    if (max_len > t->model.cfg.max_position_embeddings) max_len = t->model.cfg.max_position_embeddings;
    zaya_infer_opts io = {.max_seqs = n, .max_len = max_len, .max_step_tokens = 0, .gemv = 1};
    zaya_infer *e = NULL;
    ZAYA_TRY(zaya_infer_init(&e, &t->model, &io));
    zaya_sampler smp;
    zaya_sampler_opts so = {.temperature = 0.8, .top_k = 40, .top_p = 1.0, .seed = 1000};
    zaya_status s = zaya_sampler_init(&smp, &so, t->model.cfg.vocab_size);
    int32_t *ids[5] = {0}, *out[5] = {0};
    const int32_t *pp[5];
    int64_t plen[5], olen[5];
    size_t cap[5] = {0}, cnt[5] = {0};
    int32_t stop = (int32_t)t->model.cfg.eos_token_id;
    for (int64_t i = 0; s == ZAYA_OK && i < n; i++) {
        /* prompt = bos + the encoded text */
        cap[i] = 16;
        ids[i] = malloc(cap[i] * sizeof(int32_t));
        out[i] = malloc((size_t)t->opts->sample_tokens * sizeof(int32_t));
        if (!ids[i] || !out[i]) {
            s = zaya_error_set(ZAYA_ENOMEM, "sample buffers");
            break;
        }
        ids[i][0] = (int32_t)t->model.cfg.bos_token_id;
        cnt[i] = 1;
        s = zaya_tokenizer_encode(t->tokenizer, prompts[i], strlen(prompts[i]), &ids[i], &cnt[i], &cap[i]);
        pp[i] = ids[i];
        plen[i] = (int64_t)cnt[i];
    }
    zaya_gen_opts go = {.max_tokens = t->opts->sample_tokens, .stop_ids = &stop, .nstop = 1};
    if (s == ZAYA_OK) s = zaya_infer_generate(e, &smp, n, pp, plen, &go, NULL, NULL, out, olen, NULL);
    char path[4096];
    zaya_path_join(path, sizeof path, t->opts->out_dir, "samples.txt");
    FILE *f = s == ZAYA_OK ? fopen(path, "w") : NULL;
    for (int64_t i = 0; f && i < n; i++) {
        /* decode prompt (without bos) and continuation together */
        int64_t total = plen[i] - 1 + olen[i];
        int32_t *all = malloc(sizeof(int32_t) * (size_t)(total > 0 ? total : 1));
        char *text = NULL;
        size_t tl = 0;
        if (!all) break;
        memcpy(all, ids[i] + 1, sizeof(int32_t) * (size_t)(plen[i] - 1));
        memcpy(all + plen[i] - 1, out[i], sizeof(int32_t) * (size_t)olen[i]);
        if (zaya_tokenizer_decode(t->tokenizer, all, (size_t)total, &text, &tl) == ZAYA_OK) {
            fprintf(f, "----- sample %lld (prompt \"%s\")\n%s\n", (long long)i, prompts[i], text);
            if (!t->opts->quiet) printf("----- sample %lld (prompt \"%s\")\n%s\n", (long long)i, prompts[i], text);
        }
        free(text);
        free(all);
    }
    if (f) fclose(f);
    for (int64_t i = 0; i < n; i++) {
        free(ids[i]);
        free(out[i]);
    }
    zaya_sampler_free(&smp);
    zaya_infer_free(e);
    return s;
}

/* ---------------------------------------------------------------- plots and summary */

static void plot_or_warn(const char *dir, const char *name, const zaya_plot_opts *po, const zaya_plot_series *s, int n) {
    char path[4096];
    if (zaya_path_join(path, sizeof path, dir, name) != ZAYA_OK) return;
    if (zaya_plot_lines(path, po, s, n) != ZAYA_OK) ZAYA_WARN("plot %s: %s", name, zaya_error_message());
}

zaya_status zaya_train_report(zaya_trainer *t, const zaya_step_info *last) {
    (void)last;
    zaya_train_history *h = &t->hist;
    const char *dir = t->opts->out_dir;
    zaya_plot_series ls[1 + ZAYA_DATA_MAX_SOURCES + 1];
    int nls = 0;
    ls[nls++] = (zaya_plot_series){"train", h->loss.x, h->loss.y, h->loss.n};
    ls[nls++] = (zaya_plot_series){"validation (mean)", h->val_mean.x, h->val_mean.y, h->val_mean.n};
    static char names[ZAYA_DATA_MAX_SOURCES][64];
    for (int s = 0; s < t->val_ds.nsources; s++) {
        snprintf(names[s], sizeof names[s], "validation %s", t->val_ds.src[s].name);
        ls[nls++] = (zaya_plot_series){names[s], h->val[s].x, h->val[s].y, h->val[s].n};
    }
    zaya_plot_opts po = {"loss", "step", "cross-entropy (nats/token)", 0, 0, 0};
    plot_or_warn(dir, "loss.png", &po, ls, nls);
    zaya_plot_series lr = {"learning rate", h->lr.x, h->lr.y, h->lr.n};
    zaya_plot_opts plr = {"learning rate", "step", "lr", 0, 0, 0};
    plot_or_warn(dir, "lr.png", &plr, &lr, 1);
    zaya_plot_series tp = {"tokens/s", h->tok_s.x, h->tok_s.y, h->tok_s.n};
    zaya_plot_opts ptp = {"throughput", "step", "tokens/s", 0, 0, 0};
    plot_or_warn(dir, "throughput.png", &ptp, &tp, 1);
    if (h->nlayers) {
        zaya_plot_series *ex = calloc((size_t)h->nlayers, sizeof *ex);
        char (*lab)[32] = calloc((size_t)h->nlayers, 32);
        if (ex && lab) {
            for (int l = 0; l < h->nlayers; l++) {
                snprintf(lab[l], 32, "layer %d", l);
                ex[l] = (zaya_plot_series){lab[l], h->layer_max_share[l].x, h->layer_max_share[l].y, h->layer_max_share[l].n};
            }
            zaya_plot_opts pex = {"expert load: largest share of routed tokens per layer (ideal 1/E)", "step",
                                  "max expert share", 0, 0, 0};
            plot_or_warn(dir, "expert_load.png", &pex, ex, h->nlayers);
        }
        free(ex);
        free(lab);
    }
    if (h->nshare > 0 && h->num_experts > 0) {
        /* load relative to uniform: E x share, 1 = balanced */
        const int rows = h->nlayers * h->num_experts;
        double *z = malloc(sizeof(double) * (size_t)rows * (size_t)h->nshare);
        if (z) {
            for (size_t i = 0; i < (size_t)rows * (size_t)h->nshare; i++) z[i] = h->share_rows[i] * h->num_experts;
            char path[4096];
            zaya_plot_heatmap_opts ph = {"expert load per layer and expert (E x share of routed tokens; 1 = uniform)",
                                         "step", "layer / expert", "E x share", 0.0, 2.0, h->num_experts, "layer"};
            if (zaya_path_join(path, sizeof path, dir, "expert_load_heatmap.png") == ZAYA_OK &&
                zaya_plot_heatmap(path, &ph, h->share_steps, h->nshare, z, rows) != ZAYA_OK)
                ZAYA_WARN("plot expert_load_heatmap.png: %s", zaya_error_message());
            free(z);
        }
    }
    ZAYA_TRY(write_samples(t));
    return ZAYA_OK;
}
