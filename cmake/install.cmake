# cmake --install: headers, the libraries, a package config and a version
# file, so that find_package(cachedarrays CONFIG REQUIRED) gives
# cachedarrays::cachedarrays, cachedarrays::header_only and (when built)
# cachedarrays::nn; and a pkg-config file for builds without CMake.
include(CMakePackageConfigHelpers)

set(CACHEDARRAYS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/cachedarrays)

set(cachedarrays_installed_targets cachedarrays cachedarrays_header_only)
if(CACHEDARRAYS_BUILD_NN)
  list(APPEND cachedarrays_installed_targets cachedarrays_nn)
endif()
if(CACHEDARRAYS_BUILD_TOOLS)
  list(APPEND cachedarrays_installed_targets cachedarrays-info)
  set_target_properties(cachedarrays-info PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  if(TARGET cachedarrays-plan)
    list(APPEND cachedarrays_installed_targets cachedarrays-plan)
    set_target_properties(cachedarrays-plan PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
    # cachedarrays-plan --png runs it from here (share/cachedarrays beside bin/).
    install(PROGRAMS tools/plot_plan.py DESTINATION ${CMAKE_INSTALL_DATADIR}/cachedarrays)
  endif()
endif()
# The libraries are installed side by side, so each finds the others next
# to itself: without this, a program linking only cachedarrays::nn from a
# non-system prefix starts with "libcachedarrays.so.0: cannot open shared
# object file" (the program's own RUNPATH does not apply to the
# dependencies of its libraries).
set_target_properties(cachedarrays PROPERTIES INSTALL_RPATH "$ORIGIN")
if(CACHEDARRAYS_BUILD_NN)
  set_target_properties(cachedarrays_nn PROPERTIES INSTALL_RPATH "$ORIGIN")
endif()
install(TARGETS ${cachedarrays_installed_targets} EXPORT cachedarraysTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/cachedarrays DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CACHEDARRAYS_GENERATED_INCLUDE_DIR}/cachedarrays/version.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cachedarrays)
install(EXPORT cachedarraysTargets NAMESPACE cachedarrays::
  DESTINATION ${CACHEDARRAYS_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/cachedarraysConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cachedarraysConfig.cmake
  INSTALL_DESTINATION ${CACHEDARRAYS_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cachedarraysConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cachedarraysConfig.cmake
              ${PROJECT_BINARY_DIR}/cachedarraysConfigVersion.cmake
  DESTINATION ${CACHEDARRAYS_INSTALL_CMAKEDIR})

# pkg-config: the prefix is found from where the .pc file lies
# (${pcfiledir}), so the file stays right for `cmake --install --prefix`
# into a prefix other than the configured one.
set(CACHEDARRAYS_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(cachedarrays_pc_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(cachedarrays_pc_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
file(RELATIVE_PATH cachedarrays_pc_to_prefix "/prefix/${CACHEDARRAYS_INSTALL_PKGCONFIGDIR}" "/prefix")
string(REGEX REPLACE "/$" "" cachedarrays_pc_to_prefix "${cachedarrays_pc_to_prefix}")
configure_file(cmake/cachedarrays.pc.in ${PROJECT_BINARY_DIR}/cachedarrays.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cachedarrays.pc DESTINATION ${CACHEDARRAYS_INSTALL_PKGCONFIGDIR})
