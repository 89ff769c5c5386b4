/* The backend check harness (tests/backend_check.c) on the CPU backend against another CPU backend:
 * every check passes (both compute the same bits), and with one operation broken on purpose (a
 * wrapper whose rmsnorm_forward adds 1e-3 to its output) exactly that check fails, so the harness
 * catches a wrong operation and does not blame the others. */
#include <stdio.h>
#include <string.h>

#include "backend_check.h"
#include "testutil.h"

static zaya_backend *g_cpu;

/* The CPU operation, then every output element off by 1e-3 (host memory: plain pointers). */
static void broken_rmsnorm_forward(zaya_backend *be, float *y, float *rstd, const float *x, const float *w, int64_t n,
                                   int64_t d, float eps) {
    g_cpu->rmsnorm_forward(be, y, rstd, x, w, n, d, eps);
    for (int64_t i = 0; i < n * d; i++) y[i] += 1e-3f;
}

int main(void) {
    zaya_backend *ref = NULL;
    CHECK(zaya_backend_cpu_init(&g_cpu) == ZAYA_OK && zaya_backend_cpu_init(&ref) == ZAYA_OK, "cpu backends: %s",
          zaya_error_message());
    if (!g_cpu || !ref) return th_finish("backend_check_cpu");
    CHECK(zaya_backend_check_count() >= 50, "%d checks", zaya_backend_check_count());

    /* the operation list (zaya/backend.h): every slot filled, every operation checked, names round-trip */
    CHECK(g_cpu->version == ZAYA_BACKEND_VERSION, "cpu backend version %d", g_cpu->version);
    for (int op = 0; op < ZAYA_BACKEND_NOPS; op++)
        CHECK(zaya_backend_supports(g_cpu, (zaya_backend_op)op), "the cpu backend leaves %s empty",
              zaya_backend_op_name((zaya_backend_op)op));
    CHECK(!zaya_backend_supports(g_cpu, ZAYA_BACKEND_NOPS) && zaya_backend_op_name(ZAYA_BACKEND_NOPS) == NULL,
          "an id past the list is no operation");
    const int unc = zaya_backend_check_uncovered();
    CHECK(unc < 0, "no backend check covers %s", unc >= 0 ? zaya_backend_op_name((zaya_backend_op)unc) : "");
    CHECK(zaya_backend_check_op_of(0) < 0 && !strcmp(zaya_backend_check_name(0), "memory"), "check 0 is memory");
    {
        zaya_backend holed = *g_cpu;
        holed.xent = NULL;
        CHECK(!zaya_backend_supports(&holed, ZAYA_OP_xent) && zaya_backend_supports(&holed, ZAYA_OP_gemm),
              "supports() reads the slot");
        int xi = -1;
        for (int i = 0; i < zaya_backend_check_count(); i++)
            if (!strcmp(zaya_backend_check_name(i), "xent")) xi = i;
        double err, bound;
        CHECK(xi >= 0 && zaya_backend_check_op(&holed, ref, xi, &err, &bound) == -1 &&
                  strstr(zaya_error_message(), "does not implement xent"),
              "an empty slot fails its check by name: %s", zaya_error_message());
    }

    printf("-- the CPU backend against another CPU backend:\n");
    int failed = zaya_backend_check_all(g_cpu, ref, stdout);
    CHECK(failed == 0, "%d checks fail CPU against CPU", failed);

    /* the same table with one operation broken (it shares the CPU backend's state) */
    zaya_backend broken = *g_cpu;
    snprintf(broken.name, sizeof broken.name, "cpu-broken");
    broken.rmsnorm_forward = broken_rmsnorm_forward;
    printf("-- with rmsnorm_forward off by 1e-3:\n");
    failed = zaya_backend_check_all(&broken, ref, stdout);
    CHECK(failed == 1, "%d checks fail with one broken operation (want 1)", failed);
    int found = 0;
    for (int i = 0; i < zaya_backend_check_count(); i++) {
        double err, bound;
        const char *name = zaya_backend_check_name(i);
        const int r = zaya_backend_check_op(&broken, ref, i, &err, &bound);
        const int is_broken = strcmp(name, "rmsnorm_forward") == 0;
        found += is_broken;
        CHECK(r == (is_broken ? 0 : 1), "check %s: result %d (err %.3e, bound %.0e)", name, r, err, bound);
        if (is_broken) CHECK(err > 1e-4 && err < 1e-2, "the broken check's error %.3e is the planted 1e-3", err);
    }
    CHECK(found == 1, "the harness has an rmsnorm_forward check");
    zaya_backend_free(g_cpu);
    zaya_backend_free(ref);
    return th_finish("backend_check_cpu");
}
