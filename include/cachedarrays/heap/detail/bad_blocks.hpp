// Bad blocks of a DAX heap's file: uncorrectable media errors of persistent
// memory, which kill a process that loads from them with SIGBUS. libpmem2
// lists them (pmem2_badblock_next) for a file on a persistent-memory
// namespace; nothing can list them for a file anywhere else (tmpfs, ext4 or
// xfs on a disk), and none of this kind exist there. The DAX heap refuses a
// file with bad blocks inside its capacity (dax_memory-inl.hpp says why).
// A detail header, installed because header-only users compile the
// implementation (bad_blocks-inl.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cachedarrays/heap/device_spec.hpp"

namespace cachedarrays::detail {

class HeapMemory;

// Bytes [offset, offset + length) of the file.
struct BadBlock {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  friend bool operator==(const BadBlock&, const BadBlock&) = default;
};

enum class BadBlockScan {
  // The file lies on no persistent-memory namespace that libndctl knows
  // (libpmem2: PMEM2_E_DAX_REGION_NOT_FOUND), or is of a type libpmem2
  // cannot query: nothing to check, and never a reason to refuse a heap.
  not_applicable,
  // On persistent memory, but the query failed (reading a region's list
  // needs privileges for device DAX, ndctl errors); `detail` says why.
  failed,
  // Asked and answered: `blocks` is the whole list, empty when none.
  scanned,
};

struct BadBlockReport {
  BadBlockScan scan = BadBlockScan::not_applicable;
  std::vector<BadBlock> blocks;
  std::string detail;  // why not scanned: libpmem2's code and message
};

// What the DAX heap asks about the file open as `fd`; bad_blocks_of unless
// a test plants blocks that no device here has.
using BadBlockQuery = std::function<BadBlockReport(int fd)>;

// The bad blocks of the file (or device DAX) open as `fd`, through
// libpmem2; never throws for a file that cannot have any.
[[nodiscard]] BadBlockReport bad_blocks_of(int fd);

// The blocks overlapping [0, bytes), the part of a file a heap of `bytes`
// uses, clipped to it.
[[nodiscard]] std::vector<BadBlock> bad_blocks_within(const std::vector<BadBlock>& blocks, std::uint64_t bytes);

// make_dax_memory (heap_memory.hpp) asking `query` instead of bad_blocks_of:
// the seam through which tests reach the refusal. `spec` must be valid
// (make_heap_memory checks it before calling make_dax_memory).
[[nodiscard]] std::unique_ptr<HeapMemory> make_dax_memory(const DeviceSpec& spec, const BadBlockQuery& query);

}  // namespace cachedarrays::detail

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/heap/detail/bad_blocks-inl.hpp"
#endif
