/* Text -> shards with a byte-level encoder written here: file walking, delimiter and JSONL
 * documents, the validation split, shard rollover, overwrite protection, and JSONL errors with line
 * numbers (leaving no shards behind). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/data.h"

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
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return th_finish("test_prepare");
}
