// AutoSwap's swap planner (SmartPool/AutoSwap, Zhang et al., "Efficient Memory
// Management for GPU-based Deep Learning Systems", §IV; the load and time
// model of §II and §V): which objects leave the fast tier between two uses,
// and when their copies out and back in start, so that the memory load of
// one iteration stays under a limit. A pure algorithm over a program: the
// executor is a policy.
//
// The model (§II, Definitions 2, 4 and 5): the memory load at a kernel is
// the bytes of the objects alive while it runs (Program::live_bytes), the
// peak load its maximum over the iteration, the memory load limit the peak
// the user allows. Kernel k runs for costs.fast_seconds[k] (every object is
// in the fast tier when a kernel uses it), one after the other: the kernel
// timeline. A swap of an object of S bytes over the gap between its uses at
// kernels a and b takes dt_out = S / to_slow_gbps (GB/s) to copy out,
// starting when a ends, and dt_in = S / to_fast_gbps to copy back, ending
// when b starts (§IV-E: out right after the access, in "in advance" of the
// next one).
//
//   - Candidates (§IV-A): each gap between two consecutive uses of an object
//     of at least `min_bytes` (the paper's "e.g. 1 MB") whose lifetime
//     crosses the peak time; the last gap of a persistent object wraps
//     around to its first use in the next iteration (§VI-B.3: such objects
//     "can be swapped out at one iteration ... and swapped back at the
//     next"). The paper has no other filter: a gap too short for its copies
//     stays a candidate, with a negative DOA (§IV-B.ii).
//   - Priority scores (§IV-B), with t_i, t_{i+1} the end of use a and the
//     start of use b:
//       DOA   = (t_{i+1} - t_i) - (dt_out + dt_in)           seconds
//       AOA   = DOA * S          when DOA >= 0                byte-seconds
//             = DOA / S          when DOA < 0 ("the product of the inverse
//                                of variable size and DOA")
//       WDOA  = the area under the original load curve between the two
//               uses: sum over the kernels of the gap of load * seconds
//       SWDOA = WDOA under the load curve updated by the swaps picked so
//               far, scored again after each pick (§IV-B.iv, Fig. 6).
//       BO    = a*AOA + b*DOA + c*WDOA + d*SWDOA (§IV-C, equation (3)), the
//               four standardised, a..d in [-1, 1] (AutoswapOptions::
//               bo_weights; autoswap_bo.hpp chooses them by Bayesian
//               optimisation). Its reading: autoswap_bo_scores below.
//   - Selection (§IV-D): candidates in descending score, each lowering the
//     load curve, until the peak is at most the limit.
//   - Schedule (§IV-E): swap-outs in the order of their accesses, right
//     after them; each swap-in starts "in advance to make sure its second
//     access is not delayed"; a copy starts only after the previous one ends.
//
// Where the paper leaves a choice open, this file's reading:
//   - The load is counted per kernel (the paper counts per malloc / free /
//     read / write). A swapped object frees its bytes at a kernel only if
//     it is out for the whole kernel: the kernel starts once the copy out
//     has ended (never the kernel right after the use, which the copy out
//     runs beside) and before the copy in is issued (its destination is
//     allocated then). A copy in is issued when a kernel of the gap starts.
//   - The selection judges each candidate alone: its copy in issued as late
//     as lets it end by t_{i+1} (the last kernel of the gap that starts by
//     t_{i+1} - dt_in), so it is out for the kernels wholly inside
//     [t_i + dt_out, t_{i+1} - dt_in], the absence of DOA. A candidate
//     that frees no kernel (its copies fill its gap) is passed over: taking
//     it would add copies and remove no load. The load the selection brings
//     under the limit is the paper's LOAD' (Fig. 7).
//   - The schedule then puts the copies on the executor's copy channels
//     (copy_channels.hpp: the mover's threads as lanes, TierCosts::
//     copy_lanes; the paper's GPU has a stream each way:
//     AutoswapOptions::duplex gives each direction an engine, and the copies
//     in then ignore the copies out below). Each copy in issued at
//     its own latest kernel would queue behind the others whose next uses
//     come close (the updates that end an iteration) and make them wait,
//     while the engine sat idle before. So, "in advance" (§IV-E), the copies
//     in are placed backwards from their next uses, the latest use first:
//     each must end by its use's start and before the copy in after it on
//     the engine starts, without running into a copy out (those keep their
//     times, right after their accesses); it is issued at the last kernel
//     of the gap that starts early enough (if none clears the copies out,
//     the last that still ends it in time). An earlier issue brings the
//     object back for more kernels, so it moves earlier only while LOAD'
//     stays within the limit at each kernel it newly covers, and never so
//     far that the swap frees no kernel; where the load forbids it, the
//     later issue stays and its wait is reported. The copies in that end an
//     iteration give way to the next iteration's first ones (the placement
//     repeats until no issue moves). That schedule is kept only if it waits
//     no longer than each copy in at its latest and passes the limit by no
//     more (else the latest issues are kept); then, round by round, an
//     issue moves one kernel earlier (the same load rule) whenever that
//     lowers the waits without passing the limit by more, until no single
//     move does, so no one copy in issued a kernel earlier would wait less
//     — or until 16 rounds have passed: on an engine busy for most of the
//     iteration each round gains only a sliver of the waits, over very many
//     rounds, and such a plan waits far past any overhead a limit is chosen
//     for.
//   - An executor issues each copy in at AutoswapSwap::in_kernel, the
//     schedule's, not at its candidate's latest.
//   - The modeled engine runs the copies in their issue order: a queued
//     copy out frees later, a queued copy in may end after its next use
//     starts, which then waits. The modeled overhead is the sum of those
//     waits (the paper also delays a kernel whose allocation would pass the
//     limit, LOAD''; this model does not: scheduled_peak reports what the
//     serialized copies give).
//   - Ties between scores go to the candidate found first (by object, then
//     gap); "the peak time" is any kernel where the original load peaks.
#pragma once

#include "cachedarrays/config.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"

namespace cachedarrays::plan {

/// AutoSwap's priority scores (§IV-B, see above).
enum class AutoswapScore : std::uint8_t {
  doa,    ///< the gap's idle time less its copies', seconds
  aoa,    ///< DOA weighted by the object's size (divided by it when DOA < 0)
  wdoa,   ///< the area under the original load curve over the gap
  swdoa,  ///< WDOA under the load curve updated by the swaps picked so far
  bo      ///< the combination of the other four by equation (3) (§IV-C)
};
/// The score's name: "doa", "aoa", "wdoa", "swdoa" or "bo".
[[nodiscard]] const char* to_string(AutoswapScore score) noexcept;
/// The score of a name: "doa", "aoa", "wdoa", "swdoa", "bo"; throws
/// invalid_argument naming the valid names.
[[nodiscard]] AutoswapScore parse_autoswap_score(std::string_view name);

/// The weights of equation (3) in its order: a (AOA), b (DOA), c (WDOA), d
/// (SWDOA); autoswap_bo_terms[i] is the score weights[i] weighs.
using AutoswapBoWeights = std::array<double, 4>;
/// The score each of AutoswapBoWeights' entries weighs, in equation (3)'s order.
inline constexpr std::array<AutoswapScore, 4> autoswap_bo_terms{AutoswapScore::aoa, AutoswapScore::doa,
                                                                AutoswapScore::wdoa, AutoswapScore::swdoa};

/// What autoswap_plan plans for: the limit, the score, the candidate filters
/// and the copy engines.
struct AutoswapOptions {
  std::uint64_t limit = 0;                     ///< the memory load limit (Definition 5), bytes; > 0
  AutoswapScore score = AutoswapScore::swdoa;  ///< the priority score the selection ranks by
  std::uint64_t min_bytes = 1 << 20;           ///< §IV-A's first filter: "smaller than a threshold, e.g., 1 MB"
  bool across_peak_only = true;                ///< §IV-A's second filter: gaps across the peak time only
  /// a, b, c, d of equation (3), each in [-1, 1] (§IV-C); read only when
  /// score is bo. The default ranks as SWDOA alone.
  AutoswapBoWeights bo_weights{0, 0, 0, 1};
  /// The copy engines of the schedule (§IV-E). false: the executor's mover,
  /// TierCosts::copy_lanes threads taking copies in the order issued.
  /// true: the copies out and the copies in each on an engine of their own,
  /// as the paper's GPU runs them (a CUDA stream each way over full-duplex
  /// PCIe); the copies in then need not avoid the copies out.
  bool duplex = false;
};

/// The iteration without swaps. Times in seconds from its start.
struct AutoswapTimeline {
  std::vector<double> start,        ///< by kernel: when it starts
      end;                          ///< by kernel: when it ends
  double seconds = 0;               ///< the iteration: the last kernel's end
  std::vector<std::uint64_t> load;  ///< by kernel: Program::live_bytes
  std::uint64_t peak = 0;           ///< the largest load: the peak load
};

/// The kernel timeline of `program`. From `costs` only fast_seconds (each
/// kernel with every argument in the fast tier) and the copy bandwidths
/// (to_slow_gbps out, to_fast_gbps in) are read; TierCosts::from_model
/// makes them from a KernelTimeModel and the tiers' bandwidths. Throws
/// invalid_argument for a count of kernel times other than the program's
/// kernels or a time that is negative or not finite.
[[nodiscard]] AutoswapTimeline autoswap_timeline(const Program& program, const TierCosts& costs);

/// One gap between two consecutive uses of an object (§IV-A).
struct AutoswapCandidate {
  std::uint32_t object = 0;  ///< the program's object number
  std::uint32_t gap = 0;     ///< i: between program.uses(object)[i] and the next use
  std::uint32_t after = 0;   ///< the use that opens the gap (uses[i])
  std::uint32_t before = 0;  ///< the next use (uses[i + 1], or uses[0] of the next iteration)
  bool wraps = false;        ///< the next use is in the next iteration (a persistent object's last gap)
  std::uint64_t bytes = 0;   ///< S: the object's size
  double idle_seconds = 0;   ///< t_{i+1} - t_i: from the end of `after` to the start of `before`
  double out_seconds = 0;    ///< dt_out: the copy out's time
  double in_seconds = 0;     ///< dt_in: the copy in's time
  /// @name Issue kernels
  /// The copy out is issued when kernel out_kernel (after + 1, 0 past the
  /// iteration's end) starts, the copy in, at its latest, when in_kernel
  /// starts (the selection's reading; the schedule may issue it earlier:
  /// AutoswapSwap::in_kernel).
  ///@{
  std::uint32_t out_kernel = 0;  ///< the kernel whose start issues the copy out
  std::uint32_t in_kernel = 0;   ///< the kernel whose start issues the copy in, at its latest
  ///@}
  /// The kernels at which the object is out of the fast tier with the copy
  /// in at its latest (what the selection counts in LOAD'), in time order (a
  /// wrapping gap's continue at kernel 0): the kernels of the gap that start
  /// at or after t_i + dt_out and come before in_kernel.
  std::vector<std::uint32_t> absent;
};

/// The candidates in order of object, then gap (the limit is not read).
/// Throws invalid_argument as autoswap_plan does for costs.
[[nodiscard]] std::vector<AutoswapCandidate> autoswap_candidates(const Program& program, const TierCosts& costs,
                                                                 const AutoswapOptions& options);

/// The four scores of one candidate (§IV-B).
struct AutoswapScores {
  double doa = 0,  ///< the gap's idle time less its copies' times, seconds
      aoa = 0,     ///< DOA * S when DOA >= 0, DOA / S when DOA < 0
      wdoa = 0,    ///< the area under the original load curve over the gap, byte-seconds
      swdoa = 0;   ///< the area under the load curve updated by the swaps picked so far
  /// The score named; NaN for bo, which is no candidate's own: it
  /// standardises over all candidates (autoswap_bo_scores).
  [[nodiscard]] double of(AutoswapScore score) const noexcept;
};

/// The four scores of each candidate (§IV-B): WDOA over the timeline's load,
/// SWDOA over `load` (the load curve after the swaps picked so far: the
/// timeline's load before the first pick). Throws invalid_argument when
/// `load` has not one entry per kernel or a candidate is not of this
/// timeline.
[[nodiscard]] std::vector<AutoswapScores> autoswap_scores(const AutoswapTimeline& timeline,
                                                          std::span<const AutoswapCandidate> candidates,
                                                          std::span<const std::uint64_t> load);

/// Equation (3) for each of `scores` (§IV-C): a*z(AOA) + b*z(DOA) +
/// c*z(WDOA) + d*z(SWDOA), where z standardises a score over `scores`
/// ("the 4 priority scores are standardized before feeding into the
/// formula"): z(x) = (x - mean) / std, the population's mean and standard
/// deviation, 0 for every candidate when a score is the same for all. So
/// no score's unit (seconds, byte-seconds) or scale weighs in the sum, only
/// where a candidate stands among the others: multiplying every time by
/// 1000 leaves BO as it was. autoswap_plan gives it the candidates it may
/// pick (those that free a kernel), and, SWDOA being scored again after
/// each pick, calls it again with SWDOA's current values: their own mean
/// and deviation, not the first pick's (why: autoswap_plan). Throws
/// invalid_argument for a weight outside [-1, 1] or not finite.
[[nodiscard]] std::vector<double> autoswap_bo_scores(std::span<const AutoswapScores> scores,
                                                     const AutoswapBoWeights& weights);

/// A picked candidate and where its copies fall on the modeled copy engine,
/// in the steady state (the second of two modeled iterations), in seconds
/// from that iteration's start: a wrapping gap's copy out began in the
/// iteration before (negative times).
struct AutoswapSwap {
  AutoswapCandidate candidate;  ///< as the selection took it: its copy in at its latest
  /// @name The schedule's copy in
  /// The schedule's copy in (autoswap.hpp, "in advance"): issued when
  /// in_kernel starts, candidate.in_kernel or a kernel of the gap before it;
  /// the object is out of the fast tier at `absent`, candidate.absent less
  /// the kernels from in_kernel on (never empty). The plan's LOAD' counts these.
  ///@{
  std::uint32_t in_kernel = 0;        ///< the kernel whose start issues the copy in
  std::vector<std::uint32_t> absent;  ///< the kernels at which the object is out of the fast tier
  ///@}
  double out_start = 0,  ///< when the copy out starts on the engine
      out_end = 0;       ///< when the copy out ends
  double in_issue = 0;   ///< when in_kernel starts: the copy in is queued
  double in_start = 0,   ///< when the copy in starts on the engine
      in_end = 0;        ///< when the copy in ends
  double use_start = 0;  ///< when `before` starts, after any wait; in_end <= use_start
};

/// AutoSwap's plan: the swaps picked and scheduled, the load they leave, and
/// what the modeled copy engine makes the kernels wait.
struct AutoswapPlan {
  std::vector<AutoswapSwap> swaps;  ///< in the order the selection picked them
  std::size_t candidates = 0;       ///< how many candidates there were
  /// @name Load
  /// The load curve after the swaps as scheduled (LOAD': each swap's
  /// `absent`), by kernel, and its peak; the peak of the iteration without
  /// swaps.
  ///@{
  std::vector<std::uint64_t> load;  ///< by kernel: LOAD' after the swaps as scheduled
  std::uint64_t peak = 0;           ///< the largest entry of load
  std::uint64_t original_peak = 0;  ///< the peak load of the iteration without swaps
  ///@}
  bool fits = false;         ///< peak <= limit
  std::uint64_t excess = 0;  ///< peak - limit when it does not fit: no candidate is left to take
  /// @name Modeled copy engine
  /// The modeled copy engine (§IV-E), steady state: what each kernel waits
  /// for its copies in, their sum (the overhead over the iteration without
  /// swaps, iteration_seconds), and the load curve the serialized copies
  /// give (a kernel counts an object absent when its copy out ended before
  /// the kernel started and its copy in was not issued yet).
  ///@{
  std::vector<double> waits;                  ///< by kernel: seconds it waits for its copies in
  double overhead_seconds = 0;                ///< the sum of waits: the modeled overhead
  double iteration_seconds = 0;               ///< the iteration without swaps, the overhead's base
  std::vector<std::uint64_t> scheduled_load;  ///< by kernel: the load the serialized copies give
  std::uint64_t scheduled_peak = 0;           ///< the peak of scheduled_load (the paper's LOAD'')
  ///@}
};

/// AutoSwap's plan for `program` under options.limit: candidates, scores,
/// selection and schedule as the file comment describes. Throws
/// invalid_argument for a limit of 0, costs that do not match the
/// program (one kernel time per kernel, each >= 0 and finite), copy
/// bandwidths not > 0, or (score bo) a weight outside [-1, 1].
[[nodiscard]] AutoswapPlan autoswap_plan(const Program& program, const TierCosts& costs,
                                         const AutoswapOptions& options);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/schedule/autoswap-inl.hpp"
#endif
