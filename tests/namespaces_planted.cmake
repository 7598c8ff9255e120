# cmake -P script: shows that tools/check_namespaces.py catches a namespace
# that does not follow its folder, of both kinds: a room's file opening the
# core's namespace (`namespace cachedarrays {` in plan's program.hpp) and a
# detail/ file opening its layer's public namespace (`namespace cachedarrays {`
# in heap/detail/treap.hpp, whose code belongs in cachedarrays::detail).
# Copies src/ and include/ to a scratch tree, requires the checker to pass
# it, plants both lines at the ends of their files, and requires it to fail
# naming exactly those two lines.
#
#   cmake -DSOURCE_DIR=<repo> -DPYTHON=/usr/bin/python3 -DSCRATCH=<dir> -P namespaces_planted.cmake
file(REMOVE_RECURSE ${SCRATCH})
file(COPY ${SOURCE_DIR}/src ${SOURCE_DIR}/include DESTINATION ${SCRATCH})

include(${CMAKE_CURRENT_LIST_DIR}/planted_checker.cmake)
run_planted_checker(check_namespaces.py)
require_no_findings(check_namespaces.py "on the tree as it is, before anything was planted")

set(findings)
foreach(file include/cachedarrays/plan/program/program.hpp include/cachedarrays/heap/detail/treap.hpp)
  file(READ ${SCRATCH}/${file} content)
  string(REGEX MATCHALL "\n" newlines "${content}")
  list(LENGTH newlines count)
  math(EXPR line "${count} + 1")
  file(APPEND ${SCRATCH}/${file} "namespace cachedarrays {}\n")
  list(APPEND findings "${file}:${line}: opens namespace cachedarrays, but")
endforeach()

run_planted_checker(check_namespaces.py)
require_planted_findings(check_namespaces.py "2 namespace(s) against their folders" ${findings})
