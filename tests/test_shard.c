/* Token shards: round trip at both token widths, atomic publication, and rejection of every kind of
 * corruption with an error naming the file and field; random byte flips never crash the loader. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "testutil.h"
#include "zaya/rng.h"
#include "zaya/shard.h"

static char dir[64];

static int32_t doc_token(int d, int i, uint64_t vocab) { return (int32_t)((d * 7919u + i * 31u + 5u) % vocab); }
static int doc_len(int d) { return d % 5 == 3 ? 0 : 1 + (d * 13) % 97; } /* some empty documents */

static zaya_status write_shard(const char *path, uint64_t vocab, uint32_t width, int ndocs) {
    zaya_shard_writer *w;
    ZAYA_TRY(zaya_shard_writer_open(path, vocab, width, (uint32_t)(vocab - 1), 0xabcdefull, &w));
    int32_t buf[128];
    for (int d = 0; d < ndocs; d++) {
        for (int i = 0; i < doc_len(d); i++) buf[i] = doc_token(d, i, vocab);
        zaya_status s = zaya_shard_writer_add(w, buf, (size_t)doc_len(d));
        if (s != ZAYA_OK) {
            zaya_shard_writer_abort(w);
            return s;
        }
    }
    return zaya_shard_writer_finish(w);
}

static void test_round_trip(uint32_t width, uint64_t vocab) {
    char path[128];
    snprintf(path, sizeof path, "%s/rt%u.ztok", dir, width);
    CHECK(write_shard(path, vocab, width, 200) == ZAYA_OK, "write: %s", zaya_error_message());
    zaya_shard s;
    zaya_status st = zaya_shard_open(path, 1, &s);
    CHECK(st == ZAYA_OK, "open: %s", zaya_error_message());
    if (st != ZAYA_OK) return;
    uint64_t ndocs = 0, ntok = 0;
    for (int d = 0; d < 200; d++) ndocs += doc_len(d) > 0, ntok += (uint64_t)doc_len(d);
    CHECK(s.hdr.token_width == width && s.hdr.vocab_size == vocab && s.hdr.eos_id == vocab - 1, "header fields");
    CHECK(s.hdr.doc_count == ndocs && s.hdr.token_count == ntok, "counts %llu docs %llu tokens",
          (unsigned long long)s.hdr.doc_count, (unsigned long long)s.hdr.token_count);
    CHECK(s.hdr.tokenizer_hash == 0xabcdefull, "tokenizer hash");
    uint64_t k = 0;
    int bad = 0;
    int32_t got[128];
    for (int d = 0; d < 200; d++) {
        if (!doc_len(d)) continue;
        uint64_t a = s.doc_index[k], b = s.doc_index[k + 1];
        if (b - a != (uint64_t)doc_len(d)) bad++;
        zaya_shard_read(&s, a, b - a, got);
        for (int i = 0; i < doc_len(d); i++) bad += got[i] != doc_token(d, i, vocab);
        k++;
    }
    CHECK(bad == 0, "%d mismatched tokens or lengths", bad);
    zaya_shard_close(&s);
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *b = malloc(*len + 1);
    if (fread(b, 1, *len, f) != *len) abort();
    fclose(f);
    return b;
}

static void dump(const char *path, const uint8_t *b, size_t len) {
    FILE *f = fopen(path, "wb");
    if (len && fwrite(b, 1, len, f) != len) abort();
    fclose(f);
}

static void rehash(uint8_t *b) {
    uint64_t h = XXH3_64bits(b, 88);
    memcpy(b + 88, &h, 8);
}
static void set_u32(uint8_t *b, size_t off, uint32_t v) { memcpy(b + off, &v, 4); }
static void set_u64(uint8_t *b, size_t off, uint64_t v) { memcpy(b + off, &v, 8); }

/* Writes a mutated copy, opens it with checksum verification, expects failure mentioning `want`. */
static void expect_reject(const char *label, const uint8_t *b, size_t len, const char *want) {
    char path[128];
    snprintf(path, sizeof path, "%s/bad.ztok", dir);
    dump(path, b, len);
    zaya_shard s;
    zaya_status st = zaya_shard_open(path, 1, &s);
    CHECK(st != ZAYA_OK, "%s: corrupted shard was accepted", label);
    if (st == ZAYA_OK) {
        zaya_shard_close(&s);
        return;
    }
    const char *m = zaya_error_message();
    CHECK(strstr(m, want) != NULL && strstr(m, path) != NULL, "%s: message lacks '%s' or the path: %s", label, want, m);
}

static void test_corruption(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/good.ztok", dir);
    CHECK(write_shard(path, 1000, 2, 50) == ZAYA_OK, "write: %s", zaya_error_message());
    size_t len;
    uint8_t *good = slurp(path, &len), *b = malloc(len);
    zaya_shard s;
    CHECK(zaya_shard_open(path, 1, &s) == ZAYA_OK, "good shard: %s", zaya_error_message());
    uint64_t io = s.hdr.index_offset, nd = s.hdr.doc_count;
    zaya_shard_close(&s);

#define RESET() memcpy(b, good, len)
    RESET(); b[0] = 'X';
    expect_reject("magic", b, len, "bad magic at offset 0");
    RESET(); set_u32(b, 8, 2); rehash(b);
    expect_reject("version", b, len, "field 'version' (offset 8) = 2");
    RESET(); set_u64(b, 24, 2000);
    expect_reject("header bytes without rehash", b, len, "field 'header_xxh3'");
    RESET(); set_u32(b, 16, 3); rehash(b);
    expect_reject("token width", b, len, "field 'token_width' (offset 16) = 3");
    RESET(); set_u64(b, 24, 70000); rehash(b);
    expect_reject("vocab too large for u16", b, len, "field 'vocab_size' (offset 24) = 70000");
    RESET(); set_u32(b, 20, 1000); rehash(b);
    expect_reject("eos >= vocab", b, len, "field 'eos_id' (offset 20) = 1000");
    RESET(); b[100] = 1; rehash(b);
    expect_reject("reserved byte", b, len, "reserved header byte at offset 100");
    expect_reject("truncated by 8 bytes", good, len - 8, "truncated");
    expect_reject("truncated mid-tokens", good, 300, "truncated");
    expect_reject("truncated header", good, 60, "shorter than the 128-byte header");
    expect_reject("empty file", good, 0, "shorter than the 128-byte header");
    RESET(); set_u64(b, 32, 1ull << 62); rehash(b);
    expect_reject("token count huge", b, len, "field 'token_count' (offset 32)");
    RESET(); set_u64(b, 32, 3); rehash(b);
    expect_reject("token count small", b, len, "field 'index_offset'");
    RESET(); set_u64(b, 40, nd + 1); rehash(b);
    expect_reject("doc count", b, len, "field 'doc_count' (offset 40)");
    RESET(); set_u64(b, 40, ~0ull); rehash(b);
    expect_reject("doc count overflow", b, len, "field 'doc_count'");
    RESET(); set_u64(b, 48, 136); rehash(b);
    expect_reject("tokens offset", b, len, "field 'tokens_offset'");
    RESET(); set_u64(b, io + 8 * 5, 1u << 30);
    expect_reject("index beyond tokens", b, len, "document index entry 5");
    RESET(); set_u64(b, io + 8 * 5, 0);
    expect_reject("index not monotonic", b, len, "document index entry");
    RESET(); set_u64(b, io, 1);
    expect_reject("index start", b, len, "document index entry 0");
    RESET(); { uint16_t v = 1000; memcpy(b + 128 + 2 * 7, &v, 2); }
    expect_reject("id >= vocab", b, len, "token 7 (offset 142) has id 1000 >= vocab_size 1000");
    RESET(); { uint16_t v; memcpy(&v, b + 130, 2); v = (uint16_t)((v + 1) % 999); memcpy(b + 130, &v, 2); }
    expect_reject("payload checksum", b, len, "field 'payload_xxh3'");
    /* A payload change is only found when the checksum is verified: the fast open accepts it. */
    snprintf(path, sizeof path, "%s/bad.ztok", dir);
    CHECK(zaya_shard_open(path, 0, &s) == ZAYA_OK, "open without verify: %s", zaya_error_message());
    CHECK(zaya_shard_verify_checksum(&s) != ZAYA_OK, "explicit verify catches it");
    zaya_shard_close(&s);
    /* Not a regular file and missing files. */
    CHECK(zaya_shard_open(dir, 0, &s) != ZAYA_OK && strstr(zaya_error_message(), "not a regular file"), "directory");
    CHECK(zaya_shard_open("/nonexistent/x.ztok", 0, &s) == ZAYA_EIO, "missing file");

    /* Hostile files: random byte flips, with and without a fixed-up header hash, never crash. */
    int accepted = 0;
    for (int it = 0; it < 400; it++) {
        RESET();
        int flips = 1 + (int)zaya_rng_u32_at(9, 1, (uint64_t)it) % 4;
        for (int f = 0; f < flips; f++) {
            uint32_t r = zaya_rng_u32_at(9, 2, (uint64_t)(it * 8 + f));
            size_t pos = it % 2 ? r % 128 : r % len;
            b[pos] ^= (uint8_t)(1u << (r >> 29));
        }
        if (it % 3 == 0) rehash(b);
        snprintf(path, sizeof path, "%s/fuzz.ztok", dir);
        dump(path, b, len);
        if (zaya_shard_open(path, it % 2, &s) == ZAYA_OK) {
            accepted++;
            zaya_shard_close(&s);
        }
    }
    printf("fuzz: %d of 400 mutated shards opened (flips of unused bits or unverified payload)\n", accepted);
    free(good);
    free(b);
}

static void test_writer_errors(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/w.ztok", dir);
    zaya_shard_writer *w;
    CHECK(zaya_shard_writer_open(path, 70000, 2, 1, 0, &w) == ZAYA_EINVAL, "vocab too large for u16");
    CHECK(zaya_shard_writer_open(path, 100, 2, 100, 0, &w) == ZAYA_EINVAL, "eos >= vocab");
    CHECK(zaya_shard_writer_open(path, 100, 3, 1, 0, &w) == ZAYA_EINVAL, "width 3");
    CHECK(zaya_shard_writer_open(path, 100, 0, 1, 0, &w) == ZAYA_OK, "open");
    int32_t ids[3] = {1, 100, 2};
    CHECK(zaya_shard_writer_add(w, ids, 3) == ZAYA_EINVAL && strstr(zaya_error_message(), "id 100"), "id >= vocab");
    ids[1] = -1;
    CHECK(zaya_shard_writer_add(w, ids, 3) == ZAYA_EINVAL, "negative id");
    zaya_shard_writer_abort(w);
    CHECK(access(path, F_OK) != 0, "aborted shard was published");
    /* No temporary files remain in the directory after finish or abort. */
    DIR *d = opendir(dir);
    struct dirent *e;
    int tmp = 0;
    while ((e = readdir(d))) tmp += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    CHECK(tmp == 0, "%d temporary files left behind", tmp);
    /* An empty shard (no documents) is valid. */
    CHECK(zaya_shard_writer_open(path, 100, 0, 1, 0, &w) == ZAYA_OK, "open");
    CHECK(zaya_shard_writer_finish(w) == ZAYA_OK, "finish empty");
    zaya_shard s;
    CHECK(zaya_shard_open(path, 1, &s) == ZAYA_OK && s.hdr.doc_count == 0 && s.hdr.token_count == 0, "empty shard: %s",
          zaya_error_message());
    zaya_shard_close(&s);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/zaya_test_shard_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_round_trip(2, 1000);
    test_round_trip(4, 100000);
    test_corruption();
    test_writer_errors();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return th_finish("test_shard");
}
