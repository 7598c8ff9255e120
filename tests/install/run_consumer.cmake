# cmake -P script: configure the consumer CONSUMER_SOURCE against the
# package installed in PREFIX, build it, run PROGRAM. Any failing step fails
# the test. Built unoptimised: the consumers check how the package is found,
# compiled and linked, not how fast the code runs, and the header-only one
# compiles the whole implementation, several times faster at -O0.
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)

file(REMOVE_RECURSE ${CONSUMER_BUILD})
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${CONSUMER_BUILD}
    -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0")
run(${CMAKE_COMMAND} --build ${CONSUMER_BUILD})
run(${CONSUMER_BUILD}/${PROGRAM})
