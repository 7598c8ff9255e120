// Implementation of smartpool_offsets.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/offsets/smartpool_offsets.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE OffsetPlan smartpool_offsets(const DsaProblem& problem, HoleFit fit) {
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  const std::uint64_t alignment = problem.alignment();
  const auto align_up = [&](std::uint64_t x) { return (x + alignment - 1) / alignment * alignment; };
  OffsetPlan plan;
  plan.offsets.assign(buffers.size(), 0);

  // "we first sort these variables in the descending order of size" (§III-C).
  std::vector<std::size_t> order(buffers.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return buffers[a].size > buffers[b].size; });

  std::vector<std::size_t> placed;
  placed.reserve(buffers.size());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> taken;  // [offset, offset + size) of the neighbours
  std::uint64_t pool = 0;                                      // the pool's size so far: the footprint
  for (const std::size_t i : order) {
    const DsaBuffer& b = buffers[i];
    // The neighbours of vertex i in the interval graph (§III-B, E_ij = 1):
    // the placed buffers whose lifetime overlaps its own. Only they
    // constrain its address; the rest may share it.
    taken.clear();
    for (const std::size_t j : placed) {
      if (buffers[j].start < b.end && b.start < buffers[j].end) {
        taken.emplace_back(plan.offsets[j], plan.offsets[j] + buffers[j].size);
      }
    }
    std::sort(taken.begin(), taken.end());

    // "the algorithm tries to fit the variable into one of the free holes
    // between preoccupied memory blocks": the gaps between the neighbours'
    // ranges in address order, and the pool above the highest of them.
    std::optional<std::uint64_t> chosen;
    std::uint64_t chosen_hole = std::numeric_limits<std::uint64_t>::max();
    const auto consider = [&](std::uint64_t from, std::uint64_t to) {
      const std::uint64_t at = align_up(from);
      if (at >= to || to - at < b.size) return;
      // Best-fit: "the smallest hole where the variable can fit in";
      // first-fit: "the first hole that the variable can fit in". Holes
      // come in address order, so a strict < keeps the lowest of equals.
      if (fit == HoleFit::first && chosen) return;
      if (fit == HoleFit::best && to - from >= chosen_hole) return;
      chosen = at;
      chosen_hole = to - from;
    };
    std::uint64_t cursor = 0;  // the top of the neighbours' ranges seen so far
    for (const auto& [from, to] : taken) {
      if (from > cursor) consider(cursor, from);
      cursor = std::max(cursor, to);
    }
    if (pool > cursor) consider(cursor, pool);
    // "in the case that the memory pool does not have such a big hole for
    // the variable, the memory pool will be extended and the new memory
    // will be used for the variable": right above the highest neighbour.
    plan.offsets[i] = chosen ? *chosen : align_up(cursor);
    pool = std::max(pool, plan.offsets[i] + b.size);
    placed.push_back(i);
  }
  plan.footprint = pool;
  return plan;
}

}  // namespace cachedarrays::plan
