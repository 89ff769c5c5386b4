/* `zaya eval` (zaya_infer_eval_run): perplexity and bits per byte on a token shard or a text file, and multiple-choice tasks
 * (zaya JSONL or the released HellaSwag / ARC / PIQA / Winogrande / MMLU files) scored by
 * log-likelihood (acc and byte-length-normalised acc_norm, with standard errors), and LAMBADA
 * (last-word greedy accuracy and perplexity, as lm-eval's lambada_openai). Every input is
 * read and validated before anything is scored; a failure reports no result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/fs.h"
#include "zaya/infer.h"
#include "zaya/infer_eval.h"
#include "zaya/infer_model.h"
#include "zaya/json.h"
#include "zaya/sysinfo.h"
#include "zaya/threads.h"
#include "zaya/tokenizer.h"

#define MAX_TASKS ZAYA_INFER_EVAL_MAX_TASKS

static zaya_status read_text_tokens(const char *path, const zaya_tokenizer *tok, int32_t **ids, size_t *n) {
    char *text = NULL;
    size_t len = 0, cap = 0;
    *ids = NULL;
    *n = 0;
    ZAYA_TRY(zaya_read_file(path, &text, &len));
    zaya_status s = zaya_tokenizer_encode(tok, text, len, ids, n, &cap);
    free(text);
    if (s != ZAYA_OK) return zaya_error_context(s, "tokenizing '%s'", path);
    return ZAYA_OK;
}

static void add_number_or_null(cJSON *j, const char *key, double v) {
    if (isnan(v)) cJSON_AddNullToObject(j, key);
    else cJSON_AddNumberToObject(j, key, v);
}

/* One line per item: its line in the task file, the gold index, each choice's log-likelihood and
 * acc_norm divisor (bytes), and the two predictions. */
static zaya_status write_items(const char *path, const zaya_mc_set *set, const double *scores) {
    FILE *f = fopen(path, "w");
    if (!f) return zaya_error_set(ZAYA_EIO, "cannot create '%s'", path);
    int64_t k = 0;
    for (int64_t i = 0; i < set->n; i++) {
        const zaya_mc_item *it = &set->items[i];
        int best = 0, best_norm = 0;
        fprintf(f, "{\"line\": %lld, \"label\": %d, \"ll\": [", (long long)it->line, it->label);
        for (int c = 0; c < it->nchoices; c++) {
            fprintf(f, "%s%.17g", c ? ", " : "", scores[k + c]);
            if (scores[k + c] > scores[k + best]) best = c;
            if (scores[k + c] / (double)it->norm_bytes[c] > scores[k + best_norm] / (double)it->norm_bytes[best_norm])
                best_norm = c;
        }
        fprintf(f, "], \"bytes\": [");
        for (int c = 0; c < it->nchoices; c++) fprintf(f, "%s%lld", c ? ", " : "", (long long)it->norm_bytes[c]);
        fprintf(f, "], \"pred\": %d, \"pred_norm\": %d}\n", best, best_norm);
        k += it->nchoices;
    }
    if (fclose(f) != 0) return zaya_error_set(ZAYA_EIO, "cannot write '%s'", path);
    return ZAYA_OK;
}

zaya_status zaya_infer_eval_run(const zaya_infer_eval_opts *o, FILE *f) {
    zaya_infer_model_opts mo = o->model;
    const char *tok_path = o->tokenizer, *shard = o->shard, *text = o->text, *out = o->out;
    const char *const *tasks = o->tasks;
    const int nt = o->ntasks, threads = o->threads;
    const zaya_mc_format fmt = o->format;
    int64_t window = o->window;
    const int64_t batch = o->batch, max_tokens = o->max_tokens;
    if (nt < 0 || nt > MAX_TASKS || (!shard && !text && nt == 0) || (shard && text) || ((text || nt) && !tok_path) ||
        batch < 1 || window < 0 || max_tokens < 0)
        return zaya_error_set(ZAYA_EINVAL, "eval: a shard or a text (not both) and/or up to %d tasks, a tokenizer for "
                              "text and tasks, batch >= 1, window and max_tokens >= 0", MAX_TASKS);
    zaya_threads_init(threads);

    zaya_status rs = ZAYA_OK;
    zaya_tokenizer *tok = NULL;
    zaya_infer_model cm;
    memset(&cm, 0, sizeof cm);
    zaya_infer *e = NULL;
    int32_t *ids = NULL;
    size_t nids = 0;
    int64_t *tb = NULL;
    zaya_mc_set sets[MAX_TASKS];
    memset(sets, 0, sizeof sets);
    zaya_mc_result mres[MAX_TASKS];
    zaya_mc_format fmts[MAX_TASKS];
    double *mscores[MAX_TASKS] = {0};
    cJSON *root = NULL;
    char msg[600];

    if (tok_path && (rs = zaya_tokenizer_load(tok_path, &tok)) != ZAYA_OK) {
        snprintf(msg, sizeof msg, "tokenizer '%s'", tok_path);
        rs = zaya_error_context(rs, "%s", msg);
        goto done;
    }
    if ((rs = zaya_infer_model_open(&mo, &cm)) != ZAYA_OK) {
        goto done;
    }
    const int64_t V = cm.w.cfg.vocab_size, ctx = cm.w.cfg.max_position_embeddings;
    if (tok && zaya_tokenizer_vocab_size(tok) > V) {
        rs = zaya_error_set(ZAYA_ERANGE, "tokenizer '%s' has %lld tokens, the model's vocabulary only %lld", tok_path,
                       (long long)zaya_tokenizer_vocab_size(tok), (long long)V);
        goto done;
    }
    if (window == 0) window = ctx;
    if (window < 2 || window > ctx) {
        rs = zaya_error_set(ZAYA_ERANGE, "--ctx %lld must be in [2, %lld] (the model's context)", (long long)window,
                       (long long)ctx);
        goto done;
    }
    /* inputs first: all of them validated before any scoring */
    if (shard && (rs = zaya_eval_read_shard(shard, V, max_tokens, &ids, &nids)) != ZAYA_OK) {
        goto done;
    }
    if (text && (rs = read_text_tokens(text, tok, &ids, &nids)) != ZAYA_OK) {
        goto done;
    }
    if (text && max_tokens > 0 && (size_t)max_tokens < nids) nids = (size_t)max_tokens;
    if ((shard || text) && nids < 2) {
        rs = zaya_error_set(ZAYA_EINVAL, "'%s' has %zu tokens: at least 2 are needed", shard ? shard : text, nids);
        goto done;
    }
    int64_t max_choices = 1;
    for (int k = 0; k < nt; k++) {
        if ((rs = zaya_mc_load(tasks[k], fmt, tok, ctx, &sets[k], &fmts[k])) != ZAYA_OK) {
            goto done;
        }
        for (int64_t i = 0; i < sets[k].n; i++)
            max_choices = sets[k].items[i].nchoices > max_choices ? sets[k].items[i].nchoices : max_choices;
    }
    if (tok) {
        tb = calloc((size_t)V, sizeof(int64_t));
        for (int32_t i = 0; tb && i < zaya_tokenizer_vocab_size(tok); i++) {
            size_t n = 0;
            zaya_tokenizer_token_bytes(tok, i, &n);
            tb[i] = (int64_t)n;
        }
    }
    zaya_infer_opts io = {.max_seqs = batch > max_choices ? batch : max_choices, .max_len = ctx > window ? ctx : window,
                          .max_step_tokens = 1024, .gemv = 1};
    if ((rs = zaya_infer_init_weights(&e, &cm.w, &io)) != ZAYA_OK) {
        goto done;
    }
    zaya_eval_lm lm = {0};
    if ((shard || text) && (rs = zaya_eval_lm_tokens(e, ids, (int64_t)nids, window, tb, &lm)) != ZAYA_OK) {
        rs = zaya_error_context(rs, "perplexity");
        goto done;
    }
    for (int k = 0; k < nt; k++) {
        int64_t nsc = 0;
        for (int64_t i = 0; i < sets[k].n; i++) nsc += sets[k].items[i].nchoices;
        mscores[k] = malloc((size_t)nsc * sizeof(double));
        if (!mscores[k]) {
            rs = zaya_error_set(ZAYA_ENOMEM, "out of memory");
            goto done;
        }
        if ((rs = zaya_eval_mc(e, &sets[k], mscores[k], &mres[k])) != ZAYA_OK) {
            snprintf(msg, sizeof msg, "task '%s'", tasks[k]);
            rs = zaya_error_context(rs, "%s", msg);
            goto done;
        }
    }

    /* results: table and eval.json */
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", mo.checkpoint ? mo.checkpoint : cm.w.cfg.name);
    cJSON_AddStringToObject(root, "dtype", mo.dtype);
    fprintf(f, "%-32s %12s %12s %12s %10s\n", "input", "tokens", "ppl", "bpb", "tok/s");
    if (shard || text) {
        const int have_bytes = tb && lm.bytes > 0;
        char bpb[32] = "-";
        if (have_bytes) snprintf(bpb, sizeof bpb, "%.5f", zaya_eval_bpb(&lm));
        fprintf(f, "%-32s %12lld %12.4f %12s %10.1f\n", shard ? shard : text, (long long)lm.tokens, zaya_eval_ppl(&lm), bpb,
               (double)nids / lm.seconds);
        cJSON *j = cJSON_AddObjectToObject(root, "lm");
        cJSON_AddStringToObject(j, "input", shard ? shard : text);
        cJSON_AddNumberToObject(j, "window", (double)window);
        cJSON_AddNumberToObject(j, "tokens", (double)lm.tokens);
        cJSON_AddNumberToObject(j, "nll", lm.nll);
        cJSON_AddNumberToObject(j, "ppl", zaya_eval_ppl(&lm));
        if (have_bytes) {
            cJSON_AddNumberToObject(j, "bytes", (double)lm.bytes);
            cJSON_AddNumberToObject(j, "bpb", zaya_eval_bpb(&lm));
        } else {
            cJSON_AddNullToObject(j, "bpb");
        }
        cJSON_AddNumberToObject(j, "seconds", lm.seconds);
    }
    if (nt) {
        fprintf(f, "\n%-32s %-10s %8s %17s %17s %10s\n", "task", "format", "items", "acc", "acc_norm", "seconds");
        cJSON *arr = cJSON_AddArrayToObject(root, "tasks");
        for (int k = 0; k < nt; k++) {
            const zaya_mc_result *r = &mres[k];
            const int lambada = fmts[k] == ZAYA_MC_LAMBADA;
            char se[2][16]; /* no stderr (fewer than 2 items): "n/a", as eval.json's null */
            if (lambada) { /* lm-eval lambada_openai: acc = the last word is the greedy continuation; perplexity */
                snprintf(se[0], sizeof se[0], isnan(r->acc_greedy_stderr) ? "n/a" : "%.4f", r->acc_greedy_stderr);
                fprintf(f, "%-32s %-10s %8lld %8.4f +- %-6s %8s %-8.4g %10.2f\n", tasks[k], zaya_mc_format_name(fmts[k]),
                        (long long)r->n, r->acc_greedy, se[0], "ppl", r->ppl_gold, r->seconds);
            } else {
                snprintf(se[0], sizeof se[0], isnan(r->acc_stderr) ? "n/a" : "%.4f", r->acc_stderr);
                snprintf(se[1], sizeof se[1], isnan(r->acc_norm_stderr) ? "n/a" : "%.4f", r->acc_norm_stderr);
                fprintf(f, "%-32s %-10s %8lld %8.4f +- %-6s %8.4f +- %-6s %10.2f\n", tasks[k], zaya_mc_format_name(fmts[k]),
                        (long long)r->n, r->acc, se[0], r->acc_norm, se[1], r->seconds);
            }
            cJSON *j = cJSON_CreateObject();
            char name[32];
            snprintf(name, sizeof name, "items-%d.jsonl", k);
            cJSON_AddStringToObject(j, "task", tasks[k]);
            cJSON_AddStringToObject(j, "format", zaya_mc_format_name(fmts[k]));
            cJSON_AddNumberToObject(j, "items", (double)r->n);
            if (lambada) {
                cJSON_AddNumberToObject(j, "acc", r->acc_greedy);
                add_number_or_null(j, "acc_stderr", r->acc_greedy_stderr);
                cJSON_AddNumberToObject(j, "perplexity", r->ppl_gold);
                cJSON_AddNumberToObject(j, "loglikelihood_sum", r->ll_gold);
            } else {
                cJSON_AddNumberToObject(j, "acc", r->acc);
                add_number_or_null(j, "acc_stderr", r->acc_stderr);
                cJSON_AddNumberToObject(j, "acc_norm", r->acc_norm);
                add_number_or_null(j, "acc_norm_stderr", r->acc_norm_stderr);
            }
            cJSON_AddStringToObject(j, "items_file", name);
            cJSON_AddNumberToObject(j, "seconds", r->seconds);
            cJSON_AddItemToArray(arr, j);
        }
    }
    char path[1024];
    if ((rs = zaya_mkdir_p(out)) != ZAYA_OK) {
        rs = zaya_error_context(rs, "writing results");
        goto done;
    }
    for (int k = 0; k < nt; k++) {
        char name[32];
        snprintf(name, sizeof name, "items-%d.jsonl", k);
        if ((rs = zaya_path_join(path, sizeof path, out, name)) != ZAYA_OK || (rs = write_items(path, &sets[k], mscores[k])) != ZAYA_OK) {
            rs = zaya_error_context(rs, "writing results");
            goto done;
        }
    }
    if ((rs = zaya_path_join(path, sizeof path, out, "eval.json")) != ZAYA_OK || (rs = zaya_json_write_file(path, root, 1)) != ZAYA_OK) {
        rs = zaya_error_context(rs, "writing results");
        goto done;
    }
    fprintf(f, "\nresults: %s\n", path);
    fprintf(stderr, "peak RSS: %.1f MiB\n", (double)zaya_sysinfo_peak_rss_bytes() / 1048576.0);
done:
    cJSON_Delete(root);
    for (int k = 0; k < nt; k++) {
        zaya_mc_free(&sets[k]);
        free(mscores[k]);
    }
    free(tb);
    free(ids);
    zaya_infer_free(e);
    zaya_infer_model_close(&cm);
    zaya_tokenizer_free(tok);
    return rs;
}
