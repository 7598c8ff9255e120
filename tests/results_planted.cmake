# cmake -P script: shows that `tools/render_results.py check` (ctest
# results.rendered) passes a freshly rendered results folder and fails on
# every kind of stale file in it. Renders two of the repository's recorded
# benchmarks into a scratch folder, so that a check right after the render
# also shows that rendering twice gives the same bytes; then edits a page,
# changes a chart, removes a chart and adds a page no recorded file renders.
# The check must fail naming exactly those four files and saying how to
# refresh them.
#
#   cmake -DSOURCE_DIR=<repo> -DPYTHON=/usr/bin/python3 -DSCRATCH=<dir> -P results_planted.cmake

include(${CMAKE_CURRENT_LIST_DIR}/planted_checker.cmake)

# Runs tools/render_results.py --results ${SCRATCH} <step>; sets checker_rc
# and checker_out as run_planted_checker does, for the require_ functions.
function(run_render step)
  execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/render_results.py --results ${SCRATCH} ${step}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  set(checker_rc "${rc}" PARENT_SCOPE)
  set(checker_out "${out}${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${SCRATCH})
foreach(name hint_overhead worker_scaling)
  file(COPY ${SOURCE_DIR}/docs/results/data/${name}.json DESTINATION ${SCRATCH}/data)
endforeach()
run_render(render)
if(NOT checker_rc EQUAL 0)
  message(FATAL_ERROR "render_results.py render failed on the repository's recorded figures")
endif()
foreach(file README.md hint_overhead.md worker_scaling.md charts/hint_overhead.png charts/worker_scaling.png)
  if(NOT EXISTS ${SCRATCH}/${file})
    message(FATAL_ERROR "render_results.py render did not write ${file}")
  endif()
endforeach()
run_render(check)
require_no_findings(render_results.py "right after a render: rendering twice did not give the same bytes")

file(APPEND ${SCRATCH}/hint_overhead.md "A line typed by hand.\n")
file(APPEND ${SCRATCH}/charts/worker_scaling.png "x")
file(REMOVE ${SCRATCH}/charts/hint_overhead.png)
file(WRITE ${SCRATCH}/gone.md "# gone\n\nThe page of a benchmark whose recording was removed.\n")
run_render(check)
require_planted_findings(render_results.py "render_results: 4 file(s) stale"
  "hint_overhead.md: stale (it differs from what the recorded figures render)"
  "charts/worker_scaling.png: stale (it differs from what the recorded figures render)"
  "charts/hint_overhead.png: missing (the recorded figures render it)"
  "gone.md: stale (no recorded figure renders it any more)"
  "refresh them with `/usr/bin/python3 tools/render_results.py --results ${SCRATCH} render`")
