# cmake -P script: compile SOURCE with the flags `pkg-config --cflags
# --libs cachedarrays` gives for the installed package, whose .pc file is
# found through PKGCONFIG_DIR only (so it must have been installed there),
# then run it.
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)

set(ENV{PKG_CONFIG_PATH} ${PKGCONFIG_DIR})
if(STATIC)
  set(static --static)  # also the libraries libcachedarrays.a calls
endif()
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${static} cachedarrays
                RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs cachedarrays failed (${rc}): ${err}")
endif()
execute_process(COMMAND ${PKG_CONFIG} --variable=libdir cachedarrays
                OUTPUT_VARIABLE libdir OUTPUT_STRIP_TRAILING_WHITESPACE)
message(STATUS "pkg-config cachedarrays: ${flags} (libdir ${libdir})")
separate_arguments(flags UNIX_COMMAND "${flags}")
# pkg-config gives no RUNPATH; a user of a non-system prefix adds one, as here.
run(${CXX} -std=c++20 ${SOURCE} -o ${OUTPUT} ${flags} -Wl,-rpath,${libdir})
run(${OUTPUT})
