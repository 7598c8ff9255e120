# Warnings for the project's own targets; -Werror when CACHEDARRAYS_WERROR.
function(cachedarrays_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    # GCC 12 at -O3 reports -Wrestrict false positives inside std::string
    # concatenation (GCC bug 105329); the warning stays on for other compilers.
    $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>
    $<$<BOOL:${CACHEDARRAYS_WERROR}>:-Werror>)
endfunction()
