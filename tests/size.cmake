# zaya size CLI: exit codes, messages and written files.
add_test(NAME size_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/size_cli.sh $<TARGET_FILE:zaya> ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(size_cli PROPERTIES LABELS unit TIMEOUT 120)
