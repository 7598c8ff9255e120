// DRAM heap: one anonymous private mapping of the whole capacity, with
// transparent huge pages advised (fewer TLB misses when kernels stream over
// large arrays) and, when the spec names a node, bound to that NUMA node.
#pragma once

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "cachedarrays/config.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::detail {

// The size of a transparent huge page on x86-64; the mapping starts on such
// a boundary so THP can back the heap from its first byte.
inline constexpr std::uint64_t huge_page_bytes = std::uint64_t{2} << 20;

class DramMemory final : public HeapMemory {
 public:
  DramMemory() = default;
  DramMemory(const DramMemory&) = delete;
  DramMemory& operator=(const DramMemory&) = delete;
  ~DramMemory() override {
    if (base_ != nullptr) ::munmap(base_, mapped_bytes_);
  }

  void map(const DeviceSpec& spec) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    mapped_bytes_ = round_up_to(spec.capacity, page);
    // Regions are aligned relative to the base, so the base itself must be
    // aligned to spec.alignment; over-reserve and trim to get there.
    std::uint64_t align = std::max(spec.alignment, page);
    if (mapped_bytes_ >= huge_page_bytes) align = std::max(align, huge_page_bytes);
    const std::uint64_t reserve = mapped_bytes_ + align - page;

    // Without prefault the heap may be a huge virtual reservation (tests):
    // MAP_NORESERVE keeps overcommit accounting from refusing it.
    void* raw = map_anonymous(reserve, PROT_READ | PROT_WRITE, spec.prefault ? 0 : MAP_NORESERVE);
    if (raw == nullptr) {
      const int err = errno;
      throw heap_error(heap_label(spec) + ": cannot reserve " + format_bytes(spec.capacity) + " of anonymous memory: " +
                       std::strerror(err) + "; pick a smaller capacity or check `ulimit -v` and vm.overcommit_memory");
    }
    auto* start = static_cast<std::byte*>(raw);
    const auto address = reinterpret_cast<std::uintptr_t>(start);
    const std::uint64_t head = round_up_to(address, align) - address;
    if (head > 0) ::munmap(start, head);
    const std::uint64_t tail = reserve - head - mapped_bytes_;
    if (tail > 0) ::munmap(start + head + mapped_bytes_, tail);
    base_ = start + head;
    capacity_ = spec.capacity;
  }

  // Advice only: kernels without THP (or with it set to "never") still give
  // correct memory, just with 4 KiB pages.
  bool advise_huge_pages() { return ::madvise(base_, mapped_bytes_, MADV_HUGEPAGE) == 0; }

  // Must run before the first touch: a policy only places pages faulted
  // after it is set.
  void bind(const DeviceSpec& spec) {
    const int node = spec.numa_node;
    constexpr std::size_t bits = sizeof(unsigned long) * CHAR_BIT;
    std::vector<unsigned long> mask(static_cast<std::size_t>(node) / bits + 1, 0);
    mask[static_cast<std::size_t>(node) / bits] = 1UL << (static_cast<std::size_t>(node) % bits);
    // maxnode is one more than the bits in the mask (a kernel quirk libnuma
    // follows too).
    if (::mbind(base_, mapped_bytes_, MPOL_BIND, mask.data(), mask.size() * bits + 1, 0) != 0) {
      const int err = errno;
      throw heap_error(heap_label(spec) + ": cannot bind " + format_bytes(spec.capacity) + " to NUMA node " +
                       std::to_string(node) + ": mbind failed: " + std::strerror(err) +
                       "; leave numa_node at -1 to use memory from any node");
    }
  }

  void describe(const DeviceSpec& spec, bool thp, const std::string& binding) {
    description_ = "anonymous mapping, " + format_bytes(spec.capacity) +
                   (thp ? ", THP advised" : ", THP not available") + binding + (spec.prefault ? ", prefaulted" : "");
  }

 private:
  std::uint64_t mapped_bytes_ = 0;  // capacity rounded up to whole pages
};

CACHEDARRAYS_INLINE std::unique_ptr<HeapMemory> make_dram_memory(const DeviceSpec& spec) {
  // Built step by step inside the unique_ptr: if a later step throws, the
  // destructor unmaps what was already mapped.
  auto memory = std::make_unique<DramMemory>();
  memory->map(spec);
  const bool thp = memory->advise_huge_pages();
  std::string binding;
  if (spec.numa_node >= 0) {
    // make_heap_memory has checked the node; node 0 without NUMA support
    // is all of memory, so there is nothing to bind to.
    if (numa_available() < 0) {
      binding = ", NUMA binding to node 0 skipped: no NUMA support";
    } else {
      memory->bind(spec);
      binding = ", bound to NUMA node " + std::to_string(spec.numa_node);
    }
  }
  memory->describe(spec, thp, binding);
  if (spec.prefault) prefault(memory->base(), memory->capacity());
  return memory;
}

}  // namespace cachedarrays::detail
