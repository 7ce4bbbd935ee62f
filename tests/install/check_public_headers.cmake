# Fails when the public API's headers (what `cmake --install` installs) break
# the install boundary: a quoted include that names no anvil header, a CUDA
# header or a backend's internals reached from anvil/anvil.h, or an
# angle-bracket include that is no C++ standard header. The rules and the
# set itself are in cmake/public_headers.cmake.
#
#   cmake -DROOT=<source dir> -P tests/install/check_public_headers.cmake
cmake_minimum_required(VERSION 3.24)
if(NOT DEFINED ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -P check_public_headers.cmake")
endif()
include(${ROOT}/cmake/public_headers.cmake)

anvil_public_headers(_headers _unresolved "${ROOT}")
list(LENGTH _headers _count)
anvil_public_header_problems(_problems "${ROOT}")
if(_problems)
  list(JOIN _problems "\n  " _lines)
  message(FATAL_ERROR "the public headers (${_count}, reached from ${ANVIL_PUBLIC_HEADER_ROOTS}) break "
                      "the install boundary:\n  ${_lines}\n"
                      "Keep the internal header out of the public one (include it from the .cpp, or "
                      "forward-declare), or, if it really is API, move it out of the internal folders.")
endif()
message(STATUS "${_count} public headers, reached from ${ANVIL_PUBLIC_HEADER_ROOTS}: the boundary holds")
