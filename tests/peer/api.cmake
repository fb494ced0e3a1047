# The embeddable Peer (src/peer/api): environment rules, tensor staging, and
# multi-process jobs of api_test_peer (which uses only murmur/peer.h).
add_executable(api_test_peer api_test_peer.cc)
target_link_libraries(api_test_peer PRIVATE murmur::peer CLI11::CLI11 $<BUILD_INTERFACE:murmur_warnings>)
# JobEnvironment, ScalarList and TensorSet are unit tests; the PeerJob tests
# start jobs of api_test_peer processes.
murmur_add_test(peer_api_test SOURCES api_test.cc LIBS murmur::peer murmur::test_job FILTER "-*PeerJob*")
murmur_label_tests(peer_api_test FILTER "*PeerJob*" LABELS multiprocess)
target_include_directories(peer_api_test PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
add_dependencies(peer_api_test api_test_peer)

# Resilience (docs/resilience.md): jobs of resilience_test_peer with real
# signals: killed, stopped and slow peers, a lost rendezvous.
add_executable(resilience_test_peer resilience_test_peer.cc)
target_link_libraries(resilience_test_peer PRIVATE murmur::peer CLI11::CLI11 $<BUILD_INTERFACE:murmur_warnings>)
murmur_add_test(peer_resilience_test SOURCES resilience_test.cc LIBS murmur::test_job LABELS multiprocess)
target_include_directories(peer_resilience_test PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
add_dependencies(peer_resilience_test resilience_test_peer)

# ScalarGather with an in-process rendezvous server and asio Groups.
murmur_add_test(peer_scalar_gather_test SOURCES scalar_gather_test.cc LIBS murmur::peer murmur::fabric)
target_include_directories(peer_scalar_gather_test PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
