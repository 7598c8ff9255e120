# Warnings for the project's own targets; -Werror when CACHEDARRAYS_WERROR.
function(cachedarrays_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    # GCC 12 at -O2 and above reports -Wrestrict (GCC bug 105329) and
    # -Warray-bounds false positives inside std::string concatenation, which
    # come and go with inlining; both stay on for other compilers, and the
    # AddressSanitizer stage checks every access's bounds at run time.
    "$<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict;-Wno-array-bounds>"
    $<$<BOOL:${CACHEDARRAYS_WERROR}>:-Werror>)
endfunction()
