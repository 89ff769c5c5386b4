# End-to-end training on a tiny corpus: determinism across threads and repeats, phases, bad input.
add_test(NAME train_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(train_cli PROPERTIES LABELS train TIMEOUT 600)

# Architecture variants end to end: train, resume, generate, model info / size, export-hf refusal, bad keys.
add_test(NAME variants_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/variants_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(variants_cli PROPERTIES LABELS train TIMEOUT 600)

# Data parallel under mpirun: 1/2/4 ranks, ZeRO-1 vs all-reduce, determinism.
add_test(NAME train_dp COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_dp.sh $<TARGET_FILE:zaya>)
set_tests_properties(train_dp PROPERTIES LABELS mpi TIMEOUT 900)

# Checkpoint/resume: bit-exact at world 1 and 2, 2 -> 1 ranks, corrupt-checkpoint fallback, config mismatch.
add_test(NAME train_resume COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_resume.sh $<TARGET_FILE:zaya>)
set_tests_properties(train_resume PROPERTIES LABELS mpi TIMEOUT 900)

# zaya study: list, bad input, a 2-variant x 2-seed study's tables, skip and resume after Ctrl-C.
add_test(NAME study_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/study_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(study_cli PROPERTIES LABELS cli TIMEOUT 1800)

# The trainer on the engine (zaya/engine.h) over the CPU reference backend vs the CPU trainer: losses,
# determinism, checkpoints crossing over in both directions; the same script on the GPU is label gpu.
add_test(NAME train_engine COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_engine.sh $<TARGET_FILE:zaya> engine)
set_tests_properties(train_engine PROPERTIES LABELS train TIMEOUT 900)
add_test(NAME train_engine_cuda COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_engine.sh $<TARGET_FILE:zaya> cuda)
set_tests_properties(train_engine_cuda PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 900)

# Ctrl-C (pause handshake, then SIGINT): checkpoint at the step in flight, no validation, the real step
# on the last progress line; the resume keeps the run's history in summary.json and the end line.
add_test(NAME train_stop COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_stop.sh $<TARGET_FILE:zaya>)
set_tests_properties(train_stop PROPERTIES LABELS train TIMEOUT 600)

# The MFU peak and its printed source: --peak-gflops, --profile / ZAYA_PROFILE, the per-host cache.
add_test(NAME train_peak COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_peak.sh $<TARGET_FILE:zaya>)
set_tests_properties(train_peak PROPERTIES LABELS train TIMEOUT 600)

# Small defaults: range errors naming the flag, train --seed, no gnuplot warnings, --engine --cp (a deprecated no-op).
add_test(NAME defaults_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/defaults_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(defaults_cli PROPERTIES LABELS cli TIMEOUT 600)
