# The simulated cluster (scripts/cluster.sh, docs/cluster.md): network namespaces joined by a bridge,
# mpirun across them through the launch agent. Each test exits 77 (skipped) where namespaces, veth,
# bridges or tc cannot be used. Labels: cluster and mpi (the Release ctest of scripts/test.sh runs them).
add_test(NAME cluster_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cluster_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(cluster_cli PROPERTIES LABELS "cluster;mpi" SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
add_test(NAME train_cluster COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train_cluster.sh $<TARGET_FILE:zaya>)
set_tests_properties(train_cluster PROPERTIES LABELS "cluster;mpi" SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE)
add_test(NAME supervise_hosts COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/supervise_hosts.sh $<TARGET_FILE:zaya>)
set_tests_properties(supervise_hosts PROPERTIES LABELS "cluster;ft;mpi" SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE)
# The cluster fault drill, short version (scripts/cluster_drill.py --quick: a link cut during the run
# and 5% packet loss; about 2-3 minutes on 2 shared cores).
add_test(NAME cluster_drill_quick
         COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/cluster_drill.py --quick --zaya $<TARGET_FILE:zaya>
                 --out ${CMAKE_CURRENT_BINARY_DIR}/cluster_drill_quick)
set_tests_properties(cluster_drill_quick PROPERTIES LABELS "cluster;ft;mpi" SKIP_RETURN_CODE 77 TIMEOUT 400 RUN_SERIAL TRUE)
