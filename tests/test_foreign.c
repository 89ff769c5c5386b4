/* Other trainers' token files read in place: Megatron-LM indexed datasets (every dtype code, with and
 * without appended EODs, with per-sequence modes) and llm.c token files (uint16 and uint32), written by
 * tests/foreign_tokens.py, the formats' writers re-implemented from their published code. Every
 * document comes back token for token, packing gives doc0 eos doc1 eos ..., a run file can name them,
 * and truncated or inconsistent files are refused with the offset or both disagreeing numbers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/curriculum.h"
#include "zaya/data.h"
#include "zaya/shard.h"

static char dir[128];

static int64_t *read_expect(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    int64_t *v = malloc((size_t)sz + 8);
    *n = fread(v, 8, (size_t)sz / 8, f);
    fclose(f);
    return v;
}

/* The shard's documents against the expected ones, then every packed sequence of a one-file source. */
static void check_good(const char *path, uint64_t vocab, uint32_t eos, const char *expect) {
    size_t ne = 0;
    int64_t *e = read_expect(expect, &ne);
    CHECK(e && ne >= 1, "%s: expected documents", expect);
    if (!e) return;
    zaya_shard_open_opts o = {.verify_checksum = 1, .vocab_size = vocab, .eos_id = eos};
    zaya_shard s;
    zaya_status st = zaya_shard_open_ext(path, &o, &s);
    CHECK(st == ZAYA_OK, "%s: %s", path, zaya_error_message());
    if (st != ZAYA_OK) {
        free(e);
        return;
    }
    CHECK(s.format != ZAYA_SHARD_ZTOK, "%s: detected as a foreign format", path);
    CHECK(s.hdr.doc_count == (uint64_t)e[0], "%s: %" PRIu64 " documents, expected %" PRId64, path, s.hdr.doc_count, e[0]);
    /* The packed stream the loader must produce: doc0 eos doc1 eos ... */
    size_t cap = ne + (size_t)e[0] + 1, L = 0, k = 1;
    int32_t *stream = malloc(cap * sizeof *stream), buf[256];
    uint64_t mismatches = 0, tokens = 0;
    for (int64_t d = 0; d < e[0] && (uint64_t)d < s.hdr.doc_count; d++) {
        int64_t len = e[k++];
        uint64_t got = s.doc_index[d + 1] - s.doc_index[d];
        CHECK(got == (uint64_t)len, "%s: document %" PRId64 " has %" PRIu64 " ids, expected %" PRId64, path, d, got, len);
        if (got == (uint64_t)len && len <= 256) {
            zaya_shard_read(&s, zaya_shard_doc_start(&s, (uint64_t)d), (uint64_t)len, buf);
            for (int64_t i = 0; i < len; i++) mismatches += buf[i] != (int32_t)e[k + i];
        }
        for (int64_t i = 0; i < len; i++) stream[L++] = (int32_t)e[k + i];
        stream[L++] = (int32_t)eos;
        tokens += (uint64_t)len;
        k += (size_t)len;
    }
    CHECK(mismatches == 0, "%s: %" PRIu64 " ids differ", path, mismatches);
    CHECK(s.hdr.token_count == tokens, "%s: %" PRIu64 " tokens, expected %" PRIu64, path, s.hdr.token_count, tokens);
    zaya_shard_close(&s);

    zaya_data_source src;
    const char *pat[1] = {path};
    st = zaya_data_source_open_ext(&src, "x", pat, 1, &o);
    CHECK(st == ZAYA_OK, "%s: source: %s", path, zaya_error_message());
    if (st == ZAYA_OK) {
        const int64_t T = 7;
        uint64_t nseq = zaya_data_source_sequences(&src, T), bad = 0;
        CHECK(nseq == (L > 0 ? (L - 1) / T : 0), "%s: %" PRIu64 " sequences", path, nseq);
        int32_t row[8];
        for (uint64_t i = 0; i < nseq; i++) {
            zaya_data_source_read_sequence(&src, T, i, row);
            for (int64_t t = 0; t <= T; t++) bad += row[t] != stream[i * T + (uint64_t)t];
        }
        CHECK(bad == 0, "%s: %" PRIu64 " packed ids differ from doc0 eos doc1 eos ...", path, bad);
        zaya_data_source_free(&src);
    }
    free(stream);
    free(e);
}

static void check_bad(const char *path, uint64_t vocab, uint32_t eos, const char *err) {
    zaya_shard_open_opts o = {.verify_checksum = 1, .vocab_size = vocab, .eos_id = eos};
    zaya_shard s;
    zaya_status st = zaya_shard_open_ext(path, &o, &s);
    CHECK(st != ZAYA_OK, "%s: accepted, expected an error with '%s'", path, err);
    if (st == ZAYA_OK) zaya_shard_close(&s);
    else CHECK(strstr(zaya_error_message(), err) != NULL, "%s: error '%s' lacks '%s'", path, zaya_error_message(), err);
}

/* Packing follows the file's own stream: llm.c's EOT before each document and Megatron's appended EOD
 * are the separators, so the packed ids are the file's ids. */
static void check_stream_is_file(void) {
    char p[256];
    snprintf(p, sizeof p, "%s/llmc_gpt2.bin", dir);
    zaya_shard_open_opts o = {.vocab_size = 50257, .eos_id = 50256};
    zaya_data_source src;
    const char *pat[1] = {p};
    zaya_status st = zaya_data_source_open_ext(&src, "l", pat, 1, &o);
    CHECK(st == ZAYA_OK, "llm.c source: %s", zaya_error_message());
    if (st != ZAYA_OK) return;
    const zaya_shard *s = &src.shards[0];
    const int64_t T = 16;
    uint64_t n = zaya_data_source_sequences(&src, T), bad = 0;
    int32_t row[17], want[17];
    for (uint64_t i = 0; i < n; i++) {
        zaya_data_source_read_sequence(&src, T, i, row);
        /* The file starts with an EOT: packed position q is file position q + 1 (the end wraps to one EOT). */
        uint64_t q0 = i * (uint64_t)T + 1;
        uint64_t m = q0 + (uint64_t)T + 1 <= s->file_tokens ? (uint64_t)T + 1 : s->file_tokens - q0;
        zaya_shard_read(s, q0, m, want);
        for (uint64_t t = m; t <= (uint64_t)T; t++) want[t] = 50256;
        for (int64_t t = 0; t <= T; t++) bad += row[t] != want[t];
    }
    CHECK(n > 10 && bad == 0, "llm.c: %" PRIu64 " packed ids differ from the file's stream over %" PRIu64 " sequences", bad, n);
    zaya_data_source_free(&src);

    snprintf(p, sizeof p, "%s/mg_u16_eod", dir);
    st = zaya_data_source_open_ext(&src, "m", pat, 1, &o);
    CHECK(st == ZAYA_OK, "megatron source: %s", zaya_error_message());
    if (st != ZAYA_OK) return;
    s = &src.shards[0];
    CHECK(s->sep_stride == 1 && src.ntokens + src.ndocs == s->file_tokens, "megatron: EODs are the separators");
    n = zaya_data_source_sequences(&src, T);
    bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        zaya_data_source_read_sequence(&src, T, i, row);
        zaya_shard_read(s, i * (uint64_t)T, (uint64_t)T + 1, want);
        for (int64_t t = 0; t <= T; t++) bad += row[t] != want[t];
    }
    CHECK(n > 10 && bad == 0, "megatron: %" PRIu64 " packed ids differ from the .bin", bad);
    zaya_data_source_free(&src);

    /* A glob over both halves of a Megatron dataset opens it once. */
    snprintf(p, sizeof p, "%s/mg_u16_eod.[bi][in][nx]", dir);
    CHECK(zaya_data_source_open_ext(&src, "g", pat, 1, &o) == ZAYA_OK && src.nshards == 1, "glob: %d datasets: %s",
          src.nshards, zaya_error_message());
    zaya_data_source_free(&src);

    /* zaya_shard_open (no vocabulary given) names what is missing. */
    zaya_shard sh;
    CHECK(zaya_shard_open(p, 1, &sh) != ZAYA_OK, "glob pattern is not a shard");
    snprintf(p, sizeof p, "%s/mg_u16_eod.idx", dir);
    CHECK(zaya_shard_open(p, 1, &sh) != ZAYA_OK && strstr(zaya_error_message(), "Megatron indexed dataset"),
          "plain open of a Megatron dataset: %s", zaya_error_message());
}

/* A run file names a Megatron dataset and an llm.c file as sources; the loader draws from both. */
static void check_run_file(void) {
    char run[256], body[2048];
    snprintf(run, sizeof run, "%s/run.json", dir);
    snprintf(body, sizeof body,
             "{\"name\": \"foreign\", \"seq_multiple\": 8, \"sources\": {"
             "\"mg\": {\"train\": \"%s/mg_u16_eod\", \"val\": \"%s/mg_u16_eod.idx\", \"vocab_size\": 50257, \"eos_id\": 50256},"
             "\"lc\": {\"train\": [\"%s/llmc_gpt2.bin\", \"%s/llmc_head.bin\"], \"val\": \"%s/llmc_head.bin\","
             " \"vocab_size\": 50257, \"eos_id\": 50256}},"
             "\"phases\": [{\"name\": \"p\", \"tokens\": 256, \"sources\": {\"mg\": 1, \"lc\": 1}, \"seq_len\": 16,"
             " \"batch\": 4, \"lr\": {\"peak\": 0.001}}]}",
             dir, dir, dir, dir, dir);
    FILE *f = fopen(run, "w");
    fputs(body, f);
    fclose(f);
    zaya_run r;
    zaya_status st = zaya_run_load(run, &r);
    CHECK(st == ZAYA_OK, "run file: %s", zaya_error_message());
    if (st != ZAYA_OK) return;
    zaya_dataset ds;
    st = zaya_run_open_dataset(&r, 0, 1, &ds);
    CHECK(st == ZAYA_OK, "run dataset: %s", zaya_error_message());
    if (st == ZAYA_OK) {
        CHECK(ds.nsources == 2 && ds.src[0].vocab_size == 50257 && ds.src[1].nshards == 2, "sources");
        zaya_loader l;
        int32_t rows[4 * 17];
        int srcs[4];
        CHECK(zaya_loader_init(&l, &ds, 1) == ZAYA_OK && zaya_run_set_loader_phase(&r, 0, &l) == ZAYA_OK &&
              zaya_loader_next(&l, 4, 0, 1, rows, srcs) == ZAYA_OK, "loader: %s", zaya_error_message());
        int seen[2] = {0, 0};
        for (int i = 0; i < 4; i++) seen[srcs[i]]++;
        CHECK(seen[0] == 2 && seen[1] == 2, "both sources drawn: %d %d", seen[0], seen[1]);
        zaya_dataset_free(&ds);
    }
    /* The resolved run keeps the keys, and parses back. */
    char out[256];
    snprintf(out, sizeof out, "%s/resolved", dir);
    CHECK(zaya_run_write_resolved(&r, out) == ZAYA_OK, "resolved: %s", zaya_error_message());
    zaya_run_free(&r);
    snprintf(run, sizeof run, "%s/resolved/run.json", dir);
    st = zaya_run_load(run, &r);
    CHECK(st == ZAYA_OK && r.sources[0].vocab_size == 50257 && r.sources[0].eos_id == 50256, "resolved run: %s",
          zaya_error_message());
    if (st == ZAYA_OK) zaya_run_free(&r);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/zaya-foreign-%d", (int)getpid());
    const char *src = getenv("ZAYA_TEST_DATA");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/foreign_tokens.py' '%s'", src ? src : "tests", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    char cases[256], line[1024];
    snprintf(cases, sizeof cases, "%s/cases.tsv", dir);
    FILE *f = fopen(cases, "r");
    CHECK(f != NULL, "%s", cases);
    int ngood = 0, nbad = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *path = strtok(line, "\t"), *v = strtok(NULL, "\t"), *e = strtok(NULL, "\t"), *exp = strtok(NULL, "\t"),
             *err = strtok(NULL, "\t");
        if (!path || !v || !e || !exp || !err) continue;
        long long eos = atoll(e);
        uint32_t eid = eos < 0 ? ZAYA_SHARD_NO_EOS : (uint32_t)eos;
        if (strcmp(exp, "-")) {
            check_good(path, (uint64_t)atoll(v), eid, exp);
            ngood++;
        } else {
            check_bad(path, (uint64_t)atoll(v), eid, err);
            nbad++;
        }
    }
    if (f) fclose(f);
    CHECK(ngood >= 14 && nbad >= 20, "%d good and %d bad cases", ngood, nbad);
    check_stream_is_file();
    check_run_file();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return th_finish("foreign");
}
