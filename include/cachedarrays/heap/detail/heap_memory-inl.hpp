// make_heap_memory: every check that needs no OS resource happens here,
// before anything is mapped, so that a bad spec fails with one clear message
// and leaves nothing behind. Checks that need the filesystem (DAX paths,
// free space) live with the DAX implementation, next to the calls they guard.
#pragma once

#include <numa.h>
#include <sys/mman.h>

#include <string>

#include "cachedarrays/config.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::detail {

// 2^56 bytes (64 PiB) is the whole user half of a 5-level-paging x86-64
// address space; no mapping can be larger, and the bound keeps the
// page/alignment rounding done by the implementations free of overflow.
inline constexpr std::uint64_t max_heap_capacity = std::uint64_t{1} << 56;

CACHEDARRAYS_INLINE std::string heap_label(const DeviceSpec& spec) {
  return "device '" + spec.display_name() + "' (" + to_string(spec.kind) + ")";
}

// "0-3,5": the nodes this process may allocate from (numa_all_nodes_ptr
// already leaves out memoryless nodes and nodes outside our cpuset).
CACHEDARRAYS_INLINE std::string valid_numa_nodes() {
  std::string out;
  const int max_node = numa_max_node();
  for (int node = 0; node <= max_node; ++node) {
    if (numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(node)) == 0) continue;
    int last = node;
    while (last + 1 <= max_node && numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(last + 1)) != 0) {
      ++last;
    }
    if (!out.empty()) out += ',';
    out += std::to_string(node);
    if (last > node) out += '-' + std::to_string(last);
    node = last;
  }
  return out.empty() ? "none" : out;
}

CACHEDARRAYS_INLINE void check_numa_node(const DeviceSpec& spec) {
  const int node = spec.numa_node;
  // numa_available() must be called before any other libnuma function.
  if (numa_available() < 0) {
    if (node == 0) return;  // without NUMA support, node 0 is all of memory
    throw heap_error(heap_label(spec) + ": NUMA node " + std::to_string(node) +
                     " requested, but this machine has no NUMA support (numa_available() < 0); "
                     "the only valid node is 0");
  }
  if (node > numa_max_node() || numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(node)) == 0) {
    throw heap_error(heap_label(spec) + ": NUMA node " + std::to_string(node) +
                     " does not exist or has no memory this process may use; valid nodes: " + valid_numa_nodes() +
                     " (see `numactl --hardware`)");
  }
  // A bound mapping cannot spill to other nodes: prefaulting more than the
  // node holds would end in the OOM killer, not in an error we could report.
  long long node_bytes = numa_node_size64(node, nullptr);
  if (node_bytes > 0 && spec.capacity > static_cast<std::uint64_t>(node_bytes)) {
    throw heap_error(heap_label(spec) + ": capacity " + format_bytes(spec.capacity) + " exceeds the " +
                     format_bytes(static_cast<std::uint64_t>(node_bytes)) + " of memory on NUMA node " +
                     std::to_string(node) + "; pick a smaller capacity or another node");
  }
}

CACHEDARRAYS_INLINE void validate_device_spec(const DeviceSpec& spec) {
  if (spec.capacity == 0) {
    throw invalid_argument(heap_label(spec) + ": capacity is 0 bytes; give the number of bytes to reserve (> 0)");
  }
  if (spec.capacity > max_heap_capacity) {
    throw invalid_argument(heap_label(spec) + ": capacity " + format_bytes(spec.capacity) +
                           " is larger than any address space can map (at most " + format_bytes(max_heap_capacity) +
                           ")");
  }
  const std::uint64_t a = spec.alignment;
  if (a < 8 || (a & (a - 1)) != 0) {
    throw invalid_argument(heap_label(spec) + ": alignment " + std::to_string(a) +
                           " is not allowed; use a power of two >= 8 (e.g. 64, 4096)");
  }
  if (a > spec.capacity) {
    throw invalid_argument(heap_label(spec) + ": alignment " + std::to_string(a) + " is larger than the capacity " +
                           format_bytes(spec.capacity) + ", so not one block would fit; use a smaller alignment");
  }
  switch (spec.kind) {
    case DeviceKind::dram:
      if (spec.numa_node >= 0) check_numa_node(spec);
      return;
    case DeviceKind::numa:
      if (spec.numa_node < 0) {
        throw invalid_argument(heap_label(spec) + ": numa_node is " + std::to_string(spec.numa_node) +
                               "; a numa device needs the node to allocate from (>= 0), e.g. "
                               "numa_node(1, capacity)");
      }
      check_numa_node(spec);
      return;
    case DeviceKind::dax:
    case DeviceKind::virtual_address: return;
  }
  throw invalid_argument(heap_label(spec) + ": unknown device kind " + std::to_string(static_cast<int>(spec.kind)) +
                         "; allowed kinds are dram, numa, dax and virtual_address");
}

CACHEDARRAYS_INLINE void* map_anonymous(std::uint64_t bytes, int protection, int flags) noexcept {
  void* p = ::mmap(nullptr, bytes, protection, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"  // MAP_FAILED is ((void*)-1)
  return p == MAP_FAILED ? nullptr : p;
#pragma GCC diagnostic pop
}

CACHEDARRAYS_INLINE std::unique_ptr<HeapMemory> make_heap_memory(const DeviceSpec& spec) {
  validate_device_spec(spec);
  switch (spec.kind) {
    case DeviceKind::dram: return make_dram_memory(spec);
    case DeviceKind::numa: return make_numa_memory(spec);
    case DeviceKind::dax: return make_dax_memory(spec);
    case DeviceKind::virtual_address: return make_virtual_memory(spec);
  }
  return nullptr;  // unreachable: validate_device_spec() rejected unknown kinds
}

}  // namespace cachedarrays::detail
