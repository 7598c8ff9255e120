// Where a DAX heap with no path makes its file when /dev/shm is missing
// (containers, macOS): a directory the process names, as TMPDIR does. The
// heap layer reads no environment; the runtime layer reads TMPDIR
// (runtime/environment.hpp) and sets it here for the whole process.
#pragma once

#include <filesystem>
#include <mutex>
#include <utility>

namespace cachedarrays {

namespace detail {

// Set while heaps may be made on other threads: behind a lock of its own.
inline std::mutex dax_fallback_mutex;
inline std::filesystem::path dax_fallback_setting;

}  // namespace detail

/// Makes `directory` where DAX heaps with no path make their files when
/// /dev/shm is missing; empty: /tmp. A directory that does not exist when a
/// heap is made is passed over for /tmp.
inline void set_dax_fallback_directory(std::filesystem::path directory) {
  const std::lock_guard guard(detail::dax_fallback_mutex);
  detail::dax_fallback_setting = std::move(directory);
}

/// The directory set_dax_fallback_directory gave; empty: none.
[[nodiscard]] inline std::filesystem::path dax_fallback_directory() {
  const std::lock_guard guard(detail::dax_fallback_mutex);
  return detail::dax_fallback_setting;
}

}  // namespace cachedarrays
