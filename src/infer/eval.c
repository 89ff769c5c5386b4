/* Evaluation through the inference engine: language-modelling loss over token windows, and
 * multiple-choice log-likelihood scoring with the context computed once per item. */
#include <math.h>
#include <stdlib.h>

#include "zaya/alloc.h"
#include "zaya/infer.h"
#include "zaya/shard.h"
#include "zaya/timer.h"

double zaya_log_prob(const float *logits, int64_t V, int32_t token) {
    double mx = -INFINITY, sum = 0.0;
    for (int64_t i = 0; i < V; i++) mx = fmax(mx, (double)logits[i]);
    for (int64_t i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    return (double)logits[token] - mx - log(sum);
}

zaya_status zaya_eval_read_shard(const char *path, int64_t vocab, int64_t limit, int32_t **ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    zaya_shard sh;
    ZAYA_TRY(zaya_shard_open(path, 1, &sh));
    zaya_status s = ZAYA_OK;
    if ((int64_t)sh.hdr.vocab_size > vocab)
        s = zaya_error_set(ZAYA_ERANGE, "shard '%s' has vocabulary %llu, the model only %lld", path,
                           (unsigned long long)sh.hdr.vocab_size, (long long)vocab);
    uint64_t count = sh.hdr.token_count;
    if (limit > 0 && (uint64_t)limit < count) count = (uint64_t)limit;
    if (s == ZAYA_OK) {
        *ids = malloc(sizeof(int32_t) * (count ? count : 1));
        if (!*ids) s = zaya_error_set(ZAYA_ENOMEM, "cannot hold %llu tokens", (unsigned long long)count);
    }
    if (s == ZAYA_OK) {
        zaya_shard_read(&sh, 0, count, *ids);
        *n = (size_t)count;
    }
    zaya_shard_close(&sh);
    return s;
}

/* Windows run up to max_seqs at a time, in chunks of at most LM_CHUNK rows per window per step, so
 * the logits buffer stays [max_seqs * LM_CHUNK, V] whatever the window (the cache makes chunks exact). */
#define LM_CHUNK 256

zaya_status zaya_eval_lm_tokens(zaya_infer *e, const int32_t *ids, int64_t n, int64_t window,
                                const int64_t *token_bytes, zaya_eval_lm *out) {
    *out = (zaya_eval_lm){0};
    if (window < 2 || window > zaya_infer_max_len(e))
        return zaya_error_set(ZAYA_EINVAL, "evaluation window %lld must be in [2, %lld]", (long long)window,
                              (long long)zaya_infer_max_len(e));
    if (n < 2) return zaya_error_set(ZAYA_EINVAL, "%lld tokens: at least 2 are needed to score one", (long long)n);
    const int64_t S = zaya_infer_max_seqs(e), V = zaya_infer_vocab(e);
    int64_t chunk = zaya_infer_step_tokens(e) / S; /* one step per chunk when possible */
    chunk = chunk < 1 ? 1 : chunk > LM_CHUNK ? LM_CHUNK : chunk;
    chunk = chunk > window ? window : chunk;
    float *logits = zaya_malloc((size_t)(S * chunk * V) * sizeof(float));
    int64_t *slots = malloc((size_t)S * sizeof(int64_t)), *lens = malloc((size_t)S * sizeof(int64_t));
    int64_t *start = malloc((size_t)S * sizeof(int64_t)), *take = malloc((size_t)S * sizeof(int64_t));
    int32_t *flat = malloc((size_t)(S * chunk) * sizeof(int32_t));
    zaya_status st = ZAYA_OK;
    if (!logits || !slots || !lens || !start || !take || !flat) {
        st = zaya_error_set(ZAYA_ENOMEM, "cannot allocate %lld x %lld logits", (long long)(S * chunk), (long long)V);
        goto done;
    }
    const double t0 = zaya_now_s();
    for (int64_t next = 0; next < n && st == ZAYA_OK;) {
        int64_t nw = 0, longest = 0;
        for (; nw < S && next < n; nw++) {
            slots[nw] = nw;
            start[nw] = next;
            lens[nw] = n - next < window ? n - next : window;
            longest = lens[nw] > longest ? lens[nw] : longest;
            zaya_infer_reset(e, nw);
            next += lens[nw];
        }
        for (int64_t off = 0; off < longest && st == ZAYA_OK; off += chunk) {
            int64_t nf = 0;
            for (int64_t w = 0; w < nw; w++) {
                int64_t left = lens[w] - off;
                take[w] = left <= 0 ? 0 : left < chunk ? left : chunk;
                for (int64_t t = 0; t < take[w]; t++) flat[nf++] = ids[start[w] + off + t];
            }
            st = zaya_infer_step(e, nw, slots, take, flat, logits, 1);
            int64_t row = 0;
            for (int64_t w = 0; w < nw && st == ZAYA_OK; w++) {
                for (int64_t t = 0; t < take[w]; t++) {
                    const int64_t i = off + t; /* position in the window; row i predicts i + 1 */
                    if (i + 1 >= lens[w]) continue;
                    const int32_t target = ids[start[w] + i + 1];
                    out->nll -= zaya_log_prob(logits + (row + t) * V, V, target);
                    out->tokens++;
                    if (token_bytes) out->bytes += token_bytes[target];
                }
                row += take[w];
            }
        }
    }
    out->seconds = zaya_now_s() - t0;
    if (st == ZAYA_OK && out->tokens == 0)
        st = zaya_error_set(ZAYA_EINVAL, "no token could be scored (every window has a single token)");
done:
    zaya_free(logits);
    free(slots);
    free(lens);
    free(start);
    free(take);
    free(flat);
    return st;
}

/* Items are scored in groups whose choices fit in the slots: the tokens every choice of an item
 * shares (`common`) are prefilled once in the slot of its first choice and copied into the other
 * choices' slots, then the rest of every choice's sequence runs in one step with all rows' logits.
 * Token t of a sequence is scored from the logits after token t - 1: the prefill's last row when
 * t - 1 is the last shared token, else a row of the second step. */
zaya_status zaya_eval_mc(zaya_infer *e, const zaya_mc_set *set, double *scores, zaya_mc_result *out) {
    *out = (zaya_mc_result){0};
    out->acc_stderr = out->acc_norm_stderr = out->acc_greedy_stderr = NAN;
    const int64_t S = zaya_infer_max_seqs(e), V = zaya_infer_vocab(e);
    int64_t max_rest = 0, max_common = 0;
    for (int64_t i = 0; i < set->n; i++) {
        const zaya_mc_item *it = &set->items[i];
        if (it->nchoices > S)
            return zaya_error_set(ZAYA_EINVAL, "line %lld: %d choices, the engine has %lld slots", (long long)it->line,
                                  it->nchoices, (long long)S);
        max_common = it->common > max_common ? it->common : max_common;
        for (int c = 0; c < it->nchoices; c++)
            max_rest = it->nseq[c] - it->common > max_rest ? it->nseq[c] - it->common : max_rest;
    }
    float *logits = zaya_malloc((size_t)(S * max_rest * V) * sizeof(float));
    float *ctx_logits = zaya_malloc((size_t)(S * V) * sizeof(float));
    int64_t *slots = malloc((size_t)S * sizeof(int64_t)), *lens = malloc((size_t)S * sizeof(int64_t));
    int32_t *flat = malloc((size_t)(S * (max_common + max_rest)) * sizeof(int32_t));
    double *sc = malloc((size_t)S * sizeof(double));
    zaya_status st = ZAYA_OK;
    if (!logits || !ctx_logits || !slots || !lens || !flat || !sc) {
        st = zaya_error_set(ZAYA_ENOMEM, "cannot allocate multiple-choice buffers");
        goto done;
    }
    const double t0 = zaya_now_s();
    int64_t score_at = 0;
    for (int64_t i0 = 0; i0 < set->n && st == ZAYA_OK;) {
        /* group [i0, i1): shared prefixes in slots base[i], choices in base[i] .. base[i]+nchoices-1 */
        int64_t i1 = i0, used = 0, nf = 0;
        while (i1 < set->n && used + set->items[i1].nchoices <= S) {
            const zaya_mc_item *it = &set->items[i1];
            slots[i1 - i0] = used;
            lens[i1 - i0] = it->common;
            for (int64_t t = 0; t < it->common; t++) flat[nf++] = it->seq[0][t];
            zaya_infer_reset(e, used);
            used += it->nchoices;
            i1++;
        }
        const int64_t ng = i1 - i0;
        if (nf > 0) st = zaya_infer_step(e, ng, slots, lens, flat, ctx_logits, 0);
        if (st != ZAYA_OK) break;
        /* copy each prefix into its item's other choice slots (item ranges never overlap a base) */
        int64_t k = 0;
        nf = 0;
        for (int64_t g = 0; g < ng; g++) {
            const zaya_mc_item *it = &set->items[i0 + g];
            for (int c = 0; c < it->nchoices; c++, k++) {
                if (c > 0 && it->common > 0) zaya_infer_copy_slot(e, k, slots[g]);
                else if (c > 0) zaya_infer_reset(e, k);
                lens[k] = it->nseq[c] - it->common;
                for (int64_t t = it->common; t < it->nseq[c]; t++) flat[nf++] = it->seq[c][t];
            }
        }
        for (int64_t j = 0; j < k; j++) slots[j] = j;
        st = zaya_infer_step(e, k, slots, lens, flat, logits, 1);
        if (st != ZAYA_OK) break;
        int64_t row = 0;
        k = 0;
        for (int64_t g = 0; g < ng; g++) {
            const zaya_mc_item *it = &set->items[i0 + g];
            int best = 0, best_norm = 0;
            double bv = -INFINITY, bn = -INFINITY;
            for (int c = 0; c < it->nchoices; c++, k++) {
                sc[k] = 0;
                int greedy = 1;
                for (int64_t t = it->nctx[c]; t < it->nseq[c]; t++) {
                    const float *lg = t - 1 < it->common ? ctx_logits + g * V : logits + (row + t - 1 - it->common) * V;
                    sc[k] += zaya_log_prob(lg, V, it->seq[c][t]);
                    if (c == it->label && greedy) {
                        int64_t am = 0; /* argmax, first index on ties (torch.argmax) */
                        for (int64_t v = 1; v < V; v++) am = lg[v] > lg[am] ? v : am;
                        greedy = am == it->seq[c][t];
                    }
                }
                if (c == it->label) {
                    out->greedy += greedy;
                    out->ll_gold += sc[k];
                }
                row += it->nseq[c] - it->common;
                const double norm = sc[k] / (double)(it->norm_bytes[c] > 0 ? it->norm_bytes[c] : 1);
                if (sc[k] > bv) bv = sc[k], best = c;
                if (norm > bn) bn = norm, best_norm = c;
                if (scores) scores[score_at++] = sc[k];
            }
            out->correct += best == it->label;
            out->correct_norm += best_norm == it->label;
            out->n++;
        }
        i0 = i1;
    }
    out->seconds = zaya_now_s() - t0;
    if (out->n > 0) {
        out->acc = (double)out->correct / (double)out->n;
        out->acc_norm = (double)out->correct_norm / (double)out->n;
        out->acc_greedy = (double)out->greedy / (double)out->n;
        out->ppl_gold = exp(-out->ll_gold / (double)out->n);
    }
    if (out->n > 1) {
        const double n1 = (double)(out->n - 1);
        out->acc_stderr = sqrt(out->acc * (1 - out->acc) / n1);
        out->acc_norm_stderr = sqrt(out->acc_norm * (1 - out->acc_norm) / n1);
        out->acc_greedy_stderr = sqrt(out->acc_greedy * (1 - out->acc_greedy) / n1);
    }
done:
    zaya_free(logits);
    zaya_free(ctx_logits);
    free(slots);
    free(lens);
    free(flat);
    free(sc);
    return st;
}
