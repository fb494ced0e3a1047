# Every third-party dependency is found here, once, as imported targets.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBFABRIC REQUIRED IMPORTED_TARGET libfabric>=1.14)
find_package(Boost 1.74 REQUIRED)
find_package(CapnProto CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(ZLIB REQUIRED)
# libcrypto's HMAC-SHA256 proves the job token at connection set-up
# (src/common/job_token.h, docs/security.md).
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# libxxhash computes the asio backend's wire checksums (XXH64).
find_path(MURMUR_XXHASH_INCLUDE_DIR xxhash.h)
find_library(MURMUR_XXHASH_LIBRARY xxhash)
if(NOT MURMUR_XXHASH_INCLUDE_DIR OR NOT MURMUR_XXHASH_LIBRARY)
  message(FATAL_ERROR "libxxhash not found (xxhash.h: ${MURMUR_XXHASH_INCLUDE_DIR}, library: "
                      "${MURMUR_XXHASH_LIBRARY}). Install libxxhash-dev (scripts/setup.sh does), or point "
                      "MURMUR_XXHASH_INCLUDE_DIR and MURMUR_XXHASH_LIBRARY at an xxHash >= 0.8 build.")
endif()
add_library(murmur::xxhash UNKNOWN IMPORTED)
set_target_properties(murmur::xxhash PROPERTIES
  IMPORTED_LOCATION "${MURMUR_XXHASH_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${MURMUR_XXHASH_INCLUDE_DIR}")
# The CPU models call CBLAS. OpenBLAS is preferred (Debian's reference BLAS
# is an order of magnitude slower); it runs one thread per peer unless
# MURMUR_BLAS_THREADS says otherwise (src/peer/model/blas_threads.h).
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(MURMUR_CBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas
  REQUIRED)
add_library(murmur_blas INTERFACE)
add_library(murmur::blas ALIAS murmur_blas)
target_link_libraries(murmur_blas INTERFACE BLAS::BLAS)
target_include_directories(murmur_blas SYSTEM INTERFACE ${MURMUR_CBLAS_INCLUDE_DIR})

# Boost 1.74 Asio under g++ 12 in C++20 uses std::exchange in awaitable.hpp
# without including <utility> (docs/toolchain.md, item 2). Targets that
# include Asio link this instead of Boost::headers directly.
add_library(murmur_asio INTERFACE)
add_library(murmur::asio ALIAS murmur_asio)
target_link_libraries(murmur_asio INTERFACE Boost::headers Threads::Threads)
target_compile_options(murmur_asio INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-include utility>)
target_compile_definitions(murmur_asio INTERFACE BOOST_ASIO_NO_DEPRECATED)

if(MURMUR_TESTS)
  find_package(GTest REQUIRED)
endif()
if(MURMUR_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()

# Warnings for murmur's own targets only.
add_library(murmur_warnings INTERFACE)
target_compile_options(murmur_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
# Sanitizers apply to every C++ target, tests and their peer programs
# included: an executable must link the sanitizer runtime itself when the
# shared libraries it loads were built with it (docs/testing.md).
if(MURMUR_SANITIZE AND MURMUR_SANITIZE_THREAD)
  message(FATAL_ERROR "MURMUR_SANITIZE and MURMUR_SANITIZE_THREAD cannot be combined: "
                      "AddressSanitizer and ThreadSanitizer exclude each other")
endif()
# MURMUR_SANITIZER_FLAGS (compile and link) also goes into the installed package
# (murmurConfig.cmake, murmur.pc): a program that links a sanitized murmur
# must link the runtime itself, first.
set(MURMUR_SANITIZER_FLAGS "")
if(MURMUR_SANITIZE)
  set(MURMUR_SANITIZER_FLAGS -fsanitize=address,undefined)
endif()
if(MURMUR_SANITIZE_THREAD)
  set(MURMUR_SANITIZER_FLAGS -fsanitize=thread)
endif()
if(MURMUR_SANITIZER_FLAGS)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${MURMUR_SANITIZER_FLAGS}> $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(${MURMUR_SANITIZER_FLAGS})
endif()
