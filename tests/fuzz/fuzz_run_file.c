/* A run file (zaya_run_parse): phases, mixtures, batch ramps, schedules; then the step mapping at
 * the first, a middle and the last step, and the resolved JSON round trip. */
#include <math.h>

#include "fuzz_common.h"
#include "zaya/curriculum.h"

static void check_step(const zaya_run *run, int64_t step) {
    zaya_step_info si;
    FUZZ_ASSERT(zaya_run_step(run, step, &si) == ZAYA_OK);
    FUZZ_ASSERT(si.global_batch >= 1 && si.seq_len >= 2 && isfinite(si.lr) && si.lr >= 0);
    FUZZ_ASSERT(si.tokens_before >= 0 && si.tokens_before < run->total_tokens);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    cJSON *j = fuzz_parse_json(data, size);
    if (!j) return 0;
    zaya_run run;
    if (zaya_run_parse(j, "fuzz.json", &run) == ZAYA_OK) {
        fuzz_accept();
        FUZZ_ASSERT(run.total_steps > 0 && run.total_tokens > 0);
        check_step(&run, 0);
        check_step(&run, run.total_steps / 2);
        check_step(&run, run.total_steps - 1);
        cJSON *o = NULL;
        FUZZ_ASSERT(zaya_run_to_json(&run, &o) == ZAYA_OK);
        zaya_run back;
        FUZZ_ASSERT(zaya_run_parse(o, "resolved", &back) == ZAYA_OK);
        FUZZ_ASSERT(back.total_steps == run.total_steps && back.total_tokens == run.total_tokens);
        zaya_run_free(&back);
        cJSON_Delete(o);
        zaya_run_free(&run);
    }
    cJSON_Delete(j);
    return 0;
}
