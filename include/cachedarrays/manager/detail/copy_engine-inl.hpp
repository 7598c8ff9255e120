// The copy engine: splits a copy into chunks, runs them on oneTBB when the
// copy is large, and picks the stores from where the bytes go and from the
// process's measured choice (see copy_engine.hpp for why each destination
// gets the stores it gets, copy_path.hpp for the choice).
#pragma once

#if !defined(__x86_64__)
#error "cachedarrays' copy engine targets x86-64 (SSE2 is its baseline vector path)"
#endif

#include <immintrin.h>
#include <libpmem.h>
#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>
#include <string_view>

#include "cachedarrays/config.hpp"
#include "cachedarrays/manager/copy_settings.hpp"
#include "cachedarrays/manager/detail/copy_engine.hpp"
#include "cachedarrays/manager/detail/copy_path.hpp"

namespace cachedarrays::detail {

inline constexpr std::uint64_t copy_cache_line = 64;

// Streamed copies go through memory in blocks of four pages, one vector from
// each page in turn (as glibc's large memcpy does): four independent streams
// keep more DRAM pages open and more fills in flight than one, which
// streams faster than one sequential stream and than glibc's memcpy
// (bench/copy_bandwidth compares them).
inline constexpr std::uint64_t copy_page_bytes = 4096;
inline constexpr std::uint64_t copy_block_bytes = 4 * copy_page_bytes;

// The intrinsics take vector pointers; only pointers cross this helper (a
// vector value returned from a function without the target's ISA enabled
// would change the ABI). Loads are unaligned; stores are aligned because the
// destination has been brought to a cache-line boundary first.
template <typename Vector>
Vector* as_vector(std::byte* p) noexcept {
  return reinterpret_cast<Vector*>(p);
}
template <typename Vector>
const Vector* as_vector(const std::byte* p) noexcept {
  return reinterpret_cast<const Vector*>(p);
}

// Each vector path supplies two loops over a line-aligned destination:
// `blocks` streams whole four-page blocks, `vectors` streams single vectors
// (what is left after the blocks, less than a block). Neither fences; see
// finish_pieces.

CACHEDARRAYS_INLINE __attribute__((target("avx512f"))) void blocks_avx512(std::byte* dst, const std::byte* src,
                                                                          std::uint64_t blocks) noexcept {
  for (; blocks > 0; --blocks, dst += copy_block_bytes, src += copy_block_bytes) {
    for (std::uint64_t at = 0; at < copy_page_bytes; at += sizeof(__m512i)) {
      const __m512i a = _mm512_loadu_si512(src + at);
      const __m512i b = _mm512_loadu_si512(src + copy_page_bytes + at);
      const __m512i c = _mm512_loadu_si512(src + 2 * copy_page_bytes + at);
      const __m512i d = _mm512_loadu_si512(src + 3 * copy_page_bytes + at);
      _mm512_stream_si512(as_vector<__m512i>(dst + at), a);
      _mm512_stream_si512(as_vector<__m512i>(dst + copy_page_bytes + at), b);
      _mm512_stream_si512(as_vector<__m512i>(dst + 2 * copy_page_bytes + at), c);
      _mm512_stream_si512(as_vector<__m512i>(dst + 3 * copy_page_bytes + at), d);
    }
  }
}

CACHEDARRAYS_INLINE __attribute__((target("avx512f"))) void vectors_avx512(std::byte* dst, const std::byte* src,
                                                                           std::uint64_t vectors) noexcept {
  for (; vectors > 0; --vectors, dst += sizeof(__m512i), src += sizeof(__m512i)) {
    _mm512_stream_si512(as_vector<__m512i>(dst), _mm512_loadu_si512(src));
  }
}

CACHEDARRAYS_INLINE __attribute__((target("avx2"))) void blocks_avx2(std::byte* dst, const std::byte* src,
                                                                     std::uint64_t blocks) noexcept {
  for (; blocks > 0; --blocks, dst += copy_block_bytes, src += copy_block_bytes) {
    for (std::uint64_t at = 0; at < copy_page_bytes; at += sizeof(__m256i)) {
      const __m256i a = _mm256_loadu_si256(as_vector<__m256i>(src + at));
      const __m256i b = _mm256_loadu_si256(as_vector<__m256i>(src + copy_page_bytes + at));
      const __m256i c = _mm256_loadu_si256(as_vector<__m256i>(src + 2 * copy_page_bytes + at));
      const __m256i d = _mm256_loadu_si256(as_vector<__m256i>(src + 3 * copy_page_bytes + at));
      _mm256_stream_si256(as_vector<__m256i>(dst + at), a);
      _mm256_stream_si256(as_vector<__m256i>(dst + copy_page_bytes + at), b);
      _mm256_stream_si256(as_vector<__m256i>(dst + 2 * copy_page_bytes + at), c);
      _mm256_stream_si256(as_vector<__m256i>(dst + 3 * copy_page_bytes + at), d);
    }
  }
}

CACHEDARRAYS_INLINE __attribute__((target("avx2"))) void vectors_avx2(std::byte* dst, const std::byte* src,
                                                                      std::uint64_t vectors) noexcept {
  for (; vectors > 0; --vectors, dst += sizeof(__m256i), src += sizeof(__m256i)) {
    _mm256_stream_si256(as_vector<__m256i>(dst), _mm256_loadu_si256(as_vector<__m256i>(src)));
  }
}

// SSE2 is part of x86-64, so these need no target attribute.
CACHEDARRAYS_INLINE void blocks_sse2(std::byte* dst, const std::byte* src, std::uint64_t blocks) noexcept {
  for (; blocks > 0; --blocks, dst += copy_block_bytes, src += copy_block_bytes) {
    for (std::uint64_t at = 0; at < copy_page_bytes; at += sizeof(__m128i)) {
      const __m128i a = _mm_loadu_si128(as_vector<__m128i>(src + at));
      const __m128i b = _mm_loadu_si128(as_vector<__m128i>(src + copy_page_bytes + at));
      const __m128i c = _mm_loadu_si128(as_vector<__m128i>(src + 2 * copy_page_bytes + at));
      const __m128i d = _mm_loadu_si128(as_vector<__m128i>(src + 3 * copy_page_bytes + at));
      _mm_stream_si128(as_vector<__m128i>(dst + at), a);
      _mm_stream_si128(as_vector<__m128i>(dst + copy_page_bytes + at), b);
      _mm_stream_si128(as_vector<__m128i>(dst + 2 * copy_page_bytes + at), c);
      _mm_stream_si128(as_vector<__m128i>(dst + 3 * copy_page_bytes + at), d);
    }
  }
}

CACHEDARRAYS_INLINE void vectors_sse2(std::byte* dst, const std::byte* src, std::uint64_t vectors) noexcept {
  for (; vectors > 0; --vectors, dst += sizeof(__m128i), src += sizeof(__m128i)) {
    _mm_stream_si128(as_vector<__m128i>(dst), _mm_loadu_si128(as_vector<__m128i>(src)));
  }
}

using StreamLoop = void (*)(std::byte*, const std::byte*, std::uint64_t) noexcept;

struct StreamPath {
  StreamLoop blocks;
  StreamLoop vectors;
  std::uint64_t vector_bytes;
  std::string_view name;
};

// The widest path this CPU supports, capped by stream_isa_cap().
CACHEDARRAYS_INLINE StreamPath choose_stream_path() noexcept {
  __builtin_cpu_init();
  const StreamIsa cap = stream_isa_cap();
  if (cap == StreamIsa::avx512 && __builtin_cpu_supports("avx512f")) {
    return {blocks_avx512, vectors_avx512, sizeof(__m512i), "avx512"};
  }
  if ((cap == StreamIsa::avx512 || cap == StreamIsa::avx2) && __builtin_cpu_supports("avx2")) {
    return {blocks_avx2, vectors_avx2, sizeof(__m256i), "avx2"};
  }
  return {blocks_sse2, vectors_sse2, sizeof(__m128i), "sse2"};
}

CACHEDARRAYS_INLINE const StreamPath& stream_path() noexcept {
  static const StreamPath path = choose_stream_path();
  return path;
}

// Writes [dst, dst + bytes) with non-temporal stores for every whole vector
// and ordinary stores for the unaligned head and the tail; bytes >=
// stream_min_bytes. Does not fence: the caller issues one sfence after all
// the streams of a thread (streaming stores are weakly ordered).
CACHEDARRAYS_INLINE void stream_copy(std::byte* dst, const std::byte* src, std::uint64_t bytes) noexcept {
  const StreamPath& path = stream_path();
  const auto misalignment = reinterpret_cast<std::uintptr_t>(dst) & (copy_cache_line - 1);
  const std::uint64_t head = misalignment == 0 ? 0 : copy_cache_line - misalignment;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  const std::uint64_t blocks = bytes / copy_block_bytes;
  path.blocks(dst, src, blocks);
  dst += blocks * copy_block_bytes;
  src += blocks * copy_block_bytes;
  bytes -= blocks * copy_block_bytes;
  const std::uint64_t vectors = bytes / path.vector_bytes;
  path.vectors(dst, src, vectors);
  dst += vectors * path.vector_bytes;
  src += vectors * path.vector_bytes;
  std::memcpy(dst, src, bytes - vectors * path.vector_bytes);
}

// A copy into the fast tier is read soon, so its first bytes are written
// with ordinary stores and stay in the cache (streamed stores that follow
// bypass the cache and do not evict them). How many: half of this core's L2,
// since the source passes through the L2 as well. Past that, the copy uses
// the chosen stores like any other: ordinary stores buy nothing there unless
// the calibration found memcpy faster. A single memcpy makes this choice
// internally by size, but a copy split into chunks hides the size from it,
// so the engine decides.
CACHEDARRAYS_INLINE std::uint64_t fast_cached_bytes() noexcept {
  static const std::uint64_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? static_cast<std::uint64_t>(l2) / 2 : std::uint64_t{512} << 10;
  }();
  return bytes;
}

// Returns true when it streamed, i.e. when the caller owes a fence.
CACHEDARRAYS_INLINE bool copy_with(std::byte* dst, const std::byte* src, std::uint64_t bytes, CopyPath path) noexcept {
  if (path == CopyPath::memcpy || bytes < stream_min_bytes) {
    std::memcpy(dst, src, bytes);
    return false;
  }
  stream_copy(dst, src, bytes);
  return true;
}

// Copies `bytes` that start `offset` bytes into the whole copy, with the
// stores `where` and `path` ask for, without fencing. Returns true when the
// caller owes a fence for streamed stores.
CACHEDARRAYS_INLINE bool copy_piece(std::byte* dst, const std::byte* src, std::uint64_t offset, std::uint64_t bytes,
                                    CopyDestination where, CopyPath path) noexcept {
  switch (where) {
    case CopyDestination::fast: {
      const std::uint64_t cached = fast_cached_bytes();
      const std::uint64_t ordinary = offset >= cached ? 0 : std::min(bytes, cached - offset);
      std::memcpy(dst, src, ordinary);
      return ordinary < bytes && copy_with(dst + ordinary, src + ordinary, bytes - ordinary, path);
    }
    case CopyDestination::slow: return copy_with(dst, src, bytes, path);
    case CopyDestination::persistent: pmem_memcpy_nodrain(dst, src, bytes); return false;
  }
  return false;
}

// Makes this thread's stores of the pieces it copied ordered before anything
// it does next. Fences only order the stores of the thread that issues them,
// so every thread that copied pieces finishes with its own fence; the task
// join that follows then publishes them to the caller.
CACHEDARRAYS_INLINE void finish_pieces(CopyDestination where, bool streamed) noexcept {
  if (where == CopyDestination::persistent) {
    pmem_drain();
  } else if (streamed) {
    _mm_sfence();
  }
}

CACHEDARRAYS_INLINE void copy_bytes(std::byte* dst, const std::byte* src, std::uint64_t bytes, CopyDestination where,
                                    const CopyTuning& tuning) {
  if (bytes == 0) return;
  // Chunks are whole cache lines of the destination so that no two threads
  // ever write the same line (a shared line would bounce between cores and,
  // for streamed stores, defeat write combining).
  const std::uint64_t chunk = std::max<std::uint64_t>(
      (tuning.chunk_bytes + copy_cache_line - 1) / copy_cache_line * copy_cache_line, copy_cache_line);
  const bool may_split = bytes >= tuning.parallel_threshold && bytes > chunk && tuning.max_threads != 1;
  // The measured choice is asked for only when it matters: never for tiny
  // copies (always memcpy), persistent memory (always libpmem), or a
  // tuning that says everything itself.
  const bool needs_choice = bytes >= stream_min_bytes && where != CopyDestination::persistent &&
                            (!tuning.path || (may_split && !tuning.split));
  const CopyBandChoice* band = needs_choice ? &process_copy_decision().choice.band(copy_band_of(bytes)) : nullptr;
  const bool split = may_split && tuning.split.value_or(band == nullptr || band->split);
  if (!split) {
    const CopyPath path = tuning.path ? *tuning.path : band != nullptr ? band->path : CopyPath::memcpy;
    finish_pieces(where, copy_piece(dst, src, 0, bytes, where, path));
    return;
  }
  const CopyPath path = tuning.path ? *tuning.path : band != nullptr ? band->split_path : CopyPath::memcpy;

  // Chunk 0 runs up to the first destination line boundary past `chunk`;
  // every later chunk starts on a line boundary.
  const auto misalignment = reinterpret_cast<std::uintptr_t>(dst) & (copy_cache_line - 1);
  const std::uint64_t lead = misalignment == 0 ? 0 : copy_cache_line - misalignment;
  const std::uint64_t chunks = (bytes - lead + chunk - 1) / chunk;
  // oneTBB orders every task after the spawn and before the join, but it does
  // so inside libtbb, which ThreadSanitizer cannot see when libtbb is not
  // instrumented (Debian's is not): every byte of the copy would then be
  // reported as a race. This counter restates both orderings where the
  // sanitizer sees them, for one load and one add per task, and checks that
  // the chunks cover the copy exactly once.
  std::atomic<std::uint64_t> copied{0};
  copied.store(0, std::memory_order_release);
  const auto body = [=, &copied](const tbb::blocked_range<std::uint64_t>& range) {
    static_cast<void>(copied.load(std::memory_order_acquire));
    const std::uint64_t begin = range.begin() == 0 ? 0 : lead + range.begin() * chunk;
    const std::uint64_t end = std::min(bytes, lead + range.end() * chunk);
    finish_pieces(where, copy_piece(dst + begin, src + begin, begin, end - begin, where, path));
    copied.fetch_add(end - begin, std::memory_order_release);
  };
  const tbb::blocked_range<std::uint64_t> all(0, chunks, 1);
  // More threads than cores would only time-slice one memory stream; oneTBB
  // also warns when asked for them.
  if (tuning.max_threads > 0 && tuning.max_threads < tbb::info::default_concurrency()) {
    tbb::task_arena arena(tuning.max_threads);
    arena.execute([&] { tbb::parallel_for(all, body); });
  } else {
    tbb::parallel_for(all, body);
  }
  [[maybe_unused]] const std::uint64_t total = copied.load(std::memory_order_acquire);
  assert(total == bytes && "the chunks must cover the copy exactly once");
}

CACHEDARRAYS_INLINE void copy_nontemporal(std::byte* dst, const std::byte* src, std::uint64_t bytes) noexcept {
  if (bytes == 0) return;  // memcpy must not see the null pointers an empty copy may pass
  if (bytes < stream_min_bytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  stream_copy(dst, src, bytes);
  _mm_sfence();
}

CACHEDARRAYS_INLINE std::string_view nontemporal_path() noexcept { return stream_path().name; }

}  // namespace cachedarrays::detail
