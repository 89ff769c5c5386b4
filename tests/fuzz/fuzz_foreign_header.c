/* Other trainers' token-file headers: the input as a Megatron .idx (zaya_megatron_idx_parse, then a
 * full zaya_shard_open_ext over a .bin of the size the index asks for) and as an llm.c token file
 * (zaya_llmc_header_parse, then zaya_shard_open_ext). Accepted files must give a document index within
 * the tokens and documents that read back as ids below the vocabulary. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "zaya/shard.h"

enum { VOCAB = 100, EOS = 0 }; /* 100 fits every dtype, int8 included */

static void check_shard(const zaya_shard *s) {
    FUZZ_ASSERT(s->hdr.vocab_size == VOCAB && s->hdr.eos_id == EOS);
    int32_t buf[64];
    for (uint64_t d = 0; d < s->hdr.doc_count && d < 64; d++) {
        uint64_t a = s->doc_index[d], b = s->doc_index[d + 1];
        FUZZ_ASSERT(a <= b && b <= s->hdr.token_count);
        FUZZ_ASSERT(zaya_shard_doc_start(s, d) + (b - a) <= s->file_tokens);
        uint64_t n = b - a < 64 ? b - a : 64;
        zaya_shard_read(s, zaya_shard_doc_start(s, d), n, buf);
        for (uint64_t i = 0; i < n; i++) FUZZ_ASSERT(buf[i] >= 0 && buf[i] < VOCAB);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    const zaya_shard_open_opts o = {.vocab_size = VOCAB, .eos_id = EOS};
    zaya_megatron_idx ix;
    if (zaya_megatron_idx_parse("in.idx", data, size, &ix) == ZAYA_OK) {
        fuzz_accept();
        FUZZ_ASSERT(zaya_megatron_doc_token(&ix, 0) == 0 && zaya_megatron_doc_token(&ix, ix.documents) == ix.tokens);
        for (uint64_t d = 0; d < ix.documents && d < 1024; d++)
            FUZZ_ASSERT(zaya_megatron_doc_token(&ix, d) <= zaya_megatron_doc_token(&ix, d + 1));
        const uint64_t bytes = ix.tokens * zaya_token_dtype_size(ix.dtype);
        if (bytes <= (1u << 20)) { /* a .bin of zeros (id 0) of exactly the size the index asks for */
            void *bin = calloc(1, bytes ? bytes : 1);
            FUZZ_ASSERT(bin);
            fuzz_write("mg.idx", data, size);
            const char *p = fuzz_write("mg.bin", bin, bytes);
            free(bin);
            zaya_shard s;
            FUZZ_ASSERT(zaya_shard_open_ext(p, &o, &s) == ZAYA_OK);
            FUZZ_ASSERT(s.format == ZAYA_SHARD_MEGATRON && s.hdr.doc_count == ix.documents);
            check_shard(&s);
            zaya_shard_close(&s);
        }
    }
    zaya_llmc_header h;
    if (zaya_llmc_header_parse("in.bin", data, size, &h) == ZAYA_OK) {
        fuzz_accept();
        FUZZ_ASSERT(size == ZAYA_LLMC_HEADER_BYTES + h.tokens * zaya_token_dtype_size(h.dtype));
        zaya_shard s;
        const char *p = fuzz_write("lc.bin", data, size);
        if (zaya_shard_open_ext(p, &o, &s) == ZAYA_OK) { /* ids >= VOCAB are refused */
            FUZZ_ASSERT(s.format == ZAYA_SHARD_LLMC && s.file_tokens == h.tokens);
            check_shard(&s);
            zaya_shard_close(&s);
        }
    }
    return 0;
}
