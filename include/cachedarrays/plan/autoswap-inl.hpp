// Implementation of autoswap.hpp (header-only mode includes it from there; the
// compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/autoswap.hpp"

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
  for (AutoswapScore s : {AutoswapScore::doa, AutoswapScore::aoa, AutoswapScore::wdoa, AutoswapScore::swdoa,
                          AutoswapScore::bo}) {
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

CACHEDARRAYS_INLINE void autoswap_check_times(const Program& program, const AutotmCosts& costs, const char* who) {
  const std::size_t nk = program.kernels().size();
  if (costs.dram_seconds.size() != nk) {
    throw invalid_argument(std::string(who) + ": the costs give " + std::to_string(costs.dram_seconds.size()) +
                           " kernel times (dram_seconds), the program has " + std::to_string(nk) +
                           " kernels; give one per kernel (AutotmCosts::from_model)");
  }
  for (std::size_t k = 0; k < nk; ++k) {
    const double s = costs.dram_seconds[k];
    if (!(s >= 0 && std::isfinite(s))) {
      throw invalid_argument(std::string(who) + ": kernel " + std::to_string(k) + " takes " + std::to_string(s) +
                             " s (dram_seconds[" + std::to_string(k) + "]); a kernel time is finite and >= 0 s");
    }
  }
}

CACHEDARRAYS_INLINE void autoswap_check_bandwidths(const AutotmCosts& costs, const char* who) {
  const auto ok = [](double gbps) { return gbps > 0 && std::isfinite(gbps); };
  if (!ok(costs.to_pmm_gbps) || !ok(costs.to_dram_gbps)) {
    throw invalid_argument(std::string(who) + ": swap-outs copy at to_pmm_gbps = " +
                           std::to_string(costs.to_pmm_gbps) + " GB/s and swap-ins at to_dram_gbps = " +
                           std::to_string(costs.to_dram_gbps) + " GB/s; both must be finite and > 0");
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
// (DOA / S: about -1e-11 for 100 MB objects) lie ~1e-16 of the spread of its
// positive ones (DOA * S: 1e5 and more) from each other, below a double's
// resolution once the mean is subtracted; the tie-break (candidate order)
// would then reorder them. So BO with a unit weight vector plans exactly
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
                                                                         const AutotmCosts& costs,
                                                                         const AutoswapOptions& options) {
  std::vector<AutoswapCandidate> out;
  const auto nk = static_cast<std::uint32_t>(program.kernels().size());
  if (nk == 0) return out;
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
      c.out_seconds = static_cast<double>(bytes) / (costs.to_pmm_gbps * 1e9);
      c.in_seconds = static_cast<double>(bytes) / (costs.to_dram_gbps * 1e9);
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

// One swap on the modeled copy engine, in one iteration r of the
// simulation: boundaries count kernel starts over the unrolled run.
struct AutoswapInstance {
  std::size_t swap = 0;
  std::int64_t out_at = 0, in_at = 0, use_at = 0;
  double out_start = -std::numeric_limits<double>::infinity();
  double out_end = -std::numeric_limits<double>::infinity();  // done before the run: the iteration before's
  double in_issue = std::numeric_limits<double>::infinity();  // after the run: never issued in it
  double in_start = std::numeric_limits<double>::infinity();
  double in_end = std::numeric_limits<double>::infinity();
};

// §IV-E on one copy engine over two iterations (the first from an idle
// engine, its wrapping swaps' copies out taken as done); the second, the
// steady state, is reported.
CACHEDARRAYS_INLINE void autoswap_schedule(const AutoswapTimeline& t, const std::vector<double>& seconds,
                                           AutoswapPlan& plan) {
  const auto nk = static_cast<std::int64_t>(t.start.size());
  plan.waits.assign(static_cast<std::size_t>(nk), 0.0);
  plan.scheduled_load = t.load;
  if (nk == 0) return;
  const auto n = static_cast<std::uint32_t>(nk);
  std::vector<AutoswapInstance> inst;
  for (std::size_t s = 0; s < plan.swaps.size(); ++s) {
    const AutoswapCandidate& c = plan.swaps[s].candidate;
    const std::int64_t in_pos = autoswap_span(c.after, c.in_kernel, n);
    const std::int64_t span = autoswap_span(c.after, c.before, n);
    for (std::int64_t r = -1; r <= 1; ++r) {
      AutoswapInstance i;
      i.swap = s;
      i.out_at = r * nk + c.after + 1;
      i.in_at = r * nk + c.after + in_pos;
      i.use_at = r * nk + c.after + span;
      if (i.in_at < 0 || i.out_at >= 2 * nk) continue;  // wholly before or after the run
      inst.push_back(i);
    }
  }
  // Per boundary, in the paper's order: the copies out (in order of their
  // accesses, all this boundary's; then by candidate), then the copies in
  // by their next access. A copy in never precedes its own copy out.
  std::vector<std::vector<std::size_t>> outs(static_cast<std::size_t>(2 * nk)), ins(outs.size()), uses(outs.size());
  for (std::size_t j = 0; j < inst.size(); ++j) {
    if (inst[j].out_at >= 0) outs[static_cast<std::size_t>(inst[j].out_at)].push_back(j);
    if (inst[j].in_at < 2 * nk) ins[static_cast<std::size_t>(inst[j].in_at)].push_back(j);
    if (inst[j].use_at < 2 * nk) uses[static_cast<std::size_t>(inst[j].use_at)].push_back(j);
  }
  for (std::vector<std::size_t>& v : ins) {
    std::stable_sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) { return inst[a].use_at < inst[b].use_at; });
  }
  std::vector<double> kernel_start(outs.size());
  double now = 0;
  double engine = 0;  // when the copy engine is next free
  double iteration_start = 0;
  for (std::size_t b = 0; b < outs.size(); ++b) {
    if (b == static_cast<std::size_t>(nk)) iteration_start = now;
    for (const std::size_t j : outs[b]) {
      inst[j].out_start = std::max(now, engine);
      inst[j].out_end = engine = inst[j].out_start + plan.swaps[inst[j].swap].candidate.out_seconds;
    }
    for (const std::size_t j : ins[b]) {
      inst[j].in_issue = now;
      inst[j].in_start = std::max(now, engine);
      inst[j].in_end = engine = inst[j].in_start + plan.swaps[inst[j].swap].candidate.in_seconds;
    }
    double ready = now;
    for (const std::size_t j : uses[b]) ready = std::max(ready, inst[j].in_end);
    if (b >= static_cast<std::size_t>(nk)) plan.waits[b - static_cast<std::size_t>(nk)] = ready - now;
    kernel_start[b] = ready;
    now = ready + seconds[b % n];
  }
  plan.overhead_seconds = 0;
  for (const double w : plan.waits) plan.overhead_seconds += w;
  for (const AutoswapInstance& i : inst) {
    AutoswapSwap& s = plan.swaps[i.swap];
    // The scheduled load of the second iteration: kernels of the gap that
    // start after the copy out ended and before the copy in is issued.
    for (std::int64_t g = std::max(i.out_at, nk); g < std::min(i.in_at, 2 * nk); ++g) {
      if (kernel_start[static_cast<std::size_t>(g)] >= i.out_end) {
        plan.scheduled_load[static_cast<std::size_t>(g - nk)] -= s.candidate.bytes;
      }
    }
    if (i.use_at < nk || i.use_at >= 2 * nk) continue;
    // The instance whose next use is in the second iteration is reported.
    s.out_start = i.out_start - iteration_start;
    s.out_end = i.out_end - iteration_start;
    s.in_issue = i.in_issue - iteration_start;
    s.in_start = i.in_start - iteration_start;
    s.in_end = i.in_end - iteration_start;
    s.use_start = kernel_start[static_cast<std::size_t>(i.use_at)] - iteration_start;
  }
  plan.scheduled_peak = *std::max_element(plan.scheduled_load.begin(), plan.scheduled_load.end());
}

}  // namespace detail

CACHEDARRAYS_INLINE AutoswapTimeline autoswap_timeline(const Program& program, const AutotmCosts& costs) {
  detail::autoswap_check_times(program, costs, "autoswap_timeline");
  AutoswapTimeline t;
  double now = 0;
  for (const double seconds : costs.dram_seconds) {
    t.start.push_back(now);
    now += seconds;
    t.end.push_back(now);
  }
  t.seconds = now;
  t.load = program.live_bytes();
  t.peak = program.max_live();
  return t;
}

CACHEDARRAYS_INLINE std::vector<AutoswapCandidate> autoswap_candidates(const Program& program,
                                                                       const AutotmCosts& costs,
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
                             " between kernels " + std::to_string(c.after) + " and " + std::to_string(c.before) +
                             " (" + std::to_string(c.bytes) + " bytes) is not one of this timeline's " +
                             std::to_string(nk) + " kernels; take candidates from autoswap_candidates");
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

CACHEDARRAYS_INLINE AutoswapPlan autoswap_plan(const Program& program, const AutotmCosts& costs,
                                               const AutoswapOptions& options) {
  detail::autoswap_check_times(program, costs, "autoswap_plan");
  detail::autoswap_check_bandwidths(costs, "autoswap_plan");
  const AutoswapTimeline t = autoswap_timeline(program, costs);
  if (options.limit == 0) {
    throw invalid_argument("autoswap_plan: a memory load limit of 0 bytes; the limit (Definition 5) is the most "
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
  const bool rescored =
      score == AutoswapScore::swdoa || (score == AutoswapScore::bo && options.bo_weights[3] != 0);
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
  plan.peak = peak();
  plan.fits = plan.peak <= options.limit;
  plan.excess = plan.fits ? 0 : plan.peak - options.limit;
  detail::autoswap_schedule(t, costs.dram_seconds, plan);
  return plan;
}

}  // namespace cachedarrays::plan
