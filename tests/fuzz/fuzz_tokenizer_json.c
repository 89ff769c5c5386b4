/* A Hugging Face tokenizer.json (zaya_tokenizer_load); an accepted tokenizer must encode the input
 * bytes and decode them back exactly. */
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
    FUZZ_ASSERT(zaya_tokenizer_encode(t, (const char *)data, n, &ids, &nids, &cap) == ZAYA_OK);
    FUZZ_ASSERT(zaya_tokenizer_decode(t, ids, nids, &text, &len) == ZAYA_OK);
    FUZZ_ASSERT(len == n && (n == 0 || !memcmp(text, data, n)));
    free(ids);
    free(text);
    zaya_tokenizer_free(t);
    return 0;
}
