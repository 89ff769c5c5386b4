/* Generation loop: batched prefill of the prompts, then one decode step per produced token for every
 * sequence still active, until a stop token, the token budget, the cache length or the caller's
 * callback ends it. Draw (stream = sequence index, counter = token index) makes runs reproducible. */
#include <stdlib.h>

#include "zaya/alloc.h"
#include "zaya/infer.h"
#include "zaya/timer.h"

zaya_status zaya_infer_generate(zaya_infer *e, zaya_sampler *smp, int64_t nseq, const int32_t *const *prompts,
                                const int64_t *prompt_lens, const zaya_gen_opts *o, zaya_gen_token_fn cb, void *ctx,
                                int32_t *const *out, int64_t *out_lens, zaya_gen_stats *stats) {
    if (nseq < 1 || nseq > zaya_infer_max_seqs(e))
        return zaya_error_set(ZAYA_EINVAL, "%lld prompts, the engine has %lld slots", (long long)nseq,
                              (long long)zaya_infer_max_seqs(e));
    int64_t total = 0;
    for (int64_t s = 0; s < nseq; s++) {
        if (prompt_lens[s] < 1) return zaya_error_set(ZAYA_EINVAL, "prompt %lld is empty", (long long)s);
        if (prompt_lens[s] > zaya_infer_max_len(e))
            return zaya_error_set(ZAYA_ERANGE, "prompt %lld has %lld tokens, more than the maximum length %lld",
                                  (long long)s, (long long)prompt_lens[s], (long long)zaya_infer_max_len(e));
        total += prompt_lens[s];
    }
    /* logits rows span the model's vocabulary; the sampler draws from its first smp->vocab ids */
    const int64_t V = zaya_infer_vocab(e);
    if (smp->vocab < 1 || smp->vocab > V)
        return zaya_error_set(ZAYA_EINVAL, "sampler over %lld ids, the model has %lld", (long long)smp->vocab,
                              (long long)V);
    float *logits = zaya_malloc((size_t)(nseq * V) * sizeof(float));
    int32_t *flat = zaya_malloc((size_t)(total + nseq) * sizeof(int32_t));
    int64_t *slots = malloc((size_t)nseq * sizeof(int64_t)), *n = malloc((size_t)nseq * sizeof(int64_t));
    int64_t *active = malloc((size_t)nseq * sizeof(int64_t));
    zaya_status st = ZAYA_OK;
    if (!logits || !flat || !slots || !n || !active) {
        st = zaya_error_set(ZAYA_ENOMEM, "cannot allocate generation buffers");
        goto done;
    }
    int64_t off = 0;
    for (int64_t s = 0; s < nseq; s++) {
        zaya_infer_reset(e, s);
        slots[s] = s;
        n[s] = prompt_lens[s];
        for (int64_t i = 0; i < prompt_lens[s]; i++) flat[off + i] = prompts[s][i];
        off += prompt_lens[s];
        out_lens[s] = 0;
    }
    double t0 = zaya_now_s();
    st = zaya_infer_step(e, nseq, slots, n, flat, logits, 0);
    if (st != ZAYA_OK) goto done;
    double t1 = zaya_now_s();
    if (stats) {
        stats->prefill_tokens = total;
        stats->prefill_s = t1 - t0;
        stats->decode_tokens = 0;
        stats->decode_s = 0;
        stats->decode_bytes = 0;
    }
    int64_t nact = o->max_tokens > 0 ? nseq : 0;
    for (int64_t s = 0; s < nseq; s++) active[s] = s;
    for (int64_t step = 0; nact > 0; step++) {
        /* sample for every active sequence; keep those that continue */
        int64_t keep = 0;
        for (int64_t j = 0; j < nact; j++) {
            const int64_t s = active[j];
            int32_t tok = zaya_sampler_sample(smp, logits + j * V, (uint64_t)s, (uint64_t)step);
            int stop = 0;
            for (int k = 0; k < o->nstop; k++) stop |= tok == o->stop_ids[k];
            if (stop) continue;
            out[s][out_lens[s]++] = tok;
            if (cb && cb(ctx, s, tok)) continue;
            if (out_lens[s] >= o->max_tokens || zaya_infer_len(e, s) >= zaya_infer_max_len(e)) continue;
            slots[keep] = s;
            n[keep] = 1;
            flat[keep++] = tok;
        }
        nact = keep;
        for (int64_t j = 0; j < nact; j++) active[j] = slots[j];
        if (nact == 0) break;
        const int64_t b0 = zaya_infer_bytes_read(e);
        double d0 = zaya_now_s();
        st = zaya_infer_step(e, nact, slots, n, flat, logits, 0);
        if (st != ZAYA_OK) goto done;
        if (stats) {
            stats->decode_s += zaya_now_s() - d0;
            stats->decode_bytes += zaya_infer_bytes_read(e) - b0;
            stats->decode_tokens += nact;
        }
    }
done:
    zaya_free(logits);
    zaya_free(flat);
    free(slots);
    free(n);
    free(active);
    return st;
}

zaya_decode_bound zaya_infer_decode_bound(int64_t decode_bytes, int64_t decode_tokens, double decode_s, double gbps) {
    zaya_decode_bound b = {0};
    if (decode_tokens <= 0 || decode_s <= 0 || gbps <= 0) return b;
    b.bytes_per_token = (double)decode_bytes / (double)decode_tokens;
    b.tps = (double)decode_tokens / decode_s;
    b.bound_tps = gbps * 1e9 / b.bytes_per_token;
    b.fraction = b.tps / b.bound_tps;
    return b;
}
