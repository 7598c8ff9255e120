// The version header is written by CMake from project(VERSION): its string
// and its numbers must say the same version.
#include <doctest/doctest.h>

#include <string>

#include "cachedarrays/version.hpp"

namespace ca = cachedarrays;

TEST_CASE("version: the string is major.minor.patch of the numbers, all written from project(VERSION)") {
  const std::string expected = std::to_string(ca::version_major) + "." + std::to_string(ca::version_minor) + "." +
                               std::to_string(ca::version_patch);
  CHECK(std::string(ca::version_string) == expected);
  CHECK(ca::version_major + ca::version_minor + ca::version_patch > 0);  // a version was written, not 0.0.0
}
