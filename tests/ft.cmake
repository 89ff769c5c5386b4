# Fault tolerance: `zaya supervise` against injected crashes, hangs, kills during save, corrupt
# checkpoints, preemption, NaN, loss spikes, stragglers and a deterministic repeat failure.
add_test(NAME ft_matrix COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ft_matrix.sh $<TARGET_FILE:zaya>)
set_tests_properties(ft_matrix PROPERTIES LABELS "ft;mpi" TIMEOUT 300)
# Process hygiene and adaptive hang detection: locks per output directory, kill -9 of the supervisor
# or of mpirun, a slow phase with a restart inside it, a hang during evaluation (~45 s).
add_test(NAME ft_hygiene COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ft_hygiene.sh $<TARGET_FILE:zaya>)
set_tests_properties(ft_hygiene PROPERTIES LABELS "ft;mpi" TIMEOUT 300)
