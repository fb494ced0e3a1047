# Tests of src/peer/launcher (murmur-run). Included from tests/peer/CMakeLists.txt.
murmur_add_test(launcher_hostfile_test SOURCES launcher_hostfile_test.cc LIBS murmur::launcher)
murmur_add_test(launcher_units_test SOURCES launcher_units_test.cc LIBS murmur::launcher)
murmur_add_test(launcher_membership_test SOURCES launcher_membership_test.cc LIBS murmur::launcher)
murmur_add_test(peer_events_test SOURCES peer_events_test.cc LIBS murmur::peer_events)

# End to end: the real murmur-run starts launcher_test_peer processes.
add_executable(launcher_test_peer launcher_test_peer.cc)
target_link_libraries(launcher_test_peer PRIVATE murmur::peer_events murmur::fabric CLI11::CLI11
  $<BUILD_INTERFACE:murmur_warnings>)
murmur_add_test(launcher_test SOURCES launcher_test.cc LIBS murmur::test_support nlohmann_json::nlohmann_json
  LABELS multiprocess)
target_compile_definitions(launcher_test PRIVATE
  MURMUR_RUN_PATH="$<TARGET_FILE:murmur_run>"
  LAUNCHER_TEST_PEER_PATH="$<TARGET_FILE:launcher_test_peer>")
add_dependencies(launcher_test launcher_test_peer murmur_run)
