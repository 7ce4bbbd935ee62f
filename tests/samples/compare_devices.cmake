# Runs a sample twice, once with each of two argument tails (e.g. "--device;cpu"
# and "--device;cuda"; or, after COMMAND=anvil-run, two launcher command lines:
# one process against a tensor-parallel job), and checks that numbers in the
# JSON object each run prints last agree within a tolerance:
#   cmake -DCOMMAND="bin;args" -DFIRST="--device;cpu" -DSECOND="--device;cuda"
#         -DKEYS="test_loss=0.01;test_accuracy=0.02" -P compare_devices.cmake
# Each KEYS entry is name=largest allowed absolute difference. A build with
# CUDA on a machine without a GPU has no cuda device: the script then prints
# "anvil-test-skipped: ..." (the tests' SKIP_REGULAR_EXPRESSION) and stops.
function(run_sample tail out_var)
  execute_process(COMMAND ${COMMAND} ${tail} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 AND "${err}" MATCHES "no backend for device cuda")
    set(${out_var} SKIP PARENT_SCOPE)
    return()
  endif()
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " shown "${COMMAND};${tail}")
    message(FATAL_ERROR "sample failed (exit ${rc}): ${shown}\n${out}\n${err}")
  endif()
  string(STRIP "${out}" out)
  string(REGEX MATCH "[^\n]*$" last "${out}")
  set(${out_var} "${last}" PARENT_SCOPE)
endfunction()

run_sample("${FIRST}" first_json)
run_sample("${SECOND}" second_json)
if(first_json STREQUAL "SKIP" OR second_json STREQUAL "SKIP")
  message("anvil-test-skipped: no CUDA device here (no GPU, and not the emulated-GPU build)")
  return()
endif()
set(failed "")
foreach(entry ${KEYS})
  string(REGEX MATCH "^([^=]+)=(.+)$" _ "${entry}")
  set(key ${CMAKE_MATCH_1})
  set(tolerance ${CMAKE_MATCH_2})
  string(JSON a ERROR_VARIABLE e1 GET "${first_json}" ${key})
  string(JSON b ERROR_VARIABLE e2 GET "${second_json}" ${key})
  if(e1 OR e2)
    message(FATAL_ERROR "no '${key}' in the last line:\n${first_json}\n${second_json}")
  endif()
  # CMake has no floating arithmetic: compare |a - b| through math(EXPR) on
  # values scaled to integers (six decimals are more than the samples print).
  foreach(v a b tolerance)
    execute_process(COMMAND awk "BEGIN { printf \"%d\", ${${v}} * 1000000 }" OUTPUT_VARIABLE ${v}_scaled)
  endforeach()
  math(EXPR diff "${a_scaled} - ${b_scaled}")
  if(diff LESS 0)
    math(EXPR diff "-${diff}")
  endif()
  message(STATUS "${key}: ${FIRST} ${a}, ${SECOND} ${b} (tolerance ${tolerance})")
  if(diff GREATER tolerance_scaled)
    string(APPEND failed "${key}: ${a} vs ${b} differ by more than ${tolerance}\n")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "the two runs disagree:\n${failed}${first_json}\n${second_json}")
endif()
