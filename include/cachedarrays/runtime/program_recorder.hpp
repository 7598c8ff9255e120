// How a Runtime comes by the program of an iteration without a dry run, and
// where it writes it: a recording asked for (Runtime::record_program, or a
// policy that asks for one at the first begin_iteration) waits for the next
// iteration to begin, and once that iteration has ended its program is made
// from the trace (plan::Program::from_trace) with the tiers it ran on. The
// program output (Runtime::set_program_output) is written when the runtime
// is destroyed. The Runtime's lock guards it; the trace is the Runtime's.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/program_tier.hpp"

namespace cachedarrays {

/// The program recording of one Runtime, and its program output.
class ProgramRecorder {
 public:
  /// Whether a recording was asked for and its program is not made yet.
  [[nodiscard]] bool pending() const noexcept { return pending_; }
  /// Whether the trace it reads was started for it alone, to be dropped
  /// once the program is made.
  [[nodiscard]] bool own_trace() const noexcept { return own_trace_; }
  /// Asks for the next iteration's program; `own_trace`: the runtime
  /// started a trace for it alone.
  void start(bool own_trace) noexcept {
    pending_ = true;
    own_trace_ = own_trace;
    first_ = 0;
  }
  /// The user started a trace of their own, which the recording reads from
  /// now on and which outlives it.
  void trace_kept() noexcept { own_trace_ = false; }
  /// At a begin_iteration, once per runtime: whether to record the first
  /// iteration's program for a policy that asks for one, which is the case
  /// when this iteration is `planned`, no program is `installed` and no
  /// recording is pending.
  [[nodiscard]] bool ask_once(bool planned, bool installed) noexcept;
  /// At begin_iteration number `iteration`: whether the recorded iteration
  /// has just ended.
  [[nodiscard]] bool due(std::uint64_t iteration) const noexcept {
    return pending_ && first_ != 0 && iteration == first_ + 1;
  }
  /// At begin_iteration number `iteration`, after due(): a pending
  /// recording's iteration begins here if none began yet.
  void iteration_begun(std::uint64_t iteration) noexcept {
    if (pending_ && first_ == 0) first_ = iteration;
  }
  /// The recorded iteration's program, read from `trace`, carrying `tiers`
  /// (so that a model elsewhere prices it at them). Ends the recording,
  /// also when the program cannot be made (what from_trace throws).
  [[nodiscard]] std::shared_ptr<const plan::Program> finish(const Trace& trace, std::vector<plan::ProgramTier> tiers);

  /// `path` when it may be a program output: empty, or ending in .json.
  /// Throws invalid_argument otherwise.
  [[nodiscard]] static std::filesystem::path checked_output(std::filesystem::path path);
  /// Makes `path` (a checked_output one) the program output; empty: none.
  void set_output(std::filesystem::path path) noexcept { output_ = std::move(path); }
  /// The program output; empty: none.
  [[nodiscard]] const std::filesystem::path& output() const noexcept { return output_; }
  /// Writes `program` to the output (plan::Program::save) when there is
  /// one; says on standard error why none was written (no program, or the
  /// write failed), since a destructor calls it and cannot throw.
  void write_output(const plan::Program* program) const noexcept;

 private:
  bool asked_ = false;       // ask_once answered
  bool pending_ = false;     // start() was called and no program made yet
  bool own_trace_ = false;   // the trace was started for the program alone
  std::uint64_t first_ = 0;  // the iteration recorded (0: not begun yet)
  std::filesystem::path output_;
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/program_recorder-inl.hpp"
#endif
