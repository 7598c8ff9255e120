// The file a checkpoint save writes before it replaces the checkpoint:
// unnamed (O_TMPFILE) where the file system allows it, so that a process
// killed at any moment of the writing leaves nothing behind; named
// `<checkpoint>.tmp-<host>.<pid>` elsewhere, where a later run removes what a
// dead process left (remove_stale_checkpoint_temporaries).
//
// Publishing gives the unnamed file its temporary name (linkat through
// /proc/self/fd), renames it over the checkpoint and syncs the directory:
// a crash leaves the old checkpoint or the new one, never a mix. Between
// the link and the rename, two system calls, the file has a name; the name
// is registered where a signal handler can remove it
// (remove_checkpoint_temporary_now).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "cachedarrays/nn/checkpoint.hpp"

namespace cachedarrays::nn::detail {

/// `path` in single quotes, as every checkpoint message names a file.
[[nodiscard]] std::string quoted_path(const std::filesystem::path& path);

class CheckpointTemporaryFile {
 public:
  /// Creates a file of `size` bytes for a save to `target`, mapped writable,
  /// its blocks allocated (a full disk fails here, not as a SIGBUS while
  /// writing). Throws error naming `target`, the file and the reason.
  CheckpointTemporaryFile(const std::filesystem::path& target, std::size_t size, CheckpointTemporary kind);
  /// Unmaps and closes; removes the temporary name unless published.
  ~CheckpointTemporaryFile();
  CheckpointTemporaryFile(const CheckpointTemporaryFile&) = delete;
  CheckpointTemporaryFile& operator=(const CheckpointTemporaryFile&) = delete;

  [[nodiscard]] std::byte* data() const { return static_cast<std::byte*>(data_); }
  /// Whether the file has had no name since it was made (O_TMPFILE).
  [[nodiscard]] bool unnamed() const { return fd_ >= 0; }
  /// The temporary name it has (named) or gets when published (unnamed).
  [[nodiscard]] const std::string& name() const { return name_; }

  /// Makes the written bytes durable, unmaps them, gives the file its
  /// temporary name if it has none, renames it over `target` and syncs the
  /// directory. Throws error naming the step that failed; `target` is
  /// untouched then (but for the directory sync, after which it is already
  /// the new file).
  void publish();

 private:
  void create_named(std::size_t size);
  bool create_unnamed(std::size_t size);
  void persist();
  void unmap();
  void link_name();

  std::filesystem::path target_;
  std::string name_;
  int fd_ = -1;  // the unnamed file, kept open until it has a name
  void* data_ = nullptr;
  std::size_t mapped_ = 0;
  int is_pmem_ = 0;
  bool has_name_ = false;  // name_ exists on disk and is ours to remove
};

}  // namespace cachedarrays::nn::detail
