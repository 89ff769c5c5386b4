/* Writes the seed corpora of the fuzz harnesses: zaya_fuzz_seeds OUT_DIR [SOURCE_DIR]. Every seed is
 * produced by zaya's own writers (config presets, the built-in run file, the checkpoint, shard,
 * safetensors and tokenizer writers, the heartbeat channel); SOURCE_DIR adds the repository's HF
 * config, tokenizer.json and machine-profile fixtures. OUT_DIR/<harness>/ holds the seeds of each harness. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "train/ft.h"
#include "zaya/ckpt.h"
#include "zaya/config.h"
#include "zaya/curriculum.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/safetensors.h"
#include "zaya/shard.h"
#include "zaya/tokenizer.h"

static const char *g_out;
static int g_failed;

static void fail(const char *what) {
    fprintf(stderr, "zaya_fuzz_seeds: %s: %s\n", what, zaya_error_message());
    g_failed = 1;
}

static const char *seed_path(const char *harness, const char *name) {
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", g_out, harness);
    if (zaya_mkdir_p(p) != ZAYA_OK) fail(p);
    snprintf(p, sizeof p, "%s/%s/%s", g_out, harness, name);
    return p;
}

static void put(const char *harness, const char *name, const void *data, size_t len) {
    if (zaya_write_file_atomic(seed_path(harness, name), data, len) != ZAYA_OK) fail(name);
}

static void put_json(const char *harness, const char *name, const cJSON *j) {
    char *s = cJSON_PrintUnformatted(j);
    if (!s) return fail(name);
    put(harness, name, s, strlen(s));
    free(s);
}

static void copy(const char *src, const char *harness, const char *name) {
    char *data = NULL;
    size_t len = 0;
    if (zaya_read_file(src, &data, &len) != ZAYA_OK) return fail(src);
    put(harness, name, data, len);
    free(data);
}

static void configs(void) {
    for (const char *const *p = zaya_config_preset_names(); *p; p++) {
        zaya_config c;
        if (zaya_config_preset(*p, &c) != ZAYA_OK) return fail(*p);
        cJSON *j = zaya_config_to_json(&c);
        char name[80];
        snprintf(name, sizeof name, "%s.json", *p);
        put_json("model_config", name, j);
        put_json("arch_config", name, j);
        cJSON_Delete(j);
    }
    static const char legacy[] = "{\"num_hidden_layers\": 80, \"ffn_hidden_size\": 4096, \"zaya_mlp_expansion\": 256,"
                                 "\"num_query_groups\": 2, \"rope_theta\": 1000000, \"norm_epsilon\": 1e-5}";
    put("model_config", "legacy.json", legacy, sizeof legacy - 1);
    /* the architecture variants (docs/model.md "Variants") */
    static const char linear[] = "{\"zaya_router\": \"linear\", \"zaya_residual_scaling\": false}";
    static const char dense[] = "{\"model_type\": \"zaya\", \"zaya_mlp\": \"dense\", \"zaya_dense_intermediate_size\": 4096}";
    put("model_config", "variant-linear.json", linear, sizeof linear - 1);
    put("model_config", "variant-dense.json", dense, sizeof dense - 1);
    put("arch_config", "variant-dense.json", dense, sizeof dense - 1);
}

static void run_files(void) {
    put("run_file", "default.json", zaya_run_default_json, strlen(zaya_run_default_json));
    zaya_run run;
    if (zaya_run_default("data", &run) != ZAYA_OK) return fail("default run");
    cJSON *j = NULL;
    if (zaya_run_to_json(&run, &j) == ZAYA_OK) put_json("run_file", "resolved.json", j);
    cJSON_Delete(j);
    zaya_run_free(&run);
    static const char small[] =
        "{\"seq_multiple\":8,\"batch_multiple\":2,\"sources\":{\"p\":{\"train\":\"d/p*.ztok\",\"val\":[\"d/v.ztok\"]}},"
        "\"phases\":[{\"name\":\"a\",\"tokens\":4096,\"sources\":{\"p\":1},\"seq_len\":64,\"batch\":{\"from\":2,\"to\":8,"
        "\"ramp_tokens\":1024},\"lr\":{\"peak\":0.001,\"warmup_tokens\":256,\"decay\":\"wsd\",\"decay_fraction\":0.3}},"
        "{\"tokens\":2048,\"seq_len\":128,\"lr\":{\"final\":0.0001}}]}";
    put("run_file", "ramp.json", small, sizeof small - 1);
}

static void safetensors(void) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/a.safetensors", fuzz_dir());
    zaya_st_writer *w = NULL;
    float f[6] = {1, -2, 3.5f, 0, 1e-3f, 7};
    uint32_t u[4] = {1, 2, 3, 4};
    int64_t s23[2] = {2, 3}, s4[1] = {4};
    zaya_status s = zaya_st_writer_init(&w, tmp, 0);
    if (s == ZAYA_OK) s = zaya_st_writer_meta(w, "format", "pt");
    if (s == ZAYA_OK) s = zaya_st_writer_add(w, "w.f32", ZAYA_ST_F32, 2, s23, f, ZAYA_ST_F32);
    if (s == ZAYA_OK) s = zaya_st_writer_add(w, "w.bf16", ZAYA_ST_BF16, 2, s23, f, ZAYA_ST_F32);
    if (s == ZAYA_OK) s = zaya_st_writer_add(w, "counts", ZAYA_ST_U32, 1, s4, u, ZAYA_ST_U32);
    if (s == ZAYA_OK) s = zaya_st_writer_finish(w, NULL, NULL, NULL);
    else zaya_st_writer_abort(w);
    if (s != ZAYA_OK) return fail("safetensors");
    copy(tmp, "safetensors", "small.safetensors");
}

static void checkpoint(void) {
    char root[4096], p[4200];
    snprintf(root, sizeof root, "%s/ckpt", fuzz_dir());
    if (fuzz_make_checkpoint(root) != ZAYA_OK) return fail("checkpoint");
    snprintf(p, sizeof p, "%s/step-00000001/manifest.json", root);
    copy(p, "ckpt_manifest", "manifest.json");
    snprintf(p, sizeof p, "%s/step-00000001/model-r00000.safetensors", root);
    copy(p, "safetensors", "model-r00000.safetensors");
}

static void model_checkpoint(void) {
    char root[4096], p[4200];
    snprintf(root, sizeof root, "%s/mck", fuzz_dir());
    if (fuzz_make_model_checkpoint(root) != ZAYA_OK) return fail("model checkpoint");
    snprintf(p, sizeof p, "%s/step-00000001/manifest.json", root);
    copy(p, "ckpt_verify", "manifest.json");
}

/* The harness's bundle: [kind][u32 length][bytes] per file. */
static void bundle_add(char **buf, size_t *len, int kind, const char *path) {
    char *data = NULL;
    size_t n = 0;
    if (zaya_read_file(path, &data, &n) != ZAYA_OK) return fail(path);
    char *b = realloc(*buf, *len + 5 + n);
    if (!b) return fail("bundle");
    b[*len] = (char)kind;
    for (int i = 0; i < 4; i++) b[*len + 1 + i] = (char)(n >> (8 * i));
    memcpy(b + *len + 5, data, n);
    *buf = b;
    *len += 5 + n;
    free(data);
}

static void hf_dirs(void) {
    zaya_config cfg;
    fuzz_tiny_config(&cfg);
    for (int k = 0; k < 2; k++) { /* one shard, and several (with an index) */
        char dir[4096], p[4200];
        snprintf(dir, sizeof dir, "%s/hfseed%d", fuzz_dir(), k);
        zaya_hf_export_opts o = {k ? ZAYA_ST_F32 : ZAYA_ST_BF16, k ? 6000 : 0, NULL};
        int nshards = 0;
        if (zaya_ckpt_export_hf_random(&cfg, 5, dir, &o, &nshards) != ZAYA_OK) return fail("hf export");
        char *buf = NULL;
        size_t len = 0;
        snprintf(p, sizeof p, "%s/config.json", dir);
        bundle_add(&buf, &len, 1, p);
        if (k) {
            snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
            bundle_add(&buf, &len, 0, p);
        }
        if (nshards > 8) return fail("hf export: more than 8 shards");
        for (int i = 0; i < nshards; i++) {
            snprintf(p, sizeof p, "%s/model-%05d-of-%05d.safetensors", dir, i + 1, nshards);
            bundle_add(&buf, &len, 2 + i, p);
        }
        put("hf_dir", k ? "sharded.bin" : "single.bin", buf, len);
        free(buf);
    }
}

static void prepare_jsonl(void) {
    static const char jl[] = "{\"text\": \"The fox jumps.\", \"lang\": \"en\"}\n\n{\"text\": \"def f(x): return x\"}\n"
                             "{\"text\": \"caf\\u00e9 \\ud83d\\ude00\", \"meta\": {\"a\": 1}}\n{\"body\": \"x\"}\n[1]\n{\"text\": 5}\n";
    char b[sizeof jl + 1];
    memcpy(b + 1, jl, sizeof jl - 1);
    static const struct { int mode; const char *name; } m[] = {{0, "plain"}, {1, "gzip"}, {2, "zstd"}, {8 | 16, "filter-val"}};
    for (int i = 0; i < 4; i++) {
        b[0] = (char)m[i].mode;
        put("prepare_jsonl", m[i].name, b, sizeof jl);
    }
}

static void shard(const char *name, uint64_t vocab, uint32_t eos) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/%s", fuzz_dir(), name);
    zaya_shard_writer *w = NULL;
    int32_t d1[5] = {1, 2, 3, 4, 5}, d2[3] = {(int32_t)vocab - 1, 0, 7}, d3[1] = {9};
    zaya_status s = zaya_shard_writer_open(tmp, vocab, 0, eos, 0x1234abcdull, &w);
    if (s == ZAYA_OK) s = zaya_shard_writer_add(w, d1, 5);
    if (s == ZAYA_OK) s = zaya_shard_writer_add(w, d2, 3);
    if (s == ZAYA_OK) s = zaya_shard_writer_add(w, d3, 1);
    if (s == ZAYA_OK) s = zaya_shard_writer_finish(w);
    else zaya_shard_writer_abort(w);
    if (s != ZAYA_OK) return fail(name);
    copy(tmp, "shard", name);
}

/* Megatron .idx images and llm.c token files, encoded here from the published layouts (zaya writes
 * neither format): a uint16 index with two documents (one of two sequences), the same with
 * per-sequence modes, an empty index; llm.c files with uint16 and uint32 ids. */
static void foreign_headers(void) {
    uint8_t b[512];
    for (int modes = 0; modes < 3; modes++) {
        size_t n = 0;
        const uint64_t one = 1, nseq = modes == 2 ? 0 : 3, ndoc = modes == 2 ? 1 : 3;
        memcpy(b, "MMIDIDX\0\0", 9);
        n = 9;
        memcpy(b + n, &one, 8), n += 8;
        b[n++] = 8; /* uint16 */
        memcpy(b + n, &nseq, 8), n += 8;
        memcpy(b + n, &ndoc, 8), n += 8;
        const int32_t len[3] = {4, 2, 5};
        const int64_t ptr[3] = {0, 8, 12}, doc[3] = {0, 2, 3};
        if (nseq) {
            memcpy(b + n, len, sizeof len), n += sizeof len;
            memcpy(b + n, ptr, sizeof ptr), n += sizeof ptr;
            memcpy(b + n, doc, sizeof doc), n += sizeof doc;
            if (modes == 1) memset(b + n, 0, 3), n += 3;
        } else {
            memset(b + n, 0, 8), n += 8;
        }
        put("foreign_header", modes == 0 ? "megatron-u16.idx" : modes == 1 ? "megatron-modes.idx" : "megatron-empty.idx",
            b, n);
    }
    for (int wide = 0; wide < 2; wide++) {
        int32_t h[256 + 8] = {0};
        h[0] = wide ? 20240801 : 20240520;
        h[1] = wide ? 7 : 1;
        h[2] = 6;
        const uint16_t t16[6] = {0, 5, 9, 0, 3, 99};
        const uint32_t t32[6] = {0, 5, 9, 0, 3, 99};
        if (wide) memcpy(h + 256, t32, sizeof t32);
        else memcpy(h + 256, t16, sizeof t16);
        put("foreign_header", wide ? "llmc-u32.bin" : "llmc-u16.bin", h, 1024 + (wide ? sizeof t32 : sizeof t16));
    }
}

/* tokenizer_pipeline: byte 0 picks the tokenizer, byte 1 the flags, then text (fuzz_tokenizer_pipeline.c). */
static void pipeline_texts(void) {
    static const char *const texts[] = {
        "Hello  world's 12345 \xe6\x9d\xb1\xe4\xba\xac\xf0\x9f\x98\x80",
        "HelloWORLDfoo \xe4\xb8\xad" "A x'\xc5\xbfup \xc7\x85" "A\xca\xb0 12345/\n\n  a",
        "<s>hi <mask> x<tool>  y</s><|begin_of_text|>a<|end_of_text|>",
        "  \t\r\n\xc2\xa0\xe3\x80\x80 tabs\tand\r\nnewlines\n\n\n",
        "\xff\xfe invalid \xc0\xaf utf-8 \xed\xa0\x80 \xf4\x90\x80\x80",
    };
    for (int k = 0; k < 8; k++)
        for (int f = 0; f < 4; f += 3)
            for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
                char buf[256], name[64];
                size_t n = strlen(texts[i]);
                buf[0] = (char)k;
                buf[1] = (char)f;
                memcpy(buf + 2, texts[i], n);
                snprintf(name, sizeof name, "tok%d-flags%d-text%zu", k, f, i);
                put("tokenizer_pipeline", name, buf, n + 2);
            }
}

static void tokenizers(void) {
    zaya_tokenizer *t = NULL;
    if (fuzz_make_tokenizer(&t) != ZAYA_OK) return fail("tokenizer");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/tokenizer.json", fuzz_dir());
    zaya_status s = zaya_tokenizer_save(t, tmp);
    zaya_tokenizer_free(t);
    if (s != ZAYA_OK) return fail("tokenizer save");
    copy(tmp, "tokenizer_json", "tokenizer.json");
    /* The older merge encoding ("a b" strings) of the same file. */
    cJSON *j = NULL;
    if (zaya_json_load_file(tmp, &j) != ZAYA_OK) return fail("tokenizer reload");
    cJSON *merges = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model"), "merges");
    cJSON *flat = cJSON_CreateArray();
    for (cJSON *m = merges ? merges->child : NULL; m; m = m->next) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s %s", m->child->valuestring, m->child->next->valuestring);
        cJSON_AddItemToArray(flat, cJSON_CreateString(buf));
    }
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "model"), "merges", flat);
    put_json("tokenizer_json", "tokenizer-string-merges.json", j);
    cJSON_Delete(j);
}

static void eval_jsonl(void) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "context", "Question: what is two plus two? Answer:");
    cJSON *ch = cJSON_AddArrayToObject(a, "choices");
    cJSON_AddItemToArray(ch, cJSON_CreateString(" four"));
    cJSON_AddItemToArray(ch, cJSON_CreateString(" five"));
    cJSON_AddItemToArray(ch, cJSON_CreateString(" the fox"));
    cJSON_AddNumberToObject(a, "label", 0);
    char *l1 = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    static const char l2[] = "{\"context\": \"def f(x):\\n    return\", \"choices\": [\" x * x\", \" dog\"], \"label\": 1}";
    char buf[2048];
    int n = snprintf(buf, sizeof buf, "%s\n\n%s\n", l1 ? l1 : "{}", l2);
    free(l1);
    put("eval_jsonl", "two-items.jsonl", buf, (size_t)n);
}

static void heartbeat(void) {
    char dir[4096], p[4200];
    snprintf(dir, sizeof dir, "%s/hb", fuzz_dir());
    if (zaya_mkdir_p(dir) != ZAYA_OK) return fail("heartbeat dir");
    setenv("ZAYA_HEARTBEAT_DIR", dir, 1);
    setenv("ZAYA_ATTEMPT", "2", 1);
    zaya_hb_open(0, 2);
    zaya_hb_section(ZAYA_FT_FORWARD, 3);
    zaya_hb_step(3, 0.5, 0.4);
    zaya_hb_event("nan", 4, "loss is \"nan\" at step 4");
    zaya_hb_event("checkpoint", 4, "step-00000004");
    zaya_hb_close();
    unsetenv("ZAYA_HEARTBEAT_DIR");
    snprintf(p, sizeof p, "%s/rank-00000.json", dir);
    copy(p, "heartbeat", "record.json");
    snprintf(p, sizeof p, "%s/events-r00000.jsonl", dir);
    copy(p, "heartbeat", "events.jsonl");
}

static void fixtures(const char *src) {
    static const char *const hf[] = {"llama-3-8b", "mixtral-8x7b", "olmoe-1b-7b", "qwen1.5-moe-a2.7b", "qwen2.5-0.5b",
                                     "qwen3-0.6b", "qwen3-30b-a3b", "zaya1-8b-hf", "zaya1-8b", NULL};
    char p[4096], name[200];
    for (const char *const *h = hf; *h; h++) {
        snprintf(p, sizeof p, "%s/tests/fixtures/size/%s.json", src, *h);
        snprintf(name, sizeof name, "fixture-%s.json", *h);
        copy(p, "arch_config", name);
        if (!strncmp(*h, "zaya", 4)) copy(p, "model_config", name);
    }
    static const char *const toks[] = {"sp-legacy", "sp-metaspace", "llama3", "o200k", NULL};
    for (const char *const *k = toks; *k; k++) { /* tokenizer.json families written by HF tokenizers */
        snprintf(p, sizeof p, "%s/tests/fixtures/tokenizer/%s.json", src, *k);
        snprintf(name, sizeof name, "fixture-%s.json", *k);
        copy(p, "tokenizer_json", name);
    }
    snprintf(p, sizeof p, "%s/tests/fixtures/size/profile-host.json", src);
    copy(p, "hw_profile", "profile-host.json"); /* written by `zaya bench all` */
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: zaya_fuzz_seeds OUT_DIR [SOURCE_DIR]\n");
        return 2;
    }
    fuzz_quiet();
    g_out = argv[1];
    configs();
    run_files();
    safetensors();
    checkpoint();
    model_checkpoint();
    hf_dirs();
    prepare_jsonl();
    shard("u16-eos.ztok", 300, 2);
    shard("u32-no-eos.ztok", 70000, ZAYA_SHARD_NO_EOS);
    foreign_headers();
    tokenizers();
    pipeline_texts();
    eval_jsonl();
    heartbeat();
    if (argc == 3) fixtures(argv[2]);
    if (!g_failed) printf("seed corpora in %s\n", g_out);
    return g_failed;
}
