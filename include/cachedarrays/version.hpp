#pragma once

namespace cachedarrays {
inline constexpr int version_major = 0;  ///< The library's major version (the project's CMake version).
inline constexpr int version_minor = 1;  ///< The library's minor version.
inline constexpr int version_patch = 0;  ///< The library's patch version.
/// The same version as one string, "major.minor.patch".
inline constexpr const char* version_string = "0.1.0";
}  // namespace cachedarrays
