# The public API's headers: what `cmake --install` puts under include/anvil.
#
# They are include/anvil/anvil.h and every anvil header it reaches through
# #include "..." (so core/, nn/ and distributed/ headers, and the few kernels/
# headers those need, such as kernels/view.h). Nothing else is installed: a
# header is public when anvil.h includes it, directly or through another
# public header. To publish one, include it from anvil.h (or from a header it
# already reaches); it then comes along by itself.
#
# The boundary the public set must keep, checked by the install_public_headers
# test (tests/install/check_public_headers.cmake) rather than by a user's build:
# every quoted include resolves to an anvil header, none of them is a CUDA
# header or a backend's internals (the patterns below), and angle-bracket
# includes name the C++ standard library only, so a consumer needs no other
# include path than anvil's.
#
# Works in script mode (cmake -P) too: no target commands here.

set(ANVIL_PUBLIC_HEADER_ROOTS include/anvil/anvil.h)
set(ANVIL_PUBLIC_HEADER_FORBIDDEN
  "\\.cuh$"                            # device code: nvcc only
  "^kernels/(cpu|cuda|cublas|cudnn|cusolver)/"  # backend internals
  "^distributed/process_group/nccl/"   # needs nccl.h
  "^(tests|samples|bench)/")

# anvil_public_headers(<headers_var> <unresolved_var> <source dir>)
# Sets <headers_var> to the public headers (paths relative to the source dir,
# sorted) and <unresolved_var> to one entry per quoted include that names no
# file of anvil's. A quoted include resolves as
# the compiler resolves it: next to the including file first, then from the
# source root (include/anvil in an install) and from include/.
function(anvil_public_headers headers_var unresolved_var root)
  set(seen "")
  set(unresolved "")
  set(queue ${ANVIL_PUBLIC_HEADER_ROOTS})
  while(queue)
    list(POP_FRONT queue rel)
    if(rel IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${rel}")
    file(STRINGS "${root}/${rel}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    get_filename_component(dir "${rel}" DIRECTORY)
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" name "${line}")
      set(found "")
      foreach(candidate "${dir}/${name}" "${name}" "include/${name}")
        cmake_path(SET candidate NORMALIZE "${candidate}")
        if(NOT candidate MATCHES "^(/|\\.\\./)" AND EXISTS "${root}/${candidate}"
           AND NOT IS_DIRECTORY "${root}/${candidate}")
          set(found "${candidate}")
          break()
        endif()
      endforeach()
      if(found)
        list(APPEND queue "${found}")
      else()
        list(APPEND unresolved "${rel}: #include \"${name}\" names no anvil header")
      endif()
    endforeach()
  endwhile()
  list(SORT seen)
  set(${headers_var} "${seen}" PARENT_SCOPE)
  set(${unresolved_var} "${unresolved}" PARENT_SCOPE)
endfunction()

# anvil_public_header_problems(<problems_var> <source dir>)
# Everything that breaks the boundary above, one entry per problem (empty
# when the public set is clean).
function(anvil_public_header_problems problems_var root)
  anvil_public_headers(headers problems "${root}")
  foreach(rel IN LISTS headers)
    foreach(pattern IN LISTS ANVIL_PUBLIC_HEADER_FORBIDDEN)
      if(rel MATCHES "${pattern}")
        list(APPEND problems "${rel}: reached from anvil.h, but headers matching ${pattern} are internal")
      endif()
    endforeach()
    file(STRINGS "${root}/${rel}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*<")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*<([^>]*)>.*$" "\\1" name "${line}")
      if(NOT name MATCHES "^[a-z_0-9]+$")
        list(APPEND problems "${rel}: #include <${name}> is no C++ standard header (a consumer would need its include path)")
      endif()
    endforeach()
  endforeach()
  set(${problems_var} "${problems}" PARENT_SCOPE)
endfunction()
