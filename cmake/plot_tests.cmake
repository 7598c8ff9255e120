# The plot scripts in tools/ run under Debian's /usr/bin/python3 with
# python3-matplotlib (tools/install-deps.sh installs it). Their tests are
# registered only where that interpreter can import matplotlib, and say so
# when it cannot, rather than failing a build that never asked for plots.
set(CACHEDARRAYS_PLOT_PYTHON /usr/bin/python3)
execute_process(COMMAND ${CACHEDARRAYS_PLOT_PYTHON} -c "import matplotlib"
                RESULT_VARIABLE _cachedarrays_matplotlib_status OUTPUT_QUIET ERROR_QUIET)
if(_cachedarrays_matplotlib_status EQUAL 0)
  set(CACHEDARRAYS_CAN_PLOT ON)
else()
  set(CACHEDARRAYS_CAN_PLOT OFF)
  message(STATUS "cachedarrays: /usr/bin/python3 cannot import matplotlib; the plot tests are not "
                 "registered (apt-get install python3-matplotlib)")
endif()

# add_output_test(NAME name OUT_DIR dir RUN1 prog args... [RUN2 prog args...]
#                 [PNGS files...] [JSON file JSON_FIELDS fields...])
# A ctest test through tests/check_outputs.cmake.
function(cachedarrays_add_output_test)
  cmake_parse_arguments(PARSE_ARGV 0 T "" "NAME;OUT_DIR;JSON" "RUN1;RUN2;PNGS;JSON_FIELDS")
  # Each -D value is itself a list: escape its separators so that it stays
  # one argument of the test command.
  set(args "-DOUT_DIR=${T_OUT_DIR}")
  foreach(var RUN1 RUN2 PNGS JSON JSON_FIELDS)
    if(T_${var})
      string(REPLACE ";" "\\;" value "${T_${var}}")
      list(APPEND args "-D${var}=${value}")
    endif()
  endforeach()
  add_test(NAME ${T_NAME} COMMAND ${CMAKE_COMMAND} ${args} -P ${PROJECT_SOURCE_DIR}/tests/check_outputs.cmake)
endfunction()
