# CACHEDARRAYS_SANITIZE=address|undefined|thread instruments every target of
# the project (library, tests, examples, benchmarks).
if(CACHEDARRAYS_SANITIZE)
  if(CACHEDARRAYS_SANITIZE STREQUAL "address")
    set(cachedarrays_san_flags -fsanitize=address -fno-omit-frame-pointer)
  elseif(CACHEDARRAYS_SANITIZE STREQUAL "undefined")
    set(cachedarrays_san_flags -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  elseif(CACHEDARRAYS_SANITIZE STREQUAL "thread")
    set(cachedarrays_san_flags -fsanitize=thread)
  else()
    message(FATAL_ERROR "CACHEDARRAYS_SANITIZE='${CACHEDARRAYS_SANITIZE}' is not supported; "
                        "use address, undefined or thread (or leave it empty)")
  endif()
  add_compile_options(${cachedarrays_san_flags} -g)
  add_link_options(${cachedarrays_san_flags})
endif()
