# zaya bench kernels / model / all: CLI error paths (unit) and short runs of each benchmark (bench).
add_test(NAME bench_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bench_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(bench_cli PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME bench_kernels_quick COMMAND $<TARGET_FILE:zaya> bench kernels --quick --threads 2
         -o ${CMAKE_CURRENT_BINARY_DIR}/bench_kernels_out)
set_tests_properties(bench_kernels_quick PROPERTIES LABELS bench TIMEOUT 120)
add_test(NAME bench_model_quick COMMAND $<TARGET_FILE:zaya> bench model --config zaya1-tiny --batch 2 --seq 64 -n 1
         --threads 2 -o ${CMAKE_CURRENT_BINARY_DIR}/bench_model_out)
set_tests_properties(bench_model_quick PROPERTIES LABELS bench TIMEOUT 180)
add_test(NAME bench_all_profile COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bench_all.sh $<TARGET_FILE:zaya>
         ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(bench_all_profile PROPERTIES LABELS bench TIMEOUT 180)
