// Errors raised by the user-facing layer. Each carries a message that says
// what was wrong and what is allowed, so a person can act on it without
// reading the library's source (the mechanism layer returns null where
// "full" is a normal outcome, see DataManager::allocate).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cachedarrays/types.hpp"

namespace cachedarrays {

/// Base of every exception the library throws on purpose.
class error : public std::runtime_error {
 public:
  /// An error whose what() is `what`.
  explicit error(const std::string& what) : std::runtime_error(what) {}
};

/// A size, count, alignment or other argument outside what is allowed.
class invalid_argument : public error {
 public:
  /// An error whose what() is `what`.
  using error::error;
};

/// A device number that names no device of this runtime / manager.
class unknown_device : public invalid_argument {
 public:
  /// An error whose what() is `what`.
  using invalid_argument::invalid_argument;
};

/// A heap could not be reserved: a DAX path that does not exist, is not
/// writable, is too small or lies on a full filesystem; a NUMA node that does
/// not exist; the OS refusing the mapping.
class heap_error : public error {
 public:
  /// An error whose what() is `what`.
  using error::error;
};

/// Access to an array after it was retired (or moved from).
class retired_error : public error {
 public:
  /// An error whose what() is `what`.
  using error::error;
};

/// An operation that would move, evict, free or retire a pinned object.
class pinned_error : public error {
 public:
  /// An error whose what() is `what`.
  using error::error;
};

/// A data-manager call that would break one of the invariants of
/// docs/design.md: copyto between regions of different sizes, linking two
/// regions on the same device or of different objects, making a stale copy
/// the primary, ...
class invalid_operation : public error {
 public:
  /// An error whose what() is `what`.
  using error::error;
};

/// A copy between tiers failed (a media error of the memory it read or
/// wrote). The source is untouched; the destination holds no valid copy.
/// The policies' moves absorb it (the object stays where it was, counted in
/// PolicyCounters::moves_abandoned); DataManager::copyto and the fence of an
/// asynchronous copy report it to their caller.
class copy_error : public error {
 public:
  /// An error whose what() is `what`.
  using error::error;
};

/// Thrown by DataManager::check_invariants when the state is inconsistent.
/// Seeing it means a bug in the library or in a policy.
class invariant_violation : public error {
 public:
  /// An error whose what() is `what`.
  using error::error;
};

/// One device's occupancy (DataManager::usage), as an out_of_memory
/// reports it for the moment an allocation failed.
struct DeviceUsage {
  DeviceId device = 0;                   ///< The device's number.
  std::string name;                      ///< DeviceSpec::display_name().
  std::uint64_t capacity = 0;            ///< The heap's size in bytes.
  std::uint64_t bytes_used = 0;          ///< Bytes in live blocks, alignment padding included.
  std::uint64_t largest_free_block = 0;  ///< Bytes of the largest free block: the largest allocation that fits now.
  std::uint64_t live_regions = 0;        ///< Regions allocated and not freed.
  /// One past the highest byte taken: what is free above it is one block.
  std::uint64_t extent = 0;
  /// capacity - bytes_used: free bytes, possibly in many holes.
  [[nodiscard]] std::uint64_t bytes_free() const { return capacity - bytes_used; }
};

/// Every tier is full: the message names each device's capacity, bytes in use
/// and largest free block, as PyTorch's out-of-memory message does. A
/// runtime with a snapshot directory also gives `snapshot_path`, the memory
/// snapshot it wrote of the moment (runtime/memory_snapshot.hpp), or
/// `snapshot_failure`, why it could not write one; the message ends with it.
class out_of_memory : public error {
 public:
  /// The error for an object of `requested` bytes that fit on none of
  /// `devices`; the message is built from them.
  out_of_memory(std::uint64_t requested, std::vector<DeviceUsage> devices, std::string snapshot_path = {},
                const std::string& snapshot_failure = {});
  /// The size of the object that could not be placed, in bytes.
  [[nodiscard]] std::uint64_t requested_bytes() const { return requested_; }
  /// Every device's occupancy when the allocation failed, fastest first.
  [[nodiscard]] const std::vector<DeviceUsage>& devices() const { return devices_; }
  /// The snapshot's file, or empty when none was written.
  [[nodiscard]] const std::string& snapshot_path() const { return snapshot_path_; }

 private:
  std::uint64_t requested_;
  std::vector<DeviceUsage> devices_;
  std::string snapshot_path_;
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/error-inl.hpp"
#endif
