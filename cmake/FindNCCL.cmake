# NCCL ships no CMake config (docs/toolchain.md, item 6). Defines NCCL::nccl.
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include)
find_library(NCCL_LIBRARY nccl
  HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu)
if(NCCL_INCLUDE_DIR AND EXISTS ${NCCL_INCLUDE_DIR}/nccl.h)
  file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_major REGEX "^#define NCCL_MAJOR +[0-9]+")
  file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_minor REGEX "^#define NCCL_MINOR +[0-9]+")
  string(REGEX MATCH "[0-9]+$" _nccl_major "${_nccl_major}")
  string(REGEX MATCH "[0-9]+$" _nccl_minor "${_nccl_minor}")
  set(NCCL_VERSION "${_nccl_major}.${_nccl_minor}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION ${NCCL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
endif()
