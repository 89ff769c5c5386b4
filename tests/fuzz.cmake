# Fuzzing in the normal build (docs/fuzzing.md).
# 1. bounds_cli: numeric-bounds reproducers through the CLI (the C ones are in test_bounds.c).
add_test(NAME bounds_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bounds_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(bounds_cli PROPERTIES LABELS unit TIMEOUT 120)

# 2. fuzz_replay: every harness, linked with a plain driver instead of libFuzzer, replays the seed
#    corpora (written by zaya_fuzz_seeds) and the kept reproducers in tests/fuzz/regressions/.
include(${CMAKE_CURRENT_SOURCE_DIR}/fuzz/harnesses.cmake)
add_library(zaya_fuzz_common STATIC fuzz/fuzz_common.c)
target_link_libraries(zaya_fuzz_common PUBLIC zaya_lib)
target_include_directories(zaya_fuzz_common PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/fuzz ${PROJECT_SOURCE_DIR}/src)
# The tokenizer_pipeline harness loads the family fixtures of tests/fixtures/tokenizer/.
target_compile_definitions(zaya_fuzz_common PUBLIC ZAYA_FUZZ_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_executable(zaya_fuzz_seeds fuzz/seeds.c)
target_link_libraries(zaya_fuzz_seeds PRIVATE zaya_fuzz_common)
set(replays "")
foreach(h ${ZAYA_FUZZ_HARNESSES})
  add_executable(replay_${h} fuzz/fuzz_${h}.c fuzz/replay_main.c)
  target_link_libraries(replay_${h} PRIVATE zaya_fuzz_common)
  list(APPEND replays ${h})
endforeach()
add_test(NAME fuzz_replay COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz.sh replay ${CMAKE_CURRENT_BINARY_DIR}
         $<TARGET_FILE:zaya_fuzz_seeds> ${PROJECT_SOURCE_DIR} ${replays})
set_tests_properties(fuzz_replay PROPERTIES LABELS unit TIMEOUT 300)

# 3. The libFuzzer smoke run (label fuzz): builds the ZAYA_FUZZ=ON tree with clang in
#    <build>/fuzz (incremental after the first time), then runs each harness for ZAYA_FUZZ_SECONDS
#    (default 8) from its seeds. Skipped (77) without a clang that links -fsanitize=fuzzer.
add_test(NAME fuzz_build COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz.sh build ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}/fuzz)
set_tests_properties(fuzz_build PROPERTIES LABELS fuzz FIXTURES_SETUP fuzz_tree TIMEOUT 1200 SKIP_RETURN_CODE 77)
foreach(h ${ZAYA_FUZZ_HARNESSES})
  add_test(NAME fuzz_${h} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz.sh run ${CMAKE_BINARY_DIR}/fuzz ${h})
  set_tests_properties(fuzz_${h} PROPERTIES LABELS fuzz FIXTURES_REQUIRED fuzz_tree TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()
