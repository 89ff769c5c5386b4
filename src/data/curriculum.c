/* Run files: parsing with validation, defaults, the step plan and step -> hyper-parameter mapping. */
#include "zaya/curriculum.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/fs.h"
#include "zaya/json.h"

/* The paper's recipe at CPU scale: broad text at short context, then code upweighted, then context
 * extension with 4x longer sequences and a 10x RoPE base (the paper goes 4K -> 32K with theta
 * 10K -> 1M). Every phase moves 4096 tokens per step once the batch ramp is over; docs/data-format.md
 * states its numbers through tests/builtin_run_doc.c, which fails when they go stale. */
const char zaya_run_default_json[] =
    "{\n"
    "  \"name\": \"zaya1-cpu-3phase\",\n"
    "  \"seed\": 1234,\n"
    "  \"seq_multiple\": 8,\n"
    "  \"batch_multiple\": 4,\n"
    "  \"phases\": [\n"
    "    {\"name\": \"broad\", \"tokens\": 786432, \"sources\": {\"prose\": 0.85, \"code\": 0.15},\n"
    "     \"seq_len\": 128, \"batch\": {\"from\": 16, \"to\": 32, \"ramp_tokens\": 131072}, \"rope_theta\": 10000,\n"
    "     \"lr\": {\"peak\": 0.004, \"final\": 0.004, \"warmup_tokens\": 65536, \"decay\": \"wsd\", \"decay_fraction\": 0}},\n"
    "    {\"name\": \"code-upweight\", \"tokens\": 393216, \"sources\": {\"prose\": 0.45, \"code\": 0.55},\n"
    "     \"lr\": {\"peak\": 0.004, \"final\": 0.0008, \"decay\": \"wsd\", \"decay_fraction\": 0.5}},\n"
    "    {\"name\": \"context-extension\", \"tokens\": 196608, \"sources\": {\"prose\": 0.6, \"code\": 0.4},\n"
    "     \"seq_len\": 512, \"batch\": 8, \"rope_theta\": 100000,\n"
    "     \"lr\": {\"peak\": 0.0008, \"final\": 0.00008, \"decay\": \"cosine\"}}\n"
    "  ]\n"
    "}\n";

#define ERR(...) zaya_error_set(ZAYA_EINVAL, __VA_ARGS__)

static zaya_status check_keys(const cJSON *obj, const char *const *allowed) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, it->string);
        if (!ok) return ERR("unknown key '%s'", it->string);
    }
    return ZAYA_OK;
}

static zaya_status get_name(const cJSON *o, const char *key, char *dst, size_t cap, int required) {
    const char *s = NULL;
    ZAYA_TRY(zaya_json_get_str(o, key, &s, required));
    if (!s) return ZAYA_OK;
    if (!*s || strlen(s) >= cap) return ERR("key '%s': '%s' must have 1 to %zu characters", key, s, cap - 1);
    snprintf(dst, cap, "%s", s);
    return ZAYA_OK;
}

static zaya_status get_patterns(const cJSON *o, const char *key, char **dst, int *n) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it) return ZAYA_OK;
    if (cJSON_IsString(it)) {
        if (!*it->valuestring) return ERR("key '%s' must be a non-empty path pattern", key);
        if (!(dst[0] = strdup(it->valuestring))) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
        *n = 1;
        return ZAYA_OK;
    }
    if (!cJSON_IsArray(it)) return ERR("key '%s' must be a path pattern or a list of them", key);
    int m = cJSON_GetArraySize(it);
    if (m < 1 || m > ZAYA_RUN_MAX_PATTERNS) return ERR("key '%s' must list 1 to %d patterns", key, ZAYA_RUN_MAX_PATTERNS);
    for (int i = 0; i < m; i++) {
        const cJSON *p = cJSON_GetArrayItem(it, i);
        if (!cJSON_IsString(p) || !*p->valuestring) return ERR("key '%s': entry %d must be a non-empty string", key, i);
        if (!(dst[i] = strdup(p->valuestring))) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
        *n = i + 1;
    }
    return ZAYA_OK;
}

static int find_source(const zaya_run *run, const char *name) {
    for (int i = 0; i < run->nsources; i++)
        if (!strcmp(run->sources[i].name, name)) return i;
    return -1;
}

static zaya_status add_source(zaya_run *run, const char *name, zaya_run_source **out) {
    int i = find_source(run, name);
    if (i < 0) {
        if (run->nsources == ZAYA_DATA_MAX_SOURCES)
            return zaya_error_set(ZAYA_ERANGE, "more than %d data sources", ZAYA_DATA_MAX_SOURCES);
        i = run->nsources++;
        snprintf(run->sources[i].name, ZAYA_DATA_NAME_MAX, "%s", name);
        run->sources[i].eos_id = ZAYA_SHARD_NO_EOS;
    }
    *out = &run->sources[i];
    return ZAYA_OK;
}

static zaya_status parse_sources_table(const cJSON *tab, zaya_run *run) {
    if (!cJSON_IsObject(tab)) return ERR("key 'sources' must be an object of name -> {train, val}");
    static const char *const keys[] = {"train", "val", "vocab_size", "eos_id", NULL};
    for (const cJSON *it = tab->child; it; it = it->next) {
        if (!*it->string || strlen(it->string) >= ZAYA_DATA_NAME_MAX)
            return ERR("sources: name '%s' must have 1 to %d characters", it->string, ZAYA_DATA_NAME_MAX - 1);
        if (find_source(run, it->string) >= 0) return ERR("sources: '%s' given twice", it->string);
        zaya_run_source *s = NULL;
        ZAYA_TRY(add_source(run, it->string, &s));
        if (!cJSON_IsObject(it)) return ERR("sources.%s must be an object with 'train' and 'val'", it->string);
        zaya_status r = check_keys(it, keys);
        if (r == ZAYA_OK) r = get_patterns(it, "train", s->train, &s->ntrain);
        if (r == ZAYA_OK) r = get_patterns(it, "val", s->val, &s->nval);
        /* Megatron and llm.c token files store neither: the source says them (docs/data-format.md). */
        int64_t vocab = 0, eos = -1;
        if (r == ZAYA_OK) r = zaya_json_get_i64(it, "vocab_size", &vocab, 0);
        if (r == ZAYA_OK && (vocab < 0 || vocab > (1ll << 31)))
            r = ERR("key 'vocab_size' must be in [1, 2^31], got %" PRId64, vocab);
        if (r == ZAYA_OK) r = zaya_json_get_i64(it, "eos_id", &eos, 0);
        if (r == ZAYA_OK && cJSON_GetObjectItemCaseSensitive(it, "eos_id") && (eos < 0 || (vocab > 0 && eos >= vocab)))
            r = ERR("key 'eos_id' must be in [0, vocab_size %" PRId64 "), got %" PRId64, vocab, eos);
        s->vocab_size = (uint64_t)vocab;
        s->eos_id = eos < 0 ? ZAYA_SHARD_NO_EOS : (uint32_t)eos;
        if (r != ZAYA_OK) return zaya_error_context(r, "sources.%s", it->string);
    }
    return ZAYA_OK;
}

static zaya_status parse_lr(const cJSON *lr, zaya_phase *p) {
    static const char *const keys[] = {"peak", "final", "warmup_tokens", "decay", "decay_fraction", NULL};
    if (!cJSON_IsObject(lr)) return ERR("key 'lr' must be an object {peak, final, warmup_tokens, decay, decay_fraction}");
    ZAYA_TRY(check_keys(lr, keys));
    int has_peak = cJSON_GetObjectItemCaseSensitive(lr, "peak") != NULL;
    ZAYA_TRY(zaya_json_get_f64(lr, "peak", &p->lr_peak, 0));
    if (has_peak) p->lr_final = p->lr_peak; /* a new peak without a final means constant */
    ZAYA_TRY(zaya_json_get_f64(lr, "final", &p->lr_final, 0));
    ZAYA_TRY(zaya_json_get_i64(lr, "warmup_tokens", &p->warmup_tokens, 0));
    const char *decay = NULL;
    ZAYA_TRY(zaya_json_get_str(lr, "decay", &decay, 0));
    if (decay) {
        if (!strcmp(decay, "cosine")) p->decay = ZAYA_LR_COSINE;
        else if (!strcmp(decay, "wsd")) p->decay = ZAYA_LR_WSD;
        else return ERR("key 'lr.decay': '%s' is not one of cosine, wsd", decay);
    }
    ZAYA_TRY(zaya_json_get_f64(lr, "decay_fraction", &p->decay_fraction, 0));
    return ZAYA_OK;
}

static zaya_status parse_phase(const cJSON *o, const zaya_phase *prev, const zaya_run *run, zaya_phase *p) {
    static const char *const keys[] = {"name", "tokens", "sources", "seq_len", "batch", "rope_theta", "lr",
                                       "cp", "first_step", "steps", "first_token", NULL};
    if (!cJSON_IsObject(o)) return ERR("must be an object");
    ZAYA_TRY(check_keys(o, keys));
    /* Everything not given continues the previous phase; the lr segment continues from its final. */
    if (prev) {
        *p = *prev;
        p->batch_from = prev->batch;
        p->batch_ramp_tokens = 0;
        p->lr_peak = p->lr_final = prev->lr_final;
        p->warmup_tokens = 0;
        p->decay = ZAYA_LR_COSINE;
        p->decay_fraction = 0.2;
    } else {
        memset(p, 0, sizeof *p);
        p->rope_theta = 10000.0;
        p->decay = ZAYA_LR_COSINE;
        p->decay_fraction = 0.2;
        p->lr_peak = p->lr_final = NAN;
    }
    p->ramp_tokens = NULL;
    p->name[0] = '\0';
    ZAYA_TRY(get_name(o, "name", p->name, sizeof p->name, 0));
    ZAYA_TRY(zaya_json_get_i64(o, "tokens", &p->tokens, 1));
    if (p->tokens <= 0) return ERR("key 'tokens': the token budget must be positive, got %" PRId64, p->tokens);
    if (p->tokens > ZAYA_RUN_MAX_TOKENS)
        return ERR("key 'tokens' must be at most %lld (ZAYA_RUN_MAX_TOKENS), got %" PRId64, ZAYA_RUN_MAX_TOKENS, p->tokens);

    const cJSON *src = cJSON_GetObjectItemCaseSensitive(o, "sources");
    if (src) {
        if (!cJSON_IsObject(src) || !src->child) return ERR("key 'sources' must be a non-empty object of name -> weight");
        p->nsources = 0;
        double total = 0;
        for (const cJSON *it = src->child; it; it = it->next) {
            if (p->nsources == ZAYA_DATA_MAX_SOURCES) return ERR("key 'sources': more than %d sources", ZAYA_DATA_MAX_SOURCES);
            if (!*it->string || strlen(it->string) >= ZAYA_DATA_NAME_MAX)
                return ERR("key 'sources': name '%s' must have 1 to %d characters", it->string, ZAYA_DATA_NAME_MAX - 1);
            for (int k = 0; k < p->nsources; k++)
                if (!strcmp(p->source[k], it->string)) return ERR("key 'sources': '%s' given twice", it->string);
            if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0)
                return ERR("key 'sources.%s': the weight must be a number >= 0", it->string);
            snprintf(p->source[p->nsources], ZAYA_DATA_NAME_MAX, "%s", it->string);
            p->weight[p->nsources++] = it->valuedouble;
            total += it->valuedouble;
        }
        if (!(total > 0)) return ERR("key 'sources': the weights are all zero");
    } else if (!prev) {
        return ERR("missing required key 'sources'");
    }

    if (!prev && !cJSON_GetObjectItemCaseSensitive(o, "seq_len")) return ERR("missing required key 'seq_len'");
    ZAYA_TRY(zaya_json_get_i64(o, "seq_len", &p->seq_len, 0));
    if (p->seq_len > ZAYA_RUN_MAX_SEQ_LEN)
        return ERR("key 'seq_len' must be at most %lld (ZAYA_RUN_MAX_SEQ_LEN), got %" PRId64, ZAYA_RUN_MAX_SEQ_LEN,
                   p->seq_len);
    if (p->seq_len < 2 || p->seq_len % run->seq_multiple != 0)
        return ERR("key 'seq_len': must be a multiple of seq_multiple %" PRId64 " and >= 2, got %" PRId64,
                   run->seq_multiple, p->seq_len);

    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "batch");
    if (!b && !prev) return ERR("missing required key 'batch'");
    if (b && cJSON_IsObject(b)) {
        static const char *const bkeys[] = {"from", "to", "ramp_tokens", NULL};
        zaya_status r = check_keys(b, bkeys);
        if (r == ZAYA_OK) r = zaya_json_get_i64(b, "to", &p->batch, 1);
        p->batch_from = p->batch;
        if (r == ZAYA_OK) r = zaya_json_get_i64(b, "from", &p->batch_from, 0);
        if (r == ZAYA_OK) r = zaya_json_get_i64(b, "ramp_tokens", &p->batch_ramp_tokens, 0);
        if (r != ZAYA_OK) return zaya_error_context(r, "key 'batch'");
    } else if (b) {
        ZAYA_TRY(zaya_json_get_i64(o, "batch", &p->batch, 1));
        p->batch_from = p->batch;
    }
    int64_t bm = run->batch_multiple;
    if (p->batch > ZAYA_RUN_MAX_BATCH)
        return ERR("key 'batch' must be at most %lld sequences (ZAYA_RUN_MAX_BATCH), got %" PRId64, ZAYA_RUN_MAX_BATCH,
                   p->batch);
    if (p->batch < 1 || p->batch % bm != 0)
        return ERR("key 'batch': the global batch must be a positive multiple of batch_multiple %" PRId64 ", got %" PRId64,
                   bm, p->batch);
    if (p->batch_from < 1 || p->batch_from % bm != 0 || p->batch_from > p->batch)
        return ERR("key 'batch.from': must be a positive multiple of %" PRId64 " and <= batch.to %" PRId64 ", got %" PRId64,
                   bm, p->batch, p->batch_from);
    if (p->batch_ramp_tokens < 0 || p->batch_ramp_tokens > ZAYA_RUN_MAX_TOKENS)
        return ERR("key 'batch.ramp_tokens' must be in [0, %lld] (ZAYA_RUN_MAX_TOKENS), got %" PRId64, ZAYA_RUN_MAX_TOKENS,
                   p->batch_ramp_tokens);
    if (p->batch_ramp_tokens == 0) p->batch_from = p->batch;

    ZAYA_TRY(zaya_json_get_f64(o, "rope_theta", &p->rope_theta, 0));
    if (cJSON_GetObjectItemCaseSensitive(o, "cp")) {
        ZAYA_TRY(zaya_json_get_i64(o, "cp", &p->cp, 0));
        if (p->cp < 1 || p->cp > 4096) return ERR("key 'cp' (context-parallel ranks) must be in [1, 4096], got %" PRId64, p->cp);
        if (p->seq_len % p->cp != 0)
            return ERR("seq_len %" PRId64 " is not divisible by cp %" PRId64 ": every context-parallel rank holds an equal chunk",
                       p->seq_len, p->cp);
    }
    if (!(p->rope_theta > 1.0)) return ERR("key 'rope_theta' must be > 1, got %g", p->rope_theta);

    const cJSON *lr = cJSON_GetObjectItemCaseSensitive(o, "lr");
    if (lr) ZAYA_TRY(parse_lr(lr, p));
    if (!prev && !(lr && cJSON_GetObjectItemCaseSensitive(lr, "peak"))) return ERR("missing required key 'lr.peak'");
    if (!(p->lr_peak > 0)) return ERR("key 'lr.peak' must be > 0, got %g", p->lr_peak);
    if (!(p->lr_final >= 0)) return ERR("key 'lr.final' must be >= 0, got %g", p->lr_final);
    if (p->warmup_tokens < 0 || p->warmup_tokens >= p->tokens)
        return ERR("key 'lr.warmup_tokens' must be in [0, tokens %" PRId64 "), got %" PRId64, p->tokens, p->warmup_tokens);
    if (!(p->decay_fraction >= 0 && p->decay_fraction <= 1))
        return ERR("key 'lr.decay_fraction' must be in [0, 1], got %g", p->decay_fraction);
    return ZAYA_OK;
}

/* Ramped batch at `t` phase tokens: linear in tokens, rounded down to the batch multiple. */
static int64_t ramp_batch(const zaya_phase *p, int64_t t, int64_t multiple) {
    if (p->batch_ramp_tokens <= 0 || t >= p->batch_ramp_tokens) return p->batch;
    __int128 g = (__int128)(p->batch - p->batch_from) * t / p->batch_ramp_tokens + p->batch_from;
    int64_t b = (int64_t)g / multiple * multiple;
    return b < p->batch_from ? p->batch_from : b;
}

static zaya_status plan_phase(zaya_phase *p, int64_t multiple) {
    int64_t t = 0, cap = 64, n = 0;
    p->ramp_tokens = malloc((size_t)cap * sizeof *p->ramp_tokens);
    if (!p->ramp_tokens) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    while (t < p->tokens && t < p->batch_ramp_tokens) {
        if (n == (1 << 24)) /* the table holds one entry per ramp step */
            return ERR("key 'batch.ramp_tokens': the ramp would last more than %d steps", 1 << 24);
        if (n + 1 == cap) {
            int64_t *r = realloc(p->ramp_tokens, (size_t)(cap *= 2) * sizeof *r);
            if (!r) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
            p->ramp_tokens = r;
        }
        p->ramp_tokens[n++] = t;
        t += ramp_batch(p, t, multiple) * p->seq_len;
    }
    p->ramp_tokens[n] = t;
    p->ramp_steps = n;
    int64_t per = p->batch * p->seq_len, rest = p->tokens > t ? p->tokens - t : 0;
    p->steps = n + (rest + per - 1) / per;
    return ZAYA_OK;
}

static zaya_status parse_run(const cJSON *j, zaya_run *run) {
    static const char *const keys[] = {"name", "seed", "data_dir", "seq_multiple", "batch_multiple", "sources",
                                       "phases", "total_steps", "total_tokens", NULL};
    if (!cJSON_IsObject(j)) return ERR("a run file must be a JSON object");
    ZAYA_TRY(check_keys(j, keys));
    snprintf(run->name, sizeof run->name, "run");
    ZAYA_TRY(get_name(j, "name", run->name, sizeof run->name, 0));
    int64_t seed = 1234;
    ZAYA_TRY(zaya_json_get_i64(j, "seed", &seed, 0));
    if (seed < 0) return ERR("key 'seed' must be >= 0");
    run->seed = (uint64_t)seed;
    const char *dir = "data";
    ZAYA_TRY(zaya_json_get_str(j, "data_dir", &dir, 0));
    if (!(run->data_dir = strdup(dir))) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    run->seq_multiple = 8;
    run->batch_multiple = 1;
    ZAYA_TRY(zaya_json_get_i64(j, "seq_multiple", &run->seq_multiple, 0));
    ZAYA_TRY(zaya_json_get_i64(j, "batch_multiple", &run->batch_multiple, 0));
    if (run->seq_multiple < 1 || run->seq_multiple > ZAYA_RUN_MAX_SEQ_LEN)
        return ERR("key 'seq_multiple' must be in [1, %lld] (ZAYA_RUN_MAX_SEQ_LEN), got %" PRId64, ZAYA_RUN_MAX_SEQ_LEN,
                   run->seq_multiple);
    if (run->batch_multiple < 1 || run->batch_multiple > ZAYA_RUN_MAX_BATCH)
        return ERR("key 'batch_multiple' must be in [1, %lld] (ZAYA_RUN_MAX_BATCH), got %" PRId64, ZAYA_RUN_MAX_BATCH,
                   run->batch_multiple);
    const cJSON *tab = cJSON_GetObjectItemCaseSensitive(j, "sources");
    if (tab) ZAYA_TRY(parse_sources_table(tab, run));

    const cJSON *phases = cJSON_GetObjectItemCaseSensitive(j, "phases");
    if (!cJSON_IsArray(phases) || cJSON_GetArraySize(phases) < 1)
        return ERR("key 'phases' must be a non-empty array");
    int n = cJSON_GetArraySize(phases);
    if (n > ZAYA_RUN_MAX_PHASES) return ERR("key 'phases': %d phases, at most %d", n, ZAYA_RUN_MAX_PHASES);
    int64_t step = 0, tokens = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *o = cJSON_GetArrayItem(phases, i);
        zaya_phase *p = &run->phases[i];
        zaya_status r = parse_phase(o, i ? &run->phases[i - 1] : NULL, run, p);
        if (r == ZAYA_OK && !p->name[0]) snprintf(p->name, sizeof p->name, "phase%d", i);
        for (int k = 0; r == ZAYA_OK && k < i; k++)
            if (!strcmp(run->phases[k].name, p->name)) r = ERR("key 'name': '%s' is also the name of phases[%d]", p->name, k);
        for (int k = 0; r == ZAYA_OK && k < p->nsources; k++) {
            zaya_run_source *s = NULL;
            r = add_source(run, p->source[k], &s);
        }
        if (r == ZAYA_OK) {
            run->nphases = i + 1; /* from here on zaya_run_free releases its ramp table */
            r = plan_phase(p, run->batch_multiple);
        }
        if (r != ZAYA_OK) {
            const cJSON *nm = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "name") : NULL;
            if (cJSON_IsString(nm)) return zaya_error_context(r, "phases[%d] ('%s')", i, nm->valuestring);
            return zaya_error_context(r, "phases[%d]", i);
        }
        p->first_step = step;
        p->first_token = tokens;
        step += p->steps;
        tokens += p->ramp_tokens[p->ramp_steps] + (p->steps - p->ramp_steps) * p->batch * p->seq_len;
    }
    run->total_steps = step;
    run->total_tokens = tokens;
    /* Sources without explicit patterns live in data_dir under the names zaya_data_prepare writes. */
    for (int i = 0; i < run->nsources; i++) {
        zaya_run_source *s = &run->sources[i];
        char buf[4200];
        if (s->ntrain == 0) {
            snprintf(buf, sizeof buf, "%s/%s-train-*%s", run->data_dir, s->name, ZAYA_SHARD_EXT);
            if (!(s->train[s->ntrain++] = strdup(buf))) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
        }
        if (s->nval == 0) {
            snprintf(buf, sizeof buf, "%s/%s-val-*%s", run->data_dir, s->name, ZAYA_SHARD_EXT);
            if (!(s->val[s->nval++] = strdup(buf))) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
        }
    }
    return ZAYA_OK;
}

zaya_status zaya_run_parse(const cJSON *json, const char *what, zaya_run *run) {
    memset(run, 0, sizeof *run);
    zaya_status s = parse_run(json, run);
    if (s != ZAYA_OK) {
        zaya_run_free(run);
        return zaya_error_context(s, "%s", what);
    }
    return ZAYA_OK;
}

zaya_status zaya_run_load(const char *path, zaya_run *run) {
    cJSON *j;
    memset(run, 0, sizeof *run);
    ZAYA_TRY(zaya_json_load_file_max(path, ZAYA_JSON_RUN_MAX_BYTES, "a run file", &j));
    zaya_status s = zaya_run_parse(j, path, run);
    cJSON_Delete(j);
    return s;
}

zaya_status zaya_run_default(const char *data_dir, zaya_run *run) {
    cJSON *j;
    memset(run, 0, sizeof *run);
    ZAYA_TRY(zaya_json_parse(zaya_run_default_json, "built-in run", &j));
    if (data_dir) cJSON_AddStringToObject(j, "data_dir", data_dir);
    zaya_status s = zaya_run_parse(j, "built-in run", run);
    cJSON_Delete(j);
    return s;
}

void zaya_run_free(zaya_run *run) {
    free(run->data_dir);
    for (int i = 0; i < run->nsources; i++) {
        for (int k = 0; k < run->sources[i].ntrain; k++) free(run->sources[i].train[k]);
        for (int k = 0; k < run->sources[i].nval; k++) free(run->sources[i].val[k]);
    }
    for (int i = 0; i < run->nphases; i++) free(run->phases[i].ramp_tokens);
    memset(run, 0, sizeof *run);
}

static cJSON *string_list(char *const *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

zaya_status zaya_run_to_json(const zaya_run *run, cJSON **out) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    cJSON_AddStringToObject(j, "name", run->name);
    cJSON_AddNumberToObject(j, "seed", (double)run->seed);
    cJSON_AddStringToObject(j, "data_dir", run->data_dir);
    cJSON_AddNumberToObject(j, "seq_multiple", (double)run->seq_multiple);
    cJSON_AddNumberToObject(j, "batch_multiple", (double)run->batch_multiple);
    cJSON *tab = cJSON_AddObjectToObject(j, "sources");
    for (int i = 0; i < run->nsources; i++) {
        const zaya_run_source *s = &run->sources[i];
        cJSON *o = cJSON_AddObjectToObject(tab, s->name);
        cJSON_AddItemToObject(o, "train", string_list(s->train, s->ntrain));
        cJSON_AddItemToObject(o, "val", string_list(s->val, s->nval));
        if (s->vocab_size) cJSON_AddNumberToObject(o, "vocab_size", (double)s->vocab_size);
        if (s->eos_id != ZAYA_SHARD_NO_EOS) cJSON_AddNumberToObject(o, "eos_id", (double)s->eos_id);
    }
    cJSON *arr = cJSON_AddArrayToObject(j, "phases");
    for (int i = 0; i < run->nphases; i++) {
        const zaya_phase *p = &run->phases[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON_AddNumberToObject(o, "tokens", (double)p->tokens);
        cJSON *w = cJSON_AddObjectToObject(o, "sources");
        for (int k = 0; k < p->nsources; k++) cJSON_AddNumberToObject(w, p->source[k], p->weight[k]);
        cJSON_AddNumberToObject(o, "seq_len", (double)p->seq_len);
        cJSON *b = cJSON_AddObjectToObject(o, "batch");
        cJSON_AddNumberToObject(b, "from", (double)p->batch_from);
        cJSON_AddNumberToObject(b, "to", (double)p->batch);
        cJSON_AddNumberToObject(b, "ramp_tokens", (double)p->batch_ramp_tokens);
        cJSON_AddNumberToObject(o, "rope_theta", p->rope_theta);
        if (p->cp > 0) cJSON_AddNumberToObject(o, "cp", (double)p->cp);
        cJSON *lr = cJSON_AddObjectToObject(o, "lr");
        cJSON_AddNumberToObject(lr, "peak", p->lr_peak);
        cJSON_AddNumberToObject(lr, "final", p->lr_final);
        cJSON_AddNumberToObject(lr, "warmup_tokens", (double)p->warmup_tokens);
        cJSON_AddStringToObject(lr, "decay", p->decay == ZAYA_LR_WSD ? "wsd" : "cosine");
        cJSON_AddNumberToObject(lr, "decay_fraction", p->decay_fraction);
        cJSON_AddNumberToObject(o, "first_step", (double)p->first_step);
        cJSON_AddNumberToObject(o, "steps", (double)p->steps);
        cJSON_AddNumberToObject(o, "first_token", (double)p->first_token);
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddNumberToObject(j, "total_steps", (double)run->total_steps);
    cJSON_AddNumberToObject(j, "total_tokens", (double)run->total_tokens);
    *out = j;
    return ZAYA_OK;
}

zaya_status zaya_run_write_resolved(const zaya_run *run, const char *dir) {
    char path[4096];
    ZAYA_TRY(zaya_mkdir_p(dir));
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, "run.json"));
    cJSON *j;
    ZAYA_TRY(zaya_run_to_json(run, &j));
    zaya_status s = zaya_json_write_file(path, j, 1);
    cJSON_Delete(j);
    return s;
}

zaya_status zaya_run_check_world(const zaya_run *run, int world_size) {
    if (world_size < 1) return ERR("world size %d must be >= 1", world_size);
    if (run->batch_multiple % world_size != 0)
        return ERR("run '%s': batch_multiple %" PRId64 " is not divisible by the %d data-parallel ranks, so they cannot "
                   "split every global batch evenly", run->name, run->batch_multiple, world_size);
    return ZAYA_OK;
}

static double phase_lr(const zaya_phase *p, int64_t t0, int64_t t1) {
    if (p->warmup_tokens > 0 && t0 < p->warmup_tokens) {
        double f = (double)t1 / (double)p->warmup_tokens;
        return p->lr_peak * (f < 1 ? f : 1);
    }
    double x = (double)(t0 - p->warmup_tokens) / (double)(p->tokens - p->warmup_tokens);
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    if (p->decay == ZAYA_LR_COSINE) return p->lr_final + (p->lr_peak - p->lr_final) * 0.5 * (1 + cos(M_PI * x));
    double start = 1 - p->decay_fraction;
    if (x <= start || p->decay_fraction <= 0) return p->lr_peak;
    return p->lr_peak + (p->lr_final - p->lr_peak) * (x - start) / p->decay_fraction;
}

zaya_status zaya_run_step(const zaya_run *run, int64_t step, zaya_step_info *out) {
    if (step < 0 || step >= run->total_steps)
        return zaya_error_set(ZAYA_ERANGE, "step %" PRId64 " outside the run's %" PRId64 " steps", step, run->total_steps);
    int lo = 0, hi = run->nphases - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (run->phases[mid].first_step <= step) lo = mid; else hi = mid - 1;
    }
    const zaya_phase *p = &run->phases[lo];
    int64_t j = step - p->first_step, t;
    if (j < p->ramp_steps) t = p->ramp_tokens[j];
    else t = p->ramp_tokens[p->ramp_steps] + (j - p->ramp_steps) * p->batch * p->seq_len;
    memset(out, 0, sizeof *out);
    out->phase = lo;
    out->step_in_phase = j;
    out->seq_len = p->seq_len;
    out->global_batch = ramp_batch(p, t, run->batch_multiple);
    out->rope_theta = p->rope_theta;
    out->cp = p->cp;
    out->phase_tokens_before = t;
    out->tokens_before = p->first_token + t;
    int64_t t1 = t + out->global_batch * p->seq_len;
    out->lr = phase_lr(p, t, t1 < p->tokens ? t1 : p->tokens);
    out->phase_start = j == 0;
    return ZAYA_OK;
}

zaya_status zaya_run_open_dataset(const zaya_run *run, int val, int verify_checksum, zaya_dataset *ds) {
    memset(ds, 0, sizeof *ds);
    for (int i = 0; i < run->nsources; i++) {
        const zaya_run_source *s = &run->sources[i];
        zaya_shard_open_opts o = {.verify_checksum = verify_checksum, .vocab_size = s->vocab_size, .eos_id = s->eos_id};
        zaya_status r = zaya_dataset_add_ext(ds, s->name, (const char *const *)(val ? s->val : s->train),
                                             val ? s->nval : s->ntrain, &o);
        if (r != ZAYA_OK) {
            zaya_dataset_free(ds);
            return zaya_error_context(r, "run '%s' (%s data)", run->name, val ? "validation" : "training");
        }
    }
    return ZAYA_OK;
}

zaya_status zaya_run_set_loader_phase(const zaya_run *run, int phase, zaya_loader *loader) {
    if (phase < 0 || phase >= run->nphases)
        return zaya_error_set(ZAYA_ERANGE, "phase %d outside the run's %d phases", phase, run->nphases);
    const zaya_phase *p = &run->phases[phase];
    const char *names[ZAYA_DATA_MAX_SOURCES];
    for (int i = 0; i < p->nsources; i++) names[i] = p->source[i];
    return zaya_error_context(zaya_loader_set_mixture(loader, p->seq_len, names, p->weight, p->nsources),
                              "phase '%s'", p->name);
}
