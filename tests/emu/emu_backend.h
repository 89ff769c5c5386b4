/* The CUDA compute backend (src/gpu/be_*.cu) built for the CPU through tests/emu (emu.h): the real
 * zaya_gpu_backend_init code path over an emulated device cuda:0. Test-only. */
#ifndef ZAYA_TESTS_EMU_BACKEND_H
#define ZAYA_TESTS_EMU_BACKEND_H

#include "zaya/backend.h"

#ifdef __cplusplus
extern "C" {
#endif
zaya_status zaya_emu_backend_init(zaya_backend **out);
/* Kernel launches run so far (every launch of every emulated backend). */
long zaya_emu_launch_count(void);
/* Grid-stride launches (grids from zaya_cuda_be_blocks) get at most `blocks` blocks (0: as computed),
 * so their loops run several rounds on small inputs. */
void zaya_emu_set_grid_cap(int blocks);
/* The warp size the device reports (32; 64 as on MI300X): init sizes its default block from it. */
void zaya_emu_set_warp_size(int lanes);
#ifdef __cplusplus
}
#endif

#endif
