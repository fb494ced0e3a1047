# Tests of murmur::model and its layer kernels (included from tests/peer).
set(MURMUR_MODEL_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
murmur_add_test(kernels_layers_cpu_test
  SOURCES ${PROJECT_SOURCE_DIR}/tests/kernels/layers_cpu_test.cc
  LIBS murmur::kernels)
if(MURMUR_HAVE_CUDA)
  murmur_add_test(kernels_layers_cuda_test
    SOURCES ${PROJECT_SOURCE_DIR}/tests/kernels/layers_cuda_test.cc
    LIBS murmur::kernels CUDA::cudart LABELS cuda)
else()
  murmur_add_test(kernels_layers_cuda_test
    SOURCES ${PROJECT_SOURCE_DIR}/tests/kernels/layers_cuda_test.cc
    LIBS murmur::kernels LABELS cuda)
endif()
murmur_add_test(model_test
  SOURCES
    ${MURMUR_MODEL_TEST_DIR}/model_allocation_test.cc
    ${MURMUR_MODEL_TEST_DIR}/model_gradient_test.cc
    ${MURMUR_MODEL_TEST_DIR}/model_learning_test.cc
    ${MURMUR_MODEL_TEST_DIR}/model_lr_schedule_test.cc
    ${MURMUR_MODEL_TEST_DIR}/model_optimizer_test.cc
    ${MURMUR_MODEL_TEST_DIR}/model_spec_test.cc
  LIBS murmur::model)
if(MURMUR_HAVE_CUDA)
  murmur_add_test(model_cuda_test
    SOURCES ${MURMUR_MODEL_TEST_DIR}/model_cuda_test.cc
    LIBS murmur::model murmur::kernels CUDA::cudart LABELS cuda)
else()
  murmur_add_test(model_cuda_test
    SOURCES ${MURMUR_MODEL_TEST_DIR}/model_cuda_test.cc
    LIBS murmur::model murmur::kernels LABELS cuda)
endif()
