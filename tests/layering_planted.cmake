# cmake -P script: shows that tools/check_layers.py catches each kind of
# include it forbids. Copies src/ and include/ (and bench/'s shared header,
# which a tool could reach) to a scratch tree, plants one include (CASE picks
# which) at the end of a file, and requires the checker to fail naming that
# file and line, a file it named nowhere before the plant:
#   wrong_include        `#include "cachedarrays/runtime/runtime.hpp"` (a
#                        higher layer) in the heap layer's device_spec.hpp;
#   cross_layer_detail   `#include "cachedarrays/heap/detail/treap.hpp"` in
#                        the manager's stats.hpp: a lower layer, as the
#                        arrows allow, but that layer's private detail/;
#   wrong_room           `#include "cachedarrays/plan/schedule/autotm.hpp"`
#                        (plan's schedule room) in plan's program room:
#                        the layer allows it, the rooms' arrows do not;
#   tool_includes_bench  `#include "bench_support.hpp"`, found through an
#                        include directory of bench/, in a tool;
#   tool_includes_detail `#include <cachedarrays/manager/detail/copy_engine.hpp>`
#                        in a tool.
# The tool is tools/planted_tool.cpp, which includes the umbrella header
# before the plant; the scratch tree holds no other tool.
file(REMOVE_RECURSE ${SCRATCH})
file(COPY ${SOURCE_DIR}/src ${SOURCE_DIR}/include DESTINATION ${SCRATCH})
file(COPY ${SOURCE_DIR}/bench/bench_support.hpp DESTINATION ${SCRATCH}/bench)
set(tool tools/planted_tool.cpp)
file(WRITE ${SCRATCH}/${tool} "#include <cachedarrays/cachedarrays.hpp>\n")

if(CASE STREQUAL "wrong_include")
  set(file include/cachedarrays/heap/device_spec.hpp)
  set(include "cachedarrays/runtime/runtime.hpp")
  set(planted "#include \"${include}\"")
  set(says "includes ${include} (runtime layer)")
elseif(CASE STREQUAL "cross_layer_detail")
  set(file include/cachedarrays/manager/stats.hpp)
  set(include "cachedarrays/heap/detail/treap.hpp")
  set(planted "#include \"${include}\"")
  set(says "includes ${include}, a detail/ header of the heap layer")
elseif(CASE STREQUAL "wrong_room")
  set(file include/cachedarrays/plan/program/fast_tier_bound.hpp)
  set(include "cachedarrays/plan/schedule/autotm.hpp")
  set(planted "#include \"${include}\"")
  set(says "includes ${include} (plan's schedule room), but plan's program room may include only")
elseif(CASE STREQUAL "tool_includes_bench")
  set(file ${tool})
  set(include "bench_support.hpp")
  set(planted "#include \"${include}\"")
  set(says "includes ${include} from bench/")
elseif(CASE STREQUAL "tool_includes_detail")
  set(file ${tool})
  set(include "cachedarrays/manager/detail/copy_engine.hpp")
  set(planted "#include <${include}>")
  set(says "includes ${include}, a detail/ header")
else()
  message(FATAL_ERROR "CASE='${CASE}': expected wrong_include, cross_layer_detail, wrong_room, "
                      "tool_includes_bench or tool_includes_detail")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/planted_checker.cmake)

# Whatever else the tree holds, the checker's complaint below is the plant's.
run_planted_checker(check_layers.py)
string(FIND "${checker_out}" "${file}:" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "check_layers.py names ${file} before anything is planted in it")
endif()

file(READ ${SCRATCH}/${file} content)
string(REGEX MATCHALL "\n" newlines "${content}")
list(LENGTH newlines count)
math(EXPR line "${count} + 1")
file(APPEND ${SCRATCH}/${file} "${planted}\n")

run_planted_checker(check_layers.py)
require_planted_findings(check_layers.py "${file}:${line}: ${says}")
