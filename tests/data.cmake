# `zaya data` commands on shards built from this repository's own sources (byte-level ids).
add_test(NAME data_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/data_cli.sh $<TARGET_FILE:zaya>
         $<TARGET_FILE:test_prepare> ${PROJECT_SOURCE_DIR})
set_tests_properties(data_cli PROPERTIES LABELS unit TIMEOUT 120)
