# cmake -DREADME=... -DSOURCE=samples/tour.cpp -DPROGRAM=build/bin/tour -P check_tour.cmake
# The README shows the tour as code; this keeps the two from drifting apart
# and proves the shown code runs and passes its own checks.
file(READ "${README}" readme)
file(READ "${SOURCE}" source)
string(FIND "${readme}" "${source}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md no longer quotes ${SOURCE} verbatim: "
                      "paste the file into the README's tour code block again.")
endif()
execute_process(COMMAND "${PROGRAM}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the tour (${PROGRAM}) failed: exit status ${rc}")
endif()
