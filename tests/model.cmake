# Whole-model parity with the PyTorch reference (needs /usr/bin/python3 with torch; see setup.sh).
add_executable(model_parity ${CMAKE_CURRENT_SOURCE_DIR}/ref/model_parity.c)
target_link_libraries(model_parity PRIVATE zaya_testutil)
add_test(NAME model_parity COMMAND model_parity ${CMAKE_CURRENT_SOURCE_DIR}/ref/zaya_ref.py /usr/bin/python3)
set_tests_properties(model_parity PROPERTIES LABELS ref TIMEOUT 600 ENVIRONMENT "OMP_NUM_THREADS=2")

# 20 training steps (Muon + AdamW, then AdamW only) against the same loop in PyTorch.
add_executable(train_parity ${CMAKE_CURRENT_SOURCE_DIR}/ref/train_parity.c)
target_link_libraries(train_parity PRIVATE zaya_testutil)
add_test(NAME train_parity COMMAND train_parity ${CMAKE_CURRENT_SOURCE_DIR}/ref/train_ref.py /usr/bin/python3)
set_tests_properties(train_parity PROPERTIES LABELS ref TIMEOUT 600 ENVIRONMENT "OMP_NUM_THREADS=2")
