# The compute backends (include/zaya/backend.h). tests/backend_check.c runs every operation on a
# backend under test and on the CPU reference backend with the same inputs; backend_check_cpu runs it
# CPU against CPU, once as is (every check passes) and once with one operation broken on purpose
# (exactly that check fails), so the harness is shown to catch a wrong operation; backend_cuda runs it
# CUDA against CPU (label gpu: exits 77, skipped, without a CUDA device).
add_library(zaya_backend_check STATIC ${CMAKE_CURRENT_SOURCE_DIR}/backend_check.c)
target_link_libraries(zaya_backend_check PUBLIC zaya_testutil)
add_executable(backend_check_cpu ${CMAKE_CURRENT_SOURCE_DIR}/backend_check_cpu.c)
target_link_libraries(backend_check_cpu PRIVATE zaya_backend_check)
add_test(NAME backend_check_cpu COMMAND backend_check_cpu)
set_tests_properties(backend_check_cpu PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=2")
add_executable(test_backend_cuda ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_backend_cuda.c)
target_link_libraries(test_backend_cuda PRIVATE zaya_backend_check)
add_test(NAME backend_cuda COMMAND test_backend_cuda)
set_tests_properties(backend_cuda PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
