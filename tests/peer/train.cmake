# The trainer (src/peer/train): checkpoints and metrics in-process, and
# whole murmur-run + murmur-peer jobs.
murmur_add_test(peer_train_checkpoint_test SOURCES train_checkpoint_test.cc LIBS murmur::train)
murmur_add_test(peer_train_checkpoint_state_test SOURCES train_checkpoint_state_test.cc
  LIBS murmur::checkpoint nlohmann_json::nlohmann_json ZLIB::ZLIB)
murmur_add_test(peer_train_job_test SOURCES train_job_test.cc LIBS murmur::test_support nlohmann_json::nlohmann_json
  LABELS multiprocess slow)
add_dependencies(peer_train_job_test murmur_peer_bin murmur_run)
# The A2A methods against bsp-a2a on real jobs (src/gossip/algorithm).
murmur_add_test(peer_train_methods_test SOURCES train_methods_test.cc
  LIBS murmur::test_support murmur::checkpoint murmur::kernels nlohmann_json::nlohmann_json LABELS multiprocess slow)
add_dependencies(peer_train_methods_test murmur_peer_bin murmur_run)
target_include_directories(peer_train_methods_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
murmur_add_test(peer_train_epoch_plan_test SOURCES train_epoch_plan_test.cc LIBS murmur::train)
# bench/common.py spells the metrics names src/peer/train/metric_names.h
# declares; the bench scripts read metrics through it.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME bench_common_test COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/common_test.py)
  set_tests_properties(bench_common_test PROPERTIES LABELS unit)
  # seed_methods.py derives a scaled profile from a calibration job it runs
  # and puts every rank behind one uplink (docs/seed-methods.md).
  add_test(NAME seed_methods_scaled_script
    COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/experiments/seed_methods.py
      --build ${PROJECT_BINARY_DIR} --peers 2 --model mlp:16,8 --train-examples 128 --profiles scaled-10gbe
      --methods bsp-ps --evals-per-epoch 2 --target 0.05 --out ${CMAKE_CURRENT_BINARY_DIR}/seed_methods_scaled_script)
  set_tests_properties(seed_methods_scaled_script PROPERTIES LABELS multiprocess TIMEOUT 300
    FIXTURES_SETUP seed_methods_table
    PASS_REGULAR_EXPRESSION
    "[|] scaled-10gbe [|] bsp-ps [|] 2 [|] [0-9.]+ [(][0-9]+-[0-9]+[)] [|][^\n]*[|] [0-9]+ [|] [0-9.]+ [(][0-9.]+-[0-9.]+[)] [|] [0-9.]+ [|]\n.*scaled-10gbe: --link-profile lat=25us,bw=[0-9]+kbit,uplink=[0-9]+kbit")
  # sim_vs_runtime.py --measured predicts that table's jobs without running
  # them again: the shape (2 peers, mlp:16,8, 128 examples) and the scaled
  # link come from the jobs' own records.
  add_test(NAME sim_vs_runtime_measured_script
    COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/experiments/sim_vs_runtime.py
      --build ${PROJECT_BINARY_DIR} --measured ${CMAKE_CURRENT_BINARY_DIR}/seed_methods_scaled_script
      --repeats 1 --out ${CMAKE_CURRENT_BINARY_DIR}/sim_vs_runtime_measured_script)
  set_tests_properties(sim_vs_runtime_measured_script PROPERTIES LABELS multiprocess TIMEOUT 300
    FIXTURES_REQUIRED seed_methods_table FIXTURES_SETUP sim_vs_runtime_table
    PASS_REGULAR_EXPRESSION
    "measured: mlp:16,8, 2 peers, 128 examples a peer, scaled-10gbe; bsp-ps.*[|] deep mlp [|] scaled-10gbe [|] bsp-ps [|] [0-9.]+ [(][0-9]+-[0-9]+[)] [|] [0-9.]+ [|] [-+][0-9]+% [|].*concurrent probe: [0-9]+ us per further concurrent message.*busy probe: [0-9]+ us per message.*median [|]error[|], busy: [0-9.]+%")
  # sim_repredict.py makes that run's busy predictions again from its saved
  # inputs (here with the build's murmur-sim), row by row and in summary.
  add_test(NAME sim_repredict_script
    COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/experiments/sim_repredict.py
      --sim $<TARGET_FILE:murmur_sim_cli> ${CMAKE_CURRENT_BINARY_DIR}/sim_vs_runtime_measured_script)
  set_tests_properties(sim_repredict_script PROPERTIES LABELS unit
    FIXTURES_REQUIRED sim_vs_runtime_table
    PASS_REGULAR_EXPRESSION
    "[|] scaled-10gbe [|] bsp-ps [|] [0-9.]+ [|] [0-9.]+ [(][-+][0-9.]+%[)]\n.*murmur-sim: busy median [|]error[|] [0-9.]+% [(]max [0-9.]+%, 1 rows[)]")
  add_test(NAME sim_repredict_missing
    COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/experiments/sim_repredict.py
      --sim $<TARGET_FILE:murmur_sim_cli> ${CMAKE_CURRENT_BINARY_DIR}/no-such-run)
  set_tests_properties(sim_repredict_missing PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "no-such-run: no sim_vs_runtime.json")
  # A directory that holds no seed_methods.py table is refused, naming it.
  add_test(NAME sim_vs_runtime_measured_missing
    COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/experiments/sim_vs_runtime.py
      --build ${PROJECT_BINARY_DIR} --measured ${CMAKE_CURRENT_BINARY_DIR}/no-such-table)
  set_tests_properties(sim_vs_runtime_measured_missing PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "--measured: cannot read [^\n]*/no-such-table/seed_methods.json")
else()
  message(STATUS "bench_common_test: no python3, the metrics names of bench/common.py go unchecked")
endif()
murmur_add_test(peer_train_trace_test SOURCES train_trace_test.cc
  LIBS murmur::launcher murmur::test_support nlohmann_json::nlohmann_json LABELS multiprocess)
add_dependencies(peer_train_trace_test murmur_peer_bin murmur_run)
