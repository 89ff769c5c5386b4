/* A multiple-choice eval file (zaya_mc_load: JSONL, tokenized with a small fixed tokenizer). */
#include <stdlib.h>

#include "fuzz_common.h"
#include "zaya/infer.h"

static zaya_tokenizer *g_tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    fuzz_quiet();
    if (fuzz_make_tokenizer(&g_tok) != ZAYA_OK) {
        fprintf(stderr, "fuzz_eval_jsonl: tokenizer: %s\n", zaya_error_message());
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    const char *path = fuzz_write("eval.jsonl", data, size);
    zaya_mc_set set;
    zaya_mc_format fmt;
    if (zaya_mc_load(path, ZAYA_MC_AUTO, g_tok, 96, &set, &fmt) != ZAYA_OK) return 0;
    if (set.n > 0) fuzz_accept();
    for (int64_t i = 0; i < set.n; i++) {
        const zaya_mc_item *it = &set.items[i];
        FUZZ_ASSERT(it->nchoices >= 1 && it->label >= 0 && it->label < it->nchoices);
        for (int k = 0; k < it->nchoices; k++)
            FUZZ_ASSERT(it->nctx[k] >= 1 && it->nctx[k] <= it->nseq[k] && it->nseq[k] <= 96 && it->common <= it->nctx[k]);
    }
    zaya_mc_free(&set);
    return 0;
}
