# Device tests (label gpu): each exits 77, which ctest reports as skipped, when no CUDA device is
# visible (CI on CPU); scripts/gpu-check.sh runs them on a GPU machine (docs/gpu.md).
add_executable(gpu_check ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_check.c)
target_link_libraries(gpu_check PRIVATE zaya_testutil)
add_test(NAME gpu_check COMMAND gpu_check)
set_tests_properties(gpu_check PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
# The three benchmarks, short, with their own checks (bench gemm / mem / coll fail on a wrong value).
add_test(NAME gpu_bench_short COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/bench_short.sh $<TARGET_FILE:zaya>)
set_tests_properties(gpu_bench_short PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
# The CUDA compute backend's GEMMs, bf16 conversion and pending errors (src/gpu/be_core.cu).
add_executable(test_be_gemm ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_be_gemm.c)
target_link_libraries(test_be_gemm PRIVATE zaya_testutil)
add_test(NAME gpu_be_gemm COMMAND test_be_gemm)
set_tests_properties(gpu_be_gemm PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
# The CUDA backend's norm, activation, embedding, router, expert and loss operations against the CPU
# functions they are named after (tests/gpu/test_be_ops.c).
add_executable(test_be_ops ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_be_ops.c)
target_link_libraries(test_be_ops PRIVATE zaya_testutil)
add_test(NAME be_ops COMMAND test_be_ops)
set_tests_properties(be_ops PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
# The CUDA backend's CCA pieces and attention against the CPU kernels.
add_executable(test_be_cca ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_be_cca.c)
target_link_libraries(test_be_cca PRIVATE zaya_testutil)
add_test(NAME be_cca COMMAND test_be_cca)
set_tests_properties(be_cca PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
