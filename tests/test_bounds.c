/* Numeric bounds of the loaders of untrusted input: the reproducers found by fuzzing (docs/fuzzing.md),
 * each kept with the error it must now produce. Model config: signed overflow of tensor sizes, a
 * division by a wrapped expert count, 2^40 layers read as 0, a float-to-int conversion of 1e300. Run
 * file: batch * seq_len wrapping to 0. tokenizer.json: ids converted before their range check and
 * added tokens loaded in quadratic time. Checkpoint manifest: a shape whose element count overflows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/internal.h"
#include "testutil.h"
#include "tokenizer/tokenizer_internal.h"
#include "zaya/ckpt.h"
#include "zaya/curriculum.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/tokenizer.h"

static char g_dir[] = "/tmp/zaya_test_bounds_XXXXXX";

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- model config ---- */

static void expect_config(const char *json, const char *needle) {
    cJSON *o = NULL;
    if (zaya_json_parse(json, "inline", &o) != ZAYA_OK) {
        CHECK(0, "test JSON does not parse: %s", json);
        return;
    }
    zaya_config c;
    zaya_status s = zaya_config_from_json(o, &c);
    CHECK(s != ZAYA_OK && strstr(zaya_error_message(), needle), "config %s: expected an error with '%s', got '%s'", json,
          needle, s == ZAYA_OK ? "ok" : zaya_error_message());
    cJSON_Delete(o);
}

static void test_config_bounds(void) {
    /* num_experts 2^32: the expert matrix count became 0 and `zaya model info` died of SIGFPE. */
    expect_config("{\"num_experts\": 4294967296}", "key 'num_experts' must be at most 4096 (ZAYA_CONFIG_MAX_EXPERTS), got 4294967296");
    /* 2e9 layers hung; 2^40 layers truncated to 0 blocks in the layer loop. */
    expect_config("{\"num_hidden_layers\": 2000000000}", "key 'num_hidden_layers' must be at most 4096 (ZAYA_CONFIG_MAX_LAYERS)");
    expect_config("{\"num_hidden_layers\": 1099511627776}", "key 'num_hidden_layers' must be at most 4096");
    /* An expert width whose D x 2F x E product wraps 2^64 ("117,457 parameters"). */
    expect_config("{\"moe_intermediate_size\": 2251799813685248}",
                  "key 'moe_intermediate_size' must be at most 1048576 (ZAYA_CONFIG_MAX_FFN)");
    /* Signed overflow of V x D and of the whole layout ("-7.7e18 parameters"). */
    expect_config("{\"vocab_size\": 4503599627370496, \"hidden_size\": 4096}", "key 'vocab_size' must be at most 16777216");
    expect_config("{\"hidden_size\": 2097152}", "key 'hidden_size' must be at most 1048576");
    expect_config("{\"hidden_size\": 1048576, \"num_experts\": 4096, \"moe_intermediate_size\": 1048576, \"num_hidden_layers\": 4096}",
                  "more than 17592186044416 (ZAYA_CONFIG_MAX_PARAMS)");
    expect_config("{\"num_attention_heads\": 8192, \"num_key_value_heads\": 2}", "key 'num_attention_heads' must be at most 4096");
    expect_config("{\"router_hidden_size\": 1099511627776}", "key 'router_hidden_size' must be at most 1048576");
    expect_config("{\"cca_time0\": 1000000}", "key 'cca_time0' must be at most 64");
    expect_config("{\"max_position_embeddings\": 9007199254740992}", "key 'max_position_embeddings' must be at most 4194304");
    expect_config("{\"head_dim\": 512}", "key 'head_dim' must be at most 256");
    /* Doubles that the kernels convert to float. */
    expect_config("{\"rms_norm_eps\": 1e300}", "key 'rms_norm_eps' must be in (0, 1], got 1e+300");
    expect_config("{\"initializer_range\": -1}", "key 'initializer_range' must be in [0, 1000]");
    /* The legacy expansion factor was cast from a double without a range check (1e300: undefined). */
    expect_config("{\"ffn_hidden_size\": 4096, \"zaya_mlp_expansion\": 1e300}", "key 'zaya_mlp_expansion' must be an integer (got 1e+300)");
    expect_config("{\"ffn_hidden_size\": 4096, \"zaya_mlp_expansion\": 4398046511104}", "key 'router_hidden_size' must be at most");

    /* At the bounds the counts are exact: parameters grow linearly in the block count. */
    zaya_config c;
    zaya_config_preset("zaya1-tiny", &c);
    c.num_hidden_layers = ZAYA_CONFIG_MAX_LAYERS;
    CHECK(zaya_config_validate(&c) == ZAYA_OK, "tiny at 4096 blocks: %s", zaya_error_message());
    int64_t t4096 = zaya_model_count_params(&c).total;
    c.num_hidden_layers = 2048;
    int64_t t2048 = zaya_model_count_params(&c).total;
    c.num_hidden_layers = 1024;
    int64_t t1024 = zaya_model_count_params(&c).total;
    CHECK(t1024 > 0 && t4096 - t2048 == 2 * (t2048 - t1024), "linear in blocks: %lld %lld %lld", (long long)t1024,
          (long long)t2048, (long long)t4096);
    /* The layout refuses an unvalidated config instead of overflowing. */
    zaya_config_preset("zaya1-tiny", &c);
    c.num_experts = 1ll << 32;
    zaya_tensor_info *t = NULL;
    int nt = 0;
    int64_t nf = 0;
    CHECK(zaya_layout_build(&c, &t, &nt, &nf) == ZAYA_EINVAL && strstr(zaya_error_message(), "num_experts"),
          "layout of an unchecked config: %s", zaya_error_message());
    zaya_param_counts pc = zaya_model_count_params(&c);
    CHECK(pc.total == 0, "count of an invalid config %lld", (long long)pc.total);
}

/* ---- run file ---- */

static void expect_run(const char *json, const char *needle) {
    cJSON *j = NULL;
    if (zaya_json_parse(json, "inline", &j) != ZAYA_OK) {
        CHECK(0, "test JSON does not parse: %s", json);
        return;
    }
    zaya_run run;
    zaya_status s = zaya_run_parse(j, "r.json", &run);
    cJSON_Delete(j);
    CHECK(s != ZAYA_OK && strstr(zaya_error_message(), needle), "run %s: expected an error with '%s', got '%s'", json, needle,
          s == ZAYA_OK ? "ok" : zaya_error_message());
    if (s == ZAYA_OK) zaya_run_free(&run);
}

#define PHASES(tokens, seq, batch) \
    "\"phases\":[{\"tokens\":" tokens ",\"sources\":{\"p\":1},\"seq_len\":" seq ",\"batch\":" batch ",\"lr\":{\"peak\":1}}]}"
#define PHASE(tokens, seq, batch) "{" PHASES(tokens, seq, batch)

static void test_run_bounds(void) {
    /* batch * seq_len = 2^32 * 2^32 wrapped to 0: a division by zero in the step plan (SIGFPE in
     * `zaya data validate --run`). */
    expect_run(PHASE("4096", "4294967296", "4294967296"), "r.json: phases[0]: key 'seq_len' must be at most 4194304 (ZAYA_RUN_MAX_SEQ_LEN)");
    expect_run(PHASE("4096", "8", "4294967296"), "phases[0]: key 'batch' must be at most 16777216 sequences (ZAYA_RUN_MAX_BATCH)");
    expect_run(PHASE("9007199254740992", "8", "4"), "phases[0]: key 'tokens' must be at most 1125899906842624 (ZAYA_RUN_MAX_TOKENS)");
    expect_run("{\"seq_multiple\": 9007199254740992," PHASES("4096", "8", "4"), "key 'seq_multiple' must be in [1, 4194304]");
    expect_run("{\"batch_multiple\": 4294967296," PHASES("4096", "8", "4"), "key 'batch_multiple' must be in [1, 16777216]");
    /* Found by the run-file harness: a single empty pattern was accepted (a list of them was not), so
     * the resolved run.json did not load again. */
    expect_run("{\"sources\":{\"p\":{\"train\":\"\"}}," PHASES("4096", "64", "4"),
               "r.json: sources.p: key 'train' must be a non-empty path pattern");
    /* At the bounds the plan is exact. */
    cJSON *j = NULL;
    zaya_json_parse(PHASE("1125899906842624", "4194304", "16777216"), "max", &j);
    zaya_run run;
    CHECK(zaya_run_parse(j, "max", &run) == ZAYA_OK, "run at the bounds: %s", zaya_error_message());
    cJSON_Delete(j);
    CHECK(run.total_steps == 16 && run.total_tokens == (1ll << 50), "steps %lld tokens %lld", (long long)run.total_steps,
          (long long)run.total_tokens);
    zaya_run_free(&run);
}

/* ---- tokenizer.json ---- */

static cJSON *tiny_tokenizer_json(void) {
    const char *text = "the cat sat on the mat; the dog sat on the log";
    size_t len = strlen(text);
    zaya_bpe_train_opts o = {.vocab_size = 300, .eos = "<|eos|>", .min_frequency = 2};
    zaya_tokenizer *t = NULL;
    char path[200];
    snprintf(path, sizeof path, "%s/base.json", g_dir);
    cJSON *root = NULL;
    if (zaya_tokenizer_train_buffers(&text, &len, 1, &o, &t) == ZAYA_OK && zaya_tokenizer_save(t, path) == ZAYA_OK)
        zaya_json_load_file(path, &root);
    zaya_tokenizer_free(t);
    return root;
}

static zaya_status load_json_as_tokenizer(const cJSON *root, const char *name, zaya_tokenizer **t) {
    char path[200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    ZAYA_TRY(zaya_json_write_file(path, root, 0));
    return zaya_tokenizer_load(path, t);
}

static void test_tokenizer_bounds(void) {
    cJSON *root = tiny_tokenizer_json();
    CHECK(root != NULL, "tokenizer fixture: %s", zaya_error_message());
    if (!root) return;
    cJSON *vocab = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "model"), "vocab");
    cJSON *added = cJSON_GetObjectItem(root, "added_tokens");
    zaya_tokenizer *t = NULL;

    /* An id of 1e300 was converted to int64 before the range check (undefined behaviour). */
    cJSON *first = vocab->child;
    double keep = first->valuedouble;
    cJSON_SetNumberValue(first, 1e300);
    CHECK(load_json_as_tokenizer(root, "big_id.json", &t) == ZAYA_ERANGE && strstr(zaya_error_message(), "id 1.0000000000000001e+300 of") &&
              strstr(zaya_error_message(), "is outside [0,"),
          "id 1e300: %s", zaya_error_message());
    cJSON_SetNumberValue(first, -9.5e18);
    CHECK(load_json_as_tokenizer(root, "neg_id.json", &t) == ZAYA_ERANGE && strstr(zaya_error_message(), "is outside [0,"),
          "id -9.5e18: %s", zaya_error_message());
    cJSON_SetNumberValue(first, 2.5);
    CHECK(load_json_as_tokenizer(root, "frac_id.json", &t) == ZAYA_EFORMAT && strstr(zaya_error_message(), "must be an integer id, got 2.5"),
          "id 2.5: %s", zaya_error_message());
    cJSON_SetNumberValue(first, keep);

    /* 3000 added tokens (half of them also in model.vocab, as HF writes trained ones): loading took
     * 107 s with a linear search per lookup over cJSON_GetArrayItem (quadratic per lookup). */
    int nadd = 3000, base = 0; /* the next free id */
    for (const cJSON *v = vocab->child; v; v = v->next)
        if ((int)v->valuedouble >= base) base = (int)v->valuedouble + 1;
    for (const cJSON *a = added->child; a; a = a->next) {
        const cJSON *id = cJSON_GetObjectItem(a, "id");
        if (cJSON_IsNumber(id) && (int)id->valuedouble >= base) base = (int)id->valuedouble + 1;
    }
    for (int i = 0; i < nadd; i++) {
        char content[32];
        snprintf(content, sizeof content, "<|extra_%d|>", i);
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", base + i);
        cJSON_AddStringToObject(a, "content", content);
        cJSON_AddBoolToObject(a, "special", 1);
        cJSON_AddItemToArray(added, a);
        if (i % 2 == 0) cJSON_AddNumberToObject(vocab, content, base + i);
    }
    double t0 = now_s();
    zaya_status s = load_json_as_tokenizer(root, "many_added.json", &t);
    double dt = now_s() - t0;
    CHECK(s == ZAYA_OK, "3000 added tokens: %s", zaya_error_message());
    CHECK(dt < 1.0, "3000 added tokens loaded in %.3f s (limit 1 s)", dt);
    printf("3000 added tokens: loaded in %.3f s\n", dt);
    if (s == ZAYA_OK) {
        CHECK(zaya_tokenizer_vocab_size(t) == base + nadd, "vocab %lld, want %d", (long long)zaya_tokenizer_vocab_size(t),
              base + nadd);
        size_t len = 0;
        const uint8_t *b = zaya_tokenizer_token_bytes(t, base + 2999, &len);
        CHECK(b && len == strlen("<|extra_2999|>") && !memcmp(b, "<|extra_2999|>", len), "token bytes of the last added token");
        b = zaya_tokenizer_token_bytes(t, base + 1234, &len);
        CHECK(b && len == strlen("<|extra_1234|>") && !memcmp(b, "<|extra_1234|>", len), "token bytes of an added token");
        CHECK(t->added_idx[base + 1234] >= 0 && t->added[t->added_idx[base + 1234]].id == base + 1234, "added index");
        zaya_tokenizer_free(t);
        t = NULL;
    }
    /* Its vocab id must still agree with the added entry. */
    cJSON_ReplaceItemInObject(vocab, "<|extra_10|>", cJSON_CreateNumber(base + 11));
    CHECK(load_json_as_tokenizer(root, "mismatch.json", &t) == ZAYA_EFORMAT &&
              strstr(zaya_error_message(), "\"<|extra_10|>\" has id") && strstr(zaya_error_message(), "but model.vocab says"),
          "mismatched added id: %s", zaya_error_message());
    cJSON_Delete(root);
}

/* ---- checkpoint manifest ---- */

static void test_manifest_bounds(void) {
    char root[200], step[260], mpath[300];
    snprintf(root, sizeof root, "%s/ckpt", g_dir);
    zaya_ckpt_writer *w = NULL;
    zaya_ckpt_options opt = zaya_ckpt_default_options();
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    zaya_status s = zaya_ckpt_writer_init(&w, root, 1, 10, &opt, NULL);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_model(w, "w", 2, shape, data);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_commit(w, NULL);
    else zaya_ckpt_writer_free(w);
    CHECK(s == ZAYA_OK, "checkpoint fixture: %s", zaya_error_message());
    snprintf(step, sizeof step, "%s/step-00000001", root);
    snprintf(mpath, sizeof mpath, "%s/manifest.json", step);
    cJSON *m = NULL;
    CHECK(zaya_json_load_file(mpath, &m) == ZAYA_OK, "manifest: %s", zaya_error_message());
    if (!m) return;
    /* Four dims of 1e15 each: the element count overflowed int64 before the "shape differs" check. */
    cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "tensors"), 0);
    cJSON *big = cJSON_CreateArray();
    for (int i = 0; i < 4; i++) cJSON_AddItemToArray(big, cJSON_CreateNumber(1e15));
    cJSON_ReplaceItemInObject(t0, "shape", big);
    CHECK(zaya_ckpt_manifest_seal(m) == ZAYA_OK, "reseal: %s", zaya_error_message()); /* a deliberate edit */
    zaya_json_write_file(mpath, m, 1);
    cJSON_Delete(m);
    zaya_ckpt *c = NULL;
    CHECK(zaya_ckpt_open(&c, step, 0) == ZAYA_EFORMAT && strstr(zaya_error_message(), "tensor 'w': the shape's element count overflows int64"),
          "shape overflow: %s", zaya_error_message());
    zaya_ckpt_close(c);
}

int main(void) {
    zaya_log_set_level(ZAYA_LOG_ERROR);
    CHECK(mkdtemp(g_dir) != NULL, "mkdtemp");
    test_config_bounds();
    test_run_bounds();
    test_tokenizer_bounds();
    test_manifest_bounds();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return th_finish("test_bounds");
}
