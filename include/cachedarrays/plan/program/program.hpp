// The program of one iteration (docs/design.md "What is known ahead"): training
// repeats one iteration, so it is written down once — the ordered kernels
// with their arguments (object, bytes, read or write), and each object's
// creation, hints and retirement — and planners and lookahead policies read
// it instead of guessing from the past.
//
// Objects are named by number, in the order a planner can rely on in every
// run of the same program: first the objects alive when the iteration
// begins that it uses (parameters, optimiser state; "persistent"), in the
// order of their first use, then the objects the iteration creates, in
// creation order. Objects alive but untouched by the iteration are not
// part of it.
// Kernels are numbered as Runtime::kernels_in_iteration() numbers them
// (scoped read()/write() accesses count as kernels), so a policy's
// KernelPoint::index is the program's kernel index.
//
// A program comes from a Trace (Program::from_trace): of a dry run (the nn
// trainer's, which allocates on virtual heaps and runs no kernel) or of the
// first iterations of any Runtime (Runtime::begin_iteration marks them in
// the trace). It saves to and loads from JSON.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/program_tier.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::plan {

/// One object of the program (numbered by its place in Program::objects()).
struct ProgramObject {
  std::uint64_t bytes = 0;  ///< the object's size
  /// Alive when the iteration begins (created by an earlier iteration or
  /// before the first one). A persistent object the iteration does not
  /// retire is alive at its end too.
  bool persistent = false;

  /// Field-wise equality.
  friend bool operator==(const ProgramObject&, const ProgramObject&) = default;
};

/// One argument of a kernel: which object, how many bytes, read or written.
struct ProgramArg {
  std::uint32_t object = 0;      ///< index into Program::objects()
  std::uint64_t bytes = 0;       ///< what the kernel touches (the object's size)
  Access access = Access::read;  ///< whether the kernel reads or writes it

  /// Field-wise equality.
  friend bool operator==(const ProgramArg&, const ProgramArg&) = default;
};

/// One kernel of the program: its name (its signature, kernel_signature.hpp)
/// and its arguments in the kernel's order.
struct ProgramKernel {
  std::string name;              ///< the name the trace records it under
  std::vector<ProgramArg> args;  ///< its arguments, in order

  /// Field-wise equality.
  friend bool operator==(const ProgramKernel&, const ProgramKernel&) = default;
};

/// What one event of the iteration is, in program order. ProgramStep::index
/// is an object for create/retire/hint and a kernel for kernel.
enum class StepKind : std::uint8_t {
  create,  ///< object `index` is created
  retire,  ///< object `index` is retired
  hint,    ///< object `index` gets ProgramStep::hint
  kernel,  ///< kernel `index` runs
  collect  ///< the policy may run deferred work (Runtime::collect)
};
/// The kind's name as the JSON writes it ("create", "kernel", ...).
[[nodiscard]] const char* to_string(StepKind kind) noexcept;

/// One event of the iteration.
struct ProgramStep {
  StepKind kind = StepKind::kernel;  ///< what happens
  std::uint32_t index = 0;           ///< the object or the kernel it happens to (unused by collect)
  Hint hint = Hint::will_use;        ///< hint steps only

  /// Field-wise equality.
  friend bool operator==(const ProgramStep&, const ProgramStep&) = default;
};

/// The program of one training iteration: its objects, its kernels and the
/// steps that create, hint, use and retire them, with the queries a planner
/// needs (see the file comment for the numbering).
class Program {
 public:
  Program() = default;  ///< The empty program: no objects, kernels or steps.
  /// Checks that the parts form a program: every index in range, each object
  /// created at most once (and never if persistent) and retired at most once,
  /// nothing used before its creation or after its retirement, each kernel
  /// once in order 0, 1, .... Throws invalid_argument naming what is wrong.
  Program(std::vector<ProgramObject> objects, std::vector<ProgramKernel> kernels, std::vector<ProgramStep> steps);

  /// The iteration `iteration` (its number as Runtime::begin_iteration gave
  /// it: 1 for the first) of a recorded trace: from its iteration event to
  /// the next one or the end. Without a number, the last iteration the trace
  /// holds (a dry run of two iterations gives the steady state: what the
  /// first one creates for good, such as momentum, is persistent in the
  /// second). Throws invalid_argument when the trace marks no iterations or
  /// not that one, or when it is inconsistent (an object used before it was
  /// created, in the trace's own words).
  [[nodiscard]] static Program from_trace(const Trace& trace, std::optional<std::uint64_t> iteration = std::nullopt);
  /// The inverse: a trace the replay simulator (sim/replay.hpp) runs — the
  /// persistent objects created, then iteration 1 (its steps as trace
  /// events; object k is trace object k + 1, every argument on device 0),
  /// then as many more as `iterations` asks, each the same steps on its own
  /// trace ids for the objects it creates (what the replay's steady state
  /// needs: sim/replay.hpp steady_window).
  /// from_trace(p.to_trace()) == p. Repeating needs a closed iteration: one
  /// that retires every object it creates and no persistent one, as a
  /// training step does; otherwise invalid_argument says which object (see
  /// unrepeatable()). `iterations` 0 is an invalid_argument too.
  [[nodiscard]] Trace to_trace(std::uint32_t iterations = 1) const;
  /// Empty when the iteration can repeat (to_trace with several), else why
  /// not: "object 7 is created and not retired" or "persistent object 3 is
  /// retired" (the next iteration would use it).
  [[nodiscard]] std::optional<std::string> unrepeatable() const;

  /// The objects, by number.
  [[nodiscard]] const std::vector<ProgramObject>& objects() const noexcept { return objects_; }
  /// The kernels, by number (Runtime::kernels_in_iteration's numbering).
  [[nodiscard]] const std::vector<ProgramKernel>& kernels() const noexcept { return kernels_; }
  /// The steps, in program order.
  [[nodiscard]] const std::vector<ProgramStep>& steps() const noexcept { return steps_; }

  // ---- queries a planner needs -------------------------------------------
  // Those taking an object throw invalid_argument for one out of range.

  /// The first kernel after kernel `after` that uses `object` (nullopt: none
  /// later in this iteration). Throws invalid_argument for an object out of
  /// range, as first_use, last_use and uses do.
  [[nodiscard]] std::optional<std::uint32_t> next_use(std::uint32_t object, std::uint32_t after) const;
  /// The first kernel that uses `object` (nullopt: none does).
  [[nodiscard]] std::optional<std::uint32_t> first_use(std::uint32_t object) const;
  /// The last kernel that uses `object` (nullopt: none does).
  [[nodiscard]] std::optional<std::uint32_t> last_use(std::uint32_t object) const;
  /// The kernels that use `object`, in order.
  [[nodiscard]] const std::vector<std::uint32_t>& uses(std::uint32_t object) const;
  /// Bytes of the objects alive while each kernel runs (created before it,
  /// not yet retired): one entry per kernel.
  [[nodiscard]] const std::vector<std::uint64_t>& live_bytes() const noexcept { return live_bytes_; }
  /// The peak of live_bytes: a lower bound on the memory the iteration
  /// needs, whatever the placement (a heap also holds the holes).
  [[nodiscard]] std::uint64_t max_live() const noexcept;
  /// Bytes of all the objects the iteration touches or holds.
  [[nodiscard]] std::uint64_t total_bytes() const noexcept;

  // ---- online profiles ----------------------------------------------------

  /// The kernels' profiles measured while the program ran
  /// (Runtime::set_profile_iterations), keyed by profile_key
  /// (plan/program/online_profile.hpp); null when it has none. They travel
  /// with the program (to_json, save) so a planner elsewhere
  /// (cachedarrays-plan --program) prices the kernels as they ran.
  [[nodiscard]] const KernelProfiles* profiles() const noexcept { return profiles_ ? &*profiles_ : nullptr; }
  /// Gives the program `profiles` (replacing any it had). Kernels without a
  /// profile in them are priced by a planner's fallback model.
  void set_profiles(KernelProfiles profiles) { profiles_ = std::move(profiles); }

  // ---- the tiers it ran on -------------------------------------------------

  /// The memory tiers of the runtime that recorded the program, fastest
  /// first (Runtime::record_program fills them); empty for a program of a
  /// dry run, of a trace, or saved before programs carried them. Like the
  /// profiles, they travel with the program and are not part of it.
  [[nodiscard]] const std::vector<ProgramTier>& tiers() const noexcept { return tiers_; }
  /// Gives the program `tiers` (replacing any it had). Throws
  /// invalid_argument for a tier with a negative or non-finite figure.
  void set_tiers(std::vector<ProgramTier> tiers);

  // ---- JSON ---------------------------------------------------------------

  /// The program as JSON:
  ///
  ///     {"format": "cachedarrays-program", "version": 1, "objects": [{"bytes",
  ///     "persistent"}...], "kernels": [{"name", "args": [[object, bytes, "r"|
  ///     "w"]...]}...], "steps": [["create", 3], ["hint", 3, "will_read"],
  ///     ["kernel", 0], ["retire", 3], ["collect"]...]}
  ///
  /// and, when it has profiles, "profiles": the KernelProfiles JSON of
  /// profiles(); when it has tiers, "tiers": [{"name", "device", "read_gbps",
  /// "write_gbps", "latency_ns", "emulated"}...].
  [[nodiscard]] std::string to_json() const;
  /// Reads what to_json writes (JSON without "profiles" or "tiers" gives a
  /// program without them). Throws invalid_argument naming the field
  /// that is missing or wrong ("program JSON: steps[12][1]: ..."), and for
  /// objects not numbered as a program numbers them (naming_problem): a plan
  /// is matched to a run's objects by that numbering.
  [[nodiscard]] static Program from_json(const std::string& text);
  /// Why the objects are not numbered as from_trace numbers them (header
  /// comment), or nullopt when they are.
  [[nodiscard]] std::optional<std::string> naming_problem() const;
  /// Writes to_json() to `path`. Throws heap_error when the file cannot be
  /// written.
  void save(const std::string& path) const;
  /// Reads a file save() wrote. Throws heap_error when the file cannot be
  /// read, and invalid_argument (as from_json) for a malformed one.
  [[nodiscard]] static Program load(const std::string& path);

  /// Equal objects, kernels and steps: the profiles and the tiers are
  /// measurements of a run of the program, not part of it, and are not
  /// compared.
  friend bool operator==(const Program& a, const Program& b) {
    return a.objects_ == b.objects_ && a.kernels_ == b.kernels_ && a.steps_ == b.steps_;
  }

 private:
  void validate_and_index();

  std::vector<ProgramObject> objects_;
  std::vector<ProgramKernel> kernels_;
  std::vector<ProgramStep> steps_;
  std::vector<std::vector<std::uint32_t>> uses_;  // by object
  std::vector<std::uint64_t> live_bytes_;         // by kernel
  std::optional<KernelProfiles> profiles_;
  std::vector<ProgramTier> tiers_;
};

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/program-inl.hpp"
#include "cachedarrays/plan/program/program_from_trace-inl.hpp"
#endif
