# cmake -P script: shows that tools/check_function_length.py catches a
# function longer than its limit, and nothing else. Writes a small tree into
# a scratch directory: under examples/, a function of 81 lines (over the
# limit of 80) after one of exactly 80 and a class whose members add up to
# more than 80 lines but are each short; under bench/, a function whose
# comment and string literal hold unbalanced braces. The checker must fail
# naming only the long function; the tree without it must pass.
#
#   cmake -DSOURCE_DIR=<repo> -DPYTHON=/usr/bin/python3 -DSCRATCH=<dir> -P function_length_planted.cmake

# A function of `lines` lines in all: its signature, lines-2 statements and
# its closing brace.
function(planted_function name lines out)
  set(text "int ${name}(int x) {\n")
  math(EXPR statements "${lines} - 2")
  foreach(i RANGE 1 ${statements})
    string(APPEND text "  x += ${i};\n")
  endforeach()
  string(APPEND text "  return x; }\n")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(write_tree planted)
  file(REMOVE_RECURSE ${SCRATCH})
  # Lines 1-2, then an 80-line function at line 3.
  set(cpp "// A planted file for tests/function_length_planted.cmake.\nnamespace {\n")
  planted_function(at_the_limit 80 fits)
  string(APPEND cpp "${fits}")
  # A class of many short members: each is its own function.
  string(APPEND cpp "struct Many {\n")
  foreach(i RANGE 1 30)
    string(APPEND cpp "  int member${i}() const {\n    return ${i};\n  }\n")
  endforeach()
  string(APPEND cpp "};\n")
  if(planted)
    # Line 3 + 80 + 1 (struct) + 90 + 1 (its end): line 175.
    planted_function(too_long 81 long)
    string(APPEND cpp "${long}")
  endif()
  string(APPEND cpp "}  // namespace\n")
  file(WRITE ${SCRATCH}/examples/planted.cpp "${cpp}")
  file(WRITE ${SCRATCH}/bench/braces.cpp [=[
// A comment with an unbalanced brace: {
const char* text = "{ {";
char brace = '{';
int main() { return text[0] == brace ? 0 : 1; }
]=])
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/planted_checker.cmake)

write_tree(ON)
run_planted_checker(check_function_length.py)
require_planted_findings(check_function_length.py "1 function(s) over 80 lines"
  "examples/planted.cpp:175: too_long is 81 lines")

write_tree(OFF)
run_planted_checker(check_function_length.py)
require_no_findings(check_function_length.py "a tree whose longest function has 80 lines")
