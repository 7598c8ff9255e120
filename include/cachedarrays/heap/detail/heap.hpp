// A heap: one device's reserved memory plus the allocator that hands out its
// blocks, each block owned by an `Owner` (the manager's Region). The spec is
// kept for messages and for the copy engine's choice of store kind.
#pragma once

#include <memory>

#include "cachedarrays/heap/detail/block_allocator.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"

namespace cachedarrays::detail {

template <typename Owner>
class Heap {
 public:
  explicit Heap(DeviceSpec spec)
      : spec_(std::move(spec)),
        memory_(make_heap_memory(spec_)),
        allocator_(memory_->capacity(), spec_.alignment) {}

  [[nodiscard]] const DeviceSpec& spec() const noexcept { return spec_; }
  [[nodiscard]] HeapMemory& memory() const noexcept { return *memory_; }
  [[nodiscard]] BlockAllocator<Owner>& allocator() noexcept { return allocator_; }
  [[nodiscard]] const BlockAllocator<Owner>& allocator() const noexcept { return allocator_; }
  [[nodiscard]] std::byte* at(std::uint64_t offset) const noexcept { return memory_->base() + offset; }

 private:
  DeviceSpec spec_;
  std::unique_ptr<HeapMemory> memory_;
  BlockAllocator<Owner> allocator_;
};

}  // namespace cachedarrays::detail
