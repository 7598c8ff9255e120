// Implementation of cachedarrays_policy.hpp (header-only mode includes it from there; the
// compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"

#include <algorithm>

#include "cachedarrays/policy/moves.hpp"
#include "cachedarrays/policy/detail/lru_list.hpp"

namespace cachedarrays::policy {

using detail::LruList;

namespace detail {

CACHEDARRAYS_INLINE LruList::Entry& entry_of(const Object& object) { return *object.policy_state<LruList::Entry>(); }

// How many victim windows make_room tries before giving up (a window may
// hold a pinned object, or the slow tier may be full).
inline constexpr int max_victim_windows = 16;

}  // namespace detail

// ---- Mode -------------------------------------------------------------------

CACHEDARRAYS_INLINE Mode Mode::parse(std::string_view name) {
  const auto invalid = [&] {
    return invalid_argument("cachedarrays: '" + std::string(name) +
                            "' is not a CachedArrays policy mode; use 'ca' (CA:∅) or 'ca-' followed by "
                            "the letters L, M, P, each at most once: ca-l, ca-lm, ca-lmp, ...; or 'hw-cache'");
  };
  Mode mode;
  if (name == "ca") return mode;
  if (name == "hw-cache") return mode::hw_cache;
  if (name.size() < 4 || name.substr(0, 3) != "ca-") throw invalid();
  for (char c : name.substr(3)) {
    bool* flag = nullptr;
    switch (c) {
      case 'l': case 'L': flag = &mode.local_allocation; break;
      case 'm': case 'M': flag = &mode.memory_optimisations; break;
      case 'p': case 'P': flag = &mode.prefetch; break;
      default: throw invalid();
    }
    if (*flag) throw invalid();
    *flag = true;
  }
  return mode;
}

CACHEDARRAYS_INLINE std::string Mode::name() const {
  if (hardware_cache) return "hw-cache";
  std::string letters = std::string(local_allocation ? "l" : "") + (memory_optimisations ? "m" : "") +
                        (prefetch ? "p" : "");
  return letters.empty() ? "ca" : "ca-" + letters;
}

// ---- CachedArraysPolicy -------------------------------------------------------

CACHEDARRAYS_INLINE CachedArraysPolicy::CachedArraysPolicy(Mode mode)
    : mode_(mode.hardware_cache ? mode::hw_cache : mode), lru_(std::make_unique<LruList>()) {}

CACHEDARRAYS_INLINE CachedArraysPolicy::~CachedArraysPolicy() = default;

CACHEDARRAYS_INLINE void CachedArraysPolicy::attach(DataManager& manager) {
  if (manager.device_count() < 2) {
    throw invalid_argument("cachedarrays: policy '" + name() +
                           "' moves data between a fast and a slow device, but the runtime has " +
                           std::to_string(manager.device_count()) + "; give it at least two");
  }
  Policy::attach(manager);
  fast_ = 0;
  slow_ = manager.device_count() - 1;
}

CACHEDARRAYS_INLINE Region* CachedArraysPolicy::allocate_slow(std::uint64_t bytes) {
  DataManager& dm = manager();
  return retired_.allocate_or_collect(
      dm, [&] { return dm.allocate(slow_, bytes); }, [this](Object& dead) { forget(dead); });
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::place(Object& object) {
  DataManager& dm = manager();
  const std::uint64_t bytes = object.bytes();

  Region* region = nullptr;
  if (mode_.local_allocation && bytes <= dm.capacity(fast_)) {
    region = dm.allocate(fast_, bytes);
    if (region == nullptr && make_room(bytes)) region = dm.allocate(fast_, bytes);
  }
  if (region == nullptr) region = allocate_slow(bytes);
  // CA:∅ starts in slow memory; if even that is full, fast memory is the
  // last resort rather than an out-of-memory error.
  if (region == nullptr && !mode_.local_allocation) region = dm.allocate(fast_, bytes);
  if (region == nullptr) return false;

  dm.setprimary(object, *region);
  object.set_policy_state(std::make_unique<LruList::Entry>(object));
  touch_if_fast(object);
  return true;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::touch_if_fast(Object& object) {
  LruList::Entry& e = detail::entry_of(object);
  if (manager().device(*manager().getprimary(object)) == fast_) lru_->touch(e); else lru_->remove(e);
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::bring_to_fast(Object& object) {
  DataManager& dm = manager();
  const Region* primary = dm.getprimary(object);
  if (dm.device(*primary) == fast_) {
    lru_->touch(detail::entry_of(object));
    return true;
  }
  if (object.bytes() > dm.capacity(fast_)) return false;
  const bool moved = policy::prefetch(dm, object, fast_, dm.device(*primary),
                                      [this](std::uint64_t bytes) { return make_room(bytes); });
  if (moved) lru_->touch(detail::entry_of(object));
  return moved;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::evict_for_room(Region& region) {
  DataManager& dm = manager();
  Object* object = dm.parent(region);
  if (object == nullptr || dm.getprimary(*object) != &region) {
    // A free-standing region or a stray secondary: nothing to preserve.
    dm.free(region);
    return true;
  }
  EvictOutcome outcome = policy::evict(dm, *object, fast_, slow_);
  if (!outcome.moved && !retired_.empty() && !detail::entry_of(*object).retired) {
    collect();  // the slow tier is full: free what is retired, then retry
    outcome = policy::evict(dm, *object, fast_, slow_);
  } else if (!outcome.moved && detail::entry_of(*object).retired) {
    // A retired object nobody will read again: dropping it is collect()'s
    // job, and the slow tier has no room to keep it anyway.
    collect();
    return true;
  }
  if (outcome.moved) lru_->remove(detail::entry_of(*object));
  return outcome.moved;
}

CACHEDARRAYS_INLINE bool CachedArraysPolicy::make_room(std::uint64_t bytes) {
  DataManager& dm = manager();
  const DeviceUsage usage = dm.usage(fast_);
  if (usage.largest_free_block >= bytes) return true;
  if (usage.bytes_free() >= bytes) {
    // Enough free bytes, no hole: slide live regions down until one hole
    // is large enough (a copy within DRAM, cheaper than a write-back), and
    // no further: the rest of the heap stays where it is.
    dm.defrag(fast_, bytes);
    ++dm.policy_counters().defrags;
    if (dm.usage(fast_).largest_free_block >= bytes) return true;
  }
  const std::uint64_t span = (bytes + 63) & ~std::uint64_t{63};
  if (span > usage.capacity) return false;
  std::vector<Object*> tried;
  for (int attempt = 0; attempt < detail::max_victim_windows; ++attempt) {
    // The window starts at the least recently used unpinned victim (paper
    // Listing 2, line 8) and covers `bytes`; it must hold no pinned object.
    std::uint64_t start = 0;
    Object* victim = lru_->find([&](Object& candidate) {
      if (candidate.pinned() || std::find(tried.begin(), tried.end(), &candidate) != tried.end()) return false;
      const Region* r = dm.getprimary(candidate);
      if (dm.device(*r) != fast_) return false;
      start = std::min(dm.offset(*r), usage.capacity - span);
      return !dm.pinned_in_range(fast_, start, span);
    });
    if (victim == nullptr) return false;
    tried.push_back(victim);
    if (dm.evictfrom(fast_, start, span, [this](Region& region) { return evict_for_room(region); })) {
      return true;
    }
  }
  return false;
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::will_use(Object& object) { bring_to_fast(object); }

CACHEDARRAYS_INLINE void CachedArraysPolicy::will_read(Object& object) {
  if (mode_.prefetch) bring_to_fast(object); else touch_if_fast(object);
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::will_write(Object& object) { bring_to_fast(object); }

CACHEDARRAYS_INLINE void CachedArraysPolicy::archive(Object& object) {
  if (mode_.hardware_cache) return;  // a hardware cache sees no hints
  if (manager().device(*manager().getprimary(object)) == fast_) lru_->archive(detail::entry_of(object));
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::forget(Object& object) {
  lru_->remove(detail::entry_of(object));
  manager().destroy(object);  // frees the entry with the object
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::retire(Object& object) {
  if (mode_.memory_optimisations) {
    forget(object);
    return;
  }
  // Without M nothing learns that the object is dead until collect(): it
  // keeps its place (and its recency), and may be written back if evicted.
  detail::entry_of(object).retired = true;
  retired_.defer(manager(), object);
}

CACHEDARRAYS_INLINE void CachedArraysPolicy::collect() {
  retired_.collect(manager(), [this](Object& dead) { forget(dead); });
}

}  // namespace cachedarrays::policy
