# zaya bench gemm through the real binary: config/flag errors and a tiny model run (unit), and a
# quick sweep with plots (bench).
add_test(NAME bench_gemm_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bench_gemm_cli.sh $<TARGET_FILE:zaya> model)
set_tests_properties(bench_gemm_cli PROPERTIES LABELS unit TIMEOUT 120)
add_test(NAME bench_gemm_sweep COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bench_gemm_cli.sh $<TARGET_FILE:zaya> sweep)
set_tests_properties(bench_gemm_sweep PROPERTIES LABELS bench TIMEOUT 300)
