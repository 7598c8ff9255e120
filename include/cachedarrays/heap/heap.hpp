// A heap: one device's reserved memory plus the allocator that hands out its
// blocks, each block owned by an `Owner` (the manager's Region). The heap
// layer's interface to the manager: where the bytes come from (the memory
// backends of detail/heap_memory.hpp) stays behind it. Programs never hold
// one (the DataManager does), so it lives in namespace detail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "cachedarrays/heap/block_allocator.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/heap/device_spec.hpp"

namespace cachedarrays::detail {

/// One device's whole capacity, reserved from the OS once (and prefaulted
/// when the spec asks), with the BlockAllocator that hands out its blocks.
template <typename Owner>
class Heap {
 public:
  /// Reserves the memory `spec` describes, validating the spec first; throws
  /// heap_error or invalid_argument saying what was wrong and what to do.
  explicit Heap(DeviceSpec spec)
      : spec_(std::move(spec)), memory_(make_heap_memory(spec_)), allocator_(memory_->capacity(), spec_.alignment) {}

  /// The device as it was asked for: for messages and for the copy engine's
  /// choice of store kind.
  [[nodiscard]] const DeviceSpec& spec() const noexcept { return spec_; }
  /// The allocator of the heap's blocks.
  [[nodiscard]] BlockAllocator<Owner>& allocator() noexcept { return allocator_; }
  /// The allocator of the heap's blocks.
  [[nodiscard]] const BlockAllocator<Owner>& allocator() const noexcept { return allocator_; }
  /// The address of the byte at `offset` from the heap's start.
  [[nodiscard]] std::byte* at(std::uint64_t offset) const noexcept { return memory_->base() + offset; }
  /// No byte can be stored (DeviceKind::virtual_address): copies and
  /// moves only account.
  [[nodiscard]] bool is_virtual() const noexcept { return memory_->is_virtual(); }
  /// The mapping is real persistent memory (libpmem says so), not a file
  /// that only emulates it.
  [[nodiscard]] bool is_pmem() const noexcept { return memory_->is_pmem(); }
  /// Where the bytes come from, for people: "anonymous mapping (THP
  /// advised)", "/dev/shm/cachedarrays-1234-0 (not pmem: emulated)", ...
  [[nodiscard]] const std::string& description() const noexcept { return memory_->description(); }

 private:
  DeviceSpec spec_;
  std::unique_ptr<HeapMemory> memory_;
  BlockAllocator<Owner> allocator_;
};

}  // namespace cachedarrays::detail
