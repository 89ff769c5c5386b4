# Checkpoints: kill during save (unit), the save benchmark (bench), and the HF export check against
# the PyTorch reference and, when importable, Hugging Face transformers (ref).
add_executable(ckpt_kill ${CMAKE_CURRENT_SOURCE_DIR}/ckpt_kill.c)
target_link_libraries(ckpt_kill PRIVATE zaya_testutil)
add_test(NAME ckpt_kill COMMAND ckpt_kill 10 4194304)
set_tests_properties(ckpt_kill PROPERTIES LABELS unit TIMEOUT 180)

add_test(NAME ckpt_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ckpt_cli.sh $<TARGET_FILE:zaya>)
set_tests_properties(ckpt_cli PROPERTIES LABELS unit TIMEOUT 120)

add_test(NAME ckpt_bench COMMAND zaya ckpt bench --repeats 3 -o ${CMAKE_BINARY_DIR}/bench/ckpt)
set_tests_properties(ckpt_bench PROPERTIES LABELS bench TIMEOUT 900)

add_executable(ckpt_export_ref ${CMAKE_CURRENT_SOURCE_DIR}/ref/ckpt_export_ref.c)
target_link_libraries(ckpt_export_ref PRIVATE zaya_testutil)
add_test(NAME ckpt_export_ref COMMAND ckpt_export_ref ${CMAKE_CURRENT_SOURCE_DIR}/ref/ckpt_export_check.py /usr/bin/python3 reference)
set_tests_properties(ckpt_export_ref PROPERTIES LABELS ref TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=2")
# Hugging Face transformers (model_type zaya needs transformers >= 5 and torch >= 2.6): the Python
# below is build/hfvenv (scripts/setup.sh --hf) or ZAYA_HF_PYTHON; exit 77 = skipped.
set(ZAYA_HF_PYTHON "${CMAKE_BINARY_DIR}/hfvenv/bin/python" CACHE FILEPATH "Python with transformers for the HF check")
add_test(NAME ckpt_transformers COMMAND ckpt_export_ref ${CMAKE_CURRENT_SOURCE_DIR}/ref/ckpt_export_check.py ${ZAYA_HF_PYTHON} transformers)
set_tests_properties(ckpt_transformers PROPERTIES LABELS ref TIMEOUT 600 SKIP_RETURN_CODE 77 ENVIRONMENT "OMP_NUM_THREADS=2")

# The commit protocol through training runs: kill between rename and latest, missing/garbage latest,
# a flipped digit in the manifest's JSON state, a step redone (~25 s).
add_test(NAME ckpt_commit COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ckpt_commit.sh $<TARGET_FILE:zaya>)
set_tests_properties(ckpt_commit PROPERTIES LABELS "ckpt;train" TIMEOUT 300)
