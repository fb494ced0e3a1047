# find_package(murmur) and pkg-config support for programs embedding murmur.
include(CMakePackageConfigHelpers)
install(EXPORT murmurTargets NAMESPACE murmur:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/murmur)
configure_package_config_file(cmake/murmurConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/murmurConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/murmur)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/murmurConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/murmurConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/murmurConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/murmur)
