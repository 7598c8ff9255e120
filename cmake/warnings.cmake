# Warnings for the project's own targets; -Werror when CACHEDARRAYS_WERROR.
function(cachedarrays_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    $<$<BOOL:${CACHEDARRAYS_WERROR}>:-Werror>)
endfunction()
