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

# The planted paths are spelt with ${up} for ".." and ${home} for a home
# directory, so that this file holds none itself.
set(up "..")
set(home "root")
set(sibling "elsewhere")

function(write_tree planted)
  file(REMOVE_RECURSE ${SCRATCH})
  file(WRITE ${SCRATCH}/README.md "The entry page.\n")
  set(md "A page: [the README](../README.md), datasets in /usr/share/datasets.\n")
  set(cpp "#include \"../src/inside.hpp\"\nint planted = 0;\n")
  set(cmake "set(DATA \"\${PROJECT_SOURCE_DIR}/data/dsa\")\nset(RPATH \"$ORIGIN/../lib\")\n")
  if(planted)
    string(APPEND md "A sibling: [notes](${up}/${up}/${sibling}/notes.md).\n")
    string(APPEND cpp "#include \"${up}/${up}/outside.hpp\"\n// the papers are in /${home}/papers/\n")
    string(APPEND cmake "set(SHARED \"\${PROJECT_SOURCE_DIR}/${up}/shared/data\")\n")
  endif()
  file(WRITE ${SCRATCH}/docs/page.md "${md}")
  file(WRITE ${SCRATCH}/tests/planted.cpp "${cpp}")
  file(WRITE ${SCRATCH}/tests/CMakeLists.txt "${cmake}")
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/planted_checker.cmake)

write_tree(TRUE)
run_planted_checker(check_paths.py)
require_planted_findings(check_paths.py "check_paths: 4 path(s)"
  "docs/page.md:2: path outside the repository: ${up}/${up}/${sibling}/notes.md"
  "tests/planted.cpp:3: path outside the repository: ${up}/${up}/outside.hpp"
  "tests/planted.cpp:4: path into one machine's directories: /${home}/papers/"
  "tests/CMakeLists.txt:3: path outside the repository: \${PROJECT_SOURCE_DIR}/${up}/shared/data")

write_tree(FALSE)
run_planted_checker(check_paths.py)
require_no_findings(check_paths.py "a tree whose paths all stay inside it")
