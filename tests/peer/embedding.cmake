# Embedding murmur from an installed package (examples/embedding): installs
# the build into a temporary prefix, builds the example there with
# find_package(murmur) and with pkg-config, and runs each as a job of 4 peers.
# It needs every installed target built, so it runs after a full build.
add_test(NAME embedding_install_test
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/embedding_install_test.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(embedding_install_test PROPERTIES TIMEOUT 300 LABELS "install;multiprocess;slow")
