/* zaya ckpt info|verify|consolidate|reshape|export-hf|import-hf: inspect and convert checkpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/ckpt.h"
#include "zaya/config.h"
#include "zaya/timer.h"

static int one_positional(const zaya_cmd_spec *spec, const zaya_args *a, const char *what) {
    if (a->npos != 1) return zaya_flags_usage_error(spec, "expected exactly one %s", what);
    return -1;
}

int zaya_cmd_ckpt_info(int argc, char **argv) {
    int tensors = 0, json = 0, v1 = 0;
    zaya_flag flags[] = {
        {"tensors", 't', ZAYA_FLAG_BOOL, &tensors, NULL, "list every tensor with kind, dtype, shape and pieces"},
        {"json", 0, ZAYA_FLAG_BOOL, &json, NULL, "print the manifest instead of the summary"},
        {"accept-v1", 0, ZAYA_FLAG_BOOL, &v1, NULL, "read a format_version 1 manifest, which has no checksum of its own"},
    };
    zaya_cmd_spec spec = {"ckpt info", "summary of a checkpoint (step, sections, files, tensors)", "[options] CKPT",
                          "CKPT is a step directory or a checkpoint root (follows 'latest', falling back to the newest "
                          "good checkpoint).",
                          flags, 3};
    zaya_args a;
    int rc = zaya_flags_parse(&spec, argc, argv, &a);
    if (rc >= 0) return rc;
    if ((rc = one_positional(&spec, &a, "checkpoint")) >= 0) return rc;
    zaya_ckpt *c;
    if (zaya_ckpt_open_latest(&c, a.pos[0], v1 ? ZAYA_CKPT_OPEN_ACCEPT_V1 : 0) != ZAYA_OK) return zaya_cli_error("ckpt info", NULL);
    if (json) {
        char *t = cJSON_Print(c->manifest);
        printf("%s\n", t);
        free(t);
    } else zaya_ckpt_print_info(c, stdout, tensors);
    zaya_ckpt_close(c);
    return 0;
}

int zaya_cmd_ckpt_verify(int argc, char **argv) {
    int v1 = 0;
    zaya_flag flags[] = {
        {"accept-v1", 0, ZAYA_FLAG_BOOL, &v1, NULL, "read a format_version 1 manifest, which has no checksum of its own"},
    };
    zaya_cmd_spec spec = {"ckpt verify", "check completeness, shapes and every xxh3 checksum of a checkpoint", "[--accept-v1] CKPT",
                          "Checks the manifest's own checksum, every file and piece, every tensor xxh3, and the tensor set "
                          "against the model_config section (every tensor of the model exactly once, with its shape). Exit "
                          "code 0 when the checkpoint is intact, 1 with the file, tensor and offset otherwise.", flags, 1};
    zaya_args a;
    int rc = zaya_flags_parse(&spec, argc, argv, &a);
    if (rc >= 0) return rc;
    if ((rc = one_positional(&spec, &a, "checkpoint")) >= 0) return rc;
    double t0 = zaya_now_s();
    zaya_ckpt *c;
    if (zaya_ckpt_open_latest(&c, a.pos[0], v1 ? ZAYA_CKPT_OPEN_ACCEPT_V1 : 0) != ZAYA_OK) return zaya_cli_error("ckpt verify", NULL);
    if (zaya_ckpt_check_model(c) != ZAYA_OK || zaya_ckpt_verify(c) != ZAYA_OK) {
        zaya_ckpt_close(c);
        return zaya_cli_error("ckpt verify", NULL);
    }
    uint64_t bytes = 0;
    int pieces = 0;
    for (int i = 0; i < c->nfiles; i++) bytes += c->files[i].size;
    for (int i = 0; i < c->nentries; i++) pieces += c->entries[i].npieces;
    double dt = zaya_now_s() - t0;
    printf("%s: OK (%d tensors, %d pieces, %d files, %.3f GB checked in %.2f s, %.2f GB/s)\n", c->dir, c->nentries, pieces,
           c->nfiles, bytes / 1e9, dt, bytes / 1e9 / (dt > 0 ? dt : 1e-9));
    zaya_ckpt_close(c);
    return 0;
}

int zaya_cmd_ckpt_consolidate(int argc, char **argv) {
    const char *out = NULL;
    zaya_flag flags[] = {{"out", 'o', ZAYA_FLAG_STRING, &out, "DIR", "checkpoint root to write (required)"}};
    zaya_cmd_spec spec = {"ckpt consolidate", "rewrite a checkpoint as one file set (world size 1)", "CKPT -o DIR",
                          "Model tensors go to model-r00000.safetensors, every sharded array to state-r00000.safetensors.",
                          flags, 1};
    zaya_args a;
    int rc = zaya_flags_parse(&spec, argc, argv, &a);
    if (rc >= 0) return rc;
    if ((rc = one_positional(&spec, &a, "checkpoint")) >= 0) return rc;
    if (!out) return zaya_flags_usage_error(&spec, "-o DIR is required");
    if (zaya_ckpt_reshape(a.pos[0], out, 1, 0) != ZAYA_OK) return zaya_cli_error("ckpt consolidate", NULL);
    printf("consolidated checkpoint written to %s\n", out);
    return 0;
}

int zaya_cmd_ckpt_reshape(int argc, char **argv) {
    const char *out = NULL;
    int world = 0, rank0 = 0;
    zaya_flag flags[] = {
        {"out", 'o', ZAYA_FLAG_STRING, &out, "DIR", "checkpoint root to write (required)"},
        {"world-size", 'n', ZAYA_FLAG_INT, &world, "M", "new number of ranks (required)"},
        {"model-on-rank0", 0, ZAYA_FLAG_BOOL, &rank0, NULL, "write all model tensors from rank 0 (default: split by bytes)"},
    };
    zaya_cmd_spec spec = {"ckpt reshape", "re-slice a checkpoint's per-rank arrays for another world size", "CKPT -o DIR --world-size M",
                          "Every sharded array is cut into M contiguous ranges of near-equal size, only at the unit "
                          "boundaries listed in the optimizer section (\"units\") when present. The data-loader state is "
                          "indexed by global batch and continues unchanged on any world size (docs/data-format.md).",
                          flags, 3};
    zaya_args a;
    int rc = zaya_flags_parse(&spec, argc, argv, &a);
    if (rc >= 0) return rc;
    if ((rc = one_positional(&spec, &a, "checkpoint")) >= 0) return rc;
    if (!out) return zaya_flags_usage_error(&spec, "-o DIR is required");
    if (world < 1) return zaya_flags_usage_error(&spec, "--world-size must be >= 1");
    if (zaya_ckpt_reshape(a.pos[0], out, world, !rank0) != ZAYA_OK) return zaya_cli_error("ckpt reshape", NULL);
    printf("checkpoint for %d ranks written to %s\n", world, out);
    return 0;
}

int zaya_cmd_ckpt_export_hf(int argc, char **argv) {
    const char *out = NULL, *dtype = "bf16", *tok = NULL, *config = NULL;
    int64_t shard = 5ll << 30, seed = -1;
    zaya_flag flags[] = {
        {"out", 'o', ZAYA_FLAG_STRING, &out, "DIR", "output directory (required)"},
        {"config", 'c', ZAYA_FLAG_STRING, &config, "SPEC", "preset or config.json, with --random-init instead of CKPT"},
        {"random-init", 0, ZAYA_FLAG_I64, &seed, "SEED", "export the deterministic random init for SEED (the weights of --random-init elsewhere)"},
        {"dtype", 0, ZAYA_FLAG_STRING, &dtype, "T", "bf16 or f32 (default: bf16)"},
        {"shard-size", 0, ZAYA_FLAG_BYTES, &shard, "BYTES", "maximum bytes per model-*.safetensors (default: 5G)"},
        {"tokenizer", 0, ZAYA_FLAG_STRING, &tok, "FILE", "tokenizer.json to copy alongside (default: none)"},
    };
    zaya_cmd_spec spec = {"ckpt export-hf", "export a checkpoint's model in the Hugging Face layout (model_type zaya)",
                          "CKPT -o DIR [options]  |  --config SPEC --random-init SEED -o DIR [options]",
                          "Writes model-0000k-of-0000N.safetensors, model.safetensors.index.json, config.json and, with "
                          "--tokenizer, tokenizer.json. No lm_head.weight (tied); balancing biases included. Tensors "
                          "are streamed in pieces: memory stays at a few MiB whatever the model's size.",
                          flags, 6};
    zaya_args a;
    int rc = zaya_flags_parse(&spec, argc, argv, &a);
    if (rc >= 0) return rc;
    const int random = seed >= 0 || config;
    if (random && (seed < 0 || !config)) return zaya_flags_usage_error(&spec, "--config and --random-init go together");
    if (random && a.npos) return zaya_flags_usage_error(&spec, "give a checkpoint or --config with --random-init, not both");
    if (!random && (rc = one_positional(&spec, &a, "checkpoint")) >= 0) return rc;
    if (!out) return zaya_flags_usage_error(&spec, "-o DIR is required");
    zaya_hf_export_opts o = {ZAYA_ST_BF16, shard, tok};
    if (!strcmp(dtype, "f32")) o.dtype = ZAYA_ST_F32;
    else if (strcmp(dtype, "bf16")) return zaya_flags_usage_error(&spec, "--dtype must be bf16 or f32, got '%s'", dtype);
    if (shard <= 0) return zaya_flags_usage_error(&spec, "--shard-size must be positive");
    int n = 0;
    zaya_config cfg;
    if (random && zaya_config_resolve(config, &cfg) != ZAYA_OK) return zaya_cli_error("ckpt export-hf", NULL);
    zaya_status st = random ? zaya_ckpt_export_hf_random(&cfg, (uint64_t)seed, out, &o, &n)
                            : zaya_ckpt_export_hf(a.pos[0], out, &o, &n);
    if (st != ZAYA_OK) return zaya_cli_error("ckpt export-hf", NULL);
    printf("exported %d shard%s (%s) to %s\n", n, n == 1 ? "" : "s", dtype, out);
    return 0;
}

int zaya_cmd_ckpt_import_hf(int argc, char **argv) {
    const char *out = NULL, *skip = NULL;
    zaya_flag flags[] = {
        {"out", 'o', ZAYA_FLAG_STRING, &out, "DIR", "checkpoint root to write (required)"},
        {"skip-mode", 0, ZAYA_FLAG_STRING, &skip, "identity|zero",
         "output of skip-routed tokens (default: zaya_skip_mode of config.json; zero, as transformers, without it)"},
    };
    zaya_cmd_spec spec = {"ckpt import-hf", "import a Hugging Face directory (HF or original 80-half-layer layout)",
                          "HF_DIR -o DIR",
                          "Reads config.json (HF or legacy Megatron keys) and *.safetensors (f32, bf16 or f16) and writes "
                          "a zaya checkpoint DIR/step-00000000 with the model and its config, usable by training and "
                          "generation. A config.json without the zaya key \"zaya_skip_mode\" (as transformers writes "
                          "it) gets skip mode zero, the output of transformers' Zaya for tokens routed to the skip "
                          "class; the mode used is printed.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args a;
    int rc = zaya_flags_parse(&spec, argc, argv, &a);
    if (rc >= 0) return rc;
    if ((rc = one_positional(&spec, &a, "Hugging Face directory")) >= 0) return rc;
    if (!out) return zaya_flags_usage_error(&spec, "-o DIR is required");
    zaya_hf_import_opts io = {-1};
    if (skip && !strcmp(skip, "identity")) io.skip_mode = ZAYA_SKIP_IDENTITY;
    else if (skip && !strcmp(skip, "zero")) io.skip_mode = ZAYA_SKIP_ZERO;
    else if (skip) return zaya_flags_usage_error(&spec, "--skip-mode must be identity or zero, got '%s'", skip);
    zaya_hf_import_result r;
    if (zaya_ckpt_import_hf(a.pos[0], out, &io, &r) != ZAYA_OK) return zaya_cli_error("ckpt import-hf", NULL);
    const char *why = !strcmp(r.skip_source, "config.json") ? "zaya_skip_mode in config.json"
                      : !strcmp(r.skip_source, "option") ? "--skip-mode"
                      : "config.json has no zaya_skip_mode: transformers' Zaya outputs zero for skip-routed tokens";
    printf("skip mode: %s (%s)\n", r.skip_mode == ZAYA_SKIP_ZERO ? "zero" : "identity", why);
    printf("imported %s (%s layout) into %s\n", a.pos[0], r.original_layout ? "original half-layer" : "HF", r.step_dir);
    return 0;
}
