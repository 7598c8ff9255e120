# `cmake --build build --target package`: a Debian package (CPack's DEB
# generator) of what `cmake --install` installs, for /usr. Its dependencies
# are Debian's packages: the run-time libraries the installed binaries link
# (found by dpkg-shlibdeps), and the development packages that the installed
# CMake package and pkg-config file ask for (cachedarraysConfig.cmake's
# find_dependency calls and cachedarrays.pc's Requires), so that
# `apt-get install ./cachedarrays_*.deb` leaves a machine where
# find_package(cachedarrays CONFIG REQUIRED) works.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cachedarrays)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
    "A C++20 library that keeps a program's arrays in preallocated heaps on several memory tiers (DRAM, DAX "
    "persistent memory, CXL or far-NUMA memory) and moves them as the program's hints say, with the CachedArrays, "
    "AutoTM, AutoSwap and ReDL policies and a oneDNN-based CNN trainer.")
set(CPACK_PACKAGE_CONTACT "cachedarrays developers <cachedarrays@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Our own libraries, which dpkg-shlibdeps must find in the package itself.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
set(cachedarrays_dev_depends
    libfmt-dev libeigen3-dev libtbb-dev nlohmann-json3-dev pkg-config libpmem-dev libpmem2-dev libnuma-dev
    coinor-libcbc-dev libhwloc-dev)
if(CACHEDARRAYS_BUILD_NN)
  # Debian's oneDNN CMake package looks for OpenCL (its GPU runtime).
  list(APPEND cachedarrays_dev_depends libdnnl-dev ocl-icd-opencl-dev zlib1g-dev)
  if(CACHEDARRAYS_WITH_MPI)
    list(APPEND cachedarrays_dev_depends libopenmpi-dev)
  endif()
endif()
list(JOIN cachedarrays_dev_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
include(CPack)
