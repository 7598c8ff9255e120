# cmake -P script: shows that tools/check_layers.py catches an include that
# runs against the layers. Copies src/ and include/ to a scratch tree, plants
# `#include "cachedarrays/runtime/runtime.hpp"` (a higher layer) at the end
# of the heap layer's device_spec.hpp, and requires the checker to fail
# naming that file and line.
file(REMOVE_RECURSE ${SCRATCH})
file(COPY ${SOURCE_DIR}/src ${SOURCE_DIR}/include DESTINATION ${SCRATCH})
set(planted ${SCRATCH}/include/cachedarrays/heap/device_spec.hpp)
file(READ ${planted} content)
string(REGEX MATCHALL "\n" newlines "${content}")
list(LENGTH newlines count)
math(EXPR line "${count} + 1")
file(APPEND ${planted} "#include \"cachedarrays/runtime/runtime.hpp\"\n")
execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/check_layers.py --root ${SCRATCH}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "check_layers.py passed a tree with a planted wrong include")
endif()
set(expected "include/cachedarrays/heap/device_spec.hpp:${line}: includes cachedarrays/runtime/runtime.hpp (runtime layer)")
string(FIND "${out}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "check_layers.py failed, but did not name the planted include: expected '${expected}'")
endif()
