// The online profiles of a program's kernels (docs/design.md "What is known
// ahead"): after a program is installed (Runtime::set_program, or a
// record_program that finished), the runtime times every Runtime::kernel of
// the next iterations — with its arguments in whatever tiers they are — and
// gives each run here as two times: the kernel's own (its arguments all in
// the fast tier) and the same with all of them in the slow tier. The slow
// tier's share is known rather than measured: an emulated tier charges each
// argument in it a computed wait (emulation::kernel_extra_ns), which is
// taken out of the measured time and added for every argument; a real slow
// tier's cost is inside the measured time and is read off the tiers'
// bandwidths as the roofline does. profiles() then keys each kernel as
// plan::profile_key does, with the median of its runs.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/program.hpp"

namespace cachedarrays {

/// Collects the runs of a program's kernels and makes their profiles (see
/// the file comment). Not synchronised: the runtime calls it under its lock.
class OnlineProfiler {
 public:
  /// Forgets every run and collects for `program` (null: none; add then
  /// ignores everything).
  void start(std::shared_ptr<const plan::Program> program);
  /// One run of the program's kernel `index`, recorded under `name` with
  /// `args` arguments of `bytes` bytes in all: `fast_seconds` with its
  /// arguments in the fast tier, `slow_seconds` in the slow one. A run that
  /// is not the program's kernel `index` (another name, number of
  /// arguments or bytes: an iteration that departs from the program) is
  /// left out.
  void add(std::uint64_t index, std::string_view name, std::size_t args, std::uint64_t bytes, double fast_seconds,
           double slow_seconds);
  /// Whether any run was added since start.
  [[nodiscard]] bool empty() const noexcept { return runs_ == 0; }
  /// The profile of every kernel with a run, keyed by plan::profile_key: the
  /// medians of its runs' two times (a named kernel pools the runs of all
  /// its places in the program), its arguments' bytes read and written, no
  /// FLOPs; measured on `machine`.
  [[nodiscard]] plan::KernelProfiles profiles(plan::MachineKey machine) const;

 private:
  struct Runs {
    std::vector<double> fast;
    std::vector<double> slow;
  };
  std::shared_ptr<const plan::Program> program_;
  std::vector<Runs> by_kernel_;  // by program kernel
  std::uint64_t runs_ = 0;
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/online_profiler-inl.hpp"
#endif
