/* Run files: the built-in 3-phase run, the step -> phase mapping against a step-by-step simulation
 * written here, learning-rate segments at known points, resolved-JSON round trip, and validation
 * errors that name the phase and key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/curriculum.h"
#include "zaya/json.h"

/* Independent walk over the run: tokens advance by batch * seq_len per step; a ramped batch grows
 * linearly with phase tokens, rounded down to the batch multiple. */
static void test_mapping_vs_simulation(const zaya_run *run) {
    int64_t step = 0, run_tokens = 0;
    int bad = 0;
    for (int ph = 0; ph < run->nphases; ph++) {
        const zaya_phase *p = &run->phases[ph];
        CHECK(p->first_step == step, "phase %d starts at %lld, simulated %lld", ph, (long long)p->first_step, (long long)step);
        for (int64_t t = 0; t < p->tokens; step++) {
            int64_t g = p->batch;
            if (p->batch_ramp_tokens > 0 && t < p->batch_ramp_tokens) {
                double lin = (double)p->batch_from + (double)(p->batch - p->batch_from) * (double)t / (double)p->batch_ramp_tokens;
                g = (int64_t)floor(lin) / run->batch_multiple * run->batch_multiple;
                if (g < p->batch_from) g = p->batch_from;
            }
            zaya_step_info si;
            if (zaya_run_step(run, step, &si) != ZAYA_OK) {
                bad++;
                break;
            }
            bad += si.phase != ph || si.global_batch != g || si.seq_len != p->seq_len || si.rope_theta != p->rope_theta ||
                   si.tokens_before != run_tokens || si.phase_tokens_before != t || si.phase_start != (t == 0);
            t += g * p->seq_len;
            run_tokens += g * p->seq_len;
        }
    }
    CHECK(bad == 0, "%d steps disagree with the simulation", bad);
    CHECK(step == run->total_steps && run_tokens == run->total_tokens, "totals: %lld steps (sim %lld), %lld tokens (sim %lld)",
          (long long)run->total_steps, (long long)step, (long long)run->total_tokens, (long long)run_tokens);
    zaya_step_info si;
    CHECK(zaya_run_step(run, run->total_steps, &si) == ZAYA_ERANGE, "step past the end");
    CHECK(zaya_run_step(run, -1, &si) == ZAYA_ERANGE, "negative step");
}

static void test_default(void) {
    zaya_run run;
    CHECK(zaya_run_default("/data/x", &run) == ZAYA_OK, "default run: %s", zaya_error_message());
    CHECK(run.nphases == 3 && run.nsources == 2, "3 phases over 2 sources");
    const zaya_phase *p = run.phases;
    CHECK(!strcmp(run.sources[0].name, "prose") && !strcmp(run.sources[1].name, "code"), "source names");
    CHECK(!strcmp(run.sources[0].train[0], "/data/x/prose-train-*.ztok") && !strcmp(run.sources[1].val[0], "/data/x/code-val-*.ztok"),
          "default patterns: %s", run.sources[0].train[0]);
    /* Phase 2 upweights code; phase 3 extends the context with a larger RoPE base. */
    double code1 = p[0].weight[1] / (p[0].weight[0] + p[0].weight[1]), code2 = p[1].weight[1] / (p[1].weight[0] + p[1].weight[1]);
    CHECK(code2 > code1, "code share %g -> %g", code1, code2);
    CHECK(p[2].seq_len > p[1].seq_len && p[2].rope_theta > p[1].rope_theta, "context extension");
    CHECK(p[1].seq_len == p[0].seq_len && p[1].batch == p[0].batch && p[1].rope_theta == p[0].rope_theta, "inherited");
    test_mapping_vs_simulation(&run);

    /* Known learning rates: warmup is linear in tokens, WSD with decay_fraction 0 stays at peak,
     * phase 2 decays linearly over its last half, phase 3 is a cosine from its peak to final. */
    zaya_step_info si;
    zaya_run_step(&run, 0, &si);
    const double peak = p[0].lr_peak, mid_lr = p[1].lr_final, end_lr = p[2].lr_final;
    CHECK(peak == 0.004 && mid_lr == 0.0008 && p[2].lr_peak == mid_lr && end_lr == 0.00008, "default learning rates");
    CHECK(fabs(si.lr - peak * (16.0 * 128) / 65536) < 1e-12 && si.global_batch == 16, "step 0 lr %g batch %lld", si.lr,
          (long long)si.global_batch);
    zaya_run_step(&run, p[0].first_step + p[0].steps - 1, &si);
    CHECK(si.lr == peak && si.global_batch == 32, "end of phase 1 lr %g", si.lr);
    zaya_run_step(&run, p[1].first_step, &si);
    CHECK(si.lr == peak && si.phase == 1 && si.phase_start, "phase 2 starts at peak");
    int64_t mid = p[1].first_step + p[1].steps * 3 / 4; /* 3/4 through: half way down the decay */
    zaya_run_step(&run, mid, &si);
    double x = (double)si.phase_tokens_before / (double)p[1].tokens, want = peak + (mid_lr - peak) * (x - 0.5) / 0.5;
    CHECK(fabs(si.lr - want) < 1e-12 && x > 0.5, "phase 2 wsd lr %g want %g", si.lr, want);
    zaya_run_step(&run, p[2].first_step, &si);
    CHECK(si.lr == mid_lr && si.seq_len == 512 && si.rope_theta == 100000 && si.global_batch == 8, "phase 3 start");
    zaya_run_step(&run, p[2].first_step + p[2].steps / 2, &si);
    x = (double)si.phase_tokens_before / (double)p[2].tokens;
    want = end_lr + (mid_lr - end_lr) * 0.5 * (1 + cos(M_PI * x));
    CHECK(fabs(si.lr - want) < 1e-15, "phase 3 cosine lr %g want %g", si.lr, want);
    CHECK(zaya_run_check_world(&run, 4) == ZAYA_OK && zaya_run_check_world(&run, 3) == ZAYA_EINVAL, "world sizes");

    /* The resolved JSON parses back to the same run. */
    cJSON *j, *j2;
    zaya_run back;
    CHECK(zaya_run_to_json(&run, &j) == ZAYA_OK, "to json");
    CHECK(zaya_run_parse(j, "resolved", &back) == ZAYA_OK, "reparse resolved: %s", zaya_error_message());
    zaya_run_to_json(&back, &j2);
    char *a = cJSON_Print(j), *b = cJSON_Print(j2);
    CHECK(!strcmp(a, b), "resolved JSON is not a fixed point");
    free(a);
    free(b);
    cJSON_Delete(j);
    cJSON_Delete(j2);
    zaya_run_free(&back);

    char dir[] = "/tmp/zaya_test_run_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char sub[128], path[160];
    snprintf(sub, sizeof sub, "%s/out", dir);
    CHECK(zaya_run_write_resolved(&run, sub) == ZAYA_OK, "write resolved");
    snprintf(path, sizeof path, "%s/run.json", sub);
    CHECK(zaya_run_load(path, &back) == ZAYA_OK && back.total_steps == run.total_steps, "load resolved: %s",
          zaya_error_message());
    zaya_run_free(&back);
    unlink(path);
    rmdir(sub);
    rmdir(dir);
    zaya_run_free(&run);
}

static void expect_error(const char *json, const char *want) {
    cJSON *j;
    if (zaya_json_parse(json, "case", &j) != ZAYA_OK) {
        CHECK(0, "test JSON does not parse: %s", json);
        return;
    }
    zaya_run run;
    zaya_status s = zaya_run_parse(j, "t.json", &run);
    cJSON_Delete(j);
    CHECK(s != ZAYA_OK, "accepted: %s", json);
    if (s == ZAYA_OK) {
        zaya_run_free(&run);
        return;
    }
    CHECK(strstr(zaya_error_message(), want) && !strncmp(zaya_error_message(), "t.json: ", 8),
          "message '%s' lacks '%s'", zaya_error_message(), want);
}

#define P0 "{\"name\":\"a\",\"tokens\":4096,\"sources\":{\"prose\":1},\"seq_len\":64,\"batch\":4,\"lr\":{\"peak\":0.001}}"

static void test_errors(void) {
    expect_error("{\"phases\":[]}", "key 'phases' must be a non-empty array");
    expect_error("{\"phases\":[" P0 "],\"sed\":1}", "unknown key 'sed'");
    expect_error("{\"phases\":[" P0 ",{\"name\":\"b\",\"tokens\":0}]}", "phases[1] ('b'): key 'tokens': the token budget must be positive");
    expect_error("{\"phases\":[" P0 ",{\"name\":\"b\",\"tokens\":10,\"sources\":{\"prose\":1,\"code\":-1}}]}",
                 "phases[1] ('b'): key 'sources.code': the weight must be a number >= 0");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":10,\"sources\":{\"prose\":0,\"code\":0}}]}",
                 "phases[1]: key 'sources': the weights are all zero");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":10,\"seq_len\":100}]}", "phases[1]: key 'seq_len': must be a multiple of seq_multiple 8");
    expect_error("{\"batch_multiple\":8,\"phases\":[" P0 "]}", "phases[0] ('a'): key 'batch': the global batch must be a positive multiple of batch_multiple 8");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":10,\"batch\":{\"from\":8,\"to\":4,\"ramp_tokens\":9}}]}", "key 'batch.from'");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":10,\"batch\":{\"to\":4,\"ramp\":9}}]}", "phases[1]: key 'batch': unknown key 'ramp'");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":10,\"lr\":{\"decay\":\"linear\"}}]}", "phases[1]: key 'lr.decay': 'linear' is not one of cosine, wsd");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":10,\"lr\":{\"warmup_tokens\":10}}]}", "key 'lr.warmup_tokens' must be in [0, tokens 10)");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":10,\"rope_theta\":0}]}", "phases[1]: key 'rope_theta' must be > 1");
    expect_error("{\"phases\":[{\"tokens\":10,\"sources\":{\"prose\":1},\"seq_len\":64,\"batch\":4}]}", "phases[0]: missing required key 'lr.peak'");
    expect_error("{\"phases\":[{\"tokens\":10,\"seq_len\":64,\"batch\":4,\"lr\":{\"peak\":1}}]}", "phases[0]: missing required key 'sources'");
    expect_error("{\"phases\":[" P0 "," P0 "]}", "phases[1] ('a'): key 'name': 'a' is also the name of phases[0]");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":\"many\"}]}", "phases[1]: key 'tokens' must be an integer");
    expect_error("{\"sources\":{\"prose\":{\"train\":[]}},\"phases\":[" P0 "]}", "sources.prose: key 'train' must list 1 to");
    expect_error("{\"phases\":[" P0 ",{\"tokens\":10,\"lr\":{\"decay_fraction\":1.5}}]}", "key 'lr.decay_fraction' must be in [0, 1]");
    expect_error("{\"phases\":[{\"tokens\":1000000000000000,\"sources\":{\"p\":1},\"seq_len\":8,\"lr\":{\"peak\":1},"
                 "\"batch\":{\"from\":1,\"to\":2,\"ramp_tokens\":1000000000000000}}]}", "the ramp would last more than");

    /* A minimal valid file: defaults resolved, explicit source patterns kept. */
    cJSON *j;
    zaya_json_parse("{\"sources\":{\"prose\":{\"train\":\"/d/p*.ztok\",\"val\":[\"/d/v1.ztok\",\"/d/v2.ztok\"]}},"
                    "\"phases\":[" P0 ",{\"tokens\":2048,\"lr\":{\"final\":0.0001}}]}", "ok", &j);
    zaya_run run;
    CHECK(zaya_run_parse(j, "ok", &run) == ZAYA_OK, "valid run: %s", zaya_error_message());
    cJSON_Delete(j);
    CHECK(run.phases[1].seq_len == 64 && run.phases[1].batch == 4 && run.phases[1].rope_theta == 10000 &&
          run.phases[1].lr_peak == 0.001 && run.phases[1].lr_final == 0.0001 && run.phases[1].nsources == 1,
          "phase 2 defaults");
    CHECK(run.phases[0].steps == 16 && run.phases[1].steps == 8 && run.total_steps == 24, "steps %lld %lld",
          (long long)run.phases[0].steps, (long long)run.phases[1].steps);
    CHECK(run.sources[0].ntrain == 1 && run.sources[0].nval == 2 && !strcmp(run.sources[0].val[1], "/d/v2.ztok"), "patterns");
    test_mapping_vs_simulation(&run);
    zaya_run_free(&run);
}

int main(void) {
    test_default();
    test_errors();
    return th_finish("test_curriculum");
}
