/* Text -> shards with a byte-level encoder written here: file walking, delimiter and JSONL
 * documents, the validation split, shard rollover, overwrite protection, JSONL errors with line
 * numbers (leaving no shards behind); streamed .jsonl.gz / .jsonl.zst input (identical shards,
 * truncated or corrupt files rejected with their offset and no shard left), broken lines skipped
 * and counted by reason, dotted keys, metadata filters, and shards independent of the thread count. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "data/text_stream.h"
#include "testutil.h"
#include "zaya/data.h"
#include "zaya/fs.h"

enum { VOCAB = 257, EOS = 256, NCTX = 4 };
static char dir[64];

/* One call counter per encoding thread. */
typedef struct counters {
    int calls[NCTX];
    void *ctx[NCTX];
} counters;

static void counters_init(counters *c) {
    for (int i = 0; i < NCTX; i++) {
        c->calls[i] = 0;
        c->ctx[i] = &c->calls[i];
    }
}

static int counters_total(const counters *c) {
    int n = 0;
    for (int i = 0; i < NCTX; i++) n += c->calls[i];
    return n;
}

/* Byte-level: id = byte value. */
static zaya_status byte_encode(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap) {
    int *calls = ctx;
    (*calls)++;
    if (*n + len > *cap) {
        size_t c = (*n + len) * 2 + 16;
        int32_t *p = realloc(*ids, c * sizeof *p);
        if (!p) return zaya_error_set(ZAYA_ENOMEM, "oom");
        *ids = p;
        *cap = c;
    }
    for (size_t i = 0; i < len; i++) (*ids)[(*n)++] = (unsigned char)text[i];
    return ZAYA_OK;
}

static void put(const char *rel, const char *content, size_t len) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    if (fwrite(content, 1, len, f) != len) abort();
    fclose(f);
}

/* Decodes every document of the source's shards (train then val), in order. */
static int collect(const char *out, const char *name, const char *split, char docs[][64], int max) {
    char pat[256];
    snprintf(pat, sizeof pat, "%s/%s-%s-*.ztok", out, name, split);
    const char *p = pat;
    zaya_data_source src;
    if (zaya_data_source_open(&src, name, &p, 1, 1) != ZAYA_OK) return 0;
    int n = 0;
    for (int s = 0; s < src.nshards; s++) {
        const zaya_shard *sh = &src.shards[s];
        for (uint64_t d = 0; d < sh->hdr.doc_count && n < max; d++, n++) {
            int32_t ids[64];
            uint64_t a = sh->doc_index[d], len = sh->doc_index[d + 1] - a;
            zaya_shard_read(sh, a, len, ids);
            for (uint64_t i = 0; i < len && i < 63; i++) docs[n][i] = (char)ids[i];
            docs[n][len < 63 ? len : 63] = 0;
        }
    }
    zaya_data_source_free(&src);
    return n;
}

static int count_shards(const char *out) {
    DIR *d = opendir(out);
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) n += strstr(e->d_name, ".ztok") != NULL;
    closedir(d);
    return n;
}

static void test_prepare_tree(void) {
    char sub[128], out[128];
    snprintf(sub, sizeof sub, "%s/in/sub", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    char mk[256];
    snprintf(mk, sizeof mk, "mkdir -p %s", sub);
    if (system(mk) != 0) abort();
    /* Walk order: in/a.txt, in/b.h, in/sub/c.jsonl (sorted, depth first); in/z.bin is skipped. */
    const char *a = "first fortune\n%\nsecond fortune\nline two\n%\n\n%\nthird\n";
    put("in/a.txt", a, strlen(a));
    put("in/b.h", "int x;\n", 7);
    const char *c = "{\"text\": \"json one\"}\n\n{\"text\": \"json two\", \"id\": 2}\r\n{\"text\": \"json three\"}";
    put("in/sub/c.jsonl", c, strlen(c));
    put("in/z.bin", "ab\0cd", 5);
    const char *expected[] = {"first fortune\n", "second fortune\nline two\n", "third\n", "int x;\n",
                              "json one", "json two", "json three"};
    enum { NEXP = 7 };

    char in[128];
    snprintf(in, sizeof in, "%s/in", dir);
    const char *inputs[1] = {in};
    counters cn;
    counters_init(&cn);
    zaya_prepare_opts o = {.name = "prose", .out_dir = out, .vocab_size = VOCAB, .eos_id = EOS, .val_fraction = 0.3,
                           .seed = 11, .shard_tokens = 20, .doc_delimiter = "%"};
    zaya_prepare_stats st;
    CHECK(zaya_data_prepare(inputs, 1, &o, byte_encode, cn.ctx, 2, &st) == ZAYA_OK, "prepare: %s", zaya_error_message());
    CHECK(st.files == 4 && st.skipped_files == 1 && st.docs == NEXP, "files %llu skipped %llu docs %llu",
          (unsigned long long)st.files, (unsigned long long)st.skipped_files, (unsigned long long)st.docs);
    CHECK(counters_total(&cn) == NEXP, "encode called %d times", counters_total(&cn));
    char train[16][64], val[16][64];
    int nt = collect(out, "prose", "train", train, 16), nv = collect(out, "prose", "val", val, 16);
    CHECK(nt + nv == NEXP && (uint64_t)nt == st.train_docs && (uint64_t)nv == st.val_docs, "train %d + val %d docs", nt, nv);
    int it = 0, iv = 0, bad = 0;
    for (int d = 0; d < NEXP; d++) {
        const char *got = zaya_data_split_is_val(11, (uint64_t)d, 0.3) ? (iv < nv ? val[iv++] : "") : (it < nt ? train[it++] : "");
        bad += strcmp(got, expected[d]) != 0;
    }
    CHECK(bad == 0, "%d documents differ or landed in the wrong split", bad);
    CHECK(st.train_shards >= 2, "rollover at 20 tokens gave %d train shards", st.train_shards);
    char man[160];
    snprintf(man, sizeof man, "%s/prose.json", out);
    CHECK(access(man, F_OK) == 0, "manifest written");

    /* Existing shards are protected unless overwrite is set; extensions filter walked files. */
    CHECK(zaya_data_prepare(inputs, 1, &o, byte_encode, cn.ctx, 2, &st) == ZAYA_EINVAL &&
              strstr(zaya_error_message(), "already exists"), "overwrite refused: %s", zaya_error_message());
    o.overwrite = 1;
    o.extensions = "h";
    o.val_fraction = 0;
    CHECK(zaya_data_prepare(inputs, 1, &o, byte_encode, cn.ctx, 2, &st) == ZAYA_OK && st.docs == 1 && st.val_docs == 0,
          "extension filter: %s", zaya_error_message());
    CHECK(count_shards(out) == 1, "old shards replaced (%d left)", count_shards(out));
}

static void expect_jsonl_error(const char *content, const char *want) {
    char out[128], path[128];
    snprintf(out, sizeof out, "%s/jout", dir);
    snprintf(path, sizeof path, "%s/bad.jsonl", dir);
    put("bad.jsonl", content, strlen(content));
    const char *inputs[1] = {path};
    counters cn;
    counters_init(&cn);
    zaya_prepare_opts o = {.name = "j", .out_dir = out, .vocab_size = VOCAB, .eos_id = EOS, .shard_tokens = 4, .strict = 1};
    zaya_status s = zaya_data_prepare(inputs, 1, &o, byte_encode, cn.ctx, 2, NULL);
    CHECK(s == ZAYA_EFORMAT && strstr(zaya_error_message(), want), "'%s': got %s", want, zaya_error_message());
    CHECK(count_shards(out) == 0, "a failed prepare left %d shards", count_shards(out));
}

static void test_jsonl_errors(void) {
    expect_jsonl_error("{\"text\": \"ok ok ok\"}\n{\"text\": \"fine\"}\n{\"text\": oops}\n", "bad.jsonl:3: malformed JSON");
    expect_jsonl_error("{\"text\": \"ok\"}\n{\"body\": \"x\"}\n", "bad.jsonl:2: missing field 'text'");
    expect_jsonl_error("\n\n[1, 2]\n", "bad.jsonl:3: expected a JSON object");
    expect_jsonl_error("{\"text\": 5}\n", "bad.jsonl:1: field 'text' is not a string");
}

static void test_bad_opts(void) {
    char out[128];
    snprintf(out, sizeof out, "%s/o2", dir);
    const char *inputs[1] = {"/nonexistent/input"};
    counters cn;
    counters_init(&cn);
    zaya_prepare_opts o = {.name = "x", .out_dir = out, .vocab_size = VOCAB, .eos_id = EOS};
    CHECK(zaya_data_prepare(inputs, 1, &o, byte_encode, cn.ctx, 1, NULL) == ZAYA_EIO &&
              strstr(zaya_error_message(), "/nonexistent/input"), "missing input: %s", zaya_error_message());
    o.eos_id = VOCAB;
    CHECK(zaya_data_prepare(inputs, 1, &o, byte_encode, cn.ctx, 1, NULL) == ZAYA_EINVAL, "eos >= vocab");
    o.eos_id = EOS;
    o.val_fraction = 0.9;
    CHECK(zaya_data_prepare(inputs, 1, &o, byte_encode, cn.ctx, 1, NULL) == ZAYA_EINVAL, "val fraction");
}

/* ---- compressed JSONL ---- */

static void put_gz(const char *rel, const char *content, size_t len, int members) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    size_t at = 0;
    for (int m = 0; m < members; m++) { /* concatenated gzip members, as `cat a.gz b.gz` */
        size_t n = m == members - 1 ? len - at : len / (size_t)members;
        z_stream z;
        memset(&z, 0, sizeof z);
        if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
        size_t cap = deflateBound(&z, (uLong)n);
        unsigned char *buf = malloc(cap);
        z.next_in = (Bytef *)(content + at);
        z.avail_in = (uInt)n;
        z.next_out = buf;
        z.avail_out = (uInt)cap;
        if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
        if (fwrite(buf, 1, cap - z.avail_out, f) != cap - z.avail_out) abort();
        deflateEnd(&z);
        free(buf);
        at += n;
    }
    fclose(f);
}

static void put_zst(const char *rel, const char *content, size_t len, int frames) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    size_t at = 0;
    for (int m = 0; m < frames; m++) {
        size_t n = m == frames - 1 ? len - at : len / (size_t)frames;
        size_t cap = ZSTD_compressBound(n);
        void *buf = malloc(cap);
        size_t z = ZSTD_compress(buf, cap, content + at, n, 3);
        if (ZSTD_isError(z) || fwrite(buf, 1, z, f) != z) abort();
        free(buf);
        at += n;
    }
    fclose(f);
}

static char *slurp(const char *path, size_t *len) {
    char *d = NULL;
    *len = 0;
    if (zaya_read_file(path, &d, len) != ZAYA_OK) return NULL;
    return d;
}

/* Every shard of out/NAME-{train,val}-0000k equals the one in ref. */
static int same_shards(const char *ref, const char *out, const char *name) {
    int nfiles = 0;
    for (int val = 0; val < 2; val++)
        for (int k = 0; k < 100; k++) {
            char a[256], b[256];
            snprintf(a, sizeof a, "%s/%s-%s-%05d.ztok", ref, name, val ? "val" : "train", k);
            snprintf(b, sizeof b, "%s/%s-%s-%05d.ztok", out, name, val ? "val" : "train", k);
            int ea = access(a, F_OK) == 0, eb = access(b, F_OK) == 0;
            if (ea != eb) return 0;
            if (!ea) break;
            size_t la, lb;
            char *da = slurp(a, &la), *db = slurp(b, &lb);
            int eq = da && db && la == lb && !memcmp(da, db, la);
            free(da);
            free(db);
            if (!eq) return 0;
            nfiles++;
        }
    return nfiles;
}

/* A JSONL corpus of n records with metadata, about 40 bytes each. */
static char *make_jsonl(int n, size_t *len) {
    size_t cap = (size_t)n * 96 + 64, at = 0;
    char *b = malloc(cap);
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(b + at, cap - at, "{\"text\": \"doc %d says %s\", \"meta\": {\"lang\": \"%s\", \"n\": %d}}\n", i,
                               i % 7 ? "hello" : "a longer line of text", i % 3 ? "en" : "de", i % 5);
    *len = at;
    return b;
}

static zaya_status run_prepare(const char *input, const char *out, int nctx, zaya_prepare_opts *o, zaya_prepare_stats *st) {
    counters cn;
    counters_init(&cn);
    const char *inputs[1] = {input};
    o->out_dir = out;
    o->vocab_size = VOCAB;
    o->eos_id = EOS;
    o->overwrite = 1;
    return zaya_data_prepare(inputs, 1, o, byte_encode, cn.ctx, nctx, st);
}

static void test_compressed(void) {
    size_t len;
    char *corpus = make_jsonl(10000, &len); /* 10000 documents: three batches */
    put("c.jsonl", corpus, len);
    put_gz("c.jsonl.gz", corpus, len, 3);
    put_zst("c.jsonl.zst", corpus, len, 2);
    char in[3][128], out[3][128];
    const char *names[3] = {"c.jsonl", "c.jsonl.gz", "c.jsonl.zst"};
    zaya_prepare_stats st[3];
    for (int k = 0; k < 3; k++) {
        snprintf(in[k], sizeof in[k], "%s/%s", dir, names[k]);
        snprintf(out[k], sizeof out[k], "%s/cout%d", dir, k);
        zaya_prepare_opts o = {.name = "c", .val_fraction = 0.1, .seed = 3, .shard_tokens = 100000};
        CHECK(run_prepare(in[k], out[k], 2, &o, &st[k]) == ZAYA_OK, "%s: %s", names[k], zaya_error_message());
        CHECK(st[k].docs == 10000 && st[k].jsonl_lines == 10000 && st[k].bytes == len, "%s: %llu docs, %llu lines, %llu bytes",
              names[k], (unsigned long long)st[k].docs, (unsigned long long)st[k].jsonl_lines, (unsigned long long)st[k].bytes);
    }
    CHECK(st[0].train_shards >= 2, "several train shards (%d)", st[0].train_shards);
    CHECK(same_shards(out[0], out[1], "c") >= 3, "gzip input gives the plain input's shards");
    CHECK(same_shards(out[0], out[2], "c") >= 3, "zstd input gives the plain input's shards");
    CHECK(st[1].file_bytes < len && st[2].file_bytes < len, "compressed sizes on disk (%llu, %llu)",
          (unsigned long long)st[1].file_bytes, (unsigned long long)st[2].file_bytes);

    /* thread count: 1, 3 and 4 encoding threads write the same bytes as 2 */
    const int nctxs[3] = {1, 3, 4};
    for (int t = 0; t < 3; t++) {
        const int nctx = nctxs[t];
        char o2[128];
        snprintf(o2, sizeof o2, "%s/cthreads%d", dir, nctx);
        zaya_prepare_opts o = {.name = "c", .val_fraction = 0.1, .seed = 3, .shard_tokens = 100000};
        zaya_prepare_stats s2;
        CHECK(run_prepare(in[1], o2, nctx, &o, &s2) == ZAYA_OK && s2.threads == nctx, "threads %d: %s", nctx,
              zaya_error_message());
        CHECK(same_shards(out[0], o2, "c") >= 3, "%d threads: same shards as 2", nctx);
    }

    /* truncated and corrupt files: an error naming the file and the offset, and no shard left */
    size_t glen, zlen;
    char gpath[160], zpath[160];
    snprintf(gpath, sizeof gpath, "%s/c.jsonl.gz", dir);
    snprintf(zpath, sizeof zpath, "%s/c.jsonl.zst", dir);
    char *g = slurp(gpath, &glen), *z = slurp(zpath, &zlen);
    struct { const char *name; const char *data; size_t len; const char *want; } bad[] = {
        {"t.jsonl.gz", g, glen - 9, "truncated gzip data"},  /* inside the last member's trailer */
        {"t2.jsonl.gz", g, glen / 2, "truncated gzip data"}, /* mid-stream */
        {"t.jsonl.zst", z, zlen - 3, "truncated zstd data"},
        {"t2.jsonl.zst", z, zlen / 2, "truncated zstd data"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        put(bad[k].name, bad[k].data, bad[k].len);
        char p[160], o2[160], want[200];
        snprintf(p, sizeof p, "%s/%s", dir, bad[k].name);
        snprintf(o2, sizeof o2, "%s/tout%zu", dir, k);
        snprintf(want, sizeof want, "'%s': %s: the file ends at byte offset %zu", p, bad[k].want, bad[k].len);
        zaya_prepare_opts o = {.name = "t", .shard_tokens = 1000}; /* small shards: some are finished before the error */
        CHECK(run_prepare(p, o2, 2, &o, NULL) == ZAYA_EFORMAT && strstr(zaya_error_message(), want), "%s: %s", bad[k].name,
              zaya_error_message());
        CHECK(count_shards(o2) == 0, "%s: a failed prepare left %d shards", bad[k].name, count_shards(o2));
        char man[200];
        snprintf(man, sizeof man, "%s/t.json", o2);
        CHECK(access(man, F_OK) != 0, "%s: no manifest", bad[k].name);
    }
    /* a flipped byte inside the deflate data / a zstd block */
    g[glen / 2] ^= 0x55;
    put("x.jsonl.gz", g, glen);
    z[zlen / 2] ^= 0x55;
    put("x.jsonl.zst", z, zlen);
    const char *flips[2][2] = {{"x.jsonl.gz", "corrupt gzip data near byte offset"}, {"x.jsonl.zst", "corrupt zstd data near byte offset"}};
    for (int k = 0; k < 2; k++) {
        char p[160], o2[160];
        snprintf(p, sizeof p, "%s/%s", dir, flips[k][0]);
        snprintf(o2, sizeof o2, "%s/xout%d", dir, k);
        zaya_prepare_opts o = {.name = "x", .shard_tokens = 1000};
        zaya_status s = run_prepare(p, o2, 2, &o, NULL);
        /* zstd checks its content checksum; deflate may also decode a flipped byte into other text */
        int named = s == ZAYA_EFORMAT && strstr(zaya_error_message(), flips[k][1]) && strstr(zaya_error_message(), p);
        CHECK(named || (k == 0 && s == ZAYA_OK), "%s: %s", flips[k][0], zaya_error_message());
        if (s != ZAYA_OK) CHECK(count_shards(o2) == 0, "%s: %d shards left", flips[k][0], count_shards(o2));
    }
    /* not compressed at all, and an empty file */
    put("plain.jsonl.gz", corpus, 100);
    put("empty.jsonl.zst", "", 0);
    const char *notc[2][2] = {{"plain.jsonl.gz", "is not gzip data"}, {"empty.jsonl.zst", "is not zstd data (empty file"}};
    for (int k = 0; k < 2; k++) {
        char p[160], o2[160];
        snprintf(p, sizeof p, "%s/%s", dir, notc[k][0]);
        snprintf(o2, sizeof o2, "%s/nout%d", dir, k);
        zaya_prepare_opts o = {.name = "n"};
        CHECK(run_prepare(p, o2, 1, &o, NULL) == ZAYA_EFORMAT && strstr(zaya_error_message(), notc[k][1]), "%s: %s",
              notc[k][0], zaya_error_message());
    }
    free(g);
    free(z);
    free(corpus);
}

/* Lines that give no document: counted by reason, the first broken one named; keys and filters. */
static void test_skips_keys_filters(void) {
    const char *j =
        "{\"text\": \"one\", \"meta\": {\"lang\": \"en\", \"body\": \"b1\", \"q\": 1}}\n" /* 1 */
        "{\"text\": oops}\n"                                                           /* 2 malformed */
        "[1, 2]\n"                                                                     /* 3 not an object */
        "\n"                                                                           /* 4 blank */
        "{\"body\": \"no text\"}\n"                                                    /* 5 missing key */
        "{\"text\": 7}\n"                                                              /* 6 not a string */
        "{\"text\": \"   \"}\n"                                                        /* 7 blank text */
        "{\"text\": \"two\", \"meta\": {\"lang\": \"de\", \"body\": \"b2\", \"q\": 2}}\n" /* 8 */
        "{\"text\": \"three\", \"a.b\": \"dotted\", \"meta\": {\"lang\": \"en\", \"q\": 2.0, \"ok\": true}}\r\n" /* 9 */
        "{\"text\": \"four\"";                                                         /* 10 malformed, no newline */
    put("s.jsonl", j, strlen(j));
    char p[160], o2[160];
    snprintf(p, sizeof p, "%s/s.jsonl", dir);
    snprintf(o2, sizeof o2, "%s/sout", dir);
    zaya_prepare_opts o = {.name = "s"};
    zaya_prepare_stats st;
    CHECK(run_prepare(p, o2, 2, &o, &st) == ZAYA_OK, "lenient: %s", zaya_error_message());
    const uint64_t *k = st.skipped_lines;
    CHECK(st.jsonl_lines == 10 && st.docs == 3 && k[ZAYA_SKIP_LINE_MALFORMED] == 2 && k[ZAYA_SKIP_LINE_NOT_OBJECT] == 1 &&
              k[ZAYA_SKIP_LINE_NO_KEY] == 1 && k[ZAYA_SKIP_LINE_NOT_STRING] == 1 && k[ZAYA_SKIP_LINE_BLANK] == 2 &&
              k[ZAYA_SKIP_LINE_FILTERED] == 0,
          "lines %llu docs %llu: malformed %llu, not object %llu, missing %llu, not string %llu, blank %llu",
          (unsigned long long)st.jsonl_lines, (unsigned long long)st.docs, (unsigned long long)k[1], (unsigned long long)k[2],
          (unsigned long long)k[3], (unsigned long long)k[4], (unsigned long long)k[6]);
    char want[200];
    snprintf(want, sizeof want, "%s:2: malformed JSON", p);
    CHECK(!strcmp(st.first_bad_line, want), "first broken line '%s'", st.first_bad_line);
    char docs[8][64];
    int n = collect(o2, "s", "train", docs, 8);
    CHECK(n == 3 && !strcmp(docs[0], "one") && !strcmp(docs[1], "two") && !strcmp(docs[2], "three"), "documents kept in order");
    char man[200], *m;
    size_t ml;
    snprintf(man, sizeof man, "%s/s.json", o2);
    m = slurp(man, &ml);
    CHECK(m && strstr(m, "\"malformed_json\":\t2") && strstr(m, "\"first_bad_line\""), "manifest counts skipped lines");
    free(m);

    /* dotted key: nested, and a key holding a dot */
    o = (zaya_prepare_opts){.name = "s", .jsonl_key = "meta.body"};
    CHECK(run_prepare(p, o2, 1, &o, &st) == ZAYA_OK && st.docs == 2, "meta.body: %llu docs", (unsigned long long)st.docs);
    n = collect(o2, "s", "train", docs, 8);
    CHECK(n == 2 && !strcmp(docs[0], "b1") && !strcmp(docs[1], "b2"), "meta.body texts");
    CHECK(st.skipped_lines[ZAYA_SKIP_LINE_NO_KEY] == 4, "records without meta.body counted (%llu)",
          (unsigned long long)st.skipped_lines[ZAYA_SKIP_LINE_NO_KEY]);
    o = (zaya_prepare_opts){.name = "s", .jsonl_key = "a.b"};
    CHECK(run_prepare(p, o2, 1, &o, &st) == ZAYA_OK && st.docs == 1 && collect(o2, "s", "train", docs, 8) == 1 &&
              !strcmp(docs[0], "dotted"), "key with a dot");

    /* filters: all must hold; strings as is, numbers by value, booleans, !=. They are applied before
     * the text is looked at: lines 5-7 (no meta) and 8 (de) are filtered, not broken */
    const char *f1[] = {"meta.lang=en"};
    o = (zaya_prepare_opts){.name = "s", .jsonl_filters = f1, .njsonl_filters = 1};
    CHECK(run_prepare(p, o2, 2, &o, &st) == ZAYA_OK && st.docs == 2 && st.skipped_lines[ZAYA_SKIP_LINE_FILTERED] == 4 &&
              st.skipped_lines[ZAYA_SKIP_LINE_NO_KEY] == 0,
          "lang=en: %llu docs, %llu filtered", (unsigned long long)st.docs,
          (unsigned long long)st.skipped_lines[ZAYA_SKIP_LINE_FILTERED]);
    const char *f2[] = {"meta.q=2", "meta.lang!=de"};
    o = (zaya_prepare_opts){.name = "s", .jsonl_filters = f2, .njsonl_filters = 2};
    CHECK(run_prepare(p, o2, 2, &o, &st) == ZAYA_OK && st.docs == 1 && collect(o2, "s", "train", docs, 8) == 1 &&
              !strcmp(docs[0], "three"), "q=2 and lang!=de");
    const char *f3[] = {"meta.ok=true"};
    o = (zaya_prepare_opts){.name = "s", .jsonl_filters = f3, .njsonl_filters = 1};
    CHECK(run_prepare(p, o2, 2, &o, &st) == ZAYA_OK && st.docs == 1, "ok=true");
    const char *f4[] = {"=x"};
    o = (zaya_prepare_opts){.name = "s", .jsonl_filters = f4, .njsonl_filters = 1};
    CHECK(run_prepare(p, o2, 2, &o, &st) == ZAYA_EINVAL && strstr(zaya_error_message(), "JSONL filter '=x'"),
          "bad filter named: %s", zaya_error_message());
    /* every line filtered out: an error that says so */
    const char *f5[] = {"meta.lang=fr"};
    o = (zaya_prepare_opts){.name = "s", .jsonl_filters = f5, .njsonl_filters = 1};
    CHECK(run_prepare(p, o2, 2, &o, &st) == ZAYA_EINVAL && strstr(zaya_error_message(), "no non-blank documents"),
          "nothing left: %s", zaya_error_message());
}

/* The line reader on its own: lines across refills, a line longer than the initial window, CRLF
 * kept, a last line without newline, line numbers and offsets. */
static void test_text_stream(void) {
    size_t big = (3u << 20) + 17, len = big + 64;
    char *b = malloc(len);
    size_t at = (size_t)snprintf(b, len, "first\r\n\n");
    memset(b + at, 'x', big);
    at += big;
    at += (size_t)snprintf(b + at, len - at, "\nlast");
    put("ts.txt.zst", "", 0);
    put_zst("ts.jsonl.zst", b, at, 3);
    put("ts.jsonl", b, at);
    const char *names[2] = {"ts.jsonl", "ts.jsonl.zst"};
    for (int k = 0; k < 2; k++) {
        char p[160];
        snprintf(p, sizeof p, "%s/%s", dir, names[k]);
        zaya_text_stream *s;
        CHECK(zaya_text_stream_open(p, &s) == ZAYA_OK, "open %s: %s", names[k], zaya_error_message());
        if (!s) continue;
        const char *line;
        size_t n;
        int ok = zaya_text_stream_next(s, &line, &n) == ZAYA_OK && n == 6 && !memcmp(line, "first\r", 6);
        ok &= zaya_text_stream_next(s, &line, &n) == ZAYA_OK && line && n == 0;
        ok &= zaya_text_stream_next(s, &line, &n) == ZAYA_OK && n == big && line[0] == 'x' && line[big - 1] == 'x';
        ok &= zaya_text_stream_line_no(s) == 3;
        ok &= zaya_text_stream_next(s, &line, &n) == ZAYA_OK && n == 4 && !memcmp(line, "last", 4);
        ok &= zaya_text_stream_next(s, &line, &n) == ZAYA_OK && line == NULL;
        ok &= zaya_text_stream_data_bytes(s) == at;
        CHECK(ok, "%s: lines, numbers and sizes", names[k]);
        zaya_text_stream_close(s);
    }
    CHECK(zaya_stream_codec_of("a.jsonl.gz") == ZAYA_STREAM_GZIP && zaya_stream_codec_of("a.zst") == ZAYA_STREAM_ZSTD &&
              zaya_stream_codec_of("a.jsonl") == ZAYA_STREAM_PLAIN && zaya_stream_base_len("a.jsonl.zst") == 7,
          "codec by suffix");
    free(b);
}

/* Files are what they claim and each is read once: a FIFO input is refused naming it (instead of
 * blocking), a directory symlink to its parent is walked once, a file reached by two names is read
 * once, an empty document reaches the arena without a NULL memcpy, and an empty --jsonl-key is an
 * error. */
static void test_special_files(void) {
    char root[160], out[160], p[256], q[256];
    snprintf(root, sizeof root, "%s/walk", dir);
    snprintf(out, sizeof out, "%s/walk-out", dir);
    snprintf(p, sizeof p, "%s/sub", root);
    CHECK(zaya_mkdir_p(p) == ZAYA_OK, "mkdir");
    put("walk/a.txt", "alpha", 5);
    put("walk/sub/b.txt", "beta", 4);
    snprintf(p, sizeof p, "%s/sub/loop", root);
    CHECK(symlink("..", p) == 0, "symlink to the parent");
    snprintf(p, sizeof p, "%s/sub/a-again.txt", root);
    snprintf(q, sizeof q, "%s/a.txt", root);
    CHECK(symlink(q, p) == 0, "second name of a.txt");
    zaya_prepare_opts o = {.name = "w", .shard_tokens = 1u << 20};
    zaya_prepare_stats st;
    CHECK(run_prepare(root, out, 2, &o, &st) == ZAYA_OK, "walk with a symlink cycle: %s", zaya_error_message());
    CHECK(st.files == 2 && st.docs == 2, "each file read once: %llu files, %llu docs", (unsigned long long)st.files,
          (unsigned long long)st.docs);
    /* an explicit input named twice is read once too */
    const char *twice[2] = {q, q};
    counters cn;
    counters_init(&cn);
    zaya_prepare_opts o2 = {.name = "t", .out_dir = out, .vocab_size = VOCAB, .eos_id = EOS, .overwrite = 1};
    CHECK(zaya_data_prepare(twice, 2, &o2, byte_encode, cn.ctx, 1, &st) == ZAYA_OK && st.docs == 1, "same input twice: %llu docs",
          (unsigned long long)st.docs);
    /* a FIFO given as input (and a FIFO named *.jsonl) is refused, not waited on */
    const char *fifos[2] = {"fifo.txt", "fifo.jsonl"};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/%s", dir, fifos[k]);
        CHECK(mkfifo(p, 0600) == 0, "mkfifo");
        zaya_prepare_opts of = {.name = "f"};
        zaya_status s = run_prepare(p, out, 1, &of, NULL);
        CHECK(s == ZAYA_EIO && strstr(zaya_error_message(), fifos[k]) && strstr(zaya_error_message(), "FIFO"),
              "FIFO %s refused: %s", fifos[k], zaya_error_message());
        unlink(p);
    }
    /* an empty document first in a batch (the arena not allocated yet) */
    put("empty.txt", "", 0);
    put("full.txt", "x", 1);
    char e1[256], e2[256];
    snprintf(e1, sizeof e1, "%s/empty.txt", dir);
    snprintf(e2, sizeof e2, "%s/full.txt", dir);
    const char *ins[2] = {e1, e2};
    counters_init(&cn);
    zaya_prepare_opts o3 = {.name = "e", .out_dir = out, .vocab_size = VOCAB, .eos_id = EOS, .overwrite = 1};
    CHECK(zaya_data_prepare(ins, 2, &o3, byte_encode, cn.ctx, 1, &st) == ZAYA_OK && st.docs == 1, "empty document: %s",
          zaya_error_message());
    o3.jsonl_key = "";
    CHECK(zaya_data_prepare(ins, 2, &o3, byte_encode, cn.ctx, 1, &st) == ZAYA_EINVAL && strstr(zaya_error_message(), "--jsonl-key"),
          "empty JSONL key: %s", zaya_error_message());
}

/* Compressed bombs: the line cap holds while decompressing (memory: the cap, not the line), and an
 * expansion past the ratio limit stops the read long before 10 GiB of newlines would. */
static void test_bombs(void) {
    const size_t n = (size_t)80 << 20; /* past the 64 MiB floor of the ratio check */
    char *nl = malloc(n);
    if (!nl) return;
    memset(nl, '\n', n);
    put_zst("nl.jsonl.zst", nl, n, 1);
    memset(nl, 'a', n);
    put_gz("long.jsonl.gz", nl, (size_t)8 << 20, 1);
    free(nl);
    char p[256];
    snprintf(p, sizeof p, "%s/nl.jsonl.zst", dir);
    zaya_text_stream *s = NULL;
    CHECK(zaya_text_stream_open(p, &s) == ZAYA_OK, "open");
    const char *line;
    size_t len;
    zaya_status st = ZAYA_OK;
    uint64_t lines = 0;
    while (s && (st = zaya_text_stream_next(s, &line, &len)) == ZAYA_OK && line) lines++;
    CHECK(st == ZAYA_ERANGE && strstr(zaya_error_message(), "nl.jsonl.zst") && strstr(zaya_error_message(), "1000 times"),
          "expansion cap: %s (after %llu lines)", zaya_error_message(), (unsigned long long)lines);
    CHECK(lines < n, "stopped before the end (%llu lines)", (unsigned long long)lines);
    zaya_text_stream_close(s);
    /* with the limit off the same file reads to its end */
    CHECK(zaya_text_stream_open(p, &s) == ZAYA_OK, "open");
    zaya_text_stream_set_limits(s, 0, 0);
    lines = 0;
    while (s && (st = zaya_text_stream_next(s, &line, &len)) == ZAYA_OK && line) lines++;
    CHECK(st == ZAYA_OK && lines == n, "no limit: %llu lines", (unsigned long long)lines);
    zaya_text_stream_close(s);
    /* one 8 MiB line under a 1 MiB cap: refused naming the line and the cap */
    snprintf(p, sizeof p, "%s/long.jsonl.gz", dir);
    CHECK(zaya_text_stream_open(p, &s) == ZAYA_OK, "open");
    zaya_text_stream_set_limits(s, 1u << 20, 1000);
    st = zaya_text_stream_next(s, &line, &len);
    CHECK(st == ZAYA_ERANGE && strstr(zaya_error_message(), "line 1 is longer than 1048576 bytes"), "line cap: %s",
          zaya_error_message());
    zaya_text_stream_close(s);
    /* through data prepare: the options reach the stream */
    char out[160];
    snprintf(out, sizeof out, "%s/bomb-out", dir);
    zaya_prepare_opts o = {.name = "b", .max_line_bytes = 1u << 20};
    CHECK(run_prepare(p, out, 1, &o, NULL) == ZAYA_ERANGE && strstr(zaya_error_message(), "long.jsonl.gz"),
          "prepare line cap: %s", zaya_error_message());
}

/* `test_prepare --corpus OUT NAME INPUT...`: byte-level shards for the CLI test and the loader
 * benchmark, written through the same zaya_data_prepare path. */
static int make_corpus(int argc, char **argv) {
    counters cn;
    counters_init(&cn);
    zaya_prepare_opts o = {.name = argv[3], .out_dir = argv[2], .vocab_size = VOCAB, .eos_id = EOS, .val_fraction = 0.05,
                           .seed = 1, .shard_tokens = 16u << 20, .extensions = "h,c,txt,jsonl", .overwrite = 1};
    zaya_prepare_stats st;
    if (zaya_data_prepare((const char *const *)argv + 4, argc - 4, &o, byte_encode, cn.ctx, 1, &st) != ZAYA_OK) {
        fprintf(stderr, "test_prepare: %s\n", zaya_error_message());
        return 1;
    }
    printf("%s: %llu docs, %llu train tokens in %d shards, %llu val tokens\n", argv[3], (unsigned long long)st.docs,
           (unsigned long long)st.train_tokens, st.train_shards, (unsigned long long)st.val_tokens);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "--corpus")) return make_corpus(argc, argv);
    snprintf(dir, sizeof dir, "/tmp/zaya_test_prepare_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_prepare_tree();
    test_jsonl_errors();
    test_bad_opts();
    test_text_stream();
    test_compressed();
    test_skips_keys_filters();
    test_special_files();
    test_bombs();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return th_finish("test_prepare");
}
