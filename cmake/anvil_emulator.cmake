# The emulated GPU (ANVIL_CUDA=EMULATOR; kernels/cuda/emulator/README.md).
#
# anvil_emulate_cuda_sources(target): compiles the target's .cu files with the
# host C++ compiler, with the emulator's kernel-language header force-included
# and GCC's ThreadSanitizer instrumentation on (never linked with libtsan: the
# emulator defines the __tsan_* hooks, which feed its checkers). Call it in the
# folder that creates the target (source properties are per folder).
set(ANVIL_EMULATOR_DIR ${CMAKE_CURRENT_LIST_DIR}/../kernels/cuda/emulator)
get_filename_component(ANVIL_EMULATOR_DIR ${ANVIL_EMULATOR_DIR} ABSOLUTE)

function(anvil_emulate_cuda_sources target)
  get_target_property(sources ${target} SOURCES)
  set(cu_sources ${sources})
  list(FILTER cu_sources INCLUDE REGEX "\\.cu$")
  if(NOT cu_sources)
    return()
  endif()
  set_source_files_properties(${cu_sources} PROPERTIES
    LANGUAGE CXX
    # -x c++: g++ does not know .cu. -g: checker reports name file:line.
    # -ffp-contract=off: a * b + c rounds twice, like the CPU reference.
    COMPILE_OPTIONS "-x;c++;-include;${ANVIL_EMULATOR_DIR}/device_builtins.h;-fsanitize=thread;--param=tsan-instrument-func-entry-exit=0;-ffp-contract=off;-g;-Wno-unknown-pragmas;-Wno-tsan"
    INCLUDE_DIRECTORIES "${ANVIL_EMULATOR_DIR}/include")
endfunction()
