# Optimizer steps against PyTorch (AdamW: torch.optim.AdamW; Muon: a PyTorch version of the formula),
# and the optimizer-step benchmark at the zaya1-tiny / zaya1-small shapes.
add_executable(optim_ref ${CMAKE_CURRENT_SOURCE_DIR}/ref/optim_ref.c)
target_link_libraries(optim_ref PRIVATE zaya_testutil)
add_test(NAME optim_ref COMMAND optim_ref ${CMAKE_CURRENT_SOURCE_DIR}/ref/optim_ref.py /usr/bin/python3)
set_tests_properties(optim_ref PROPERTIES LABELS ref TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "OMP_NUM_THREADS=2")

add_executable(bench_optim ${PROJECT_SOURCE_DIR}/bench/bench_optim.c)
target_link_libraries(bench_optim PRIVATE zaya_lib)
add_test(NAME bench_optim COMMAND bench_optim --threads 2 --reps 2 -o ${CMAKE_CURRENT_BINARY_DIR}/bench_optim_out)
set_tests_properties(bench_optim PROPERTIES LABELS bench TIMEOUT 600)

# Per-phase profile of one training step (forward, backward, optimizer, Newton-Schulz separately).
add_executable(bench_step ${PROJECT_SOURCE_DIR}/bench/bench_step.c)
target_link_libraries(bench_step PRIVATE zaya_lib)
add_test(NAME bench_step COMMAND bench_step --threads 2 --steps 3 --batch 2 --seq 64 -o ${CMAKE_CURRENT_BINARY_DIR}/bench_step_out zaya1-tiny)
set_tests_properties(bench_step PROPERTIES LABELS bench TIMEOUT 600)
