// Implementation of autotm_offsets.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/offsets/autotm_offsets.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/detail/autotm_dram_walk.hpp"
#include "cachedarrays/plan/offsets/dsa_problem.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE AutotmOffsets autotm_dram_offsets(const Program& program, const AutotmPlan& plan,
                                                      std::uint64_t alignment) {
  if (alignment < 8 || (alignment & (alignment - 1)) != 0) {
    throw invalid_argument("autotm_dram_offsets: alignment " + std::to_string(alignment) +
                           " must be a power of two >= 8 (the fast heap's DeviceSpec::alignment)");
  }
  detail::check_autotm_plan_shape(program, plan, "autotm_dram_offsets");
  const std::vector<ProgramObject>& objects = program.objects();
  const std::size_t n = objects.size();
  const detail::AutotmDramWalk walk(program, plan);
  const auto aligned = [&](std::uint64_t bytes) { return (bytes + alignment - 1) / alignment * alignment; };

  // An iteration from nothing held: which persistent objects its end
  // leaves in DRAM (after its last use an object's place depends on the
  // plan only), so that the steady iteration starts with them there.
  std::vector<bool> held(n, false);
  (void)walk.iteration(
      [&](std::uint32_t o, std::uint32_t) {
        held[o] = true;
        return true;
      },
      [&](std::uint32_t o) { held[o] = false; }, [](std::uint32_t) {});

  // The steady iteration: each take opens a stay, each free closes it; time
  // counts them, and a kernel takes a tick of its own so that what is freed
  // after it ends after it.
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  AutotmOffsets result;
  std::vector<AutotmStay>& stays = result.stays;
  std::vector<std::uint32_t> open(n, none), head(n, none);
  for (std::uint32_t o = 0; o < n; ++o) {
    if (!held[o] || !objects[o].persistent) continue;
    open[o] = head[o] = static_cast<std::uint32_t>(stays.size());
    stays.push_back({o, 0, 0, objects[o].bytes, 0, 0, false});
  }
  std::uint32_t t = 1;
  std::vector<std::uint32_t> kernel_time(program.kernels().size(), 0);
  (void)walk.iteration(
      [&](std::uint32_t o, std::uint32_t k) {
        if (open[o] != none) return true;
        open[o] = static_cast<std::uint32_t>(stays.size());
        stays.push_back({o, k, 0, objects[o].bytes, t++, 0, false});
        return true;
      },
      [&](std::uint32_t o) {
        if (open[o] == none) return;
        stays[open[o]].end = t++;
        open[o] = none;
      },
      [&](std::uint32_t k) { kernel_time[k] = t++; });
  const std::uint32_t end_time = t;

  // What is still held at the end wraps around into the next iteration:
  // into its own head stay (the same bytes, never given back), or the whole
  // iteration when it never left.
  std::vector<bool> dropped(stays.size(), false);
  std::vector<std::uint32_t> wrapping;
  for (std::uint32_t o = 0; o < n; ++o) {
    if (open[o] == none) continue;
    AutotmStay& tail = stays[open[o]];
    if (head[o] == none) {
      tail.end = end_time;  // not held at the start after all: a stay like any other
      continue;
    }
    if (head[o] == open[o]) {
      tail.end = end_time;
    } else {
      tail.end = stays[head[o]].end;
      tail.wraps = true;
      dropped[head[o]] = true;
    }
    wrapping.push_back(open[o]);
  }
  const auto held_ticks = [&](const AutotmStay& s) {
    return s.wraps ? (end_time - s.start) + s.end : s.end - s.start;
  };
  // Calls visit(at) for each tick the stay holds its bytes.
  const auto for_each_tick = [&](const AutotmStay& s, auto&& visit) {
    if (s.wraps) {
      for (std::uint32_t at = 0; at < s.end; ++at) visit(at);
      for (std::uint32_t at = s.start; at < end_time; ++at) visit(at);
    } else {
      for (std::uint32_t at = s.start; at < s.end; ++at) visit(at);
    }
  };

  // The wrapping stays, stacked from offset 0, the longest-held lowest: the
  // skyline they leave (the floor of the others) then falls as they leave.
  std::sort(wrapping.begin(), wrapping.end(), [&](std::uint32_t a, std::uint32_t b) {
    const std::uint32_t ha = held_ticks(stays[a]), hb = held_ticks(stays[b]);
    return ha != hb ? ha > hb : a < b;
  });
  std::vector<std::uint64_t> floor(end_time, 0);
  std::vector<bool> stacked_here(stays.size(), false);
  std::uint64_t stacked = 0;
  for (const std::uint32_t w : wrapping) {
    AutotmStay& s = stays[w];
    s.offset = stacked;
    stacked += aligned(s.bytes);
    for_each_tick(s, [&](std::uint32_t at) { floor[at] = std::max(floor[at], stacked); });
    stacked_here[w] = true;
  }

  // The other stays, packed above the floor by best-fit offset lines.
  std::vector<std::uint32_t> packed;
  std::vector<DsaBuffer> buffers;
  for (std::uint32_t i = 0; i < stays.size(); ++i) {
    if (dropped[i] || stacked_here[i]) continue;
    packed.push_back(i);
    buffers.push_back({stays[i].bytes, stays[i].start, stays[i].end});
  }
  if (!buffers.empty()) {
    const DsaProblem problem(std::move(buffers), alignment);
    const OffsetPlan offsets = best_fit_offsets(problem, floor);
    for (std::size_t j = 0; j < packed.size(); ++j) stays[packed[j]].offset = offsets.offsets[j];
  }

  // Drop the heads (their wrapping stays hold their bytes), and measure.
  std::vector<AutotmStay> kept;
  for (std::uint32_t i = 0; i < stays.size(); ++i) {
    if (!dropped[i]) kept.push_back(stays[i]);
  }
  stays = std::move(kept);
  std::vector<std::uint64_t> top(end_time, 0), live(end_time, 0);
  for (std::uint32_t i = 0; i < stays.size(); ++i) {
    const AutotmStay& s = stays[i];
    result.footprint = std::max(result.footprint, s.offset + s.bytes);
    for_each_tick(s, [&](std::uint32_t at) {
      top[at] = std::max(top[at], s.offset + s.bytes);
      live[at] += aligned(s.bytes);
    });
  }
  result.max_live = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  result.extents.resize(kernel_time.size());
  for (std::size_t k = 0; k < kernel_time.size(); ++k) result.extents[k] = top[kernel_time[k]];
  return result;
}

}  // namespace cachedarrays::plan
