// NUMA heap: the memory of one NUMA node (a far socket, or a CXL expander
// that shows up as a CPU-less node), reserved through libnuma. On a machine
// without NUMA support, node 0 is all of memory and a plain mapping serves.
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

CACHEDARRAYS_INLINE std::string numa_label(const DeviceSpec& spec) {
  return "device '" + spec.display_name() + "' (numa, node " + std::to_string(spec.numa_node) + ")";
}

class NumaMemory final : public HeapMemory {
 public:
  NumaMemory() = default;
  NumaMemory(const NumaMemory&) = delete;
  NumaMemory& operator=(const NumaMemory&) = delete;
  ~NumaMemory() override {
    if (raw_ == nullptr) return;
    if (from_libnuma_) {
      numa_free(raw_, raw_bytes_);
    } else {
      ::munmap(raw_, raw_bytes_);
    }
  }

  // Regions are aligned relative to the base, so the base must be aligned
  // to spec.alignment: both paths over-reserve by (alignment - page) and
  // start the heap at the first aligned byte.
  void allocate_on_node(const DeviceSpec& spec, std::uint64_t page) {
    raw_bytes_ = round_up_to(spec.capacity, page) + std::max(spec.alignment, page) - page;
    raw_ = numa_alloc_onnode(raw_bytes_, spec.numa_node);
    if (raw_ == nullptr) {
      const int err = errno;
      throw heap_error(numa_label(spec) + ": numa_alloc_onnode could not reserve " + format_bytes(spec.capacity) +
                       ": " + std::strerror(err) + "; pick a smaller capacity");
    }
    from_libnuma_ = true;
    set_base(spec);
  }

  void allocate_plain(const DeviceSpec& spec, std::uint64_t page) {
    raw_bytes_ = round_up_to(spec.capacity, page) + std::max(spec.alignment, page) - page;
    void* raw = map_anonymous(raw_bytes_, PROT_READ | PROT_WRITE, spec.prefault ? 0 : MAP_NORESERVE);
    if (raw == nullptr) {
      const int err = errno;
      throw heap_error(numa_label(spec) + ": cannot reserve " + format_bytes(spec.capacity) +
                       " of anonymous memory: " + std::strerror(err) + "; pick a smaller capacity");
    }
    raw_ = raw;
    set_base(spec);
  }

  // libnuma reports a failed mbind only through numa_error() (a warning on
  // stderr) and still returns the memory, which would then come from any
  // node and silently falsify every measurement of this tier. Ask the
  // kernel which policy the range really has.
  void verify_binding(const DeviceSpec& spec) const {
    const int node = spec.numa_node;
    constexpr std::size_t bits = sizeof(unsigned long) * CHAR_BIT;
    // The kernel refuses a mask shorter than the number of possible nodes.
    const auto possible = static_cast<std::size_t>(std::max(numa_num_possible_nodes(), node + 1));
    std::vector<unsigned long> mask((possible + bits - 1) / bits, 0);
    int mode = MPOL_DEFAULT;
    if (::get_mempolicy(&mode, mask.data(), mask.size() * bits, base_, MPOL_F_ADDR) != 0) {
      const int err = errno;
      throw heap_error(numa_label(spec) + ": cannot read the memory policy of the heap: " + std::strerror(err));
    }
    const auto n = static_cast<std::size_t>(node);
    const bool on_node = (mask[n / bits] >> (n % bits)) & 1UL;
    if (mode == MPOL_DEFAULT || !on_node) {
      throw heap_error(numa_label(spec) + ": libnuma could not bind " + format_bytes(spec.capacity) + " to node " +
                       std::to_string(node) +
                       " (mbind refused; see the libnuma warning above); check that this "
                       "process may use the node (cpuset, `numactl --show`)");
    }
  }

  void describe(std::string text) { description_ = std::move(text); }

 private:
  void set_base(const DeviceSpec& spec) {
    const auto address = reinterpret_cast<std::uintptr_t>(raw_);
    base_ = static_cast<std::byte*>(raw_) + (round_up_to(address, spec.alignment) - address);
    capacity_ = spec.capacity;
  }

  void* raw_ = nullptr;
  std::uint64_t raw_bytes_ = 0;
  bool from_libnuma_ = false;  // numa_free vs munmap
};

CACHEDARRAYS_INLINE std::unique_ptr<HeapMemory> make_numa_memory(const DeviceSpec& spec) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  // Built inside the unique_ptr so that a failure after the reservation
  // (binding check, prefault) still releases it.
  auto memory = std::make_unique<NumaMemory>();
  const std::string size = format_bytes(spec.capacity);
  const std::string touched = spec.prefault ? ", prefaulted" : "";
  // make_heap_memory has checked the node: without NUMA support only node 0
  // gets here, and it means all of memory.
  if (numa_available() < 0) {
    memory->allocate_plain(spec, page);
    memory->describe("plain memory standing in for NUMA node 0 (no NUMA support on this " +
                     std::string("machine: numa_available() < 0), ") + size + touched);
  } else {
    memory->allocate_on_node(spec, page);
    memory->verify_binding(spec);
    memory->describe("NUMA node " + std::to_string(spec.numa_node) + " via libnuma, " + size + touched);
  }
  if (spec.prefault) prefault(memory->base(), memory->capacity());
  return memory;
}

}  // namespace cachedarrays::detail
