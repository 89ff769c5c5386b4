/* Model config.json (zaya_config_from_json) and everything derived from an accepted config: the
 * tensor layout, parameter counts, FLOP/KV accounting and the JSON round trip. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "model/internal.h"
#include "zaya/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    cJSON *j = fuzz_parse_json(data, size);
    if (!j) return 0;
    zaya_config c;
    if (zaya_config_from_json(j, &c) == ZAYA_OK) {
        fuzz_accept();
        zaya_model_costs k = zaya_model_costs_at(&c, 4096, 2);
        FUZZ_ASSERT(isfinite(k.training_flops) && k.training_flops > 0 && k.kv_bytes_per_token > 0 && k.state_bytes_per_seq >= 0);
        /* Every block has the same tensors, and validation bounds the total in 128-bit arithmetic: the
         * table is walked at up to 64 blocks (a 4096-block table takes ~0.3 s per input here). */
        if (c.num_hidden_layers > 64) c.num_hidden_layers = 64;
        zaya_tensor_info *t = NULL;
        int nt = 0;
        int64_t nf = 0;
        FUZZ_ASSERT(zaya_layout_build_public(&c, &t, &nt, &nf) == ZAYA_OK);
        int64_t sum = 0, end = 0;
        for (int i = 0; i < nt; i++) {
            FUZZ_ASSERT(t[i].numel > 0 && t[i].offset >= end && t[i].nmatrix > 0);
            end = t[i].offset + t[i].numel;
            sum += t[i].numel;
        }
        FUZZ_ASSERT(end <= nf && nf <= ZAYA_CONFIG_MAX_PARAMS);
        free(t);
        zaya_param_counts pc = zaya_model_count_params(&c);
        FUZZ_ASSERT(pc.total + pc.buffers == sum && pc.active_non_embedding > 0 && pc.active_non_embedding <= pc.non_embedding);
        cJSON *o = zaya_config_to_json(&c);
        zaya_config back;
        FUZZ_ASSERT(zaya_config_from_json(o, &back) == ZAYA_OK && zaya_config_same_architecture(&c, &back));
        cJSON_Delete(o);
    }
    cJSON_Delete(j);
    return 0;
}
