// How bytes move between regions (docs/design.md: the library owns "how data
// moves"). Small copies are a single memcpy on the calling thread; large ones
// are split into chunks copied in parallel with oneTBB. When the destination
// is the slow tier the copy uses non-temporal stores (no read-for-ownership,
// no pollution of the cache with data nobody will read soon); into real
// persistent memory it uses libpmem's pmem_memcpy_nodrain + one pmem_drain.
// The vector path (AVX-512, AVX2 or SSE2) is chosen at run time, so the
// default build runs on any x86-64. A detail header, installed because
// header-only users compile the engine (copy_engine-inl.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cachedarrays::detail {

enum class CopyDestination {
  fast,         // DRAM-like: ordinary stores for the first half of L2 (read
                // soon, stays cached), non-temporal stores for the rest
  slow,         // slow tier that is not pmem: non-temporal stores
  persistent,   // real persistent memory: libpmem non-temporal copy + drain
};

struct CopyTuning {
  // Copies of at least this many bytes are split across threads. Chosen by
  // bench/copy_bandwidth (see README "Benchmarks").
  std::uint64_t parallel_threshold = std::uint64_t{1} << 20;
  // Bytes each parallel task copies.
  std::uint64_t chunk_bytes = std::uint64_t{512} << 10;
  // Use at most this many threads (0: oneTBB's default concurrency).
  int max_threads = 0;
};

// Copies `bytes` from src to dst (the ranges must not overlap).
void copy_bytes(std::byte* dst, const std::byte* src, std::uint64_t bytes, CopyDestination where,
                const CopyTuning& tuning = {});

// Single-threaded non-temporal copy with the best vector path this CPU has;
// falls back to memcpy for tiny sizes. Exposed for the benchmark baseline.
void copy_nontemporal(std::byte* dst, const std::byte* src, std::uint64_t bytes) noexcept;

// The vector path copy_nontemporal uses on this CPU: "avx512", "avx2", "sse2".
[[nodiscard]] std::string_view nontemporal_path() noexcept;

}  // namespace cachedarrays::detail

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/detail/copy_engine-inl.hpp"
#endif
