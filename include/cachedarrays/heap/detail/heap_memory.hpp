// Where a heap's bytes come from: one reservation of the whole capacity,
// made once at start-up (no mapping per allocation) and prefaulted.
// Implementations, one per kind: dram_memory-inl.hpp, numa_memory-inl.hpp,
// dax_memory-inl.hpp, virtual_memory-inl.hpp; the checks every kind shares
// in heap_memory-inl.hpp, prefaulting in prefault-inl.hpp. A detail header,
// installed because header-only users compile these implementations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cachedarrays/heap/device_spec.hpp"

namespace cachedarrays::detail {

class HeapMemory {
 public:
  virtual ~HeapMemory() = default;
  [[nodiscard]] std::byte* base() const noexcept { return base_; }
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  // True only when the mapping is real persistent memory (libpmem's
  // pmem_is_pmem / is_pmem from pmem_map_file); false for /dev/shm files.
  [[nodiscard]] bool is_pmem() const noexcept { return is_pmem_; }
  // No byte can be stored (DeviceKind::virtual_address).
  [[nodiscard]] bool is_virtual() const noexcept { return is_virtual_; }
  // Human-readable origin: "anonymous mapping (THP advised)",
  // "/dev/shm/cachedarrays-1234-0 (not pmem: emulated)", ...
  [[nodiscard]] const std::string& description() const noexcept { return description_; }

 protected:
  std::byte* base_ = nullptr;
  std::uint64_t capacity_ = 0;
  bool is_pmem_ = false;
  bool is_virtual_ = false;
  std::string description_;
};

// "device 'name' (kind)": how every heap message names its device.
[[nodiscard]] std::string heap_label(const DeviceSpec& spec);

// Creates the memory for `spec`, validating it first; throws heap_error or
// invalid_argument with a message saying what was wrong and what to do.
[[nodiscard]] std::unique_ptr<HeapMemory> make_heap_memory(const DeviceSpec& spec);

// One per DeviceKind, called by make_heap_memory once the spec is valid
// (capacity, alignment and NUMA node already checked). Each returns memory
// whose base is aligned to spec.alignment, prefaulted when spec.prefault.
[[nodiscard]] std::unique_ptr<HeapMemory> make_dram_memory(const DeviceSpec& spec);
[[nodiscard]] std::unique_ptr<HeapMemory> make_numa_memory(const DeviceSpec& spec);
[[nodiscard]] std::unique_ptr<HeapMemory> make_dax_memory(const DeviceSpec& spec);
[[nodiscard]] std::unique_ptr<HeapMemory> make_virtual_memory(const DeviceSpec& spec);

// `bytes` rounded up to a multiple of `to` (pages, alignments).
[[nodiscard]] constexpr std::uint64_t round_up_to(std::uint64_t bytes, std::uint64_t to) noexcept {
  return (bytes + to - 1) / to * to;
}

// mmap of an anonymous private mapping; null (errno set) on failure. One
// place for the MAP_FAILED comparison, which needs an old-style cast.
[[nodiscard]] void* map_anonymous(std::uint64_t bytes, int protection, int flags) noexcept;

// Writes one byte in every page of [base, base + bytes) using all cores, so
// that the OS assigns physical pages before the program runs.
void prefault(std::byte* base, std::uint64_t bytes);

}  // namespace cachedarrays::detail

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/heap/detail/dax_memory-inl.hpp"
#include "cachedarrays/heap/detail/dram_memory-inl.hpp"
#include "cachedarrays/heap/detail/heap_memory-inl.hpp"
#include "cachedarrays/heap/detail/numa_memory-inl.hpp"
#include "cachedarrays/heap/detail/prefault-inl.hpp"
#include "cachedarrays/heap/detail/virtual_memory-inl.hpp"
#endif
