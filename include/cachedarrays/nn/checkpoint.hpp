// Training checkpoints: what a run needs to continue where it stopped (the
// model's identity, how far it got, its seed, free key/values and the
// tensors: parameters, momentum, batch-norm statistics), written so that a
// crash at any moment leaves either the old checkpoint or the new one,
// never a mix, and read back only after every byte has been checked.
//
// File layout (format version 1). Every integer and float is little-endian,
// as on x86-64 and AArch64: the writer and the reader copy host memory, and
// the build refuses a big-endian host (static_assert in checkpoint.cpp).
//
//   offset  size  field
//        0     8  magic "CACKPT\0\1"
//        8     4  u32 format version (1)
//       12     4  u32 reserved, 0
//       16     8  u64 size of the whole file in bytes, checksum included
//       24        string model           (a string is u64 byte count, then the bytes)
//                 i64 epoch, i64 batch, u64 seed
//                 u64 metadata count, then per entry: string key, string value
//                 u64 tensor count, then per tensor: string name, u64 rank,
//                   rank x i64 dims, u64 value count (== product of the
//                   dims), value count x f32 values
//   size - 4   4  u32 CRC-32 (zlib's crc32) of bytes [0, size - 4)
//
// There is no padding: the floats need not be aligned in the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cachedarrays::nn {

/// One named tensor of a Checkpoint, its values in plain order.
struct CheckpointTensor {
  std::string name;                ///< "conv1.weight", "conv1.weight.momentum", "bn1.running_mean", ...
  std::vector<std::int64_t> dims;  ///< its shape
  std::vector<float> values;       ///< plain (row-major) order; as many as the dims' product
};

/// What a training run needs to continue where it stopped (see the file
/// comment for the format): written by save_checkpoint(), read by
/// load_checkpoint().
struct Checkpoint {
  std::string model;       ///< identity of the model, e.g. "resnet-18 width 0.5 1x28x28 10 classes"
  std::int64_t epoch = 0;  ///< epochs completed
  std::int64_t batch = 0;  ///< batches done in the current epoch
  std::uint64_t seed = 0;  ///< the run's seed (data order and augmentation are counter-based from it)
  std::vector<std::pair<std::string, std::string>> metadata;  ///< free key/values (learning-rate schedule, ...)
  std::vector<CheckpointTensor> tensors;  ///< parameters, momentum, batch-norm running statistics, in a fixed order
};

/// Where save_checkpoint() writes a checkpoint before it replaces the old
/// one.
enum class CheckpointTemporary {
  /// An unnamed file (O_TMPFILE) in the target's directory: a process
  /// killed while writing it leaves nothing. Where the file system or the
  /// kernel refuses O_TMPFILE, or /proc is not mounted, a named one as below.
  unnamed_where_possible,
  /// Always the named file checkpoint_temporary_path() gives: a process
  /// killed while writing it leaves it behind, for
  /// remove_stale_checkpoint_temporaries() to remove.
  named,
};

/// Writes `checkpoint` to `path` crash-safely. The whole file goes to a
/// temporary file beside it (see CheckpointTemporary), is made durable
/// (libpmem: flushed from the CPU caches on persistent memory, msync and
/// fdatasync elsewhere), gets the name checkpoint_temporary_path(path) if it
/// has none (linkat through /proc/self/fd), is renamed over `path`, and the
/// directory is synced. A crash leaves `path` as it was before or as
/// `checkpoint`. An unnamed temporary has a name only for the two system
/// calls between linkat and rename; a named one from its creation. A crash
/// then leaves that name behind, which remove_stale_checkpoint_temporaries()
/// removes; a signal handler about to end the process removes it with
/// remove_checkpoint_temporary_now(). A regular file of that name is the
/// leftover of a dead process with this host name and process id, and is
/// replaced. Not for two threads saving to the same path at once.
/// Throws invalid_argument, writing nothing, when a tensor's dims are
/// negative or their product is not its number of values, or epoch or batch
/// is negative; throws error naming the file and the system's reason when a
/// step fails, after removing the temporary file and leaving `path` as it was
/// (but for the last step: when syncing the directory fails, `path` is
/// already the new checkpoint, which a power loss might still undo).
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint,
                     CheckpointTemporary temporary = CheckpointTemporary::unnamed_where_possible);

/// The name this process's saves to `checkpoint` give their temporary file:
/// `CHECKPOINT.tmp-HOST.PID`: the checkpoint's path, this host's name and this process's id.
[[nodiscard]] std::filesystem::path checkpoint_temporary_path(const std::filesystem::path& checkpoint);

/// Removes the temporary files that saves to `checkpoint` of processes no
/// longer running left beside it, and returns their paths (sorted). Only
/// regular files named as checkpoint_temporary_path() names them (or
/// `CHECKPOINT.tmp-PID`, as earlier versions did) with this machine's
/// host name and the id of a process that does not exist (or of this one,
/// which is not saving while it calls this) are removed: those of other
/// machines sharing the directory, and of live processes, stay. A missing
/// directory removes nothing. Not to be called while this process saves to
/// `checkpoint` on another thread.
std::vector<std::filesystem::path> remove_stale_checkpoint_temporaries(const std::filesystem::path& checkpoint);

/// Removes the temporary name the save in progress (if any) has right now.
/// Async-signal-safe: for a signal handler that ends the process at once
/// (`_exit`) in the middle of a save, so that nothing is left behind.
void remove_checkpoint_temporary_now() noexcept;

/// Reads `path` and checks it: the magic, the format version, the size its
/// header gives, the checksum, every length against the bytes that remain,
/// every tensor's dims against its values. With `expected_model` non-empty,
/// a checkpoint of another model is refused naming both. Every refusal is an
/// invalid_argument that names the path and says what is wrong.
[[nodiscard]] Checkpoint load_checkpoint(const std::filesystem::path& path, std::string_view expected_model = {});

/// Checks that `checkpoint` holds exactly the tensors `expected` lists (name
/// and dims), in that order; throws invalid_argument describing the first
/// mismatch (position, what the checkpoint has, what the model expects).
void check_tensors(const Checkpoint& checkpoint,
                   const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& expected);

}  // namespace cachedarrays::nn
