# `zaya data` commands on shards built from this repository's own sources (byte-level ids).
add_test(NAME data_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/data_cli.sh $<TARGET_FILE:zaya>
         $<TARGET_FILE:test_prepare> ${PROJECT_SOURCE_DIR})
set_tests_properties(data_cli PROPERTIES LABELS unit TIMEOUT 120)
# data prepare throughput on ~60 MB of JSONL (plain, gzip, zstd) with a zaya-trained BPE (bench).
add_test(NAME data_prepare_bench COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/data_prepare_bench.sh $<TARGET_FILE:zaya>
                                       ${CMAKE_CURRENT_BINARY_DIR}/data_prepare_bench_work)
set_tests_properties(data_prepare_bench PROPERTIES LABELS bench TIMEOUT 600)

# The built-in run's numbers in docs/data-format.md are generated from it; this fails when they differ.
add_executable(builtin_run_doc ${CMAKE_CURRENT_SOURCE_DIR}/builtin_run_doc.c)
target_link_libraries(builtin_run_doc PRIVATE zaya_testutil)
add_test(NAME builtin_run_doc COMMAND builtin_run_doc ${PROJECT_SOURCE_DIR}/docs/data-format.md)
set_tests_properties(builtin_run_doc PROPERTIES LABELS unit TIMEOUT 60)
