// Implementation of dsa_search.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/offsets/dsa_search.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/offsets/smartpool_offsets.hpp"

namespace cachedarrays::plan {

namespace detail {

// What the search needs to know of the problem, computed once (MiniMalloc's
// Sweep, sweeper.cc).
struct SearchSweep {
  // Sections: the maximal sets of buffers alive together (the maximal
  // cliques of the interval graph), in time order. A buffer is in a
  // contiguous run of them, [first_section, last_section].
  std::vector<std::uint64_t> section_total;  // bytes of the section's buffers
  // Their sizes rounded up to the alignment, and the most any of them was
  // rounded up by: stacked, all but the top one take their aligned size.
  std::vector<std::uint64_t> section_aligned_total;
  std::vector<std::uint64_t> section_slack;
  std::vector<std::vector<std::uint32_t>> section_buffers;
  std::vector<std::uint32_t> first_section;
  std::vector<std::uint32_t> last_section;
  // The buffers alive at the same time as each buffer.
  std::vector<std::vector<std::uint32_t>> overlaps;
};

CACHEDARRAYS_INLINE SearchSweep search_sweep(const DsaProblem& problem) {
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  const std::size_t n = buffers.size();
  SearchSweep sweep;
  sweep.first_section.assign(n, 0);
  sweep.last_section.assign(n, 0);
  sweep.overlaps.resize(n);
  // (time, 0 = end / 1 = start, buffer): at one moment the ends go first,
  // because a buffer alive during [s, t) and one alive from t do not meet.
  std::vector<std::array<std::uint32_t, 3>> events;
  events.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    events.push_back({buffers[i].start, 1, static_cast<std::uint32_t>(i)});
    events.push_back({buffers[i].end, 0, static_cast<std::uint32_t>(i)});
  }
  std::sort(events.begin(), events.end());
  std::vector<std::uint32_t> alive;      // the buffers alive now
  std::vector<std::size_t> where(n, 0);  // each one's index in `alive`
  std::uint64_t alive_bytes = 0;
  std::optional<std::uint32_t> section_closed_at;
  for (const auto& [time, is_start, b] : events) {
    if (is_start != 0) {
      for (const std::uint32_t other : alive) {
        sweep.overlaps[b].push_back(other);
        sweep.overlaps[other].push_back(b);
      }
      sweep.first_section[b] = static_cast<std::uint32_t>(sweep.section_total.size());
      where[b] = alive.size();
      alive.push_back(b);
      alive_bytes += buffers[b].size;
      continue;
    }
    // The first end at a moment closes a section: the buffers alive just
    // before it.
    if (!section_closed_at || *section_closed_at != time) {
      sweep.section_total.push_back(alive_bytes);
      std::uint64_t aligned = 0;
      std::uint64_t slack = 0;
      for (const std::uint32_t a : alive) {
        aligned += problem.aligned_size(a);
        slack = std::max(slack, problem.aligned_size(a) - buffers[a].size);
      }
      sweep.section_aligned_total.push_back(aligned);
      sweep.section_slack.push_back(slack);
      sweep.section_buffers.push_back(alive);
      section_closed_at = time;
    }
    sweep.last_section[b] = static_cast<std::uint32_t>(sweep.section_total.size() - 1);
    const std::uint32_t last = alive.back();
    alive[where[b]] = last;
    where[last] = where[b];
    alive.pop_back();
    alive_bytes -= buffers[b].size;
  }
  return sweep;
}

// No solution's footprint is below this: in every section, the buffers
// stacked with all but the top one at their aligned size (max-live when
// the alignment is 1).
CACHEDARRAYS_INLINE std::uint64_t search_aligned_max_live(const SearchSweep& sweep) {
  std::uint64_t bound = 0;
  for (std::size_t s = 0; s < sweep.section_total.size(); ++s) {
    bound = std::max(bound, sweep.section_aligned_total[s] - sweep.section_slack[s]);
  }
  return bound;
}

// The static preorder of a part's buffers under one of MiniMalloc's
// heuristics (solver.cc PreorderingComparator): a string of keys compared in
// turn, each larger first — W the lifetime's width, A the area (size x
// width), T the largest total of the bytes still to place in a section the
// buffer is in — then the lower index. Like solver.cc SubSolve, it is
// computed afresh for every part the search decomposes into, from the
// totals of that moment (`section_total`, the unplaced bytes per section):
// after a decomposition, T ranks the buffers of the part by what is left
// around them, not by what was there at the start. Writes each part
// buffer's rank among them to `rank`.
CACHEDARRAYS_INLINE void search_preorder(const DsaProblem& problem, const SearchSweep& sweep,
                                         const std::vector<std::uint64_t>& section_total, std::string_view keys,
                                         const std::vector<std::uint32_t>& part, std::vector<std::uint32_t>& rank) {
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  struct Keys {
    long double width, area, total;
    std::uint32_t buffer;
  };
  std::vector<Keys> order;
  order.reserve(part.size());
  for (const std::uint32_t i : part) {
    std::uint64_t total = 0;
    for (std::uint32_t s = sweep.first_section[i]; s <= sweep.last_section[i]; ++s) {
      total = std::max(total, section_total[s]);
    }
    const std::uint64_t width = buffers[i].end - buffers[i].start;
    // The area as long double: size (< 2^63) x width (< 2^32) may exceed 64
    // bits; the order of two areas is all that matters.
    order.push_back({static_cast<long double>(width),
                     static_cast<long double>(buffers[i].size) * static_cast<long double>(width),
                     static_cast<long double>(total), i});
  }
  const auto key = [](char k, const Keys& x) -> long double {
    switch (k) {
      case 'W': return x.width;
      case 'A': return x.area;
      default: return x.total;
    }
  };
  std::sort(order.begin(), order.end(), [&](const Keys& a, const Keys& b) {
    for (const char k : keys) {
      const long double ka = key(k, a);
      const long double kb = key(k, b);
      if (ka != kb) return ka > kb;
    }
    return a.buffer < b.buffer;
  });
  for (std::size_t r = 0; r < order.size(); ++r) rank[order[r].buffer] = static_cast<std::uint32_t>(r);
}

enum class DfsOutcome : std::uint8_t { found, exhausted, node_limit, time_limit };

// The depth-first search over canonical placements (solver.cc
// SearchSolutions and DynamicallyDecompose). Every change to the state is
// undone on the way back, also after a success: the offsets of a solution
// are kept in `solution_` as they are placed (the last placement of each
// buffer is the one on the path that succeeded).
class CanonicalSearch {
 public:
  using Clock = std::chrono::steady_clock;

  CanonicalSearch(const DsaProblem& problem, const SearchSweep& sweep, std::uint64_t capacity, std::string_view keys)
      : problem_(problem), sweep_(sweep), capacity_(capacity), keys_(keys) {}

  // Searches until a plan is found, the tree is exhausted or a limit is met;
  // `nodes` counts the placements tried.
  DfsOutcome run(std::uint64_t node_limit, Clock::time_point deadline, std::uint64_t& nodes) {
    const std::size_t n = problem_.size();
    const std::size_t sections = sweep_.section_total.size();
    offset_.assign(n, unplaced);
    solution_.assign(n, 0);
    rank_.assign(n, 0);
    min_offset_.assign(n, 0);
    floor_.assign(sections, 0);
    total_ = sweep_.section_aligned_total;
    offset_log_.clear();
    floor_log_.clear();
    // cuts_[s]: the unplaced buffers alive in both section s and s + 1
    // (sweeper.cc CalculateCuts).
    cuts_.assign(sections == 0 ? 0 : sections - 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::uint32_t s = sweep_.first_section[i]; s < sweep_.last_section[i]; ++s) ++cuts_[s];
    }
    node_limit_ = node_limit;
    deadline_ = deadline;
    nodes_ = nodes;
    std::vector<std::uint32_t> cutpoints;
    for (std::uint32_t s = 0; s + 1 < sections; ++s) {
      if (cuts_[s] == 0) cutpoints.push_back(s + 1);
    }
    std::vector<std::uint32_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = static_cast<std::uint32_t>(i);
    const DfsOutcome outcome = solve_parts(all, 0, static_cast<std::uint32_t>(sections), cutpoints);
    nodes = nodes_;
    return outcome;
  }

  [[nodiscard]] const std::vector<std::uint64_t>& offsets() const { return solution_; }

 private:
  static constexpr std::uint64_t unplaced = std::numeric_limits<std::uint64_t>::max();

  struct Candidate {
    std::uint64_t offset;
    std::uint32_t rank;
    std::uint32_t buffer;
  };
  struct Change {
    std::uint32_t index;
    std::uint64_t old_value;
  };

  // The unplaced buffers of sections [lo, hi), cut at `cutpoints` (sections
  // where no unplaced buffer crosses from the one before), solved part by
  // part: no buffer of one part is alive with one of another, so they do
  // not interact, and one part without a solution ends the search of all
  // (solver.cc DynamicallyDecompose).
  DfsOutcome solve_parts(const std::vector<std::uint32_t>& buffers, std::uint32_t lo, std::uint32_t hi,
                         const std::vector<std::uint32_t>& cutpoints) {
    std::uint32_t begin = lo;
    for (std::size_t c = 0; c <= cutpoints.size(); ++c) {
      const std::uint32_t end = c < cutpoints.size() ? cutpoints[c] : hi;
      std::vector<std::uint32_t> part;
      for (const std::uint32_t b : buffers) {
        if (offset_[b] == unplaced && sweep_.first_section[b] >= begin && sweep_.first_section[b] < end) {
          part.push_back(b);
        }
      }
      if (!part.empty()) {
        // The part's own preorder (solver.cc SubSolve); the ranks it had in
        // the enclosing part come back afterwards, for the candidates there.
        std::vector<std::uint32_t> saved(part.size());
        for (std::size_t k = 0; k < part.size(); ++k) saved[k] = rank_[part[k]];
        search_preorder(problem_, sweep_, total_, keys_, part, rank_);
        const DfsOutcome outcome = search(part, begin, end, 0, 0, false);
        for (std::size_t k = 0; k < part.size(); ++k) rank_[part[k]] = saved[k];
        if (outcome != DfsOutcome::found) return outcome;
      }
      begin = end;
    }
    return DfsOutcome::found;
  }

  // The search of one part (its unplaced buffers and its sections [lo, hi))
  // after a placement at (last_offset, last_rank).
  DfsOutcome search(const std::vector<std::uint32_t>& buffers, std::uint32_t lo, std::uint32_t hi,
                    std::uint64_t last_offset, std::uint32_t last_rank, bool after_last) {
    std::vector<Candidate> next = candidates(buffers, last_offset, last_rank, after_last);
    if (next.empty()) {
      const bool all_placed =
          std::all_of(buffers.begin(), buffers.end(), [&](std::uint32_t b) { return offset_[b] != unplaced; });
      return all_placed ? DfsOutcome::found : DfsOutcome::exhausted;
    }
    for (const Candidate& c : next) {
      if (nodes_ >= node_limit_) return DfsOutcome::node_limit;
      // The clock every 64 placements: reading it costs about as much as a
      // small placement.
      if ((nodes_ & 63) == 0 && Clock::now() >= deadline_) return DfsOutcome::time_limit;
      ++nodes_;
      const std::size_t offset_mark = offset_log_.size();
      const std::size_t floor_mark = floor_log_.size();
      const bool hatless = place(c.buffer);
      DfsOutcome outcome = DfsOutcome::exhausted;
      if (consistent(lo, hi, c.offset)) {
        // The sections this buffer joined to their neighbours and no
        // unplaced buffer does now: the part falls apart there.
        std::vector<std::uint32_t> cutpoints;
        const std::uint32_t first = sweep_.first_section[c.buffer];
        const std::uint32_t last = sweep_.last_section[c.buffer];
        for (std::uint32_t s = first; s < last; ++s) {
          if (--cuts_[s] == 0) cutpoints.push_back(s + 1);
        }
        outcome = cutpoints.empty() ? search(buffers, lo, hi, c.offset, c.rank, true)
                                    : solve_parts(buffers, lo, hi, cutpoints);
        for (std::uint32_t s = first; s < last; ++s) ++cuts_[s];
      }
      unplace(c.buffer, offset_mark, floor_mark);
      if (outcome != DfsOutcome::exhausted) return outcome;
      // A buffer alive with no unplaced one (solver.cc `hatless_pruning`)
      // keeps its minimum offset whatever comes next; every later candidate
      // is after it in (offset, rank) order, so a canonical placement could
      // never put it there afterwards: they all fail as it did.
      if (hatless) break;
    }
    return DfsOutcome::exhausted;
  }

  // The buffers of the part that may come next after one placed at
  // (last_offset, last_rank), in (offset, rank) order:
  //   - canonical (paper §4.1): at their minimum offset, and (offset, rank)
  //     after the last placement's (solver.cc `canonical_only`);
  //   - not dominated (§4.3, `check_dominance`): below the lowest top of any
  //     unplaced buffer at its minimum offset. A buffer placed at or above
  //     that top would leave room for the other one under it: the solution
  //     with the least sum of offsets, canonical, never does that.
  std::vector<Candidate> candidates(const std::vector<std::uint32_t>& part, std::uint64_t last_offset,
                                    std::uint32_t last_rank, bool after_last) const {
    const std::vector<DsaBuffer>& buffers = problem_.buffers();
    std::uint64_t lowest_top = unplaced;
    for (const std::uint32_t i : part) {
      if (offset_[i] == unplaced) lowest_top = std::min(lowest_top, min_offset_[i] + buffers[i].size);
    }
    std::vector<Candidate> out;
    for (const std::uint32_t i : part) {
      if (offset_[i] != unplaced) continue;
      const std::uint64_t o = min_offset_[i];
      if (o >= lowest_top) continue;
      if (after_last && (o < last_offset || (o == last_offset && rank_[i] < last_rank))) continue;
      out.push_back({o, rank_[i], i});
    }
    std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.rank < b.rank;
    });
    return out;
  }

  void set_floor(std::uint32_t s, std::uint64_t value) {
    if (floor_[s] >= value) return;
    floor_log_.push_back({s, floor_[s]});
    floor_[s] = value;
  }

  // Puts `b` at its minimum offset (solver.cc UpdateMinOffsets and
  // UpdateSectionData). Returns whether no unplaced buffer is alive with it.
  bool place(std::uint32_t b) {
    const std::vector<DsaBuffer>& buffers = problem_.buffers();
    offset_[b] = min_offset_[b];
    solution_[b] = min_offset_[b];
    const std::uint64_t top = offset_[b] + buffers[b].size;
    const std::uint64_t alignment = problem_.alignment();
    const std::uint64_t aligned_top = (top + alignment - 1) / alignment * alignment;
    // The buffers alive with it go above it; the sections they are in may
    // see their floor rise with them. Those sections, and the buffer's own,
    // lie in one run: every raised buffer's run meets the buffer's.
    std::uint32_t affected_first = sweep_.first_section[b];
    std::uint32_t affected_last = sweep_.last_section[b];
    bool hatless = true;
    for (const std::uint32_t other : sweep_.overlaps[b]) {
      if (offset_[other] != unplaced) continue;
      hatless = false;
      if (min_offset_[other] >= aligned_top) continue;
      offset_log_.push_back({other, min_offset_[other]});
      min_offset_[other] = aligned_top;
      affected_first = std::min(affected_first, sweep_.first_section[other]);
      affected_last = std::max(affected_last, sweep_.last_section[other]);
    }
    // Its sections: everything still to place there goes above its top.
    for (std::uint32_t s = sweep_.first_section[b]; s <= sweep_.last_section[b]; ++s) {
      set_floor(s, top);
      total_[s] -= problem_.aligned_size(b);
    }
    // A section's floor is no lower than the least minimum offset of the
    // buffers still to place in it (solver.cc `unallocated_floor`; it
    // recomputes the sections of the raised buffers, this the run that holds
    // them, which is no weaker). The floor already equals that least offset
    // where a buffer at or below it is left, which ends the scan early.
    for (std::uint32_t s = affected_first; s <= affected_last; ++s) {
      const std::uint64_t floor = floor_[s];
      std::uint64_t least = unplaced;
      for (const std::uint32_t member : sweep_.section_buffers[s]) {
        if (offset_[member] != unplaced) continue;
        least = std::min(least, min_offset_[member]);
        if (least <= floor) break;
      }
      if (least != unplaced) set_floor(s, least);
    }
    return hatless;
  }

  void unplace(std::uint32_t b, std::size_t offset_mark, std::size_t floor_mark) {
    for (std::uint32_t s = sweep_.first_section[b]; s <= sweep_.last_section[b]; ++s) {
      total_[s] += problem_.aligned_size(b);
    }
    while (floor_log_.size() > floor_mark) {
      floor_[floor_log_.back().index] = floor_log_.back().old_value;
      floor_log_.pop_back();
    }
    while (offset_log_.size() > offset_mark) {
      min_offset_[offset_log_.back().index] = offset_log_.back().old_value;
      offset_log_.pop_back();
    }
    offset_[b] = unplaced;
  }

  // The section bound (§4.2, solver.cc Check): in every section of the part,
  // the bytes still to place there stack above its floor, and above the
  // offset just used (no later buffer of the part goes lower:
  // `monotonic_floor`), within the capacity. The alignment adds to it: the
  // lowest of them starts at an aligned offset, and all but the top one
  // take their aligned size (the most any was rounded up by is subtracted
  // for the top one).
  [[nodiscard]] bool consistent(std::uint32_t lo, std::uint32_t hi, std::uint64_t offset) const {
    const std::uint64_t alignment = problem_.alignment();
    for (std::uint32_t s = lo; s < hi; ++s) {
      const std::uint64_t floor = std::max(floor_[s], offset);
      if (total_[s] == 0) {
        if (floor > capacity_) return false;
        continue;
      }
      // total_[s] holds at least one aligned size, more than any slack.
      const std::uint64_t top = (floor + alignment - 1) / alignment * alignment + total_[s] - sweep_.section_slack[s];
      if (top > capacity_) return false;
    }
    return true;
  }

  const DsaProblem& problem_;
  const SearchSweep& sweep_;
  std::uint64_t capacity_;
  std::string_view keys_;
  std::vector<std::uint32_t> rank_;  // per buffer: its rank in its part's preorder

  std::vector<std::uint64_t> offset_;      // unplaced or the placed offset
  std::vector<std::uint64_t> solution_;    // each buffer's latest placement
  std::vector<std::uint64_t> min_offset_;  // the lowest aligned offset above the placed buffers alive with it
  std::vector<std::uint64_t> floor_;       // per section
  std::vector<std::uint64_t> total_;       // per section: the bytes of its unplaced buffers
  std::vector<std::uint32_t> cuts_;        // per pair of neighbouring sections
  std::vector<Change> offset_log_;
  std::vector<Change> floor_log_;
  std::uint64_t node_limit_ = 0;
  std::uint64_t nodes_ = 0;
  Clock::time_point deadline_;
};

CACHEDARRAYS_INLINE void search_check_options(const char* who, const SearchOptions& options) {
  if (!(options.time_limit_seconds > 0) || !std::isfinite(options.time_limit_seconds)) {
    throw invalid_argument(std::string(who) + ": time_limit_seconds is " + std::to_string(options.time_limit_seconds) +
                           "; it must be a positive, finite number of seconds");
  }
  if (options.node_limit == 0) {
    throw invalid_argument(std::string(who) +
                           ": node_limit is 0; it must be at least 1 (the default: no limit but the time)");
  }
}

// The moment `seconds` from now; a limit beyond a century (which the
// clock's nanoseconds could not hold for long) is no limit at all.
CACHEDARRAYS_INLINE std::chrono::steady_clock::time_point search_deadline(double seconds) {
  constexpr double century = 100.0 * 365 * 24 * 3600;
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double>(std::min(seconds, century)));
}

CACHEDARRAYS_INLINE SearchResult search_offsets_until(const DsaProblem& problem, std::uint64_t capacity,
                                                      std::uint64_t node_limit,
                                                      std::chrono::steady_clock::time_point deadline) {
  const auto began = std::chrono::steady_clock::now();
  SearchResult result;
  const auto finish = [&](SearchStatus status) {
    result.status = status;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return result;
  };
  const std::size_t n = problem.size();
  if (n == 0) return finish(SearchStatus::found);
  // Max-live above the capacity: some moment holds more than fits.
  if (problem.max_live() > capacity) return finish(SearchStatus::infeasible);

  const SearchSweep sweep = search_sweep(problem);
  if (search_aligned_max_live(sweep) > capacity) return finish(SearchStatus::infeasible);
  // MiniMalloc's default preorders, in turn under node limits that double
  // from twice the buffer count (solver.cc RoundRobin): one of them often
  // finds a plan fast where another wanders. Each turn starts its search
  // afresh, as solver.cc's does: what the rounds before explored is
  // explored again (at most about as much as the last round, since the
  // limits double).
  static constexpr std::array<std::string_view, 3> heuristics{"WAT", "TAW", "TWA"};
  std::vector<CanonicalSearch> searches;
  for (const std::string_view keys : heuristics) {
    searches.emplace_back(problem, sweep, capacity, keys);
  }
  std::uint64_t round_limit = n;
  while (true) {
    round_limit = round_limit > std::numeric_limits<std::uint64_t>::max() / 2 ? round_limit : round_limit * 2;
    for (CanonicalSearch& search : searches) {
      const std::uint64_t left = node_limit - result.nodes;
      std::uint64_t used = 0;
      const DfsOutcome outcome = search.run(std::min(round_limit, left), deadline, used);
      result.nodes += used;
      switch (outcome) {
        case DfsOutcome::found:
          result.plan.offsets = search.offsets();
          result.plan.footprint = footprint_of(problem, result.plan.offsets);
          return finish(SearchStatus::found);
        case DfsOutcome::exhausted: return finish(SearchStatus::infeasible);
        case DfsOutcome::time_limit: return finish(SearchStatus::stopped);
        case DfsOutcome::node_limit:
          if (result.nodes >= node_limit) return finish(SearchStatus::stopped);
          break;
      }
    }
  }
}

}  // namespace detail

CACHEDARRAYS_INLINE const char* to_string(SearchStatus status) noexcept {
  switch (status) {
    case SearchStatus::found: return "found";
    case SearchStatus::infeasible: return "infeasible";
    case SearchStatus::stopped: return "stopped";
  }
  return "?";
}

CACHEDARRAYS_INLINE SearchResult search_offsets(const DsaProblem& problem, std::uint64_t capacity,
                                                const SearchOptions& options) {
  detail::search_check_options("search_offsets", options);
  return detail::search_offsets_until(problem, capacity, options.node_limit,
                                      detail::search_deadline(options.time_limit_seconds));
}

CACHEDARRAYS_INLINE FootprintSearchResult minimize_footprint(const DsaProblem& problem, const SearchOptions& options) {
  detail::search_check_options("minimize_footprint", options);
  using Clock = std::chrono::steady_clock;
  const auto began = Clock::now();
  const auto end = detail::search_deadline(options.time_limit_seconds);
  FootprintSearchResult result;
  // The incumbent: the best heuristic plan.
  result.plan = best_fit_offsets(problem);
  for (const HoleFit fit : {HoleFit::best, HoleFit::first}) {
    OffsetPlan p = smartpool_offsets(problem, fit);
    if (p.footprint < result.plan.footprint) result.plan = std::move(p);
  }
  result.lower_bound = std::max(problem.max_live(), detail::search_aligned_max_live(detail::search_sweep(problem)));
  // Max-live first, then bisection of [lower bound, best - 1]. `low` is
  // where the next probes start: above the proven bound, and above any
  // capacity whose probe stopped unanswered.
  std::uint64_t low = result.lower_bound;
  bool first = true;
  while (low < result.plan.footprint && result.nodes < options.node_limit) {
    const auto now = Clock::now();
    if (now >= end) break;
    const std::uint64_t capacity = first ? low : low + (result.plan.footprint - 1 - low) / 2;
    first = false;
    const SearchResult probe =
        detail::search_offsets_until(problem, capacity, options.node_limit - result.nodes, now + (end - now) / 2);
    ++result.probes;
    result.nodes += probe.nodes;
    switch (probe.status) {
      case SearchStatus::found:
        result.plan = probe.plan;  // footprint <= capacity < the previous one
        break;
      case SearchStatus::infeasible:
        result.lower_bound = std::max(result.lower_bound, capacity + 1);
        low = std::max(low, capacity + 1);
        break;
      case SearchStatus::stopped: low = capacity + 1; break;
    }
  }
  result.lower_bound = std::min(result.lower_bound, result.plan.footprint);
  result.optimal = result.plan.footprint == result.lower_bound;
  result.seconds = std::chrono::duration<double>(Clock::now() - began).count();
  return result;
}

}  // namespace cachedarrays::plan
