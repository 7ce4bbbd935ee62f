# anvil_add_library(name DIRS dir... [EXCLUDE regex...] [CUDA_DIRS dir...] [DEPS lib...] [EXTRA file...]):
# one library from the .cpp files (and, with CUDA, .cu files) under the
# given folders. Headers sit next to the sources and are included as
# "core/tensor.h", "nn/module.h", ...; installed, they live under
# include/anvil/ with the same relative paths (the public ones: see
# cmake/public_headers.cmake).
#
# Static by default; -DBUILD_SHARED_LIBS=ON makes every anvil library shared.
# Nothing in anvil registers itself from a static initializer (the device
# registry creates its backends on first use), so both kinds behave the same.
function(anvil_add_library name)
  cmake_parse_arguments(ARG "" "" "DIRS;EXCLUDE;CUDA_DIRS;DEPS;EXTRA" ${ARGN})
  set(sources)
  foreach(dir ${ARG_DIRS})
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND sources ${found})
  endforeach()
  foreach(pattern ${ARG_EXCLUDE})
    list(FILTER sources EXCLUDE REGEX "${pattern}")
  endforeach()
  if(ANVIL_HAS_CUDA OR ANVIL_CUDA_EMULATED)
    foreach(dir ${ARG_CUDA_DIRS})
      file(GLOB_RECURSE found CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cpp ${CMAKE_SOURCE_DIR}/${dir}/*.cu)
      list(APPEND sources ${found})
    endforeach()
  endif()
  list(APPEND sources ${ARG_EXTRA})
  if(NOT sources)
    message(FATAL_ERROR "anvil_add_library(${name}): no sources under ${ARG_DIRS}")
  endif()
  add_library(${name} ${sources})
  add_library(anvil::${name} ALIAS ${name})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}>
    $<INSTALL_INTERFACE:include/anvil>)
  target_compile_options(${name} PRIVATE ${ANVIL_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  if(BUILD_SHARED_LIBS)
    # 0.x: any minor release may break the ABI (anvilConfigVersion.cmake says
    # the same for the API). Installed, the libraries sit side by side and
    # find each other there.
    set_target_properties(${name} PROPERTIES
      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
      INSTALL_RPATH "$ORIGIN")
    # Every dependency is declared: a missing one fails this link, not a consumer's.
    target_link_options(${name} PRIVATE LINKER:--no-undefined)
  endif()
  set_property(GLOBAL APPEND PROPERTY ANVIL_LIBRARIES ${name})
endfunction()
