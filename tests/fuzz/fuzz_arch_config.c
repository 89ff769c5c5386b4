/* Sizing architecture config.json (zaya_size_arch_from_config over the HF families) and its validation. */
#include "fuzz_common.h"
#include "zaya/size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    cJSON *j = fuzz_parse_json(data, size);
    if (!j) return 0;
    zaya_size_arch a;
    if (zaya_size_arch_from_config(j, &a) == ZAYA_OK && zaya_size_arch_validate(&a) == ZAYA_OK) fuzz_accept();
    cJSON_Delete(j);
    return 0;
}
