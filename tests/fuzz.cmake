# Numeric-bounds reproducers found by fuzzing, through the CLI (the C ones are in test_bounds.c).
add_test(NAME bounds_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bounds_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(bounds_cli PROPERTIES LABELS unit TIMEOUT 120)
