/* zaya_gpu_backend_init on a machine without a usable GPU (every build): a build without CUDA answers
 * ZAYA_EUNSUPPORTED "built without CUDA", a CUDA build with no device (or past the last one) the
 * selection's "N CUDA devices visible"; *out is NULL either way, and asking for the CPU is EINVAL.
 * With a device, cuda:0 comes up with its name and its core operations, and is freed. */
#include <string.h>

#include "testutil.h"
#include "zaya/backend.h"
#include "zaya/gpu.h"

static void test_unusable(zaya_device d, zaya_status want, const char *msg) {
    zaya_backend *be = (zaya_backend *)&be; /* not NULL: init must clear it */
    zaya_status st = zaya_gpu_backend_init(d, &be);
    CHECK(st == want, "init cuda:%d: status %d, want %d (%s)", d.index, (int)st, (int)want, zaya_error_message());
    CHECK(be == NULL, "init cuda:%d failed but left *out set", d.index);
    CHECK(strstr(zaya_error_message(), msg) != NULL, "message '%s' lacks '%s'", zaya_error_message(), msg);
}

int main(void) {
    const int n = zaya_gpu_device_count();
    if (!zaya_gpu_built()) {
        CHECK(n == 0, "stub: %d devices", n);
        test_unusable((zaya_device){ZAYA_DEVICE_CUDA, 0}, ZAYA_EUNSUPPORTED,
                      "the CUDA compute backend: zaya was built without CUDA");
    } else {
        char want[64];
        snprintf(want, sizeof want, "device cuda:%d: %d CUDA device%s visible", n, n, n == 1 ? "" : "s");
        test_unusable((zaya_device){ZAYA_DEVICE_CUDA, n}, ZAYA_EINVAL, want);
        test_unusable((zaya_device){ZAYA_DEVICE_CPU, 0}, ZAYA_EINVAL, "device cpu is not a GPU");
    }
    if (n > 0) {
        zaya_backend *be = NULL;
        zaya_status st = zaya_gpu_backend_init((zaya_device){ZAYA_DEVICE_CUDA, 0}, &be);
        CHECK(st == ZAYA_OK && be != NULL, "init cuda:0: %s", zaya_error_message());
        if (be) {
            CHECK(!strcmp(be->name, "cuda:0") && !be->is_host, "name %s is_host %d", be->name, be->is_host);
            CHECK(be->alloc && be->free && be->upload && be->download && be->sync && be->reserve && be->destroy &&
                      be->gemm && be->gemm_batched && be->to_bf16 && be->adamw && be->colsum_add,
                  "core operations missing");
            void *p = (void *)1;
            CHECK(be->alloc(be, &p, 0) == ZAYA_OK && p == NULL, "alloc of 0 bytes");
            CHECK(be->sync(be) == ZAYA_OK, "sync: %s", zaya_error_message());
            be->destroy(be);
        }
    }
    return th_finish("gpu_backend_stub");
}
