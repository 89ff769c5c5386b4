# The CUDA module and the small process (docs/gpu.md, "The CUDA module"): the binary's NEEDED entries,
# CPU commands that load no CUDA library, device commands that fail at once (exit 1, naming the
# missing module or library) when the module is hidden; and the peak RSS of commands that load
# nothing large. Every build: without CUDA the device commands must say "built without CUDA".
if(ZAYA_HAVE_CUDA)
  set(ZAYA_MODULE_BUILT 1)
else()
  set(ZAYA_MODULE_BUILT 0)
endif()
add_test(NAME cuda_module COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cuda_module.sh $<TARGET_FILE:zaya> ${CMAKE_C_COMPILER}
         ${ZAYA_MODULE_BUILT})
set_tests_properties(cuda_module PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=1")
# AddressSanitizer's shadow memory is most of a sanitized process: the bound is for real builds.
if(NOT CMAKE_BUILD_TYPE STREQUAL "Sanitize")
  add_test(NAME small_process COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/small_process.py $<TARGET_FILE:zaya> 50)
  set_tests_properties(small_process PROPERTIES LABELS unit TIMEOUT 120)
endif()
