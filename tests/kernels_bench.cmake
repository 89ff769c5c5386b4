# Bandwidth of the memory-bound kernels against STREAM triad (label bench; not part of `unit`).
add_executable(bench_kernels_bw ${CMAKE_CURRENT_LIST_DIR}/bench_kernels_bw.c)
target_link_libraries(bench_kernels_bw PRIVATE zaya_lib)
add_test(NAME bench_kernels_bw COMMAND bench_kernels_bw --threads 2)
set_tests_properties(bench_kernels_bw PROPERTIES LABELS bench TIMEOUT 120)
