# Writes the public headers (cmake/public_headers.cmake), one path relative to
# the source dir a line, to OUT: the input of the API reference
# (scripts/check_api_docs.sh).
#
#   cmake -DROOT=<source dir> -DOUT=<file> -P cmake/print_public_headers.cmake
cmake_minimum_required(VERSION 3.24)
if(NOT DEFINED ROOT OR NOT DEFINED OUT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -DOUT=<file> -P print_public_headers.cmake")
endif()
include(${ROOT}/cmake/public_headers.cmake)
anvil_public_headers(_headers _unresolved "${ROOT}")
list(JOIN _headers "\n" _lines)
file(WRITE "${OUT}" "${_lines}\n")
