# The fault drill, short version (scripts/fault_drill.py --quick, ~1-2 min): one trial of each fast case,
# faults injected from outside (signals, checkpoint damage, a full tmpfs where mounting is allowed,
# kill -9 of the supervisor or mpirun, a second supervisor); fails unless every one is detected,
# recovered and bit-exact against an uninterrupted run.
add_test(NAME fault_drill_quick
         COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/fault_drill.py --quick --zaya $<TARGET_FILE:zaya>
                 --out ${CMAKE_CURRENT_BINARY_DIR}/fault_drill_quick)
set_tests_properties(fault_drill_quick PROPERTIES LABELS "ft;mpi" TIMEOUT 400)
