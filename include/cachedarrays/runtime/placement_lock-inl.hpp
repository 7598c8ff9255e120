// Implementation of placement_lock.hpp (header-only mode includes it from
// there; the compiled library from src/runtime/runtime.cpp): the futex calls
// of the lock's slow path.
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/placement_lock.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace cachedarrays {

CACHEDARRAYS_INLINE void PlacementLock::sleep_while(std::uint32_t held) noexcept {
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (sequence_.load(std::memory_order_seq_cst) == held) {
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&sequence_), FUTEX_WAIT_PRIVATE, held, nullptr, nullptr, 0);
  }
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

CACHEDARRAYS_INLINE void PlacementLock::wake_one() noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&sequence_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace cachedarrays
