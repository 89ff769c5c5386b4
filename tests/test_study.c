/* Study variants are checked before any run: every built-in variant loads; an override key the config
 * reader does not read, a value it refuses and a value it would change are errors naming the key. */
#include <string.h>

#include "testutil.h"
#include "zaya/log.h"
#include "zaya/study.h"

static void expect_error(const char *overrides, const char *needle) {
    const zaya_study_def *base = zaya_study_find("router");
    zaya_study_def d = *base;
    d.variants[0].overrides = overrides;
    zaya_status s = zaya_study_check_variant(&d, &d.variants[0]);
    CHECK(s != ZAYA_OK && strstr(zaya_error_message(), needle), "%s: expected an error naming %s, got %d '%s'",
          overrides, needle, (int)s, s == ZAYA_OK ? "" : zaya_error_message());
}

int main(void) {
    zaya_log_set_level(ZAYA_LOG_ERROR);
    int n = 0;
    const zaya_study_def *all = zaya_study_builtin(&n);
    CHECK(n == 5, "five built-in studies, got %d", n);
    for (int i = 0; i < n; i++)
        for (int v = 0; v < all[i].nvariants; v++)
            CHECK(zaya_study_check_variant(&all[i], &all[i].variants[v]) == ZAYA_OK, "%s/%s: %s", all[i].name,
                  all[i].variants[v].name, zaya_error_message());
    expect_error("{\"zaya_no_such_key\": 1}", "'zaya_no_such_key' is not read");
    expect_error("{\"zaya_router\": \"bogus\"}", "zaya_router");
    expect_error("{\"zaya_mlp\": \"dense\", \"zaya_dense_intermediate_size\": 0}", "zaya_dense_intermediate_size");
    expect_error("{\"head_dim\": 2.5}", "head_dim");
    expect_error("[1, 2]", "overrides");
    return th_finish("test_study");
}
