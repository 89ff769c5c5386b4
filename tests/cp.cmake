# Context parallelism under mpirun: the model's chunks against the whole sequences (label mpi).
set(ZAYA_CP_MPIEXEC ${MPIEXEC_EXECUTABLE})
if(NOT ZAYA_CP_MPIEXEC)
  set(ZAYA_CP_MPIEXEC mpirun)
endif()
foreach(np 2 4)
  add_test(NAME cp_model_mpi${np}
           COMMAND ${ZAYA_CP_MPIEXEC} -np ${np} --allow-run-as-root --oversubscribe $<TARGET_FILE:test_cp>)
  set_tests_properties(cp_model_mpi${np} PROPERTIES LABELS mpi TIMEOUT 120 ENVIRONMENT "OMP_NUM_THREADS=1")
endforeach()
# The trainer: CP=2/4 against one rank (losses and final weights), odd kernels, the run-file key,
# resume across splits, refusals.
add_test(NAME train_cp COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_cp.sh $<TARGET_FILE:zaya>)
set_tests_properties(train_cp PROPERTIES LABELS mpi TIMEOUT 900)
