/* Weight formats for inference sizing: bf16, fp8 (E4M3, one fp32 scale per tensor), int8 (one bf16
 * scale per output channel), int4 (groups of 128 inputs, one bf16 scale each) and MXFP4 (E2M1 in
 * blocks of 32 inputs with one E8M0 byte scale: 4.25 bits per parameter), and the rule that says
 * which tensors a format quantizes (docs/size.md). */
#include <stdio.h>
#include <string.h>

#include "zaya/size.h"

static const char *const format_names[] = {"default", "bf16", "fp8", "int8", "int4", "mxfp4"};

zaya_status zaya_size_weights_parse(const char *format, const char *scope, zaya_size_weights *out) {
    memset(out, 0, sizeof *out);
    int f = -1;
    for (int i = 1; i < (int)(sizeof format_names / sizeof *format_names); i++)
        if (format && !strcmp(format, format_names[i])) f = i;
    if (format && f < 0)
        return zaya_error_set(ZAYA_EINVAL, "weight format '%s' is not one of bf16, fp8, int8, int4, mxfp4", format);
    out->format = format ? (zaya_size_wformat)f : ZAYA_SIZE_WF_DEFAULT;
    if (!scope || !strcmp(scope, "auto")) out->scope = ZAYA_SIZE_WQ_AUTO;
    else if (!strcmp(scope, "experts")) out->scope = ZAYA_SIZE_WQ_EXPERTS;
    else if (!strcmp(scope, "linear")) out->scope = ZAYA_SIZE_WQ_LINEAR;
    else return zaya_error_set(ZAYA_EINVAL, "quantization scope '%s' is not one of auto, experts, linear", scope);
    return ZAYA_OK;
}

const char *zaya_size_weights_name(const zaya_size_weights *w) {
    return w && (int)w->format >= 0 && w->format <= ZAYA_SIZE_WF_MXFP4 ? format_names[w->format] : "default";
}

static int quantized_format(const zaya_size_weights *w) { return w && w->format >= ZAYA_SIZE_WF_FP8; }

/* auto: MXFP4 quantizes the experts (as gpt-oss publishes its checkpoint) when there are experts; the other
 * formats, and MXFP4 on a dense model, quantize every linear weight of the blocks. */
zaya_size_wscope zaya_size_weights_scope(const zaya_size_weights *w, const zaya_size_arch *a) {
    if (!quantized_format(w)) return ZAYA_SIZE_WQ_AUTO;
    if (w->scope != ZAYA_SIZE_WQ_AUTO) return w->scope;
    return w->format == ZAYA_SIZE_WF_MXFP4 && a->experts > 0 && a->n_moe_layers > 0 ? ZAYA_SIZE_WQ_EXPERTS
                                                                                      : ZAYA_SIZE_WQ_LINEAR;
}

static int is_expert_weight(const zaya_size_param_row *r) {
    return r->matrix && !strncmp(r->name, "experts.", 8);
}

int zaya_size_weights_quantizes(const zaya_size_weights *w, const zaya_size_arch *a, const zaya_size_param_row *r) {
    if (!quantized_format(w) || !r->matrix || r->embedding) return 0;
    if (zaya_size_weights_scope(w, a) == ZAYA_SIZE_WQ_EXPERTS) return is_expert_weight(r);
    /* linear: the 2-D projections of attention, MLPs, experts and shared experts; the router, the
     * embeddings and head, norms, biases, convolutions and scales stay bf16 */
    return strncmp(r->name, "router.", 7) != 0 && strcmp(r->name, "shared_expert.gate") != 0;
}

static double ceil_div(int64_t a, int64_t b) { return (double)((a + b - 1) / b); }

double zaya_size_weights_row_bytes(const zaya_size_weights *w, const zaya_size_arch *a, const zaya_size_param_row *r,
                                   double plain_bytes) {
    if (!zaya_size_weights_quantizes(w, a, r)) return (double)r->each * plain_bytes;
    const int64_t rows = r->rows_, cols = r->cols_; /* [out, in]: groups run along the input (reduction) dim */
    switch (w->format) {
    case ZAYA_SIZE_WF_FP8: return (double)r->each + 4.0;                       /* + one fp32 scale per tensor */
    case ZAYA_SIZE_WF_INT8: return (double)r->each + 2.0 * (double)rows;        /* + bf16 per output channel */
    case ZAYA_SIZE_WF_INT4: return ceil_div(r->each, 2) + 2.0 * (double)rows * ceil_div(cols, 128);
    case ZAYA_SIZE_WF_MXFP4: return ceil_div(r->each, 2) + 1.0 * (double)rows * ceil_div(cols, 32);
    default: return (double)r->each * plain_bytes;
    }
}

void zaya_size_weights_bytes(const zaya_size_arch *a, const zaya_size_weights *w, double plain_bytes,
                            zaya_size_weight_bytes *out) {
    memset(out, 0, sizeof *out);
    zaya_size_params p;
    zaya_size_count_params(a, &p);
    const double kept = quantized_format(w) ? 2.0 : plain_bytes; /* a chosen format keeps the rest in bf16 */
    for (int i = 0; i < p.nrows; i++) {
        const zaya_size_param_row *r = &p.rows[i];
        if (r->mtp) continue; /* not loaded for inference */
        const double b = zaya_size_weights_row_bytes(w, a, r, kept) * (double)r->instances;
        if (zaya_size_weights_quantizes(w, a, r)) {
            out->quantized_params += (double)r->total;
            out->quantized_bytes += b;
        } else {
            out->kept_params += (double)r->total;
            out->kept_bytes += b;
        }
        out->total += b;
    }
    out->bits_per_quantized = out->quantized_params > 0 ? 8 * out->quantized_bytes / out->quantized_params : 0;
}

void zaya_size_weights_describe(const zaya_size_weights *w, const zaya_size_arch *a, char *buf, size_t cap) {
    static const char *const fmt[] = {"", "bf16", "fp8 E4M3 + one fp32 scale per tensor (8 bits)",
                                      "int8 + one bf16 scale per output channel (8 bits)",
                                      "int4 + one bf16 scale per 128 inputs (4.125 bits)",
                                      "MXFP4: E2M1 + one E8M0 scale per 32 inputs (4.25 bits)"};
    if (!quantized_format(w)) {
        snprintf(buf, cap, "%s weights, nothing quantized", w && w->format == ZAYA_SIZE_WF_BF16 ? "bf16" : "compute-dtype");
        return;
    }
    const zaya_size_wscope s = zaya_size_weights_scope(w, a);
    snprintf(buf, cap, "%s on the %s; embeddings, head, router, norms, biases and convolutions bf16", fmt[w->format],
             s == ZAYA_SIZE_WQ_EXPERTS ? "MoE expert weights" : "linear weights (attention, MLP, experts)");
}
