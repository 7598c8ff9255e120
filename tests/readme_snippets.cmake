# cmake -P: the README shows examples/quickstart.cpp and
# examples/training_run.cpp, and the user guide's page on policies shows
# examples/custom_policy.cpp, each verbatim, so their
# code is compiled and run as a test and cannot rot. PAIRS is a list of
# DOCUMENT=EXAMPLE; fails naming the page that no longer matches its example.
foreach(pair IN LISTS PAIRS)
  string(REPLACE "=" ";" pair "${pair}")
  list(GET pair 0 document)
  list(GET pair 1 example)
  file(READ ${document} text)
  file(READ ${example} code)
  string(FIND "${text}" "${code}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${document} does not contain ${example} verbatim; paste the current file into its code block")
  endif()
endforeach()
