#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zaya/ckpt.h"
#include "zaya/config.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/model.h"

int fuzz_accepted;
static char g_dir[256];

static void remove_dir(void) {
    if (!g_dir[0]) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", g_dir);
}

const char *fuzz_dir(void) {
    if (g_dir[0]) return g_dir;
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/zaya_fuzz_XXXXXX", base);
    if (!mkdtemp(g_dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(remove_dir);
    return g_dir;
}

const char *fuzz_write(const char *name, const void *data, size_t size) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: write");
        abort();
    }
    return path;
}

char *fuzz_cstr(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

struct cJSON *fuzz_parse_json(const uint8_t *data, size_t size) {
    if (memchr(data, 0, size)) return NULL;
    char *text = fuzz_cstr(data, size);
    cJSON *j = NULL;
    if (zaya_json_parse(text, "fuzz", &j) != ZAYA_OK) j = NULL;
    free(text);
    return j;
}

void fuzz_quiet(void) {
    zaya_log_set_level(ZAYA_LOG_ERROR);
    zaya_error_clear();
}

zaya_status fuzz_make_checkpoint(const char *root) {
    float a[12], b[5];
    uint32_t st[10];
    for (int i = 0; i < 12; i++) a[i] = 0.25f * (float)i - 1.0f;
    for (int i = 0; i < 5; i++) b[i] = (float)i;
    for (int i = 0; i < 10; i++) st[i] = 7u * (uint32_t)i;
    zaya_ckpt_options o = zaya_ckpt_default_options();
    zaya_ckpt_writer *w = NULL;
    ZAYA_TRY(zaya_ckpt_writer_init(&w, root, 1, 1000, &o, NULL));
    int64_t sa[3] = {2, 3, 2}, sb[1] = {5}, ss[2] = {2, 5};
    cJSON *sec = cJSON_CreateObject();
    cJSON_AddNumberToObject(sec, "lr", 0.001);
    zaya_status s = zaya_ckpt_writer_add_section(w, "schedule", sec);
    cJSON_Delete(sec);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_model(w, "model.a", 3, sa, a);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_model(w, "model.b", 1, sb, b);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_shard(w, "state.counts", ZAYA_ST_U32, 2, ss, 0, 6, st);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_shard(w, "state.counts", ZAYA_ST_U32, 2, ss, 6, 4, st + 6);
    if (s != ZAYA_OK) {
        zaya_ckpt_writer_free(w);
        return s;
    }
    return zaya_ckpt_writer_commit(w, NULL);
}

void fuzz_tiny_config(zaya_config *c) {
    zaya_config_preset("zaya1-tiny", c);
    c->vocab_size = 40;
    c->hidden_size = 16;
    c->num_hidden_layers = 2;
    c->num_attention_heads = 2;
    c->num_key_value_heads = 1;
    c->head_dim = 8;
    c->num_experts = 2;
    c->moe_intermediate_size = 8;
    c->router_hidden_size = 4;
}

zaya_status fuzz_make_model_checkpoint(const char *root) {
    zaya_config cfg;
    fuzz_tiny_config(&cfg);
    ZAYA_TRY(zaya_config_validate(&cfg));
    zaya_tensor_info *t = NULL;
    int n = 0;
    int64_t nf = 0;
    ZAYA_TRY(zaya_layout_build_public(&cfg, &t, &n, &nf));
    float *v = malloc((size_t)nf * sizeof *v);
    if (!v) {
        free(t);
        return zaya_error_set(ZAYA_ENOMEM, "fixture");
    }
    for (int64_t i = 0; i < nf; i++) v[i] = (float)(i % 97) * 0.01f - 0.5f;
    zaya_ckpt_options o = zaya_ckpt_default_options();
    zaya_ckpt_writer *w = NULL;
    zaya_status s = zaya_ckpt_writer_init(&w, root, 1, 64, &o, NULL);
    for (int i = 0; i < n && s == ZAYA_OK; i++) s = zaya_ckpt_writer_add_model(w, t[i].name, t[i].ndim, t[i].shape, v + t[i].offset);
    cJSON *cj = zaya_config_to_json(&cfg);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_section(w, ZAYA_CKPT_SECTION_MODEL, cj);
    cJSON_Delete(cj);
    if (s != ZAYA_OK) zaya_ckpt_writer_free(w);
    else s = zaya_ckpt_writer_commit(w, NULL); /* reads the added buffers: v is freed after it */
    free(v);
    free(t);
    return s;
}

zaya_status fuzz_make_tokenizer(zaya_tokenizer **out) {
    static const char *text =
        "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs.\n"
        "def f(x):\n    return x * x + 1\n"
        "Question: what is two plus two? Answer: four.\n";
    size_t len = strlen(text);
    zaya_bpe_train_opts o = {.vocab_size = 320, .bos = "<|bos|>", .eos = "<|eos|>", .pad = "<|pad|>", .min_frequency = 2};
    return zaya_tokenizer_train_buffers(&text, &len, 1, &o, out);
}
