# zaya size validate: error handling (unit) and one real short measurement (bench).
add_test(NAME size_validate_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/size_validate.sh $<TARGET_FILE:zaya> ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(size_validate_cli PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME size_validate_measure
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/size_validate.sh $<TARGET_FILE:zaya> ${CMAKE_CURRENT_SOURCE_DIR} --measure)
set_tests_properties(size_validate_measure PROPERTIES LABELS bench TIMEOUT 300)
