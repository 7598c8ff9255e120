# A ctest step for the tools that write files (benchmarks' JSON, the plot
# scripts' PNGs): it clears OUT_DIR, runs RUN1 and then RUN2 (each a ;-list:
# program and arguments) and fails unless both exit 0, every file in PNGS is
# a PNG, and, with JSON, every row of that JSON array has each of
# JSON_FIELDS (a benchmark's JSON is an object whose "rows" is that array,
# beside the "machine" it ran on: the rows are then checked, and the
# machine must be there). This is what breaks when the C++ side and a Python script
# stop agreeing on a format.
#
#   cmake -DOUT_DIR=dir "-DRUN1=prog;arg" ["-DRUN2=..."] "-DPNGS=a.png;b.png"
#         [-DJSON=rows.json "-DJSON_FIELDS=model;policy"] -P check_outputs.cmake

if(NOT DEFINED OUT_DIR OR NOT DEFINED RUN1)
  message(FATAL_ERROR "check_outputs: give -DOUT_DIR=<dir> and -DRUN1=<program;args>")
endif()
file(REMOVE_RECURSE "${OUT_DIR}")  # stale files from an earlier run must not pass
file(MAKE_DIRECTORY "${OUT_DIR}")

foreach(step RUN1 RUN2)
  if(NOT DEFINED ${step})
    continue()
  endif()
  execute_process(COMMAND ${${step}} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "check_outputs: ${step} (${${step}}) exited with ${status}:\n${out}")
  endif()
endforeach()

foreach(png IN LISTS PNGS)
  if(NOT EXISTS "${png}")
    message(FATAL_ERROR "check_outputs: ${png} was not written")
  endif()
  file(READ "${png}" signature LIMIT 8 HEX)
  if(NOT signature STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "check_outputs: ${png} is not a PNG (starts with ${signature})")
  endif()
endforeach()

if(DEFINED JSON)
  file(READ "${JSON}" text)
  string(JSON top ERROR_VARIABLE error TYPE "${text}")
  if(top STREQUAL "OBJECT")
    string(JSON machine ERROR_VARIABLE error GET "${text}" machine)
    if(error)
      message(FATAL_ERROR "check_outputs: ${JSON} has no \"machine\" object: ${error}")
    endif()
    string(JSON text ERROR_VARIABLE error GET "${text}" rows)
    if(error)
      message(FATAL_ERROR "check_outputs: ${JSON} is an object without \"rows\": ${error}")
    endif()
  endif()
  string(JSON rows ERROR_VARIABLE error LENGTH "${text}")
  if(error OR rows EQUAL 0)
    message(FATAL_ERROR "check_outputs: ${JSON} is not a non-empty JSON array: ${error}")
  endif()
  math(EXPR last "${rows} - 1")
  foreach(i RANGE ${last})
    foreach(field IN LISTS JSON_FIELDS)
      string(JSON type ERROR_VARIABLE error TYPE "${text}" ${i} ${field})
      if(error)
        message(FATAL_ERROR "check_outputs: row ${i} of ${JSON} has no field '${field}'")
      endif()
    endforeach()
  endforeach()
endif()
