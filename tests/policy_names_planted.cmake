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
include(${CMAKE_CURRENT_LIST_DIR}/planted_checker.cmake)
run_planted_checker(check_policy_names.py)
# The comment's comparison and the policy layer's are not findings.
require_planted_findings(check_policy_names.py "3 comparison(s)"
  "bench/training_runs.hpp:${first}: compares the policy name \"2lm:m\""
  "bench/training_runs.hpp:${second}: compares the policy name \"ca-lm\""
  "bench/training_runs.hpp:${third}: compares the prefix \"autotm\" of policy names")
