/* The built-in studies: a small base model (trains a few hundred steps in about a minute on two cores)
 * and the variants each one compares. docs/study.md explains every choice. */
#include <stdio.h>
#include <string.h>

#include "zaya/study.h"

/* zaya1-tiny's proportions at half the width and depth: D 128, 4 blocks, 4 experts of width 128. */
#define SMALL_BASE                                                                                              \
    "{\"hidden_size\": 128, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, " \
    "\"head_dim\": 32, \"num_experts\": 4, \"moe_intermediate_size\": 128, \"router_hidden_size\": 32}"

static const zaya_study_def g_studies[] = {
    {"router", "ZAYA1 router (down-projection, EDA, 3-layer MLP) vs a linear top-1 router vs ZAYA1 without EDA",
     "zaya1-tiny", SMALL_BASE, 3,
     {{"zaya", "{\"zaya_router\": \"zaya\"}", 1, "ZAYA1 router"},
      {"linear", "{\"zaya_router\": \"linear\"}", 1, "linear router, softmax over the experts"},
      {"zaya_no_eda", "{\"zaya_router\": \"zaya_no_eda\"}", 1, "ZAYA1 router without EDA"}},
     120, 20},
    /* Matched parameters: CCA's attention of the base holds 62,210 parameters per block (q 16,384, k 8,192,
     * v 8,192, o 16,384, convolutions 13,056, temperatures 2). GQA with head_dim 40 (4 query, 2 KV heads)
     * and MHA with 3 heads of 40 hold 61,440 (-1.2%). */
    {"attention", "CCA vs standard GQA and MHA softmax attention at matched parameter count", "zaya1-tiny",
     SMALL_BASE, 3,
     {{"cca", "{\"zaya_attention\": \"cca\"}", 1, "CCA, 4 query / 2 KV heads of 32"},
      {"gqa", "{\"zaya_attention\": \"gqa\", \"head_dim\": 40}", 1, "GQA, 4 query / 2 KV heads of 40"},
      {"mha", "{\"zaya_attention\": \"mha\", \"num_attention_heads\": 3, \"num_key_value_heads\": 3, \"head_dim\": 40}",
       1, "MHA, 3 heads of 40"}},
     120, 22},
    {"moe", "MoE (4 experts, top-1) vs a dense SwiGLU MLP with the same active and with the same total parameters",
     "zaya1-tiny", SMALL_BASE, 3,
     {{"moe", "{\"zaya_mlp\": \"moe\"}", 1, "4 experts of width 128, top-1"},
      {"dense_active", "{\"zaya_mlp\": \"dense\", \"zaya_dense_intermediate_size\": 128}", 1,
       "dense SwiGLU of width 128 (one expert's parameters)"},
      {"dense_total", "{\"zaya_mlp\": \"dense\", \"zaya_dense_intermediate_size\": 512}", 1,
       "dense SwiGLU of width 512 (all experts' parameters)"}},
     120, 18},
    {"residual", "ZAYA1 residual scaling (learned scales and biases on both merge inputs) on vs off", "zaya1-tiny",
     SMALL_BASE, 2,
     {{"on", "{\"zaya_residual_scaling\": true}", 1, "residual scaling"},
      {"off", "{\"zaya_residual_scaling\": false}", 1, "plain residual additions"}},
     120, 18},
    {"optimizer", "Muon for hidden matrices + AdamW vs AdamW everywhere (same learning-rate schedule)", "zaya1-tiny",
     SMALL_BASE, 2,
     {{"muon_adamw", "{}", 1, "Muon (hidden matrices) + AdamW (the rest)"},
      {"adamw", "{}", 0, "AdamW everywhere"}},
     120, 18},
};

const zaya_study_def *zaya_study_builtin(int *n) {
    *n = (int)(sizeof g_studies / sizeof g_studies[0]);
    return g_studies;
}

const zaya_study_def *zaya_study_find(const char *name) {
    int n;
    const zaya_study_def *s = zaya_study_builtin(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].name, name)) return &s[i];
    return NULL;
}

void zaya_study_print_list(FILE *f, int seeds) {
    int n;
    const zaya_study_def *s = zaya_study_builtin(&n);
    fprintf(f, "built-in studies (%d seeds each; %d x %d = %d tokens per step):\n", seeds, ZAYA_STUDY_SEQ_LEN,
            ZAYA_STUDY_BATCH, ZAYA_STUDY_SEQ_LEN * ZAYA_STUDY_BATCH);
    for (int i = 0; i < n; i++) {
        int runs = s[i].nvariants * seeds;
        fprintf(f, "\n%s: %s\n  %d variants x %d seeds = %d runs of %lld steps, expected wall time ~%.0f min\n",
                s[i].name, s[i].question, s[i].nvariants, seeds, runs, (long long)s[i].steps,
                runs * s[i].seconds_per_run / 60.0);
        for (int v = 0; v < s[i].nvariants; v++) {
            const zaya_study_variant *va = &s[i].variants[v];
            fprintf(f, "  %-13s %s; config %s%s\n", va->name, va->note, va->overrides,
                    va->optimizer_muon ? "" : ", --optimizer adamw");
        }
    }
}
