# What the planted-tree scripts (tests/*_planted.cmake) share: running one
# of the tree's checkers (tools/check_*.py) over the scratch tree they wrote,
# and requiring that it failed naming every planted line and nothing else.
# Included by those scripts, which set SOURCE_DIR, PYTHON and SCRATCH.

# Runs tools/<checker> --root ${SCRATCH} and prints what it said; sets
# checker_rc (its exit status) and checker_out (its output) in the caller.
function(run_planted_checker checker)
  execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/${checker} --root ${SCRATCH}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  set(checker_rc "${rc}" PARENT_SCOPE)
  set(checker_out "${out}" PARENT_SCOPE)
endfunction()

# Fails unless the checker's last run failed, its output naming each line
# given after `summary`, and holding `summary` (the count it reports, so that
# nothing beside the planted lines was taken for a finding).
function(require_planted_findings checker summary)
  if(checker_rc EQUAL 0)
    message(FATAL_ERROR "${checker} passed a tree with planted findings")
  endif()
  foreach(expected IN LISTS ARGN)
    string(FIND "${checker_out}" "${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${checker} failed, but did not name a planted line: expected '${expected}'")
    endif()
  endforeach()
  string(FIND "${checker_out}" "${summary}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${checker} did not report '${summary}': it took something beside the planted lines "
                        "for a finding, or missed one")
  endif()
endfunction()

# Fails unless the checker's last run passed.
function(require_no_findings checker why)
  if(NOT checker_rc EQUAL 0)
    message(FATAL_ERROR "${checker} failed ${why}")
  endif()
endfunction()
