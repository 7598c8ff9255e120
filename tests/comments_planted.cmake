# cmake -P script: shows that tools/check_comments.py catches comments that
# say when instead of why, and only comments. Writes a small tree into a
# scratch directory: a C++ file with one comment naming an issue number and
# one carrying a commit hash, beside a Python script and a CMakeLists.txt
# whose strings (not comments) hold the same kind of text. The checker must
# fail naming exactly the two planted lines. Then the same C++ file with the
# issue and the hash moved into string literals (holding "//" as well) must
# pass: a string printed to the user is not a comment.
#
#   cmake -DSOURCE_DIR=<repo> -DPYTHON=/usr/bin/python3 -DSCRATCH=<dir> -P comments_planted.cmake

# The planted file's text with {ISSUE} and {HASH} standing for the two lines
# under test; the issue is on line 3 and the hash on line 5.
set(cpp_text [=[
// A planted file for tests/comments_planted.cmake.
int planted = 0;
{ISSUE}
int other = 1;
{HASH}
int last = 2;
]=])
set(issue_comment [=[// Kept as it is until issue 14 is closed.]=])
set(hash_comment [=[int third = 3;  // rolled back in f871601]=])
set(issue_string [=[const char* why = "// Kept as it is until issue 14 is closed.";]=])
set(hash_string [=[const char* when = R"(// rolled back in f871601, see #14)";]=])

function(write_tree issue_line hash_line)
  file(REMOVE_RECURSE ${SCRATCH})
  string(REPLACE "{ISSUE}" "${issue_line}" text "${cpp_text}")
  string(REPLACE "{HASH}" "${hash_line}" text "${text}")
  file(WRITE ${SCRATCH}/src/planted.cpp "${text}")
  file(WRITE ${SCRATCH}/tools/planted.py [=[
print("# issue 14, rolled back in f871601")  # a comment that says why
]=])
  file(WRITE ${SCRATCH}/CMakeLists.txt [=[
message(STATUS "rolled back in f871601 (#14)")  # a comment that says why
]=])
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/planted_checker.cmake)

# The planted comments: the checker fails, naming both lines and no others.
write_tree("${issue_comment}" "${hash_comment}")
run_planted_checker(check_comments.py)
require_planted_findings(check_comments.py ", 2 comment(s) naming"
  "src/planted.cpp:3: issue reference in a comment"
  "src/planted.cpp:5: commit hash in a comment")

# The same text in string literals: the checker passes.
write_tree("${issue_string}" "${hash_string}")
run_planted_checker(check_comments.py)
require_no_findings(check_comments.py "a tree whose issue number and commit hash are in strings only")
