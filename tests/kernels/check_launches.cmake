# Fails on a triple-chevron kernel launch outside kernels/cuda/launch/launch.cuh.
#
#   cmake -DROOT=<source dir> -P tests/kernels/check_launches.cmake
#
# Every CUDA launch goes through anvil::cuda::launch_kernel
# (kernels/cuda/launch/launch.cuh): with nvcc it is the triple-chevron launch itself,
# in the emulated-GPU build it queues the grid on the emulator. A launch
# written directly would compile with nvcc only, so the two builds would no
# longer share the kernel sources. Text after // on a line is ignored.
if(NOT DEFINED ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -P check_launches.cmake")
endif()

set(_files "")
foreach(_dir kernels core nn distributed bench samples tests)
  file(GLOB_RECURSE _found LIST_DIRECTORIES false
       "${ROOT}/${_dir}/*.cu" "${ROOT}/${_dir}/*.cuh" "${ROOT}/${_dir}/*.cpp"
       "${ROOT}/${_dir}/*.h" "${ROOT}/${_dir}/*.hpp")
  list(APPEND _files ${_found})
endforeach()
list(SORT _files)

set(_hits "")
foreach(_file IN LISTS _files)
  file(RELATIVE_PATH _rel "${ROOT}" "${_file}")
  if(_rel STREQUAL "kernels/cuda/launch/launch.cuh")
    continue()
  endif()
  file(READ "${_file}" _text)
  string(FIND "${_text}" "<<<" _pos)
  if(_pos EQUAL -1)
    continue()
  endif()
  # One list element per line: first take out the characters that CMake's
  # lists treat specially (; separates, \ escapes, [ ] group); none of them
  # matters for finding "<<<".
  string(REPLACE "\\" " " _text "${_text}")
  string(REPLACE ";" " " _text "${_text}")
  string(REPLACE "[" " " _text "${_text}")
  string(REPLACE "]" " " _text "${_text}")
  string(REPLACE "\n" ";" _lines "${_text}")
  set(_n 0)
  foreach(_line IN LISTS _lines)
    math(EXPR _n "${_n} + 1")
    string(FIND "${_line}" "//" _comment)
    if(NOT _comment EQUAL -1)
      string(SUBSTRING "${_line}" 0 ${_comment} _line)
    endif()
    string(FIND "${_line}" "<<<" _pos)
    if(NOT _pos EQUAL -1)
      string(STRIP "${_line}" _line)
      list(APPEND _hits "  ${_rel}:${_n}: ${_line}")
    endif()
  endforeach()
endforeach()

if(_hits)
  list(LENGTH _hits _count)
  list(JOIN _hits "\n" _report)
  message(FATAL_ERROR "${_count} triple-chevron kernel launch(es) outside kernels/cuda/launch/launch.cuh:\n${_report}\n"
                      "Launch through launch_kernel from kernels/cuda/launch/launch.cuh instead:\n"
                      "  launch_kernel(my_kernel<T>, grid, block, shared_bytes, stream)(args...);\n"
                      "(anvil::cuda::launch_kernel outside namespace anvil::cuda).")
endif()
