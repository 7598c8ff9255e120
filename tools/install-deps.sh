#!/usr/bin/env bash
# Installs the Debian packages cachedarrays builds with, only those missing.
# Nothing is downloaded at build or run time beyond these packages.
#   bash tools/install-deps.sh          everything: the library, trainer, tests, sanitizers, fuzzers, docs
#   bash tools/install-deps.sh example  only what building the library and running train_cnn needs
set -euo pipefail

profile=${1:-all}
case "$profile" in
  all|example) ;;
  *) echo "install-deps: unknown profile '$profile'; allowed: all (the default) or example" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config git
  libpmem-dev      # PMDK: DAX heaps (pmem_map_file, pmem_memcpy_nodrain)
  libpmem2-dev     # PMDK: bad blocks of a DAX heap's file (pmem2_badblock_next)
  libnuma-dev      # NUMA / CXL heaps and DRAM binding
  libhwloc-dev     # hwloc: discovery of the machine's memory tiers (heap/discover.hpp, cachedarrays-info)
  libtbb-dev       # oneTBB: parallel prefault and copies
  coinor-libcbc-dev   # COIN-OR Cbc: the offset planner MIP (plan/offsets/dsa_mip.hpp) and AutoTM ILP (plan/schedule/autotm.hpp)
  libfmt-dev       # formatting of stats and messages
  doctest-dev      # the test suite
  libcli11-dev     # command lines of examples and benchmarks
  libdnnl-dev      # oneDNN: the CNN trainer's kernels
  ocl-icd-opencl-dev  # Debian's oneDNN CMake package looks for OpenCL (its GPU runtime)
  nlohmann-json3-dev  # programs saved as JSON; JSON output of benchmarks
  libeigen3-dev    # Eigen (header-only): the Gaussian process of AutoSwap's Bayesian optimisation (plan/schedule/autoswap_bo.hpp)
  zlib1g-dev       # gzipped IDX files (Fashion-MNIST) and checkpoint checksums in the CNN trainer
  dataset-fashion-mnist  # the trainer's real data set (gzipped IDX under /usr/share/datasets/fashion-mnist)
)
# What the test suite adds: the example's build finds MPI and the plotting
# tools when they are there and does without them otherwise.
if [ "$profile" = all ]; then
  packages+=(
    libopenmpi-dev openmpi-bin  # MPI: data-parallel training over ranks (nn/mpi_communicator.hpp, mpirun)
    python3-matplotlib  # tools/plot_*.py (run by /usr/bin/python3) and their tests
    clang libclang-rt-dev  # libFuzzer: the fuzz targets (fuzz/) that tools/test.sh runs
    clang-format     # the layout CI checks (tools/check_format.sh, .clang-format)
    doxygen          # the API reference (cmake/docs.cmake), built and checked by tools/test.sh
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
