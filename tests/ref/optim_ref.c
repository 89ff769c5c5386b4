/* 20 optimizer steps against PyTorch (tests/ref/optim_ref.py): AdamW against torch.optim.AdamW and
 * Muon against a PyTorch Muon written from the formula, on the shared fixture (decayed embedding split
 * into row ranges, norm, conv kernel, wide and tall matrices, stacked experts, a buffer), with a
 * different lr every step and clipping factors on some steps. Usage: optim_ref SCRIPT PYTHON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim_fixture.h"
#include "testutil.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/optim.h"
#include "zaya/threads.h"

#define STEPS 20

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: optim_ref SCRIPT PYTHON\n");
        return 2;
    }
    zaya_threads_init(2);
    fx_table f;
    fx_build(&f);
    zaya_optim_config cfg;
    zaya_optim_config_default(&cfg);
    cfg.weight_decay = 0.2;
    zaya_optim_plan plan;
    zaya_optim opt;
    CHECK(zaya_optim_plan_build(f.t, f.n, 1, 100, &plan) == ZAYA_OK, "plan: %s", zaya_error_message());
    CHECK(zaya_optim_init(&opt, &plan, &cfg, 0) == ZAYA_OK, "init: %s", zaya_error_message());
    const int64_t nf = f.nfloats;
    float *params = th_alloc(nf), *grads = th_alloc(STEPS * nf);
    th_fill(params, nf, 21, 1, -1, 1);
    th_fill(grads, STEPS * nf, 21, 2, -1, 1);
    double lr[STEPS], scale[STEPS];

    char dir[] = "/tmp/zaya_optim_ref_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddNumberToObject(meta, "nfloats", (double)nf);
    cJSON *c = cJSON_AddObjectToObject(meta, "config");
    cJSON_AddNumberToObject(c, "weight_decay", cfg.weight_decay);
    cJSON_AddNumberToObject(c, "adam_beta1", cfg.adam_beta1);
    cJSON_AddNumberToObject(c, "adam_beta2", cfg.adam_beta2);
    cJSON_AddNumberToObject(c, "adam_eps", cfg.adam_eps);
    cJSON_AddNumberToObject(c, "muon_momentum", cfg.muon_momentum);
    cJSON_AddNumberToObject(c, "muon_ns_steps", cfg.muon_ns_steps);
    cJSON *tl = cJSON_AddArrayToObject(meta, "tensors");
    for (int i = 0; i < f.n; i++) {
        const zaya_tensor_info *t = &f.t[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddNumberToObject(o, "offset", (double)t->offset);
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[d]));
        cJSON_AddStringToObject(o, "kind", t->opt == ZAYA_OPT_MUON ? "muon" : t->opt == ZAYA_OPT_ADAMW ? "adamw" : "none");
        cJSON_AddBoolToObject(o, "decay", t->embedding != 0); /* AdamW decay rule: the embedding only */
        cJSON_AddItemToArray(tl, o);
    }
    cJSON *jl = cJSON_AddArrayToObject(meta, "lr"), *js = cJSON_AddArrayToObject(meta, "scale");
    for (int s = 0; s < STEPS; s++) {
        lr[s] = s < 5 ? 0.01 * (s + 1) / 5 : 0.01 * (0.5 + 0.5 * cos(M_PI * (s - 5) / 15.0)); /* warmup + cosine */
        scale[s] = s % 4 == 3 ? 0.5 : 1.0;
        cJSON_AddItemToArray(jl, cJSON_CreateNumber(lr[s]));
        cJSON_AddItemToArray(js, cJSON_CreateNumber(scale[s]));
    }
    char path[512];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    CHECK(zaya_json_write_file(path, meta, 1) == ZAYA_OK, "write meta");
    cJSON_Delete(meta);
    snprintf(path, sizeof path, "%s/params0.bin", dir);
    CHECK(zaya_write_file_atomic(path, params, sizeof(float) * (size_t)nf) == ZAYA_OK, "write params");
    snprintf(path, sizeof path, "%s/grads.bin", dir);
    CHECK(zaya_write_file_atomic(path, grads, sizeof(float) * (size_t)(STEPS * nf)) == ZAYA_OK, "write grads");

    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s %s", argv[2], argv[1], dir);
    int rc = system(cmd);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
        printf("optim_ref: torch not available, skipped\n");
        return 77;
    }
    CHECK(rc == 0, "reference failed (rc %d): %s", rc, cmd);
    char *ref = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/out.bin", dir);
    if (rc == 0) CHECK(zaya_read_file(path, &ref, &len) == ZAYA_OK, "read out.bin");
    CHECK(len == sizeof(float) * (size_t)(STEPS * nf), "out.bin size %zu", len);
    if (len == sizeof(float) * (size_t)(STEPS * nf)) {
        const float *r = (const float *)ref;
        double worst[2] = {0, 0};
        for (int s = 0; s < STEPS; s++) {
            zaya_optim_step(&opt, params, grads + s * nf, lr[s], scale[s]);
            for (int i = 0; i < f.n; i++) {
                const zaya_tensor_info *t = &f.t[i];
                if (t->opt == ZAYA_OPT_NONE) continue;
                double e = th_rel_err_ff(params + t->offset, r + s * nf + t->offset, t->numel, 1e-12);
                int muon = t->opt == ZAYA_OPT_MUON;
                worst[muon] = fmax(worst[muon], e);
                CHECK(e <= (muon ? 1e-5 : 1e-6), "step %d %s: rel err %.2e", s + 1, t->name, e);
            }
        }
        printf("optim_ref: %d steps, worst rel err AdamW %.2e (tol 1e-6), Muon %.2e (tol 1e-5)\n", STEPS, worst[0],
               worst[1]);
    }
    free(ref);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
    free(params), free(grads);
    zaya_optim_free(&opt);
    zaya_optim_plan_free(&plan);
    return th_finish("optim_ref");
}
