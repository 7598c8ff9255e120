// Where a Runtime's leak report goes: the objects the program never retired,
// named when the runtime is destroyed (Runtime::set_leak_report,
// CACHEDARRAYS_LEAK_REPORT). The Runtime's lock guards it.
#pragma once

#include "cachedarrays/config.hpp"

#include <functional>
#include <iosfwd>

#include "cachedarrays/runtime/memory_snapshot.hpp"

namespace cachedarrays {

/// A leak report's stream, or none (null, the default).
class LeakReport {
 public:
  /// Sends the report to `out` (which must outlive the runtime); null: none.
  void set(std::ostream* out) noexcept { out_ = out; }
  /// Whether a report is wanted.
  [[nodiscard]] bool wanted() const noexcept { return out_ != nullptr; }
  /// Writes the report of the snapshot `take` makes (write_leak_report),
  /// when one is wanted. Never throws: a destructor calls it, and cannot
  /// report a failure to report.
  void write(const std::function<MemorySnapshot()>& take) const noexcept {
    if (out_ == nullptr) return;
    try {
      (void)write_leak_report(take(), *out_);
    } catch (...) {
      // The runtime still goes.
    }
  }

 private:
  std::ostream* out_ = nullptr;
};

}  // namespace cachedarrays
