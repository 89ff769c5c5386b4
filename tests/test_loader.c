/* Packing against an independently built token stream, the shuffle permutation, mixture proportions,
 * rank slices of the global batch, epoch coverage, and exact resume from serialized state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/curriculum.h"
#include "zaya/data.h"
#include "zaya/json.h"

enum { VOCAB = 5000, EOS = 4999 };
static char dir[64];

/* Source `tag` has documents whose ids encode (tag, doc, position) so any mix-up is visible. */
static int32_t tok(int tag, int d, int i) { return (int32_t)((tag * 1000 + d * 37 + i * 11) % EOS); }
static int dlen(int tag, int d) { return d % 11 == 4 ? 0 : (d * 29 + tag * 7) % 53; } /* some empty */

/* Writes source `tag` as nshards shards (the middle one empty when nshards >= 3) and returns the
 * reference stream doc eos doc eos ... in *ref. */
static void make_source(const char *name, int tag, int ndocs, int nshards, int32_t **ref, size_t *nref) {
    size_t cap = 1024, n = 0;
    int32_t *r = malloc(cap * sizeof *r), buf[64];
    int per = (ndocs + nshards - 1) / nshards, d = 0;
    for (int s = 0; s < nshards; s++) {
        char path[160];
        snprintf(path, sizeof path, "%s/%s-train-%05d.ztok", dir, name, s);
        zaya_shard_writer *w;
        if (zaya_shard_writer_open(path, VOCAB, 0, EOS, 0, &w) != ZAYA_OK) abort();
        int end = (nshards >= 3 && s == 1) ? d : (d + per < ndocs ? d + per : ndocs);
        for (; d < end; d++) {
            int L = dlen(tag, d);
            if (L == 0) continue;
            for (int i = 0; i < L; i++) buf[i] = tok(tag, d, i);
            if (zaya_shard_writer_add(w, buf, (size_t)L) != ZAYA_OK) abort();
            if (n + (size_t)L + 1 > cap) r = realloc(r, (cap = 2 * (n + (size_t)L + 1)) * sizeof *r);
            memcpy(r + n, buf, (size_t)L * sizeof *r);
            n += (size_t)L;
            r[n++] = EOS;
        }
        if (zaya_shard_writer_finish(w) != ZAYA_OK) abort();
    }
    *ref = r;
    *nref = n;
}

static zaya_status add(zaya_dataset *ds, const char *name) {
    char pat[160];
    snprintf(pat, sizeof pat, "%s/%s-train-*.ztok", dir, name);
    const char *p = pat;
    return zaya_dataset_add(ds, name, &p, 1, 1);
}

static void test_packing(const zaya_dataset *ds, int src, const int32_t *ref, size_t nref) {
    int64_t lens[] = {1, 7, 64, 100};
    int32_t *buf = malloc(sizeof(int32_t) * 101);
    for (int k = 0; k < 4; k++) {
        int64_t T = lens[k];
        uint64_t N = zaya_data_source_sequences(&ds->src[src], T);
        CHECK(N == (nref - 1) / (uint64_t)T, "T=%lld: %llu sequences, stream of %zu", (long long)T, (unsigned long long)N, nref);
        int bad = 0;
        for (uint64_t i = 0; i < N; i++) {
            zaya_data_source_read_sequence(&ds->src[src], T, i, buf);
            bad += memcmp(buf, ref + i * (uint64_t)T, sizeof(int32_t) * (size_t)(T + 1)) != 0;
        }
        CHECK(bad == 0, "T=%lld: %d of %llu sequences differ from the reference stream", (long long)T, bad,
              (unsigned long long)N);
        /* Targets are the inputs shifted by one: sequence i ends with the id sequence i+1 starts with. */
        int32_t *next = malloc(sizeof(int32_t) * (size_t)(T + 1));
        int shift_bad = 0;
        for (uint64_t i = 0; i + 1 < N; i++) {
            zaya_data_source_read_sequence(&ds->src[src], T, i, buf);
            zaya_data_source_read_sequence(&ds->src[src], T, i + 1, next);
            shift_bad += buf[T] != next[0];
        }
        CHECK(shift_bad == 0, "T=%lld: %d sequence boundaries do not overlap by one id", (long long)T, shift_bad);
        free(next);
    }
    free(buf);
}

static void test_permute(void) {
    uint64_t ns[] = {1, 2, 3, 5, 17, 1000, 4097, 65536};
    for (int k = 0; k < 8; k++) {
        uint64_t n = ns[k];
        char *seen = calloc(n, 1);
        int bad = 0, fixed = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t p = zaya_data_permute(n, 42, 7, i);
            if (p >= n || seen[p]) bad++;
            else seen[p] = 1;
            bad += p != zaya_data_permute(n, 42, 7, i); /* pure function */
            fixed += p == i;
        }
        CHECK(bad == 0, "n=%llu: not a deterministic permutation (%d faults)", (unsigned long long)n, bad);
        if (n >= 1000) CHECK(fixed < 20, "n=%llu: %d fixed points: not shuffled", (unsigned long long)n, fixed);
        free(seen);
    }
    int same = 0;
    for (uint64_t i = 0; i < 1000; i++) same += zaya_data_permute(1000, 42, 7, i) == zaya_data_permute(1000, 42, 8, i);
    CHECK(same < 20, "different streams give nearly the same order (%d equal)", same);
}

static void test_split_rule(void) {
    int val = 0, again = 0;
    for (uint64_t d = 0; d < 100000; d++) {
        int v = zaya_data_split_is_val(5, d, 0.1);
        val += v;
        again += v == zaya_data_split_is_val(5, d, 0.1);
    }
    CHECK(val > 9500 && val < 10500, "10%% split held out %d of 100000", val);
    CHECK(again == 100000, "split is deterministic");
    CHECK(!zaya_data_split_is_val(5, 3, 0), "fraction 0 holds out nothing");
}

static void test_mixture(const zaya_dataset *ds) {
    zaya_loader l;
    CHECK(zaya_loader_init(&l, ds, 1) == ZAYA_OK, "init");
    const char *names[3] = {"a", "b", "c"};
    double w[3] = {5, 3, 2};
    CHECK(zaya_loader_set_mixture(&l, 16, names, w, 3) == ZAYA_OK, "mixture: %s", zaya_error_message());
    int32_t *buf = malloc(sizeof(int32_t) * 17 * 40);
    int src[40];
    long count[3] = {0}, total = 0, worst = 0;
    for (int b = 0; b < 50; b++) {
        CHECK(zaya_loader_next(&l, 40, 0, 1, buf, src) == ZAYA_OK, "next: %s", zaya_error_message());
        for (int j = 0; j < 40; j++) {
            count[src[j]]++;
            total++;
            for (int s = 0; s < 3; s++) { /* every prefix stays within one sequence of its share */
                double dev = count[s] - w[s] / 10.0 * (double)total;
                long d = (long)(dev < 0 ? -dev + 0.999 : dev + 0.999);
                if (d > worst) worst = d;
            }
        }
    }
    CHECK(count[0] == 1000 && count[1] == 600 && count[2] == 400, "2000 draws split %ld/%ld/%ld, want 1000/600/400",
          count[0], count[1], count[2]);
    CHECK(worst <= 1, "a prefix strayed %ld sequences from its share", worst);
    /* A zero weight excludes the source; all-zero, negative and unknown names are rejected. */
    double w2[2] = {1, 0};
    CHECK(zaya_loader_set_mixture(&l, 16, names, w2, 2) == ZAYA_OK, "set");
    CHECK(zaya_loader_next(&l, 40, 0, 1, buf, src) == ZAYA_OK, "next");
    int only_a = 1;
    for (int j = 0; j < 40; j++) only_a &= src[j] == 0;
    CHECK(only_a, "weight 0 sources were drawn");
    double z[2] = {0, 0}, neg[2] = {1, -1};
    CHECK(zaya_loader_set_mixture(&l, 16, names, z, 2) == ZAYA_EINVAL, "all-zero weights");
    CHECK(zaya_loader_set_mixture(&l, 16, names, neg, 2) == ZAYA_EINVAL, "negative weight");
    const char *bogus = "zzz";
    CHECK(zaya_loader_set_mixture(&l, 16, &bogus, w, 1) == ZAYA_EINVAL && strstr(zaya_error_message(), "zzz"), "unknown");
    CHECK(zaya_loader_set_mixture(&l, 1 << 30, names, w, 3) == ZAYA_EINVAL, "sequence longer than a source");
    CHECK(zaya_loader_next(&l, 30, 0, 4, buf, src) == ZAYA_EINVAL, "G not divisible by world");
    free(buf);
}

/* Over one epoch of a single source every sequence is served exactly once. */
static void test_epoch_coverage(const zaya_dataset *ds) {
    zaya_loader l;
    zaya_loader_init(&l, ds, 3);
    const char *name = "b";
    double w = 1;
    int64_t T = 32;
    zaya_loader_set_mixture(&l, T, &name, &w, 1);
    uint64_t N = zaya_data_source_sequences(&ds->src[1], T);
    int32_t *all = malloc(sizeof(int32_t) * (size_t)(T + 1) * N), *got = malloc(sizeof(int32_t) * (size_t)(T + 1));
    for (uint64_t i = 0; i < N; i++) zaya_data_source_read_sequence(&ds->src[1], T, i, all + i * (uint64_t)(T + 1));
    char *hit = calloc(N, 1);
    int bad = 0, in_order = 0;
    for (uint64_t k = 0; k < N; k++) {
        zaya_loader_next(&l, 1, 0, 1, got, NULL);
        uint64_t found = N;
        for (uint64_t i = 0; i < N && found == N; i++)
            if (!hit[i] && !memcmp(got, all + i * (uint64_t)(T + 1), sizeof(int32_t) * (size_t)(T + 1))) found = i;
        if (found == N) bad++;
        else hit[found] = 1;
        in_order += found == k;
    }
    CHECK(bad == 0, "%d draws were not a fresh sequence of the epoch", bad);
    CHECK(in_order < (int)N / 4, "epoch order looks unshuffled (%d of %llu in place)", in_order, (unsigned long long)N);
    CHECK(l.st.src[1].epoch == 1 && l.st.src[1].cursor == 0, "epoch rolled over: epoch %llu cursor %llu",
          (unsigned long long)l.st.src[1].epoch, (unsigned long long)l.st.src[1].cursor);
    free(all);
    free(got);
    free(hit);
}

static void setup(zaya_loader *l, const zaya_dataset *ds, int64_t T) {
    zaya_loader_init(l, ds, 77);
    const char *names[3] = {"a", "b", "c"};
    double w[3] = {0.5, 0.3, 0.2};
    zaya_loader_set_mixture(l, T, names, w, 3);
}

/* The union of the rank slices (rank order) is the global batch of a single-rank loader. */
static void test_ranks(const zaya_dataset *ds) {
    enum { G = 8, T = 24, STEPS = 30 };
    size_t row = T + 1;
    int32_t *ref = malloc(sizeof(int32_t) * G * row), *part = malloc(sizeof(int32_t) * G * row);
    int worlds[3] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        int R = worlds[k];
        zaya_loader one, ranks[4];
        setup(&one, ds, T);
        for (int r = 0; r < R; r++) setup(&ranks[r], ds, T);
        int bad = 0;
        for (int s = 0; s < STEPS; s++) {
            zaya_loader_next(&one, G, 0, 1, ref, NULL);
            for (int r = 0; r < R; r++)
                zaya_loader_next(&ranks[r], G, r, R, part + (size_t)r * (G / R) * row, NULL);
            bad += memcmp(ref, part, sizeof(int32_t) * G * row) != 0;
            for (int r = 1; r < R; r++) bad += memcmp(&ranks[r].st, &ranks[0].st, sizeof ranks[0].st) != 0;
        }
        CHECK(bad == 0, "R=%d: %d global batches differ from the single-rank batch", R, bad);
    }
    free(ref);
    free(part);
}

/* Plays R ranks, each with its own loader, and stitches their slices into the global batches. */
static void run_ranks(zaya_loader *ls, int R, int n, int32_t *out, int G, size_t row) {
    for (int s = 0; s < n; s++)
        for (int r = 0; r < R; r++)
            zaya_loader_next(&ls[r], G, r, R, out + ((size_t)s * G + (size_t)r * (G / R)) * row, NULL);
}

static void restore_ranks(zaya_loader *ls, int R, const zaya_dataset *ds, const zaya_loader_state *st) {
    for (int r = 0; r < R; r++) {
        zaya_loader_init(&ls[r], ds, 0);
        CHECK(zaya_loader_restore(&ls[r], st) == ZAYA_OK, "restore: %s", zaya_error_message());
    }
}

static void test_resume(const zaya_dataset *ds) {
    enum { G = 12, T = 20, TOTAL = 40, CUT = 17 };
    size_t row = T + 1, per = (size_t)G * row;
    int32_t *ref = malloc(sizeof(int32_t) * per * TOTAL), *got = malloc(sizeof(int32_t) * per * TOTAL);
    zaya_loader a;
    setup(&a, ds, T);
    run_ranks(&a, 1, TOTAL, ref, G, row);

    /* Through JSON text: save after CUT batches, continue in a fresh loader on 2 ranks. */
    zaya_loader b;
    setup(&b, ds, T);
    run_ranks(&b, 1, CUT, got, G, row);
    cJSON *j;
    CHECK(zaya_loader_state_to_json(&b.st, &j) == ZAYA_OK, "to json");
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    CHECK(zaya_json_parse(text, "state", &j) == ZAYA_OK, "reparse");
    free(text);
    zaya_loader_state st;
    CHECK(zaya_loader_state_from_json(j, &st) == ZAYA_OK, "from json: %s", zaya_error_message());
    cJSON_Delete(j);
    CHECK(memcmp(&st, &b.st, sizeof st) == 0, "JSON round trip changed the state");
    zaya_loader c[4];
    restore_ranks(c, 2, ds, &st);
    /* Re-applying the phase's mixture after a resume must not reset anything. */
    const char *names[3] = {"a", "b", "c"};
    double w[3] = {0.5, 0.3, 0.2};
    for (int r = 0; r < 2; r++) zaya_loader_set_mixture(&c[r], T, names, w, 3);
    run_ranks(c, 2, TOTAL - CUT, got + per * CUT, G, row);
    CHECK(memcmp(ref, got, sizeof(int32_t) * per * TOTAL) == 0, "resume via JSON (1 -> 2 ranks) diverged");

    /* Through bytes, at another cut, on 4 ranks. */
    zaya_loader d;
    setup(&d, ds, T);
    run_ranks(&d, 1, 5, got, G, row);
    uint8_t bytes[ZAYA_LOADER_STATE_BYTES];
    zaya_loader_state_to_bytes(&d.st, bytes);
    CHECK(zaya_loader_state_from_bytes(bytes, sizeof bytes, &st) == ZAYA_OK, "from bytes: %s", zaya_error_message());
    zaya_loader e[4];
    restore_ranks(e, 4, ds, &st);
    run_ranks(e, 4, TOTAL - 5, got + per * 5, G, row);
    CHECK(memcmp(ref, got, sizeof(int32_t) * per * TOTAL) == 0, "resume via bytes (1 -> 4 ranks) diverged");
    bytes[70] ^= 1;
    CHECK(zaya_loader_state_from_bytes(bytes, sizeof bytes, &st) == ZAYA_EFORMAT, "corrupted state bytes accepted");

    /* A state saved over other shards is refused. */
    zaya_loader_state_to_bytes(&d.st, bytes);
    zaya_loader_state_from_bytes(bytes, sizeof bytes, &st);
    st.src[1].fingerprint ^= 1;
    CHECK(zaya_loader_restore(&e[0], &st) == ZAYA_EINVAL && strstr(zaya_error_message(), "different shards"), "fingerprint");
    free(ref);
    free(got);
}

/* Changing the sequence length starts a new epoch for sources already read. */
static void test_length_change(const zaya_dataset *ds) {
    zaya_loader l;
    setup(&l, ds, 16);
    int32_t *buf = malloc(sizeof(int32_t) * 4 * 65);
    zaya_loader_next(&l, 4, 0, 1, buf, NULL);
    const char *names[3] = {"a", "b", "c"};
    double w[3] = {0.5, 0.3, 0.2};
    CHECK(zaya_loader_set_mixture(&l, 64, names, w, 3) == ZAYA_OK, "T change");
    CHECK(l.st.src[0].epoch == 1 && l.st.src[0].cursor == 0 && l.st.src[0].seq_len == 64, "source a moved to a new epoch");
    CHECK(zaya_loader_next(&l, 4, 0, 1, buf, NULL) == ZAYA_OK && buf[64] >= 0, "draw at the new length");
    free(buf);
}

/* A run's phases drive the loader: length and weights change at phase starts, resume re-applies. */
static void test_run_phases(const zaya_dataset *ds) {
    cJSON *j;
    zaya_json_parse("{\"phases\":[{\"name\":\"one\",\"tokens\":4096,\"sources\":{\"a\":3,\"b\":1},\"seq_len\":16,"
                    "\"batch\":8,\"lr\":{\"peak\":0.01}},{\"name\":\"two\",\"tokens\":4096,\"sources\":{\"c\":1},"
                    "\"seq_len\":32}]}", "run", &j);
    zaya_run run;
    CHECK(zaya_run_parse(j, "run", &run) == ZAYA_OK, "run: %s", zaya_error_message());
    cJSON_Delete(j);
    zaya_loader l;
    zaya_loader_init(&l, ds, 5);
    int32_t *buf = malloc(sizeof(int32_t) * 8 * 33);
    int src[8], bad = 0;
    for (int64_t s = 0; s < run.total_steps; s++) {
        zaya_step_info si;
        zaya_run_step(&run, s, &si);
        if (si.phase_start) CHECK(zaya_run_set_loader_phase(&run, si.phase, &l) == ZAYA_OK, "phase: %s", zaya_error_message());
        zaya_loader_next(&l, si.global_batch, 0, 1, buf, src);
        for (int r = 0; r < si.global_batch; r++) bad += si.phase == 0 ? src[r] == 2 : src[r] != 2;
        bad += l.st.seq_len != si.seq_len;
    }
    CHECK(bad == 0, "%d rows came from a source (or length) outside their phase", bad);
    CHECK(zaya_run_set_loader_phase(&run, 2, &l) == ZAYA_ERANGE, "phase out of range");
    free(buf);
    zaya_run_free(&run);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/zaya_test_loader_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    int32_t *ref[3];
    size_t nref[3];
    make_source("a", 1, 300, 3, &ref[0], &nref[0]);
    make_source("b", 2, 120, 1, &ref[1], &nref[1]);
    make_source("c", 3, 200, 4, &ref[2], &nref[2]);
    zaya_dataset ds = {0};
    CHECK(add(&ds, "a") == ZAYA_OK && add(&ds, "b") == ZAYA_OK && add(&ds, "c") == ZAYA_OK, "dataset: %s",
          zaya_error_message());
    CHECK(add(&ds, "a") == ZAYA_EINVAL, "duplicate source name");
    const char *nothing = "/nonexistent/*.ztok";
    zaya_dataset ds2 = {0};
    CHECK(zaya_dataset_add(&ds2, "x", &nothing, 1, 0) != ZAYA_OK && strstr(zaya_error_message(), "no shard matches"),
          "missing pattern: %s", zaya_error_message());
    for (int s = 0; s < 3; s++) test_packing(&ds, s, ref[s], nref[s]);
    test_permute();
    test_split_rule();
    test_mixture(&ds);
    test_epoch_coverage(&ds);
    test_ranks(&ds);
    test_resume(&ds);
    test_length_change(&ds);
    test_run_phases(&ds);
    zaya_dataset_free(&ds);
    for (int s = 0; s < 3; s++) free(ref[s]);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return th_finish("test_loader");
}
