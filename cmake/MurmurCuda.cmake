# CUDA is optional. MURMUR_CUDA=AUTO builds the CUDA twins of the kernels when
# a toolkit is found; ON requires one; OFF never looks. Binaries link the CUDA
# runtime only (never the driver library, docs/toolchain.md, item 7), so they
# start on hosts without a GPU and fall back to the CPU.
set(MURMUR_HAVE_CUDA OFF)
if(NOT MURMUR_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Must precede enable_language (pitfall 4): Ampere and Hopper.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    # CMake 3.25 knows no nvcc flag for C++20 (pitfall 3).
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION -std=c++20)
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION -std=c++20)
    set(CMAKE_CUDA_STANDARD 20)
    find_package(CUDAToolkit REQUIRED)
    find_package(NCCL)
    set(MURMUR_HAVE_CUDA ON)
    message(STATUS "murmur: CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(MURMUR_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MURMUR_CUDA=ON but no CUDA compiler was found; install the CUDA toolkit or pass -DMURMUR_CUDA=OFF")
  else()
    message(STATUS "murmur: no CUDA toolkit, building the CPU path only")
  endif()
endif()
