// Implementation of autoswap.hpp (header-only mode includes it from there; the
// compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/schedule/copy_timeline.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE const char* to_string(AutoswapScore score) noexcept {
  switch (score) {
    case AutoswapScore::doa: return "doa";
    case AutoswapScore::aoa: return "aoa";
    case AutoswapScore::wdoa: return "wdoa";
    case AutoswapScore::swdoa: return "swdoa";
    case AutoswapScore::bo: return "bo";
  }
  return "?";
}

CACHEDARRAYS_INLINE AutoswapScore parse_autoswap_score(std::string_view name) {
  for (AutoswapScore s :
       {AutoswapScore::doa, AutoswapScore::aoa, AutoswapScore::wdoa, AutoswapScore::swdoa, AutoswapScore::bo}) {
    if (name == to_string(s)) return s;
  }
  throw invalid_argument("cachedarrays: unknown AutoSwap priority score '" + std::string(name) +
                         "'; valid scores: doa, aoa, wdoa, swdoa, bo");
}

CACHEDARRAYS_INLINE double AutoswapScores::of(AutoswapScore score) const noexcept {
  switch (score) {
    case AutoswapScore::doa: return doa;
    case AutoswapScore::aoa: return aoa;
    case AutoswapScore::wdoa: return wdoa;
    case AutoswapScore::swdoa: return swdoa;
    case AutoswapScore::bo: return std::numeric_limits<double>::quiet_NaN();
  }
  return 0;
}

namespace detail {

// The kernels [from, to) an object is alive at, and whether it outlives the
// iteration into the next one as the same object (persistent and not
// retired): only then does its last gap wrap around.
struct AutoswapLife {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  bool survives = false;
};

CACHEDARRAYS_INLINE std::vector<AutoswapLife> autoswap_lives(const Program& program) {
  const auto nk = static_cast<std::uint32_t>(program.kernels().size());
  std::vector<AutoswapLife> lives(program.objects().size());
  for (std::size_t o = 0; o < lives.size(); ++o) {
    if (program.objects()[o].persistent) lives[o] = {0, nk, true};
  }
  std::uint32_t seen = 0;
  for (const ProgramStep& step : program.steps()) {
    if (step.kind == StepKind::create) lives[step.index] = {seen, nk, false};
    if (step.kind == StepKind::retire) {
      lives[step.index].to = seen;
      lives[step.index].survives = false;
    }
    if (step.kind == StepKind::kernel) ++seen;
  }
  return lives;
}

CACHEDARRAYS_INLINE void autoswap_check_times(const Program& program, const TierCosts& costs, const char* who) {
  const std::size_t nk = program.kernels().size();
  if (costs.fast_seconds.size() != nk) {
    throw invalid_argument(std::string(who) + ": the costs give " + std::to_string(costs.fast_seconds.size()) +
                           " kernel times (fast_seconds), the program has " + std::to_string(nk) +
                           " kernels; give one per kernel (TierCosts::from_model)");
  }
  for (std::size_t k = 0; k < nk; ++k) {
    const double s = costs.fast_seconds[k];
    if (!(s >= 0 && std::isfinite(s))) {
      throw invalid_argument(std::string(who) + ": kernel " + std::to_string(k) + " takes " + std::to_string(s) +
                             " s (fast_seconds[" + std::to_string(k) + "]); a kernel time is finite and >= 0 s");
    }
  }
}

CACHEDARRAYS_INLINE void autoswap_check_bandwidths(const TierCosts& costs, const char* who) {
  const auto ok = [](double gbps) { return gbps > 0 && std::isfinite(gbps); };
  if (!ok(costs.to_slow_gbps) || !ok(costs.to_fast_gbps)) {
    throw invalid_argument(std::string(who) +
                           ": swap-outs copy at to_slow_gbps = " + std::to_string(costs.to_slow_gbps) +
                           " GB/s and swap-ins at to_fast_gbps = " + std::to_string(costs.to_fast_gbps) +
                           " GB/s; both must be finite and > 0");
  }
}

CACHEDARRAYS_INLINE void autoswap_check_weights(const AutoswapBoWeights& weights, const char* who) {
  static constexpr const char* names[] = {"a", "b", "c", "d"};
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double w = weights[i];
    if (!(w >= -1 && w <= 1)) {
      throw invalid_argument(std::string(who) + ": bo_weights[" + std::to_string(i) + "] (" + names[i] +
                             ", the weight of " + to_string(autoswap_bo_terms[i]) + " in equation (3)) is " +
                             std::to_string(w) + "; each weight is in [-1, 1] (§IV-C)");
    }
  }
}

// The score a selection ranks by. Equation (3) with one weight > 0 and the
// others 0 is a positive multiple of one standardised score, which ranks
// exactly as the score itself: that score is ranked by directly, because
// standardising can round distinct values to one. AOA's negative values
// (DOA / S: seconds over bytes, minute) lie closer to each other, relative
// to the spread of its positive ones (DOA * S: seconds times bytes, large),
// than a double resolves once the mean is subtracted; the tie-break
// (candidate order) would then reorder them. So BO with a unit weight vector plans exactly
// as the single score, which autoswap_optimise_weights relies on.
CACHEDARRAYS_INLINE AutoswapScore autoswap_ranking_score(const AutoswapOptions& options) {
  if (options.score != AutoswapScore::bo) return options.score;
  std::size_t nonzero = 0, at = 0;
  for (std::size_t i = 0; i < options.bo_weights.size(); ++i) {
    if (options.bo_weights[i] != 0) {
      ++nonzero;
      at = i;
    }
  }
  return nonzero == 1 && options.bo_weights[at] > 0 ? autoswap_bo_terms[at] : AutoswapScore::bo;
}

// Positions count kernels after the use that opens a gap: position p is
// kernel (after + p) % nk, position `span` the next use. In [1, nk].
CACHEDARRAYS_INLINE std::uint32_t autoswap_span(std::uint32_t after, std::uint32_t to, std::uint32_t nk) {
  return (to + nk - after - 1) % nk + 1;
}

// A kernel's start, unrolled past the iteration's end into the next one.
CACHEDARRAYS_INLINE double autoswap_unrolled_start(const AutoswapTimeline& t, std::uint32_t after, std::uint32_t p) {
  const auto nk = static_cast<std::uint32_t>(t.start.size());
  const std::uint32_t u = after + p;
  return u < nk ? t.start[u] : t.start[u - nk] + t.seconds;
}

// §IV-A's filters, then one candidate per gap; the absent kernels and the
// copy in's kernel as autoswap.hpp reads §IV-E.
CACHEDARRAYS_INLINE std::vector<AutoswapCandidate> autoswap_candidates_of(const Program& program,
                                                                          const AutoswapTimeline& t,
                                                                          const TierCosts& costs,
                                                                          const AutoswapOptions& options) {
  std::vector<AutoswapCandidate> out;
  const auto nk = static_cast<std::uint32_t>(program.kernels().size());
  if (nk == 0) return out;
  const CopyChannels channels = costs.channels();
  const std::vector<AutoswapLife> lives = autoswap_lives(program);
  for (std::uint32_t o = 0; o < program.objects().size(); ++o) {
    const std::vector<std::uint32_t>& uses = program.uses(o);
    const std::uint64_t bytes = program.objects()[o].bytes;
    if (uses.empty() || bytes < options.min_bytes) continue;
    if (options.across_peak_only) {
      bool across = false;
      for (std::uint32_t k = lives[o].from; k < lives[o].to && !across; ++k) across = t.load[k] == t.peak;
      if (!across) continue;
    }
    const std::size_t gaps = uses.size() - 1 + (lives[o].survives ? 1 : 0);
    for (std::size_t i = 0; i < gaps; ++i) {
      AutoswapCandidate c;
      c.object = o;
      c.gap = static_cast<std::uint32_t>(i);
      c.after = uses[i];
      c.wraps = i + 1 == uses.size();
      c.before = c.wraps ? uses[0] : uses[i + 1];
      c.bytes = bytes;
      const std::uint32_t span = autoswap_span(c.after, c.before, nk);
      const double t_i = t.end[c.after];
      const double t_next = autoswap_unrolled_start(t, c.after, span);
      c.idle_seconds = t_next - t_i;
      c.out_seconds = channels.seconds(CopyChannels::fast, CopyChannels::slow, bytes);
      c.in_seconds = channels.seconds(CopyChannels::slow, CopyChannels::fast, bytes);
      // The copy in is issued as late as lets it end by t_{i+1}: when the
      // last kernel of the gap starting by t_{i+1} - dt_in starts; never
      // before the copy out is issued (position 1).
      const double in_latest = t_next - c.in_seconds;
      std::uint32_t in_pos = 1;
      for (std::uint32_t p = 1; p < span; ++p) {
        if (autoswap_unrolled_start(t, c.after, p) <= in_latest) in_pos = p;
      }
      const double out_done = t_i + c.out_seconds;
      for (std::uint32_t p = 1; p < in_pos; ++p) {
        if (autoswap_unrolled_start(t, c.after, p) >= out_done) c.absent.push_back((c.after + p) % nk);
      }
      c.out_kernel = (c.after + 1) % nk;
      c.in_kernel = (c.after + in_pos) % nk;
      out.push_back(std::move(c));
    }
  }
  return out;
}

// Prefix sums of load * seconds over two iterations, so that the area under
// a load curve over any gap (which may wrap) is one difference.
CACHEDARRAYS_INLINE std::vector<double> autoswap_area_prefix(const AutoswapTimeline& t,
                                                             std::span<const std::uint64_t> load) {
  const std::size_t nk = t.start.size();
  std::vector<double> w(2 * nk + 1, 0.0);
  for (std::size_t j = 0; j < 2 * nk; ++j) {
    const std::size_t k = j % nk;
    w[j + 1] = w[j] + static_cast<double>(load[k]) * (t.end[k] - t.start[k]);
  }
  return w;
}

// The area under a load curve between the two uses of a gap (exclusive).
CACHEDARRAYS_INLINE double autoswap_gap_area(const std::vector<double>& prefix, const AutoswapCandidate& c,
                                             std::uint32_t nk) {
  const std::uint32_t span = autoswap_span(c.after, c.before, nk);
  return prefix[c.after + span] - prefix[c.after + 1];
}

// One swap's copy in, by position after the use that opens its gap
// (autoswap_span): the object is absent at positions [first_absent, issue),
// so it may be issued anywhere in [first_absent + 1, latest] (one kernel
// absent at least: a swap that frees nothing would still cost its copies).
struct AutoswapSlot {
  std::uint32_t after = 0, span = 0;
  std::uint32_t first_absent = 0;  // the first position starting once the copy out has ended (t_i + dt_out)
  std::uint32_t latest = 0;        // the candidate's in_kernel: the latest issue that ends by the next use
  std::uint64_t bytes = 0;
  double in_seconds = 0;
  double deadline = 0;  // when `before` starts, in [0, seconds): the copy in ends by then
  double shift = 0;     // added to a position's unrolled start to bring it to the deadline's frame (0 or -seconds)
};

CACHEDARRAYS_INLINE AutoswapSlot autoswap_slot(const AutoswapTimeline& t, const AutoswapCandidate& c) {
  const auto nk = static_cast<std::uint32_t>(t.start.size());
  AutoswapSlot s;
  s.after = c.after;
  s.span = autoswap_span(c.after, c.before, nk);
  s.latest = autoswap_span(c.after, c.in_kernel, nk);
  s.bytes = c.bytes;
  s.in_seconds = c.in_seconds;
  s.deadline = t.start[c.before];
  s.shift = s.deadline - autoswap_unrolled_start(t, c.after, s.span);
  const double out_done = t.end[c.after] + c.out_seconds;
  s.first_absent = s.latest;
  for (std::uint32_t p = s.latest; p-- > 1;) {
    if (autoswap_unrolled_start(t, c.after, p) >= out_done) s.first_absent = p;
  }
  return s;
}

// Where one swap's copies fell in a run of the engine.
struct AutoswapCopyTimes {
  double out_start = 0, out_end = 0, in_issue = 0, in_start = 0, in_end = 0, use_start = 0;
};

// What the copy engine gives for one choice of issue positions.
struct AutoswapRun {
  std::vector<double> waits;  // by kernel, steady state
  double overhead = 0;
  std::vector<std::uint64_t> scheduled_load;
  std::uint64_t scheduled_peak = 0;
  std::vector<AutoswapCopyTimes> times;  // by swap
  // By swap: whether a copy in of it (in any iteration of the run) waited
  // for the engine, held up a copy queued behind it, or kept its next use
  // waiting. Only such a copy in, issued earlier, can shorten a wait: one
  // that started when issued, with the engine idle after it and its use on
  // time, would only take the engine from others sooner.
  std::vector<bool> pressed;
};

// The objects a timeline of these swaps keeps densely: those below the
// largest swapped one.
CACHEDARRAYS_INLINE std::size_t autoswap_objects(const std::vector<AutoswapSwap>& swaps) {
  std::size_t n = 0;
  for (const AutoswapSwap& s : swaps) n = std::max<std::size_t>(n, s.candidate.object + std::size_t{1});
  return n;
}

// §IV-E on one copy engine over two iterations (the first from an idle
// engine, its wrapping swaps' copies out taken as done); the second, the
// steady state, is reported. Per kernel boundary, in the paper's order: the
// copies out (in order of their accesses; then by swap), then the copies in
// by their next access; each starts when the engine is free. A copy in never
// precedes its own copy out (it is issued at a later boundary, or after it
// at the same one). Built once for a plan's swaps and run for each choice
// of issue positions the schedule tries: the copies out and the uses keep
// their boundaries, so only the copies in are ordered anew. The kernels and
// copies run on the shared CopyTimeline (copy_timeline.hpp), one timeline
// reset for each run: the planner's clock is the replay's.
class AutoswapEngine {
 public:
  // `duplex`: the copies out on an engine of their own (AutoswapOptions::duplex).
  AutoswapEngine(const AutoswapTimeline& t, const TierCosts& costs, const std::vector<AutoswapSwap>& swaps,
                 std::span<const AutoswapSlot> slots, bool duplex)
      : t_(t),
        seconds_(costs.fast_seconds),
        swaps_(swaps),
        nk_(static_cast<std::int64_t>(t.start.size())),
        timeline_(duplex ? costs.channels(0) : costs.channels(), autoswap_objects(swaps)),
        duplex_(duplex) {
    for (std::size_t s = 0; s < swaps.size(); ++s) {
      for (std::int64_t r = -1; r <= 1; ++r) {
        Instance i;
        i.swap = s;
        i.base = r * nk_ + slots[s].after;
        i.out_at = i.base + 1;
        i.use_at = i.base + slots[s].span;
        if (i.out_at < 2 * nk_) inst_.push_back(i);  // else wholly after the run
      }
    }
    // Instances are made swap by swap: stable sorts keep the swap order in ties.
    const auto by = [&](std::int64_t Instance::*at) {
      std::vector<std::size_t> order;
      for (std::size_t j = 0; j < inst_.size(); ++j) {
        if (inst_[j].*at >= 0 && inst_[j].*at < 2 * nk_) order.push_back(j);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return inst_[a].*at < inst_[b].*at; });
      return order;
    };
    outs_ = by(&Instance::out_at);
    uses_ = by(&Instance::use_at);
    first_in_.resize(static_cast<std::size_t>(2 * nk_) + 1);
    kernel_start_.resize(static_cast<std::size_t>(2 * nk_));
    freed_.resize(static_cast<std::size_t>(nk_) + 1);
  }

  // The engine with each swap's copy in issued at position issue[swap];
  // `run`'s buffers are reused.
  void run(std::span<const std::uint32_t> issue, AutoswapRun& run) {
    run.waits.assign(static_cast<std::size_t>(nk_), 0.0);
    run.scheduled_load = t_.load;
    run.times.assign(swaps_.size(), {});
    run.pressed.assign(swaps_.size(), false);
    run.overhead = 0;
    run.scheduled_peak = 0;
    if (nk_ == 0) return;
    place(issue);
    bucket_copies_in();
    const double iteration_start = simulate(run);
    for (const double w : run.waits) run.overhead += w;
    settle(run, iteration_start);
  }

 private:
  struct Instance {
    std::size_t swap = 0;
    std::int64_t base = 0;  // the boundary of the use that opens the gap, less one: r * nk + after
    std::int64_t out_at = 0, in_at = 0, use_at = 0;  // kernel boundaries over the unrolled run
    bool active = true;
    double out_start = 0, out_end = 0, in_issue = 0, in_start = 0, in_end = 0;
  };

  // Each instance's copy in at its issue position; every time unset.
  void place(std::span<const std::uint32_t> issue) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    for (Instance& x : inst_) {
      x.in_at = x.base + issue[x.swap];
      x.active = x.in_at >= 0;         // else wholly before the run
      x.out_start = x.out_end = -inf;  // not in the run: the iteration before's, done
      x.in_issue = x.in_start = x.in_end = inf;
    }
  }

  // The copies in by boundary, then next use, then swap.
  void bucket_copies_in() {
    const std::int64_t nk = nk_;
    std::fill(first_in_.begin(), first_in_.end(), 0);
    for (const Instance& x : inst_) {
      if (x.active && x.in_at < 2 * nk) ++first_in_[static_cast<std::size_t>(x.in_at) + 1];
    }
    for (std::size_t b = 1; b < first_in_.size(); ++b) first_in_[b] += first_in_[b - 1];
    ins_.assign(first_in_.back(), 0);
    next_in_.assign(first_in_.begin(), first_in_.end() - 1);
    for (std::size_t j = 0; j < inst_.size(); ++j) {
      const Instance& x = inst_[j];
      if (x.active && x.in_at < 2 * nk) ins_[next_in_[static_cast<std::size_t>(x.in_at)]++] = j;
    }
    for (std::size_t b = 0; b + 1 < first_in_.size(); ++b) {
      if (first_in_[b + 1] - first_in_[b] > 1) {
        std::stable_sort(ins_.begin() + static_cast<std::ptrdiff_t>(first_in_[b]),
                         ins_.begin() + static_cast<std::ptrdiff_t>(first_in_[b + 1]),
                         [&](std::size_t a, std::size_t c) { return inst_[a].use_at < inst_[c].use_at; });
      }
    }
  }

  // Two iterations of boundaries: at each, the copies out, then the copies
  // in, then the kernel once the copies in flight of its swapped objects
  // (their copies in) have landed. Returns when the second iteration starts.
  double simulate(AutoswapRun& run) {
    timeline_.reset();
    last_in_ = inst_.size();
    double iteration_start = 0;
    std::size_t o = 0, u = 0;
    for (std::int64_t b = 0; b < 2 * nk_; ++b) {
      const double now = timeline_.now();
      if (b == nk_) iteration_start = now;
      for (; o < outs_.size() && inst_[outs_[o]].out_at == b; ++o) copy_out(inst_[outs_[o]], run);
      const auto bi = static_cast<std::size_t>(b);
      for (std::size_t i = first_in_[bi]; i < first_in_[bi + 1]; ++i) copy_in(ins_[i], run);
      using_.clear();
      for (; u < uses_.size() && inst_[uses_[u]].use_at == b; ++u) {
        const Instance& x = inst_[uses_[u]];
        if (!x.active) continue;
        if (x.in_end > now) run.pressed[x.swap] = true;
        using_.push_back(swaps_[x.swap].candidate.object);
      }
      const double start = timeline_.run_kernel(using_, seconds_[static_cast<std::size_t>(b % nk_)]);
      if (b >= nk_) run.waits[static_cast<std::size_t>(b - nk_)] = start - now;
      kernel_start_[bi] = start;
    }
    return iteration_start;
  }

  // A copy on the engine of the copies in (the one engine, unless duplex),
  // no earlier than `not_before`: a copy in never starts before its own
  // copy out has ended (on one engine the order already sees to it). A copy
  // in that engine was still busy with was pressed.
  CopySpan queue(DeviceId src, DeviceId dst, const AutoswapSwap& swap, double not_before, AutoswapRun& run) {
    const double now = timeline_.now();
    if (timeline_.mover_start(CopyChannels::slow, CopyChannels::fast) > now && last_in_ < inst_.size()) {
      run.pressed[inst_[last_in_].swap] = true;
    }
    return timeline_.copy_async(src, dst, swap.candidate.bytes, swap.candidate.object, not_before);
  }

  void copy_out(Instance& x, AutoswapRun& run) {
    if (!x.active) return;
    const AutoswapSwap& swap = swaps_[x.swap];
    // Duplex: on an engine of its own, holding up no copy in.
    const CopySpan span = duplex_ ? timeline_.copy_async(CopyChannels::fast, CopyChannels::slow, swap.candidate.bytes,
                                                         swap.candidate.object)
                                  : queue(CopyChannels::fast, CopyChannels::slow, swap, 0, run);
    x.out_start = span.start;
    x.out_end = span.end;
    if (!duplex_) last_in_ = inst_.size();
  }

  void copy_in(std::size_t j, AutoswapRun& run) {
    Instance& x = inst_[j];
    x.in_issue = timeline_.now();
    const CopySpan span = queue(CopyChannels::slow, CopyChannels::fast, swaps_[x.swap], x.out_end, run);
    x.in_start = span.start;
    x.in_end = span.end;
    if (x.in_start > x.in_issue) run.pressed[x.swap] = true;
    last_in_ = j;
  }

  // The scheduled load of the second iteration, and each swap's times in
  // it: an object is absent at the kernels of its gap that start once its
  // copy out has ended and before its copy in is issued. Kernel starts only
  // grow, so those kernels are a run of the gap's: one difference each.
  void settle(AutoswapRun& run, double iteration_start) {
    const std::int64_t nk = nk_;
    std::fill(freed_.begin(), freed_.end(), 0);
    for (const Instance& x : inst_) {
      if (!x.active) continue;
      const std::int64_t lo = std::max(x.out_at, nk), hi = std::min(x.in_at, 2 * nk);
      if (lo < hi) {
        const auto first = std::lower_bound(kernel_start_.begin() + lo, kernel_start_.begin() + hi, x.out_end);
        const std::int64_t from = first - kernel_start_.begin();
        const auto bytes = static_cast<std::int64_t>(swaps_[x.swap].candidate.bytes);
        freed_[static_cast<std::size_t>(from - nk)] += bytes;
        freed_[static_cast<std::size_t>(hi - nk)] -= bytes;
      }
      if (x.use_at < nk || x.use_at >= 2 * nk) continue;
      // The instance whose next use is in the second iteration is reported.
      run.times[x.swap] = {
          x.out_start - iteration_start, x.out_end - iteration_start,
          x.in_issue - iteration_start,  x.in_start - iteration_start,
          x.in_end - iteration_start,    kernel_start_[static_cast<std::size_t>(x.use_at)] - iteration_start};
    }
    std::int64_t absent = 0;
    for (std::size_t k = 0; k < run.scheduled_load.size(); ++k) {
      absent += freed_[k];
      run.scheduled_load[k] -= static_cast<std::uint64_t>(absent);
    }
    run.scheduled_peak = *std::max_element(run.scheduled_load.begin(), run.scheduled_load.end());
  }

  const AutoswapTimeline& t_;
  std::span<const double> seconds_;
  const std::vector<AutoswapSwap>& swaps_;
  std::int64_t nk_ = 0;
  std::vector<Instance> inst_;
  std::vector<std::size_t> outs_, uses_;               // by boundary, then swap
  std::vector<std::size_t> first_in_, next_in_, ins_;  // the copies in bucketed by boundary
  std::vector<double> kernel_start_;
  std::vector<std::int64_t> freed_;
  std::vector<std::uint64_t> using_;  // a kernel's swapped objects, reused
  // The kernels and the copy engines: reset for each run.
  CopyTimeline timeline_;
  bool duplex_ = false;
  // The copy in the engine of the copies in is busy with (inst_.size(): none).
  std::size_t last_in_ = 0;
};

// LOAD' while copies in move: issuing a swap's copy in one position earlier
// brings its object back for one more kernel of its gap, which it may only
// if that kernel's load stays within the limit and one kernel stays absent.
struct AutoswapLoadBudget {
  std::vector<std::uint64_t>& load;
  std::uint64_t limit = 0;
  std::uint32_t nk = 0;

  [[nodiscard]] std::uint32_t kernel(const AutoswapSlot& s, std::uint32_t position) const {
    return (s.after + position) % nk;
  }
  [[nodiscard]] bool may_advance(const AutoswapSlot& s, std::uint32_t issue) const {
    return issue > s.first_absent + 1 && load[kernel(s, issue - 1)] + s.bytes <= limit;
  }
  void advance(const AutoswapSlot& s, std::uint32_t& issue) { load[kernel(s, --issue)] += s.bytes; }
  void retreat(const AutoswapSlot& s, std::uint32_t& issue) { load[kernel(s, issue++)] -= s.bytes; }
};

// The engine's time the copies out take on their own, in the static
// timeline's steady state, as merged busy blocks over [-2, 2) iterations:
// the time a copy in can use without delaying a copy out.
class AutoswapOutBlocks {
 public:
  // `duplex`: the copies out have an engine of their own and block nothing.
  AutoswapOutBlocks(const AutoswapTimeline& t, const TierCosts& costs, std::span<const AutoswapSlot> slots,
                    const std::vector<AutoswapSwap>& swaps, bool duplex) {
    // Copies out hold up copies in only on one engine shared by both.
    if (duplex || costs.copy_lanes != 1) return;
    const auto nk = static_cast<std::uint32_t>(t.start.size());
    // Three iterations from an idle engine; the middle one's copies out
    // (issued at boundaries nk + 1 .. 2nk) are the steady state's.
    std::vector<std::pair<std::uint32_t, std::size_t>> issued;  // (boundary, swap)
    for (std::size_t s = 0; s < slots.size(); ++s) {
      for (std::uint32_t r = 0; r < 3; ++r) issued.emplace_back(r * nk + slots[s].after + 1, s);
    }
    std::sort(issued.begin(), issued.end());
    // The copies out alone on the shared timeline, each issued when its
    // kernel starts on the static timeline (no kernel runs on this one).
    CopyTimeline engine(costs.channels(1), autoswap_objects(swaps));
    std::vector<std::pair<double, double>> busy;
    for (const auto& [at, s] : issued) {
      const double when = t.seconds * static_cast<double>(at / nk) + t.start[at % nk];
      const AutoswapCandidate& c = swaps[s].candidate;
      const CopySpan copy = engine.copy_async(CopyChannels::fast, CopyChannels::slow, c.bytes, c.object, when);
      if (at > nk && at <= 2 * nk) {
        for (int shift = -3; shift <= 0; ++shift) {
          busy.emplace_back(copy.start + shift * t.seconds, copy.end + shift * t.seconds);
        }
      }
    }
    std::sort(busy.begin(), busy.end());
    for (const auto& [from, to] : busy) {
      if (!blocks_.empty() && from <= blocks_.back().second) {
        blocks_.back().second = std::max(blocks_.back().second, to);
      } else {
        blocks_.emplace_back(from, to);
      }
    }
  }
  // When a copy issued at `at` starts: after the copies out running then.
  [[nodiscard]] double start_of(double at) const {
    auto b = std::upper_bound(blocks_.begin(), blocks_.end(), std::pair(at, std::numeric_limits<double>::infinity()));
    if (b == blocks_.begin()) return at;
    --b;
    return at < b->second ? b->second : at;
  }
  // Whether a copy over [from, to) (from outside every block) runs into a copy out.
  [[nodiscard]] bool collides(double from, double to, double tolerance) const {
    const auto b =
        std::upper_bound(blocks_.begin(), blocks_.end(), std::pair(from, std::numeric_limits<double>::infinity()));
    return b != blocks_.end() && b->first < to - tolerance;
  }

 private:
  std::vector<std::pair<double, double>> blocks_;  // [start, end), sorted, disjoint
};

// §IV-E's "in advance", on the static timeline: the copies in from the
// latest next use to the earliest, each to end by its use and before the
// copy in after it on the engine starts, at the latest position that does
// so without running into a copy out (else the latest that ends in time,
// else the earliest the load allows). The copies in that end an iteration
// give way to the next iteration's first ones: the passes repeat with that
// bound until no position moves.
CACHEDARRAYS_INLINE void autoswap_backward(const AutoswapTimeline& t, const TierCosts& costs,
                                           std::span<const AutoswapSlot> slots, const std::vector<AutoswapSwap>& swaps,
                                           AutoswapLoadBudget& budget, std::vector<std::uint32_t>& issue, bool duplex) {
  const AutoswapOutBlocks outs(t, costs, slots, swaps, duplex);
  const double tolerance = 1e-12 * std::max(1.0, t.seconds);
  std::vector<std::size_t> order(slots.size());
  for (std::size_t s = 0; s < order.size(); ++s) order[s] = s;
  // Latest first; at one deadline the swap queued last (the engine takes
  // ties in swap order) first.
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return slots[a].deadline > slots[b].deadline || (slots[a].deadline == slots[b].deadline && a > b);
  });
  double next_iteration = std::numeric_limits<double>::infinity();
  for (int pass = 0; pass < 8; ++pass) {
    bool moved = false;
    double cursor = next_iteration;
    for (const std::size_t s : order) {
      const AutoswapSlot& slot = slots[s];
      const double due = std::min(slot.deadline, cursor);
      const auto start = [&](std::uint32_t p) {
        return outs.start_of(autoswap_unrolled_start(t, slot.after, p) + slot.shift);
      };
      const std::uint32_t was = issue[s];
      std::uint32_t p = was;
      std::uint32_t in_time = 0, clear = 0;  // 0: none found yet
      while (true) {
        const double from = start(p);
        if (from + slot.in_seconds <= due + tolerance) {
          if (in_time == 0) in_time = p;
          if (!outs.collides(from, from + slot.in_seconds, tolerance)) {
            clear = p;
            break;
          }
        }
        if (!budget.may_advance(slot, p)) break;
        budget.advance(slot, p);
      }
      const std::uint32_t chosen = clear != 0 ? clear : in_time != 0 ? in_time : p;
      while (p < chosen) budget.retreat(slot, p);
      issue[s] = chosen;
      moved = moved || chosen != was;
      cursor = std::min(cursor, start(chosen));
    }
    next_iteration = cursor + t.seconds;
    if (pass > 0 && !moved) break;
  }
}

inline constexpr int autoswap_search_rounds = 16;  // autoswap.hpp says why the search stops there

// The schedule (autoswap.hpp): the backward pass's issue positions, kept
// only if the engine then waits no longer and passes the limit by no more
// than with each copy in at its latest; then single positions earlier while
// one lowers the waits.
CACHEDARRAYS_INLINE void autoswap_schedule(const AutoswapTimeline& t, const TierCosts& costs, std::uint64_t limit,
                                           bool duplex, AutoswapPlan& plan) {
  const auto nk = static_cast<std::uint32_t>(t.start.size());
  std::vector<AutoswapSlot> slots;
  std::vector<std::uint32_t> latest;
  for (const AutoswapSwap& s : plan.swaps) {
    slots.push_back(autoswap_slot(t, s.candidate));
    latest.push_back(slots.back().latest);
  }
  std::vector<std::uint32_t> issue = latest;
  AutoswapEngine engine(t, costs, plan.swaps, slots, duplex);
  AutoswapRun run, trial;
  engine.run(issue, run);
  const double tolerance = 1e-12 * std::max(1.0, t.seconds);
  const auto better = [&](const AutoswapRun& a, const AutoswapRun& than) {
    return a.overhead < than.overhead - tolerance && a.scheduled_peak <= std::max(limit, than.scheduled_peak);
  };
  if (nk > 0 && !plan.swaps.empty()) {
    std::vector<std::uint64_t> load = plan.load;
    AutoswapLoadBudget budget{load, limit, nk};
    autoswap_backward(t, costs, slots, plan.swaps, budget, issue, duplex);
    engine.run(issue, trial);
    if (trial.overhead <= run.overhead + tolerance && trial.scheduled_peak <= std::max(limit, run.scheduled_peak)) {
      std::swap(run, trial);
      plan.load = std::move(load);
    } else {
      issue = latest;
    }
    // A local search that ends when no copy in issued one kernel earlier
    // (the load permitting) would wait less; a copy in that does keeps
    // moving while it still lowers the waits. Each round takes the copies
    // in the engine's order. It stops after autoswap_search_rounds
    // (autoswap.hpp: an engine busy all iteration gains slivers a round).
    AutoswapLoadBudget local{plan.load, limit, nk};
    std::vector<std::size_t> engine_order(slots.size());
    int rounds = 0;
    for (bool improved = run.overhead > 0; improved && run.overhead > 0 && rounds < autoswap_search_rounds; ++rounds) {
      improved = false;
      for (std::size_t s = 0; s < slots.size(); ++s) engine_order[s] = s;
      std::stable_sort(engine_order.begin(), engine_order.end(),
                       [&](std::size_t a, std::size_t b) { return run.times[a].in_start < run.times[b].in_start; });
      for (const std::size_t s : engine_order) {
        while (run.overhead > 0 && run.pressed[s] && local.may_advance(slots[s], issue[s])) {
          local.advance(slots[s], issue[s]);
          engine.run(issue, trial);
          if (!better(trial, run)) {
            local.retreat(slots[s], issue[s]);
            break;
          }
          std::swap(run, trial);
          improved = true;
        }
      }
    }
  }
  for (std::size_t s = 0; s < plan.swaps.size(); ++s) {
    AutoswapSwap& swap = plan.swaps[s];
    swap.in_kernel = (slots[s].after + issue[s]) % nk;
    swap.absent.clear();
    for (std::uint32_t p = slots[s].first_absent; p < issue[s]; ++p) swap.absent.push_back((slots[s].after + p) % nk);
    const AutoswapCopyTimes& x = run.times[s];
    swap.out_start = x.out_start;
    swap.out_end = x.out_end;
    swap.in_issue = x.in_issue;
    swap.in_start = x.in_start;
    swap.in_end = x.in_end;
    swap.use_start = x.use_start;
  }
  plan.waits = std::move(run.waits);
  plan.overhead_seconds = run.overhead;
  plan.scheduled_load = std::move(run.scheduled_load);
  plan.scheduled_peak = run.scheduled_peak;
}

}  // namespace detail

CACHEDARRAYS_INLINE AutoswapTimeline autoswap_timeline(const Program& program, const TierCosts& costs) {
  detail::autoswap_check_times(program, costs, "autoswap_timeline");
  AutoswapTimeline t;
  double now = 0;
  for (const double seconds : costs.fast_seconds) {
    t.start.push_back(now);
    now += seconds;
    t.end.push_back(now);
  }
  t.seconds = now;
  t.load = program.live_bytes();
  t.peak = program.max_live();
  return t;
}

CACHEDARRAYS_INLINE std::vector<AutoswapCandidate> autoswap_candidates(const Program& program, const TierCosts& costs,
                                                                       const AutoswapOptions& options) {
  detail::autoswap_check_times(program, costs, "autoswap_candidates");
  detail::autoswap_check_bandwidths(costs, "autoswap_candidates");
  return detail::autoswap_candidates_of(program, autoswap_timeline(program, costs), costs, options);
}

CACHEDARRAYS_INLINE std::vector<AutoswapScores> autoswap_scores(const AutoswapTimeline& timeline,
                                                                std::span<const AutoswapCandidate> candidates,
                                                                std::span<const std::uint64_t> load) {
  const auto nk = static_cast<std::uint32_t>(timeline.start.size());
  if (load.size() != nk || timeline.end.size() != nk || timeline.load.size() != nk) {
    throw invalid_argument("autoswap_scores: a load curve of " + std::to_string(load.size()) +
                           " kernels for a timeline of " + std::to_string(nk) +
                           "; give one load per kernel (AutoswapTimeline::load, or AutoswapPlan::load)");
  }
  const std::vector<double> original = detail::autoswap_area_prefix(timeline, timeline.load);
  const std::vector<double> updated = detail::autoswap_area_prefix(timeline, load);
  std::vector<AutoswapScores> scores;
  scores.reserve(candidates.size());
  for (const AutoswapCandidate& c : candidates) {
    if (c.after >= nk || c.before >= nk || c.bytes == 0) {
      throw invalid_argument("autoswap_scores: a candidate of object " + std::to_string(c.object) +
                             " between kernels " + std::to_string(c.after) + " and " + std::to_string(c.before) + " (" +
                             std::to_string(c.bytes) + " bytes) is not one of this timeline's " + std::to_string(nk) +
                             " kernels; take candidates from autoswap_candidates");
    }
    AutoswapScores s;
    // §IV-B (i): the time between the accesses less the copies' time.
    s.doa = c.idle_seconds - (c.out_seconds + c.in_seconds);
    // §IV-B (ii): times the size; when negative, times its inverse, so that
    // a larger (less negative) AOA still ranks higher.
    const auto size = static_cast<double>(c.bytes);
    s.aoa = s.doa >= 0 ? s.doa * size : s.doa / size;
    // §IV-B (iii) and (iv): the area under the original and the updated load.
    s.wdoa = detail::autoswap_gap_area(original, c, nk);
    s.swdoa = detail::autoswap_gap_area(updated, c, nk);
    scores.push_back(s);
  }
  return scores;
}

CACHEDARRAYS_INLINE std::vector<double> autoswap_bo_scores(std::span<const AutoswapScores> scores,
                                                           const AutoswapBoWeights& weights) {
  detail::autoswap_check_weights(weights, "autoswap_bo_scores");
  std::vector<double> bo(scores.size(), 0.0);
  if (scores.empty()) return bo;
  const auto n = static_cast<double>(scores.size());
  for (std::size_t term = 0; term < weights.size(); ++term) {
    const double w = weights[term];
    if (w == 0) continue;
    const AutoswapScore score = autoswap_bo_terms[term];
    double mean = 0;
    for (const AutoswapScores& s : scores) mean += s.of(score);
    mean /= n;
    double variance = 0;  // two passes: no cancellation when the scores are far from 0 (WDOA in byte-seconds)
    for (const AutoswapScores& s : scores) variance += (s.of(score) - mean) * (s.of(score) - mean);
    const double deviation = std::sqrt(variance / n);
    // A score the same for every candidate tells them apart in no way: z = 0.
    if (!(deviation > 0) || !std::isfinite(deviation)) continue;
    for (std::size_t i = 0; i < scores.size(); ++i) bo[i] += w * ((scores[i].of(score) - mean) / deviation);
  }
  return bo;
}

CACHEDARRAYS_INLINE AutoswapPlan autoswap_plan(const Program& program, const TierCosts& costs,
                                               const AutoswapOptions& options) {
  detail::autoswap_check_times(program, costs, "autoswap_plan");
  detail::autoswap_check_bandwidths(costs, "autoswap_plan");
  const AutoswapTimeline t = autoswap_timeline(program, costs);
  if (options.limit == 0) {
    throw invalid_argument(
        "autoswap_plan: a memory load limit of 0 bytes; the limit (Definition 5) is the most "
        "bytes the fast tier may hold at once, > 0 (the program's peak load without swaps is " +
        std::to_string(t.peak) + " bytes)");
  }
  if (options.score == AutoswapScore::bo) detail::autoswap_check_weights(options.bo_weights, "autoswap_plan");
  const std::vector<AutoswapCandidate> candidates = detail::autoswap_candidates_of(program, t, costs, options);
  AutoswapPlan plan;
  plan.candidates = candidates.size();
  plan.original_peak = t.peak;
  plan.iteration_seconds = t.seconds;
  plan.load = t.load;
  const auto peak = [&] {
    return plan.load.empty() ? std::uint64_t{0} : *std::max_element(plan.load.begin(), plan.load.end());
  };

  // §IV-D: the candidates by descending score, each lowering the load,
  // until the peak is within the limit. Those that free no kernel are
  // passed over (autoswap.hpp).
  std::vector<std::size_t> left;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!candidates[i].absent.empty()) left.push_back(i);
  }
  // BO (§IV-C) standardises over the candidates the selection may pick,
  // all of them at every pick, the picked ones too: DOA, AOA and WDOA keep
  // one mean and deviation for the whole selection, as equation (3) weighs
  // them once. SWDOA, scored again after each pick (§IV-B (iv)), is
  // standardised with its current values' mean and deviation: the paper
  // feeds the formula the standardised scores, and SWDOA's are those of the
  // load the picks left. With the first pick's mean and deviation instead,
  // SWDOA's term would fade as the picks lower the load (its areas and
  // their spread shrink with it), so d would weigh less at each pick than
  // at the first; standardised anew, d keeps its share of the sum.
  const std::vector<std::size_t> eligible = left;
  const AutoswapScore score = detail::autoswap_ranking_score(options);
  const bool rescored = score == AutoswapScore::swdoa || (score == AutoswapScore::bo && options.bo_weights[3] != 0);
  std::vector<double> key(candidates.size(), 0.0);
  const auto rank = [&] {
    const std::vector<AutoswapScores> scores = autoswap_scores(t, candidates, plan.load);
    if (score != AutoswapScore::bo) {
      for (const std::size_t i : eligible) key[i] = scores[i].of(score);
      return;
    }
    std::vector<AutoswapScores> population;
    population.reserve(eligible.size());
    for (const std::size_t i : eligible) population.push_back(scores[i]);
    const std::vector<double> bo = autoswap_bo_scores(population, options.bo_weights);
    for (std::size_t j = 0; j < eligible.size(); ++j) key[eligible[j]] = bo[j];
  };
  rank();
  // Highest score first; ties to the candidate found first.
  const auto better = [&](std::size_t a, std::size_t b) { return key[a] > key[b] || (key[a] == key[b] && a < b); };
  if (!rescored) std::sort(left.begin(), left.end(), better);
  std::size_t next = 0;
  while (peak() > options.limit && next < left.size()) {
    // §IV-B (iv): WDOA again under the load the picks so far left.
    if (rescored && next > 0) rank();
    if (rescored) {
      const auto best = std::min_element(left.begin() + static_cast<std::ptrdiff_t>(next), left.end(), better);
      std::iter_swap(left.begin() + static_cast<std::ptrdiff_t>(next), best);
    }
    const AutoswapCandidate& c = candidates[left[next++]];
    for (const std::uint32_t k : c.absent) plan.load[k] -= c.bytes;
    AutoswapSwap picked;
    picked.candidate = c;
    plan.swaps.push_back(std::move(picked));
  }
  // The schedule may bring objects back earlier where the limit has room:
  // LOAD' is the schedule's, and still at most the limit wherever it was.
  detail::autoswap_schedule(t, costs, options.limit, options.duplex, plan);
  plan.peak = peak();
  plan.fits = plan.peak <= options.limit;
  plan.excess = plan.fits ? 0 : plan.peak - options.limit;
  return plan;
}

}  // namespace cachedarrays::plan
