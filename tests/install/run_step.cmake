# Included by the install tests' cmake -P scripts.

# run(<command...>): runs one step; a failing step fails the test.
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGV}")
  endif()
endfunction()

# The programs must find the installed libraries through RUNPATHs alone, as
# they would for a user who installed into a non-system prefix.
if(DEFINED ENV{LD_LIBRARY_PATH})
  message(STATUS "unsetting LD_LIBRARY_PATH ($ENV{LD_LIBRARY_PATH}): libraries must be found by RUNPATH")
  unset(ENV{LD_LIBRARY_PATH})
endif()
