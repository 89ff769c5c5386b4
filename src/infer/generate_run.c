/* `zaya generate` (zaya_infer_generate_run): text generation with the inference engine, streamed as
 * tokens arrive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/bench_mem.h"
#include "zaya/infer.h"
#include "zaya/infer_generate.h"
#include "zaya/infer_model.h"
#include "zaya/infer_weights.h"
#include "zaya/sysinfo.h"
#include "zaya/threads.h"
#include "zaya/tokenizer.h"

#define MAX_PROMPTS ZAYA_INFER_GENERATE_MAX_PROMPTS

/* Per-sequence text of the completion; bytes that could start a stop string are held back until
 * they are known not to. */
typedef struct gen_text {
    char *buf;
    size_t len, cap, printed;
    int done;
} gen_text;

typedef struct gen_ctx {
    const zaya_tokenizer *tok;
    int n;
    gen_text *t;
    const char *const *stops;
    int nstops;
    size_t hold; /* longest stop string - 1 */
    int stream;  /* print sequence 0 as it grows */
    FILE *out;
} gen_ctx;

static void flush_upto(gen_ctx *c, int64_t s, size_t upto) {
    gen_text *t = &c->t[s];
    if (c->stream && upto > t->printed) {
        fwrite(t->buf + t->printed, 1, upto - t->printed, c->out);
        fflush(c->out);
    }
    if (upto > t->printed) t->printed = upto;
}

static int on_token(void *p, int64_t s, int32_t id) {
    gen_ctx *c = p;
    gen_text *t = &c->t[s];
    size_t n = 0;
    const uint8_t *b = zaya_tokenizer_token_bytes(c->tok, id, &n);
    if (!b) return 1;
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *g = realloc(t->buf, cap);
        if (!g) return 1;
        t->buf = g, t->cap = cap;
    }
    memcpy(t->buf + t->len, b, n);
    t->len += n;
    t->buf[t->len] = '\0';
    /* a stop string ends the sequence; only text before it is kept */
    size_t from = t->printed > c->hold ? t->printed - c->hold : 0;
    for (int k = 0; k < c->nstops; k++) {
        const char *hit = strstr(t->buf + from, c->stops[k]);
        if (hit) {
            t->len = (size_t)(hit - t->buf);
            t->buf[t->len] = '\0';
            flush_upto(c, s, t->len);
            t->done = 1;
            return 1;
        }
    }
    flush_upto(c, s, t->len > c->hold ? t->len - c->hold : 0);
    return 0;
}

zaya_status zaya_infer_generate_run(const zaya_infer_generate_opts *o, FILE *f) {
    zaya_infer_model_opts mo = o->model;
    const char *tok_path = o->tokenizer;
    const char *const *prompts = o->prompts, *const *stops = o->stops;
    const int np = o->nprompts, ns = o->nstops, threads = o->threads, ignore_eos = o->ignore_eos, no_gemv = o->no_gemv,
              bandwidth = o->bandwidth;
    const int64_t max_tokens = o->max_tokens, top_k = o->top_k, seed = o->seed;
    const double temperature = o->temperature, top_p = o->top_p;
    if (np < 1 || np > MAX_PROMPTS || !tok_path || max_tokens < 0 || temperature < 0 || top_p < 0 || top_k < 0 || ns < 0)
        return zaya_error_set(ZAYA_EINVAL, "generate: 1..%d prompts, a tokenizer, max_tokens, temperature, top_k and "
                              "top_p >= 0", MAX_PROMPTS);
    for (int k = 0; k < ns; k++)
        if (!stops[k][0]) return zaya_error_set(ZAYA_EINVAL, "generate: stop strings must not be empty");
    zaya_threads_init(threads);

    char msg[1024];
    zaya_tokenizer *tok = NULL;
    zaya_status rs = ZAYA_OK;
    if ((rs = zaya_tokenizer_load(tok_path, &tok)) != ZAYA_OK) {
        snprintf(msg, sizeof msg, "tokenizer '%s'", tok_path);
        return zaya_error_context(rs, "%s", msg);
    }
    zaya_infer_model cm;
    memset(&cm, 0, sizeof cm);
    zaya_infer *e = NULL;
    zaya_sampler smp = {0};
    int32_t *ids[MAX_PROMPTS] = {0}, *out[MAX_PROMPTS] = {0};
    int64_t plen[MAX_PROMPTS], olen[MAX_PROMPTS];
    gen_text texts[MAX_PROMPTS];
    memset(texts, 0, sizeof texts);
    if ((rs = zaya_infer_model_open(&mo, &cm)) != ZAYA_OK) {
        goto done;
    }
    const zaya_config *mc = &cm.w.cfg;
    if (zaya_tokenizer_vocab_size(tok) > mc->vocab_size) {
        snprintf(msg, sizeof msg, "tokenizer '%s' has %lld tokens, the model's vocabulary only %lld", tok_path,
                 (long long)zaya_tokenizer_vocab_size(tok), (long long)mc->vocab_size);
        rs = zaya_error_set(ZAYA_EINVAL, "%s", msg);
        goto done;
    }
    const int64_t ctx = mc->max_position_embeddings;
    int64_t longest = 0;
    const int32_t bos = o->no_bos ? -1 : zaya_tokenizer_special_id(tok, "bos");
    for (int i = 0; i < np; i++) {
        size_t n = 0, cap = 0;
        if (bos >= 0) { /* documents start with bos when the tokenizer defines one */
            ids[i] = malloc(sizeof(int32_t) * 16);
            cap = 16;
            if (ids[i]) ids[i][n++] = bos;
        }
        if ((rs = zaya_tokenizer_encode(tok, prompts[i], strlen(prompts[i]), &ids[i], &n, &cap)) != ZAYA_OK) {
            snprintf(msg, sizeof msg, "prompt %d", i + 1);
            rs = zaya_error_context(rs, "%s", msg);
            goto done;
        }
        if (n == 0) {
            snprintf(msg, sizeof msg, "prompt %d is empty (and no bos token to start from: %s)", i + 1,
                     o->no_bos ? "--no-bos" : "the tokenizer has none");
            rs = zaya_error_set(ZAYA_EINVAL, "%s", msg);
            goto done;
        }
        if ((int64_t)n > ctx) {
            snprintf(msg, sizeof msg, "prompt %d has %zu tokens, longer than the model's context "
                     "(max_position_embeddings = %lld)", i + 1, n, (long long)ctx);
            rs = zaya_error_set(ZAYA_EINVAL, "%s", msg);
            goto done;
        }
        plen[i] = (int64_t)n;
        longest = plen[i] > longest ? plen[i] : longest;
        out[i] = malloc(sizeof(int32_t) * (size_t)(max_tokens > 0 ? max_tokens : 1));
        if (!out[i]) {
            rs = zaya_error_set(ZAYA_ENOMEM, "out of memory");
            goto done;
        }
    }
    zaya_infer_opts io = {.max_seqs = np, .max_len = longest + max_tokens < ctx ? longest + max_tokens : ctx,
                          .max_step_tokens = 512, .gemv = !no_gemv};
    zaya_sampler_opts so = {temperature, top_k, top_p, (uint64_t)seed};
    if ((rs = zaya_infer_init_weights(&e, &cm.w, &io)) != ZAYA_OK || (rs = zaya_sampler_init(&smp, &so, zaya_tokenizer_vocab_size(tok))) != ZAYA_OK) {
        goto done;
    }
    fprintf(stderr, "weights: %s, %.1f MiB of matrices (%.1f MiB used in place from mapped shards), %.1f MiB of "
            "vectors\n", cm.w.dtype == ZAYA_DTYPE_BF16 ? "bf16" : "f32", (double)cm.w.matrix_bytes / 1048576.0,
            (double)cm.w.mapped_bytes / 1048576.0, (double)cm.w.vector_bytes / 1048576.0);
    fprintf(stderr, "engine: %lld B/token KV cache, %lld B/sequence conv + delayed-value state, %.1f MiB planned\n",
            (long long)zaya_infer_kv_bytes_per_token(e), (long long)zaya_infer_state_bytes_per_seq(e),
            (double)zaya_infer_total_bytes(e) / 1048576.0);
    int32_t stop_ids[1];
    int32_t eos = zaya_tokenizer_special_id(tok, "eos");
    zaya_gen_opts go = {.max_tokens = max_tokens, .stop_ids = stop_ids, .nstop = 0};
    if (eos >= 0 && !ignore_eos) stop_ids[go.nstop++] = eos;
    gen_ctx gc = {tok, np, texts, stops, ns, 0, np == 1, f};
    for (int k = 0; k < ns; k++)
        if (strlen(stops[k]) - 1 > gc.hold) gc.hold = strlen(stops[k]) - 1;
    if (np == 1) {
        fputs(prompts[0], f);
        fflush(f);
    }
    zaya_gen_stats st;
    if (zaya_infer_generate(e, &smp, np, (const int32_t *const *)ids, plen, &go, on_token, &gc, out, olen, &st) !=
        ZAYA_OK) {
        goto done;
    }
    for (int i = 0; i < np; i++) {
        if (np == 1) {
            flush_upto(&gc, 0, texts[0].len);
            fputc('\n', f);
        } else {
            fprintf(f, "--- [%d] ---\n%s%.*s\n", i + 1, prompts[i], (int)texts[i].len, texts[i].buf ? texts[i].buf : "");
        }
    }
    fflush(f);
    fprintf(stderr, "prefill: %lld tokens in %.3f s (%.1f tok/s); decode: %lld tokens in %.3f s (%.1f tok/s)\n",
            (long long)st.prefill_tokens, st.prefill_s, st.prefill_s > 0 ? (double)st.prefill_tokens / st.prefill_s : 0.0,
            (long long)st.decode_tokens, st.decode_s, st.decode_s > 0 ? (double)st.decode_tokens / st.decode_s : 0.0);
    /* measured before the STREAM arrays exist, so they do not count */
    const double rss = (double)zaya_sysinfo_peak_rss_bytes();
    fprintf(stderr, "peak RSS: %.1f MiB; decode read %.1f MiB per token (weights touched + KV)\n", rss / 1048576.0,
            st.decode_tokens > 0 ? (double)st.decode_bytes / (double)st.decode_tokens / 1048576.0 : 0.0);
    if (st.decode_tokens > 0 && bandwidth) {
        /* free the weights first: the triad's arrays then fit wherever the model was */
        zaya_infer_free(e);
        e = NULL;
        zaya_infer_model_close(&cm);
        const double gbps = zaya_bench_stream_triad_gbps(threads);
        if (gbps <= 0) {
            fprintf(stderr, "zaya generate: warning: no STREAM triad: %s\n", zaya_error_message());
        } else {
            const zaya_decode_bound b = zaya_infer_decode_bound(st.decode_bytes, st.decode_tokens, st.decode_s, gbps);
            fprintf(stderr, "bandwidth: STREAM triad %.1f GB/s, bound %.2f tok/s at %.1f MiB/token, decode %.2f tok/s "
                    "= %.0f%% of the bound\n", gbps, b.bound_tps, b.bytes_per_token / 1048576.0, b.tps,
                    100.0 * b.fraction);
        }
    }
done:
    for (int i = 0; i < np; i++) {
        free(ids[i]);
        free(out[i]);
        free(texts[i].buf);
    }
    zaya_sampler_free(&smp);
    zaya_infer_free(e);
    zaya_infer_model_close(&cm);
    zaya_tokenizer_free(tok);
    return rs;
}
