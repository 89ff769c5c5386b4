/* `zaya size info|check|predict|search`: calculators, sizing rules, step-time / latency prediction and
 * the MoE shape search over a hardware profile. */
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/size.h"

static int one_config(const zaya_cmd_spec *spec, const zaya_args *args, const char **path) {
    if (args->npos != 1) return zaya_flags_usage_error(spec, "expected one CONFIG (an HF config.json), got %d arguments", args->npos);
    *path = args->pos[0];
    return -1;
}

/* Largest --seq any command accepts: beyond it every figure is an extrapolation of nothing. */
#define SEQ_MAX ((int64_t)1 << 26)



/* Memory layout flags shared by info, check and predict. */
typedef struct mem_flags {
    int dp, zero, recompute;
    int64_t micro_batch;
    const char *grad, *master, *optimizer;
    int cp; /* 0: 1 */
} mem_flags;

static zaya_status mem_from_flags(const mem_flags *m, int64_t seq, zaya_size_mem_opts *o) {
    zaya_size_mem_opts_default(o);
    if (m->dp <= 0) return zaya_error_set(ZAYA_EINVAL, "--dp must be positive");
    if (m->cp < 0 || m->cp > 4096) return zaya_error_set(ZAYA_EINVAL, "--cp must be in [1, 4096], got %d", m->cp);
    if (m->cp > 1 && seq % m->cp != 0)
        return zaya_error_set(ZAYA_EINVAL, "--seq %lld is not divisible by --cp %d", (long long)seq, m->cp);
    if (m->zero < 0 || m->zero > 3) return zaya_error_set(ZAYA_EINVAL, "--zero must be 0..3");
    if (m->micro_batch <= 0 || m->micro_batch > (1 << 20)) return zaya_error_set(ZAYA_EINVAL, "--micro-batch/--batch must be 1..1048576");
    o->dp = m->dp;
    o->cp = m->cp > 0 ? m->cp : 1;
    o->zero_stage = m->zero;
    o->micro_batch = m->micro_batch;
    o->recompute = m->recompute;
    o->seq = seq;
    ZAYA_TRY(zaya_size_mem_parse_dtype(m->grad, 0, &o->grad_bytes));
    ZAYA_TRY(zaya_size_mem_parse_dtype(m->master, 1, &o->master_bytes));
    if (!strcmp(m->optimizer, "adamw")) o->optimizer = ZAYA_SIZE_OPT_ADAMW;
    else if (!strcmp(m->optimizer, "muon")) o->optimizer = ZAYA_SIZE_OPT_MUON;
    else return zaya_error_set(ZAYA_EINVAL, "--optimizer '%s' (use adamw or muon)", m->optimizer);
    return ZAYA_OK;
}


#define MEM_FLAGS(m)                                                                                                      \
    {"dp", 0, ZAYA_FLAG_INT, &(m).dp, "N", "data-parallel degree (default 1)"},                                           \
        {"cp", 0, ZAYA_FLAG_INT, &(m).cp, "N", "context-parallel degree: each sequence over N ranks, ZeRO over DP x CP (default 1)"}, \
        {"zero", 0, ZAYA_FLAG_INT, &(m).zero, "S", "ZeRO stage 0..3 (default 1)"},                                        \
        {"grad-dtype", 0, ZAYA_FLAG_STRING, &(m).grad, "fp32|bf16", "gradient dtype (default fp32: 18 B/param; bf16: the ZeRO paper's 16)"}, \
        {"master-dtype", 0, ZAYA_FLAG_STRING, &(m).master, "fp32|none", "master weight copy (default fp32)"},            \
        {"optimizer", 0, ZAYA_FLAG_STRING, &(m).optimizer, "NAME", "adamw | muon (default adamw)"},                       \
        {"recompute", 0, ZAYA_FLAG_BOOL, &(m).recompute, NULL, "full activation recomputation"}


/* ------------------------------------------------------------------ info */

int zaya_cmd_size_info(int argc, char **argv) {
    int64_t seq = 4096;
    const char *out = NULL;
    mem_flags mf = {1, 1, 0, 1, "fp32", "fp32", "adamw", 1};
    const zaya_flag flags[] = {
        {"seq", 0, ZAYA_FLAG_I64, &seq, "T", "sequence length for the attention FLOPs and memory (default 4096)"},
        {"micro-batch", 0, ZAYA_FLAG_I64, &mf.micro_batch, "B", "sequences per rank for the activation memory (default 1)"},
        MEM_FLAGS(mf),
        ZAYA_FLAG_OUTDIR(&out, "none: also write info.json there"),
    };
    const zaya_cmd_spec spec = {"size info", "exact parameter table, FLOPs, KV cache and training memory of a config",
                                "[options] CONFIG", "CONFIG is an HF config.json; the families are listed in docs/size.md.",
                                flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    const char *path = NULL;
    if ((rc = one_config(&spec, &args, &path)) >= 0) return rc;
    if (seq <= 0 || seq > SEQ_MAX) return zaya_flags_usage_error(&spec, "--seq must be 1..%lld", (long long)SEQ_MAX);
    zaya_size_mem_opts mo;
    zaya_status s = mem_from_flags(&mf, seq, &mo);
    if (s != ZAYA_OK) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    return zaya_size_info_report(path, &mo, out, stdout) == ZAYA_OK ? 0 : zaya_cli_error("size info", NULL);
}

/* ------------------------------------------------------------------ check */

/* Inference weight format (src/size/quant.c): check's inference memory line, predict's memory and decode. */
#define WEIGHT_FLAGS(fmt, scope)                                                                                       \
    {"weights", 0, ZAYA_FLAG_STRING, fmt, "bf16|fp8|int8|int4|mxfp4",                                                   \
     "inference weight format, scales included (default: the compute dtype, nothing quantized)"},                     \
        {"quantize", 0, ZAYA_FLAG_STRING, scope, "auto|experts|linear",                                                 \
         "what --weights quantizes: experts = MoE expert weights, linear = every block projection (default auto: "      \
         "experts for mxfp4 on an MoE, else linear)"}

int zaya_cmd_size_check(int argc, char **argv) {
    const char *hwname = NULL, *profile = NULL, *out = NULL, *wfmt = NULL, *wscope = NULL;
    int64_t batch = 1, seq = 4096;
    int tp = 1;
    mem_flags mf = {1, 1, 0, 1, "fp32", "fp32", "adamw", 1};
    const zaya_flag flags[] = {
        {"hw", 0, ZAYA_FLAG_STRING, &hwname, "PROFILE", "mi300x | h100 | h200 | host | path/to/profile.json (required)"},
        {"profile", 0, ZAYA_FLAG_STRING, &profile, "FILE", "profile.json for --hw host (default $ZAYA_PROFILE or ./profile.json)"},
        {"batch", 0, ZAYA_FLAG_I64, &batch, "B", "micro-batch in sequences per rank (default 1)"},
        {"seq", 0, ZAYA_FLAG_I64, &seq, "T", "sequence length (default 4096)"},
        {"tp", 0, ZAYA_FLAG_INT, &tp, "N", "intended tensor-parallel degree for the KV-head rule (default 1)"},
        MEM_FLAGS(mf),
        WEIGHT_FLAGS(&wfmt, &wscope),
        ZAYA_FLAG_OUTDIR(&out, "none: also write check.json there"),
    };
    const zaya_cmd_spec spec = {"size check", "sizing rules and per-GEMM efficiency of a config on a hardware profile",
                                "--hw PROFILE [options] CONFIG", NULL, flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    const char *path = NULL;
    if ((rc = one_config(&spec, &args, &path)) >= 0) return rc;
    if (!hwname) return zaya_flags_usage_error(&spec, "--hw is required");
    if (batch <= 0 || tp <= 0) return zaya_flags_usage_error(&spec, "--batch and --tp must be positive");
    if (seq <= 0 || seq > SEQ_MAX) return zaya_flags_usage_error(&spec, "--seq must be 1..%lld", (long long)SEQ_MAX);
    mf.micro_batch = batch;
    zaya_size_mem_opts mo;
    zaya_status s = mem_from_flags(&mf, seq, &mo);
    if (s != ZAYA_OK) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    zaya_size_check_opts co = {.config = path, .hw = hwname, .profile = profile, .out = out, .batch = batch, .seq = seq,
                               .tp = tp, .mem = mo};
    if (zaya_size_weights_parse(wfmt, wscope, &co.weights) != ZAYA_OK)
        return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    return zaya_size_check_report(&co, stdout) == ZAYA_OK ? 0 : zaya_cli_error("size check", NULL);
}

/* ------------------------------------------------------------------ predict */

int zaya_cmd_size_predict(int argc, char **argv) {
    const char *hwname = NULL, *profile = NULL, *out = NULL, *dtype = NULL, *wfmt = NULL, *wscope = NULL;
    int64_t batch = 1, seq = 4096, max_batch = 64;
    mem_flags mf = {1, 1, 0, 1, "fp32", "fp32", "adamw", 1};
    double overlap = 0;
    const char *cp_layout = "zigzag";
    const zaya_flag flags[] = {
        {"hw", 0, ZAYA_FLAG_STRING, &hwname, "PROFILE", "mi300x | h100 | h200 | host | path/to/profile.json (required)"},
        {"profile", 0, ZAYA_FLAG_STRING, &profile, "FILE", "profile.json for --hw host"},
        {"batch", 0, ZAYA_FLAG_I64, &batch, "B", "training micro-batch in sequences per rank (default 1)"},
        {"cp-layout", 0, ZAYA_FLAG_STRING, &cp_layout, "zigzag|contiguous", "how --cp splits a sequence (default zigzag, the trainer's)"},
        {"seq", 0, ZAYA_FLAG_I64, &seq, "T", "sequence length / decode context (default 4096)"},
        MEM_FLAGS(mf),
        {"dtype", 0, ZAYA_FLAG_STRING, &dtype, "bf16|f32", "GEMM precision (default: bf16, the trainer's, where the profile has it)"},
        {"overlap", 0, ZAYA_FLAG_DOUBLE, &overlap, "F", "fraction of DP communication hidden behind backward (default 0)"},
        {"max-batch", 0, ZAYA_FLAG_I64, &max_batch, "N", "largest inference batch in the latency table (default 64)"},
        WEIGHT_FLAGS(&wfmt, &wscope),
        ZAYA_FLAG_OUTDIR(&out, "none: also write predict.json there"),
    };
    const zaya_cmd_spec spec = {"size predict", "training step time and inference latency of a config on a profile",
                                "--hw PROFILE [options] CONFIG", NULL, flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    const char *path = NULL;
    if ((rc = one_config(&spec, &args, &path)) >= 0) return rc;
    if (!hwname) return zaya_flags_usage_error(&spec, "--hw is required");
    if (batch <= 0 || max_batch <= 0 || max_batch > (1 << 20)) return zaya_flags_usage_error(&spec, "--batch and --max-batch must be positive (--max-batch at most 1048576)");
    if (seq <= 0 || seq > SEQ_MAX) return zaya_flags_usage_error(&spec, "--seq must be 1..%lld", (long long)SEQ_MAX);
    if (!(overlap >= 0 && overlap <= 1)) return zaya_flags_usage_error(&spec, "--overlap must be in [0, 1]");
    mf.micro_batch = batch;
    zaya_size_mem_opts mo;
    zaya_status s = mem_from_flags(&mf, seq, &mo);
    if (s != ZAYA_OK) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    int contiguous = 0;
    if (!strcmp(cp_layout, "contiguous")) contiguous = 1;
    else if (strcmp(cp_layout, "zigzag")) return zaya_flags_usage_error(&spec, "--cp-layout must be zigzag or contiguous, got '%s'", cp_layout);
    zaya_size_predict_opts po = {.config = path, .hw = hwname, .profile = profile, .out = out, .dtype = dtype,
                                 .batch = batch, .seq = seq, .max_batch = max_batch, .overlap = overlap, .mem = mo,
                                 .cp_contiguous = contiguous};
    if (zaya_size_weights_parse(wfmt, wscope, &po.weights) != ZAYA_OK)
        return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    return zaya_size_predict_report(&po, stdout) == ZAYA_OK ? 0 : zaya_cli_error("size predict", NULL);
}

/* ------------------------------------------------------------------ search */


int zaya_cmd_size_search(int argc, char **argv) {
    const char *hwname = NULL, *profile = NULL, *out = "results/size-search", *total = NULL, *active = NULL, *ref = NULL;
    zaya_size_search_opts o;
    zaya_size_search_opts_default(&o);
    int top = 15;
    double tol_pct = 3;
    const zaya_flag flags[] = {
        {"hw", 0, ZAYA_FLAG_STRING, &hwname, "PROFILE", "mi300x | h100 | h200 | host | path/to/profile.json (required)"},
        {"profile", 0, ZAYA_FLAG_STRING, &profile, "FILE", "profile.json for --hw host"},
        {"total-params", 0, ZAYA_FLAG_STRING, &total, "X", "non-embedding total budget, e.g. 8.3B (required)"},
        {"active-params", 0, ZAYA_FLAG_STRING, &active, "Y", "non-embedding active budget, e.g. 760M (required)"},
        {"tolerance", 0, ZAYA_FLAG_DOUBLE, &tol_pct, "PCT", "allowed deviation from each budget in percent (default 3)"},
        {"seq", 0, ZAYA_FLAG_I64, &o.seq, "T", "training sequence length and decode context (default 4096)"},
        {"batch", 0, ZAYA_FLAG_I64, &o.batch, "B", "training micro-batch in sequences per rank (default 4)"},
        {"dp", 0, ZAYA_FLAG_INT, &o.dp, "N", "data-parallel degree (default 1)"},
        {"vocab", 0, ZAYA_FLAG_I64, &o.vocab, "V", "vocabulary (default 262272, ZAYA1's)"},
        {"compare", 0, ZAYA_FLAG_STRING, &ref, "CONFIG", "explain the choice against this config's shape"},
        {"top", 0, ZAYA_FLAG_INT, &top, "N", "rows of the ranking to print (default 15)"},
        ZAYA_FLAG_OUTDIR(&out, "results/size-search"),
    };
    const zaya_cmd_spec spec = {"size search", "search MoE shapes at a parameter budget: Pareto front of training "
                                "tokens/s vs decode latency", "--hw PROFILE --total-params X --active-params Y [options]",
                                "Candidates use the ZAYA1 block (CCA, ZAYA1 router, top-k experts, head_dim 128) and "
                                "obey the sizing rules; budgets exclude embeddings.", flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (!hwname || !total || !active) return zaya_flags_usage_error(&spec, "--hw, --total-params and --active-params are required");
    if (zaya_size_parse_count(total, &o.total_params) != ZAYA_OK ||
        zaya_size_parse_count(active, &o.active_params) != ZAYA_OK)
        return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    if (o.seq <= 0 || o.batch <= 0 || o.dp <= 0 || o.vocab <= 0 || top < 0 || !(tol_pct > 0 && tol_pct < 50))
        return zaya_flags_usage_error(&spec, "--seq, --batch, --dp, --vocab must be positive and --tolerance in (0, 50)");
    zaya_size_search_report_opts so = {.hw = hwname, .profile = profile, .out = out, .compare = ref, .search = o,
                                       .tolerance_pct = tol_pct, .top = top};
    return zaya_size_search_report(&so, stdout) == ZAYA_OK ? 0 : zaya_cli_error("size search", NULL);
}
