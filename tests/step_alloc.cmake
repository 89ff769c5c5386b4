# No allocation inside a training step: the real trainer on a tiny model, with zaya's allocation calls
# and the two step hooks wrapped at link time (tests/step_alloc.c), at world 1 and under mpirun -np 2.
add_executable(step_alloc step_alloc.c)
target_include_directories(step_alloc PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(step_alloc PRIVATE zaya_lib ${CMAKE_DL_LIBS})
set_target_properties(step_alloc PROPERTIES ENABLE_EXPORTS ON)
target_link_options(step_alloc PRIVATE
  "LINKER:--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign,--wrap=strdup"
  "LINKER:--wrap=zaya_ft_enter,--wrap=zaya_ft_step_done")
set(ZAYA_STEP_ALLOC_MPIEXEC ${MPIEXEC_EXECUTABLE})
if(NOT ZAYA_STEP_ALLOC_MPIEXEC)
  set(ZAYA_STEP_ALLOC_MPIEXEC mpirun)
endif()
add_test(NAME step_alloc
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/step_alloc.sh $<TARGET_FILE:zaya> $<TARGET_FILE:step_alloc>
                 ${ZAYA_STEP_ALLOC_MPIEXEC})
set_tests_properties(step_alloc PROPERTIES LABELS "mpi;train" TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=2")
