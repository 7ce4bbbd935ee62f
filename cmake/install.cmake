# Installs anvil so that another CMake project can write
#   find_package(anvil REQUIRED)
#   target_link_libraries(app PRIVATE anvil::anvil)
# Libraries are static, so their link dependencies (OpenMP, BLAS, zlib, CUDA)
# travel in the exported targets and anvilConfig.cmake finds them again.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ANVIL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/anvil)
set(ANVIL_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/anvil)

install(TARGETS anvil_base anvil_kernels anvil_core anvil_nn anvil_distributed anvil
  EXPORT anvilTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Headers keep their repository paths, so "core/tensor.h" means the same
# thing inside the tree and after install (include/anvil is on the path).
foreach(layer core kernels nn distributed)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/
    DESTINATION ${ANVIL_INSTALL_INCLUDEDIR}/${layer}
    FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/anvil/anvil.h DESTINATION ${ANVIL_INSTALL_INCLUDEDIR})

install(EXPORT anvilTargets
  NAMESPACE anvil::
  DESTINATION ${ANVIL_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/anvilConfig.cmake.in
  ${PROJECT_BINARY_DIR}/anvilConfig.cmake
  INSTALL_DESTINATION ${ANVIL_INSTALL_CMAKEDIR})
# 0.x: any minor release may break the API, so only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/anvilConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/anvilConfig.cmake
  ${PROJECT_BINARY_DIR}/anvilConfigVersion.cmake
  DESTINATION ${ANVIL_INSTALL_CMAKEDIR})
