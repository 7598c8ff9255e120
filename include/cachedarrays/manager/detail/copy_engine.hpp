// How bytes move between regions (docs/design.md: the library owns "how data
// moves"). Small copies are a single memcpy on the calling thread; large ones
// are split into chunks copied in parallel with oneTBB. Which stores carry a
// copy is measured, not assumed (copy_path.hpp): non-temporal vector stores
// avoid the read-for-ownership and leave the cache to data the program is
// using, but on some CPUs the C library's memcpy streams faster, so each size
// band uses whichever the calibration found faster on this CPU (or what
// CACHEDARRAYS_COPY forces). Into real persistent memory a copy always uses
// libpmem's pmem_memcpy_nodrain + one pmem_drain, whose stores are what make
// the data durable. The non-temporal vector path (AVX-512, AVX2 or SSE2) is
// chosen at run time, so the default build runs on any x86-64. A detail
// header, installed because header-only users compile the engine
// (copy_engine-inl.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cachedarrays::detail {

enum class CopyDestination {
  fast,        // DRAM-like: ordinary stores for the first half of L2 (read
               // soon, stays cached), the chosen stores for the rest
  slow,        // slow tier that is not pmem: the chosen stores
  persistent,  // real persistent memory: libpmem non-temporal copy + drain
};

// Below this many bytes a copy is always one memcpy: the set-up of a
// streamed copy (aligning the head, the fence) costs more than it saves, and
// the destination lines are few enough that leaving them in the cache does
// no harm.
inline constexpr std::uint64_t stream_min_bytes = 256;

// The two kinds of store a copy can be made with.
enum class CopyPath : std::uint8_t {
  memcpy,       // the C library's memcpy (on x86 often `rep movsb`)
  nontemporal,  // streaming vector stores (copy_nontemporal's), one fence per thread
};

struct CopyTuning {
  // Copies of at least this many bytes are split across threads. Chosen by
  // bench/copy_bandwidth (see README "Benchmarks").
  std::uint64_t parallel_threshold = std::uint64_t{1} << 20;
  // Bytes each parallel task copies.
  std::uint64_t chunk_bytes = std::uint64_t{512} << 10;
  // Use at most this many threads (0: oneTBB's default concurrency).
  int max_threads = 0;
  // The stores to use; unset: the process's measured choice for the copy's
  // size band (copy_path.hpp). The calibration and the tests set it.
  std::optional<CopyPath> path = std::nullopt;
  // Whether a copy at or above parallel_threshold is split; unset: the
  // process's measured choice.
  std::optional<bool> split = std::nullopt;
};

// Copies `bytes` from src to dst (the ranges must not overlap). The single
// entry for every copy the library makes between tiers. The first copy of
// at least stream_min_bytes that does not go to persistent memory makes the
// process's choice of stores (copy_path.hpp), which may take a few
// milliseconds; it throws invalid_argument for a bad CACHEDARRAYS_COPY.
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
