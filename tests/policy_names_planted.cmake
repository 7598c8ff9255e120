# cmake -P script: shows that tools/check_policy_names.py catches a policy's
# name compared outside the policy layer, and only there. Copies src/,
# include/ and bench/ to a scratch tree and plants, at the end of
# bench/training_runs.hpp, a comparison with "2lm:m", one with "ca-lm" on
# the left, a check for the prefix "autotm", and a comparison inside a
# comment; and a comparison in the policy layer's registry-inl.hpp. The
# checker must fail naming exactly the three planted comparisons in bench/.
#
#   cmake -DSOURCE_DIR=<repo> -DPYTHON=/usr/bin/python3 -DSCRATCH=<dir> -P policy_names_planted.cmake
file(REMOVE_RECURSE ${SCRATCH})
file(COPY ${SOURCE_DIR}/src ${SOURCE_DIR}/include ${SOURCE_DIR}/bench DESTINATION ${SCRATCH})
set(planted ${SCRATCH}/bench/training_runs.hpp)
file(READ ${planted} content)
string(REGEX MATCHALL "\n" newlines "${content}")
list(LENGTH newlines count)
math(EXPR first "${count} + 1")
math(EXPR second "${count} + 2")
math(EXPR third "${count} + 3")
file(APPEND ${planted} [=[
inline bool planted_memory_mode(const std::string& p) { return p == "2lm:m"; }
inline bool planted_not_lm(const std::string& p) { return "ca-lm" != p; }
inline bool planted_autotm(const std::string& p) { return p.rfind("autotm", 0) == 0; }
// A comment may say p == "redl": it compares nothing.
]=])
file(APPEND ${SCRATCH}/include/cachedarrays/policy/registry-inl.hpp [=[
inline bool planted_in_policy(const std::string& p) { return p == "ca-lm"; }
]=])
execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/check_policy_names.py --root ${SCRATCH}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "check_policy_names.py passed a tree with planted comparisons of policy names")
endif()
foreach(expected "bench/training_runs.hpp:${first}: compares the policy name \"2lm:m\""
                 "bench/training_runs.hpp:${second}: compares the policy name \"ca-lm\""
                 "bench/training_runs.hpp:${third}: compares the prefix \"autotm\" of policy names")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check_policy_names.py failed, but did not name a planted comparison: expected '${expected}'")
  endif()
endforeach()
string(FIND "${out}" "3 comparison(s)" at)
if(at EQUAL -1)
  message(FATAL_ERROR "check_policy_names.py reported more than the three planted comparisons: the comment's, or "
                      "the policy layer's, was taken for one")
endif()
