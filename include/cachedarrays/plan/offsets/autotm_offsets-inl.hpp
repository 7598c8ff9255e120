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
#include "cachedarrays/plan/detail/autotm_dram_walk.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/offsets/dsa_problem.hpp"

namespace cachedarrays::plan {

namespace detail {

inline constexpr std::uint32_t autotm_no_stay = std::numeric_limits<std::uint32_t>::max();

// The steady iteration's stays in event time, before any has an offset.
struct AutotmStayTimeline {
  std::vector<AutotmStay> stays;
  std::vector<std::uint32_t> open;         // by object: its stay still open at the end, or autotm_no_stay
  std::vector<std::uint32_t> head;         // by object: its stay held from the start, or autotm_no_stay
  std::vector<std::uint32_t> kernel_time;  // by kernel: the tick it runs at
  std::uint32_t end_time = 0;              // the iteration's end: one past the last tick
};

// An iteration from nothing held: which persistent objects its end leaves
// in DRAM (after its last use an object's place depends on the plan only),
// so that the steady iteration starts with them there.
CACHEDARRAYS_INLINE std::vector<bool> autotm_held_at_end(const AutotmDramWalk& walk, std::size_t objects) {
  std::vector<bool> held(objects, false);
  (void)walk.iteration(
      [&](std::uint32_t o, std::uint32_t) {
        held[o] = true;
        return true;
      },
      [&](std::uint32_t o) { held[o] = false; }, [](std::uint32_t) {});
  return held;
}

// The steady iteration: each take opens a stay, each free closes it; time
// counts them, and a kernel takes a tick of its own so that what is freed
// after it ends after it. The persistent objects `held` at the start open
// a head stay at time 0.
CACHEDARRAYS_INLINE AutotmStayTimeline autotm_steady_stays(const Program& program, const AutotmDramWalk& walk,
                                                           const std::vector<bool>& held) {
  const std::vector<ProgramObject>& objects = program.objects();
  AutotmStayTimeline timeline;
  std::vector<AutotmStay>& stays = timeline.stays;
  std::vector<std::uint32_t>& open = timeline.open;
  open.assign(objects.size(), autotm_no_stay);
  timeline.head.assign(objects.size(), autotm_no_stay);
  for (std::uint32_t o = 0; o < objects.size(); ++o) {
    if (!held[o] || !objects[o].persistent) continue;
    open[o] = timeline.head[o] = static_cast<std::uint32_t>(stays.size());
    stays.push_back({o, 0, 0, objects[o].bytes, 0, 0, false});
  }
  std::uint32_t t = 1;
  timeline.kernel_time.assign(program.kernels().size(), 0);
  (void)walk.iteration(
      [&](std::uint32_t o, std::uint32_t k) {
        if (open[o] != autotm_no_stay) return true;
        open[o] = static_cast<std::uint32_t>(stays.size());
        stays.push_back({o, k, 0, objects[o].bytes, t++, 0, false});
        return true;
      },
      [&](std::uint32_t o) {
        if (open[o] == autotm_no_stay) return;
        stays[open[o]].end = t++;
        open[o] = autotm_no_stay;
      },
      [&](std::uint32_t k) { timeline.kernel_time[k] = t++; });
  timeline.end_time = t;
  return timeline;
}

// What is still held at the end wraps around into the next iteration: into
// its own head stay (the same bytes, never given back), or the whole
// iteration when it never left. Closes every open stay; marks in `dropped`
// the heads a wrapping stay takes over, and returns the stays that hold
// bytes across the iteration's boundary.
CACHEDARRAYS_INLINE std::vector<std::uint32_t> autotm_wrap_around(AutotmStayTimeline& timeline,
                                                                  std::vector<bool>& dropped) {
  std::vector<AutotmStay>& stays = timeline.stays;
  dropped.assign(stays.size(), false);
  std::vector<std::uint32_t> wrapping;
  for (std::uint32_t o = 0; o < timeline.open.size(); ++o) {
    const std::uint32_t open = timeline.open[o];
    const std::uint32_t head = timeline.head[o];
    if (open == autotm_no_stay) continue;
    AutotmStay& tail = stays[open];
    if (head == autotm_no_stay) {
      tail.end = timeline.end_time;  // not held at the start after all: a stay like any other
      continue;
    }
    if (head == open) {
      tail.end = timeline.end_time;
    } else {
      tail.end = stays[head].end;
      tail.wraps = true;
      dropped[head] = true;
    }
    wrapping.push_back(open);
  }
  return wrapping;
}

// How many ticks the stay holds its bytes, in an iteration ending at `end_time`.
CACHEDARRAYS_INLINE std::uint32_t autotm_held_ticks(const AutotmStay& s, std::uint32_t end_time) {
  return s.wraps ? (end_time - s.start) + s.end : s.end - s.start;
}

// Calls visit(at) for each tick the stay holds its bytes.
template <typename Visit>
void autotm_for_each_tick(const AutotmStay& s, std::uint32_t end_time, Visit&& visit) {
  if (s.wraps) {
    for (std::uint32_t at = 0; at < s.end; ++at) visit(at);
    for (std::uint32_t at = s.start; at < end_time; ++at) visit(at);
  } else {
    for (std::uint32_t at = s.start; at < s.end; ++at) visit(at);
  }
}

// The wrapping stays, stacked from offset 0, the longest-held lowest: the
// skyline they leave (the floor of the others) then falls as they leave.
// Marks them in `placed`; returns that floor by tick.
CACHEDARRAYS_INLINE std::vector<std::uint64_t> autotm_stack_wrapping(std::vector<AutotmStay>& stays,
                                                                     std::vector<std::uint32_t> wrapping,
                                                                     std::uint32_t end_time, std::uint64_t alignment,
                                                                     std::vector<bool>& placed) {
  std::sort(wrapping.begin(), wrapping.end(), [&](std::uint32_t a, std::uint32_t b) {
    const std::uint32_t ha = autotm_held_ticks(stays[a], end_time), hb = autotm_held_ticks(stays[b], end_time);
    return ha != hb ? ha > hb : a < b;
  });
  std::vector<std::uint64_t> floor(end_time, 0);
  std::uint64_t stacked = 0;
  for (const std::uint32_t w : wrapping) {
    AutotmStay& s = stays[w];
    s.offset = stacked;
    stacked += (s.bytes + alignment - 1) / alignment * alignment;
    autotm_for_each_tick(s, end_time, [&](std::uint32_t at) { floor[at] = std::max(floor[at], stacked); });
    placed[w] = true;
  }
  return floor;
}

// The stays not yet `placed`, packed above `floor` by best-fit offset lines.
CACHEDARRAYS_INLINE void autotm_pack_above(std::vector<AutotmStay>& stays, const std::vector<bool>& placed,
                                           const std::vector<std::uint64_t>& floor, std::uint64_t alignment) {
  std::vector<std::uint32_t> packed;
  std::vector<DsaBuffer> buffers;
  for (std::uint32_t i = 0; i < stays.size(); ++i) {
    if (placed[i]) continue;
    packed.push_back(i);
    buffers.push_back({stays[i].bytes, stays[i].start, stays[i].end});
  }
  if (buffers.empty()) return;
  const DsaProblem problem(std::move(buffers), alignment);
  const OffsetPlan offsets = best_fit_offsets(problem, floor);
  for (std::size_t j = 0; j < packed.size(); ++j) stays[packed[j]].offset = offsets.offsets[j];
}

// The packing's footprint, max-live and extents by kernel, from its kept stays.
CACHEDARRAYS_INLINE void autotm_measure(AutotmOffsets& result, const AutotmStayTimeline& timeline,
                                        std::uint64_t alignment) {
  std::vector<std::uint64_t> top(timeline.end_time, 0), live(timeline.end_time, 0);
  for (const AutotmStay& s : result.stays) {
    result.footprint = std::max(result.footprint, s.offset + s.bytes);
    autotm_for_each_tick(s, timeline.end_time, [&](std::uint32_t at) {
      top[at] = std::max(top[at], s.offset + s.bytes);
      live[at] += (s.bytes + alignment - 1) / alignment * alignment;
    });
  }
  result.max_live = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  result.extents.resize(timeline.kernel_time.size());
  for (std::size_t k = 0; k < timeline.kernel_time.size(); ++k) result.extents[k] = top[timeline.kernel_time[k]];
}

}  // namespace detail

CACHEDARRAYS_INLINE AutotmOffsets autotm_dram_offsets(const Program& program, const MovePlan& plan,
                                                      std::uint64_t alignment) {
  if (alignment < 8 || (alignment & (alignment - 1)) != 0) {
    throw invalid_argument("autotm_dram_offsets: alignment " + std::to_string(alignment) +
                           " must be a power of two >= 8 (the fast heap's DeviceSpec::alignment)");
  }
  detail::check_autotm_plan_shape(program, plan, "autotm_dram_offsets");
  const detail::AutotmDramWalk walk(program, plan);
  const std::vector<bool> held = detail::autotm_held_at_end(walk, program.objects().size());
  detail::AutotmStayTimeline timeline = detail::autotm_steady_stays(program, walk, held);
  std::vector<bool> dropped;
  const std::vector<std::uint32_t> wrapping = detail::autotm_wrap_around(timeline, dropped);
  // Placed already: the dropped heads, which hold no bytes of their own,
  // and then the stacked wrapping stays.
  std::vector<bool> placed = dropped;
  const std::vector<std::uint64_t> floor =
      detail::autotm_stack_wrapping(timeline.stays, wrapping, timeline.end_time, alignment, placed);
  detail::autotm_pack_above(timeline.stays, placed, floor, alignment);

  // Drop the heads (their wrapping stays hold their bytes), and measure.
  AutotmOffsets result;
  for (std::uint32_t i = 0; i < timeline.stays.size(); ++i) {
    if (!dropped[i]) result.stays.push_back(timeline.stays[i]);
  }
  detail::autotm_measure(result, timeline, alignment);
  return result;
}

}  // namespace cachedarrays::plan
