# Loader budgets (docs/limits.md): every loader of untrusted files on generated adversarial inputs of
# 1, 10 and 100 MB, peak RSS of a child and wall time against bounds linear in the input. The
# sanitizer build runs 1 and 10 MB with bounds scaled for ASan's shadow memory and slowdown.
add_executable(loader_budget loader_budget.c)
target_link_libraries(loader_budget PRIVATE zaya_testutil)
if(CMAKE_BUILD_TYPE STREQUAL "Sanitize")
  set(budget_args --max-mb 10 --scale 4)
else()
  set(budget_args --max-mb 100 --scale 1)
endif()
add_test(NAME loader_budget COMMAND loader_budget ${budget_args})
set_tests_properties(loader_budget PROPERTIES LABELS "unit;budget" TIMEOUT 900
                     ENVIRONMENT "OMP_NUM_THREADS=2;ASAN_OPTIONS=detect_leaks=0")
