# cmake -P script: shows that tools/check_environment.py catches a read of
# the environment outside runtime/environment, and only there. Copies src/
# and include/ to a scratch tree and plants, at the end of a heap file, a
# std::getenv and a ::secure_getenv; at the end of an nn file, a bare
# getenv; beside them a getenv in a comment and one in a string literal; and
# a getenv in runtime/environment-inl.hpp, the one place allowed. The checker
# must fail naming exactly the three planted calls outside it.
#
#   cmake -DSOURCE_DIR=<repo> -DPYTHON=/usr/bin/python3 -DSCRATCH=<dir> -P environment_reads_planted.cmake
file(REMOVE_RECURSE ${SCRATCH})
file(COPY ${SOURCE_DIR}/src ${SOURCE_DIR}/include DESTINATION ${SCRATCH})

# The line number the next appended line of `file` gets, in `out`.
function(next_line file out)
  file(READ ${file} content)
  string(REGEX MATCHALL "\n" newlines "${content}")
  list(LENGTH newlines count)
  math(EXPR next "${count} + 1")
  set(${out} ${next} PARENT_SCOPE)
endfunction()

set(heap_file include/cachedarrays/heap/detail/dax_memory-inl.hpp)
next_line(${SCRATCH}/${heap_file} heap_first)
math(EXPR heap_second "${heap_first} + 1")
file(APPEND ${SCRATCH}/${heap_file} [=[
inline const char* planted_tmpdir() { return std::getenv("TMPDIR"); }
inline const char* planted_secure() { return ::secure_getenv("HOME"); }
// A comment may say getenv("TMPDIR"): it reads nothing.
inline const char* planted_text = "getenv(\"HOME\") in a message";
]=])
set(nn_file src/nn/profiler.cpp)
next_line(${SCRATCH}/${nn_file} nn_line)
file(APPEND ${SCRATCH}/${nn_file} [=[
const char* planted_bare() { return getenv("XDG_CACHE_HOME"); }
]=])
file(APPEND ${SCRATCH}/include/cachedarrays/runtime/environment-inl.hpp [=[
inline const char* planted_allowed() { return std::getenv("CACHEDARRAYS_POLICY"); }
]=])

include(${CMAKE_CURRENT_LIST_DIR}/planted_checker.cmake)
run_planted_checker(check_environment.py)
require_planted_findings(check_environment.py "3 read(s)"
  "${heap_file}:${heap_first}: calls getenv"
  "${heap_file}:${heap_second}: calls secure_getenv"
  "${nn_file}:${nn_line}: calls getenv")
