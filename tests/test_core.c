/* Core runtime: bf16 rounding, Philox known-answer vectors, RNG addressing, arenas, JSON helpers,
 * regular-file opens, flag and size parsing, status messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/flags.h"
#include "testutil.h"
#include "zaya/alloc.h"
#include "zaya/bf16.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/rng.h"

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_bf16(void) {
    CHECK(zaya_f32_to_bf16(1.0f) == 0x3f80, "1.0");
    CHECK(zaya_f32_to_bf16(-2.0f) == 0xc000, "-2.0");
    /* Exactly halfway between 0x3f80 and 0x3f81: ties to even keeps 0x3f80. */
    CHECK(zaya_f32_to_bf16(bits_f(0x3f808000u)) == 0x3f80, "tie to even (down)");
    /* Halfway between 0x3f81 and 0x3f82: ties to even goes up to 0x3f82. */
    CHECK(zaya_f32_to_bf16(bits_f(0x3f818000u)) == 0x3f82, "tie to even (up)");
    CHECK(zaya_f32_to_bf16(bits_f(0x3f808001u)) == 0x3f81, "above half rounds up");
    CHECK(zaya_f32_to_bf16(bits_f(0x3f807fffu)) == 0x3f80, "below half rounds down");
    /* Largest finite float rounds to +Inf in bf16 (correct RNE overflow). */
    CHECK(zaya_f32_to_bf16(bits_f(0x7f7fffffu)) == 0x7f80, "overflow to inf");
    CHECK(zaya_f32_to_bf16(INFINITY) == 0x7f80, "inf");
    /* NaN whose payload lives only in the low 16 bits must stay NaN. */
    uint16_t h = zaya_f32_to_bf16(bits_f(0x7f800001u));
    CHECK(isnan(zaya_bf16_to_f32(h)), "low-payload NaN stays NaN (got 0x%04x)", h);
    CHECK(isnan(zaya_bf16_to_f32(zaya_f32_to_bf16(NAN))), "NaN");
    CHECK(zaya_bf16_to_f32(0x3f80) == 1.0f, "bf16 -> f32");
    /* Round trip of every bf16 bit pattern that is not NaN is exact. */
    int bad = 0;
    for (uint32_t u = 0; u < 65536; u++) {
        float f = zaya_bf16_to_f32((uint16_t)u);
        if (isnan(f)) continue;
        if (zaya_f32_to_bf16(f) != u) bad++;
    }
    CHECK(bad == 0, "%d bf16 patterns do not round-trip", bad);
    float xs[5] = {1.0f, bits_f(0x3f818000u), -3.5f, 1e-3f, NAN};
    uint16_t hs[5];
    float back[5];
    zaya_f32_to_bf16_n(hs, xs, 5);
    zaya_bf16_to_f32_n(back, hs, 5);
    CHECK(hs[1] == 0x3f82 && back[0] == 1.0f && back[2] == -3.5f && isnan(back[4]), "bulk conversion");
}

static void test_philox(void) {
    /* Known-answer vectors of Philox-4x32-10 (Random123 kat_vectors). */
    zaya_u32x4 r = zaya_philox4x32(0, 0, 0);
    CHECK(r.v[0] == 0x6627e8d5u && r.v[1] == 0xe169c58du && r.v[2] == 0xbc57ac4cu && r.v[3] == 0x9b00dbd8u,
          "zero vector: %08x %08x %08x %08x", r.v[0], r.v[1], r.v[2], r.v[3]);
    r = zaya_philox4x32(0xffffffffffffffffull, 0xffffffffffffffffull, 0xffffffffffffffffull);
    CHECK(r.v[0] == 0x408f276du && r.v[1] == 0x41c83b0eu && r.v[2] == 0xa20bc7c6u && r.v[3] == 0x6d5451fdu,
          "ones vector: %08x %08x %08x %08x", r.v[0], r.v[1], r.v[2], r.v[3]);
    /* pi digits: counter words 243f6a88 85a308d3 13198a2e 03707344, key a4093822 299f31d0 */
    r = zaya_philox4x32(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull);
    CHECK(r.v[0] == 0xd16cfe09u && r.v[1] == 0x94fdccebu && r.v[2] == 0x5001e420u && r.v[3] == 0x24126ea1u,
          "pi vector: %08x %08x %08x %08x", r.v[0], r.v[1], r.v[2], r.v[3]);
}

static void test_rng_addressing(void) {
    /* Filling in one call or in pieces gives the same values: element i is addressed by its index. */
    enum { N = 1000 };
    float *a = th_alloc(N), *b = th_alloc(N);
    zaya_rng_fill_normal(a, N, 7, 3, 0, 0.0f, 1.0f);
    zaya_rng_fill_normal(b, 400, 7, 3, 0, 0.0f, 1.0f);
    zaya_rng_fill_normal(b + 400, N - 400, 7, 3, 400, 0.0f, 1.0f);
    CHECK(memcmp(a, b, sizeof(float) * N) == 0, "piecewise fill differs");
    double mean = 0, var = 0;
    for (int i = 0; i < N; i++) mean += a[i];
    mean /= N;
    for (int i = 0; i < N; i++) var += (a[i] - mean) * (a[i] - mean);
    var /= N;
    CHECK(fabs(mean) < 0.12 && fabs(var - 1.0) < 0.15, "normal moments mean %.3f var %.3f", mean, var);
    zaya_rng_fill_normal(b, N, 7, 4, 0, 0.0f, 1.0f);
    CHECK(memcmp(a, b, sizeof(float) * N) != 0, "different streams must differ");
    zaya_rng g = zaya_rng_make(1, 2);
    int hist[10] = {0};
    for (int i = 0; i < 10000; i++) hist[zaya_rng_next_below(&g, 10)]++;
    int ok = 1;
    for (int i = 0; i < 10; i++) ok &= hist[i] > 850 && hist[i] < 1150;
    CHECK(ok, "next_below not uniform");
    CHECK(g.counter == 20000, "counter advances by two draws per 64-bit value (%llu)", (unsigned long long)g.counter);
    free(a);
    free(b);
}

static void test_arena(void) {
    zaya_arena m;
    zaya_arena_init_measure(&m);
    zaya_arena_alloc(&m, 10);
    zaya_arena_floats(&m, 100);
    size_t need = m.used;
    CHECK(need == 64 + 448, "measured %zu", need);
    zaya_arena a;
    CHECK(zaya_arena_init(&a, need) == ZAYA_OK, "init");
    char *p = zaya_arena_alloc(&a, 10);
    float *f = zaya_arena_floats(&a, 100);
    CHECK(((uintptr_t)p % 64) == 0 && ((uintptr_t)f % 64) == 0, "alignment");
    CHECK(a.used == need, "replay uses the measured size");
    zaya_arena_free(&a);
    void *q = zaya_calloc(SIZE_MAX / 2, 4);
    CHECK(q == NULL, "calloc overflow must fail");
}

static void test_json(void) {
    cJSON *root = NULL;
    CHECK(zaya_json_parse("{\"a\": 3, \"b\": 2.5, \"s\": \"x\", \"t\": true}", "inline", &root) == ZAYA_OK, "parse");
    int64_t a = 0;
    double b = 0;
    int t = 0, missing = 42;
    const char *s = NULL;
    CHECK(zaya_json_get_i64(root, "a", &a, 1) == ZAYA_OK && a == 3, "int");
    CHECK(zaya_json_get_f64(root, "b", &b, 1) == ZAYA_OK && b == 2.5, "double");
    CHECK(zaya_json_get_str(root, "s", &s, 1) == ZAYA_OK && !strcmp(s, "x"), "string");
    CHECK(zaya_json_get_bool(root, "t", &t, 1) == ZAYA_OK && t == 1, "bool");
    CHECK(zaya_json_get_int(root, "zz", &missing, 0) == ZAYA_OK && missing == 42, "optional missing keeps default");
    CHECK(zaya_json_get_int(root, "zz", &missing, 1) == ZAYA_EINVAL && strstr(zaya_error_message(), "'zz'"),
          "required missing names key: %s", zaya_error_message());
    CHECK(zaya_json_get_i64(root, "b", &a, 1) == ZAYA_EINVAL && strstr(zaya_error_message(), "'b'"),
          "non-integer names key");
    CHECK(zaya_json_get_str(root, "a", &s, 1) == ZAYA_EINVAL, "type mismatch");
    char dir[] = "/tmp/zaya_test_json_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/x.json", dir);
    CHECK(zaya_json_write_file(path, root, 1) == ZAYA_OK, "write");
    cJSON *back = NULL;
    CHECK(zaya_json_load_file(path, &back) == ZAYA_OK && cJSON_Compare(root, back, 1), "round trip");
    cJSON_Delete(back);
    cJSON_Delete(root);
    cJSON *bad = NULL;
    CHECK(zaya_json_parse("{\n \"a\": 1,\n \"b\": }", "cfg.json", &bad) == ZAYA_EFORMAT &&
              strstr(zaya_error_message(), "cfg.json") && strstr(zaya_error_message(), "line 3"),
          "malformed JSON names file and line: %s", zaya_error_message());
    CHECK(zaya_json_load_file("/nonexistent/zz.json", &bad) == ZAYA_EIO && strstr(zaya_error_message(), "zz.json"),
          "missing file named");
    unlink(path);
    rmdir(dir);
}

/* Loaders read regular files only: a directory, a FIFO and a device are refused naming the path
 * (the FIFO without blocking, the directory without sizing it as 2^63 bytes); JSON numbers beyond
 * 2^53 are printed digit for digit. */
static void test_fs_regular(void) {
    char d[] = "/tmp/zaya_test_fs_XXXXXX";
    CHECK(mkdtemp(d) != NULL, "mkdtemp");
    char p[256], f[256];
    char *data = NULL;
    size_t len = 0;
    CHECK(zaya_read_file(d, &data, &len) == ZAYA_EIO && strstr(zaya_error_message(), d) &&
              strstr(zaya_error_message(), "a directory, not a regular file"),
          "directory refused: %s", zaya_error_message());
    snprintf(f, sizeof f, "%s/fifo", d);
    CHECK(mkfifo(f, 0600) == 0, "mkfifo");
    CHECK(zaya_read_file(f, &data, &len) == ZAYA_EIO && strstr(zaya_error_message(), "FIFO") && strstr(zaya_error_message(), f),
          "FIFO refused: %s", zaya_error_message());
    cJSON *j = NULL;
    CHECK(zaya_json_load_file(f, &j) == ZAYA_EIO, "JSON from a FIFO refused");
    int fd = -1;
    CHECK(zaya_open_regular("/dev/null", &fd, NULL) == ZAYA_EIO && fd == -1 && strstr(zaya_error_message(), "character device"),
          "device refused: %s", zaya_error_message());
    snprintf(p, sizeof p, "%s/x.txt", d);
    CHECK(zaya_write_file_atomic(p, "hello", 5) == ZAYA_OK, "write");
    CHECK(zaya_read_file(p, &data, &len) == ZAYA_OK && len == 5 && !strcmp(data, "hello"), "regular file read");
    free(data);
    uint64_t size = 0;
    FILE *fp = NULL;
    CHECK(zaya_fopen_regular(p, &fp, &size) == ZAYA_OK && size == 5 && fp && fgetc(fp) == 'h', "fopen_regular");
    if (fp) fclose(fp);
    CHECK(zaya_read_file("/proc/self/stat", &data, &len) == ZAYA_OK && len > 10, "a file reporting size 0 reads whole");
    free(data);
    unlink(f);
    unlink(p);
    rmdir(d);
    char num[64];
    CHECK(!strcmp(zaya_json_number_text(1152921504606846976.0, num, sizeof num), "1152921504606846976"), "2^60: %s", num);
    CHECK(!strcmp(zaya_json_number_text(0.1, num, sizeof num), "0.1"), "0.1: %s", num);
    CHECK(!strcmp(zaya_json_number_text(2.5, num, sizeof num), "2.5"), "2.5: %s", num);
    CHECK(zaya_json_parse("{\"n\": 1152921504606846976}", "inline", &j) == ZAYA_OK, "parse");
    int64_t v = 0;
    CHECK(zaya_json_get_i64(j, "n", &v, 1) == ZAYA_EINVAL && strstr(zaya_error_message(), "must be an integer (got 1152921504606846976)"),
          "2^60 printed exactly: %s", zaya_error_message());
    cJSON_Delete(j);
}

static void test_parsers(void) {
    int64_t v = 0;
    CHECK(zaya_parse_bytes("8", &v) == ZAYA_OK && v == 8, "plain");
    CHECK(zaya_parse_bytes("64K", &v) == ZAYA_OK && v == 65536, "K");
    CHECK(zaya_parse_bytes("128M", &v) == ZAYA_OK && v == 134217728, "M");
    CHECK(zaya_parse_bytes("1GB", &v) == ZAYA_OK && v == 1073741824, "GB");
    CHECK(zaya_parse_bytes("12Q", &v) == ZAYA_EINVAL && strstr(zaya_error_message(), "suffix"), "bad suffix");
    CHECK(zaya_parse_bytes("M", &v) == ZAYA_EINVAL, "no digits");
    CHECK(zaya_parse_bytes("-1", &v) == ZAYA_EINVAL, "negative");
    CHECK(zaya_parse_bytes("99999999999T", &v) == ZAYA_EINVAL, "overflow");
    CHECK(zaya_parse_bytes("4Kx", &v) == ZAYA_EINVAL, "trailing");

    int threads = 0, flag = 0;
    const char *out = "def";
    int64_t bytes = 0;
    zaya_flag flags[] = {
        ZAYA_FLAG_THREADS(&threads),
        ZAYA_FLAG_OUTDIR(&out, "def"),
        {"check", 'c', ZAYA_FLAG_BOOL, &flag, NULL, "check"},
        {"minbytes", 'b', ZAYA_FLAG_BYTES, &bytes, "SIZE", "min"},
    };
    zaya_cmd_spec spec = {"test", "test command", "[options] FILE", NULL, flags, 4};
    char *argv1[] = {"--threads=3", "-o", "dir", "-c", "-b64K", "pos1", "--", "-x"};
    zaya_args args;
    CHECK(zaya_flags_parse(&spec, 8, argv1, &args) == -1, "parse ok");
    CHECK(threads == 3 && !strcmp(out, "dir") && flag == 1 && bytes == 65536, "values");
    CHECK(args.npos == 2 && !strcmp(args.pos[0], "pos1") && !strcmp(args.pos[1], "-x"), "positionals");
    char *argv2[] = {"--nope"};
    CHECK(zaya_flags_parse(&spec, 1, argv2, &args) == 2, "unknown flag -> 2");
    char *argv3[] = {"--threads", "abc"};
    CHECK(zaya_flags_parse(&spec, 2, argv3, &args) == 2, "bad int -> 2");
    char *argv4[] = {"-b", "3X"};
    CHECK(zaya_flags_parse(&spec, 2, argv4, &args) == 2, "bad size -> 2");
    char *argv5[] = {"--threads"};
    CHECK(zaya_flags_parse(&spec, 1, argv5, &args) == 2, "missing value -> 2");

    /* a repeatable option: short and long spellings, every form, append to one list; `--` protects what
     * follows; more than max occurrences is a usage error */
    const char *tasks[3];
    zaya_flag_list tl = {tasks, 3, 0};
    zaya_flag lflags[] = {
        {"task", 'k', ZAYA_FLAG_LIST, &tl, "FILE", "task"},
        ZAYA_FLAG_OUTDIR(&out, "def"),
    };
    zaya_cmd_spec lspec = {"test", "test command", "[options]", NULL, lflags, 2};
    char *argv6[] = {"--task", "a.jsonl", "-o", "d", "-k", "b.jsonl", "--task=c.jsonl", "--", "--task", "z"};
    CHECK(zaya_flags_parse(&lspec, 10, argv6, &args) == -1, "parse list ok");
    CHECK(tl.n == 3 && !strcmp(tasks[0], "a.jsonl") && !strcmp(tasks[1], "b.jsonl") && !strcmp(tasks[2], "c.jsonl") &&
              !strcmp(out, "d") && args.npos == 2 && !strcmp(args.pos[0], "--task"),
          "list: n=%d npos=%d", tl.n, args.npos);
    tl.n = 0;
    char *argv7[] = {"-kx.jsonl"};
    CHECK(zaya_flags_parse(&lspec, 1, argv7, &args) == -1 && tl.n == 1 && !strcmp(tasks[0], "x.jsonl"), "-kVALUE");
    tl.n = 0;
    char *argv8[] = {"-k"};
    CHECK(zaya_flags_parse(&lspec, 1, argv8, &args) == 2 && tl.n == 0, "missing list value -> 2");
    tl.n = 0;
    char *argv9[] = {"-k", "a", "-k", "b", "--task", "c", "-k", "d"};
    CHECK(zaya_flags_parse(&lspec, 8, argv9, &args) == 2 && tl.n == 3, "more than max -> 2");
}

static void test_status(void) {
    zaya_status s = zaya_error_set(ZAYA_EFORMAT, "offset %d beyond size %d", 12, 8);
    s = zaya_error_context(s, "tensor '%s'", "w");
    s = zaya_error_context(s, "loading %s", "a.safetensors");
    CHECK(s == ZAYA_EFORMAT, "code preserved");
    CHECK(!strcmp(zaya_error_message(), "loading a.safetensors: tensor 'w': offset 12 beyond size 8"), "context: %s",
          zaya_error_message());
}

int main(void) {
    test_bf16();
    test_philox();
    test_rng_addressing();
    test_arena();
    test_json();
    test_fs_regular();
    test_parsers();
    test_status();
    return th_finish("test_core");
}
