// Implementation of trace_walker.hpp (header-only mode includes it from there; the
// compiled library from src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/trace_walker.hpp"

#include <utility>
#include <vector>

namespace cachedarrays {

CACHEDARRAYS_INLINE TraceWalker::TraceWalker(const Trace& trace, Runtime& target, std::string who)
    : trace_(trace), target_(target), who_(std::move(who)) {}

CACHEDARRAYS_INLINE void TraceWalker::run() {
  const std::vector<TraceEvent>& events = trace_.events();
  try {
    for (index_ = 0; index_ < events.size(); ++index_) step(events[index_]);
  } catch (...) {
    stop();
    throw;
  }
  stop();
  for (auto& [id, array] : live_) array.retire();
  live_.clear();
}

CACHEDARRAYS_INLINE void TraceWalker::hint(CachedArray<std::byte>& /*array*/, Hint /*hint*/) {}

CACHEDARRAYS_INLINE void TraceWalker::kernel_end(const TraceEvent& /*event*/) {}

CACHEDARRAYS_INLINE void TraceWalker::fail(const std::string& what) const {
  const TraceEvent& e = trace_.events()[index_];
  throw invalid_argument("cachedarrays: " + who_ + ": trace event " + std::to_string(index_) + " (" +
                         to_string(e.kind) + "): " + what);
}

CACHEDARRAYS_INLINE CachedArray<std::byte>& TraceWalker::lookup(std::uint64_t id) {
  auto it = live_.find(id);
  if (it == live_.end()) {
    fail("object #" + std::to_string(id) +
         " is unknown (never created in this trace, or already retired); "
         "record the trace from before the objects it uses are created");
  }
  return it->second;
}

CACHEDARRAYS_INLINE void TraceWalker::step(const TraceEvent& e) {
  switch (e.kind) {
    case TraceKind::create: {
      if (live_.contains(e.object)) fail("object #" + std::to_string(e.object) + " is created twice");
      live_.emplace(e.object, target_.array<std::byte>(e.bytes));
      break;
    }
    case TraceKind::retire: {
      // Retired while still in the map: if the retire throws (the object is
      // pinned), the array stays owned here and is retired once unpinned.
      lookup(e.object).retire();
      live_.erase(e.object);
      break;
    }
    case TraceKind::hint: {
      if (e.detail >= static_cast<std::uint8_t>(Hint::retire)) {
        fail("unknown hint " + std::to_string(e.detail) + " (retires are recorded as retire events)");
      }
      hint(lookup(e.object), static_cast<Hint>(e.detail));
      break;
    }
    case TraceKind::kernel_begin: {
      if (static_cast<std::uint64_t>(e.arg_begin) + e.arg_count > trace_.args().size()) {
        fail("its arguments lie outside the trace's argument table");
      }
      if (e.name >= trace_.names().size()) fail("its name index " + std::to_string(e.name) + " is unknown");
      const std::span<const TraceArg> args(trace_.args().data() + e.arg_begin, e.arg_count);
      std::vector<CachedArray<std::byte>*> arrays;
      arrays.reserve(args.size());
      for (const TraceArg& a : args) arrays.push_back(&lookup(a.object));
      kernel_begin(e, arrays, args);
      break;
    }
    case TraceKind::kernel_end: kernel_end(e); break;
    case TraceKind::collect: target_.collect(); break;
    case TraceKind::iteration:
      iteration_begin();
      target_.begin_iteration();
      break;
    // The mechanism's own events are what the target's policy re-derives.
    case TraceKind::allocate:
    case TraceKind::free:
    case TraceKind::copy:
    case TraceKind::evict:
    case TraceKind::defrag_move:
    // A switch the run's auto policy made is the target policy's own to make.
    case TraceKind::policy_switch: break;
  }
}

}  // namespace cachedarrays
