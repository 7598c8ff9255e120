// Bad blocks through libpmem2 (declared in bad_blocks.hpp).
//
// What libpmem2 1.12.1 answers for a file on no persistent memory (/dev/shm
// tmpfs; ext4 on a virtio disk):
// pmem2_source_from_fd 0; pmem2_badblock_context_new 0; the first
// pmem2_badblock_next PMEM2_E_NO_BAD_BLOCK_FOUND (-100029) "Cannot find any
// matching device, no bad blocks found" -- the same code as a namespace
// without bad blocks, only the message differs. pmem2_source_numa_node
// looks the file's region up the same way (pmem2_region_namespace) and
// returns PMEM2_E_DAX_REGION_NOT_FOUND (-100026) "unknown region" when
// there is none: that code, not a message, tells "not applicable" from
// "none found". A directory or a character device that is no device DAX:
// pmem2_source_from_fd PMEM2_E_INVALID_FILE_TYPE (-100005).
#pragma once

#include <libpmem2.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cachedarrays/config.hpp"
#include "cachedarrays/heap/detail/bad_blocks.hpp"

namespace cachedarrays::detail {

struct Pmem2SourceDelete {
  void operator()(pmem2_source* source) const noexcept { pmem2_source_delete(&source); }
};

struct Pmem2BadBlockContextDelete {
  void operator()(pmem2_badblock_context* context) const noexcept { pmem2_badblock_context_delete(&context); }
};

// "pmem2_source_numa_node: unknown region (-100026)": the call, libpmem2's
// message and code. The message is libpmem2's last one in this thread.
CACHEDARRAYS_INLINE std::string pmem2_failure(const char* call, int code) {
  return std::string(call) + ": " + pmem2_errormsg() + " (" + std::to_string(code) + ")";
}

CACHEDARRAYS_INLINE BadBlockReport bad_blocks_of(int fd) {
  BadBlockReport report;
  pmem2_source* raw_source = nullptr;
  if (const int code = pmem2_source_from_fd(&raw_source, fd); code != 0) {
    if (code == PMEM2_E_INVALID_FILE_TYPE) {
      // For a character device libpmem2 sets no message of its own (an older
      // one is left in place): say it here.
      report.detail = "pmem2_source_from_fd: neither a regular file nor a device DAX (" + std::to_string(code) + ")";
    } else {
      report.scan = BadBlockScan::failed;
      report.detail = pmem2_failure("pmem2_source_from_fd", code);
    }
    return report;
  }
  const std::unique_ptr<pmem2_source, Pmem2SourceDelete> source(raw_source);

  int numa_node = 0;
  if (const int code = pmem2_source_numa_node(source.get(), &numa_node); code != 0) {
    if (code != PMEM2_E_DAX_REGION_NOT_FOUND) report.scan = BadBlockScan::failed;
    report.detail = pmem2_failure("pmem2_source_numa_node", code);
    return report;
  }

  report.scan = BadBlockScan::failed;  // until the list has been read to its end
  pmem2_badblock_context* raw_context = nullptr;
  if (const int code = pmem2_badblock_context_new(&raw_context, source.get()); code != 0) {
    report.detail = pmem2_failure("pmem2_badblock_context_new", code);
    return report;
  }
  const std::unique_ptr<pmem2_badblock_context, Pmem2BadBlockContextDelete> context(raw_context);
  pmem2_badblock block{};
  int code = 0;
  while ((code = pmem2_badblock_next(context.get(), &block)) == 0) {
    report.blocks.push_back({block.offset, block.length});
  }
  if (code != PMEM2_E_NO_BAD_BLOCK_FOUND) {
    // The blocks read so far stay: a heap still refuses those.
    report.detail = pmem2_failure("pmem2_badblock_next", code);
    return report;
  }
  report.scan = BadBlockScan::scanned;
  return report;
}

CACHEDARRAYS_INLINE std::vector<BadBlock> bad_blocks_within(const std::vector<BadBlock>& blocks, std::uint64_t bytes) {
  std::vector<BadBlock> within;
  for (const BadBlock& block : blocks) {
    if (block.length == 0 || block.offset >= bytes) continue;
    within.push_back({block.offset, std::min(block.length, bytes - block.offset)});
  }
  return within;
}

}  // namespace cachedarrays::detail
