# Tokenizer: CLI behaviour (unit), compatibility with HF `tokenizers` in both directions (ref) and
# encoding throughput against HF on the same input (bench).
add_test(NAME tokenizer_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_cli.sh $<TARGET_FILE:zaya>
                                    ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_cli_work)
set_tests_properties(tokenizer_cli PROPERTIES LABELS unit TIMEOUT 120)

add_test(NAME tokenizer_compat
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_compat.py --zaya $<TARGET_FILE:zaya>
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_compat_work)
set_tests_properties(tokenizer_compat PROPERTIES LABELS ref TIMEOUT 300 SKIP_RETURN_CODE 77)

add_test(NAME tokenizer_bench
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_cli.sh $<TARGET_FILE:zaya>
                 ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_bench_work bench)
set_tests_properties(tokenizer_bench PROPERTIES LABELS bench TIMEOUT 600)

# Tokenizer families built with HF `tokenizers` (SentencePiece-style BPE with byte fallback, Metaspace,
# Llama-3 regex + byte-level, GPT-2) encode and decode identically in zaya. Needs the `tokenizers`
# package (skipped, 77, without it).
add_test(NAME tokenizer_families
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_families.py --zaya $<TARGET_FILE:zaya>
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_families_work)
set_tests_properties(tokenizer_families PROPERTIES LABELS ref TIMEOUT 1500 SKIP_RETURN_CODE 77)

# Encoding MB/s of zaya vs HF on every family above (short: licences, 2 runs each).
add_test(NAME tokenizer_families_bench
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_families.py --zaya $<TARGET_FILE:zaya>
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_families_bench_work --bench)
set_tests_properties(tokenizer_families_bench PROPERTIES LABELS bench TIMEOUT 900 SKIP_RETURN_CODE 77)
