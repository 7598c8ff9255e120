# cmake -P: the README shows examples/quickstart.cpp and
# examples/custom_policy.cpp verbatim, so its code is compiled and run as a
# test and cannot rot. Fails naming the example the README no longer matches.
file(READ ${README} readme)
foreach(example IN LISTS EXAMPLES)
  file(READ ${example} code)
  string(FIND "${readme}" "${code}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md does not contain ${example} verbatim; paste the current file into its code block")
  endif()
endforeach()
