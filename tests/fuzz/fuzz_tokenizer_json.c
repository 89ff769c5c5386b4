/* A Hugging Face tokenizer.json (zaya_tokenizer_load); an accepted tokenizer must encode the input
 * bytes in both special-token modes to ids in range, decode them, and give the bytes back exactly when
 * it is byte-exact (byte-level vocabularies). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "zaya/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    const char *path = fuzz_write("tokenizer.json", data, size);
    zaya_tokenizer *t = NULL;
    if (zaya_tokenizer_load(path, &t) != ZAYA_OK) return 0;
    fuzz_accept();
    size_t n = size < 512 ? size : 512, nids = 0, cap = 0, len = 0;
    int32_t *ids = NULL;
    char *text = NULL;
    FUZZ_ASSERT(zaya_tokenizer_encode_flags(t, (const char *)data, n, ZAYA_ENCODE_ADD_SPECIAL | ZAYA_ENCODE_PARSE_SPECIAL,
                                            &ids, &nids, &cap) == ZAYA_OK);
    for (size_t i = 0; i < nids; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < zaya_tokenizer_vocab_size(t));
    FUZZ_ASSERT(zaya_tokenizer_decode(t, ids, nids, &text, &len) == ZAYA_OK);
    free(text);
    nids = 0;
    FUZZ_ASSERT(zaya_tokenizer_encode(t, (const char *)data, n, &ids, &nids, &cap) == ZAYA_OK);
    for (size_t i = 0; i < nids; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < zaya_tokenizer_vocab_size(t));
    FUZZ_ASSERT(zaya_tokenizer_decode(t, ids, nids, &text, &len) == ZAYA_OK);
    if (zaya_tokenizer_is_byte_exact(t)) FUZZ_ASSERT(len == n && (n == 0 || !memcmp(text, data, n)));
    free(ids);
    free(text);
    zaya_tokenizer_free(t);
    return 0;
}
