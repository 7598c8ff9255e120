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
  message(FATAL_ERROR "CASE='${CASE}': expected wrong_include, cross_layer_detail, tool_includes_bench or "
                      "tool_includes_detail")
endif()

function(check_layers out_var rc_var)
  execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/check_layers.py --root ${SCRATCH}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
endfunction()

# Whatever else the tree holds, the checker's complaint below is the plant's.
check_layers(out rc)
string(FIND "${out}" "${file}:" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "check_layers.py names ${file} before anything is planted in it")
endif()

file(READ ${SCRATCH}/${file} content)
string(REGEX MATCHALL "\n" newlines "${content}")
list(LENGTH newlines count)
math(EXPR line "${count} + 1")
file(APPEND ${SCRATCH}/${file} "${planted}\n")

check_layers(out rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "check_layers.py passed a tree with a planted wrong include (${CASE})")
endif()
set(expected "${file}:${line}: ${says}")
string(FIND "${out}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "check_layers.py failed, but did not name the planted include: expected '${expected}'")
endif()
