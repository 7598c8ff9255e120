// Virtual heap: an inaccessible reservation of address space (PROT_NONE,
// MAP_NORESERVE). The allocator hands out offsets in it as in any heap, so a
// policy runs unchanged, but no byte is ever stored: the data manager skips
// the copies (and counts them). Any stray access faults at once instead of
// silently consuming memory. Used by the replay simulator and dry runs to
// model machines far larger than this one.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "cachedarrays/config.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::detail {

class VirtualMemory final : public HeapMemory {
 public:
  explicit VirtualMemory(const DeviceSpec& spec) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    // Reserve enough to align the base to the spec's alignment.
    mapped_bytes_ = round_up_to(spec.capacity + spec.alignment, page);
    void* p = map_anonymous(mapped_bytes_, PROT_NONE, MAP_NORESERVE);
    if (p == nullptr) {
      throw heap_error(heap_label(spec) + ": cannot reserve " + format_bytes(spec.capacity) + " of address space (" +
                       std::strerror(errno) + "); pick a smaller capacity");
    }
    mapping_ = static_cast<std::byte*>(p);
    const auto address = reinterpret_cast<std::uintptr_t>(mapping_);
    const std::uintptr_t aligned = (address + spec.alignment - 1) & ~(spec.alignment - 1);
    base_ = mapping_ + (aligned - address);
    capacity_ = spec.capacity;
    is_virtual_ = true;
    description_ = "virtual: " + format_bytes(spec.capacity) + " of address space only, no memory (simulation)";
  }
  VirtualMemory(const VirtualMemory&) = delete;
  VirtualMemory& operator=(const VirtualMemory&) = delete;
  ~VirtualMemory() override { ::munmap(mapping_, mapped_bytes_); }

 private:
  std::byte* mapping_ = nullptr;
  std::uint64_t mapped_bytes_ = 0;
};

CACHEDARRAYS_INLINE std::unique_ptr<HeapMemory> make_virtual_memory(const DeviceSpec& spec) {
  return std::make_unique<VirtualMemory>(spec);
}

}  // namespace cachedarrays::detail
