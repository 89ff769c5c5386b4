# Attention benchmark: the C timing binary, and a bench-labelled run that compares it with PyTorch
# eager on /usr/bin/python3 (skipped when torch is missing).
add_executable(bench_attention ${PROJECT_SOURCE_DIR}/bench/bench_attention.c)
target_link_libraries(bench_attention PRIVATE zaya_lib)
add_test(NAME bench_attention_vs_torch
         COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/bench/attention_vs_torch.py
                 --bin $<TARGET_FILE:bench_attention> --quick -o ${CMAKE_CURRENT_BINARY_DIR}/bench_attention_out)
set_tests_properties(bench_attention_vs_torch PROPERTIES LABELS bench TIMEOUT 600 SKIP_RETURN_CODE 77)
