# CACHEDARRAYS_SANITIZE=address|undefined|thread|address,undefined instruments
# every target of the project (library, tests, examples, benchmarks).
# AddressSanitizer and UndefinedBehaviorSanitizer combine into one build (CI
# runs them so, to build and run the suite once instead of twice);
# ThreadSanitizer cannot be combined with AddressSanitizer.
if(CACHEDARRAYS_SANITIZE)
  string(REPLACE "," ";" cachedarrays_sanitizers "${CACHEDARRAYS_SANITIZE}")
  set(cachedarrays_san_flags -fno-omit-frame-pointer)
  foreach(san IN LISTS cachedarrays_sanitizers)
    if(san STREQUAL "address")
      list(APPEND cachedarrays_san_flags -fsanitize=address)
    elseif(san STREQUAL "undefined")
      list(APPEND cachedarrays_san_flags -fsanitize=undefined -fno-sanitize-recover=undefined)
    elseif(san STREQUAL "thread")
      list(APPEND cachedarrays_san_flags -fsanitize=thread)
    else()
      message(FATAL_ERROR "CACHEDARRAYS_SANITIZE='${CACHEDARRAYS_SANITIZE}' is not supported: '${san}' is not a "
                          "sanitizer; use address, undefined, thread or address,undefined (or leave it empty)")
    endif()
  endforeach()
  if("thread" IN_LIST cachedarrays_sanitizers AND NOT CACHEDARRAYS_SANITIZE STREQUAL "thread")
    message(FATAL_ERROR "CACHEDARRAYS_SANITIZE='${CACHEDARRAYS_SANITIZE}': ThreadSanitizer cannot be combined "
                        "with another sanitizer; use thread alone")
  endif()
  # The reports need at least line tables; a build type that asks for debug
  # information (-g, -g1, ...) keeps its own level.
  string(TOUPPER "${CMAKE_BUILD_TYPE}" cachedarrays_build_type)
  if(NOT "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${cachedarrays_build_type}}" MATCHES "(^| )-g")
    list(APPEND cachedarrays_san_flags -g1)
  endif()
  add_compile_options(${cachedarrays_san_flags})
  add_link_options(${cachedarrays_san_flags})
endif()
