# The API reference: Doxygen over the public headers (include/cachedarrays,
# without detail/ and the -inl implementation files). Every public class,
# function and member outside detail/ carries a doc comment, and the build
# fails on any warning, so an undocumented addition to the API is caught.
# `cmake --build build --target docs` writes build/docs/html/index.html.
find_package(Doxygen REQUIRED)
set(DOXYGEN_PROJECT_NAME "cachedarrays")
set(DOXYGEN_PROJECT_NUMBER "${PROJECT_VERSION}")
set(DOXYGEN_PROJECT_BRIEF "${PROJECT_DESCRIPTION}")
set(DOXYGEN_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/docs)
set(DOXYGEN_RECURSIVE YES)
set(DOXYGEN_FILE_PATTERNS *.hpp *.dox *.md)
set(DOXYGEN_EXCLUDE_PATTERNS */detail/* *-inl.hpp)
set(DOXYGEN_EXCLUDE_SYMBOLS detail *::detail)
set(DOXYGEN_STRIP_FROM_PATH ${PROJECT_SOURCE_DIR}/include ${CACHEDARRAYS_GENERATED_INCLUDE_DIR})
set(DOXYGEN_STRIP_FROM_INC_PATH ${PROJECT_SOURCE_DIR}/include ${CACHEDARRAYS_GENERATED_INCLUDE_DIR})
set(DOXYGEN_EXTRACT_ALL NO)
set(DOXYGEN_EXTRACT_STATIC YES)
set(DOXYGEN_WARN_IF_UNDOCUMENTED YES)
set(DOXYGEN_WARN_IF_DOC_ERROR YES)
set(DOXYGEN_WARN_NO_PARAMDOC NO)
set(DOXYGEN_WARN_AS_ERROR FAIL_ON_WARNINGS)
set(DOXYGEN_QUIET YES)
set(DOXYGEN_HAVE_DOT NO)
set(DOXYGEN_GENERATE_LATEX NO)
set(DOXYGEN_GENERATE_TREEVIEW YES)
set(DOXYGEN_JAVADOC_AUTOBRIEF YES)
set(DOXYGEN_MARKDOWN_SUPPORT YES)
set(DOXYGEN_USE_MDFILE_AS_MAINPAGE ${PROJECT_SOURCE_DIR}/docs/api.md)
# The headers' configuration macros as the compiled library sees them.
set(DOXYGEN_PREDEFINED "CACHEDARRAYS_HAS_MPI")
doxygen_add_docs(docs ${PROJECT_SOURCE_DIR}/include/cachedarrays
  ${CACHEDARRAYS_GENERATED_INCLUDE_DIR}/cachedarrays/version.hpp ${PROJECT_SOURCE_DIR}/docs/api.md
  ${PROJECT_SOURCE_DIR}/docs/namespaces.dox
  COMMENT "API reference (Doxygen) into ${PROJECT_BINARY_DIR}/docs/html")
