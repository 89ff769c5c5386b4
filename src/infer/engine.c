/* Inference engine: memory plan, cache lifetime, and the step (prefill chunk or decode) driver. */
#include <math.h>
#include <stdlib.h>

#include "infer/internal.h"
#include "zaya/bf16.h"
#include "zaya/log.h"

static int64_t max4(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t m = a > b ? a : b;
    m = m > c ? m : c;
    return m > d ? m : d;
}

/* Lays out the step scratch in arena `a` (measure mode first, then for real). */
static void plan_scratch(zaya_infer *e, zaya_arena *a) {
    const zaya_config *c = &e->w->cfg;
    const int64_t N = e->cap, S = e->S, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads, qd = Hq * hd, kvd = Hkv * hd, C = qd + kvd;
    const int64_t R = c->router_hidden_size, E1 = c->num_experts + 1, V = c->vocab_size;
    const int64_t F = c->mlp == ZAYA_MLP_DENSE ? zaya_config_dense_ffn(c) : c->moe_intermediate_size;
#define F32(p, n) e->p = zaya_arena_floats(a, (size_t)(n))
    e->ids = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
    e->pos = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
    F32(x, N * D); F32(xn, N * D); F32(rstd, N); F32(qkpre, N * C); F32(qkraw, N * C); F32(qk, N * C);
    F32(inv, N * (Hq + Hkv)); F32(q, N * qd); F32(vv, N * kvd); F32(v, N * kvd); F32(att, N * qd);
    F32(a, N * D); F32(h, N * D); F32(z, N * D);
    F32(win, (N + S * e->W) * C);
    F32(conv0, (N + S * (c->cca_time1 - 1)) * C);
    F32(r, N * R); F32(rprev, N * R); F32(rn, N * R); F32(t1, N * R); F32(t2, N * R);
    F32(elog, N * E1); F32(probs, N * E1); F32(gate, N);
    e->idx = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
    e->perm = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
    e->rowof = zaya_arena_alloc(a, (size_t)N * sizeof(int32_t));
    e->off = zaya_arena_alloc(a, (size_t)(E1 + 1) * sizeof(int64_t));
    F32(xe, N * D); F32(gu, N * 2 * F); F32(act, N * F); F32(ye, N * D); F32(mo, N * D); F32(y, N * D);
    F32(ylast, S * D); F32(lglast, S * V);
    const int64_t maxin = max4(D, qd, F, R);
    F32(xr, ZAYA_INFER_GEMV_ROWS * maxin);
    F32(pa, N * (qd > kvd ? qd : kvd));
    F32(pb, N * (qd > kvd ? qd : kvd));
    e->bf_cap = e->w->dtype == ZAYA_DTYPE_BF16 ? (N > S ? N : S) * maxin : 0;
    e->bf = e->bf_cap ? zaya_arena_alloc(a, (size_t)e->bf_cap * sizeof(uint16_t)) : NULL;
    e->seg = zaya_arena_alloc(a, (size_t)S * sizeof(zaya_infer_seg));
    e->kp = zaya_arena_alloc(a, (size_t)S * sizeof(void *));
    e->vp = zaya_arena_alloc(a, (size_t)S * sizeof(void *));
    e->apos = zaya_arena_alloc(a, (size_t)S * sizeof(int64_t));
    e->arows = zaya_arena_alloc(a, (size_t)S * sizeof(int64_t));
#undef F32
}

static zaya_status init_engine(zaya_infer **out, const zaya_infer_weights *w, const zaya_model *m,
                               const zaya_infer_opts *opts) {
    *out = NULL;
    const zaya_config *c = w ? &w->cfg : &m->cfg;
    if (opts->max_seqs < 1 || opts->max_len < 1)
        return zaya_error_set(ZAYA_EINVAL, "inference needs max_seqs >= 1 and max_len >= 1 (got %lld, %lld)",
                              (long long)opts->max_seqs, (long long)opts->max_len);
    if (opts->max_len > c->max_position_embeddings)
        return zaya_error_set(ZAYA_ERANGE, "max_len %lld exceeds the model's max_position_embeddings %lld",
                              (long long)opts->max_len, (long long)c->max_position_embeddings);
    zaya_infer *e = calloc(1, sizeof *e);
    if (!e) return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the inference engine");
    if (!w) {
        zaya_status vs = zaya_infer_weights_view(&e->view, m);
        if (vs != ZAYA_OK) {
            free(e);
            return vs;
        }
        e->own_view = 1;
        w = &e->view;
    }
    e->w = w;
    e->kv_bf16 = w->dtype == ZAYA_DTYPE_BF16;
    e->kv_esz = e->kv_bf16 ? (int64_t)sizeof(uint16_t) : (int64_t)sizeof(float);
    const int L = (int)c->num_hidden_layers;
    const int64_t hd = c->head_dim, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const int64_t kvd = Hkv * hd, C = (Hq + Hkv) * hd;
    e->S = opts->max_seqs;
    e->Tmax = opts->max_len;
    e->cap = opts->max_step_tokens > 0 ? opts->max_step_tokens : opts->max_seqs * 64;
    e->W = (c->cca_time0 - 1) + (c->cca_time1 - 1);
    e->gemv = opts->gemv;

    /* caches: one block, per layer K, V (in the weights' dtype), conv state, delayed value (f32) */
    const int64_t kv_layer = 2 * e->S * e->Tmax * kvd * e->kv_esz;
    const int64_t st_layer = (e->S * e->W * C + e->S * (kvd / 2)) * (int64_t)sizeof(float);
    const int64_t per_layer = kv_layer + st_layer; /* bytes; both multiples of 4 */
    e->kc = calloc((size_t)L, sizeof(void *));
    e->vc = calloc((size_t)L, sizeof(void *));
    e->conv = calloc((size_t)L, sizeof(float *));
    e->vdel = calloc((size_t)L, sizeof(float *));
    e->len = calloc((size_t)e->S, sizeof(int64_t));
    e->mult = calloc((size_t)(L * (Hq + Hkv)), sizeof(float));
    e->cache_block = zaya_calloc((size_t)(per_layer * L), 1);
    if (!e->kc || !e->vc || !e->conv || !e->vdel || !e->len || !e->mult || !e->cache_block) {
        zaya_infer_free(e);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the KV cache (%.1f MiB)",
                              (double)(per_layer * L) / 1048576.0);
    }
    char *p = e->cache_block;
    for (int l = 0; l < L; l++) {
        e->kc[l] = p, p += kv_layer / 2;
        e->vc[l] = p, p += kv_layer / 2;
        e->conv[l] = (float *)p, p += e->S * e->W * C * (int64_t)sizeof(float);
        e->vdel[l] = (float *)p, p += e->S * (kvd / 2) * (int64_t)sizeof(float);
        for (int64_t i = 0; i < Hq; i++) e->mult[l * (Hq + Hkv) + i] = 1.0f;
        for (int64_t j = 0; j < Hkv; j++) e->mult[l * (Hq + Hkv) + Hq + j] = w->layers[l].temp[j];
    }
    zaya_arena measure;
    zaya_arena_init_measure(&measure);
    plan_scratch(e, &measure);
    zaya_status s = zaya_arena_init(&e->arena, measure.used);
    if (s != ZAYA_OK) {
        zaya_infer_free(e);
        return zaya_error_context(s, "inference scratch");
    }
    plan_scratch(e, &e->arena);
    e->kv_bytes = (int64_t)L * 2 * kvd * e->kv_esz;
    e->state_bytes = (int64_t)L * (e->W * C + kvd / 2) * (int64_t)sizeof(float);
    e->total_bytes = per_layer * L + (int64_t)measure.used;
    ZAYA_DEBUG("inference engine: %lld slots x %lld tokens, %lld B/token KV, %lld B/seq state, %.1f MiB in all",
               (long long)e->S, (long long)e->Tmax, (long long)e->kv_bytes, (long long)e->state_bytes,
               (double)e->total_bytes / 1048576.0);
    *out = e;
    return ZAYA_OK;
}

zaya_status zaya_infer_init(zaya_infer **out, zaya_model *m, const zaya_infer_opts *opts) {
    return init_engine(out, NULL, m, opts);
}

zaya_status zaya_infer_init_weights(zaya_infer **out, const zaya_infer_weights *w, const zaya_infer_opts *opts) {
    return init_engine(out, w, NULL, opts);
}

void zaya_infer_free(zaya_infer *e) {
    if (!e) return;
    if (e->own_view) zaya_infer_weights_free(&e->view);
    zaya_arena_free(&e->arena);
    zaya_free(e->cache_block);
    free(e->kc);
    free(e->vc);
    free(e->conv);
    free(e->vdel);
    free(e->len);
    free(e->mult);
    free(e);
}

int64_t zaya_infer_kv_bytes_per_token(const zaya_infer *e) { return e->kv_bytes; }
int64_t zaya_infer_state_bytes_per_seq(const zaya_infer *e) { return e->state_bytes; }
int64_t zaya_infer_total_bytes(const zaya_infer *e) { return e->total_bytes; }
int64_t zaya_infer_max_len(const zaya_infer *e) { return e->Tmax; }
int64_t zaya_infer_max_seqs(const zaya_infer *e) { return e->S; }
int64_t zaya_infer_vocab(const zaya_infer *e) { return e->w->cfg.vocab_size; }
int64_t zaya_infer_bytes_read(const zaya_infer *e) { return e->bytes_read; }
const zaya_infer_weights *zaya_infer_get_weights(const zaya_infer *e) { return e->w; }
int64_t zaya_infer_step_tokens(const zaya_infer *e) { return e->cap; }
void zaya_infer_set_gemv(zaya_infer *e, int on) { e->gemv = on; }
int64_t zaya_infer_len(const zaya_infer *e, int64_t slot) { return e->len[slot]; }

void zaya_infer_reset(zaya_infer *e, int64_t slot) {
    ZAYA_ASSERT(slot >= 0 && slot < e->S);
    const zaya_config *c = &e->w->cfg;
    const int64_t kvd = c->num_key_value_heads * c->head_dim, C = zaya_config_q_dim(c) + kvd;
    e->len[slot] = 0;
    /* K/V rows are always written before they are read; only the recurrent state must restart at 0 */
    for (int l = 0; l < (int)c->num_hidden_layers; l++) {
        if (e->W > 0) memset(e->conv[l] + slot * e->W * C, 0, (size_t)(e->W * C) * sizeof(float));
        memset(e->vdel[l] + slot * (kvd / 2), 0, (size_t)(kvd / 2) * sizeof(float));
    }
}

void zaya_infer_copy_slot(zaya_infer *e, int64_t dst, int64_t src) {
    ZAYA_ASSERT(dst >= 0 && dst < e->S && src >= 0 && src < e->S);
    if (dst == src) return;
    const zaya_config *c = &e->w->cfg;
    const int64_t kvd = c->num_key_value_heads * c->head_dim, C = zaya_config_q_dim(c) + kvd, n = e->len[src];
    const int64_t row = e->Tmax * kvd * e->kv_esz; /* one slot's cache */
    for (int l = 0; l < (int)c->num_hidden_layers; l++) {
        memcpy((char *)e->kc[l] + dst * row, (char *)e->kc[l] + src * row, (size_t)(n * kvd * e->kv_esz));
        memcpy((char *)e->vc[l] + dst * row, (char *)e->vc[l] + src * row, (size_t)(n * kvd * e->kv_esz));
        if (e->W > 0) memcpy(e->conv[l] + dst * e->W * C, e->conv[l] + src * e->W * C, (size_t)(e->W * C) * sizeof(float));
        memcpy(e->vdel[l] + dst * (kvd / 2), e->vdel[l] + src * (kvd / 2), (size_t)(kvd / 2) * sizeof(float));
    }
    e->len[dst] = n;
}

/* Runs the rows of e->seg[0..nseg) (ids and positions already in e->ids/e->pos); leaves the final
 * normed hidden states in e->y. */
static void run_rows(zaya_infer *e, int64_t N, int64_t nseg) {
    const zaya_infer_weights *w = e->w;
    const zaya_config *c = &w->cfg;
    const int64_t D = c->hidden_size;
    const float eps = (float)c->rms_norm_eps;
    if (w->dtype == ZAYA_DTYPE_BF16) {
        for (int64_t i = 0; i < N; i++)
            zaya_bf16_to_f32_n(e->x + i * D, (const uint16_t *)w->embed + (int64_t)e->ids[i] * D, (size_t)D);
        e->bytes_read += N * D * (int64_t)sizeof(uint16_t);
    } else {
        zaya_embedding_forward(e->x, w->embed, e->ids, N, D);
        e->bytes_read += N * D * (int64_t)sizeof(float);
    }
    const float *b = w->in_bias, *sc = w->in_scale;
    for (int64_t i = 0; i < N; i++)
#pragma omp simd
        for (int64_t j = 0; j < D; j++) e->x[i * D + j] = (e->x[i * D + j] + b[j]) * sc[j];
    for (int l = 0; l < (int)c->num_hidden_layers; l++) {
        const zaya_infer_layer_w *P = &w->layers[l];
        zaya_rmsnorm_forward(e->xn, e->rstd, e->x, P->in_norm, N, D, eps);
        zaya_infer_cca(e, l, N, nseg);
        zaya_merge_forward(e->h, e->a, P->att_hb, P->att_hs, e->x, P->att_rb, P->att_rs, N, D);
        zaya_rmsnorm_forward(e->z, e->rstd, e->h, P->post_norm, N, D, eps);
        zaya_infer_moe(e, l, N);
        float *t = e->rprev; /* this layer's router state feeds the next layer's EDA */
        e->rprev = e->r;
        e->r = t;
        zaya_merge_forward(e->x, e->mo, P->mlp_hb, P->mlp_hs, e->h, P->mlp_rb, P->mlp_rs, N, D);
    }
    zaya_rmsnorm_forward(e->y, e->rstd, e->x, w->final_norm, N, D, eps);
}

static zaya_status validate(const zaya_infer *e, int64_t nseq, const int64_t *slots, const int64_t *n_tokens,
                            const int32_t *tokens) {
    const int64_t V = e->w->cfg.vocab_size;
    if (nseq < 0 || nseq > e->S)
        return zaya_error_set(ZAYA_EINVAL, "%lld sequences in a step, the engine has %lld slots", (long long)nseq,
                              (long long)e->S);
    int64_t off = 0;
    for (int64_t s = 0; s < nseq; s++) {
        if (slots[s] < 0 || slots[s] >= e->S)
            return zaya_error_set(ZAYA_ERANGE, "slot %lld outside [0, %lld)", (long long)slots[s], (long long)e->S);
        for (int64_t t = 0; t < s; t++)
            if (slots[t] == slots[s]) return zaya_error_set(ZAYA_EINVAL, "slot %lld appears twice in one step",
                                                            (long long)slots[s]);
        if (n_tokens[s] < 0) return zaya_error_set(ZAYA_EINVAL, "negative token count for slot %lld", (long long)slots[s]);
        if (e->len[slots[s]] + n_tokens[s] > e->Tmax)
            return zaya_error_set(ZAYA_ERANGE, "sequence in slot %lld would reach %lld tokens, the maximum is %lld",
                                  (long long)slots[s], (long long)(e->len[slots[s]] + n_tokens[s]),
                                  (long long)e->Tmax);
        for (int64_t i = 0; i < n_tokens[s]; i++)
            if (tokens[off + i] < 0 || tokens[off + i] >= V)
                return zaya_error_set(ZAYA_ERANGE, "token id %d (sequence %lld, token %lld) is outside the vocabulary "
                                      "[0, %lld)", tokens[off + i], (long long)s, (long long)i, (long long)V);
        off += n_tokens[s];
    }
    return ZAYA_OK;
}

zaya_status zaya_infer_step(zaya_infer *e, int64_t nseq, const int64_t *slots, const int64_t *n_tokens,
                            const int32_t *tokens, float *logits, int all_rows) {
    ZAYA_TRY(validate(e, nseq, slots, n_tokens, tokens));
    const zaya_infer_weights *w = e->w;
    const int64_t D = w->cfg.hidden_size, V = w->cfg.vocab_size;
    int64_t s = 0, done = 0, tok = 0; /* sequence, its tokens already run, its first token in `tokens` */
    int64_t global_row = 0;           /* rows of the whole step before this piece */
    while (s < nseq) {
        /* gather a piece of at most cap rows: whole sequences, possibly a head or tail of one */
        int64_t nseg = 0, N = 0, nlast = 0;
        int64_t last_of[e->S > 0 ? e->S : 1]; /* segment index whose last token ends sequence j */
        int64_t last_seq[e->S > 0 ? e->S : 1];
        while (s < nseq && N < e->cap) {
            const int64_t rem = n_tokens[s] - done;
            if (rem == 0) {
                s++, done = 0;
                continue;
            }
            const int64_t take = rem < e->cap - N ? rem : e->cap - N;
            zaya_infer_seg *g = &e->seg[nseg];
            g->slot = slots[s];
            g->n = take;
            g->row0 = N;
            g->pos0 = e->len[slots[s]];
            for (int64_t i = 0; i < take; i++) {
                e->ids[N + i] = tokens[tok + done + i];
                e->pos[N + i] = (int32_t)(g->pos0 + i);
            }
            N += take;
            done += take;
            e->len[slots[s]] += take;
            if (done == n_tokens[s]) {
                last_of[nlast] = nseg;
                last_seq[nlast++] = s;
                tok += n_tokens[s];
                s++, done = 0;
            }
            nseg++;
        }
        if (N == 0) break;
        run_rows(e, N, nseg);
        if (logits && all_rows) {
            zaya_infer_lin(e, logits + global_row * V, e->y, w->embed, N, D, V);
        } else if (logits && nlast > 0) {
            for (int64_t j = 0; j < nlast; j++) {
                const zaya_infer_seg *g = &e->seg[last_of[j]];
                memcpy(e->ylast + j * D, e->y + (g->row0 + g->n - 1) * D, (size_t)D * sizeof(float));
            }
            zaya_infer_lin(e, e->lglast, e->ylast, w->embed, nlast, D, V);
            for (int64_t j = 0; j < nlast; j++)
                memcpy(logits + last_seq[j] * V, e->lglast + j * V, (size_t)V * sizeof(float));
        }
        global_row += N;
    }
    return ZAYA_OK;
}
