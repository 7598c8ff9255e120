// The capacity planner ("how much DRAM do I need?"): one
// iteration of a program replayed (sim/replay.hpp) under every policy asked
// for, at every fast-tier size asked for, on a machine described by its
// tiers' bandwidths and a kernel time model, and through the 2LM model
// (sim/simulate_2lm.hpp) for the hardware's memory mode. Each point says
// the modeled iteration time, its ratio to all-fast, the traffic on each
// tier and the slow tier the policy needed; priced (sim/memory_prices.hpp),
// the points answer the question: the smallest fast tier at which the best
// policy is within a given slowdown of all-fast, and what that machine's
// memory costs against all-DRAM. AutoTM's price/performance analysis
// (AutoTM §6.4, Table 2 and Fig. 9) asks the same of its ILP.
//
// Modeled figures are a model, not a measurement: label them as such.
// cachedarrays-plan is the command line; bench/paper_reproduction's modeled
// rows come from here too, so both print the same numbers for the same
// configuration.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/manager/mover.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/manager/two_level_memory.hpp"
#include "cachedarrays/plan/program/fast_tier_bound.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "cachedarrays/policy/policy.hpp"
#include "cachedarrays/sim/memory_prices.hpp"
#include "cachedarrays/sim/replay.hpp"

namespace cachedarrays {

/// The fast tier for a budget of `fraction` of the footprint: whole pages,
/// at least one, exactly the footprint at 100% (all-fast fits in exactly
/// that much; a page less would not hold it), and above 100% that share of
/// it rounded up to whole pages (room beyond the footprint, for the
/// fragmentation and the planners' expansion a tier of exactly the
/// footprint leaves no room for).
[[nodiscard]] std::uint64_t fast_tier_bytes(double fraction, std::uint64_t footprint) noexcept;

/// Both tiers' peak use over the footprint, less one: what AutoTM calls the
/// footprint expansion (AutoTM §5.3).
[[nodiscard]] double footprint_expansion(const Stats& stats, std::uint64_t footprint);

/// The memory one iteration of `trace` needs with everything in the fast
/// tier: the fast heap's peak extent (holes included) when the trace is
/// replayed under all-fast on a heap too large to fill.
[[nodiscard]] std::uint64_t replayed_footprint(const Trace& trace);

/// The policies a capacity plan compares by default: every built-in
/// descriptor (policy::Registry::builtin().descriptors(), in its order) but
/// those that plan ahead — so every policy whose run is a replay of seconds,
/// and the 2LM memory modes, "2lm" (retired tensors freed at the next
/// collect) and "2lm:m" (freed at once), modeled by simulate_2lm. The
/// policies that plan ahead (AutoTM's ILP, AutoSwap, ReDL) plan for minutes
/// on paper-sized programs and are compared when named.
[[nodiscard]] std::vector<std::string> quick_policies();
/// Every built-in descriptor, in the registry's order: everything that can
/// be compared.
[[nodiscard]] std::vector<std::string> all_policies();

/// What plan_capacity() models: the fast-tier sizes, the policies, and the
/// machine (tiers' bandwidths and kernel time model).
struct CapacityPlanOptions {
  /// Fast-tier sizes as fractions of the footprint, each >= 0 (fast_tier_bytes
  /// turns them into bytes: 0 is one page, 1 is all of it, above 1 more).
  std::vector<double> fractions;
  /// Names registered in policy::Registry::builtin(), the memory modes "2lm"
  /// and "2lm:m" included (an unknown name is an invalid_argument listing the
  /// valid ones). all-fast is always run: it is the baseline.
  std::vector<std::string> policies = quick_policies();
  DeviceModel fast{"dram", 0, 0};    ///< the fast tier's name and bandwidths (each > 0)
  DeviceModel slow{"optane", 0, 0};  ///< the slow tier's name and bandwidths (each > 0)
  /// The slow tier's capacity: 0 takes four times the footprint (room for a
  /// policy that keeps copies on both tiers).
  std::uint64_t slow_bytes = 0;
  /// The kernels' time (null: plan::MemoryBound). Kept for the call, shared by
  /// the replays and the AutoTM plans, which plan with the replay's own model.
  const plan::KernelTimeModel* kernel_time = nullptr;
  /// The planned policies' solve time limit in seconds (0: their default).
  double plan_seconds = 0;
  /// Replays run side by side on this many threads (0: every core).
  unsigned threads = 0;
  /// The modeled runtime's mover threads (MoverOptions::threads; >= 1):
  /// how many asynchronous copies each replay runs side by side.
  unsigned mover_threads = MoverOptions{}.threads;
};

/// Bytes read and written on each tier of two, by kernels and copies.
struct TierTraffic {
  /// @var fast_read
  /// Bytes read from the fast tier.
  /// @var fast_written
  /// Bytes written to the fast tier.
  /// @var slow_read
  /// Bytes read from the slow tier.
  /// @var slow_written
  /// Bytes written to the slow tier.
  std::uint64_t fast_read = 0, fast_written = 0, slow_read = 0, slow_written = 0;
};
/// Each count divided by `iterations` (> 0), rounded down: one iteration's of
/// several.
[[nodiscard]] TierTraffic per_iteration(TierTraffic traffic, std::uint64_t iterations) noexcept;
/// Of a two-tier runtime's counters (device 0 fast, 1 slow).
[[nodiscard]] TierTraffic tier_traffic(const Stats& stats);
/// Of the 2LM cache model: DRAM is the fast tier, NVRAM the slow one.
[[nodiscard]] TierTraffic tier_traffic(const TwoLmCounters& counters);
/// The 2LM cache's rates, in percent of all line accesses, one decimal:
/// "hit H% clean-miss C% dirty-miss D%".
[[nodiscard]] std::string hit_rates(const TwoLmCounters& counters);

/// One policy at one fast-tier size, modeled.
struct CapacityPoint {
  std::string policy;               ///< the policy's name, as in CapacityPlanOptions::policies
  double fraction = 0;              ///< the fast tier as a fraction of the footprint, as asked
  std::uint64_t fast_bytes = 0;     ///< the fast tier in bytes (fast_tier_bytes of the fraction)
  std::optional<double> seconds;    ///< modeled iteration; empty: the run did not fit (note says why)
  double slowdown = 0;              ///< seconds over all-fast's
  double exposed_copy_seconds = 0;  ///< copy time the kernels waited for
  double copy_seconds = 0;          ///< all copy time, hidden or not
  TierTraffic traffic;              ///< per iteration; 2LM: the cache model's DRAM and NVRAM traffic
  /// The slow tier the run needed: the slow heap's peak extent (2LM: the
  /// NVRAM address space's peak).
  std::uint64_t slow_peak = 0;
  double expansion = 0;  ///< footprint_expansion (0 for 2LM)
  std::string note;      ///< "out of memory", an AutoTM plan's summary, 2LM's hit rates
};

/// The result of plan_capacity(): every point, and the bounds to compare
/// them with.
struct CapacityPlan {
  std::uint64_t footprint = 0;  ///< the footprint the fractions are of, in bytes
  double all_fast_seconds = 0;  ///< the all-fast baseline's modeled iteration, in seconds
  /// For each fraction in the order given, one point per policy in the order
  /// given.
  std::vector<CapacityPoint> points;
  /// For each fraction in the order given: how fast any placement can be on
  /// that fast tier (plan/program/fast_tier_bound.hpp), on the same kernel model;
  /// a policy's slowdown over the bound's is what scheduling may still win.
  std::vector<plan::FastTierBound> bounds;
};

/// Called as each point is done (from the thread that ran it, one call at a
/// time): the point, how many are done, of how many.
using CapacityProgress = std::function<void(const CapacityPoint&, std::size_t done, std::size_t total)>;

/// Replays `trace` (one iteration of `program`; the planned policies and the
/// lookahead modes are given `program`) under each policy at each fraction of
/// `footprint`. Throws invalid_argument naming the option that is wrong (no
/// fraction, a fraction < 0, an unknown policy, a bandwidth <= 0).
[[nodiscard]] CapacityPlan plan_capacity(const Trace& trace, const plan::Program& program, std::uint64_t footprint,
                                         const CapacityPlanOptions& options, const CapacityProgress& progress = {});

/// One point: `policy` replayed with a fast tier of `fraction` of `footprint`
/// (fast_tier_bytes), the rest as plan_capacity() does.
[[nodiscard]] CapacityPoint model_point(const Trace& trace, const plan::Program& program, std::uint64_t footprint,
                                        const std::string& policy, double fraction, const CapacityPlanOptions& options);

/// What the plan answers: the smallest fast tier among those tried at which
/// the fastest policy there is within `within` of all-fast.
struct CapacityAnswer {
  bool found = false;                ///< whether any point is within the bound; else see `reason`
  std::string reason;                ///< why nothing was found (empty when found)
  std::string policy;                ///< the fastest policy at the answer's size
  double fraction = 0;               ///< the answer's fast tier as a fraction of the footprint
  std::uint64_t fast_bytes = 0;      ///< the answer's fast tier in bytes
  std::uint64_t slow_bytes = 0;      ///< the policy's slow-tier peak
  double slowdown = 0;               ///< the point's seconds over all-fast's
  double cost_dollars = 0;           ///< memory_cost of the point
  double all_fast_cost_dollars = 0;  ///< the footprint in the fast tier
};

/// Dollars of the memory a point uses (AutoTM Fig. 9's count): its fast tier
/// as configured at the `fast_tier` price, its slow-tier peak at `slow_tier`'s.
[[nodiscard]] double memory_cost(const CapacityPoint& point, const MemoryPrices& prices, std::string_view fast_tier,
                                 std::string_view slow_tier);

/// The answer for `plan` (ties at a size go to the cheaper point). Throws
/// invalid_argument when `within` < 1 or a tier has no price.
[[nodiscard]] CapacityAnswer answer_capacity(const CapacityPlan& plan, double within, const MemoryPrices& prices,
                                             std::string_view fast_tier, std::string_view slow_tier);

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/capacity_plan-inl.hpp"
#endif
