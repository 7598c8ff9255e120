// The one walk over a trace's application-level events, shared by the
// replay simulator and the 2LM simulation. It re-creates the trace's
// objects as arrays of a target runtime (trace ids mapped to them), retires
// and collects as the recorded run did, checks every event — an object
// created twice or unknown (never created, or already retired), arguments
// outside the trace's table, an unknown kernel name or hint — and reports a
// bad one by its index. What a simulator makes of hints and kernels is its
// own: it derives from TraceWalker.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/runtime/cached_array.hpp"

namespace cachedarrays {

/// The one walk over a trace's application-level events, shared by the
/// simulators: re-creates the trace's objects as arrays of a target runtime,
/// retires and collects as the recorded run did, and checks every event.
/// A simulator derives from it and says what hints and kernels do.
class TraceWalker {
 public:
  virtual ~TraceWalker() = default;
  TraceWalker(const TraceWalker&) = delete;
  TraceWalker& operator=(const TraceWalker&) = delete;

  /// Walks every event in order, then retires whatever the trace left alive,
  /// in creation order. On an exception, `stop()` runs first (so that nothing
  /// stays pinned) and the arrays still alive are retired when the walker
  /// goes. A bad event throws invalid_argument naming its index.
  void run();

 protected:
  /// A walk of `trace` against `target` (both kept by reference: they must
  /// outlive the walker). `who` names the simulator in messages ("replay",
  /// "simulate_2lm").
  TraceWalker(const Trace& trace, Runtime& target, std::string who);

  /// A hint event; ignored unless the simulator passes hints on.
  virtual void hint(CachedArray<std::byte>& array, Hint hint);
  /// A kernel_begin, its arguments resolved to the target's arrays, in order;
  /// `args` are the trace's entries for them (id, size, access, device).
  virtual void kernel_begin(const TraceEvent& event, std::span<CachedArray<std::byte>* const> arrays,
                            std::span<const TraceArg> args) = 0;
  /// A kernel_end event; ignored unless the simulator overrides it.
  virtual void kernel_end(const TraceEvent& event);
  /// An iteration event, before the target begins the iteration.
  virtual void iteration_begin() {}
  /// The walk ends (normally or by an exception): release whatever the
  /// simulator still pins.
  virtual void stop() {}

  /// Throws invalid_argument naming the simulator, the current event's index
  /// and kind, and `what` is wrong with it.
  [[noreturn]] void fail(const std::string& what) const;
  /// The trace being walked.
  [[nodiscard]] const Trace& trace() const noexcept { return trace_; }
  /// The runtime the trace's events are replayed against.
  [[nodiscard]] Runtime& target() const noexcept { return target_; }

 private:
  void step(const TraceEvent& event);
  CachedArray<std::byte>& lookup(std::uint64_t id);

  const Trace& trace_;
  Runtime& target_;
  std::string who_;
  std::size_t index_ = 0;
  std::map<std::uint64_t, CachedArray<std::byte>> live_;  // by trace id: creation order
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/trace_walker-inl.hpp"
#endif
