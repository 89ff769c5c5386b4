/* Pre-start health check: a GEMM whose every input, product and partial sum is a small integer, so
 * any correct kernel returns exactly the int64 reference; a wrong value means a broken node (bad
 * core, bad memory, miscompiled kernel), not rounding. */
#include <stdint.h>
#include <stdlib.h>

#include "zaya/bf16.h"
#include "zaya/ft.h"
#include "zaya/matmul.h"

zaya_status zaya_health_check_gemm(void) {
    enum { M = 67, N = 45, K = 96 }; /* odd sizes reach the kernels' edge paths */
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
    uint16_t *ab = malloc(sizeof(uint16_t) * M * K), *bb = malloc(sizeof(uint16_t) * K * N);
    zaya_status s = ZAYA_OK;
    if (!a || !b || !c || !ab || !bb) {
        s = zaya_error_set(ZAYA_ENOMEM, "health check buffers");
        goto done;
    }
    /* values in [-8, 8]: exact in bf16; |sum| <= 96 * 64 is exact in f32 */
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7 + 3) % 17 - 8);
    for (int i = 0; i < K * N; i++) b[i] = (float)((i * 5 + 1) % 17 - 8);
    for (int i = 0; i < M * K; i++) ab[i] = zaya_f32_to_bf16(a[i]);
    for (int i = 0; i < K * N; i++) bb[i] = zaya_f32_to_bf16(b[i]);
    for (int pass = 0; pass < 2 && s == ZAYA_OK; pass++) {
        if (pass == 0) zaya_matmul_f32(0, 0, M, N, K, a, b, c, 0.0f);
        else zaya_matmul_bf16(0, 0, M, N, K, ab, bb, c, 0.0f);
        for (int i = 0; i < M && s == ZAYA_OK; i++)
            for (int j = 0; j < N; j++) {
                int64_t ref = 0;
                for (int k = 0; k < K; k++) ref += (int64_t)a[i * K + k] * (int64_t)b[k * N + j];
                if (c[i * N + j] != (float)ref) {
                    s = zaya_error_set(ZAYA_EINVAL, "GEMM self-test (%s) failed: C[%d][%d] = %g, exact value %lld",
                                       pass ? "bf16" : "f32", i, j, (double)c[i * N + j], (long long)ref);
                    break;
                }
            }
    }
done:
    free(a);
    free(b);
    free(c);
    free(ab);
    free(bb);
    return s;
}
