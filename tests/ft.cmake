# Fault tolerance: `zaya supervise` against injected crashes, hangs, kills during save, corrupt
# checkpoints, preemption, NaN, loss spikes, stragglers and a deterministic repeat failure.
add_test(NAME ft_matrix COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ft_matrix.sh $<TARGET_FILE:zaya>)
set_tests_properties(ft_matrix PROPERTIES LABELS "ft;mpi" TIMEOUT 300)
