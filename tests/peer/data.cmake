# Tests of murmur::data (src/peer/data). The IDX tests read the real
# Fashion-MNIST files from Debian's dataset-fashion-mnist package and write
# malformed ones (with zlib) into a temporary directory.
murmur_add_test(data_idx_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_idx_test.cc
  LIBS murmur::data ZLIB::ZLIB)
murmur_add_test(data_partition_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_partition_test.cc
  LIBS murmur::data)
murmur_add_test(data_batcher_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_batcher_test.cc
  LIBS murmur::data)
