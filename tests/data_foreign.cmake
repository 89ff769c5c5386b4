# Megatron-LM indexed datasets and llm.c token files (written by tests/foreign_tokens.py) through
# `zaya data inspect|validate`, a run file and `zaya train`; test_foreign covers the library side.
add_test(NAME data_foreign_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/data_foreign_cli.sh $<TARGET_FILE:zaya> ${PROJECT_SOURCE_DIR})
set_tests_properties(data_foreign_cli PROPERTIES LABELS unit TIMEOUT 300)
