/* HF export check: a small random model is saved as a zaya checkpoint, exported with
 * zaya_ckpt_export_hf (f32, several shards), and its logits are written next to it; the Python
 * side (ckpt_export_check.py) checks names/shapes/values against the reference doc and the PyTorch
 * reference, or loads the export in Hugging Face transformers.
 * Usage: ckpt_export_ref SCRIPT PYTHON reference|transformers   (exit 77: Python side unavailable) */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/ckpt.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/model.h"
#include "zaya/rng.h"

/* Random weights in the ranges trained models show: norms and scales near 1, small biases. */
static void randomize(zaya_model *m, uint64_t seed) {
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        float *w = m->params + t->offset;
        zaya_rng_fill_uniform(w, (size_t)t->numel, seed, 100 + (uint64_t)i, 0, -1.0f, 1.0f);
        for (int64_t j = 0; j < t->numel; j++) {
            if (t->opt == ZAYA_OPT_NONE) w[j] *= 0.03f;
            else if (strstr(t->name, "temp")) w[j] = 1.25f + 0.5f * w[j];
            else if (t->ndim == 1 && strstr(t->name, "bias")) w[j] *= 0.1f;
            else if (t->ndim == 1) w[j] = 1.0f + 0.2f * w[j];
            else w[j] *= 0.15f;
        }
    }
    zaya_model_sync_weights(m);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: ckpt_export_ref SCRIPT PYTHON reference|transformers\n");
        return 2;
    }
    const char *script = argv[1], *python = argv[2], *mode = argv[3];
    if (access(python, X_OK) != 0) {
        printf("%s not found: skipped\n", python);
        return 77;
    }
    zaya_log_set_level(ZAYA_LOG_ERROR);
    zaya_config c;
    zaya_config_preset("zaya1-tiny", &c);
    c.vocab_size = 211;
    c.hidden_size = 64;
    c.num_hidden_layers = 3;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 16;
    c.num_experts = 4;
    c.moe_intermediate_size = 48;
    c.router_hidden_size = 16;
    /* transformers implements the inference semantics: tokens routed to the skip class output zero */
    c.skip_mode = strcmp(mode, "transformers") ? ZAYA_SKIP_IDENTITY : ZAYA_SKIP_ZERO;
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init: %s", zaya_error_message());
    randomize(&m, 5);
    if (!strcmp(mode, "transformers")) {
        /* transformers 5.24 re-initializes the skip class's balancing bias to -1 after loading
         * (ZayaPreTrainedModel._init_weights writes balancing_biases[-1] in place, past the guard
         * that protects loaded tensors), so the stored value must already be -1 to compare. */
        for (int l = 0; l < c.num_hidden_layers; l++) m.p.layers[l].bal_bias[c.num_experts] = -1.0f;
        zaya_model_sync_weights(&m);
    }
    const int64_t B = 2, T = 9;
    CHECK(zaya_model_plan(&m, B, T) == ZAYA_OK, "plan");
    int32_t ids[B * T];
    for (int i = 0; i < B * T; i++) ids[i] = (int32_t)(zaya_rng_u32_at(9, 0, (uint64_t)i) % (uint32_t)c.vocab_size);
    float *logits = th_alloc(B * T * c.vocab_size);
    CHECK(zaya_model_logits(&m, ids, NULL, logits) == ZAYA_OK, "logits: %s", zaya_error_message());

    char dir[256], p[400];
    snprintf(dir, sizeof dir, "/tmp/zaya_ckpt_export_%s_%d", mode, (int)getpid());
    zaya_mkdir_p(dir);
    snprintf(p, sizeof p, "%s/ckpt", dir);
    zaya_ckpt_writer *w;
    zaya_ckpt_writer_init(&w, p, 1, 0, NULL, NULL);
    zaya_ckpt_writer_add_model_params(w, &m);
    CHECK(zaya_ckpt_writer_commit(w, NULL) == ZAYA_OK, "save: %s", zaya_error_message());
    char hf[400];
    snprintf(hf, sizeof hf, "%s/hf", dir);
    zaya_hf_export_opts o = {ZAYA_ST_F32, 300000, NULL};
    int nshards = 0;
    CHECK(zaya_ckpt_export_hf(p, hf, &o, &nshards) == ZAYA_OK, "export: %s", zaya_error_message());
    printf("exported %d shards to %s\n", nshards, hf);
    snprintf(p, sizeof p, "%s/tokens.bin", dir);
    FILE *f = fopen(p, "wb");
    fwrite(ids, 4, (size_t)(B * T), f);
    fclose(f);
    snprintf(p, sizeof p, "%s/logits.bin", dir);
    f = fopen(p, "wb");
    fwrite(logits, 4, (size_t)(B * T * c.vocab_size), f);
    fclose(f);
    snprintf(p, sizeof p, "%s/info.json", dir);
    char txt[128];
    snprintf(txt, sizeof txt, "{\"batch\": %lld, \"seq\": %lld}", (long long)B, (long long)T);
    zaya_write_file_atomic(p, txt, strlen(txt));
    int rc = 1;
    if (!th_failures) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "%s %s %s %s", python, script, mode, dir);
        int st = system(cmd);
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        CHECK(rc == 0 || rc == 77, "python check failed (exit %d)", rc);
    }
    snprintf(p, sizeof p, "rm -rf %s", dir);
    if (getenv("ZAYA_TEST_KEEP")) printf("kept %s\n", dir); /* for debugging the Python side */
    else if (system(p)) {}
    free(logits);
    zaya_model_free(&m);
    if (rc == 77 && !th_failures) return 77;
    return th_finish("ckpt_export_ref");
}
