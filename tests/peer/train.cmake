# The trainer (src/peer/train): checkpoints and metrics in-process, and
# whole murmur-run + murmur-peer jobs.
murmur_add_test(peer_train_checkpoint_test SOURCES train_checkpoint_test.cc LIBS murmur::train)
murmur_add_test(peer_train_job_test SOURCES train_job_test.cc LIBS murmur::test_support nlohmann_json::nlohmann_json
  LABELS multiprocess slow)
add_dependencies(peer_train_job_test murmur_peer_bin murmur_run)
murmur_add_test(peer_train_epoch_plan_test SOURCES train_epoch_plan_test.cc LIBS murmur::train)
