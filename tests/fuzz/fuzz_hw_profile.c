/* A machine profile.json (zaya_size_hw_from_profile_json, written by `zaya bench all`), then the GEMM and
 * collective estimates that read its tables. */
#include "fuzz_common.h"
#include "zaya/size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    cJSON *j = fuzz_parse_json(data, size);
    if (!j) return 0;
    zaya_size_hw hw;
    if (zaya_size_hw_from_profile_json(j, "fuzz.json", &hw) == ZAYA_OK) {
        fuzz_accept();
        zaya_size_gemm_est e;
        zaya_size_gemm_estimate(&hw, 4096, 2048, 2048, &e);
        zaya_size_gemm_estimate(&hw, 1, 7, 3, &e);
        for (int c = 0; c < ZAYA_SIZE_COLL_N; c++) (void)zaya_size_coll_time(&hw, c, 2, 1e6);
        zaya_size_hw_free(&hw);
    }
    cJSON_Delete(j);
    return 0;
}
