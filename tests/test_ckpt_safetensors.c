/* safetensors reader/writer: round trip (f32, bf16 rounding, integer dtypes, metadata, checksums,
 * offsets), hand-made hostile headers with the expected error, and random corruptions of a valid
 * image that must never crash (run under ASan in the sanitizer build). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "testutil.h"
#include "zaya/bf16.h"
#include "zaya/fs.h"
#include "zaya/rng.h"
#include "zaya/safetensors.h"

static char g_dir[256];

static void test_round_trip(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/rt.safetensors", g_dir);
    float a[24], b[10];
    th_fill(a, 24, 1, 0, -3, 3);
    th_fill(b, 10, 1, 1, -1e30f, 1e30f);
    b[3] = 1.0f + 1.0f / 256; /* halfway between two bf16 values: ties to even (down) */
    b[4] = 1.0f + 3.0f / 256; /* halfway: ties to even (up) */
    int64_t ids[5] = {-1, 0, 7, 1ll << 40, INT64_MAX};
    int64_t sa[3] = {2, 3, 4}, sb[1] = {10}, si[2] = {5, 1};
    zaya_st_writer *w;
    CHECK(zaya_st_writer_init(&w, path, 1) == ZAYA_OK, "init");
    zaya_st_writer_meta(w, "format", "pt");
    zaya_st_writer_meta(w, "note", "quote \" and \\ survive");
    CHECK(zaya_st_writer_add(w, "a.weight", ZAYA_ST_F32, 3, sa, a, ZAYA_ST_F32) == ZAYA_OK, "add a");
    CHECK(zaya_st_writer_add(w, "b", ZAYA_ST_BF16, 1, sb, b, ZAYA_ST_F32) == ZAYA_OK, "add b");
    CHECK(zaya_st_writer_add(w, "ids", ZAYA_ST_I64, 2, si, ids, ZAYA_ST_I64) == ZAYA_OK, "add ids");
    CHECK(zaya_st_writer_add(w, "bad", ZAYA_ST_I32, 1, sb, b, ZAYA_ST_F32) != ZAYA_OK, "F32 -> I32 must be refused");
    uint64_t sums[3], offs[3], bytes;
    CHECK(zaya_st_writer_finish(w, sums, offs, &bytes) == ZAYA_OK, "finish: %s", zaya_error_message());
    CHECK(access(path, F_OK) == 0, "file exists after rename");
    zaya_st_file f;
    CHECK(zaya_st_open(&f, path) == ZAYA_OK, "open: %s", zaya_error_message());
    if (th_failures) return;
    CHECK(f.size == bytes, "size %zu vs %llu", f.size, (unsigned long long)bytes);
    CHECK(f.data_start % 64 == 0, "data section aligned (%llu)", (unsigned long long)f.data_start);
    CHECK(f.ntensors == 3, "3 tensors");
    CHECK(zaya_st_meta(&f, "format") && !strcmp(zaya_st_meta(&f, "format"), "pt"), "metadata format");
    CHECK(zaya_st_meta(&f, "note") && !strcmp(zaya_st_meta(&f, "note"), "quote \" and \\ survive"), "metadata escaping");
    const zaya_st_tensor *ta = zaya_st_find(&f, "a.weight"), *tb = zaya_st_find(&f, "b"), *ti = zaya_st_find(&f, "ids");
    CHECK(ta && tb && ti && !zaya_st_find(&f, "c"), "find");
    if (!ta || !tb || !ti) return;
    CHECK(ta->ndim == 3 && ta->shape[0] == 2 && ta->shape[2] == 4 && ta->dtype == ZAYA_ST_F32, "a header");
    CHECK(ta->file_offset == offs[0] && tb->file_offset == offs[1] && ti->file_offset == offs[2], "offsets");
    CHECK(XXH3_64bits(ta->data, 96) == sums[0] && XXH3_64bits(tb->data, 20) == sums[1] && XXH3_64bits(ti->data, 40) == sums[2],
          "checksums");
    float ra[24], rb[10];
    CHECK(zaya_st_read_f32(&f, ta, 0, 24, ra) == ZAYA_OK && !memcmp(ra, a, sizeof a), "f32 values exact");
    CHECK(zaya_st_read_f32(&f, tb, 0, 10, rb) == ZAYA_OK, "bf16 read");
    for (int i = 0; i < 10; i++) CHECK(rb[i] == zaya_bf16_to_f32(zaya_f32_to_bf16(b[i])), "bf16 rne at %d", i);
    CHECK(rb[3] == 1.0f && rb[4] == 1.0f + 4.0f / 256, "ties to even: %g %g", rb[3], rb[4]);
    CHECK(!memcmp(ti->data, ids, sizeof ids), "i64 raw");
    CHECK(zaya_st_read_f32(&f, ti, 0, 5, rb) != ZAYA_OK, "i64 -> f32 refused");
    CHECK(zaya_st_read_f32(&f, ta, 20, 5, ra) == ZAYA_ERANGE, "range checked");
    zaya_st_close(&f);
}

/* Builds an image: 8-byte length + header + data bytes. */
static size_t image(uint8_t *buf, const char *hdr, size_t data_len, int64_t len_override) {
    size_t n = strlen(hdr);
    uint64_t L = len_override >= 0 ? (uint64_t)len_override : n;
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(L >> (8 * i));
    memcpy(buf + 8, hdr, n);
    memset(buf + 8 + n, 0x3f, data_len);
    return 8 + n + data_len;
}

static void expect_bad(const char *hdr, size_t data_len, int64_t len_override, const char *needle) {
    uint8_t *buf = malloc(8 + strlen(hdr) + data_len + 1);
    size_t n = image(buf, hdr, data_len, len_override);
    zaya_st_file f;
    zaya_status s = zaya_st_parse(&f, buf, n, "mem.safetensors");
    CHECK(s == ZAYA_EFORMAT, "hostile header accepted: %s", hdr);
    if (s != ZAYA_OK)
        CHECK(strstr(zaya_error_message(), needle) && strstr(zaya_error_message(), "mem.safetensors"),
              "message '%s' lacks '%s'", zaya_error_message(), needle);
    else zaya_st_close(&f);
    free(buf);
}

static void test_hostile(void) {
    const char *ok = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    uint8_t buf[256];
    zaya_st_file f;
    size_t n = image(buf, ok, 8, -1);
    CHECK(zaya_st_parse(&f, buf, n, "mem") == ZAYA_OK, "baseline valid: %s", zaya_error_message());
    zaya_st_close(&f);
    expect_bad(ok, 8, 100000, "header length");
    expect_bad(ok, 8, (int64_t)1 << 62, "header length");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]", 8, -1, "malformed JSON");
    expect_bad("[1,2]", 0, -1, "not a JSON object");
    expect_bad("{\"x\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, -1, "unknown dtype");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, -1, "'x'");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, -1, "cover 8 of the 12");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, -1, "gap");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               8, -1, "overlap");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", 8, -1, "outside the data section");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, -1, "shape[0]");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, -1, "shape[0]");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", 8, -1, "overflow");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", 8, -1, "dimensions");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, -1, "outside");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, -1, "data_offsets");
    expect_bad("{\"x\":5}", 0, -1, "not an object");
    expect_bad("{\"__metadata__\":{\"k\":1}}", 0, -1, "not a string");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}",
               8, -1, "duplicate");
    expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} xx", 8, -1, "garbage");
    n = image(buf, ok, 8, -1);
    CHECK(zaya_st_parse(&f, buf, 5, "mem") == ZAYA_EFORMAT, "5-byte file");
    CHECK(zaya_st_parse(&f, buf, n - 1, "mem") == ZAYA_EFORMAT, "truncated data");
    char path[512];
    snprintf(path, sizeof path, "%s/missing.safetensors", g_dir);
    CHECK(zaya_st_open(&f, path) == ZAYA_EIO && strstr(zaya_error_message(), "missing.safetensors"), "missing file names it");
}

/* Random corruptions of a valid image: header bytes, the length field, truncation, extension. */
static void test_fuzz(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz.safetensors", g_dir);
    float a[16];
    th_fill(a, 16, 3, 0, -1, 1);
    int64_t s1[2] = {4, 4}, s2[1] = {3};
    zaya_st_writer *w;
    zaya_st_writer_init(&w, path, 0);
    zaya_st_writer_meta(w, "k", "v");
    zaya_st_writer_add(w, "m.weight", ZAYA_ST_F32, 2, s1, a, ZAYA_ST_F32);
    zaya_st_writer_add(w, "h", ZAYA_ST_BF16, 1, s2, a, ZAYA_ST_F32);
    CHECK(zaya_st_writer_finish(w, NULL, NULL, NULL) == ZAYA_OK, "fuzz seed file");
    char *orig;
    size_t olen;
    CHECK(zaya_read_file(path, &orig, &olen) == ZAYA_OK, "read seed");
    if (th_failures) return;
    /* the header JSON ends before the padding: locate it for targeted mutations */
    size_t hlen = 0;
    while (8 + hlen < olen && orig[8 + hlen] != ' ') hlen++;
    static const char alphabet[] = "{}[]\":,0123456789-eE.FBI U8\\";
    int accepted = 0;
    const int iters = 4000;
    for (int it = 0; it < iters; it++) {
        uint32_t r[8];
        for (int k = 0; k < 8; k++) r[k] = zaya_rng_u32_at(77, (uint64_t)it, (uint64_t)k);
        size_t len = olen;
        uint8_t *buf = malloc(olen + 64);
        memcpy(buf, orig, olen);
        switch (r[0] % 5) {
        case 0: /* flip 1..4 header bytes to syntax-relevant characters */
            for (uint32_t k = 0; k <= r[1] % 4; k++) buf[8 + r[2 + k] % hlen] = (uint8_t)alphabet[r[6 + k % 2] % (sizeof alphabet - 1)];
            break;
        case 1: /* random byte anywhere */
            buf[r[1] % olen] ^= (uint8_t)(1u << (r[2] % 8));
            break;
        case 2: /* truncate */
            len = r[1] % olen;
            break;
        case 3: /* length field */
            for (int k = 0; k < 8; k++) buf[k] = (uint8_t)(r[1 + k % 4] >> (8 * (k % 4)));
            if (r[5] % 2) buf[2] = buf[3] = buf[4] = buf[5] = buf[6] = buf[7] = 0;
            break;
        default: /* extend with junk */
            len = olen + r[1] % 64;
            for (size_t k = olen; k < len; k++) buf[k] = (uint8_t)r[k % 8];
            break;
        }
        uint8_t *exact = malloc(len ? len : 1); /* exact size so ASan catches any over-read */
        memcpy(exact, buf, len);
        free(buf);
        zaya_st_file f;
        if (zaya_st_parse(&f, exact, len, "fuzz") == ZAYA_OK) {
            accepted++;
            for (int t = 0; t < f.ntensors; t++) {
                float tmp[64];
                const zaya_st_tensor *tt = &f.tensors[t];
                if (tt->numel <= 64) zaya_st_read_f32(&f, tt, 0, tt->numel, tmp);
            }
            zaya_st_close(&f);
        } else CHECK(strlen(zaya_error_message()) > 0, "error without message");
        free(exact);
    }
    printf("fuzz: %d of %d mutated images accepted (still valid), none crashed\n", accepted, iters);
    CHECK(accepted < iters, "mutations were caught");
    free(orig);
}

static void test_write_failure(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/full.safetensors", g_dir);
    float *big = th_alloc(1 << 20);
    int64_t sh[1] = {1 << 20};
    zaya_st_writer *w;
    zaya_st_writer_init(&w, path, 1);
    zaya_st_writer_add(w, "big", ZAYA_ST_F32, 1, sh, big, ZAYA_ST_F32);
    zaya_st_inject_write_failure(1000000);
    zaya_status s = zaya_st_writer_finish(w, NULL, NULL, NULL);
    zaya_st_inject_write_failure(-1);
    CHECK(s == ZAYA_EIO && strstr(zaya_error_message(), "No space left"), "ENOSPC reported: %s", zaya_error_message());
    CHECK(access(path, F_OK) != 0, "no file left behind");
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    CHECK(access(tmp, F_OK) != 0, "no temp file left behind");
    free(big);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/zaya_test_st_%d", (int)getpid());
    zaya_mkdir_p(g_dir);
    test_round_trip();
    test_hostile();
    test_fuzz();
    test_write_failure();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd)) {}
    return th_finish("test_ckpt_safetensors");
}
