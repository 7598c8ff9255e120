// Where a Runtime's out_of_memory writes a memory snapshot of the moment
// before it is thrown (Runtime::set_snapshot_directory): the directory, its
// check, and the write that must not throw, since the out_of_memory is the
// error to report and the snapshot only explains it. The Runtime's lock
// guards it; this class takes none.
#pragma once

#include "cachedarrays/config.hpp"

#include <filesystem>
#include <functional>
#include <string>

#include "cachedarrays/runtime/memory_snapshot.hpp"

namespace cachedarrays {

/// A snapshot directory, or none (empty, the default).
class SnapshotDirectory {
 public:
  /// Why `directory` cannot be a snapshot directory (it exists and is not a
  /// directory), or empty when it can; a missing one is made when first
  /// needed.
  [[nodiscard]] static std::string problem(const std::filesystem::path& directory);
  /// `directory` made absolute (so that a message's path still leads to the
  /// file after the program changed its working directory), empty kept.
  /// Throws invalid_argument for one with a problem().
  [[nodiscard]] static std::filesystem::path checked(std::filesystem::path directory);

  /// Makes `directory` (a checked() one) the directory; empty: none.
  void set(std::filesystem::path directory) noexcept { directory_ = std::move(directory); }
  /// The directory; empty: none.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return directory_; }

  /// Where a snapshot went, for the out_of_memory's message: the file, or
  /// why there is none (both empty: no directory).
  struct Written {
    std::string path;     ///< The file written.
    std::string failure;  ///< Why none was.
  };
  /// Writes the snapshot `take` makes into a fresh file of the directory
  /// (made if missing); nothing without a directory. Never throws.
  [[nodiscard]] Written write(const std::function<MemorySnapshot()>& take) const noexcept;

 private:
  std::filesystem::path directory_;
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/snapshot_directory-inl.hpp"
#endif
