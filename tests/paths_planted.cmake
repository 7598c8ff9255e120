# cmake -P script: shows that tools/check_paths.py catches every kind of path
# that leads outside the repository, and nothing else. Writes a small tree
# into a scratch directory: a Markdown link and a C++ include that climb out
# of it, a CMake definition above the project's directory and a comment
# naming one machine's home directory, beside paths that stay inside (a link
# to a sibling page, a CMake path into the tree, an install's $ORIGIN/..,
# a system path). The checker must fail naming exactly the four planted
# lines; the tree without them must pass.
#
#   cmake -DSOURCE_DIR=<repo> -DPYTHON=/usr/bin/python3 -DSCRATCH=<dir> -P paths_planted.cmake

function(write_tree planted)
  file(REMOVE_RECURSE ${SCRATCH})
  file(WRITE ${SCRATCH}/README.md "The entry page.\n")
  set(md "A page: [the README](../README.md), datasets in /usr/share/datasets.\n")
  set(cpp "#include \"../src/inside.hpp\"\nint planted = 0;\n")
  set(cmake "set(DATA \"\${PROJECT_SOURCE_DIR}/data/dsa\")\nset(RPATH \"$ORIGIN/../lib\")\n")
  if(planted)
    string(APPEND md "The style: [STYLE](../../shared/STYLE.md).\n")
    string(APPEND cpp "#include \"../../outside.hpp\"\n// the papers are in /root/papers/\n")
    string(APPEND cmake "set(SHARED \"\${PROJECT_SOURCE_DIR}/../shared/data\")\n")
  endif()
  file(WRITE ${SCRATCH}/docs/page.md "${md}")
  file(WRITE ${SCRATCH}/tests/planted.cpp "${cpp}")
  file(WRITE ${SCRATCH}/tests/CMakeLists.txt "${cmake}")
endfunction()

function(run_checker)
  execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/check_paths.py --root ${SCRATCH}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  set(rc ${rc} PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
endfunction()

write_tree(TRUE)
run_checker()
if(rc EQUAL 0)
  message(FATAL_ERROR "check_paths.py passed a tree with planted paths outside it")
endif()
foreach(expected "docs/page.md:2: path outside the repository: ../../shared/STYLE.md"
                 "tests/planted.cpp:3: path outside the repository: ../../outside.hpp"
                 "tests/planted.cpp:4: path into one machine's directories: /root/papers/"
                 "tests/CMakeLists.txt:3: path outside the repository: \${PROJECT_SOURCE_DIR}/../shared/data")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check_paths.py did not name a planted path: expected '${expected}'")
  endif()
endforeach()
string(FIND "${out}" "check_paths: 4 path(s)" at)
if(at EQUAL -1)
  message(FATAL_ERROR "check_paths.py reported more than the four planted paths: one inside was taken for one")
endif()

write_tree(FALSE)
run_checker()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_paths.py failed a tree whose paths all stay inside it")
endif()
