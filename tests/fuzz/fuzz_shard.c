/* A token shard (.ztok, zaya_shard_open with checksum verification), then reads of its documents. */
#include <string.h>

#include "fuzz_common.h"
#include "zaya/shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    const char *path = fuzz_write("in.ztok", data, size);
    zaya_shard s;
    if (zaya_shard_open(path, 1, &s) != ZAYA_OK) return 0;
    fuzz_accept();
    int32_t buf[256];
    for (uint64_t d = 0; d < s.hdr.doc_count && d < 64; d++) {
        uint64_t a = s.doc_index[d], b = s.doc_index[d + 1];
        FUZZ_ASSERT(a <= b && b <= s.hdr.token_count);
        uint64_t n = b - a < 256 ? b - a : 256;
        zaya_shard_read(&s, a, n, buf);
        for (uint64_t i = 0; i < n; i++) FUZZ_ASSERT(buf[i] >= 0 && (uint64_t)buf[i] < s.hdr.vocab_size);
    }
    zaya_shard_close(&s);
    return 0;
}
