# Attention benchmark: the C timing binary, and a bench-labelled run that compares it with PyTorch
# (textbook eager and fused SDPA, f32 and bf16) on build/hfvenv's PyTorch >= 2 (scripts/setup.sh --hf)
# when it exists, else /usr/bin/python3's, labelled as a fallback peer (skipped when torch is missing).
add_executable(bench_attention ${PROJECT_SOURCE_DIR}/bench/bench_attention.c)
target_link_libraries(bench_attention PRIVATE zaya_lib)
add_test(NAME bench_attention_vs_torch
         COMMAND sh -c "p=${PROJECT_SOURCE_DIR}/build/hfvenv/bin/python; [ -x \"$p\" ] || p=/usr/bin/python3; exec \"$p\" \"$0\" \"$@\""
                 ${PROJECT_SOURCE_DIR}/bench/attention_vs_torch.py
                 --bin $<TARGET_FILE:bench_attention> --quick -o ${CMAKE_CURRENT_BINARY_DIR}/bench_attention_out)
set_tests_properties(bench_attention_vs_torch PROPERTIES LABELS bench TIMEOUT 600 SKIP_RETURN_CODE 77)
