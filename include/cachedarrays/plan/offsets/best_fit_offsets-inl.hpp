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

// One offset line of paper 001 §3.2 (the bold lines of Figure 1): during
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

}  // namespace detail

CACHEDARRAYS_INLINE OffsetPlan best_fit_offsets(const DsaProblem& problem) { return best_fit_offsets(problem, {}); }

CACHEDARRAYS_INLINE OffsetPlan best_fit_offsets(const DsaProblem& problem, const std::vector<std::uint64_t>& floor) {
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  OffsetPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  if (buffers.empty()) return plan;

  // The buffers still to place, in the order the search prefers them:
  // "we always choose a block with the longest lifetime among blocks that
  // can be placed at the considered offset" (§3.2). Scanning this order,
  // the first buffer that fits is the one the paper chooses.
  std::vector<std::size_t> unplaced(buffers.size());
  for (std::size_t i = 0; i < unplaced.size(); ++i) unplaced[i] = i;
  std::sort(unplaced.begin(), unplaced.end(), [&](std::size_t a, std::size_t b) {
    const std::uint32_t la = buffers[a].end - buffers[a].start;
    const std::uint32_t lb = buffers[b].end - buffers[b].start;
    if (la != lb) return la > lb;
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return a < b;
  });

  // "In the beginning of the heuristic (Figure 1(a)), since no memory blocks
  // are placed, we choose zero as the memory offset": one line at 0 over
  // the whole time axis; with a floor, one line per stretch of time at the
  // same height (rounded up to the alignment), as if those bytes had been
  // placed first.
  std::uint32_t first = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t last = 0;
  for (const DsaBuffer& b : buffers) {
    first = std::min(first, b.start);
    last = std::max(last, b.end);
  }
  const std::uint64_t alignment = problem.alignment();
  const auto floor_at = [&](std::uint32_t t) -> std::uint64_t {
    const std::uint64_t f = t < floor.size() ? floor[t] : 0;
    return (f + alignment - 1) / alignment * alignment;
  };
  std::vector<detail::OffsetLine> lines;
  for (std::uint32_t t = first; t < last; ++t) lines.push_back({t, t + 1, floor_at(t)});
  detail::merge_offset_lines(lines);

  while (!unplaced.empty()) {
    // (1) Choose an offset: "we always choose the lowest one (if there are
    // multiple lowest offsets, the leftmost one is chosen)". Lines are in
    // time order, so the first minimum is the leftmost.
    const auto lowest = static_cast<std::size_t>(
        std::min_element(lines.begin(), lines.end(),
                         [](const detail::OffsetLine& a, const detail::OffsetLine& b) { return a.offset < b.offset; }) -
        lines.begin());
    const detail::OffsetLine line = lines[lowest];

    // (2) Search for a block that "can be placed at the chosen offset
    // without colliding with memory blocks placed already": its lifetime
    // lies inside the line's span (its neighbours are higher lines, so a
    // lifetime reaching past the span would collide with what is under them).
    const auto fits = std::find_if(unplaced.begin(), unplaced.end(), [&](std::size_t i) {
      return buffers[i].start >= line.begin && buffers[i].end <= line.end;
    });
    if (fits != unplaced.end()) {
      // Place it (Figure 1(b), (c)): the line splits into the part before
      // the lifetime, the lifetime raised by the buffer's (aligned) size,
      // and the part after.
      const std::size_t i = *fits;
      unplaced.erase(fits);
      plan.offsets[i] = line.offset;
      std::vector<detail::OffsetLine> pieces;
      if (line.begin < buffers[i].start) pieces.push_back({line.begin, buffers[i].start, line.offset});
      pieces.push_back({buffers[i].start, buffers[i].end, line.offset + problem.aligned_size(i)});
      if (buffers[i].end < line.end) pieces.push_back({buffers[i].end, line.end, line.offset});
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(lowest));
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(lowest), pieces.begin(), pieces.end());
    } else {
      // No block fits: "lift up" the line "by merging it with the lowest
      // adjacent offset line as in Figure 1(d) (if offsets of adjacent lines
      // are the same, it is merged with both)". The space between the two
      // offsets over this span stays empty for good. A line with no
      // neighbour spans the whole axis, where every buffer fits, so a lift
      // always has one.
      std::uint64_t to = std::numeric_limits<std::uint64_t>::max();
      if (lowest > 0) to = lines[lowest - 1].offset;
      if (lowest + 1 < lines.size()) to = std::min(to, lines[lowest + 1].offset);
      lines[lowest].offset = to;
    }
    detail::merge_offset_lines(lines);
  }
  plan.footprint = footprint_of(problem, plan.offsets);
  return plan;
}

}  // namespace cachedarrays::plan
