/* The training loader: a deterministic mixture schedule over sources, a per-(source, epoch) shuffle,
 * rank slices of each global batch, and a state that serializes to JSON and to bytes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "zaya/data.h"
#include "zaya/json.h"

/* Permutation stream of (source, seq_len, epoch): a new order every epoch, unrelated across sources. */
static uint64_t epoch_stream(const zaya_loader_source_state *s) {
    return XXH3_64bits_withSeed(s->name, strlen(s->name), (uint64_t)s->seq_len) + s->epoch;
}

static void refresh_source(zaya_loader *l, int i) {
    zaya_loader_source_state *s = &l->st.src[i];
    l->nseq[i] = zaya_data_source_sequences(&l->ds->src[l->map[i]], l->st.seq_len);
    l->stream[i] = epoch_stream(s);
}

zaya_status zaya_loader_init(zaya_loader *l, const zaya_dataset *ds, uint64_t seed) {
    memset(l, 0, sizeof *l);
    if (ds->nsources == 0) return zaya_error_set(ZAYA_EINVAL, "loader: the dataset has no sources");
    l->ds = ds;
    l->st.version = ZAYA_LOADER_STATE_VERSION;
    l->st.seed = seed;
    l->st.nsources = ds->nsources;
    for (int i = 0; i < ds->nsources; i++) {
        l->map[i] = i;
        snprintf(l->st.src[i].name, ZAYA_DATA_NAME_MAX, "%s", ds->src[i].name);
        l->st.src[i].fingerprint = ds->src[i].fingerprint;
    }
    return ZAYA_OK;
}

zaya_status zaya_loader_set_mixture(zaya_loader *l, int64_t seq_len, const char *const *names, const double *weights,
                                    int n) {
    if (seq_len < 1) return zaya_error_set(ZAYA_EINVAL, "loader: sequence length %" PRId64 " must be positive", seq_len);
    double w[ZAYA_DATA_MAX_SOURCES] = {0}, total = 0;
    for (int k = 0; k < n; k++) {
        int i = -1;
        for (int j = 0; j < l->st.nsources; j++)
            if (!strcmp(l->st.src[j].name, names[k])) i = j;
        if (i < 0) return zaya_error_set(ZAYA_EINVAL, "loader: no data source named '%s'", names[k]);
        if (!(weights[k] >= 0) || !isfinite(weights[k]))
            return zaya_error_set(ZAYA_EINVAL, "loader: weight of source '%s' must be finite and >= 0", names[k]);
        w[i] = weights[k];
        total += weights[k];
    }
    if (!(total > 0)) return zaya_error_set(ZAYA_EINVAL, "loader: mixture weights are all zero");
    for (int i = 0; i < l->st.nsources; i++) {
        uint64_t nseq = zaya_data_source_sequences(&l->ds->src[l->map[i]], seq_len);
        if (w[i] > 0 && nseq == 0)
            return zaya_error_set(ZAYA_EINVAL, "loader: source '%s' holds fewer than %" PRId64 " tokens: no sequence fits",
                                  l->st.src[i].name, seq_len + 1);
    }
    int same = seq_len == l->st.seq_len;
    for (int i = 0; i < l->st.nsources; i++) same = same && w[i] == l->st.src[i].weight;
    if (!same) {
        l->st.seq_len = seq_len;
        l->st.mix_drawn = 0;
        for (int i = 0; i < l->st.nsources; i++) {
            zaya_loader_source_state *s = &l->st.src[i];
            s->weight = w[i];
            s->drawn = 0;
            if (s->seq_len != seq_len) {
                /* Cursor positions do not carry across lengths: a source read before starts a new epoch. */
                if (s->seq_len != 0 && (s->cursor > 0 || s->epoch > 0)) s->epoch++;
                s->cursor = 0;
                s->seq_len = seq_len;
            }
        }
    }
    for (int i = 0; i < l->st.nsources; i++) refresh_source(l, i);
    return ZAYA_OK;
}

/* Deterministic mixture: the next sequence comes from the source furthest behind its share,
 * argmax_s (w_s / W) * (k + 1) - drawn_s (ties: lowest index). Every source stays within one
 * sequence of its exact share at every prefix of the schedule. */
static int pick_source(const zaya_loader *l) {
    double total = 0;
    for (int i = 0; i < l->st.nsources; i++) total += l->st.src[i].weight;
    double k1 = (double)(l->st.mix_drawn + 1), best = -INFINITY;
    int arg = -1;
    for (int i = 0; i < l->st.nsources; i++) {
        const zaya_loader_source_state *s = &l->st.src[i];
        if (s->weight <= 0) continue;
        double deficit = s->weight / total * k1 - (double)s->drawn;
        if (deficit > best) {
            best = deficit;
            arg = i;
        }
    }
    return arg;
}

zaya_status zaya_loader_next(zaya_loader *l, int64_t global_batch, int rank, int world, int32_t *dst,
                             int *src_of_row) {
    if (l->st.seq_len < 1) return zaya_error_set(ZAYA_EINVAL, "loader: zaya_loader_set_mixture was not called");
    if (world < 1 || rank < 0 || rank >= world)
        return zaya_error_set(ZAYA_EINVAL, "loader: rank %d outside world size %d", rank, world);
    if (global_batch < 1 || global_batch % world != 0)
        return zaya_error_set(ZAYA_EINVAL, "loader: global batch %" PRId64 " is not a positive multiple of world size %d",
                              global_batch, world);
    int64_t per = global_batch / world, lo = (int64_t)rank * per, hi = lo + per;
    size_t row = (size_t)l->st.seq_len + 1;
    /* Every rank walks the whole global batch so that all ranks hold the same state; only the rows of
     * its own slice are read from the shards. */
    for (int64_t j = 0; j < global_batch; j++) {
        int i = pick_source(l);
        zaya_loader_source_state *s = &l->st.src[i];
        uint64_t idx = zaya_data_permute(l->nseq[i], l->st.seed, l->stream[i], s->cursor);
        if (j >= lo && j < hi) {
            zaya_data_source_read_sequence(&l->ds->src[l->map[i]], l->st.seq_len, idx, dst + (size_t)(j - lo) * row);
            if (src_of_row) src_of_row[j - lo] = l->map[i];
        }
        s->drawn++;
        l->st.mix_drawn++;
        l->st.sequences++;
        if (++s->cursor == l->nseq[i]) {
            s->cursor = 0;
            s->epoch++;
            l->stream[i] = epoch_stream(s);
        }
    }
    l->st.batches++;
    return ZAYA_OK;
}

zaya_status zaya_loader_restore(zaya_loader *l, const zaya_loader_state *st) {
    const zaya_dataset *ds = l->ds;
    if (st->version != ZAYA_LOADER_STATE_VERSION)
        return zaya_error_set(ZAYA_EFORMAT, "loader state: version %u, this build reads %u", st->version,
                              ZAYA_LOADER_STATE_VERSION);
    if (st->nsources != ds->nsources)
        return zaya_error_set(ZAYA_EINVAL, "loader state has %d sources, the dataset %d", st->nsources, ds->nsources);
    zaya_loader nl = *l;
    nl.st = *st;
    for (int i = 0; i < st->nsources; i++) {
        const zaya_loader_source_state *s = &st->src[i];
        int j = zaya_dataset_find(ds, s->name);
        if (j < 0) return zaya_error_set(ZAYA_EINVAL, "loader state: no data source named '%s'", s->name);
        if (ds->src[j].fingerprint != s->fingerprint)
            return zaya_error_set(ZAYA_EINVAL,
                                  "loader state: source '%s' was saved over different shards (fingerprint %016" PRIx64
                                  ", now %016" PRIx64 ")", s->name, s->fingerprint, ds->src[j].fingerprint);
        nl.map[i] = j;
        if (s->seq_len > 0 && s->cursor >= zaya_data_source_sequences(&ds->src[j], s->seq_len))
            return zaya_error_set(ZAYA_ERANGE, "loader state: source '%s' cursor %" PRIu64 " beyond its sequences",
                                  s->name, s->cursor);
        if (!(s->weight >= 0) || !isfinite(s->weight))
            return zaya_error_set(ZAYA_EINVAL, "loader state: source '%s' has a bad weight", s->name);
    }
    if (st->seq_len > 0)
        for (int i = 0; i < st->nsources; i++) {
            if (st->src[i].weight > 0 && st->src[i].seq_len != st->seq_len)
                return zaya_error_set(ZAYA_EINVAL, "loader state: source '%s' counts in length %" PRId64 ", not %" PRId64,
                                      st->src[i].name, st->src[i].seq_len, st->seq_len);
            refresh_source(&nl, i);
        }
    *l = nl;
    return ZAYA_OK;
}

/* ---------------------------------------------------------------- JSON */

/* u64 values that may exceed 2^53 (seed, fingerprints) travel as strings. */
static cJSON *u64_string(uint64_t v, int hex) {
    char b[32];
    snprintf(b, sizeof b, hex ? "%016" PRIx64 : "%" PRIu64, v);
    return cJSON_CreateString(b);
}

static zaya_status get_u64_string(const cJSON *o, const char *key, int hex, uint64_t *out) {
    const char *str;
    ZAYA_TRY(zaya_json_get_str(o, key, &str, 1));
    char *end;
    unsigned long long v = strtoull(str, &end, hex ? 16 : 10);
    if (!*str || *end || str[0] == '-')
        return zaya_error_set(ZAYA_EINVAL, "key '%s': '%s' is not a %s integer", key, str, hex ? "hex" : "decimal");
    *out = v;
    return ZAYA_OK;
}

static zaya_status get_count(const cJSON *o, const char *key, uint64_t *out) {
    int64_t v;
    ZAYA_TRY(zaya_json_get_i64(o, key, &v, 1));
    if (v < 0) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be >= 0", key);
    *out = (uint64_t)v;
    return ZAYA_OK;
}

zaya_status zaya_loader_state_to_json(const zaya_loader_state *st, cJSON **out) {
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    if (!j || !arr) {
        cJSON_Delete(j);
        cJSON_Delete(arr);
        return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    }
    cJSON_AddNumberToObject(j, "version", st->version);
    cJSON_AddItemToObject(j, "seed", u64_string(st->seed, 0));
    cJSON_AddNumberToObject(j, "seq_len", (double)st->seq_len);
    cJSON_AddNumberToObject(j, "sequences", (double)st->sequences);
    cJSON_AddNumberToObject(j, "batches", (double)st->batches);
    cJSON_AddNumberToObject(j, "mix_drawn", (double)st->mix_drawn);
    for (int i = 0; i < st->nsources; i++) {
        const zaya_loader_source_state *s = &st->src[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", s->name);
        cJSON_AddItemToObject(o, "fingerprint", u64_string(s->fingerprint, 1));
        cJSON_AddNumberToObject(o, "weight", s->weight);
        cJSON_AddNumberToObject(o, "drawn", (double)s->drawn);
        cJSON_AddNumberToObject(o, "epoch", (double)s->epoch);
        cJSON_AddNumberToObject(o, "cursor", (double)s->cursor);
        cJSON_AddNumberToObject(o, "seq_len", (double)s->seq_len);
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddItemToObject(j, "sources", arr);
    *out = j;
    return ZAYA_OK;
}

static zaya_status state_from_json(const cJSON *j, zaya_loader_state *st) {
    memset(st, 0, sizeof *st);
    int64_t v;
    ZAYA_TRY(zaya_json_get_i64(j, "version", &v, 1));
    if (v != ZAYA_LOADER_STATE_VERSION)
        return zaya_error_set(ZAYA_EFORMAT, "version %" PRId64 ", this build reads %u", v, ZAYA_LOADER_STATE_VERSION);
    st->version = (uint32_t)v;
    ZAYA_TRY(get_u64_string(j, "seed", 0, &st->seed));
    ZAYA_TRY(zaya_json_get_i64(j, "seq_len", &st->seq_len, 1));
    if (st->seq_len < 0) return zaya_error_set(ZAYA_EINVAL, "key 'seq_len' must be >= 0");
    ZAYA_TRY(get_count(j, "sequences", &st->sequences));
    ZAYA_TRY(get_count(j, "batches", &st->batches));
    ZAYA_TRY(get_count(j, "mix_drawn", &st->mix_drawn));
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "sources");
    if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EINVAL, "key 'sources' must be an array");
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || n > ZAYA_DATA_MAX_SOURCES)
        return zaya_error_set(ZAYA_EINVAL, "key 'sources' must hold 1 to %d entries, has %d", ZAYA_DATA_MAX_SOURCES, n);
    st->nsources = n;
    for (int i = 0; i < n; i++) {
        const cJSON *o = cJSON_GetArrayItem(arr, i);
        zaya_loader_source_state *s = &st->src[i];
        const char *name;
        zaya_status r = zaya_json_get_str(o, "name", &name, 1);
        if (r == ZAYA_OK && (!*name || strlen(name) >= ZAYA_DATA_NAME_MAX))
            r = zaya_error_set(ZAYA_EINVAL, "key 'name' must have 1 to %d characters", ZAYA_DATA_NAME_MAX - 1);
        if (r == ZAYA_OK) snprintf(s->name, sizeof s->name, "%s", name);
        if (r == ZAYA_OK) r = get_u64_string(o, "fingerprint", 1, &s->fingerprint);
        if (r == ZAYA_OK) r = zaya_json_get_f64(o, "weight", &s->weight, 1);
        if (r == ZAYA_OK && s->weight < 0) r = zaya_error_set(ZAYA_EINVAL, "key 'weight' must be >= 0");
        if (r == ZAYA_OK) r = get_count(o, "drawn", &s->drawn);
        if (r == ZAYA_OK) r = get_count(o, "epoch", &s->epoch);
        if (r == ZAYA_OK) r = get_count(o, "cursor", &s->cursor);
        if (r == ZAYA_OK) r = zaya_json_get_i64(o, "seq_len", &s->seq_len, 1);
        if (r == ZAYA_OK && s->seq_len < 0) r = zaya_error_set(ZAYA_EINVAL, "key 'seq_len' must be >= 0");
        if (r != ZAYA_OK) return zaya_error_context(r, "sources[%d]", i);
    }
    return ZAYA_OK;
}

zaya_status zaya_loader_state_from_json(const cJSON *json, zaya_loader_state *st) {
    return zaya_error_context(state_from_json(json, st), "loader state");
}

/* ---------------------------------------------------------------- bytes */

enum { STATE_MAGIC = 0x53444c5au }; /* "ZLDS" */

static uint8_t *put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); return p + 8; }
static const uint8_t *get64(const uint8_t *p, uint64_t *v) { memcpy(v, p, 8); return p + 8; }

void zaya_loader_state_to_bytes(const zaya_loader_state *st, uint8_t out[ZAYA_LOADER_STATE_BYTES]) {
    memset(out, 0, ZAYA_LOADER_STATE_BYTES);
    uint8_t *p = out;
    p = put64(p, STATE_MAGIC | (uint64_t)st->version << 32);
    p = put64(p, st->seed);
    p = put64(p, (uint64_t)st->seq_len);
    p = put64(p, st->sequences);
    p = put64(p, st->batches);
    p = put64(p, st->mix_drawn);
    p = put64(p, (uint64_t)st->nsources);
    p += 8; /* reserved */
    for (int i = 0; i < ZAYA_DATA_MAX_SOURCES; i++, p += 80) {
        const zaya_loader_source_state *s = &st->src[i];
        if (i >= st->nsources) continue;
        memcpy(p, s->name, ZAYA_DATA_NAME_MAX);
        uint64_t wbits;
        memcpy(&wbits, &s->weight, 8);
        uint8_t *q = p + ZAYA_DATA_NAME_MAX;
        q = put64(q, s->fingerprint);
        q = put64(q, wbits);
        q = put64(q, s->drawn);
        q = put64(q, s->epoch);
        q = put64(q, s->cursor);
        put64(q, (uint64_t)s->seq_len);
    }
    put64(p, XXH3_64bits(out, (size_t)(p - out)));
}

zaya_status zaya_loader_state_from_bytes(const uint8_t *buf, size_t len, zaya_loader_state *st) {
    memset(st, 0, sizeof *st);
    if (len != ZAYA_LOADER_STATE_BYTES)
        return zaya_error_set(ZAYA_EFORMAT, "loader state: %zu bytes, expected %d", len, ZAYA_LOADER_STATE_BYTES);
    uint64_t sum, head, n, u;
    get64(buf + len - 8, &sum);
    if (sum != XXH3_64bits(buf, len - 8)) return zaya_error_set(ZAYA_EFORMAT, "loader state: checksum mismatch");
    const uint8_t *p = get64(buf, &head);
    if ((uint32_t)head != STATE_MAGIC) return zaya_error_set(ZAYA_EFORMAT, "loader state: bad magic");
    st->version = (uint32_t)(head >> 32);
    p = get64(p, &st->seed);
    p = get64(p, &u);
    st->seq_len = (int64_t)u;
    p = get64(p, &st->sequences);
    p = get64(p, &st->batches);
    p = get64(p, &st->mix_drawn);
    p = get64(p, &n);
    p += 8;
    if (n < 1 || n > ZAYA_DATA_MAX_SOURCES)
        return zaya_error_set(ZAYA_EFORMAT, "loader state: %" PRIu64 " sources (1 to %d allowed)", n, ZAYA_DATA_MAX_SOURCES);
    st->nsources = (int)n;
    for (int i = 0; i < st->nsources; i++, p += 80) {
        zaya_loader_source_state *s = &st->src[i];
        memcpy(s->name, p, ZAYA_DATA_NAME_MAX);
        if (!memchr(s->name, 0, ZAYA_DATA_NAME_MAX)) return zaya_error_set(ZAYA_EFORMAT, "loader state: bad source name");
        uint64_t wbits;
        const uint8_t *q = p + ZAYA_DATA_NAME_MAX;
        q = get64(q, &s->fingerprint);
        q = get64(q, &wbits);
        memcpy(&s->weight, &wbits, 8);
        q = get64(q, &s->drawn);
        q = get64(q, &s->epoch);
        q = get64(q, &s->cursor);
        get64(q, &u);
        s->seq_len = (int64_t)u;
    }
    return ZAYA_OK;
}
