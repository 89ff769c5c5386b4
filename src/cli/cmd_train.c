/* zaya train: pretrain a ZAYA1 model through a curriculum run (the built-in one by default). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "train/ft.h"
#include "zaya/balance.h"
#include "zaya/gpu.h"
#include "zaya/train.h"

int zaya_cmd_train(int argc, char **argv) {
    zaya_train_opts o;
    zaya_train_opts_default(&o);
    const char *dtype = "bf16", *optimizer = "muon", *dp = "zero1", *bal_rule = "adam", *bal_units = "spread", *bal_mode = "forward", *cp_layout = "zigzag";
    int threads = 0, sync_save = 0;
    zaya_flag flags[] = {
        {"config", 'c', ZAYA_FLAG_STRING, &o.config, "SPEC", "model preset or config.json (default: zaya1-tiny)"},
        {"run", 'r', ZAYA_FLAG_STRING, &o.run_path, "FILE", "curriculum run file (default: the built-in 3-phase run)"},
        {"seed", 0, ZAYA_I64_IN(&o.seed, 0, ZAYA_FLAG_NO_MAX), "S", "seed of the run: initialization and data order (default: the run file's \"seed\", 1234 for the built-in run)"},
        {"data", 'd', ZAYA_FLAG_STRING, &o.data_dir, "DIR", "shards + tokenizer.json (default: build the built-in corpus in OUT/data)"},
        ZAYA_FLAG_OUTDIR(&o.out_dir, "out/train"),
        {"dtype", 0, ZAYA_FLAG_STRING, &dtype, "f32|bf16", "GEMM operand precision (f32 accumulation); master weights, optimizer state and statistics stay f32 (default: bf16)"},
        ZAYA_FLAG_THREADS(&threads),
        {"device", 0, ZAYA_FLAG_STRING, &o.device, "cpu|cuda[:N]", "the engine's backend: the CPU one, or a CUDA device (one device, no CP; default: cpu)"},
        {"engine", 0, ZAYA_FLAG_BOOL, &o.engine, NULL, "deprecated, does nothing: every step runs on the engine (a warning says so)"},
        {"max-steps", 0, ZAYA_I64_IN(&o.max_steps, 0, ZAYA_FLAG_NO_MAX), "N", "stop after N steps (default: the whole run)"},
        {"micro-batch", 0, ZAYA_I64_IN(&o.micro_batch, 0, ZAYA_FLAG_NO_MAX), "N", "sequences per forward/backward; gradients accumulate (default: whole batch)"},
        {"cp-layout", 0, ZAYA_FLAG_STRING, &cp_layout, "zigzag|contiguous", "how a sequence is split over its CP ranks: two chunks per rank paired so that causal attention work is equal (default), or one contiguous chunk per rank"},
        {"cp", 0, ZAYA_INT_IN(&o.cp, 1, 4096), "N", "context parallelism: each sequence split over N consecutive ranks (world = DP x CP) in phases whose run file sets no \"cp\", >= 1 (default 1)"},
        {"optimizer", 0, ZAYA_FLAG_STRING, &optimizer, "muon|adamw", "Muon for hidden matrices + AdamW, or AdamW everywhere (default: muon)"},
        {"lr-scale", 0, ZAYA_FLAG_DOUBLE, &o.lr_scale, "X", "multiply the run's learning rates (default 1)"},
        {"weight-decay", 0, ZAYA_FLAG_DOUBLE, &o.weight_decay, "X", "decoupled weight decay of matrices (default 0.1)"},
        {"clip", 0, ZAYA_FLAG_DOUBLE, &o.clip, "X", "global gradient-norm clip, 0 = off (default 1)"},
        {"spike-z", 0, ZAYA_FLAG_DOUBLE, &o.spike_z, "Z", "skip updates whose loss/grad-norm robust z-score exceeds Z, 0 = off (default 6)"},
        {"balance-lr", 0, ZAYA_FLAG_DOUBLE, &o.balance_lr, "X", "step of the expert-balancing bias controller, in --balance-units (default 0.25)"},
        {"balance-warmup", 0, ZAYA_I64_IN(&o.balance_warmup, 0, ZAYA_FLAG_NO_MAX), "N", "steps over which that step ramps up from 0 (default 0)"},
        {"balance-rule", 0, ZAYA_FLAG_STRING, &bal_rule, "adam|sign", "bias update: ZAYA1's Adam on the load error, or DeepSeek-V3's fixed-step sign rule (default: adam)"},
        {"balance-iters", 0, ZAYA_INT_IN(&o.balance_iters, 0, 4096), "N", "iterations on a batch's own scores, recounting its routing in between: per MoE block and forward, the controller's update then at most N-1 refinement recounts, stopping once balanced (--balance-mode forward, default 512), or controller updates per step (step, default 8)"},
        {"balance-drift", 0, ZAYA_FLAG_DOUBLE, &o.balance_drift, "X", "gain of the controller's drift compensation, 0 = off (default 1)"},
        {"balance-mode", 0, ZAYA_FLAG_STRING, &bal_mode, "forward|step", "run the controller inside every training forward, per MoE block on the batch's own scores before its experts are chosen, or after the step (default: forward)"},
        {"balance-units", 0, ZAYA_FLAG_STRING, &bal_units, "spread|absolute", "step in units of the token-to-token spread of the router scores, or in probability units (default: spread)"},
        {"eval-every", 0, ZAYA_I64_IN(&o.eval_every, 0, ZAYA_FLAG_NO_MAX), "N", "validation every N steps and at phase starts (default 100)"},
        {"eval-batches", 0, ZAYA_I64_IN(&o.eval_batches, 1, ZAYA_FLAG_NO_MAX), "N", "batches per source per validation (default 4)"},
        {"log-every", 0, ZAYA_I64_IN(&o.log_every, 1, ZAYA_FLAG_NO_MAX), "N", "print a step line every N steps (default 10)"},
        {"samples", 0, ZAYA_I64_IN(&o.samples, 0, 5), "N", "generated samples at the end, at most 5 (default 3)"},
        {"sample-tokens", 0, ZAYA_I64_IN(&o.sample_tokens, 1, ZAYA_FLAG_NO_MAX), "N", "tokens per sample (default 96)"},
        {"peak-gflops", 0, ZAYA_FLAG_DOUBLE, &o.peak_gflops, "X", "matmul peak for MFU (default: --profile's, else this host's cached peak, else measured at start-up and cached; the source is printed)"},
        {"profile", 0, ZAYA_FLAG_STRING, &o.profile, "FILE", "machine profile (zaya bench all's profile.json) whose GEMM peak MFU is computed against (default: $ZAYA_PROFILE)"},
        {"dp", 0, ZAYA_FLAG_STRING, &dp, "zero1|allreduce", "data parallelism under mpirun: ZeRO-1 or plain all-reduce (default: zero1)"},
        {"ckpt-dir", 0, ZAYA_FLAG_STRING, &o.ckpt_dir, "DIR", "checkpoint root; training resumes from its latest good checkpoint (default: OUT/ckpt)"},
        {"save-every", 0, ZAYA_I64_IN(&o.save_every, 0, ZAYA_FLAG_NO_MAX), "N", "checkpoint every N steps; always at the end (default: end only)"},
        {"keep-last", 0, ZAYA_INT_IN(&o.keep_last, 0, ZAYA_FLAG_NO_MAX), "K", "keep the newest K checkpoints, 0 = all (default 3)"},
        {"keep-every", 0, ZAYA_INT_IN(&o.keep_every, 0, ZAYA_FLAG_NO_MAX), "M", "also keep checkpoints of steps divisible by M (default: none)"},
        {"sync-save", 0, ZAYA_FLAG_BOOL, &sync_save, NULL, "write checkpoints synchronously (default: in the background)"},
        {"no-resume", 0, ZAYA_FLAG_BOOL, &o.no_resume, NULL, "start fresh even if OUT/ckpt holds a checkpoint"},
        {"quiet", 'q', ZAYA_FLAG_BOOL, &o.quiet, NULL, "no step lines (metrics.jsonl is still written)"},
    };
    zaya_cmd_spec spec = {"train", "pretrain a ZAYA1 model through a curriculum run", "[options]",
                          "With no options: zaya1-tiny on the built-in corpus (the fortunes package's prose and the C "
                          "headers in /usr/include) through the 3-phase run (broad text, upweighted code, context "
                          "extension). Writes metrics.jsonl, run.json, summary.json, PNG plots and samples.txt into OUT.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (o.device) {
        zaya_device dv;
        if (zaya_device_parse(o.device, &dv) != ZAYA_OK)
            return zaya_flags_usage_error(&spec, "--device must be cpu, cuda or cuda:N, got '%s'", o.device);
        if (dv.kind != ZAYA_DEVICE_CPU && o.engine)
            return zaya_flags_usage_error(&spec, "--engine selects the engine on the CPU; with --device %s it is implied", o.device);
    }
    if (!strcmp(dtype, "f32")) o.dtype = ZAYA_DTYPE_F32;
    else if (!strcmp(dtype, "bf16")) o.dtype = ZAYA_DTYPE_BF16;
    else return zaya_flags_usage_error(&spec, "--dtype must be f32 or bf16, got '%s'", dtype);
    zaya_balance_rule br;
    zaya_balance_units bu;
    zaya_balance_mode bm;
    if (zaya_balance_rule_parse(bal_rule, &br) != ZAYA_OK || zaya_balance_units_parse(bal_units, &bu) != ZAYA_OK ||
        zaya_balance_mode_parse(bal_mode, &bm) != ZAYA_OK)
        return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    o.balance_mode = bm;
    o.balance_rule = br;
    o.balance_units = bu;
    if (!(o.balance_lr >= 0) || o.balance_warmup < 0)
        return zaya_flags_usage_error(&spec, "--balance-lr and --balance-warmup must be >= 0");
    if (o.balance_iters < 0 || o.balance_iters > 4096)
        return zaya_flags_usage_error(&spec, "--balance-iters must be in [1, 4096] (0: the mode's default), got %d",
                                      o.balance_iters);
    if (!(o.balance_drift >= 0 && o.balance_drift <= 2))
        return zaya_flags_usage_error(&spec, "--balance-drift must be in [0, 2], got %g", o.balance_drift);
    if (!strcmp(optimizer, "muon")) o.optimizer_muon = 1;
    else if (!strcmp(optimizer, "adamw")) o.optimizer_muon = 0;
    else return zaya_flags_usage_error(&spec, "--optimizer must be muon or adamw, got '%s'", optimizer);
    if (!strcmp(cp_layout, "zigzag")) o.cp_contiguous = 0;
    else if (!strcmp(cp_layout, "contiguous")) o.cp_contiguous = 1;
    else return zaya_flags_usage_error(&spec, "--cp-layout must be zigzag or contiguous, got '%s'", cp_layout);
    if (!(o.peak_gflops >= 0)) return zaya_flags_usage_error(&spec, "--peak-gflops must be >= 0 (0: the profile, cache or start-up measurement), got %g", o.peak_gflops);
    if (o.max_steps < 0 || o.micro_batch < 0 || o.eval_batches <= 0 || o.log_every <= 0 || o.lr_scale <= 0)
        return zaya_flags_usage_error(&spec, "counts and --lr-scale must be positive");
    o.threads = threads;
    o.async_save = !sync_save;
    if (!strcmp(dp, "zero1")) o.dp_allreduce = 0;
    else if (!strcmp(dp, "allreduce")) o.dp_allreduce = 1;
    else return zaya_flags_usage_error(&spec, "--dp must be zero1 or allreduce, got '%s'", dp);

    zaya_train_result r;
    if (zaya_train_run(&o, &r) != ZAYA_OK) {
        return zaya_cli_error("train", NULL);
    }
    if (r.preempted) { /* a distinct status: the supervisor (or a batch system) knows to run it again */
        if (r.rank == 0)
            printf("preempted after %lld steps: checkpoint saved; run the same command again to resume\n",
                   (long long)r.steps);
        return ZAYA_FT_EXIT_PREEMPTED;
    }
    if (r.rank != 0) return 0; /* rank 0 reports for everyone */
    printf("trained %lld steps, %lld tokens in %.1f s (%.0f tokens/s); %lld updates skipped\n", (long long)r.steps,
           (long long)r.tokens, r.seconds, r.tokens_per_s, (long long)r.skipped_updates);
    if (r.start_step > 0)
        printf("resumed at step %lld: the run has %lld steps, %lld tokens; the losses below are the whole run's\n",
               (long long)r.start_step, (long long)r.run_steps, (long long)r.run_tokens);
    if (r.world > 1 && r.steps > 0) {
        double wait = (r.comm_wait_s + r.gather_s) / (double)r.steps, block = r.comm_blocking_s / (double)r.steps;
        double hidden = block > 0 ? 1.0 - (r.comm_wait_s / (double)r.steps < block ? r.comm_wait_s / (double)r.steps : block) / block : 0;
        char split[96];
        if (r.cp > 1) snprintf(split, sizeof split, "%d ranks (data parallel %d x context parallel %d)", r.world, r.dp_size, r.cp);
        else snprintf(split, sizeof split, "data parallel over %d ranks", r.world);
        printf("%s: the gradient collectives cost %.1f ms/step run blocking; after backward a "
               "rank waited %.1f ms/step (%.1f%% of step time, rank skew included); %.0f%% of the reduction was hidden "
               "behind backward\n",
               split, 1e3 * block, 1e3 * wait, 100.0 * wait * (double)r.steps / r.seconds, 100.0 * hidden);
    }
    if (r.steps > 0)
        printf("validation loss %.4f -> %.4f; train loss %.4f -> %.4f\n", r.first_val_loss, r.last_val_loss,
               r.first_train_loss, r.last_train_loss);
    else
        printf("nothing left to train: the run is complete (validation loss %.4f)\n", r.last_val_loss);
    cJSON *j = cJSON_CreateObject();
    /* the run's totals (a resumed run's earlier attempts included) and this attempt's */
    cJSON_AddNumberToObject(j, "steps", (double)r.run_steps);
    cJSON_AddNumberToObject(j, "tokens", (double)r.run_tokens);
    cJSON_AddNumberToObject(j, "resumed_at_step", (double)r.start_step);
    cJSON_AddNumberToObject(j, "steps_this_attempt", (double)r.steps);
    cJSON_AddNumberToObject(j, "tokens_this_attempt", (double)r.tokens);
    cJSON_AddNumberToObject(j, "seconds", r.seconds);
    cJSON_AddNumberToObject(j, "tokens_per_s", r.tokens_per_s);
    cJSON_AddNumberToObject(j, "skipped_updates", (double)r.skipped_updates);
    cJSON_AddNumberToObject(j, "first_val_loss", r.first_val_loss);
    cJSON_AddNumberToObject(j, "last_val_loss", r.last_val_loss);
    cJSON_AddNumberToObject(j, "first_train_loss", r.first_train_loss);
    cJSON_AddNumberToObject(j, "last_train_loss", r.last_train_loss);
    char path[4096];
    if (zaya_path_join(path, sizeof path, o.out_dir, "summary.json") == ZAYA_OK && zaya_json_write_file(path, j, 1) == ZAYA_OK)
        printf("results in %s (metrics.jsonl, summary.json, run.json, *.png, samples.txt)\n", o.out_dir);
    cJSON_Delete(j);
    return 0;
}
