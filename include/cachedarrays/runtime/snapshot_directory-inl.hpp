// Implementation of snapshot_directory.hpp (header-only mode includes it from
// there; the compiled library from src/runtime/runtime.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/snapshot_directory.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <system_error>
#include <utility>

#include "cachedarrays/error.hpp"

namespace cachedarrays {

namespace detail {

// Numbers the out_of_memory snapshots of the whole process, so that two
// runtimes never pick the same file name.
CACHEDARRAYS_INLINE std::uint64_t next_snapshot_number() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// A name no file in `directory` has yet (a pid of an earlier run may recur).
CACHEDARRAYS_INLINE std::filesystem::path fresh_snapshot_path(const std::filesystem::path& directory) {
  for (;;) {
    std::filesystem::path path = directory / ("cachedarrays-oom-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(next_snapshot_number()) + ".json");
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return path;
  }
}

}  // namespace detail

CACHEDARRAYS_INLINE std::string SnapshotDirectory::problem(const std::filesystem::path& directory) {
  std::error_code ec;
  if (std::filesystem::exists(directory, ec) && !std::filesystem::is_directory(directory, ec)) {
    return "'" + directory.string() + "' exists and is not a directory; give a directory (created when first needed)";
  }
  return {};
}

CACHEDARRAYS_INLINE std::filesystem::path SnapshotDirectory::checked(std::filesystem::path directory) {
  if (directory.empty()) return directory;
  if (std::string why = problem(directory); !why.empty()) {
    throw invalid_argument("cachedarrays: set_snapshot_directory: " + why + ", or an empty path for no snapshots");
  }
  std::error_code ec;
  if (std::filesystem::path absolute = std::filesystem::absolute(directory, ec); !ec) directory = std::move(absolute);
  return directory;
}

CACHEDARRAYS_INLINE SnapshotDirectory::Written SnapshotDirectory::write(
    const std::function<MemorySnapshot()>& take) const noexcept {
  if (directory_.empty()) return {};
  try {
    std::error_code ec;
    std::filesystem::create_directories(directory_, ec);
    if (ec) return {{}, "cannot create the snapshot directory '" + directory_.string() + "': " + ec.message()};
    const std::filesystem::path path = detail::fresh_snapshot_path(directory_);
    write_memory_snapshot(take(), path);
    return {path.string(), {}};
  } catch (const std::exception& e) {
    try {
      return {{}, "writing it into '" + directory_.string() + "' failed: " + e.what()};
    } catch (...) {
      return {};
    }
  } catch (...) {
    return {{}, "writing it failed with an unknown exception"};
  }
}

}  // namespace cachedarrays
