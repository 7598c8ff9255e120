// prefault: make the OS assign every physical page of a heap at start-up,
// so that no page fault (and no zeroing of a fresh page) is charged to the
// first kernel that happens to touch it.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "cachedarrays/config.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"

namespace cachedarrays::detail {

// The smallest page size on every platform we run on; touching once per
// 4 KiB also covers huge pages (a few redundant touches, no missed page).
inline constexpr std::uint64_t prefault_page_bytes = 4096;
// Pages per task: 2 MiB of work amortises the scheduling cost while still
// spreading a heap of a few hundred MiB over all cores.
inline constexpr std::uint64_t prefault_pages_per_task = 512;

// An atomic add of zero is a write as far as the MMU is concerned, so the
// page is faulted in writable in one step (a plain read would map the shared
// zero page first and take a second, copy-on-write fault on the write), and
// it leaves the byte unchanged: prefault preserves the contents of a user's
// existing DAX file. Being atomic it is also harmless if another thread
// writes the same byte meanwhile.
CACHEDARRAYS_INLINE void prefault_touch(std::byte* p) noexcept {
  std::atomic_ref<unsigned char> byte(*reinterpret_cast<unsigned char*>(p));
  byte.fetch_add(0, std::memory_order_relaxed);
}

CACHEDARRAYS_INLINE void prefault(std::byte* base, std::uint64_t bytes) {
  if (base == nullptr || bytes == 0) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(base);
  const auto end = begin + bytes;
  // Pages are counted from the page holding `base`, so an unaligned base
  // still gets its first (partial) page touched, and so does the last one.
  const std::uintptr_t first_page = begin & ~static_cast<std::uintptr_t>(prefault_page_bytes - 1);
  const std::uint64_t pages = (end - first_page + prefault_page_bytes - 1) / prefault_page_bytes;
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, pages, prefault_pages_per_task),
                    [base, begin, first_page](const tbb::blocked_range<std::uint64_t>& range) {
                      for (std::uint64_t i = range.begin(); i != range.end(); ++i) {
                        const std::uintptr_t page = first_page + i * prefault_page_bytes;
                        prefault_touch(base + (std::max(page, begin) - begin));
                      }
                    });
}

}  // namespace cachedarrays::detail
