#!/usr/bin/env bash
# The Debian package as a user meets it: `cmake --build BUILD --target package`
# makes cachedarrays_<version>_<arch>.deb; apt installs it (its dependencies
# are Debian packages); the install-consumer projects of tests/install/ are
# built against the system's /usr with find_package and pkg-config and run;
# then the package is removed again, leaving the machine as it was.
#   bash tools/check_deb.sh BUILD_DIR        (as root: it installs into /usr)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/check_deb.sh BUILD_DIR}
if [ "$(id -u)" -ne 0 ]; then
  echo "check_deb: installing a package needs root; run it as root (CI does)" >&2
  exit 2
fi
if dpkg-query -W -f='${Status}' cachedarrays 2>/dev/null | grep -q "install ok installed"; then
  echo "check_deb: a cachedarrays package is installed already; remove it first (apt-get remove cachedarrays)" >&2
  exit 2
fi
rm -f "$build"/cachedarrays_*.deb
cmake --build "$build" --target package
deb=$(ls "$build"/cachedarrays_*.deb)
echo "check_deb: $deb"
dpkg-deb --field "$deb" Package Version Depends
scratch=$(mktemp -d)
cleanup() {
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq cachedarrays >/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$(realpath "$deb")" >/dev/null
for consumer in consumer header_only_consumer nn_consumer; do
  echo "check_deb: $consumer against the installed package"
  cmake -DPREFIX=/usr -DCONSUMER_SOURCE="$PWD/tests/install/$consumer" -DCONSUMER_BUILD="$scratch/$consumer" \
    -DPROGRAM=$consumer -DCXX=c++ -P tests/install/run_consumer.cmake
done
echo "check_deb: consumer from pkg-config"
cmake -DPKGCONFIG_DIR=/usr/lib/pkgconfig -DPKG_CONFIG=pkg-config -DSTATIC=0 \
  -DSOURCE="$PWD/tests/install/consumer/main.cpp" -DOUTPUT="$scratch/pkg_config_consumer" -DCXX=c++ \
  -P tests/install/run_pkg_config.cmake
echo "check_deb: passed; removing the package"
