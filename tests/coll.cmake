# Communicator layer and `zaya bench coll` / `zaya bench mem` under mpirun (label mpi), plus the
# single-process checks of the bench commands (label bench).
set(ZAYA_MPIEXEC ${MPIEXEC_EXECUTABLE})
if(NOT ZAYA_MPIEXEC)
  set(ZAYA_MPIEXEC mpirun)
endif()
set(ZAYA_BENCH_SH ${CMAKE_CURRENT_SOURCE_DIR}/bench_coll_run.sh)

foreach(np 2 4)
  add_test(NAME dist_mpi${np}
           COMMAND ${ZAYA_MPIEXEC} -np ${np} --allow-run-as-root --oversubscribe $<TARGET_FILE:test_dist>)
  set_tests_properties(dist_mpi${np} PROPERTIES LABELS mpi TIMEOUT 60 ENVIRONMENT "OMP_NUM_THREADS=1")
  add_test(NAME bench_coll_mpi${np} COMMAND ${ZAYA_BENCH_SH} ${ZAYA_MPIEXEC} $<TARGET_FILE:zaya> ${np} check)
  set_tests_properties(bench_coll_mpi${np} PROPERTIES LABELS mpi TIMEOUT 60 ENVIRONMENT "OMP_NUM_THREADS=1")
endforeach()
add_test(NAME bench_coll_sweep4 COMMAND ${ZAYA_BENCH_SH} ${ZAYA_MPIEXEC} $<TARGET_FILE:zaya> 4 sweep)
add_test(NAME bench_coll_inject2 COMMAND ${ZAYA_BENCH_SH} ${ZAYA_MPIEXEC} $<TARGET_FILE:zaya> 2 inject)
add_test(NAME bench_coll_blocking2 COMMAND ${ZAYA_BENCH_SH} ${ZAYA_MPIEXEC} $<TARGET_FILE:zaya> 2 blocking)
set_tests_properties(bench_coll_sweep4 bench_coll_inject2 bench_coll_blocking2 PROPERTIES LABELS mpi TIMEOUT 60
                     ENVIRONMENT "OMP_NUM_THREADS=1")
add_test(NAME bench_coll_badsize COMMAND ${ZAYA_BENCH_SH} ${ZAYA_MPIEXEC} $<TARGET_FILE:zaya> 1 badsize)
set_tests_properties(bench_coll_badsize PROPERTIES LABELS unit TIMEOUT 30)
add_test(NAME bench_mem_short COMMAND ${ZAYA_BENCH_SH} ${ZAYA_MPIEXEC} $<TARGET_FILE:zaya> 1 mem)
set_tests_properties(bench_mem_short PROPERTIES LABELS bench TIMEOUT 60)
