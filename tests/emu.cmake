# The CUDA compute backend (src/gpu/be_*.cu, unmodified) run on the CPU through the emulator of
# tests/emu (emu.h says what it models and what it cannot): rewrite.py turns each be_*.cu into C++,
# g++ compiles it with the emulator's runtime, cuBLASLt and gpu_rt.h in front of src/gpu's, and
# test_cuda_emulated runs the backend check table and the engine against the CPU reference. Needs no
# nvcc and no GPU: it runs in every build. The backend's public names are renamed (-D) so they never
# meet libzaya_gpu's; the entry point is zaya_emu_backend_init (tests/emu/emu_backend.h).
# Not in the sanitizer build: AddressSanitizer does not follow the emulator's makecontext/swapcontext
# fibers (it warns of false positives, and its stack bookkeeping makes the run minutes long); the
# Release build runs it in every CI run.
if(CMAKE_BUILD_TYPE STREQUAL "Sanitize")
  return()
endif()
enable_language(CXX)
set(ZAYA_EMU_DIR ${CMAKE_CURRENT_SOURCE_DIR}/emu)
set(ZAYA_EMU_GEN "")
foreach(f core optim ops cca attention planted)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/emu/be_${f}.cpp)
  set(in ${PROJECT_SOURCE_DIR}/src/gpu/be_${f}.cu)
  if(f STREQUAL "planted")
    set(in ${ZAYA_EMU_DIR}/planted.cu)
  endif()
  add_custom_command(OUTPUT ${out}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/emu
                     COMMAND python3 ${ZAYA_EMU_DIR}/rewrite.py ${in} ${out}
                     DEPENDS ${in} ${ZAYA_EMU_DIR}/rewrite.py
                     COMMENT "emulated CUDA: rewriting be_${f}.cu" VERBATIM)
  if(NOT f STREQUAL "planted")
    list(APPEND ZAYA_EMU_GEN ${out})
  endif()
endforeach()
set(ZAYA_EMU_RENAMES zaya_gpu_backend_init=zaya_emu_gpu_backend_init zaya_gpu_select=zaya_emu_gpu_select
    zaya_gpu_check=zaya_emu_gpu_check zaya_cuda_be_fail=zaya_emu_cuda_be_fail
    zaya_cuda_be_failf=zaya_emu_cuda_be_failf zaya_cuda_be_check_launch=zaya_emu_cuda_be_check_launch
    zaya_cuda_be_blocks=zaya_emu_cuda_be_blocks zaya_cuda_be_install_core=zaya_emu_cuda_be_install_core
    zaya_cuda_be_install_optim=zaya_emu_cuda_be_install_optim zaya_cuda_be_install_ops=zaya_emu_cuda_be_install_ops
    zaya_cuda_be_install_cca=zaya_emu_cuda_be_install_cca
    zaya_cuda_be_install_attention=zaya_emu_cuda_be_install_attention)
add_library(zaya_emu_backend STATIC ${ZAYA_EMU_DIR}/emu.cpp ${ZAYA_EMU_GEN})
set_target_properties(zaya_emu_backend PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
# tests/emu first: its gpu/gpu_rt.h replaces src/gpu's. No FMA contraction (the C code has none).
target_include_directories(zaya_emu_backend BEFORE PRIVATE ${ZAYA_EMU_DIR} ${PROJECT_SOURCE_DIR}/include
                           ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(zaya_emu_backend PRIVATE ${ZAYA_EMU_RENAMES})
target_compile_options(zaya_emu_backend PRIVATE -include ${ZAYA_EMU_DIR}/emu.h -ffp-contract=off -Wno-unknown-pragmas
                       -Wno-unused-function -Wno-unused-variable -Wno-sign-compare -Wno-clobbered)
target_link_libraries(zaya_emu_backend PUBLIC zaya_lib)
add_executable(test_cuda_emulated ${ZAYA_EMU_DIR}/test_cuda_emulated.c)
target_include_directories(test_cuda_emulated PRIVATE ${ZAYA_EMU_DIR})
target_link_libraries(test_cuda_emulated PRIVATE zaya_emu_backend zaya_backend_check)
set_target_properties(test_cuda_emulated PROPERTIES LINKER_LANGUAGE CXX)
add_test(NAME cuda_emulated COMMAND test_cuda_emulated)
set_tests_properties(cuda_emulated PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=2")
# The emulator itself against planted kernel bugs (a race, unwritten shared memory, a divergent
# barrier, a shared-memory limit, a copy in the wrong direction): each must be caught.
add_executable(test_emu_planted ${ZAYA_EMU_DIR}/test_emu_planted.c ${CMAKE_CURRENT_BINARY_DIR}/emu/be_planted.cpp)
target_include_directories(test_emu_planted BEFORE PRIVATE ${ZAYA_EMU_DIR})
target_compile_options(test_emu_planted PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-include ${ZAYA_EMU_DIR}/emu.h>)
set_target_properties(test_emu_planted PROPERTIES LINKER_LANGUAGE CXX CXX_STANDARD 17)
target_link_libraries(test_emu_planted PRIVATE zaya_emu_backend zaya_testutil)
add_test(NAME cuda_emulated_planted COMMAND test_emu_planted)
set_tests_properties(cuda_emulated_planted PROPERTIES LABELS unit TIMEOUT 60)
