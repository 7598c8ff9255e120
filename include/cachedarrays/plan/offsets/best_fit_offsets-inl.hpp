// Implementation of best_fit_offsets.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace cachedarrays::plan {

namespace detail {

// One offset line of Sekiyama et al. §3.2 (the bold lines of Figure 1): during
// [begin, end) everything placed lies below `offset`.
struct OffsetLine {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::uint64_t offset = 0;
};

// Neighbouring lines at the same offset become one line, so that a buffer
// spanning both fits there ("merged", Figure 1(d)).
CACHEDARRAYS_INLINE void merge_offset_lines(std::vector<OffsetLine>& lines) {
  std::size_t kept = 0;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].offset == lines[kept].offset) {
      lines[kept].end = lines[i].end;
    } else {
      lines[++kept] = lines[i];
    }
  }
  lines.resize(kept + 1);
}

// The buffers in the order the search prefers them: "we always choose a
// block with the longest lifetime among blocks that can be placed at the
// considered offset" (§3.2), then the larger, then the lower index.
// Scanning this order, the first buffer that fits is the one the paper
// chooses.
CACHEDARRAYS_INLINE std::vector<std::size_t> best_fit_order(const std::vector<DsaBuffer>& buffers) {
  std::vector<std::size_t> order(buffers.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const std::uint32_t la = buffers[a].end - buffers[a].start;
    const std::uint32_t lb = buffers[b].end - buffers[b].start;
    if (la != lb) return la > lb;
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return a < b;
  });
  return order;
}

// "In the beginning of the heuristic (Figure 1(a)), since no memory blocks
// are placed, we choose zero as the memory offset": one line at 0 over the
// whole time axis; with a floor, one line per stretch of time at the same
// height (rounded up to the alignment), as if those bytes had been placed
// first. `problem` has a buffer.
CACHEDARRAYS_INLINE std::vector<OffsetLine> best_fit_first_lines(const DsaProblem& problem,
                                                                 const std::vector<std::uint64_t>& floor) {
  std::uint32_t first = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t last = 0;
  for (const DsaBuffer& b : problem.buffers()) {
    first = std::min(first, b.start);
    last = std::max(last, b.end);
  }
  const std::uint64_t alignment = problem.alignment();
  const auto floor_at = [&](std::uint32_t t) -> std::uint64_t {
    const std::uint64_t f = t < floor.size() ? floor[t] : 0;
    return (f + alignment - 1) / alignment * alignment;
  };
  std::vector<OffsetLine> lines;
  for (std::uint32_t t = first; t < last; ++t) lines.push_back({t, t + 1, floor_at(t)});
  merge_offset_lines(lines);
  return lines;
}

// (1) Choose an offset: "we always choose the lowest one (if there are
// multiple lowest offsets, the leftmost one is chosen)". Lines are in time
// order, so the first minimum is the leftmost. Returns its index.
CACHEDARRAYS_INLINE std::size_t lowest_offset_line(const std::vector<OffsetLine>& lines) {
  return static_cast<std::size_t>(
      std::min_element(lines.begin(), lines.end(),
                       [](const OffsetLine& a, const OffsetLine& b) { return a.offset < b.offset; }) -
      lines.begin());
}

// Places `buffer`, of `aligned_size` bytes with the alignment, on line `at`
// (Figure 1(b), (c)): the line splits into the part before its lifetime,
// the lifetime raised by its size, and the part after.
CACHEDARRAYS_INLINE void place_on_offset_line(std::vector<OffsetLine>& lines, std::size_t at, const DsaBuffer& buffer,
                                              std::uint64_t aligned_size) {
  const OffsetLine line = lines[at];
  std::vector<OffsetLine> pieces;
  if (line.begin < buffer.start) pieces.push_back({line.begin, buffer.start, line.offset});
  pieces.push_back({buffer.start, buffer.end, line.offset + aligned_size});
  if (buffer.end < line.end) pieces.push_back({buffer.end, line.end, line.offset});
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(at));
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), pieces.begin(), pieces.end());
}

// No block fits on line `at`: "lift up" the line "by merging it with the
// lowest adjacent offset line as in Figure 1(d) (if offsets of adjacent
// lines are the same, it is merged with both)". The space between the two
// offsets over this span stays empty for good. A line with no neighbour
// spans the whole axis, where every buffer fits, so a lift always has one.
CACHEDARRAYS_INLINE void lift_offset_line(std::vector<OffsetLine>& lines, std::size_t at) {
  std::uint64_t to = std::numeric_limits<std::uint64_t>::max();
  if (at > 0) to = lines[at - 1].offset;
  if (at + 1 < lines.size()) to = std::min(to, lines[at + 1].offset);
  lines[at].offset = to;
}

}  // namespace detail

CACHEDARRAYS_INLINE OffsetPlan best_fit_offsets(const DsaProblem& problem) { return best_fit_offsets(problem, {}); }

CACHEDARRAYS_INLINE OffsetPlan best_fit_offsets(const DsaProblem& problem, const std::vector<std::uint64_t>& floor) {
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  OffsetPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  if (buffers.empty()) return plan;

  std::vector<std::size_t> unplaced = detail::best_fit_order(buffers);  // still to place
  std::vector<detail::OffsetLine> lines = detail::best_fit_first_lines(problem, floor);
  while (!unplaced.empty()) {
    const std::size_t lowest = detail::lowest_offset_line(lines);
    const detail::OffsetLine line = lines[lowest];
    // (2) Search for a block that "can be placed at the chosen offset
    // without colliding with memory blocks placed already": its lifetime
    // lies inside the line's span (its neighbours are higher lines, so a
    // lifetime reaching past the span would collide with what is under them).
    const auto fits = std::find_if(unplaced.begin(), unplaced.end(), [&](std::size_t i) {
      return buffers[i].start >= line.begin && buffers[i].end <= line.end;
    });
    if (fits != unplaced.end()) {
      const std::size_t i = *fits;
      unplaced.erase(fits);
      plan.offsets[i] = line.offset;
      detail::place_on_offset_line(lines, lowest, buffers[i], problem.aligned_size(i));
    } else {
      detail::lift_offset_line(lines, lowest);
    }
    detail::merge_offset_lines(lines);
  }
  plan.footprint = footprint_of(problem, plan.offsets);
  return plan;
}

}  // namespace cachedarrays::plan
