/* Hugging Face interchange: export (f32 and bf16, several shards, index, config.json) and load
 * back; an original 80-half-layer style directory written here with its own naming code, imported
 * into a zaya checkpoint and into a model; bad inputs. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/bf16.h"
#include "zaya/ckpt.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/model.h"

static char g_root[256];

static zaya_config tiny(void) {
    zaya_config c;
    zaya_config_preset("zaya1-tiny", &c);
    c.vocab_size = 97;
    c.hidden_size = 32;
    c.num_hidden_layers = 3;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 8;
    c.num_experts = 3;
    c.moe_intermediate_size = 16;
    c.router_hidden_size = 8;
    return c;
}

static void random_params(zaya_model *m, uint64_t seed) {
    th_fill(m->params, m->nfloats, seed, 0, -0.5f, 0.5f);
    zaya_model_sync_weights(m);
}

static int params_equal(const zaya_model *a, const zaya_model *b) {
    for (int i = 0; i < a->ntensors; i++) {
        const zaya_tensor_info *t = &a->tensors[i];
        if (memcmp(a->params + t->offset, b->params + t->offset, (size_t)t->numel * 4)) {
            fprintf(stderr, "differs: %s\n", t->name);
            return 0;
        }
    }
    return 1;
}

static void save_model(const zaya_model *m, const char *root) {
    zaya_ckpt_writer *w;
    zaya_ckpt_writer_init(&w, root, 3, 0, NULL, NULL);
    zaya_ckpt_writer_add_model_params(w, m);
    CHECK(zaya_ckpt_writer_commit(w, NULL) == ZAYA_OK, "save: %s", zaya_error_message());
}

static void test_export(zaya_model *m, zaya_model *m2) {
    char root[300], hf[300], p[400];
    snprintf(root, sizeof root, "%s/ck", g_root);
    snprintf(hf, sizeof hf, "%s/hf32", g_root);
    save_model(m, root);
    /* the checkpoint loads into a fresh model */
    memset(m2->params, 0, (size_t)m2->nfloats * 4);
    CHECK(zaya_ckpt_load_model(root, m2) == ZAYA_OK && params_equal(m, m2), "checkpoint -> model: %s", zaya_error_message());
    zaya_hf_export_opts o = {ZAYA_ST_F32, 20000, NULL};
    int nshards = 0;
    CHECK(zaya_ckpt_export_hf(root, hf, &o, &nshards) == ZAYA_OK, "export: %s", zaya_error_message());
    CHECK(nshards > 3, "several shards (%d)", nshards);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", hf);
    cJSON *idx = NULL;
    CHECK(zaya_json_load_file(p, &idx) == ZAYA_OK, "index");
    if (!idx) return;
    cJSON *wm = cJSON_GetObjectItem(idx, "weight_map");
    CHECK(cJSON_GetArraySize(wm) == m->ntensors, "weight_map has every tensor (%d vs %d)", cJSON_GetArraySize(wm), m->ntensors);
    CHECK(!cJSON_GetObjectItem(wm, "lm_head.weight"), "no lm_head (tied)");
    CHECK(cJSON_GetObjectItem(wm, "model.layers.2.mlp.gate.balancing_biases") != NULL, "balancing biases exported");
    CHECK(cJSON_GetObjectItem(wm, "model.layers.0.mlp.gate.router_states_scale") == NULL &&
              cJSON_GetObjectItem(wm, "model.layers.1.mlp.gate.router_states_scale") != NULL,
          "router_states_scale absent for block 0 only");
    char last[96];
    snprintf(last, sizeof last, "model-%05d-of-%05d.safetensors", nshards, nshards);
    CHECK(!strcmp(cJSON_GetObjectItem(wm, "model.norm.weight")->valuestring, last), "last tensor in the last shard");
    cJSON_Delete(idx);
    zaya_config back;
    CHECK(zaya_ckpt_load_config(hf, &back) == ZAYA_OK && back.hidden_size == 32 && back.num_hidden_layers == 3 &&
              back.skip_mode == m->cfg.skip_mode,
          "config.json round trip");
    memset(m2->params, 0, (size_t)m2->nfloats * 4);
    CHECK(zaya_ckpt_load_model(hf, m2) == ZAYA_OK && params_equal(m, m2), "HF f32 -> model exact: %s", zaya_error_message());
    /* bf16 export: values are the RNE-rounded weights */
    char hfb[300];
    snprintf(hfb, sizeof hfb, "%s/hfbf16", g_root);
    o.dtype = ZAYA_ST_BF16;
    o.shard_bytes = 0;
    CHECK(zaya_ckpt_export_hf(root, hfb, &o, &nshards) == ZAYA_OK && nshards == 1, "bf16 export");
    CHECK(zaya_ckpt_load_model(hfb, m2) == ZAYA_OK, "bf16 load");
    int ok = 1;
    for (int i = 0; i < m->ntensors; i++)
        for (int64_t j = m->tensors[i].offset; j < m->tensors[i].offset + m->tensors[i].numel; j++)
            ok &= m2->params[j] == zaya_bf16_to_f32(zaya_f32_to_bf16(m->params[j]));
    CHECK(ok, "bf16 values");
    /* import-hf of our own export round trips */
    char imp[300];
    snprintf(imp, sizeof imp, "%s/imported", g_root);
    CHECK(zaya_ckpt_import_hf(hf, imp, NULL, NULL) == ZAYA_OK, "import: %s", zaya_error_message());
    memset(m2->params, 0, (size_t)m2->nfloats * 4);
    CHECK(zaya_ckpt_load_model(imp, m2) == ZAYA_OK && params_equal(m, m2), "import -> model exact");
    /* a model of another config is refused with the tensor named */
    zaya_config c3 = tiny();
    c3.hidden_size = 40;
    c3.head_dim = 12;
    zaya_model m3;
    zaya_model_init(&m3, &c3, ZAYA_DTYPE_F32);
    CHECK(zaya_ckpt_load_model(hf, &m3) == ZAYA_EFORMAT && strstr(zaya_error_message(), "model.embed_tokens.weight"),
          "shape mismatch named: %s", zaya_error_message());
    CHECK(zaya_ckpt_load_model(root, &m3) == ZAYA_EFORMAT && strstr(zaya_error_message(), "config mismatch"),
          "checkpoint mismatch: %s", zaya_error_message());
    zaya_model_free(&m3);
    /* a missing tensor is named */
    snprintf(p, sizeof p, "%s/model-00002-of-%05d.safetensors", hf, 0);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm %s/model-00002-of-*.safetensors", hf);
    CHECK(system(cmd) == 0, "rm shard");
    CHECK(zaya_ckpt_load_model(hf, m2) == ZAYA_EFORMAT && strstr(zaya_error_message(), "is missing"), "missing tensor: %s",
          zaya_error_message());
}

/* Original layout names written independently of the importer's table. */
static void orig_name(char *out, size_t cap, const char *hf, int L, int nl, int e) {
    const char *s = hf + strlen("model.layers.") + (L >= 10 ? 3 : 2);
    int A = 2 * L, M = 2 * L + 1;
    if (!strcmp(s, "input_layernorm.weight")) snprintf(out, cap, "model.layers.%d.input_norm.weight", A);
    else if (!strcmp(s, "post_attention_layernorm.weight")) snprintf(out, cap, "model.layers.%d.input_norm.weight", M);
    else if (!strncmp(s, "self_attn.qkv_proj.", 19)) {
        const char *k = s + 19;
        const char *map[][2] = {{"q_proj.weight", "linear_q.weight"},       {"k_proj.weight", "linear_k.weight"},
                                {"v_proj_current.weight", "val_proj1.weight"}, {"v_proj_delayed.weight", "val_proj2.weight"},
                                {"conv_qk_depthwise.weight", "conv_qk.0.weight"}, {"conv_qk_depthwise.bias", "conv_qk.0.bias"},
                                {"conv_qk_grouped.weight", "conv_qk.1.weight"}, {"conv_qk_grouped.bias", "conv_qk.1.bias"}};
        for (int i = 0; i < 8; i++)
            if (!strcmp(k, map[i][0])) snprintf(out, cap, "model.layers.%d.self_attn.qkv.%s", A, map[i][1]);
    } else if (!strcmp(s, "self_attn.qk_norm.temp")) snprintf(out, cap, "model.layers.%d.self_attn.qkv.temp", A);
    else if (!strcmp(s, "self_attn.o_proj.weight")) snprintf(out, cap, "model.layers.%d.self_attn.o_proj.weight", A);
    else if (!strncmp(s, "post_attention_residual_scale.", 30)) snprintf(out, cap, "model.layers.%d.res_scale.%s", M, s + 30);
    else if (!strncmp(s, "post_mlp_residual_scale.", 24)) {
        if (L == nl - 1) snprintf(out, cap, "model.res_scale.%s", s + 24);
        else snprintf(out, cap, "model.layers.%d.res_scale.%s", 2 * L + 2, s + 24);
    } else if (!strcmp(s, "mlp.experts.gate_up_proj"))
        snprintf(out, cap, "model.layers.%d.zaya_block.experts.local_experts.%d.linear_fc1.weight", M, e);
    else if (!strcmp(s, "mlp.experts.down_proj"))
        snprintf(out, cap, "model.layers.%d.zaya_block.experts.local_experts.%d.linear_fc2.weight", M, e);
    else if (!strncmp(s, "mlp.gate.", 9)) {
        const char *k = s + 9;
        const char *map[][2] = {{"router_mlp.norm.weight", "rmsnorm_eda.weight"}, {"router_mlp.fc1.weight", "router_mlp.0.weight"},
                                {"router_mlp.fc1.bias", "router_mlp.0.bias"},     {"router_mlp.fc2.weight", "router_mlp.2.weight"},
                                {"router_mlp.fc2.bias", "router_mlp.2.bias"},     {"router_mlp.out_proj.weight", "router_mlp.4.weight"}};
        snprintf(out, cap, "model.layers.%d.zaya_block.router.%s", M, k);
        for (int i = 0; i < 6; i++)
            if (!strcmp(k, map[i][0])) snprintf(out, cap, "model.layers.%d.zaya_block.router.%s", M, map[i][1]);
    } else snprintf(out, cap, "UNMAPPED");
}

static void test_original(zaya_model *m, zaya_model *m2) {
    char dir[300], p[400];
    snprintf(dir, sizeof dir, "%s/orig", g_root);
    zaya_mkdir_p(dir);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    zaya_st_writer *w;
    zaya_st_writer_init(&w, p, 1);
    int nl = (int)m->cfg.num_hidden_layers, count = 0;
    char (*names)[160] = calloc(4096, sizeof *names);
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        const float *x = m->params + t->offset;
        if (!strcmp(t->name, "model.embed_tokens.weight")) snprintf(names[count], 160, "%s", t->name);
        else if (!strcmp(t->name, "model.norm.weight")) snprintf(names[count], 160, "model.final_norm.weight");
        else if (!strncmp(t->name, "model.input_hidden_states_", 26))
            snprintf(names[count], 160, "model.layers.0.res_scale.hidden_states_%s", t->name + 26);
        else if (t->nmatrix > 1) { /* unstack experts */
            for (int e = 0; e < t->nmatrix; e++) {
                orig_name(names[count], 160, t->name, t->layer, nl, e);
                zaya_st_writer_add(w, names[count], ZAYA_ST_F32, 2, t->shape + 1, x + e * (t->numel / t->nmatrix), ZAYA_ST_F32);
                count++;
            }
            continue;
        } else orig_name(names[count], 160, t->name, t->layer, nl, 0);
        CHECK(strcmp(names[count], "UNMAPPED"), "test mapping covers %s", t->name);
        zaya_st_writer_add(w, names[count], ZAYA_ST_BF16, t->ndim, t->shape, x, ZAYA_ST_F32);
        count++;
    }
    CHECK(zaya_st_writer_finish(w, NULL, NULL, NULL) == ZAYA_OK, "write original layout");
    /* legacy config.json: half-layers, fused ffn width, Megatron key names */
    char cfgtxt[1024];
    snprintf(cfgtxt, sizeof cfgtxt,
             "{\"model_type\":\"zaya\",\"vocab_size\":%lld,\"hidden_size\":%lld,\"num_hidden_layers\":%d,"
             "\"num_attention_heads\":%lld,\"num_query_groups\":%lld,\"kv_channels\":%lld,\"num_experts\":%lld,"
             "\"ffn_hidden_size\":%lld,\"zaya_mlp_expansion\":%lld,\"moe_router_topk\":1,\"norm_epsilon\":%g,"
             "\"rope_theta\":%g,\"partial_rotary_factor\":%g,\"max_position_embeddings\":%lld,\"cca_time0\":2,\"cca_time1\":2,"
             "\"bos_token_id\":1,\"eos_token_id\":2,\"pad_token_id\":0}",
             (long long)m->cfg.vocab_size, (long long)m->cfg.hidden_size, 2 * nl, (long long)m->cfg.num_attention_heads,
             (long long)m->cfg.num_key_value_heads, (long long)m->cfg.head_dim, (long long)m->cfg.num_experts,
             (long long)(2 * m->cfg.moe_intermediate_size), (long long)m->cfg.router_hidden_size, m->cfg.rms_norm_eps,
             m->cfg.rope_theta, m->cfg.partial_rotary_factor, (long long)m->cfg.max_position_embeddings);
    snprintf(p, sizeof p, "%s/config.json", dir);
    zaya_write_file_atomic(p, cfgtxt, strlen(cfgtxt));
    printf("original layout: %d tensors for %d HF tensors\n", count, m->ntensors);
    /* expected original count: HF count - 2*nl stacked + 2*nl*E experts */
    CHECK(count == m->ntensors - 2 * nl + 2 * nl * (int)m->cfg.num_experts, "original tensor count");
    memset(m2->params, 0, (size_t)m2->nfloats * 4);
    CHECK(zaya_ckpt_load_model(dir, m2) == ZAYA_OK, "load original layout: %s", zaya_error_message());
    int ok = 1;
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        for (int64_t j = 0; j < t->numel; j++) {
            float want = m->params[t->offset + j];
            if (t->nmatrix == 1) want = zaya_bf16_to_f32(zaya_f32_to_bf16(want)); /* non-expert tensors were stored bf16 */
            if (m2->params[t->offset + j] != want) {
                if (ok) fprintf(stderr, "first mismatch: %s[%lld]\n", t->name, (long long)j);
                ok = 0;
            }
        }
    }
    CHECK(ok, "original layout values (experts f32, the rest bf16)");
    char imp[300];
    snprintf(imp, sizeof imp, "%s/orig_imported", g_root);
    zaya_hf_import_result r;
    CHECK(zaya_ckpt_import_hf(dir, imp, NULL, &r) == ZAYA_OK, "import original: %s", zaya_error_message());
    CHECK(r.original_layout == 1 && r.skip_mode == ZAYA_SKIP_ZERO && !strcmp(r.skip_source, "default"),
          "original layout without zaya_skip_mode: zero by default (got %d from %s)", r.skip_mode, r.skip_source);
    zaya_ckpt *c;
    if (zaya_ckpt_open_latest(&c, imp, 1) == ZAYA_OK) {
        const cJSON *imps = zaya_ckpt_section(c, "import");
        CHECK(imps && !strcmp(cJSON_GetObjectItem(imps, "layout")->valuestring, "original-half-layers"), "layout recorded");
        zaya_config back;
        CHECK(zaya_config_from_json(zaya_ckpt_section(c, ZAYA_CKPT_SECTION_MODEL), &back) == ZAYA_OK &&
                  back.num_hidden_layers == nl && back.moe_intermediate_size == m->cfg.moe_intermediate_size &&
                  back.router_hidden_size == m->cfg.router_hidden_size,
              "legacy config converted");
        zaya_ckpt_close(c);
    } else CHECK(0, "open imported: %s", zaya_error_message());
    free(names);
}

static const char *skip_key(const char *path) {
    static char v[32];
    cJSON *j = NULL;
    v[0] = '\0';
    if (zaya_json_load_file(path, &j) != ZAYA_OK) return "(unreadable)";
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "zaya_skip_mode");
    snprintf(v, sizeof v, "%s", cJSON_IsString(k) ? k->valuestring : "(absent)");
    cJSON_Delete(j);
    return v;
}

static int imported_skip_mode(const char *root) {
    zaya_ckpt *c;
    int mode = -1;
    if (zaya_ckpt_open_latest(&c, root, 0) != ZAYA_OK) return -1;
    zaya_config back;
    if (zaya_config_from_json(zaya_ckpt_section(c, ZAYA_CKPT_SECTION_MODEL), &back) == ZAYA_OK) mode = (int)back.skip_mode;
    zaya_ckpt_close(c);
    return mode;
}

/* Skip semantics across HF interchange: export always writes "zaya_skip_mode"; a config without it
 * (as transformers writes it) imports as zero, transformers' output for skip-routed tokens; the key,
 * when present, wins; an explicit import option overrides both. */
static void test_skip_mode(zaya_model *m) {
    char root[300], hf[300], p[400], imp[300];
    for (int mode = ZAYA_SKIP_IDENTITY; mode <= ZAYA_SKIP_ZERO; mode++) {
        zaya_config c = m->cfg;
        c.skip_mode = (zaya_skip_mode)mode;
        zaya_model ms;
        CHECK(zaya_model_init(&ms, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init skip %d", mode);
        memcpy(ms.params, m->params, (size_t)m->nfloats * 4);
        snprintf(root, sizeof root, "%s/skip%d_ckpt", g_root, mode);
        snprintf(hf, sizeof hf, "%s/skip%d_hf", g_root, mode);
        save_model(&ms, root);
        zaya_model_free(&ms);
        CHECK(zaya_ckpt_export_hf(root, hf, NULL, NULL) == ZAYA_OK, "export skip %d: %s", mode, zaya_error_message());
        snprintf(p, sizeof p, "%s/config.json", hf);
        const char *want = mode == ZAYA_SKIP_ZERO ? "zero" : "identity";
        CHECK(!strcmp(skip_key(p), want), "export writes zaya_skip_mode \"%s\" (got %s)", want, skip_key(p));
        zaya_hf_import_result r;
        snprintf(imp, sizeof imp, "%s/skip%d_imp", g_root, mode);
        CHECK(zaya_ckpt_import_hf(hf, imp, NULL, &r) == ZAYA_OK && r.skip_mode == mode &&
                  !strcmp(r.skip_source, "config.json") && imported_skip_mode(imp) == mode,
              "explicit key %s kept on import (got %d from %s)", want, r.skip_mode, r.skip_source);
    }
    /* drop the key, as in a config.json written by transformers (hf is the identity export) */
    snprintf(hf, sizeof hf, "%s/skip%d_hf", g_root, ZAYA_SKIP_IDENTITY);
    snprintf(p, sizeof p, "%s/config.json", hf);
    cJSON *j = NULL;
    CHECK(zaya_json_load_file(p, &j) == ZAYA_OK, "read exported config");
    if (!j) return;
    cJSON_DeleteItemFromObjectCaseSensitive(j, "zaya_skip_mode");
    CHECK(zaya_json_write_file(p, j, 1) == ZAYA_OK && !strcmp(skip_key(p), "(absent)"), "config without the key");
    cJSON_Delete(j);
    zaya_config back;
    CHECK(zaya_ckpt_load_config(hf, &back) == ZAYA_OK && back.skip_mode == ZAYA_SKIP_ZERO, "HF dir without key loads as zero");
    zaya_hf_import_result r;
    snprintf(imp, sizeof imp, "%s/skip_default_imp", g_root);
    CHECK(zaya_ckpt_import_hf(hf, imp, NULL, &r) == ZAYA_OK && r.skip_mode == ZAYA_SKIP_ZERO &&
              !strcmp(r.skip_source, "default") && r.original_layout == 0 && imported_skip_mode(imp) == ZAYA_SKIP_ZERO,
          "no key -> zero (got %d from %s)", r.skip_mode, r.skip_source);
    zaya_hf_import_opts io = {ZAYA_SKIP_IDENTITY};
    snprintf(imp, sizeof imp, "%s/skip_forced_imp", g_root);
    CHECK(zaya_ckpt_import_hf(hf, imp, &io, &r) == ZAYA_OK && r.skip_mode == ZAYA_SKIP_IDENTITY &&
              !strcmp(r.skip_source, "option") && imported_skip_mode(imp) == ZAYA_SKIP_IDENTITY,
          "option overrides (got %d from %s)", r.skip_mode, r.skip_source);
    io.skip_mode = 7;
    CHECK(zaya_ckpt_import_hf(hf, imp, &io, &r) == ZAYA_EINVAL, "bad skip mode option rejected");
}

/* Rewrites DIR/NAME from a JSON object (pretty). */
static void put_json(const char *dir, const char *name, const cJSON *j) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    CHECK(zaya_json_write_file(p, j, 1) == ZAYA_OK, "write %s", p);
}

static cJSON *get_json(const char *dir, const char *name) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cJSON *j = NULL;
    CHECK(zaya_json_load_file(p, &j) == ZAYA_OK, "load %s: %s", p, zaya_error_message());
    return j;
}

/* The index of an HF directory is checked against its shards: every tensor once, in the shard the
 * index names, total_size equal to the shards' tensor bytes; a tensor in two shards is an error. */
static void test_index(zaya_model *m, zaya_model *m2) {
    char hf[300], p[600], q[600], root[300];
    snprintf(root, sizeof root, "%s/ck", g_root); /* written by test_export */
    snprintf(hf, sizeof hf, "%s/hfidx", g_root);
    zaya_hf_export_opts o = {ZAYA_ST_F32, 20000, NULL};
    CHECK(zaya_ckpt_export_hf(root, hf, &o, NULL) == ZAYA_OK, "export: %s", zaya_error_message());
    cJSON *idx = get_json(hf, "model.safetensors.index.json");
    if (!idx) return;
    cJSON *wm = cJSON_GetObjectItem(idx, "weight_map"), *meta = cJSON_GetObjectItem(idx, "metadata");
    const double total = cJSON_GetObjectItem(meta, "total_size")->valuedouble;
    const char *norm_shard = cJSON_GetObjectItem(wm, "model.norm.weight")->valuestring, *other = NULL;
    for (const cJSON *e = wm->child; e && !other; e = e->next)
        if (strcmp(e->valuestring, norm_shard)) other = e->valuestring;
    CHECK(other != NULL, "the index names several shards");
    if (!other) other = norm_shard;
    struct {
        const char *what, *needle;
        void (*edit)(cJSON *idx, double total);
    } cases[] = {
        {"total_size + 1", "but the", NULL},
        {"total_size 2^63", "(got 9223372036854775808)", NULL},
        {"weight_map not an object", "object 'weight_map'", NULL},
        {"a tensor left out", "is missing from weight_map", NULL},
        {"a tensor in another shard", "but it is in", NULL},
        {"a tensor no shard holds", "which does not hold it", NULL},
    };
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        cJSON *j = cJSON_Duplicate(idx, 1);
        cJSON *jm = cJSON_GetObjectItem(j, "metadata"), *jw = cJSON_GetObjectItem(j, "weight_map");
        switch (k) {
        case 0: cJSON_ReplaceItemInObject(jm, "total_size", cJSON_CreateNumber(total + 1)); break;
        case 1: cJSON_ReplaceItemInObject(jm, "total_size", cJSON_CreateNumber(9223372036854775808.0)); break;
        case 2: cJSON_ReplaceItemInObject(j, "weight_map", cJSON_CreateArray()); break;
        case 3: cJSON_DeleteItemFromObject(jw, "model.norm.weight"); break;
        case 4: cJSON_ReplaceItemInObject(jw, "model.norm.weight", cJSON_CreateString(other)); break;
        case 5: cJSON_AddStringToObject(jw, "model.extra.weight", other); break;
        }
        put_json(hf, "model.safetensors.index.json", j);
        cJSON_Delete(j);
        zaya_model_source *src = NULL;
        CHECK(zaya_ckpt_load_model(hf, m2) == ZAYA_EFORMAT && strstr(zaya_error_message(), cases[k].needle) &&
                  strstr(zaya_error_message(), "model.safetensors.index.json"),
              "index with %s refused: %s", cases[k].what, zaya_error_message());
        CHECK(zaya_model_source_open(&src, hf) != ZAYA_OK, "model source refuses the index with %s", cases[k].what);
        zaya_model_source_close(src);
    }
    put_json(hf, "model.safetensors.index.json", idx);
    CHECK(zaya_ckpt_load_model(hf, m2) == ZAYA_OK && params_equal(m, m2), "restored index loads: %s", zaya_error_message());
    /* the same tensor in two shards: refused with or without the index */
    snprintf(p, sizeof p, "%s/%s", hf, cJSON_GetObjectItem(wm, "model.norm.weight")->valuestring);
    snprintf(q, sizeof q, "%s/zz-copy.safetensors", hf);
    char *data;
    size_t len;
    CHECK(zaya_read_file(p, &data, &len) == ZAYA_OK && zaya_write_file_atomic(q, data, len) == ZAYA_OK, "copy a shard");
    free(data);
    CHECK(zaya_ckpt_load_model(hf, m2) == ZAYA_EFORMAT && strstr(zaya_error_message(), "is in two shards") &&
              strstr(zaya_error_message(), "zz-copy.safetensors"),
          "tensor in two shards: %s", zaya_error_message());
    unlink(q);
    /* a FIFO named like a shard is refused, naming it, instead of blocking the open */
    snprintf(q, sizeof q, "%s/zz-fifo.safetensors", hf);
    CHECK(mkfifo(q, 0600) == 0, "mkfifo");
    CHECK(zaya_ckpt_load_model(hf, m2) == ZAYA_EIO && strstr(zaya_error_message(), "zz-fifo.safetensors") &&
              strstr(zaya_error_message(), "FIFO"),
          "FIFO shard refused: %s", zaya_error_message());
    unlink(q);
    cJSON_Delete(idx);
}

/* ckpt verify's model check: the tensor set against model_config, ranks within the world, every
 * tensor once; the manifests are resealed so that only the checks under test can refuse them. */
static void test_model_check(const zaya_model *m) {
    char root[300], step[400];
    snprintf(root, sizeof root, "%s/mcheck", g_root);
    save_model(m, root);
    snprintf(step, sizeof step, "%s/step-00000003", root);
    zaya_ckpt *c = NULL;
    CHECK(zaya_ckpt_open(&c, step, 1) == ZAYA_OK && zaya_ckpt_check_model(c) == ZAYA_OK, "saved model checks: %s",
          zaya_error_message());
    zaya_ckpt_close(c);
    cJSON *orig = get_json(step, "manifest.json");
    if (!orig) return;
    static const struct {
        const char *what, *needle;
        int at_open;
    } cases[] = {
        {"no tensors", "is missing", 0},
        {"a duplicated tensor", "listed twice", 1},
        {"a piece on rank 99 of world 1", "outside world_size 1", 1},
        {"2^40 layers", "num_hidden_layers", 0},
        {"a tensor of another shape", "needs a model tensor of", 0},
        {"an extra model tensor", "is not a tensor of the model", 0},
        {"no model_config", "no 'model_config' section", 0},
    };
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        cJSON *j = cJSON_Duplicate(orig, 1);
        cJSON *ts = cJSON_GetObjectItem(j, "tensors");
        cJSON *t0 = cJSON_GetArrayItem(ts, 0);
        switch (k) {
        case 0: cJSON_ReplaceItemInObject(j, "tensors", cJSON_CreateArray()); break;
        case 1: cJSON_AddItemToArray(ts, cJSON_Duplicate(t0, 1)); break;
        case 2: cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(t0, "pieces"), 0), "rank", cJSON_CreateNumber(99)); break;
        case 3: cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "model_config"), "num_hidden_layers", cJSON_CreateNumber(1099511627776.0)); break;
        case 4: cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "model_config"), "vocab_size", cJSON_CreateNumber(98)); break;
        case 5: {
            cJSON *x = cJSON_Duplicate(t0, 1);
            cJSON_ReplaceItemInObject(x, "name", cJSON_CreateString("model.extra.weight"));
            cJSON_AddItemToArray(ts, x);
            break;
        }
        case 6: cJSON_DeleteItemFromObject(j, "model_config"); break;
        }
        CHECK(zaya_ckpt_manifest_seal(j) == ZAYA_OK, "seal");
        put_json(step, "manifest.json", j);
        cJSON_Delete(j);
        c = NULL;
        zaya_status s = zaya_ckpt_open(&c, step, 1);
        if (s == ZAYA_OK) s = zaya_ckpt_check_model(c);
        CHECK(s == ZAYA_EFORMAT || s == ZAYA_EINVAL, "%s refused", cases[k].what);
        CHECK(strstr(zaya_error_message(), cases[k].needle) != NULL, "%s: error names it: %s", cases[k].what, zaya_error_message());
        CHECK(cases[k].at_open == (c == NULL), "%s: refused %s", cases[k].what, cases[k].at_open ? "at open" : "by the model check");
        zaya_ckpt_close(c);
    }
    cJSON_Delete(orig);
}

int main(void) {
    zaya_log_set_level(ZAYA_LOG_ERROR);
    snprintf(g_root, sizeof g_root, "/tmp/zaya_test_ckpt_hf_%d", (int)getpid());
    zaya_config c = tiny();
    zaya_model m, m2;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK && zaya_model_init(&m2, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    random_params(&m, 11);
    test_export(&m, &m2);
    test_index(&m, &m2);
    test_model_check(&m);
    test_original(&m, &m2);
    test_skip_mode(&m);
    zaya_model_free(&m);
    zaya_model_free(&m2);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_root);
    if (system(cmd)) {}
    return th_finish("test_ckpt_hf");
}
