# Inference commands: CLI behaviour and errors (unit), and the decode/prefill benchmark (bench).
add_test(NAME infer_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/infer_cli.sh $<TARGET_FILE:zaya>
                                ${CMAKE_CURRENT_BINARY_DIR}/infer_cli_work)
set_tests_properties(infer_cli PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=2")

add_test(NAME infer_bench COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/infer_cli.sh $<TARGET_FILE:zaya>
                                  ${CMAKE_CURRENT_BINARY_DIR}/infer_bench_work bench)
set_tests_properties(infer_bench PROPERTIES LABELS bench TIMEOUT 600)
